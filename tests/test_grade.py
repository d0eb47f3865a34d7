"""`sdpa-course grade` on a temporary course, with a fake engine that scores on request
(tests/fake_engine.py, passed as `grade_course(..., engine=...)`).

One class is graded once per module (answer key, partial credit, broken and hostile
submissions); the tests then read the gradebook through nbgrader's own API and `nbgrader
export`, the feedback, the report and the `--json` output. Resume and --force get a small
class of their own.
"""

from __future__ import annotations

import copy
import csv
import html
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import fake_engine
import nbformat
import pytest
from grade_course_factory import (
    TIMESTAMP,
    answer_key,
    copy_course,
    other_assignment_notebook,
    released_course,
    submit,
    variant_of,
    with_cell_source,
    with_code,
    with_deadline,
    without_cell,
)
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.api import Gradebook, MissingEntry

import sdpa_course.grading.grade as pipeline
from sdpa_course.nbgrader_ext.export import KitCsvExport


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
    assert set(result.records) == {"ada", "ben", "cy", "dee", "eve", "gus", "hal", "ivy"}
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


def test_a_deleted_graded_cell_is_restored_and_scored(graded_class):
    course, result, _ = graded_class
    assert result.records["eve"]["status"] == "graded"
    assert any("ex3_autograded" in w for w in result.records["eve"]["warnings"])
    assert result.records["ada"]["warnings"] == []  # the answer key, as released: nothing to say
    with gradebook(course) as gb:
        assert gb.find_grade("ex3_autograded", "attention", "sdpa", "eve").score == 11.0


def _claims_points(nb):
    """Every way a notebook can try to claim points it did not earn: graded cells edited to
    print a score, to do nothing, to be worth more; one deleted; one copied; a graded cell of
    her own worth 30 points."""
    nb = with_cell_source(nb, "ex1_autograded", "print('Exercise 1: 3 / 3 points, all passed')")
    nb = without_cell(nb, "ex2_autograded")
    nb = copy.deepcopy(nb)
    [ex3] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") ==
             "ex3_autograded"]
    second = copy.deepcopy(ex3)
    second.id = "ex3-autograded-copy"  # as JupyterLab's copy and paste makes it
    nb.cells.append(second)
    ex3.source = "pass"
    ex3.metadata["nbgrader"]["points"] = 50
    bonus = new_code_cell("assert True\nprint('bonus: 30 / 30')")
    bonus.metadata["nbgrader"] = {"grade": True, "grade_id": "bonus", "locked": True,
                                  "points": 30, "schema_version": 3, "solution": False,
                                  "task": False}
    nb.cells.append(bonus)
    return nb


def test_a_student_who_edits_graded_cells_to_claim_points_gets_only_what_she_earned(tmp_path):
    # the kit's real engine: a typical Exercise 3 mistake, with every trick above on top
    from autograder.corpus import case
    from sdpa_course.demo import notebook_from_source

    course = released_course(tmp_path / "course")  # the default deadline: the real engine
    mistake = case("ex3-mask-inverted", variant_of(course, "fay"))  # with fay's own numbers
    submit(course, "fay", _claims_points(notebook_from_source(answer_key(), mistake.source)))
    result = pipeline.grade_course(course, workers=1)
    fay = result.records["fay"]
    assert fay["status"] == "graded", fay["error"]
    assert fay["score"] == mistake.expected_score < 20
    assert {ex: r["score"] for ex, r in fay["exercises"].items()} == mistake.scores
    warnings = " ".join(fay["warnings"])
    for told in ("ex1_autograded", "ex2_autograded", "ex3_autograded", "bonus"):
        assert told in warnings, (told, fay["warnings"])
    with gradebook(course) as gb:
        submission = gb.find_submission("sdpa", "fay")
        assert submission.score == pytest.approx(mistake.expected_score
                                                 + mistake.expected_extra_credit)
        assert submission.max_score == 22  # 20 automatic + 2 by hand: no bonus cell
        grades = {g.name: g.score for g in gb.find_submission_notebook(
            "attention", "sdpa", "fay").grades}
    assert set(grades) == {"ex1_autograded", "ex2_autograded", "ex3_autograded",
                           "ex4_autograded", "ex2_explain"}  # ex4: 0 points, extra credit
    assert grades["ex3_autograded"] == mistake.scores["ex3"] < 11


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
    for student in FAILED:  # listed, with an empty score and the reason: never a 0
        assert rows[student]["status"] == "failed" and rows[student]["score"] == ""
        assert rows[student]["raw_score"] == "" and rows[student]["reason"]


def test_a_hang_that_cost_nothing_shows_beside_the_score_in_both_lms_exports(
        course_template, tmp_path):
    """A cell stopped after its answers were in (a `while` loop at the end of `ex2_numbers`)
    costs no point; the LMS exports, where only a score would show, name it."""
    course = copy_course(course_template, tmp_path / "course")
    key = answer_key()
    submit(course, "ada", key)
    submit(course, "dan", with_code(key, "# FAKE:ex2:timeout"))
    submit(course, "eli", with_code(key, "# FAKE:cell-timeout"))  # a scratch cell of no exercise
    result = grade_course(course, workers=1)
    table = io.StringIO()
    pipeline._print_summary(result, table)  # `sdpa-course grade`'s table
    rows = {line.split()[0]: line for line in table.getvalue().splitlines() if line}
    said = "did not run to the end: ex2: timeout"
    eli_said = "did not run to the end: cell 49 (timeout)"
    assert "ex2: timeout" in rows["dan"] and eli_said in rows["eli"]
    assert "did not run" not in rows["ada"]
    assert eli_said in result.as_json()["students"]["eli"]["warnings"]  # grade --json
    report = course / "reports" / "sdpa"
    ours = {r["student_id"]: r for r in csv.DictReader((report / "grades.csv").open())}
    assert said in ours["dan"]["reason"] and "did not run" not in ours["ada"]["reason"]
    assert eli_said in ours["eli"]["reason"]
    assert ours["dan"]["total"] == ours["eli"]["total"] == ours["ada"]["total"] == "20"
    scores = {r["student"]: r for r in csv.DictReader((report / "scores.csv").open())}
    assert scores["dan"]["ex2 diagnoses"] == "timeout" and eli_said in scores["eli"]["reason"]
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", (
        report / "class_report.html").read_text())).split())
    assert "Code stopped outside the exercises: 1" in page and "eli cell 49 (timeout)" in page
    out = tmp_path / "export.csv"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), "export", "--to", str(out)],
        cwd=course, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    exported = {r["student_id"]: r for r in csv.DictReader(out.open())}
    assert exported["dan"]["reason"] == said and exported["ada"]["reason"] == ""
    assert exported["eli"]["reason"] == "did not run to the end: cell 49 (timeout)"
    assert exported["dan"]["score"] == exported["eli"]["score"] == exported["ada"]["score"]


def test_feedback_is_written_for_graded_students_only(graded_class):
    course, result, _ = graded_class
    for student, record in result.records.items():
        html = course / "feedback" / student / "sdpa" / "attention.html"
        assert html.is_file() == (record["status"] == "graded"), student
    assert (course / "feedback" / "ada" / "sdpa" / "timestamp.txt").is_file()


