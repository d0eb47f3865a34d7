"""The instructor's loop after `sdpa-course grade`: hand marks in the gradebook reach the
feedback on a plain rerun (or `sdpa-course feedback`), every export lists every student, and
nothing a student controls reaches a spreadsheet as a formula, a terminal as an escape code,
or the grader's files through a symbolic link.

The fake engine (tests/fake_engine.py) scores; nbgrader's gradebook is written as formgrader
writes it (a Grade's manual_score, a Comment's manual_comment).
"""

from __future__ import annotations

import csv
import html
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import fake_engine
import nbformat
import pytest
from grade_course_factory import answer_key, released_course, submit, with_code
from nbgrader.api import Gradebook

import sdpa_course.grading.grade as pipeline

HOSTILE_ID = "=SUM(1;2)@x"  # a folder name: no "/"
ESCAPE_ID = "eve\x1b[2J\x1b[1;1Hzed"
SHOWN_ESCAPE_ID = "eve\\x1b[2J\\x1b[1;1Hzed"  # as the CSV files write it: no escape sequence
BIN = Path(sys.executable).parent


def grade(course: Path, **kwargs):
    return pipeline.grade_course(course, engine=fake_engine.grade_submission, workers=2,
                                 **kwargs)


def page_text(course: Path, student: str) -> str:
    raw = (course / "feedback" / student / "sdpa" / "attention.html").read_text()
    body = re.sub(r"<(style|script)\b.*?</\1>", " ", raw, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def mark_by_hand(course: Path, student: str, score: float, comment: str) -> None:
    """What formgrader does when a TA marks ex2_explain and writes a comment."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grade = gb.find_grade("ex2_explain", "attention", "sdpa", student)
        grade.manual_score = score
        found = gb.find_comment("ex2_explain", "attention", "sdpa", student)
        found.manual_comment = comment
        gb.db.commit()


def rows(path: Path) -> dict[str, dict]:
    return {row.get("student_id") or row.get("student"): row
            for row in csv.DictReader(path.open(encoding="utf-8"))}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = released_course(tmp_path_factory.mktemp("loop") / "course")
    submit(course, "ada", answer_key())
    submit(course, "ben", with_code(answer_key(), "# FAKE:ex3=4.5"))
    submit(course, "cy", text="{ not json")
    submit(course, HOSTILE_ID, answer_key())
    submit(course, ESCAPE_ID, answer_key())
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_student("dee")  # on the roll, never submitted
    grade(course)
    return course


def test_an_unmarked_written_answer_is_pending_not_zero(course):
    text = page_text(course, "ada")
    assert "ex2_explain (written answer) pending / 2" in text
    assert not re.search(r"(?<![\d.])0 / 2(?![\d.])", text)


def test_a_plain_rerun_refreshes_exactly_the_feedback_whose_hand_marks_changed(course):
    mark_by_hand(course, "ada", 1.5, "Good: you linked *saturation* to the gradient.")
    before = (course / "feedback" / "ben" / "sdpa" / "attention.html").stat().st_mtime_ns
    result = grade(course)
    assert result.refreshed == ["ada"] and result.graded_now == []
    text = page_text(course, "ada")
    assert "ex2_explain (written answer) 1.5 / 2 marked by hand" in text
    assert "Good: you linked saturation to the gradient." in text
    assert "Total so far: 21.5 / 22" in text
    assert (course / "feedback" / "ben" / "sdpa" / "attention.html").stat().st_mtime_ns == before
    assert grade(course).refreshed == []  # nothing changed since


def test_feedback_command_regenerates_after_hand_grading(course):
    mark_by_hand(course, "ben", 2.0, "Complete.")
    done = subprocess.run([str(BIN / "sdpa-course"), "feedback", "--course-dir", str(course)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert "Feedback regenerated for 1 students: ben" in done.stdout
    assert "ex2_explain (written answer) 2 / 2" in page_text(course, "ben")


def test_the_lms_export_has_every_student_with_hand_points_and_totals(course):
    mark_by_hand(course, "ada", 1.5, "Good.")
    grade(course)
    got = rows(course / "reports" / "sdpa" / "grades.csv")
    assert set(got) == {"ada", "ben", "cy", "dee", "'" + HOSTILE_ID, SHOWN_ESCAPE_ID}
    assert (got["ada"]["status"], got["ada"]["auto_score"], got["ada"]["hand_score"],
            got["ada"]["total"], got["ada"]["max_total"]) == ("graded", "20", "1.5", "21.5", "22")
    assert got["cy"]["status"] == "failed" and got["cy"]["total"] == ""
    assert "line 1, column 3" in got["cy"]["reason"]
    assert got["dee"]["status"] == "missing" and got["dee"]["total"] == ""
    scores = rows(course / "reports" / "sdpa" / "scores.csv")
    assert scores["ada"]["ex2_explain"] == "1.5" and scores["ben"]["ex3 diagnoses"] == \
        "mask-inverted"


def test_nbgrader_export_lists_failed_and_missing_students_without_a_zero(course):
    done = subprocess.run([str(BIN / "nbgrader"), "export"], cwd=course, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    got = rows(course / "grades.csv")
    assert set(got) == {"ada", "ben", "cy", "dee", "'" + HOSTILE_ID, SHOWN_ESCAPE_ID}
    assert got["cy"]["score"] == "" and got["cy"]["status"] == "failed"
    assert "JSON breaks at line 1" in got["cy"]["reason"]
    assert got["dee"]["score"] == "" and got["dee"]["status"] == "missing"
    assert float(got["ada"]["score"]) == 21.5 and got["ada"]["status"] == "graded"


@pytest.mark.parametrize("name", ["scores.csv", "diagnoses.csv", "grades.csv"])
def test_no_csv_cell_starts_a_formula_or_holds_a_control_character(course, name):
    for row in csv.reader((course / "reports" / "sdpa" / name).open(encoding="utf-8")):
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (name, cell)
            assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in cell), (name, cell)


def test_the_summary_escapes_student_controlled_text(tmp_path):
    course = released_course(tmp_path / "course")
    submit(course, ESCAPE_ID, answer_key())
    out = io.StringIO()
    result = grade(course)
    pipeline._print_summary(result, out)
    printed = out.getvalue()
    assert "\x1b" not in printed and "eve\\x1b[2J\\x1b[1;1Hzed" in printed
    assert "This run: 1 graded, 0 failed; 0 already recorded." in printed


def test_a_symlink_in_a_submission_is_never_followed(tmp_path):
    course = released_course(tmp_path / "course")
    secret = tmp_path / "secret.txt"
    secret.write_text("the grader's secret")
    folder = submit(course, "mal", answer_key()).parent
    os.symlink(secret, folder / "notes.txt")
    os.symlink(course / "gradebook.db", folder / "gradebook-copy.db")
    linked = submit(course, "lin", answer_key()).parent
    (linked / "attention.ipynb").unlink()
    os.symlink(folder / "attention.ipynb", linked / "attention.ipynb")
    result = grade(course)
    assert result.records["mal"]["status"] == "graded"
    for step in ("autograded", "feedback"):
        kept = course / step / "mal" / "sdpa"
        assert not (kept / "notes.txt").exists() and not (kept / "gradebook-copy.db").exists()
        assert not any(p.is_symlink() for p in kept.rglob("*"))
    assert any("not copied" in w for w in result.records["mal"]["warnings"])
    assert result.records["lin"]["status"] == "failed"
    assert "symbolic link" in result.records["lin"]["error"]


def test_a_written_answer_left_unanswered_is_pending_and_flagged_for_marking(tmp_path):
    import nbformat

    course = released_course(tmp_path / "course")
    release = nbformat.read(str(course / "release" / "sdpa" / "attention.ipynb"), as_version=4)
    submit(course, "blank", release)
    grade(course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        found = gb.find_grade("ex2_explain", "attention", "sdpa", "blank")
        assert found.auto_score is None and found.needs_manual_grade  # formgrader flags it
    assert "ex2_explain (written answer) pending / 2" in page_text(course, "blank")


# nbgrader's own add_submission warns so under SQLAlchemy 2 (as `nbgrader autograde` does)
@pytest.mark.filterwarnings("ignore:Object of type .* not in session")
def test_marking_a_written_answer_pending_touches_this_assignment_alone(tmp_path):
    """The same student's written answer in another assignment of the gradebook, with a
    notebook of the same name and an automatic score, is that assignment's: left as it is."""
    import nbformat

    course = released_course(tmp_path / "course")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_student("blank")
        gb.update_or_create_assignment("older")
        gb.update_or_create_notebook("attention", "older")
        gb.update_or_create_grade_cell("ex2_explain", "attention", "older", max_score=2,
                                       cell_type="markdown")
        gb.add_submission("older", "blank")
        older = gb.find_grade("ex2_explain", "attention", "older", "blank")
        older.auto_score, older.needs_manual_grade = 0.0, False
        gb.db.commit()
    release = nbformat.read(str(course / "release" / "sdpa" / "attention.ipynb"), as_version=4)
    submit(course, "blank", release)
    grade(course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        ours = gb.find_grade("ex2_explain", "attention", "sdpa", "blank")
        assert ours.auto_score is None and ours.needs_manual_grade
        older = gb.find_grade("ex2_explain", "attention", "older", "blank")
        assert older.auto_score == 0.0 and not older.needs_manual_grade


def test_a_second_run_on_the_same_course_stops_before_writing_anything(tmp_path):
    """Two runs at once both wrote the gradebook: one died with SQLAlchemy tracebacks, the
    other recorded a student as failed."""
    from sdpa_course.course.directory import Course
    from sdpa_course.errors import KitError
    from sdpa_course.grading.grade import feedback_class
    from sdpa_course.grading.run_lock import course_run_lock

    course = released_course(tmp_path / "course")
    submit(course, "ada", answer_key())
    with course_run_lock(Course.open(course).reports_dir, "the first run"):
        with pytest.raises(KitError, match=f"running on this course \\(process {os.getpid()}\\)"):
            grade(course)
        with pytest.raises(KitError, match="`sdpa-course feedback` waits for nothing"):
            feedback_class(course)
    assert not (course / "autograded").exists() and not (course / "feedback").exists()
    assert grade(course).records["ada"]["status"] == "graded"  # once the first run is over


def test_totals_read_right_and_no_marker_comment_shows_before_a_marker_writes_one(tmp_path):
    """Issue 26: "20 / 22, plus 2.5 extra credit" on the page, never "22.5 / 22"; grade's
    table has the extra credit in a column of its own; the exports' totals stay the sum; a
    written answer left as released shows no "Marker's comment" (nbgrader's own "No
    response.") until a marker writes one."""
    course = released_course(tmp_path / "course")
    release = course / "release" / "sdpa" / "attention.ipynb"
    submit(course, "bo", nbformat.read(str(release), as_version=4))  # the blank release
    submit(course, "jo", with_code(answer_key(), "# FAKE:ex4=2.5"))
    result = grade(course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:  # nbgrader's own words
        assert gb.find_comment("ex2_explain", "attention", "sdpa", "bo").comment == \
            "No response."
    assert "Marker's comment" not in page_text(course, "bo")
    jo = page_text(course, "jo")
    assert "Total so far: 20 / 22, plus 2.5 extra credit" in jo and "22.5 / 22" not in jo
    assert "Marker's comment" not in jo
    table = io.StringIO()
    pipeline._print_summary(result, table)
    lines = table.getvalue().splitlines()
    assert lines[0].split()[:4] == ["student", "status", "score", "extra"]
    shown = {line.split()[0]: line.split() for line in lines[1:] if line.strip()}
    assert shown["jo"][1:6] == ["graded", "20", "/", "20", "+2.5"]
    assert shown["bo"][5] != "+0"

    mark_by_hand(course, "jo", 2.0, "Clear.")
    mark_by_hand(course, "bo", 0.0, "Nothing written yet.")
    grade(course)
    jo, bo = page_text(course, "jo"), page_text(course, "bo")
    assert "Total so far: 22 / 22, plus 2.5 extra credit" in jo and "Marker's comment: Clear." in jo
    assert "Marker's comment: Nothing written yet." in bo
    lms = rows(course / "reports" / "sdpa" / "grades.csv")  # the exports' sums, as before
    assert (lms["jo"]["total"], lms["jo"]["extra_credit"], lms["jo"]["max_total"]) == (
        "24.5", "2.5", "22")
