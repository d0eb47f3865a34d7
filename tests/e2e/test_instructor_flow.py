"""An instructor in formgrader after `sdpa-course grade`: the class as the kit recorded it,
a hand-graded answer scored through the UI, and `nbgrader export` carrying that score.

The course (see class_course) has two students graded by the kit: `ada` (the answer key) and
`ben` (a typical Exercise 3 mistake). One test, in named steps with a screenshot each.
"""

from __future__ import annotations

import csv
import io

import nbformat
import pytest
from class_course import ASSIGNMENT, NOTEBOOK, run_tool
from formgrader_ui import go_to, open_formgrader, row
from playwright_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GRADED_BY_HAND = "ex2_explain"
HAND_SCORE = 1.5  # of 2: a good answer without every number of the mark scheme
STUDENT_GRADED_BY_HAND = "ada"



def points(value: float) -> str:
    """A score as formgrader writes it: 20 / 22, 14.5 / 22."""
    return f"{value:g}"


def in_gradebook(record) -> float:
    """The kit's score as nbgrader shows it: with exercise 4's extra credit added on top."""
    return record["score"] + (record.get("extra_credit") or 0.0)


def hand_graded_points(release) -> float:
    """Points of the cells nbgrader leaves for hand grading (graded, and not code)."""
    return sum(c.metadata["nbgrader"]["points"] for c in release.cells
               if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "markdown")


def test_an_instructor_sees_the_kit_grades_in_formgrader_and_a_hand_score_reaches_the_export(
        page, lab, graded_course, steps):
    students = graded_course.grades["students"]
    assert sorted(students) == ["ada", "ben"]
    assert all(record["status"] == "graded" for record in students.values()), students
    release = nbformat.read(str(graded_course.release), as_version=4)
    by_hand = hand_graded_points(release)
    assert by_hand == 2

    with steps.step("open formgrader from JupyterLab's Nbgrader menu"):
        frame = open_formgrader(page, lab)
        assignment = row(frame, "td.name a", ASSIGNMENT)
        assignment.scroll_into_view_if_needed()
        expect(assignment.locator("td.num-submissions")).to_have_text(str(len(students)))

    with steps.step("Manage Students lists the class with the kit's scores"):
        go_to(frame, "Manage Students")
        frame.locator("#main-table").scroll_into_view_if_needed()
        for student, record in students.items():
            expect(row(frame, "td.id", student).locator("td.score")).to_have_text(
                f"{points(in_gradebook(record))} / {points(record['max_score'] + by_hand)}")

    with steps.step("Manual Grading lists every submission's code score, hand grading pending"):
        go_to(frame, "Manual Grading")
        go_to(frame, ASSIGNMENT)
        go_to(frame, NOTEBOOK)
        frame.locator("#main-table").scroll_into_view_if_needed()
        for student, record in students.items():
            submission = row(frame, "a.name-shown", student)
            expect(submission.locator("td.code-score")).to_have_text(
                f"{points(in_gradebook(record))} / {points(record['max_score'])}")
            expect(submission.locator("td.written-score")).to_have_text(f"0 / {points(by_hand)}")
            expect(submission.locator("td.needs-manual-grade .glyphicon-ok")).to_have_count(1)

    with steps.step(f"open {STUDENT_GRADED_BY_HAND}'s submission for grading"):
        row(frame, "a.name-shown", STUDENT_GRADED_BY_HAND).locator("a.name-hidden").click()
        score_box = frame.locator(f"input.score#{GRADED_BY_HAND}")
        expect(score_box).to_be_visible()
        expect(score_box).to_have_class(r"score tabbable needs_manual_grade")
        score_box.scroll_into_view_if_needed()

    with steps.step(f"give {GRADED_BY_HAND} {points(HAND_SCORE)} points"):
        with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url
                                  and r.request.method == "PUT") as saved:
            score_box.fill(str(HAND_SCORE))
            score_box.press("Tab")  # formgrader saves a score when the box loses focus
        assert saved.value.ok, f"formgrader did not save the score: HTTP {saved.value.status}"
        expect(score_box).not_to_have_class("needs_manual_grade")

    hand_graded = students[STUDENT_GRADED_BY_HAND]
    total = in_gradebook(hand_graded) + HAND_SCORE
    with steps.step("the submission list shows the hand score, nothing left to grade"):
        go_to(frame, NOTEBOOK)  # the page's breadcrumb back to the notebook's submissions
        frame.locator("#main-table").scroll_into_view_if_needed()
        submission = row(frame, "a.name-shown", STUDENT_GRADED_BY_HAND)
        expect(submission.locator("td.written-score")).to_have_text(
            f"{points(HAND_SCORE)} / {points(by_hand)}")
        expect(submission.locator("td.score")).to_have_text(
            f"{points(total)} / {points(hand_graded['max_score'] + by_hand)}")
        expect(submission.locator("td.needs-manual-grade .glyphicon-ok")).to_have_count(0)

    with steps.step("Manage Students shows the new total"):
        go_to(frame, "Manage Students")
        frame.locator("#main-table").scroll_into_view_if_needed()
        expect(row(frame, "td.id", STUDENT_GRADED_BY_HAND).locator("td.score")).to_have_text(
            f"{points(total)} / {points(hand_graded['max_score'] + by_hand)}")

    with steps.step("nbgrader export includes the hand score"):
        run_tool(["nbgrader", "export"], cwd=graded_course.root)
        exported = {r["student_id"]: r for r in csv.DictReader(
            io.StringIO((graded_course.root / "grades.csv").read_text()))}
        assert set(exported) == set(students)
        assert float(exported[STUDENT_GRADED_BY_HAND]["score"]) == pytest.approx(total)
        for student, record in students.items():
            assert exported[student]["assignment"] == ASSIGNMENT
            assert float(exported[student]["max_score"]) == record["max_score"] + by_hand
            if student != STUDENT_GRADED_BY_HAND:
                assert float(exported[student]["score"]) == pytest.approx(in_gradebook(record))