def test_class_report_lists_everyone_with_empty_scores_for_failed(graded_class):
    course, result, _ = graded_class
    report = course / "reports" / "sdpa"
    for name in ("class_report.html", "scores.svg", "diagnoses.svg"):
        assert (report / name).stat().st_size > 0
    rows = {row["student"]: row for row in csv.DictReader((report / "scores.csv").open())}
    assert set(rows) == set(result.records)
    assert rows["ben"]["ex3"] == "4.5" and rows["ben"]["score"] == "12"
    assert rows["ben"]["ex3 diagnoses"] == "mask-inverted" and rows["ben"]["ex1 diagnoses"] == ""
    assert rows["cy"]["status"] == "failed"
    assert rows["cy"]["score"] == "" and rows["cy"]["ex1"] == ""  # no score, not 0
    assert "not a readable notebook" in rows["cy"]["reason"]
    page = (report / "class_report.html").read_text()
    assert 'src="scores.svg"' in page and 'src="diagnoses.svg"' in page and "cy" in page


def test_progress_prints_count_and_time_when_not_a_terminal(graded_class):
    _, _, progress = graded_class
    assert "8/8 done" in progress


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


@pytest.mark.slow
def test_a_student_the_kit_failed_is_graded_again_next_run_and_one_it_could_not_is_not(
        small_class):
    from sdpa_course.reports import records

    reports = small_class / "reports" / "sdpa"
    fingerprint = grade_course(small_class, workers=1).records["ben"]["fingerprint"]
    # as a run records a grading worker it lost (Dask), or a gradebook it could not write
    records.save_record(reports, records.failed_record(
        "ben", "the grading worker died", fingerprint, retry=True))
    again = grade_course(small_class, workers=1)
    assert again.graded_now == ["ben"] and again.records["ben"]["status"] == "graded"
    records.save_record(reports, records.failed_record("ben", "not a notebook", fingerprint))
    third = grade_course(small_class, workers=1)  # the submission's own failure stands
    assert third.graded_now == [] and third.records["ben"]["error"] == "not a notebook"


def test_resubmission_is_regraded_and_a_broken_one_leaves_no_stale_score(small_class):
    grade_course(small_class, workers=1)
    submit(small_class, "ben", text="{broken")
    again = grade_course(small_class, workers=1)
    assert again.graded_now == ["ben"] and again.records["ben"]["status"] == "failed"
    with gradebook(small_class) as gb:
        with pytest.raises(MissingEntry):
            gb.find_submission("sdpa", "ben")
    assert not (small_class / "feedback" / "ben" / "sdpa").exists()


def test_a_resubmission_changing_only_its_timestamp_is_regraded_with_the_late_penalty(
        small_class, monkeypatch):
    with (small_class / "nbgrader_config.py").open("a") as fh:
        fh.write("\nc.LateSubmissionPlugin.penalty_method = 'zero'\n")
    with gradebook(small_class) as gb:
        gb.update_or_create_assignment("sdpa", duedate="2026-11-21 00:00:00 UTC")
    assert grade_course(small_class, workers=1).graded_now == ["ada", "ben"]
    with gradebook(small_class) as gb:
        assert gb.find_submission("sdpa", "ada").late_submission_penalty == 0
    # the same notebook handed in again, after the deadline: only timestamp.txt differs
    (small_class / "submitted" / "ada" / "sdpa" / "timestamp.txt").write_text(
        "2026-11-22 10:00:00.000000 UTC")
    assert grade_course(small_class, workers=1).graded_now == ["ada"]
    with gradebook(small_class) as gb:
        ada = gb.find_submission("sdpa", "ada")
        assert ada.timestamp.strftime("%Y-%m-%d %H:%M") == "2026-11-22 10:00"
        assert ada.late_submission_penalty == pytest.approx(20.0)  # "zero": all of it
        assert gb.find_submission("sdpa", "ben").late_submission_penalty == 0
        monkeypatch.chdir(small_class)  # `nbgrader export` runs in the course directory
        exported = {row["student_id"]: row for row in KitCsvExport().rows(gb)}
    assert (exported["ada"]["raw_score"], exported["ada"]["late_submission_penalty"],
            exported["ada"]["score"]) == ("20", "20", "0")
    assert exported["ben"]["late_submission_penalty"] == "0"
    assert exported["ben"]["score"] == exported["ben"]["raw_score"] != "0"
    lms = {row["student_id"]: row for row in csv.DictReader(
        (small_class / "reports" / "sdpa" / "grades.csv").open(encoding="utf-8"))}
    assert (lms["ada"]["auto_score"], lms["ada"]["late_penalty"], lms["ada"]["total"]) == (
        "20", "20", "0")
    assert lms["ben"]["late_penalty"] == "0" and lms["ben"]["total"] == lms["ben"]["auto_score"]
    # the class report lists the late submission (issue 13), and only it
    page = (small_class / "reports" / "sdpa" / "class_report.html").read_text()
    late = page[page.index("<h2>Late submissions</h2>"):]
    late = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", late)).split())
    assert "ada 2026-11-22 10:00" in late and "34.0 h 20" in late and "ben" not in late
    assert grade_course(small_class, workers=1).graded_now == []


def _grade_while_the_student_submits_again(path, **kwargs):
    """The fake engine, during whose grading the student hands in a notebook that loses
    points (as `nbgrader collect` or an LMS sync may bring one while a class is graded)."""
    report = fake_engine.grade_submission(path, **kwargs)
    autograded = Path(path)  # <course>/autograded/<student>/sdpa/attention.ipynb
    if "FAKE:ex3" not in autograded.read_text():
        submit(autograded.parents[3], autograded.parents[1].name,
               with_code(answer_key(), "# FAKE:ex3=4.5"))
    return report


def test_a_resubmission_that_arrives_while_the_old_notebook_is_graded_is_graded_next_run(
        small_class):
    first = pipeline.grade_course(small_class, engine=_grade_while_the_student_submits_again,
                                  workers=1)
    assert first.records["ada"]["score"] == 20  # the notebook that was there when read
    again = grade_course(small_class, workers=1)
    assert again.graded_now == ["ada"]  # ben's notebook has not changed
    assert again.records["ada"]["score"] == 3 + 6 + 4.5


def test_half_a_surrogate_pair_in_a_notebook_is_graded_and_stops_no_one(small_class):
    # "\ud83d" in the JSON (a broken emoji, as a browser saves it): writing the autograded
    # notebook raised UnicodeEncodeError out of the run, before anyone was recorded
    key = with_cell_source(answer_key(), "ex2_explain", "Scaling keeps exp tame \ud83d")
    submit(small_class, "cam", text=json.dumps(with_code(key, "# FAKE:ex3=4.5 \udc00")))
    result = grade_course(small_class, workers=1)
    assert sorted(result.graded_now) == ["ada", "ben", "cam"]
    cam = result.records["cam"]
    assert cam["status"] == "graded" and cam["score"] == 3 + 6 + 4.5
    assert any("half of a surrogate pair" in note for note in cam["warnings"])
    page = (small_class / "feedback" / "cam" / "sdpa" / "attention.html").read_text()
    assert "Scaling keeps exp tame \ufffd" in page


def test_a_kit_fault_preparing_one_notebook_fails_that_student_only(small_class, monkeypatch):
    import sdpa_course.grading.recording as recording

    read = recording.read_submitted_notebook

    def fails_on_ben(submission, *args, **kwargs):
        if submission.student == "ben":
            raise ValueError("a notebook the kit did not foresee")
        return read(submission, *args, **kwargs)

    monkeypatch.setattr(recording, "read_submitted_notebook", fails_on_ben)
    result = grade_course(small_class, workers=1)
    assert result.records["ada"]["status"] == "graded"
    ben = result.records["ben"]
    assert ben["status"] == "failed" and ben["retry"]
    assert "ValueError: a notebook the kit did not foresee" in ben["error"]
    monkeypatch.undo()  # the kit fixed: the next run grades ben
    assert grade_course(small_class, workers=1).graded_now == ["ben"]


