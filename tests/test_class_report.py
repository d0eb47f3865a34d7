"""The class report's numbers, checked against `sdpa-course grade --json` on a class of 30
mixed submissions graded by the real engine (typical mistakes, correct styles, hostile ones,
two notebooks that cannot be graded)."""

from __future__ import annotations

import csv
import html
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from grade_course_factory import answer_key, other_assignment_notebook, released_course, submit

from autograder.corpus import case
from autograder.diagnoses.codes import WORDING
from sdpa_course.demo import notebook_from_source

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
CASES = ["lesson-style", "plain-loops", "numpy-computed", "ex1-no-scaling", "ex1-wrong-scale",
         "ex1-not-normalized", "ex2-unstable-softmax", "ex2-softmax-axis", "ex2-wrong-key",
         "ex2-wrong-gradient", "ex3-no-scaling", "ex3-softmax-axis", "ex3-mask-inverted",
         "ex3-mask-inverted", "ex3-mask-ignored", "ex3-mask-after-softmax", "ex3-mask-zero-fill",
         "ex3-transposed", "ex3-returns-swapped", "ex3-stateful", "ex3-causal-diagonal",
         "ex3-causal-wrong-triangle", "ex3-masked-array", "exit-in-call", "syntax-error",
         "import-reference", "ex3-mutates-input", "ex3-no-scaling-and-zero-fill"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = released_course(tmp_path_factory.mktemp("thirty") / "course")
    key = answer_key()
    for number, name in enumerate(CASES):
        submit(course, f"s{number:02d}-{name}", notebook_from_source(key, case(name).source))
    submit(course, "s28-broken", text='{"cells": [}')
    submit(course, "s29-other", other_assignment_notebook())
    done = subprocess.run([str(BIN / "sdpa-course"), "grade", "--json", "--course-dir",
                           str(course)], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert done.returncode == 1, done.stderr[-2000:]  # two failed: exit 1
    grades = json.loads(done.stdout)
    page = (course / "reports" / "sdpa" / "class_report.html").read_text()
    return course, grades["students"], " ".join(html.unescape(
        re.sub(r"<[^>]+>", " ", page)).split())


def test_the_class_has_thirty_students_two_failed(graded):
    _, students, text = graded
    assert len(students) == 30
    failed = sorted(s for s, r in students.items() if r["status"] == "failed")
    assert failed == ["s28-broken", "s29-other"]
    mean = sum(r["score"] for r in students.values() if r["score"] is not None) / 28
    assert "30 students: 28 graded, 2 failed, 0 missing" in text
    assert f"Mean automatic score of the graded: {mean:.2f} / 20" in text


@pytest.mark.parametrize("exercise", ["ex1", "ex2", "ex3"])
def test_each_exercise_section_matches_the_json(graded, exercise):
    _, students, text = graded
    graded_ = [r["exercises"][exercise] for r in students.values() if r["status"] == "graded"]
    # an exercise left as released is no answer: out of the mean and the pass rates
    answering = [ex for ex in graded_ if not all(t["answered"] is False for t in ex["tests"])]
    scores = [ex["score"] for ex in answering]
    top = graded_[0]["max_score"]
    full = sum(1 for s in scores if s >= top)
    assert (f"{len(graded_)} graded, {len(answering)} answered it; mean of those who "
            f"answered {sum(scores) / len(scores):.2f} / {top:g}; full marks: {full}.") in text
    passed, seen, blank = Counter(), Counter(), Counter()
    for ex in graded_:
        for test in ex["tests"]:
            if test["answered"]:
                seen[test["name"]] += 1
                passed[test["name"]] += test["passed"]
            else:
                blank[test["name"]] += 1
    for name in seen:
        assert (f"{name} {passed[name]} / {seen[name]} "
                f"{100 * passed[name] / seen[name]:.0f}% {blank[name]}") in text, name
    who: dict[str, list[str]] = {}
    for student, record in sorted(students.items()):
        for code in (record["exercises"].get(exercise) or {}).get("diagnoses", []):
            if code != "not-answered":  # counted beside the pass rates, not a mistake
                who.setdefault(code, []).append(student)
    for code, names in who.items():
        assert f"{code} {len(names)} {WORDING[code].meaning}" in text, code
        assert ", ".join(names) in text, code


def _exercise_record(student: str, score: float, diagnoses=()) -> dict:
    passed = score == 4.0
    return {"student": student, "status": "graded", "score": 20.0, "max_score": 20.0,
            "exercises": {"ex4": {"score": score, "max_score": 4.0, "diagnoses": list(diagnoses),
                                  "tests": [{"name": "blockwise", "passed": passed,
                                             "score": score, "max_score": 4.0,
                                             "message": ""}]}}}


def test_an_exercise_without_diagnoses_says_correct_only_when_everyone_has_full_marks():
    """Exercise 4 of a class where half left it out has no diagnosis: the report must not
    call every answer correct."""
    from sdpa_course.reports.class_report import _exercise_section

    def text(records):
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", _exercise_section(
            {r["student"]: r for r in records}, "ex4"))).split())

    everyone = text([_exercise_record("a", 4.0), _exercise_record("b", 4.0)])
    assert "No diagnoses: every answer was correct." in everyone
    half = text([_exercise_record("a", 4.0), _exercise_record("b", 0.0),
                 _exercise_record("c", 0.0)])
    assert "correct" not in half
    assert "No diagnoses: 2 answering students without full marks, and no mistake" in half


