"""The instructor commands on a PostgreSQL gradebook (`CourseDirectory.db_url`), on a real
server started on loopback for this module (tests/postgres_server.py).

release, grade (the real engine), a rerun, `--force`, and `nbgrader export`: everything that
the SQLite tests check about the gradebook, read back through nbgrader's own API.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from grade_course_factory import answer_key, submit, variant_of
from postgres_server import start_server, why_unavailable
from required import unavailable

from autograder.corpus import case
from sdpa_course.course.create import init_course
from sdpa_course.course.release import release_assignment
from sdpa_course.demo import notebook_from_source
from sdpa_course.grading.grade import grade_course

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

CASES = ("ex1-no-scaling", "ex3-mask-inverted", "syntax-error")


@pytest.fixture(scope="module")
def postgres():
    reason = why_unavailable()
    if reason:
        unavailable(f"PostgreSQL gradebook tests: {reason}")
    server = start_server()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def graded_on_postgres(postgres, tmp_path_factory):
    db_url = postgres.create_database("sdpa_course_test")
    course = init_course(tmp_path_factory.mktemp("pg") / "course")
    with (course / "nbgrader_config.py").open("a") as fh:
        fh.write(f'\nc.CourseDirectory.db_url = "{db_url}"\n')
    release_assignment(course)
    key = answer_key()
    # What nbgrader's gradebook holds: the score plus exercise 4's extra credit.
    expected = {"ada": 20.0 + 4.0}
    submit(course, "ada", key)
    for name in CASES:
        own = case(name, variant_of(course, name))  # with the student's own numbers
        submit(course, name, notebook_from_source(key, own.source))
        expected[name] = own.expected_score + own.expected_extra_credit
    submit(course, "cy", text='{"cells": [ this is not json')
    result = grade_course(course, workers=2, progress_stream=open(os.devnull, "w"))
    return course, db_url, result, expected


def autograded_scores(db_url: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gradebook:
        return {s.student.id: s.score for s in gradebook.assignment_submissions("sdpa")}


def test_grade_records_every_graded_student_in_postgres(graded_on_postgres):
    _, db_url, result, expected = graded_on_postgres
    assert autograded_scores(db_url) == expected
    assert {s: r["score"] + r["extra_credit"] for s, r in result.records.items()
            if r["status"] == "graded"} == expected


def test_a_failed_submission_stays_out_of_the_postgres_gradebook(graded_on_postgres):
    course, db_url, result, _ = graded_on_postgres
    assert result.failed == ["cy"]
    assert "cy" not in autograded_scores(db_url)
    assert not (course / "gradebook.db").exists()  # nothing went to a SQLite file instead


def test_rerun_on_postgres_grades_nobody_again(graded_on_postgres):
    course, db_url, _, expected = graded_on_postgres
    again = grade_course(course, workers=1, progress_stream=open(os.devnull, "w"))
    assert again.graded_now == []  # "cy" too: its notebook, not the kit, is at fault
    assert autograded_scores(db_url) == expected


def test_force_regrades_into_postgres_without_duplicates(graded_on_postgres):
    course, db_url, _, expected = graded_on_postgres
    forced = grade_course(course, workers=2, force=True, progress_stream=open(os.devnull, "w"))
    assert sorted(forced.graded_now) == sorted([*expected, "cy"])
    assert autograded_scores(db_url) == expected


def test_nbgrader_export_reads_the_postgres_gradebook(graded_on_postgres):
    course, _, _, expected = graded_on_postgres
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "export"], cwd=course,
                   env=env, check=True, capture_output=True)
    with (course / "grades.csv").open() as fh:
        rows = {row["student_id"]: float(row["score"]) for row in csv.DictReader(fh)
                if row["status"] == "graded"}
    assert {s: rows[s] for s in expected} == expected
