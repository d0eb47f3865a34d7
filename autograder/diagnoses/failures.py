"""Codes that come from how the student's code failed, not from what it computed.

A failed test already carries the sandbox's code (missing-name, crashed, timeout...). A cell
that failed while the submission ran (a syntax error, an exception, a time-out at import)
is put on the exercise it belongs to: by its nbgrader grade_id in a notebook, otherwise by
the exercise names its text mentions.
"""

from __future__ import annotations

import re

from autograder.diagnoses.unanswered import CODE as NOT_ANSWERED
from autograder.diagnoses.unanswered import cell_not_answered
from autograder.exercises import EXERCISES

CELL_STATUS_CODES = {
    "syntax-error": "syntax-error",
    "error": "crashed",
    "timeout": "timeout",
    "memory-limit": "memory-limit",
    "died": "crashed",
}


def cell_exercises(cell) -> set[str]:
    """The exercises a cell belongs to: its grade_id's, or those whose names it mentions.

    A locked cell of the release (setup, self-check) is the kit's code, not the student's.
    """
    if getattr(cell, "locked", False):
        return set()
    if getattr(cell, "exercise", None):
        return {cell.exercise}
    return {
        key for key, ex in EXERCISES.items()
        if any(re.search(rf"\b{re.escape(name)}\b", cell.source) for name in ex.names)
    }


def cell_codes(cells, outcomes, forbidden_imports, stubs=None) -> dict[str, set[str]]:
    """Exercise -> codes of the cells that failed while the submission ran; `stubs`: the
    answers still as released (`unanswered.stubs`), whose NotImplementedError a cell that
    called one raised: `not-answered`, not `crashed`."""
    codes: dict[str, set[str]] = {key: set() for key in EXERCISES}
    by_label = {cell.label: cell for cell in cells}
    for outcome in outcomes:
        code = CELL_STATUS_CODES.get(outcome.status)
        cell = by_label.get(outcome.label)
        if code is None or cell is None:
            continue
        if code == "crashed" and any(module in outcome.error for module in forbidden_imports):
            code = "forbidden-import"
        elif code == "crashed" and stubs and cell_not_answered(outcome.error, stubs):
            code = NOT_ANSWERED
        for key in cell_exercises(cell):
            codes[key].add(code)
    return codes