def test_notebook_json_that_breaks_nbformats_schema_is_repaired_or_failed_before_grading(
        small_class):
    # nbconvert checks the schema while the feedback is rendered, after the gradebook was
    # written: such a notebook was failed ("recording in nbgrader failed"), grades removed,
    # on every run
    def raw(edit):
        nb = json.loads(nbformat.writes(answer_key()))
        edit(nb)
        return json.dumps(nb)

    def bad_metadata(nb):
        nb["metadata"]["language_info"] = {"name": 5}
        nb["cells"][3]["metadata"]["jupyter"] = "hidden"

    def same_ids(nb):
        for cell in nb["cells"][:3]:
            cell["id"] = "twice"

    def unknown_cell(nb):
        nb["cells"][3]["cell_type"] = "weird"

    submit(small_class, "cam", text=raw(bad_metadata))
    submit(small_class, "dot", text=raw(same_ids))
    submit(small_class, "eli", text=raw(unknown_cell))
    result = grade_course(small_class, workers=1)
    cam, dot, eli = (result.records[s] for s in ("cam", "dot", "eli"))
    assert cam["status"] == dot["status"] == "graded" and cam["score"] == dot["score"] == 20
    assert any("metadata/language_info" in w and "cells/3/metadata/jupyter" in w
               for w in cam["warnings"]), cam["warnings"]
    assert any("2 cell ids used twice" in w for w in dot["warnings"]), dot["warnings"]
    assert eli["status"] == "failed" and not eli["retry"]
    assert "cell 4 is not a code, markdown or raw cell" in eli["error"]


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


def test_a_failed_resubmission_after_hand_marks_keeps_the_hand_marks_and_no_automatic_score(
        small_class):
    """A student with a hand mark resubmits a notebook that cannot be graded: her hand mark
    stays, and no automatic score of the old notebook does (the gradebook kept the old
    submission's automatic points while she showed as failed); the notebook is flagged."""
    grade_course(small_class, workers=1)
    with gradebook(small_class) as gb:
        gb.find_grade("ex2_explain", "attention", "sdpa", "ada").manual_score = 1.5
        gb.db.commit()
        assert gb.find_submission("sdpa", "ada").score == pytest.approx(21.5)
    submit(small_class, "ada", text="{broken")
    again = grade_course(small_class, workers=1)
    assert again.graded_now == ["ada"] and again.records["ada"]["status"] == "failed"
    with gradebook(small_class) as gb:
        notebook = gb.find_submission_notebook("attention", "sdpa", "ada")
        assert gb.find_grade("ex2_explain", "attention", "sdpa", "ada").manual_score == 1.5
        automatic = {grade.name: grade.auto_score for grade in notebook.grades
                     if grade.manual_score is None}
        assert automatic and all(score is None for score in automatic.values()), automatic
        assert gb.find_submission("sdpa", "ada").score == pytest.approx(1.5)
        assert notebook.flagged


def _marks_read_one_by_one(gb: Gradebook, student: str) -> dict | None:
    """The hand marks of the notebook nbgrader's own find_* call reads, one student at a
    time (what the batched query must give: the same rows, with nothing left out)."""
    from sdpa_course.grading.hand_marks import notebook_marks

    try:
        nb = gb.find_submission_notebook("attention", "sdpa", student)
    except MissingEntry:
        return None
    return notebook_marks(nb)


def test_hand_marks_read_at_once_are_those_read_student_by_student(small_class):
    from sdpa_course.grading.hand_marks import class_marks, student_marks

    grade_course(small_class, workers=1)
    with gradebook(small_class) as gb:
        before = {s: _marks_read_one_by_one(gb, s)["fingerprint"] for s in ("ada", "ben")}
        gb.find_grade("ex2_explain", "attention", "sdpa", "ada").manual_score = 1.5
        gb.find_comment("ex2_explain", "attention", "sdpa", "ada").manual_comment = "=good"
        gb.find_submission_notebook("attention", "sdpa", "ben").late_submission_penalty = 2
        gb.db.commit()
        expected = {s: _marks_read_one_by_one(gb, s) for s in ("ada", "ben")}
        assert expected["ada"]["written"]["ex2_explain"]["score"] == 1.5
        assert expected["ben"]["late_penalty"] == 2
        # each change makes that student's feedback page stale: a rerun writes it again
        assert all(expected[s]["fingerprint"] != before[s] for s in ("ada", "ben"))
        assert class_marks(gb, "sdpa", "attention", ["ada", "ben", "nobody"]) == expected
        assert class_marks(gb, "sdpa", "attention", ["ben"]) == {"ben": expected["ben"]}
        assert student_marks(gb, "sdpa", "attention", "ada") == expected["ada"]
        assert student_marks(gb, "sdpa", "attention", "nobody") is None


def test_plain_nbgrader_autograde_also_grades_with_the_engine(small_class):
    from nbgrader.apps import NbGraderAPI

    from autograder.corpus import cases
    from sdpa_course.course.directory import load_config
    from sdpa_course.demo import notebook_from_source

    # the kit's own engine, in nbgrader's process: a typical Exercise 3 mistake
    # written with cal's own numbers: the course has a seed
    case = next(c for c in cases(variant_of(small_class, "cal"))
                if c.name == "ex3-mask-inverted")
    submit(small_class, "cal", notebook_from_source(answer_key(), case.source))
    api = NbGraderAPI(config=load_config(small_class))
    outcome = api.autograde("sdpa", "cal", force=True, create=True)
    assert outcome["success"], outcome.get("error")
    with gradebook(small_class) as gb:
        scores = {g.name: g.score for g in gb.find_submission_notebook(
            "attention", "sdpa", "cal").grades}
    assert scores["ex3_autograded"] == case.scores["ex3"] < 11
    assert scores["ex1_autograded"] == case.scores["ex1"]
    # and exercise 4's extra credit, by the real engine: every point of it, on top
    blockwise = next(c for c in cases(variant_of(small_class, "dot"))
                     if c.name == "numpy-computed")
    submit(small_class, "dot", notebook_from_source(answer_key(), blockwise.source))
    assert api.autograde("sdpa", "dot", force=True, create=True)["success"]
    with gradebook(small_class) as gb:
        assert gb.find_grade("ex4_autograded", "attention", "sdpa", "dot").extra_credit == 4.0
        assert gb.find_submission("sdpa", "dot").score == pytest.approx(20.0 + 4.0)


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


def test_feedback_holds_the_page_and_what_release_feedback_reads_only(tmp_path):
    # a student's own page beside the kit's would be served without its sanitising and CSP
    course = released_course(tmp_path / "course")
    folder = submit(course, "eve", answer_key()).parent
    (folder / "evil.html").write_text("<script>alert(document.cookie)</script>")
    (folder / "attention_files").mkdir()
    (folder / "attention_files" / "x.html").write_text("<script>alert(1)</script>")
    (folder / "submission_secret.txt").write_text("0" * 128)  # as nbgrader submit leaves it
    assert grade_course(course, workers=1).records["eve"]["status"] == "graded"
    feedback = course / "feedback" / "eve" / "sdpa"
    assert sorted(p.name for p in feedback.iterdir()) == [
        "attention.html", "submission_secret.txt", "timestamp.txt"]


