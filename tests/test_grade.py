"""`sdpa-course grade` on a temporary course, with a fake engine that scores on request
(tests/fake_engine.py, passed as `grade_course(..., engine=...)`).

One class is graded once per module (answer key, partial credit, broken and hostile
submissions); the tests then read the gradebook through nbgrader's own API and `nbgrader
export`, the feedback, the report and the `--json` output. Resume and --force get a small
class of their own.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import fake_engine
import pytest
from grade_course_factory import (
    TIMESTAMP,
    answer_key,
    copy_course,
    other_assignment_notebook,
    released_course,
    submit,
    with_cell_source,
    with_code,
    with_deadline,
    without_cell,
)
from nbgrader.api import Gradebook, MissingEntry

import sdpa_course.grading.grade as pipeline


def grade_course(course: Path, **kwargs):
    """`grade_course` with the fake engine in the worker processes."""
    return pipeline.grade_course(course, engine=fake_engine.grade_submission, **kwargs)


def grade_class(course: Path, **kwargs) -> int:
    """`grade_class` (what `sdpa-course grade` calls) with the fake engine."""
    return pipeline.grade_class(course, engine=fake_engine.grade_submission, **kwargs)


@pytest.fixture(scope="session")
def course_template(tmp_path_factory) -> Path:
    course = released_course(tmp_path_factory.mktemp("template") / "course")
    with_deadline(course, 3.0)  # the fake engine's hang is stopped after 3 s
    return course


@pytest.fixture(scope="module")
def graded_class(course_template, tmp_path_factory):
    course = copy_course(course_template, tmp_path_factory.mktemp("class") / "course")
    key = answer_key()
    submit(course, "ada", key)
    submit(course, "ben", with_code(key, "# FAKE:ex3=4.5\n# FAKE:ex1=1.5"))
    submit(course, "cy", text='{"cells": [ this is not json')
    submit(course, "dee", other_assignment_notebook())
    submit(course, "eve", without_cell(key, "ex3_autograded"))
    submit(course, "fay", with_cell_source(key, "ex2_autograded", "print('full marks please')"))
    submit(course, "gus", with_code(key, "# FAKE:kill-worker"))
    submit(course, "hal", with_code(key, "# FAKE:hang"))
    submit(course, "ivy", with_code(key, "# FAKE:refuse"))
    progress = io.StringIO()
    result = grade_course(course, workers=2, progress_stream=progress)
    return course, result, progress.getvalue()


FAILED = {"cy", "dee", "gus", "hal", "ivy"}


def gradebook(course: Path) -> Gradebook:
    return Gradebook(f"sqlite:///{course / 'gradebook.db'}")


def test_every_student_gets_a_status_and_the_failed_ones_a_reason(graded_class):
    _, result, _ = graded_class
    assert set(result.records) == {"ada", "ben", "cy", "dee", "eve", "fay", "gus", "hal", "ivy"}
    assert set(result.failed) == FAILED
    reasons = {s: result.records[s]["error"] for s in FAILED}
    assert "not a readable notebook" in reasons["cy"]
    assert "not this assignment's notebook" in reasons["dee"]
    assert "process died" in reasons["gus"]
    assert "longer than 3 s" in reasons["hal"]
    assert "refuses" in reasons["ivy"]
    for student in FAILED:
        assert result.records[student]["score"] is None


def test_scores_reach_nbgrader_gradebook_with_partial_credit(graded_class):
    course, _, _ = graded_class
    with gradebook(course) as gb:
        assert gb.find_submission("sdpa", "ada").score == pytest.approx(20.0)
        ben = gb.find_submission_notebook("attention", "sdpa", "ben")
        scores = {g.name: g.score for g in ben.grades}
        assert scores["ex1_autograded"] == pytest.approx(1.5)
        assert scores["ex3_autograded"] == pytest.approx(4.5)
        assert scores["ex2_autograded"] == pytest.approx(6.0)


def test_written_answer_waits_for_a_hand_grade(graded_class):
    course, _, _ = graded_class
    with gradebook(course) as gb:
        grade = gb.find_grade("ex2_explain", "attention", "sdpa", "ada")
        assert grade.needs_manual_grade and grade.manual_score is None


def test_submission_timestamp_is_recorded(graded_class):
    course, _, _ = graded_class
    with gradebook(course) as gb:
        assert gb.find_submission("sdpa", "ada").timestamp.strftime("%Y-%m-%d %H:%M") == \
            TIMESTAMP[:16]


def test_failed_students_hold_no_score_in_the_gradebook(graded_class):
    course, _, _ = graded_class
    with gradebook(course) as gb:
        for student in FAILED:
            with pytest.raises(MissingEntry):
                gb.find_submission("sdpa", student)


def test_deleted_and_edited_graded_cells_are_restored_and_scored(graded_class):
    course, result, _ = graded_class
    assert result.records["eve"]["status"] == "graded"
    assert any("ex3_autograded" in w for w in result.records["eve"]["warnings"])
    assert any("ex2_autograded" in w for w in result.records["fay"]["warnings"])
    assert not [w for w in result.records["ada"]["warnings"] if "edited" in w]
    with gradebook(course) as gb:
        assert gb.find_grade("ex3_autograded", "attention", "sdpa", "eve").score == 11.0
        assert gb.find_submission("sdpa", "fay").score == pytest.approx(20.0)


def test_nbgrader_export_sees_the_grades(graded_class, tmp_path):
    course, _, _ = graded_class
    out = tmp_path / "grades.csv"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), "export", "--to", str(out)],
        cwd=course, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    rows = {row["student_id"]: row for row in csv.DictReader(out.open())}
    assert float(rows["ben"]["raw_score"]) == pytest.approx(1.5 + 6 + 4.5)
    assert rows["ada"]["timestamp"].startswith(TIMESTAMP[:16])
    assert not FAILED & set(rows)  # failed: no row with a score of 0


def test_feedback_is_written_for_graded_students_only(graded_class):
    course, result, _ = graded_class
    for student, record in result.records.items():
        html = course / "feedback" / student / "sdpa" / "attention.html"
        assert html.is_file() == (record["status"] == "graded"), student
    assert (course / "feedback" / "ada" / "sdpa" / "timestamp.txt").is_file()


def test_class_report_lists_everyone_with_empty_scores_for_failed(graded_class):
    course, result, _ = graded_class
    report = course / "reports" / "sdpa"
    for name in ("class_report.html", "scores.png", "diagnoses.png"):
        assert (report / name).stat().st_size > 0
    rows = {row["student"]: row for row in csv.DictReader((report / "scores.csv").open())}
    assert set(rows) == set(result.records)
    assert rows["ben"]["ex3"] == "4.5" and rows["ben"]["score"] == "12"
    assert rows["ben"]["diagnoses"] == "mask-inverted"
    assert rows["cy"]["status"] == "failed"
    assert rows["cy"]["score"] == "" and rows["cy"]["ex1"] == ""  # no score, not 0
    assert "not a readable notebook" in rows["cy"]["reason"]
    page = (report / "class_report.html").read_text()
    assert 'src="scores.png"' in page and 'src="diagnoses.png"' in page and "cy" in page


def test_progress_prints_count_and_time_when_not_a_terminal(graded_class):
    _, _, progress = graded_class
    assert "9/9 done" in progress


def test_json_of_a_failed_student_has_a_reason_and_no_score(graded_class):
    _, result, _ = graded_class
    out = json.loads(json.dumps(result.as_json()))
    cy = out["students"]["cy"]
    assert cy["status"] == "failed" and cy["score"] is None and cy["error"]
    assert set(out["students"]) == set(result.records)


@pytest.fixture
def small_class(course_template, tmp_path):
    course = copy_course(course_template, tmp_path / "course")
    submit(course, "ada", answer_key())
    submit(course, "ben", with_code(answer_key(), "# FAKE:ex3=4.5"))
    return course


def test_rerun_grades_nothing_already_recorded_and_force_regrades_all(small_class):
    assert grade_course(small_class, workers=1).graded_now == ["ada", "ben"]
    assert grade_course(small_class, workers=1).graded_now == []
    assert sorted(grade_course(small_class, workers=1, force=True).graded_now) == ["ada", "ben"]


def test_interrupted_run_resumes_with_the_unrecorded_student(small_class):
    grade_course(small_class, workers=1)
    # as if the run had stopped after ben's gradebook entry but before his record
    (small_class / "reports" / "sdpa" / "results" / "ben.json").unlink()
    again = grade_course(small_class, workers=1)
    assert again.graded_now == ["ben"] and again.records["ben"]["score"] == 3 + 6 + 4.5


def test_resubmission_is_regraded_and_a_broken_one_leaves_no_stale_score(small_class):
    grade_course(small_class, workers=1)
    submit(small_class, "ben", text="{broken")
    again = grade_course(small_class, workers=1)
    assert again.graded_now == ["ben"] and again.records["ben"]["status"] == "failed"
    with gradebook(small_class) as gb:
        with pytest.raises(MissingEntry):
            gb.find_submission("sdpa", "ben")
    assert not (small_class / "feedback" / "ben" / "sdpa").exists()


def test_force_regrade_keeps_hand_given_marks(small_class):
    grade_course(small_class, workers=1)
    with gradebook(small_class) as gb:
        grade = gb.find_grade("ex2_explain", "attention", "sdpa", "ada")
        grade.manual_score = 1.5
        gb.db.commit()
    grade_course(small_class, workers=1, force=True)
    with gradebook(small_class) as gb:
        assert gb.find_grade("ex2_explain", "attention", "sdpa", "ada").manual_score == 1.5
        assert gb.find_submission("sdpa", "ada").score == pytest.approx(21.5)


def test_plain_nbgrader_autograde_also_grades_with_the_engine(small_class):
    from nbgrader.apps import NbGraderAPI

    from autograder.corpus import cases
    from sdpa_course.course.directory import load_config
    from sdpa_course.demo import notebook_from_source

    # the kit's own engine, in nbgrader's process: a typical Exercise 3 mistake
    case = next(c for c in cases() if c.name == "ex3-mask-inverted")
    submit(small_class, "cal", notebook_from_source(answer_key(), case.source))
    api = NbGraderAPI(config=load_config(small_class))
    outcome = api.autograde("sdpa", "cal", force=True, create=True)
    assert outcome["success"], outcome.get("error")
    with gradebook(small_class) as gb:
        scores = {g.name: g.score for g in gb.find_submission_notebook(
            "attention", "sdpa", "cal").grades}
    assert scores["ex3_autograded"] == case.scores["ex3"] < 11
    assert scores["ex1_autograded"] == case.scores["ex1"]


def test_plain_nbgrader_feedback_and_release_feedback_work_on_kit_grades(small_class, tmp_path):
    from nbgrader.apps import NbGraderAPI

    from sdpa_course.course.directory import load_config

    grade_course(small_class, workers=1)
    api = NbGraderAPI(config=load_config(small_class))
    assert api.generate_feedback("sdpa", "ben", force=True)["success"]
    page = (small_class / "feedback" / "ben" / "sdpa" / "attention.html").read_text()
    assert "pending" in page and "/opt/grader" not in page
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), "release_feedback", "sdpa",
         f"--Exchange.root={exchange}"], cwd=small_class, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(list(exchange.rglob("*.html"))) == 2


def test_a_course_database_elsewhere_is_honoured(small_class, tmp_path):
    elsewhere = tmp_path / "db" / "grades.db"
    elsewhere.parent.mkdir()
    (small_class / "gradebook.db").rename(elsewhere)
    with (small_class / "nbgrader_config.py").open("a") as fh:
        fh.write(f'c.CourseDirectory.db_url = "sqlite:///{elsewhere}"\n')
    grade_course(small_class, workers=1)
    assert not (small_class / "gradebook.db").exists()
    with Gradebook(f"sqlite:///{elsewhere}") as gb:
        assert gb.find_submission("sdpa", "ben").score == pytest.approx(3 + 6 + 4.5)


def test_ignored_source_files_never_reach_autograded_or_feedback(small_class):
    # the jupytext source holds the solutions; the course config tells nbgrader to ignore it
    (small_class / "source" / "sdpa" / "attention.py").write_text("SOLUTION = 'secret'\n")
    (small_class / "source" / "sdpa" / "data.csv").write_text("x\n1\n")
    grade_course(small_class, workers=1)
    for step in ("autograded", "feedback"):
        folder = small_class / step / "ada" / "sdpa"
        assert not (folder / "attention.py").exists(), step
    assert (small_class / "autograded" / "ada" / "sdpa" / "data.csv").is_file()


def test_run_stopped_with_ctrl_c_resumes_where_it_stopped(tmp_path):
    # the real command and the real engine; each student's extra cell makes grading them
    # take at least 0.7 s, so the run is still going when the signal comes
    course = released_course(tmp_path / "course")
    students = [f"s{i}" for i in range(6)]
    for student in students:
        submit(course, student, with_code(answer_key(), "import time\ntime.sleep(0.7)"))
    results = course / "reports" / "sdpa" / "results"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.Popen(
        [sys.executable, "-m", "sdpa_course.cli", "grade", "--course-dir", str(course),
         "--workers", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (results.is_dir() and len(list(results.glob("*.json"))) >= 2):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.05)
    run.send_signal(signal.SIGINT)
    assert run.wait(timeout=30) == 130
    first = {p.stem for p in results.glob("*.json")}
    assert 2 <= len(first) < len(students)
    again = pipeline.grade_course(course, workers=2)
    assert sorted(again.graded_now) == sorted(set(students) - first)
    assert not again.failed
    with gradebook(course) as gb:
        assert len(gb.assignment_submissions("sdpa")) == len(students)


def test_cli_json_matches_the_contract(small_class, capsys):
    status = grade_class(small_class, workers=1, as_json=True)
    out = json.loads(capsys.readouterr().out)
    assert status == 0  # nobody failed
    assert out["assignment"] == "sdpa" and set(out["students"]) == {"ada", "ben"}
    ada = out["students"]["ada"]
    assert {"status", "score", "max_score", "exercises", "error"} <= set(ada)
    assert ada["status"] == "graded" and ada["score"] == 20.0 and ada["error"] is None
    assert set(ada["exercises"]) == {"ex1", "ex2", "ex3"}
    assert ada["exercises"]["ex1"]["max_score"] == 3.0


def test_cli_exit_status_says_when_anyone_failed(small_class, capsys):
    submit(small_class, "cy", text="{broken")
    assert grade_class(small_class, workers=1) == 1
    assert "failed" in capsys.readouterr().out
