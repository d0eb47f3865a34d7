"""The grade report: the dict of CONTRACT section 2, and a readable table for a terminal.

Beyond the contract's keys the report has `cells` (cells that did not run cleanly, with the
exercises they belong to), `output` (what the student's cells printed; never what a hidden
test's call printed, `autograder.withheld`), `outputs` (each cell's
own text and figures, for the feedback page), `warnings` (notes for the student and the
instructor) and `missing_modules` (`[{"module": "scipy", "names": ["softmax", ...]}]`: modules the
submission needs that the grader does not have, and the required names that failed because
of each) and `variant` (whose exercises were graded: `{"label": "3f9a2c", "student": "alice",
"ex1": {...}, "ex2": {...}, "own_inputs": true, "shown": "3f9a2c"}`, the numbers of exercises
1 and 2, never a hidden input; label `default` for the lesson's own numbers; `own_inputs`
whether the hidden inputs were the student's own; `shown` the label of the numbers the
notebook itself showed, when it said so plainly, else None). The engine adds `isolation`
(`namespaces`, or `unsafe-none` where that was asked for).

Each test also says whether it was `answered` (False for an answer left as released, whose
message says so). A failed test's message is the test's own, except where a diagnosis
explains the failure: then the diagnosis says why instead of the test's generic hint
(`diagnoses.explanations`), and a name that failed for want of a module says so.

`render_text` escapes every control character of student-controlled text (messages, output,
cell names and errors, the file name), so that a submission cannot move the cursor, colour,
clear or redraw the terminal that shows its report.
"""

from __future__ import annotations

import base64

from autograder.compare import join_hint
from autograder.diagnoses.codes import WORDING, lesson_section
from autograder.diagnoses.explanations import explanation
from autograder.diagnoses.failures import cell_exercises
from autograder.diagnoses.modules import explain as explain_module
from autograder.diagnoses.modules import find_missing_modules, note
from autograder.exercises import EXERCISES, MAX_SCORE
from autograder.runner import not_attempted
from autograder.sandbox.images import SUBMISSION_PNG_BYTES, SUBMISSION_PNGS
from autograder.terminal import one_line
from autograder.variants import DEFAULT, Variant

OUTPUT_LIMIT = 4000  # characters of the student's own output kept in the report
CELL_OUTPUT_LIMIT = 2000  # characters of one cell's output kept in "outputs"
CELL_OUTPUTS_LIMIT = 16_000  # characters of all cells' outputs kept in "outputs"


def build_report(
    submission: str, results, diagnoses: dict[str, list[str]], *, cells=(), outcomes=(),
    output: str = "", warnings=(), variant: Variant = DEFAULT,
) -> dict:
    """Scores per test and exercise, diagnoses, and the cells that failed to run."""
    failed_cells = _failed_cells(cells, outcomes)
    by_label = {cell.label: cell for cell in cells}
    missing = find_missing_modules(cells, outcomes, results)
    module_of = {name: module for module, names in missing.items() for name in names}
    exercises = {}
    for key, exercise in EXERCISES.items():
        own = [r for r in results if r.exercise == key]
        codes = diagnoses.get(key, [])
        explained: dict[str, str] = {}  # a diagnosis's hint -> the first test that gave it
        tests = [
            {
                "name": r.name,
                "score": r.score,
                "max_score": r.max_score,
                "passed": r.passed,
                "message": _message(r, failed_cells.get(key, []), codes, module_of, variant,
                                    explained),
                # False for a test of an answer left as released (`not-answered`): the class
                # report's pass rates count the students who answered
                "answered": "not-answered" not in r.diagnoses,
            }
            for r in own
        ]
        exercises[key] = {
            "score": _points(sum(r.score for r in own)),
            "max_score": exercise.max_score,
            "diagnoses": list(codes),
            "tests": tests,
        }
        if exercise.extra_credit:  # optional: reported, never part of score or max_score
            exercises[key] |= {"extra_credit": True, "attempted": not not_attempted(own)}
    required = [key for key, exercise in EXERCISES.items() if not exercise.extra_credit]
    report = {
        "submission": submission,
        "score": _points(sum(exercises[key]["score"] for key in required)),
        "max_score": _points(MAX_SCORE),
        "extra_credit": _points(sum(ex["score"] for key, ex in exercises.items()
                                    if key not in required)),
        "exercises": exercises,
        # Cells that did not run cleanly, each once, in notebook order, with the exercises
        # they belong to (none for a cell of the kit's or one that names no exercise).
        "cells": [{"cell": o.label, "status": o.status, "error": o.error,
                   "index": getattr(by_label.get(o.label), "index", None),
                   "exercises": sorted(cell_exercises(by_label[o.label]))
                   if o.label in by_label else []}
                  for o in outcomes if o.status != "ok"],
        "output": output[:OUTPUT_LIMIT],
        "outputs": cell_outputs(cells, outcomes),
        "warnings": [*note(missing), *warnings],
        "missing_modules": [{"module": module, "names": names}
                            for module, names in missing.items()],
        "variant": variant.public(),
    }
    kit_errors = [f"{r.exercise}/{r.name}: {r.kit_error}" for r in results if r.kit_error]
    if kit_errors:
        report["kit_errors"] = kit_errors
    return report