def test_run_stopped_with_ctrl_c_resumes_where_it_stopped(tmp_path):
    # the real command and the real engine; each student's extra cell makes grading them
    # take at least 0.7 s, so the run is still going when the signal comes
    course = released_course(tmp_path / "course")
    students = [f"s{i}" for i in range(6)]
    for student in students:
        submit(course, student, with_code(answer_key(), "import time\ntime.sleep(0.7)"))
    results = course / "reports" / "sdpa" / "results"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # Ctrl-C as a terminal sends it, even when this test runs where SIGINT is ignored (a
    # background job of a shell without job control passes that on to its children)
    run = subprocess.Popen(
        [sys.executable, "-m", "sdpa_course.cli", "grade", "--course-dir", str(course),
         "--workers", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
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
    assert {"status", "score", "max_score", "extra_credit", "exercises", "error"} <= set(ada)
    assert ada["status"] == "graded" and ada["score"] == 20.0 and ada["error"] is None
    assert set(ada["exercises"]) == {"ex1", "ex2", "ex3", "ex4"}
    assert ada["extra_credit"] == 0.0 and ada["exercises"]["ex4"]["extra_credit"] is True
    assert ada["exercises"]["ex1"]["max_score"] == 3.0


def test_extra_credit_reaches_the_gradebook_and_nbgrader_export_on_top_of_the_score(
        small_class, tmp_path):
    submit(small_class, "jo", with_code(answer_key(), "# FAKE:ex4=2.5\n# FAKE:ex3=10"))
    result = grade_course(small_class, workers=1)
    assert (result.records["jo"]["score"], result.records["jo"]["extra_credit"]) == (19.0, 2.5)
    with gradebook(small_class) as gb:
        grade = gb.find_grade("ex4_autograded", "attention", "sdpa", "jo")
        assert (grade.auto_score, grade.extra_credit, grade.max_score) == (0.0, 2.5, 0.0)
        assert not grade.failed_tests  # a 0-point cell scored 0 is no failure
        jo, ada = gb.find_submission("sdpa", "jo"), gb.find_submission("sdpa", "ada")
        assert jo.score == pytest.approx(19.0 + 2.5)  # nbgrader adds extra credit
        assert ada.score == pytest.approx(20.0)  # the optional exercise left alone: no loss
        assert jo.max_score == ada.max_score == pytest.approx(20.0 + 2)  # + ex2's hand marks
    out = tmp_path / "grades.csv"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), "export", "--to", str(out)],
        cwd=small_class, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    rows = {row["student_id"]: row for row in csv.DictReader(out.open())}
    assert float(rows["jo"]["raw_score"]) == pytest.approx(21.5)
    assert float(rows["jo"]["max_score"]) == float(rows["ada"]["max_score"]) == 22.0
    # a regrade sets the extra credit again from the engine, never adds it twice
    grade_course(small_class, workers=1, force=True)
    with gradebook(small_class) as gb:
        assert gb.find_submission("sdpa", "jo").score == pytest.approx(21.5)
    feedback = (small_class / "feedback" / "jo" / "sdpa" / "attention.html").read_text()
    assert "plus 2.5 points of extra credit" in feedback


def test_cli_exit_status_says_when_anyone_failed(small_class, capsys):
    submit(small_class, "cy", text="{broken")
    assert grade_class(small_class, workers=1) == 1
    assert "failed" in capsys.readouterr().out


@pytest.mark.parametrize("forged, named", [
    ("grade", "cell 2"),  # not a dict
    ({"grade": True, "points": 30}, "cell 2"),  # no id
    ({"grade": True, "grade_id": "bonus", "points": 30}, "bonus"),  # not the release's
    ({"grade": True, "grade_id": "ex3_autograded", "points": 11}, "ex3_autograded (a second"),
])
def test_nbgrader_metadata_the_release_did_not_give_is_removed_and_reported(
        tmp_path, forged, named):
    from sdpa_course.grading.submissions import Submission, read_submitted_notebook

    nb = new_notebook()
    graded = new_code_cell("assert attention is not None")
    graded.metadata["nbgrader"] = {"grade": True, "grade_id": "ex3_autograded", "points": 11,
                                   "locked": True, "solution": False}
    extra = new_code_cell("print('bonus')")
    extra.metadata["nbgrader"] = forged
    nb.cells = [graded, extra]
    folder = tmp_path / "fay" / "sdpa"
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / "attention.ipynb"))
    read, warnings = read_submitted_notebook(
        Submission("fay", folder, folder / "attention.ipynb"), {"ex3_autograded"},
        {"ex3_autograded"}, {"ex3_autograded": graded.source})
    assert read.cells[0].metadata["nbgrader"]["grade_id"] == "ex3_autograded"
    assert "nbgrader" not in read.cells[1].metadata
    assert read.cells[1].source == "print('bonus')"  # still run, as an ordinary cell
    assert any(named in w and "removed" in w for w in warnings), warnings


@pytest.mark.parametrize("forged, more", [(10, ""), (25, " and 15 more")])
def test_many_forged_cells_are_listed_ten_by_name_and_the_rest_counted(tmp_path, forged, more):
    from sdpa_course.grading.submissions import Submission, read_submitted_notebook

    nb = new_notebook()
    graded = new_code_cell("assert attention is not None")
    graded.metadata["nbgrader"] = {"grade": True, "grade_id": "ex3_autograded", "points": 11}
    nb.cells = [graded]
    for i in range(forged):
        cell = new_code_cell(f"print({i})")
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": f"bonus{i:02d}", "points": 9}
        nb.cells.append(cell)
    folder = tmp_path / "fay" / "sdpa"
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / "attention.ipynb"))
    _, warnings = read_submitted_notebook(
        Submission("fay", folder, folder / "attention.ipynb"), {"ex3_autograded"},
        {"ex3_autograded"}, {})
    [warning] = warnings
    assert warning.endswith(": " + ", ".join(f"bonus{i:02d}" for i in range(10)) + more)


def test_the_releases_own_cells_keep_their_metadata_graded_answer_and_locked_alike(tmp_path):
    from sdpa_course.grading.submissions import Submission, read_submitted_notebook

    nb = new_notebook()
    for grade_id, meta in (("ex1_answer", {"solution": True}),
                           ("ex1_autograded", {"grade": True, "locked": True, "points": 3}),
                           ("lesson", {"locked": True})):  # a read-only lesson cell
        cell = new_code_cell(f"# {grade_id}")
        cell.metadata["nbgrader"] = {"grade_id": grade_id, **meta}
        nb.cells.append(cell)
    folder = tmp_path / "kim" / "sdpa"
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / "attention.ipynb"))
    read, warnings = read_submitted_notebook(
        Submission("kim", folder, folder / "attention.ipynb"), {"ex1_answer", "ex1_autograded"},
        {"ex1_autograded"}, {"lesson": "# lesson"})
    assert warnings == []
    assert [c.metadata["nbgrader"]["grade_id"] for c in read.cells] == [
        "ex1_answer", "ex1_autograded", "lesson"]


