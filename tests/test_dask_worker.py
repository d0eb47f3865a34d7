"""The Dask worker's side of grading, without a cluster: the version check and the task.

`grade_task` is what every worker runs for one submission: its contents in, a plain report
(or the reason there is none) out, and a refusal when the worker's kit is not the
instructor's.
"""

from __future__ import annotations

import pytest
from grade_course_factory import ANSWER_KEY

pytest.importorskip("distributed")

from sdpa_course.grading.dask_worker import KitMismatch, grade_task  # noqa: E402
from sdpa_course.grading.kit_version import kit_fingerprint, version_mismatch  # noqa: E402


def test_the_same_kit_is_no_mismatch():
    assert version_mismatch(kit_fingerprint(), kit_fingerprint()) is None


@pytest.mark.parametrize("part, named", [("kit", "sdpa-course version"),
                                         ("exercises", "exercises (hidden tests, reference)"),
                                         ("grader", "grader source")])
def test_a_mismatch_names_the_part_that_differs(part, named):
    other = {**kit_fingerprint(), part: "something-else"}
    message = version_mismatch(other, kit_fingerprint())
    assert named in message and "something-else" in message
    assert "Install the same sdpa-course" in message


def test_the_fingerprint_covers_the_hidden_suites_and_the_reference():
    from sdpa_course.grading import kit_version

    covered = {p.name for root in kit_version.EXERCISE_SOURCES
               for p in kit_version._python_files(root)}
    assert {"test_ex1.py", "test_ex3.py", "exercises.py", "attention.py", "masks.py"} <= covered


def test_grade_task_grades_a_notebook_shipped_as_bytes():
    result = grade_task(ANSWER_KEY.read_bytes(), "attention.ipynb", kit_fingerprint())
    report = result["report"]
    assert report["submission"] == "attention.ipynb"
    assert (report["score"], report["max_score"]) == (20.0, 20.0)


def test_grade_task_returns_the_reason_for_a_broken_notebook():
    result = grade_task(b'{"cells": [ not json', "attention.ipynb", kit_fingerprint())
    assert "report" not in result and "JSON is broken" in result["error"]


def test_grade_task_refuses_when_the_instructor_runs_other_exercises():
    expected = {**kit_fingerprint(), "exercises": "0123456789abcdef"}
    with pytest.raises(KitMismatch, match="refuses to grade"):
        grade_task(ANSWER_KEY.read_bytes(), "attention.ipynb", expected)

