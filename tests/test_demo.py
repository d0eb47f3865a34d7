"""`sdpa-course demo` end to end: a throwaway course, a class of typical submissions, graded."""

from __future__ import annotations

import csv

import pytest

from sdpa_course.demo import ANSWER_KEY_STUDENT, BROKEN_STUDENT, demo_cases, run_demo


def test_demo_class_covers_each_misconception_once_and_one_hostile_case():
    chosen = demo_cases()
    kinds = [case.kind for case in chosen]
    assert kinds.count("hostile") == 1
    # each case's codes once (other-variant shows on two exercises of one case)
    codes = [code for case in chosen if case.kind == "mistake"
             for code in {code for codes in case.diagnoses.values() for code in codes}]
    assert len(codes) == len(set(codes)) >= 10


@pytest.mark.slow
def test_demo_grades_the_class_and_says_where_to_look(tmp_path, capsys):
    course = tmp_path / "demo"
    assert run_demo(workdir=course, workers=2) == 0
    out = capsys.readouterr().out
    assert "class report" in out and str(course / "reports" / "sdpa") in out
    rows = {r["student"]: r for r in csv.DictReader((course / "reports/sdpa/scores.csv").open())}
    assert rows[ANSWER_KEY_STUDENT]["score"] == "20"
    assert rows[BROKEN_STUDENT]["status"] == "failed" and rows[BROKEN_STUDENT]["score"] == ""
    graded = [s for s, r in rows.items() if r["status"] == "graded"]
    assert len(graded) == len(demo_cases()) + 1
    for student in graded:
        assert (course / "feedback" / student / "sdpa" / "attention.html").is_file()
    mistakes = [case for case in demo_cases() if case.kind == "mistake"]
    for case in mistakes:  # each diagnosis in its exercise's column
        for exercise, codes in case.diagnoses.items():
            assert set(codes) <= set(rows[case.name][f"{exercise} diagnoses"].split()), case.name