def test_a_notebook_left_with_one_answer_cell_is_still_this_assignments(small_class):
    key = answer_key()
    only = copy.deepcopy(key)
    only.cells = [c for c in key.cells
                  if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1_answer"]
    submit(small_class, "kim", only)
    record = grade_course(small_class, workers=1).records["kim"]
    assert record["status"] == "graded", record["error"]
    assert any("deleted and restored" in w for w in record["warnings"])


def _with_metadata(nb, grade_id: str, **changes):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            cell.metadata["nbgrader"].update(changes)
    return nb


def test_nbgrader_metadata_edited_on_the_releases_cells_is_put_back_as_released(small_class):
    # each of these once made nbgrader refuse the whole notebook (a failed student), or
    # would change what a cell is worth
    key = answer_key()
    edits = {
        "kai": _with_metadata(key, "ex3_attention", points="abc"),
        "lea": _with_metadata(key, "ex3_attention", schema_version=99),
        "max": _with_metadata(key, "ex3_attention", grade=True, points=30),
        "ned": _with_metadata(key, "ex3_autograded", points=50),
        "oli": _with_metadata(key, "ex2_explain", solution=False, locked=True),
    }
    for student, nb in edits.items():
        submit(small_class, student, nb)
    result = grade_course(small_class, workers=1)
    for student in edits:
        record = result.records[student]
        assert record["status"] == "graded", (student, record["error"])
        assert any("put back as released" in w for w in record["warnings"]), student
    with gradebook(small_class) as gb:
        for student in edits:
            assert gb.find_submission("sdpa", student).max_score == 22, student


def _exports(course: Path) -> dict:
    """Every export of a run by student id: grades.csv and scores.csv rows, the class report."""
    report = course / "reports" / "sdpa"
    return {
        "grades": {row["student_id"]: row for row in csv.DictReader(
            (report / "grades.csv").open(encoding="utf-8"))},
        "scores": {row["student"]: row for row in csv.DictReader(
            (report / "scores.csv").open(encoding="utf-8"))},
        "html": (report / "class_report.html").read_text(encoding="utf-8"),
    }


@pytest.mark.skipif(sys.platform != "linux", reason="file names of any bytes: Linux")
def test_a_student_folder_not_named_in_utf8_is_failed_and_everyone_else_graded(
        course_template, tmp_path, capsys):
    course = copy_course(course_template, tmp_path / "course")
    submit(course, "amy", answer_key())
    submit(course, "zed", answer_key())
    bad = os.fsencode(course / "submitted") + b"/bad\xffname"
    os.rename(os.fsencode(course / "submitted" / "zed"), bad)
    assert grade_class(course, as_json=True) == 1
    shown = json.loads(capsys.readouterr().out)["students"]
    escaped = "bad\\xffname"  # the name's stray byte shown, never sent
    assert set(shown) == {"amy", escaped}
    assert shown["amy"]["status"] == "graded"
    assert shown[escaped]["status"] == "failed" and shown[escaped]["score"] is None
    assert "not UTF-8" in shown[escaped]["error"] and escaped in shown[escaped]["error"]
    exports = _exports(course)
    for name in ("grades", "scores"):
        assert set(exports[name]) == {"amy", escaped}, name
        assert exports[name][escaped]["status"] == "failed"
        assert "not UTF-8" in exports[name][escaped]["reason"]
    assert escaped in exports["html"]
    with gradebook(course) as gb:
        assert [s.id for s in gb.students] == ["amy"]  # the gradebook never sees that id
    assert not (course / "autograded" / escaped).exists()
    assert grade_class(course) == 1  # the table: the id escaped; the record resumes
    out = capsys.readouterr().out
    assert escaped in out and "0 graded, 0 failed; 2 already recorded" in out
    os.rename(bad, os.fsencode(course / "submitted" / "zed"))
    again = grade_course(course, workers=1)
    assert again.records["zed"]["status"] == "graded" and again.graded_now == ["zed"]


@pytest.mark.skipif(sys.platform != "linux", reason="file names of any bytes: Linux")
def test_folder_names_escaped_alike_keep_distinct_ids(tmp_path):
    from sdpa_course.grading.submissions import find_submissions

    # a real folder named `a\\xff` and one whose escape is that; two escaped alike
    for name in (b"a\\xff", b"a\xff", b"\\xfe\xff", b"\xfe\\xff"):
        os.makedirs(os.fsencode(tmp_path) + b"/" + name + b"/sdpa")
    found = find_submissions(tmp_path, "sdpa", "attention")
    ids = [s.student for s in found]
    assert len(set(ids)) == 4 and "a\\xff" in ids and "\\xfe\\xff" in ids
    assert sum(1 for s in found if s.misplaced) == 3
    assert all(s.folder.is_dir() for s in found)


def test_files_and_other_assignments_among_the_student_folders_are_passed_over(tmp_path):
    """A plain file in submitted/ (sorted before the students) and a student of other
    assignments only are skipped, and the scan goes on to every student after them
    (`continue` -> `break` lost them all)."""
    from sdpa_course.grading.submissions import find_submissions

    (tmp_path / "0-notes.txt").write_text("not a student")
    (tmp_path / "1-other" / "another-assignment").mkdir(parents=True)
    for student in ("ada", "ben"):
        (tmp_path / student / "sdpa").mkdir(parents=True)
    assert [s.student for s in find_submissions(tmp_path, "sdpa", "attention")] == ["ada",
                                                                                    "ben"]


# -- student folders and files nbgrader would choke on ------------------------------------------

LONG_ID = "a" * 250  # 250 bytes: a folder name, but not with `.json.tmp` after it
LONG_UTF8_ID = "é" * 120  # 240 bytes, 120 characters: within nbgrader's 128


def test_student_ids_too_long_for_a_record_file_are_graded_or_failed_and_resume(
        course_template, tmp_path):
    course = copy_course(course_template, tmp_path / "course")
    for student in (LONG_ID, LONG_UTF8_ID, "good"):
        submit(course, student, answer_key())
    result = grade_course(course, workers=1)
    assert set(result.records) == {LONG_ID, LONG_UTF8_ID, "good"}
    assert result.records["good"]["status"] == "graded"
    assert result.records[LONG_UTF8_ID]["status"] == "graded"
    assert result.records[LONG_UTF8_ID]["score"] == result.records["good"]["score"]
    too_long = result.records[LONG_ID]
    assert too_long["status"] == "failed" and too_long["score"] is None
    assert "250 characters" in too_long["error"] and "at most 128" in too_long["error"]
    names = [p.name for p in (course / "reports" / "sdpa" / "results").iterdir()]
    assert len(names) == 3 and all(len(os.fsencode(name)) <= 255 for name in names)
    report = course / "reports" / "sdpa"
    for export in ("grades.csv", "scores.csv"):
        rows = {row.get("student_id") or row.get("student"): row
                for row in csv.DictReader((report / export).open(encoding="utf-8"))}
        assert set(rows) == set(result.records), export
        assert rows[LONG_ID]["status"] == "failed" and "at most 128" in rows[LONG_ID]["reason"]
    again = grade_course(course, workers=1)  # the records are found again: nothing to do
    assert again.graded_now == [] and again.records == result.records


def _timestamp_as(course: Path, student: str, make) -> None:
    path = course / "submitted" / student / "sdpa" / "timestamp.txt"
    path.unlink()
    make(path)


BAD_TIMESTAMPS = {
    "garbage": "garbage",  # nbgrader: AttributeError, 'CourseDirectory' has no 'fail'
    "huge": "9" * 23,  # OverflowError
    "year0": "0001-01-01 00:00:00 +1400",  # before year 1 once in UTC
    "kmsg": "2026-11-20 09:30:00 /proc/kmsg",  # a "time zone" dateutil would open and read
    "long": TIMESTAMP + " " * 300,
    "empty": "",
}


@pytest.mark.skipif(sys.platform != "linux", reason="FIFOs and /dev/zero")
def test_a_timestamp_nbgrader_cannot_read_is_graded_without_a_time_and_says_so(
        course_template, tmp_path):
    course = copy_course(course_template, tmp_path / "course")
    for student, stamp in BAD_TIMESTAMPS.items():
        submit(course, student, answer_key(), timestamp=stamp)
    for student in ("fifo", "zero", "ok"):
        submit(course, student, answer_key())
    _timestamp_as(course, "fifo", os.mkfifo)  # nbgrader's open() waits for a writer forever
    _timestamp_as(course, "zero", lambda path: path.symlink_to("/dev/zero"))  # reads forever
    result = grade_course(course, workers=1)
    full = result.records["ok"]["score"]
    assert result.records["ok"]["warnings"] == []
    rows = {row["student"]: row for row in csv.DictReader(
        (course / "reports" / "sdpa" / "scores.csv").open(encoding="utf-8"))}
    with gradebook(course) as gb:
        assert gb.find_submission("sdpa", "ok").timestamp is not None
        for student in [*BAD_TIMESTAMPS, "fifo", "zero"]:
            record = result.records[student]
            assert record["status"] == "graded" and record["score"] == full, record
            said = [w for w in record["warnings"] if "graded without a submission time" in w]
            assert len(said) == 1 and "timestamp.txt" in said[0], record["warnings"]
            assert said[0] in rows[student]["reason"]
            assert gb.find_submission("sdpa", student).timestamp is None
            for step in ("autograded", "feedback"):  # nbgrader's "no time": an empty file
                kept = course / step / student / "sdpa" / "timestamp.txt"
                assert kept.is_file() and not kept.is_symlink() and kept.read_text() == ""


def test_a_kmsg_time_zone_never_reaches_dateutils_gettz(tmp_path, monkeypatch):
    import dateutil.tz

    from sdpa_course.grading.submissions import read_timestamp

    asked = []
    real = dateutil.tz.gettz
    monkeypatch.setattr(dateutil.tz, "gettz", lambda name=None: asked.append(name) or real(name))
    for zone in ("/proc/kmsg", "../../../../proc/kmsg", ":/proc/kmsg", "UTC/../../../x"):
        (tmp_path / "timestamp.txt").write_text(f"2026-11-20 09:30:00 {zone}")
        assert read_timestamp(tmp_path)[0] is None
    assert asked == []
    (tmp_path / "timestamp.txt").write_text("2026-11-20 09:30:00 America/New_York")
    assert read_timestamp(tmp_path)[0].hour == 14 and asked == ["America/New_York"]


def test_a_timestamp_or_notebook_that_is_a_link_is_never_read_through(tmp_path):
    from sdpa_course.grading.submissions import read_regular, read_timestamp

    # a link to a file the student could not read (another's submission, the grader's files)
    # holding a good time: nothing is read through it, the time is to check by hand
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "timestamp.txt").write_text(TIMESTAMP)
    (elsewhere / "attention.ipynb").write_text('{"cells": []}')
    student = tmp_path / "student"
    student.mkdir()
    (student / "timestamp.txt").symlink_to(elsewhere / "timestamp.txt")
    (student / "attention.ipynb").symlink_to(elsewhere / "attention.ipynb")
    when, text, warning = read_timestamp(student)
    assert when is None and text == "" and "not a plain file" in warning
    with pytest.raises(OSError):
        read_regular(student / "attention.ipynb", 1000)
    assert read_timestamp(elsewhere)[0] is not None  # the same file, not through a link


