"""What a student reads about their grade, built from the engine's report (plain data).

- `exercise_text`: the plain text under each graded cell (formgrader and the autograded
  notebook show it);
- `exercise_view`, `summary_view` (with `variant_view`: which numbers were graded): the data
  the feedback page's template lays out (the summary table first, then each exercise's tests
  and diagnoses).

Every diagnosis is worded by `autograder.diagnoses.codes.WORDING`, the one table the terminal
report, the class report and the contract read too. Nothing here reads a hidden test, and
nothing here is HTML: the template escapes what it shows.
"""

from __future__ import annotations

import textwrap

from autograder.diagnoses.codes import WORDING, lesson_section
from autograder.exercises import EXERCISES


def exercise_heading(exercise: str) -> str:
    """`Exercise 3: causal scaled dot-product attention`, or the key of an unknown exercise."""
    return EXERCISES[exercise].heading if exercise in EXERCISES else exercise


def points(x) -> str:
    """A score as people write it: 3, 4.5, 0.25."""
    return f"{float(x):g}"


def diagnosis_view(code: str, exercise: str | None = None) -> dict:
    """A code with its explanation and the lesson section to read again (None if unknown)."""
    wording = WORDING.get(code)
    section = lesson_section(code, exercise)
    return {
        "code": code,
        "meaning": wording.meaning if wording else "",
        "explanation": wording.explanation if wording else "",
        "section": section.title if section else "",
        "anchor": section.anchor if section else "",
    }


def diagnosis_line(code: str, exercise: str | None = None) -> str:
    """`mask-inverted: The mask is applied the wrong way round. ... (see 4. Causal masking)`."""
    view = diagnosis_view(code, exercise)
    if not view["explanation"]:
        return code
    see = f" (lesson: {view['section']})" if view["section"] else ""
    return f"{code}: {view['explanation']}{see}"


def exercise_text(exercise: str, result: dict) -> str:
    """The plain-text message shown under a graded cell (its stdout)."""
    title = exercise_heading(exercise)
    if result.get("attempted") is False:
        return f"{title}: not attempted. It is optional extra credit, and costs nothing.\n"
    extra = " of extra credit" if result.get("extra_credit") else ""
    lines = [f"{title}: {points(result['score'])} / {points(result['max_score'])} points"
             + extra]
    diagnoses = result.get("diagnoses") or []
    if diagnoses:
        lines.append("What the grader noticed:")
        lines += [textwrap.fill(f"  - {diagnosis_line(code, exercise)}", width=96,
                                subsequent_indent="    ") for code in diagnoses]
    for test in result.get("tests") or []:
        mark = "ok  " if test.get("passed") else "FAIL"
        line = (f"  [{mark}] {test.get('name', '?')} "
                f"({points(test.get('score', 0))}/{points(test.get('max_score', 0))})")
        message = (test.get("message") or "").strip()
        if message and not test.get("passed"):
            line += ": " + " ".join(message.split())
        # wrapped: the feedback page shows outputs without wrapping long lines
        lines.append(textwrap.fill(line, width=96, subsequent_indent=" " * 9))
    return "\n".join(lines) + "\n"


def exercise_view(exercise: str, result: dict, cells: list[dict] = ()) -> dict:
    """One exercise's results for the page: score, each test, the diagnoses explained, and
    the cells of the exercise that did not run cleanly."""
    tests = [
        {
            "name": str(test.get("name", "?")),
            "passed": bool(test.get("passed")),
            "points": f"{points(test.get('score', 0))} / {points(test.get('max_score', 0))}",
            "message": " ".join(str(test.get("message") or "").split()),
        }
        for test in result.get("tests") or []
    ]
    return {
        "exercise": exercise,
        "heading": exercise_heading(exercise),
        "score": points(result.get("score", 0)),
        "max_score": points(result.get("max_score", 0)),
        "full_marks": float(result.get("score", 0)) >= float(result.get("max_score", 0)),
        "extra_credit": bool(result.get("extra_credit")),  # optional: on top of the grade
        "tests": tests,
        "diagnoses": [diagnosis_view(code, exercise) for code in result.get("diagnoses") or []],
        "cells": [
            {"cell": str(c.get("cell", "")), "status": str(c.get("status", "")),
             "error": str(c.get("error") or "")}
            for c in cells if exercise in (c.get("exercises") or [])
        ],
    }


