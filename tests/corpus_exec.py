"""Run a corpus submission in this process, statement by statement, as a notebook would.

Only for the corpus's correct and mistake cases, which are the kit's own code written the way
students write; hostile cases run in the sandbox only. Used to measure tolerance margins and to
run the notebook's self-checks on the same submissions the grader grades; `InProcessStudent`
answers the suites and diagnoses as the sandbox would.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np

from autograder.corpus import Case
from autograder.sandbox import MissingName, StudentRaised
from autograder.submission import python_cells


def run_case(case: Case, namespace: dict | None = None) -> dict:
    """The namespace the case's code builds; a failing statement is skipped, as in the grader."""
    assert case.kind in ("correct", "mistake"), f"{case.name} is {case.kind}: sandbox only"
    namespace = {} if namespace is None else namespace
    quiet = io.StringIO()
    with (contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet),
          warnings.catch_warnings(), np.errstate(all="ignore")):
        warnings.simplefilter("ignore")
        for cell in python_cells(case.source):
            try:
                exec(compile(cell.source, f"<{case.name} {cell.label}>", "exec"), namespace)
            except Exception:  # noqa: BLE001, S110 - the statement failed; go on, as grading does
                pass
    return namespace


def call_quietly(function, *args, **kwargs):
    """`function(*args, **kwargs)`, or None when it raises; warnings and output swallowed."""
    quiet = io.StringIO()
    with (contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet),
          warnings.catch_warnings(), np.errstate(all="ignore")):
        warnings.simplefilter("ignore")
        try:
            return function(*args, **kwargs)
        except Exception:  # noqa: BLE001 - a crash is simply no answer
            return None


class InProcessStudent:
    """A corpus case's names, run in this process: values and functions as the sandbox gives
    them (a function's exception is the student's, StudentRaised)."""

    def __init__(self, namespace, variant):
        self.namespace, self.variant = namespace, variant

    def has(self, name):
        return name in self.namespace

    def value(self, name):
        if name not in self.namespace:
            raise MissingName(name)
        return self.namespace[name]

    def call(self, name, *args, readonly=False, **kwargs):
        function = self.value(name)
        result = call_quietly(function, *args, **kwargs)
        if result is None:
            raise StudentRaised("Exception", f"{name} raised")
        return result
