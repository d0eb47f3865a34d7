"""The grade report: the dict of CONTRACT section 2, and a readable table for a terminal.

Beyond the contract's keys the report has `cells` (cells that did not run cleanly), `output`
(what the student's code printed), `warnings` (notes for the student and the instructor) and
`missing_modules` (`[{"module": "scipy", "names": ["softmax", ...]}]`: modules the
submission needs that the grader does not have, and the required names that failed because
of each).

A failed test's message is the test's own, except where a diagnosis explains the failure:
then the diagnosis says why instead of the test's generic hint (`diagnoses.explanations`),
and a name that failed for want of a module says so.

`render_text` escapes every control character of student-controlled text (messages, output,
cell names and errors, the file name), so that a submission cannot move the cursor, colour,
clear or redraw the terminal that shows its report.
"""

from __future__ import annotations

import re
import unicodedata

from autograder.compare import join_hint
from autograder.diagnoses.codes import CODES
from autograder.diagnoses.explanations import explanation
from autograder.diagnoses.failures import cell_exercises
from autograder.diagnoses.modules import explain as explain_module
from autograder.diagnoses.modules import find_missing_modules, note
from autograder.exercises import EXERCISES

OUTPUT_LIMIT = 4000  # characters of the student's own output kept in the report


def build_report(
    submission: str, results, diagnoses: dict[str, list[str]], *, cells=(), outcomes=(),
    output: str = "", warnings=(),
) -> dict:
    """Scores per test and exercise, diagnoses, and the cells that failed to run."""
    failed_cells = _failed_cells(cells, outcomes)
    missing = find_missing_modules(cells, outcomes, results)
    module_of = {name: module for module, names in missing.items() for name in names}
    exercises = {}
    for key, exercise in EXERCISES.items():
        own = [r for r in results if r.exercise == key]
        codes = diagnoses.get(key, [])
        tests = [
            {
                "name": r.name,
                "score": r.score,
                "max_score": r.max_score,
                "passed": r.passed,
                "message": _message(r, failed_cells.get(key, []), codes, module_of),
            }
            for r in own
        ]
        exercises[key] = {
            "score": _points(sum(r.score for r in own)),
            "max_score": exercise.max_score,
            "diagnoses": list(codes),
            "tests": tests,
        }
    report = {
        "submission": submission,
        "score": _points(sum(ex["score"] for ex in exercises.values())),
        "max_score": _points(sum(ex.max_score for ex in EXERCISES.values())),
        "exercises": exercises,
        # Cells that did not run cleanly, each once, in notebook order.
        "cells": [{"cell": o.label, "status": o.status, "error": o.error}
                  for o in outcomes if o.status != "ok"],
        "output": output[:OUTPUT_LIMIT],
        "warnings": [*note(missing), *warnings],
        "missing_modules": [{"module": module, "names": names}
                            for module, names in missing.items()],
    }
    kit_errors = [f"{r.exercise}/{r.name}: {r.kit_error}" for r in results if r.kit_error]
    if kit_errors:
        report["kit_errors"] = kit_errors
    return report


def _points(value: float) -> float:
    return round(float(value), 4)


def _failed_cells(cells, outcomes) -> dict[str, list[dict]]:
    """Exercise -> the cells of it that did not run cleanly ("" for unattributed ones)."""
    by_label = {cell.label: cell for cell in cells}
    failed: dict[str, list[dict]] = {}
    for outcome in outcomes:
        if outcome.status == "ok":
            continue
        cell = by_label.get(outcome.label)
        entry = {"cell": outcome.label, "status": outcome.status, "error": outcome.error,
                 "source": cell.source if cell else ""}
        for key in (cell_exercises(cell) if cell else set()) or {""}:
            failed.setdefault(key, []).append(entry)
    return failed


def _message(result, failed_cells: list[dict], codes, module_of: dict[str, str]) -> str:
    """What the student reads about one test: why it failed, as precisely as is known."""
    if result.passed:
        return ""
    name = result.missing_name or result.target
    if name in module_of:
        return explain_module(name, module_of[name])
    if result.missing_name and failed_cells:
        # The cell that should have defined the name, if one mentions it.
        cell = next((c for c in failed_cells if result.missing_name in c["source"]),
                    failed_cells[0])
        return f"{result.message} ({cell['cell']} failed: {cell['error'] or cell['status']})"
    because = explanation(result.exercise, result.name, codes)
    if because:
        return join_hint(result.problem or result.message, because)
    return result.message


def render_text(report: dict) -> str:
    """The report as a table: one line per exercise, then each failed test and its message."""
    lines = [f"Grade report for {_safe(report['submission'])}", ""]
    for key, ex in report["exercises"].items():
        title = EXERCISES[key].title
        lines.append(f"  {key}  {title:<38} {_fmt(ex['score']):>5} / {_fmt(ex['max_score'])}")
        # Failed tests that share a message (a name not defined...) are listed together.
        by_message: dict[str, list[dict]] = {}
        for test in ex["tests"]:
            if not test["passed"]:
                by_message.setdefault(test["message"], []).append(test)
        for message, tests in by_message.items():
            names = ", ".join(t["name"] for t in tests)
            points = _fmt(sum(t["max_score"] for t in tests))
            lines.append(f"       - {names} ({points} pt): {_safe(message)}")
        for code in ex["diagnoses"]:
            lines.append(f"       diagnosis {_safe(code)}: {CODES.get(code, '')}")
    lines.append("")
    lines.append(f"  {'total':<43} {_fmt(report['score']):>5} / {_fmt(report['max_score'])}")
    if report.get("cells"):
        lines += ["", "Cells that did not run cleanly:"]
        lines += [f"  {_safe(c['cell'])}: {c['status']} {_safe(c['error'])}".rstrip()
                  for c in report["cells"]]
    if report.get("output") and report["score"] < report["max_score"]:
        lines += ["", "Your code printed (first lines):"]
        lines += ["  " + _safe(line) for line in report["output"].splitlines()[:10]]
    for warning in report.get("warnings", []):
        lines.append(f"note: {_safe(warning)}")
    for error in report.get("kit_errors", []):
        lines.append(f"kit error (please report): {_safe(error)}")
    return "\n".join(lines)


# Characters a terminal acts on rather than shows: C0 and C1 controls (ESC starts cursor
# moves, colours, title changes...), DEL, line and paragraph separators, format characters
# (bidirectional overrides reorder what is shown) and lone surrogates (which cannot even be
# printed). Each is shown as its escape, \x1b or \u202e, on one line.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _safe(text) -> str:
    """`text` on one line with every character a terminal would act on escaped."""
    text = str(text).replace("\t", "    ")
    if text.isascii():
        return _UNSAFE.sub(lambda m: _escape(m.group()), text)
    return "".join(_escape(c) if unicodedata.category(c) in _UNSAFE_CATEGORIES else c
                   for c in text)


def _fmt(points: float) -> str:
    return f"{points:g}" if points != int(points) else f"{points:.1f}"