def test_an_exercise_left_as_released_is_not_answered_and_nobody_s_is_not_attempted():
    """A blank is no failure: counted apart from the pass rates, and an exercise no student
    answered reads "not attempted", never "without full marks"."""
    from sdpa_course.reports.class_report import _exercise_section

    def text(records):
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", _exercise_section(
            {r["student"]: r for r in records}, "ex4"))).split())

    def blank(student):
        record = _exercise_record(student, 0.0, ["not-answered"])
        record["exercises"]["ex4"]["tests"][0]["answered"] = False
        return record

    def unattempted(student):
        record = _exercise_record(student, 0.0)
        record["exercises"]["ex4"]["attempted"] = False
        return record

    some = text([_exercise_record("a", 4.0), blank("b"), unattempted("c")])
    assert "3 graded, 1 answered it; mean of those who answered 4.00 / 4" in some
    assert "blockwise 1 / 1 100% 2" in some
    assert "Not answered (left as the notebook was handed out) by 2: b, c." in some
    assert "No diagnoses: every answer was correct." in some
    nobody = text([blank("b"), unattempted("c")])
    assert "Not attempted: none of the 2 graded students answered this exercise" in nobody
    assert "without full marks" not in nobody and "%" not in nobody


def test_the_csv_files_match_the_json(graded):
    course, students, _ = graded
    report = course / "reports" / "sdpa"
    scores = {r["student"]: r for r in csv.DictReader((report / "scores.csv").open())}
    assert set(scores) == set(students)
    for student, record in students.items():
        row = scores[student]
        if record["status"] == "failed":
            assert row["score"] == "" and row["reason"] == record["error"]
            continue
        assert float(row["score"]) == record["score"]
        for exercise, got in record["exercises"].items():
            assert float(row[exercise]) == got["score"]
            assert row[f"{exercise} diagnoses"] == " ".join(got["diagnoses"])
    pairs = {(r["student"], r["exercise"], r["code"])
             for r in csv.DictReader((report / "diagnoses.csv").open())}
    assert pairs == {(s, ex, code) for s, r in students.items()
                     for ex, got in r["exercises"].items() for code in got["diagnoses"]}
    lms = {r["student_id"]: r for r in csv.DictReader((report / "grades.csv").open())}
    assert set(lms) == set(students)
    for student, record in students.items():
        if record["status"] == "graded":
            assert float(lms[student]["auto_score"]) == record["score"]
            assert lms[student]["hand_pending"] == "yes"
        else:
            assert lms[student]["total"] == "" and lms[student]["status"] == "failed"