def summary_view(report: dict, written: list[dict], late_penalty: float = 0.0) -> dict:
    """The summary table at the top of the page.

    `written`: the hand-graded answers, each {"name", "max_score", "score" (None while
    pending), "comment"}.
    """
    rows = []
    for exercise, result in (report.get("exercises") or {}).items():
        score, note = f"{points(result['score'])} / {points(result['max_score'])}", ""
        if result.get("extra_credit"):  # the optional exercise: only ever adds to the grade
            score, note = ((score, "extra credit, added on top of your grade")
                           if result.get("attempted") is not False
                           else ("not attempted", "optional extra credit: costs nothing"))
        rows.append({
            "what": exercise_heading(exercise),
            "anchor": f"results-{exercise}",
            "score": score,
            "diagnoses": [diagnosis_view(code, exercise) for code in result.get("diagnoses")
                          or []],
            "note": note,
        })
    hand_total, hand_max, pending = 0.0, 0.0, 0.0
    for answer in written:
        hand_max += float(answer["max_score"])
        if answer["score"] is None:
            pending += float(answer["max_score"])
            score, note = f"pending / {points(answer['max_score'])}", \
                "graded by hand, not yet marked (not counted as zero)"
        else:
            hand_total += float(answer["score"])
            score = f"{points(answer['score'])} / {points(answer['max_score'])}"
            note = "marked by hand"
        rows.append({"what": f"{answer['name']} (written answer)",
                     "anchor": f"written-{answer['name']}", "score": score, "diagnoses": [],
                     "note": note, "comment": answer.get("comment") or ""})
    auto, auto_max = float(report.get("score", 0)), float(report.get("max_score", 0))
    extra = float(report.get("extra_credit") or 0)  # on top, as nbgrader's gradebook adds it
    # out of the maximum, then the extra credit beside it ("20 / 22, plus 4 extra credit",
    # never "24 / 22"); the two add up to the exports' total: a late penalty larger than the
    # points is taken from the extra credit, as the exports' sum takes it
    within = auto + hand_total - float(late_penalty or 0)
    extra_shown = max(0.0, extra + min(within, 0.0))
    return {
        "variant": variant_view(report.get("variant")),
        "rows": rows,
        "auto": f"{points(auto)} / {points(auto_max)}",
        "extra_credit": points(extra) if extra else "",
        "total": f"{points(max(within, 0.0))} / {points(auto_max + hand_max)}",
        "total_extra_credit": points(extra_shown) if extra_shown else "",
        "pending": points(pending) if pending else "",
        "late_penalty": points(late_penalty) if late_penalty else "",
        "cells": [
            {"cell": str(c.get("cell", "")), "status": str(c.get("status", "")),
             "error": str(c.get("error") or "")}
            for c in report.get("cells") or [] if not c.get("exercises")
        ],
    }


def variant_view(variant) -> dict:
    """Which numbers were graded (`graded`: "" for the lesson's own) and, when the notebook
    showed another variant, its label (`shown_other`)."""
    if not isinstance(variant, dict):
        return {"graded": "", "shown_other": "", "label": ""}
    label, shown = str(variant.get("label") or "default"), variant.get("shown")
    graded = ""
    if label != "default":
        owner = f" (student {variant['student']})" if variant.get("student") else ""
        inputs = (", and hidden inputs of your own for Exercises 2 and 3"
                  if variant.get("own_inputs") else "")
        graded = (f"Graded as variant {label}{owner}: your own numbers for Exercises 1 and "
                  f"2{inputs}.")
    other = shown if isinstance(shown, str) and shown != label else ""
    return {"graded": graded, "shown_other": other, "label": label}