def test_a_file_that_grew_past_the_size_limit_while_copied_leaves_nothing(tmp_path,
                                                                         monkeypatch):
    from sdpa_course.grading import submissions

    # measured below the limit, then grown while the kit copied it (here: 64 MiB, sparse):
    # the copy stops reading just past the limit and keeps nothing
    source, target = tmp_path / "data.npy", tmp_path / "out" / "data.npy"
    with source.open("wb") as fh:
        fh.truncate(64 * 2**20)
    read = []
    real_read = os.read
    monkeypatch.setattr(submissions.os, "read", lambda fd, n: read.append(n) or real_read(fd, n))
    assert submissions._copy_regular(source, target, max_bytes=4096) is False
    assert not target.exists() and sum(read) <= 4096 + 2 * submissions._COPY_CHUNK
    source.write_bytes(b"x" * 5000)
    assert submissions._copy_regular(source, target, max_bytes=5000) is True
    assert target.read_bytes() == source.read_bytes()
    # a read allocates what it asks for: a file of megabytes is copied a MiB at a time
    read.clear()
    source.write_bytes(os.urandom(3 * 2**20 + 5))
    assert submissions._copy_regular(source, target, max_bytes=4 * 2**20) is True
    assert target.read_bytes() == source.read_bytes() and max(read) <= 2**20


def test_a_notebook_over_the_size_limit_is_told_apart_by_its_size_and_time_never_read(
        tmp_path, monkeypatch):
    """A resubmission is noticed by the notebook's fingerprint; one over the size limit
    (failed unread) is fingerprinted by its size and modification time, never its bytes."""
    from sdpa_course.grading import submissions

    def never(*args):
        raise AssertionError("a notebook over the size limit was read")

    monkeypatch.setattr(submissions, "read_regular", never)
    fingerprints = set()
    for extra in (1, 2):  # sparse: the same zeros up to the limit, then one byte more or two
        notebook = tmp_path / f"{extra}.ipynb"
        with notebook.open("wb") as fh:
            fh.truncate(submissions.MAX_NOTEBOOK_BYTES + extra)
        said = submissions._fingerprint_bytes(notebook)
        assert said.startswith(b"<large>")
        fingerprints.add(said)
    assert len(fingerprints) == 2


def test_work_where_nbgrader_does_not_look_fails_the_student_saying_what_was_found(
        course_template, tmp_path):
    course = copy_course(course_template, tmp_path / "course")
    submit(course, "good", answer_key())
    submit(course, "amy", answer_key())
    (course / "submitted" / "amy" / "sdpa").rename(course / "submitted" / "amy" / "Sdpa")
    (course / "submitted" / "bo").mkdir(parents=True)
    (course / "submitted" / "bo" / "sdpa").write_text("not a folder")
    submit(course, "cy", answer_key())
    (course / "submitted" / "cy" / "sdpa" / "attention.ipynb").rename(
        course / "submitted" / "cy" / "attention.ipynb")
    (course / "submitted" / "cy" / "sdpa" / "timestamp.txt").unlink()
    (course / "submitted" / "cy" / "sdpa" / "submission_secret.txt").unlink()
    (course / "submitted" / "cy" / "sdpa").rmdir()
    (course / "submitted" / "dan" / "hw2").mkdir(parents=True)  # another assignment's only
    result = grade_course(course, workers=1)
    assert set(result.records) == {"good", "amy", "bo", "cy"}
    assert set(result.failed) == {"amy", "bo", "cy"}
    assert "named Sdpa, not sdpa" in result.records["amy"]["error"]
    assert "submitted/bo/sdpa is not a folder" in result.records["bo"]["error"]
    assert "attention.ipynb is in submitted/cy/ itself" in result.records["cy"]["error"]
    rows = {row["student_id"]: row for row in csv.DictReader(
        (course / "reports" / "sdpa" / "grades.csv").open(encoding="utf-8"))}
    for student in ("amy", "bo", "cy"):
        assert rows[student]["status"] == "failed"
        assert rows[student]["reason"] == result.records[student]["error"]
    # renamed as it should be, amy is graded by the next run
    (course / "submitted" / "amy" / "Sdpa").rename(course / "submitted" / "amy" / "sdpa")
    again = grade_course(course, workers=1)
    assert again.graded_now == ["amy"] and again.records["amy"]["status"] == "graded"


