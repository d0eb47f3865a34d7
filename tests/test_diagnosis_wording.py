"""One wording per diagnosis code (`autograder.diagnoses.codes.WORDING`), read by everything
that words a code, and no code the grader can report without it.

The grader's codes are found where they are made: every kebab-case string of the grading
code (`autograder/`, the example corpus aside), the sandbox errors' `diagnosis`, the cell
statuses' codes and the corpus's expected diagnoses. A new code without an entry in the table
fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from autograder.corpus import cases
from autograder.diagnoses.codes import CODES, LESSON_SECTIONS, WORDING, lesson_section
from autograder.diagnoses.explanations import EXPLAINS
from autograder.diagnoses.failures import CELL_STATUS_CODES
from autograder.exercises import EXERCISES
from autograder.report import render_text
from sdpa_course.reports.feedback_text import diagnosis_view, exercise_text

ROOT = Path(__file__).resolve().parent.parent
KEBAB = re.compile(r"^[a-z]+(?:-[a-z]+)+$")
# Kebab-case strings of the grading code that are not diagnosis codes, each with its use.
NOT_CODES = {
    "setup-failed": "a message type of the sandbox's protocol",
    "sdpa-course": "the kit's name, in paths",
    "self-check": "the notebook's tag of the lesson's self-checks, which grading leaves out",
    "site-packages": "a directory name of Python installations the private root lays out",
    "dist-packages": "Debian's name for site-packages",
    "lib-dynload": "the standard library's folder of extension modules",
    "unsafe-none": "the sandbox's explicit opt-out of isolation, reported as a warning",
}


def grader_strings() -> set[str]:
    found = set()
    for path in (ROOT / "autograder").rglob("*.py"):
        if "corpus" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if KEBAB.match(node.value):
                    found.add(node.value)
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "diagnosis" for t in node.targets):
                if isinstance(node.value, ast.Constant):
                    found.add(node.value.value)
    return found


def reported_codes() -> set[str]:
    codes = {code for code in grader_strings() if code not in NOT_CODES}
    codes |= set(CELL_STATUS_CODES.values())
    codes |= {code for case in cases() for found in case.diagnoses.values() for code in found}
    return codes


def test_every_code_the_grader_can_report_has_its_wording():
    missing = sorted(reported_codes() - set(WORDING))
    assert not missing, f"codes without an entry in autograder/diagnoses/codes.py: {missing}"


@pytest.mark.parametrize("code", list(WORDING))
def test_each_wording_is_whole_and_points_at_the_lesson(code):
    wording = WORDING[code]
    assert wording.meaning and wording.explanation.endswith(".") and wording.where
    for exercise in EXERCISES:
        section = lesson_section(code, exercise)
        assert section is not None, (code, exercise)


# Codes whose failing tests already say what is wrong (the shape, the order of the answers,
# the memory measured): the report adds nothing to the test's own message.
SAID_BY_THE_TEST = {("ex3", "wrong-shape"), ("ex3", "returns-swapped"),
                    ("ex4", "blockwise-quadratic-memory")}


def test_every_diagnosis_tells_the_student_what_to_change_unless_its_test_says_it():
    silent = {key for key, (_tests, say) in EXPLAINS.items() if not say.strip()}
    assert silent == SAID_BY_THE_TEST
    for (exercise, code), (tests, say) in EXPLAINS.items():
        assert tests and code in WORDING, (exercise, code)
        assert say == say.strip(), (exercise, code)


def test_every_lesson_section_is_a_heading_of_the_notebook():
    source = (ROOT / "source" / "sdpa" / "attention.py").read_text()
    headings = {line.lstrip("# ").strip() for line in source.splitlines()
                if re.match(r"^# #{1,6} ", line)}
    for key, section in LESSON_SECTIONS.items():
        assert section.heading in headings, key


def test_the_contract_words_each_code_as_the_table_does():
    rows = {}
    for document in ("CONTRACT.md", "CONTRACT-ADDITIONS.md"):  # an addition's row replaces
        text = (ROOT / "docs" / document).read_text()
        part = text[text.index("## 3. Diagnosis codes"):text.index("## 4.")]
        rows.update(re.findall(r"^\| `([a-z-]+)` \| [^|]+ \| (.+?) \|$", part, re.M))
    assert rows == CODES


def test_the_terminal_report_and_the_feedback_use_the_same_words():
    result = {"score": 5.5, "max_score": 11.0, "diagnoses": ["mask-inverted", "stateful"],
              "tests": []}
    report = {"submission": "x.py", "score": 5.5, "max_score": 20.0, "cells": [],
              "exercises": {"ex3": result}}
    terminal, cell_text = render_text(report), exercise_text("ex3", result)
    for code in result["diagnoses"]:
        explanation = WORDING[code].explanation
        assert diagnosis_view(code, "ex3")["explanation"] == explanation
        assert " ".join(explanation.split()[:6]) in " ".join(terminal.split())
        assert " ".join(explanation.split()[:6]) in " ".join(cell_text.split())