def cell_outputs(cells, outcomes) -> list[dict]:
    """What each cell printed and drew when it ran, in notebook order (cells with nothing to
    show left out): its label, its index in the notebook (None for a .py file), its text
    (truncated) and its figures as base64 PNG (checked by the sandbox: `sandbox.images`)."""
    by_label = {cell.label: cell for cell in cells}
    shown, budget = [], CELL_OUTPUTS_LIMIT
    for outcome in outcomes:
        images = list(getattr(outcome, "images", None) or [])
        full = outcome.output or ""
        keep = max(0, min(CELL_OUTPUT_LIMIT, budget))
        text = full[:keep]
        if len(full) > keep:
            text += f"\n[... {len(full) - keep} more characters not shown]"
        budget -= len(full[:keep])
        dropped = getattr(outcome, "figures_dropped", 0)
        if dropped:
            text += (f"\n[... {dropped} more figures not shown: a submission keeps "
                     f"{SUBMISSION_PNGS} figures, {SUBMISSION_PNG_BYTES // 1000} KB, at most]")
        if not full and not images and not dropped:
            continue
        cell = by_label.get(outcome.label)
        shown.append({
            "cell": outcome.label,
            "index": getattr(cell, "index", None),
            "status": outcome.status,
            "text": text,
            "images": [base64.b64encode(png).decode("ascii") for png in images],
        })
    return shown


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


def _message(result, failed_cells: list[dict], codes, module_of: dict[str, str],
             variant: Variant, explained: dict[str, str]) -> str:
    """What the student reads about one test: why it failed, as precisely as is known. A
    diagnosis's hint is given once per exercise, on the first test it explains (`explained`
    remembers which); the later ones say it is explained above."""
    if result.passed:
        return ""
    if "not-answered" in result.diagnoses:
        return result.message  # `unanswered.mark`'s: no failure or diagnosis to explain
    name = result.missing_name or result.target
    if name in module_of:
        return explain_module(name, module_of[name])
    if result.missing_name and failed_cells:
        # The cell that should have defined the name, if one mentions it.
        cell = next((c for c in failed_cells if result.missing_name in c["source"]),
                    failed_cells[0])
        return f"{result.message} ({cell['cell']} failed: {cell['error'] or cell['status']})"
    # A test stopped for time or memory says so; what the code computes, where it answered,
    # is the value tests' to explain (issue 27).
    stopped = {"timeout", "memory-limit"} & set(result.diagnoses)
    because = "" if stopped else explanation(result.exercise, result.name, codes, variant)
    if because and because in explained:
        return join_hint(result.problem or result.message,
                         f"the same cause as {explained[because]}, explained above")
    if because:
        explained[because] = result.name
        return join_hint(result.problem or result.message, because)
    return result.message


def render_text(report: dict) -> str:
    """The report as a table: one line per exercise, then each failed test and its message."""
    lines = [f"Grade report for {one_line(report['submission'])}", ""]
    variant = report.get("variant") or {}
    if variant.get("label", "default") != "default":
        owner = f" (student {one_line(variant['student'])})" if variant.get("student") else ""
        inputs = " and hidden inputs" if variant.get("own_inputs") else ""
        lines[1:1] = [f"Graded as variant {one_line(variant['label'])}{owner}, with its own "
                      f"numbers{inputs}"]
    for key, ex in report["exercises"].items():
        title = EXERCISES[key].title
        lines.append(f"  {key}  {title:<38} {_fmt(ex['score']):>5} / {_fmt(ex['max_score'])}"
                     + ("  (extra credit)" if ex.get("extra_credit") else ""))
        if ex.get("attempted") is False:
            lines.append("       not attempted: it is optional, and costs nothing")
            continue
        # Failed tests that share a message (a name not defined...) are listed together.
        by_message: dict[str, list[dict]] = {}
        for test in ex["tests"]:
            if not test["passed"]:
                by_message.setdefault(test["message"], []).append(test)
        for message, tests in by_message.items():
            names = ", ".join(t["name"] for t in tests)
            points = _fmt(sum(t["max_score"] for t in tests))
            lines.append(f"       - {names} ({points} pt): {one_line(message)}")
        for code in ex["diagnoses"]:
            lines.append(f"       diagnosis {one_line(code)}: {_explained(code, key)}")
    lines.append("")
    lines.append(f"  {'total':<43} {_fmt(report['score']):>5} / {_fmt(report['max_score'])}")
    if report.get("extra_credit"):
        lines.append(f"  {'plus extra credit':<43} {_fmt(report['extra_credit']):>5}")
    if report.get("cells"):
        lines += ["", "Cells that did not run cleanly:"]
        lines += [f"  {one_line(c['cell'])}: {c['status']} {one_line(c['error'])}".rstrip()
                  for c in report["cells"]]
    if report.get("output") and report["score"] < report["max_score"]:
        lines += ["", "Your code printed (first lines):"]
        lines += ["  " + one_line(line) for line in report["output"].splitlines()[:10]]
    for warning in report.get("warnings", []):
        lines.append(f"note: {one_line(warning)}")
    for error in report.get("kit_errors", []):
        lines.append(f"kit error (please report): {one_line(error)}")
    return "\n".join(lines)


def _explained(code: str, exercise: str) -> str:
    """The code's one wording (`diagnoses.codes.WORDING`) and the lesson section to reread."""
    wording = WORDING.get(code)
    if wording is None:
        return ""
    section = lesson_section(code, exercise)
    return wording.explanation + (f" (lesson: {section.title})" if section else "")


def _fmt(points: float) -> str:
    return f"{points:g}" if points != int(points) else f"{points:.1f}"