def test_notebooks_beside_the_folder_and_hidden_student_folders_are_failed_not_skipped(
        course_template, tmp_path):
    course = copy_course(course_template, tmp_path / "course")
    submit(course, "good", answer_key())
    (course / "submitted" / "eve").mkdir(parents=True)  # a browser's re-download, no sdpa/
    nbformat.write(answer_key(), str(course / "submitted" / "eve" / "attention (1).ipynb"))
    submit(course, ".hidden", answer_key())  # nbgrader's glob submitted/*/ skips it
    (course / "submitted" / ".git" / "objects").mkdir(parents=True)  # no student at all
    result = grade_course(course, workers=1)
    assert set(result.records) == {"good", "eve", ".hidden"}
    assert set(result.failed) == {"eve", ".hidden"}
    assert "attention (1).ipynb" in result.records["eve"]["error"]
    assert "no submitted/eve/sdpa/ folder" in result.records["eve"]["error"]
    assert "hidden" in result.records[".hidden"]["error"]
    exports = _exports(course)
    for student in ("eve", ".hidden"):
        assert exports["grades"][student]["reason"] == result.records[student]["error"]
        assert exports["scores"][student]["status"] == "failed"
        assert html.escape(result.records[student]["error"]) in exports["html"]
    with gradebook(course) as gb:
        assert sorted(s.id for s in gb.students) == ["good"]


@pytest.mark.skipif(sys.platform != "linux", reason="FIFOs")
def test_a_notebook_that_is_a_folder_or_a_fifo_is_failed_saying_what_it_is(tmp_path):
    from sdpa_course.errors import GradingFailed
    from sdpa_course.grading.submissions import Submission, read_submitted_notebook

    for make, said in ((os.mkdir, "is a folder, not a notebook file"),
                       (os.mkfifo, "is not a regular file")):
        folder = tmp_path / make.__name__ / "sdpa"
        folder.mkdir(parents=True)
        make(folder / "attention.ipynb")
        with pytest.raises(GradingFailed) as err:
            read_submitted_notebook(Submission("kim", folder, folder / "attention.ipynb"),
                                    {"ex1_answer"}, set())
        assert said in str(err.value) and "no attention.ipynb" not in str(err.value)


def test_files_above_nbgraders_max_file_size_are_not_copied_and_reported(small_class):
    from sdpa_course.grading.submissions import copy_regular_files

    with (small_class / "nbgrader_config.py").open("a") as fh:
        fh.write("\nc.CourseDirectory.max_file_size = 2  # KB\n")
    submit(small_class, "kim", answer_key())
    folder = small_class / "submitted" / "kim" / "sdpa"
    (folder / "small.txt").write_bytes(b"x" * 2000)  # at the limit: copied, as nbgrader does
    (folder / "data").mkdir()
    (folder / "data" / "big.bin").write_bytes(b"x" * 2001)
    record = grade_course(small_class, workers=1).records["kim"]
    assert record["status"] == "graded", record["error"]
    autograded = small_class / "autograded" / "kim" / "sdpa"
    assert (autograded / "small.txt").stat().st_size == 2000
    assert not (autograded / "data" / "big.bin").exists()
    said = [w for w in record["warnings"] if "max_file_size" in w]
    assert len(said) == 1 and "data/big.bin" in said[0] and "small.txt" not in said[0]
    assert said[0] in _exports(small_class)["scores"]["kim"]["reason"]
    # a sparse file: a terabyte by its size, nothing on disk, never read
    (tmp := small_class / "sparse").mkdir()
    with (tmp / "huge.bin").open("wb") as fh:
        fh.truncate(2**40)
    skipped = copy_regular_files(tmp, small_class / "out", [], 1000 * 100000)
    assert skipped.too_large == ["huge.bin"] and not (small_class / "out" / "huge.bin").exists()


def _remove_chain(top: Path) -> None:
    """Remove a chain of folders `d/d/d/...` under `top`, one level at a time."""
    while (top / "d" / "d").exists():
        os.rename(top / "d" / "d", top / "d-inner")
        os.rmdir(top / "d")
        os.rename(top / "d-inner", top / "d")
    if (top / "d").exists():
        os.rmdir(top / "d")


def test_a_deep_or_crowded_submission_folder_is_walked_within_bounds(small_class):
    """A tree a thousand folders deep stopped the whole run (RecursionError in nbgrader's
    os.walk); 5,000 files took over a minute (nbgrader globs the folder for every file)."""
    from sdpa_course.grading import submissions
    from sdpa_course.grading.submissions import MAX_WALKED_DEPTH, MAX_WALKED_ENTRIES

    submit(small_class, "deep", answer_key())
    submit(small_class, "crowd", answer_key())
    submit(small_class, "ok", answer_key())
    deep = small_class / "submitted" / "deep" / "sdpa"
    (deep / "kept.txt").write_text("data")
    folder = os.open(deep, os.O_RDONLY)
    try:
        for _ in range(1200):  # by descriptor: the whole path is longer than PATH_MAX allows
            os.mkdir("d", dir_fd=folder)
            inner = os.open("d", os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = inner
    finally:
        os.close(folder)
    crowd = small_class / "submitted" / "crowd" / "sdpa"
    for i in range(3 * MAX_WALKED_ENTRIES):
        (crowd / f"f{i:05d}.txt").touch()
    try:
        records = grade_course(small_class, workers=1).records
    finally:
        _remove_chain(deep)  # shutil.rmtree would recurse as deep as the tree
    assert {"crowd", "deep", "ok"} <= set(records)
    assert {r["status"] for r in records.values()} == {"graded"}
    assert (small_class / "autograded" / "deep" / "sdpa" / "kept.txt").read_text() == "data"
    assert any(f"nested more than {MAX_WALKED_DEPTH} deep" in w
               for w in records["deep"]["warnings"])
    assert any(f"more than {MAX_WALKED_ENTRIES} files and folders" in w
               for w in records["crowd"]["warnings"])
    copied = list((small_class / "autograded" / "crowd" / "sdpa").iterdir())
    assert MAX_WALKED_ENTRIES // 2 < len(copied) <= MAX_WALKED_ENTRIES + 2
    # ignore patterns as nbgrader matches them, a dot-name only by a pattern starting with "."
    assert submissions._ignored("x.pyc", ["*.pyc"])
    assert not submissions._ignored(".x.pyc", ["*.pyc"])
    assert submissions._ignored(".ipynb_checkpoints", [".ipynb_checkpoints"])


@pytest.mark.parametrize("stamp", ["garbage", ""])
def test_a_submission_time_the_kit_cannot_read_is_flagged_in_every_export(
        course_template, tmp_path, capsys, stamp):
    course = copy_course(course_template, tmp_path / "course")
    submit(course, "ok", answer_key())
    submit(course, "odd", answer_key(), timestamp=stamp)
    assert grade_class(course, as_json=True) == 0
    shown = json.loads(capsys.readouterr().out)["students"]
    assert shown["ok"]["check_by_hand"] == []
    check = shown["odd"]["check_by_hand"]
    assert len(check) == 1 and "late penalty not applied: check the time by hand" in check[0]
    assert shown["odd"]["status"] == "graded" and shown["odd"]["score"] == shown["ok"]["score"]
    exports = _exports(course)
    assert exports["grades"]["ok"]["needs_review"] == "no"
    assert exports["grades"]["odd"]["needs_review"] == "yes"
    assert check[0] in exports["grades"]["odd"]["reason"]
    assert check[0] in exports["scores"]["odd"]["reason"]
    assert "Submissions to check by hand: 1" in exports["html"]
    assert html.escape(check[0]) in exports["html"]
    assert grade_class(course) == 0  # the table, from the records
    table = capsys.readouterr().out
    odd = next(line for line in table.splitlines() if line.startswith("odd "))
    assert "CHECK BY HAND" in odd and "late penalty not applied" in odd
    assert "To check by hand (1, see their notes): odd" in table
    out = tmp_path / "export.csv"  # nbgrader export, through the kit's plugin, too
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "export", "--to",
                           str(out)], cwd=course, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = {row["student_id"]: row for row in csv.DictReader(out.open(encoding="utf-8"))}
    assert rows["ok"]["reason"] == "" and check[0] in rows["odd"]["reason"]


def one_line_cells(count: int) -> list:
    """`x7 = 7`...: built as nodes directly (nbformat's new_code_cell validates each)."""
    return [nbformat.NotebookNode(cell_type="code", id=f"x{i}", metadata=nbformat.NotebookNode(),
                                  source=f"x{i} = {i}", outputs=[], execution_count=None)
            for i in range(count)]


@pytest.mark.slow
def test_a_notebook_of_100000_cells_is_graded_in_full_and_warned_of_its_pages_fold_them(
        tmp_path):
    """Issue 25: 100,000 one-line cells (under the size cap) are graded as any submission;
    grade's table, --json, scores.csv and the class report say its pages fold them, and its
    feedback page and autograded notebook (what formgrader renders) stay small."""
    from sdpa_course.nbgrader_ext.cell_budget import OTHER_CELLS_SHOWN

    course = released_course(tmp_path / "course")  # the default deadline: 16 MB to read
    key = answer_key()
    many = copy.deepcopy(key)
    many.cells += one_line_cells(100_000)
    submit(course, "ada", key)
    submit(course, "max", many)
    result = grade_course(course, workers=1)
    ada, big = result.records["ada"], result.records["max"]
    assert big["status"] == "graded" and big["score"] == ada["score"] == 20, big["error"]
    unmarked = sum(1 for c in key.cells if not c.metadata.get("nbgrader", {}).get("grade_id"))
    folded = 100_000 - (OTHER_CELLS_SHOWN - unmarked)
    assert big["folded_cells"]["cells"] == folded and ada["folded_cells"] is None
    table = io.StringIO()
    pipeline._print_summary(result, table)
    rows = {line.split()[0]: line for line in table.getvalue().splitlines() if line}
    assert f"pages fold {folded:,} cells" in rows["max"] and "pages fold" not in rows["ada"]
    assert any("pages fold" in w for w in result.as_json()["students"]["max"]["warnings"])
    report = course / "reports" / "sdpa"
    scores = {r["student"]: r for r in csv.DictReader((report / "scores.csv").open())}
    assert f"pages fold {folded:,} cells" in scores["max"]["reason"]
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", (
        report / "class_report.html").read_text())).split())
    assert "Submissions too long for a page: 1" in page and f"max {folded:,}" in page
    feedback = (course / "feedback" / "max" / "sdpa" / "attention.html").read_bytes()
    assert len(feedback) <= 150_000  # 21.6 MB before
    # the page's own count: at least those the notebook folded (a page over 150 KB is made
    # again with fewer of the student's cells)
    shown = re.search(r"([\d,]+) further cells, [\d,]+ characters, not shown", feedback.decode())
    assert shown and int(shown.group(1).replace(",", "")) >= folded
    autograded = course / "autograded" / "max" / "sdpa" / "attention.ipynb"
    assert autograded.stat().st_size < 500_000  # formgrader reads this: 11.5 MB before
    submitted = nbformat.read(str(course / "submitted" / "max" / "sdpa" / "attention.ipynb"), 4)
    assert len(submitted.cells) == len(many.cells)  # the student's notebook, whole


@pytest.mark.slow
def test_cells_beyond_the_pages_budget_still_run_and_count(tmp_path):
    """The real engine: the softmax an answer calls is defined in a cell the pages fold (after
    300 cells of the student's own); the answer earns its points all the same."""
    course = released_course(tmp_path / "course")
    nb = with_cell_source(answer_key(), "ex2_softmax",
                          "def softmax(z):\n    return my_softmax(z)  # defined above\n")
    helper = new_code_cell(
        "def my_softmax(z):\n"
        "    z = np.asarray(z, dtype=float)  # (..., m)\n"
        "    e = np.exp(z - z.max(axis=-1, keepdims=True))  # (..., m)\n"
        "    return e / e.sum(axis=-1, keepdims=True)  # (..., m)\n")
    at = next(i for i, c in enumerate(nb.cells)
              if c.metadata.get("nbgrader", {}).get("grade_id") == "setup") + 1
    nb.cells[at:at] = [*one_line_cells(300), helper]
    submit(course, "kim", nb)
    result = pipeline.grade_course(course, workers=1)
    kim = result.records["kim"]
    assert kim["status"] == "graded" and kim["score"] == 20, kim
    assert kim["folded_cells"]["cells"] > 0
    page = (course / "feedback" / "kim" / "sdpa" / "attention.html").read_text()
    assert "my_softmax(z)" in page and "def my_softmax" not in page  # answer shown, helper folded


# sdpa_course.grading.submissions on its own (mutants of docs/mutation-score.md, issue 28)

def test_read_regular_reads_one_byte_past_any_limit_odd_or_even(tmp_path):
    """`max_bytes + 1`, not `max_bytes | 1` (the same for the kit's even limits only)."""
    from sdpa_course.grading.submissions import read_regular

    (tmp_path / "f").write_bytes(b"x" * 10)
    assert [len(read_regular(tmp_path / "f", limit)) for limit in (7, 8, 9, 10)] == [8, 9, 10, 10]


def test_a_misnamed_assignment_folder_is_named_as_it_is_spelt_the_first_of_two_in_order(
        tmp_path):
    from sdpa_course.grading.submissions import _misplaced

    (tmp_path / "Sdpa").mkdir()
    assert "the assignment's folder is named Sdpa, not sdpa" in _misplaced(
        tmp_path, "sdpa", "attention")
    (tmp_path / "SDPA").mkdir()  # sorted before Sdpa
    assert "the assignment's folder is named SDPA, not sdpa" in _misplaced(
        tmp_path, "sdpa", "attention")


def test_the_schema_repair_drops_a_breaking_metadata_entry_and_renews_a_breaking_cell_id():
    """`_follow_the_schema`: the entry removed (a `not` added kept it, 20 passes, then the
    notebook failed), the id replaced by one as nbformat makes them, on that very cell."""
    from sdpa_course.grading.submissions import _follow_the_schema

    nb = answer_key()
    nb.metadata["language_info"] = {"name": 5}
    nb.cells[2]["id"] = "not an id!"
    kept = [cell["id"] for cell in nb.cells]
    assert _follow_the_schema(nb) == (["metadata/language_info", "cells/2/id"], "")
    assert "language_info" not in nb.metadata
    assert re.fullmatch("[0-9a-f]{8}", nb.cells[2]["id"])
    assert [cell["id"] for cell in nb.cells] == kept[:2] + [nb.cells[2]["id"]] + kept[3:]


def test_a_notebook_over_the_size_limit_is_failed_saying_its_size_in_mb(tmp_path):
    from sdpa_course.grading.submissions import (
        MAX_NOTEBOOK_BYTES,
        GradingFailed,
        Submission,
        read_submitted_notebook,
    )

    folder = tmp_path / "fay" / "sdpa"
    folder.mkdir(parents=True)
    with (folder / "attention.ipynb").open("wb") as fh:
        fh.truncate(MAX_NOTEBOOK_BYTES + 2 * 2**20 - 1)  # sparse: 21.99... MiB
    with pytest.raises(GradingFailed, match=r"^attention\.ipynb is 21 MB, more than the 20 MB "):
        read_submitted_notebook(Submission("fay", folder, folder / "attention.ipynb"),
                                set(), set())
