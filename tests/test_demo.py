"""`sdpa-course demo` end to end, as the installed command: a throwaway course, a class of
typical submissions, graded; each printed score is the one the corpus expects."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from grade_course_factory import variant_of

from autograder.corpus import case as corpus_case
from autograder.exercises import MAX_SCORE
from sdpa_course.demo import ANSWER_KEY_STUDENT, BROKEN_STUDENT, demo_cases

BIN = Path(sys.executable).parent


def test_demo_class_covers_each_misconception_once_and_one_hostile_case():
    chosen = demo_cases()
    kinds = [case.kind for case in chosen]
    assert kinds.count("hostile") == 1
    # each case's codes once (other-variant shows on two exercises of one case)
    codes = [code for case in chosen if case.kind == "mistake"
             for code in {code for codes in case.diagnoses.values() for code in codes}]
    assert len(codes) == len(set(codes)) >= 10


def _printed_table(out: str) -> dict[str, tuple[str, str, str]]:
    """The demo's table of results: student -> (score, expected, diagnoses or reason)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("submission"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        student, score, expected, notes = line.split(maxsplit=3)
        rows[student] = (score, expected, notes)
    return rows


@pytest.mark.slow
def test_demo_command_grades_the_class_as_expected_and_says_where_to_look(tmp_path):
    course = tmp_path / "demo"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(BIN / "sdpa-course"), "demo", "--dir", str(course),
                           "--workers", "2"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "class report" in out and str(course / "reports" / "sdpa") in out

    # the printed table: every score is the one its row expects, and that expectation is
    # the corpus's own (the answer key: every point; the broken notebook: failed)
    table = _printed_table(out)
    # each student's case as written with their own numbers (the demo's course has a seed)
    cases = {case.name: corpus_case(case.name, variant_of(course, case.name))
             for case in demo_cases()}
    assert set(table) == {ANSWER_KEY_STUDENT, BROKEN_STUDENT, *cases}
    for student, (score, expected, notes) in table.items():
        if student == BROKEN_STUDENT:
            assert (score, expected) == ("FAILED", "failed"), table[student]
            continue
        want = MAX_SCORE if student == ANSWER_KEY_STUDENT else cases[student].expected_score
        assert expected == f"{want:g}", (student, table[student])
        assert score == f"{want:g}/{MAX_SCORE:g}", (student, table[student])
        codes = sorted({code for codes in cases[student].diagnoses.values() for code in codes}
                       ) if student in cases else []
        assert notes == (", ".join(codes) or "-"), (student, notes)

    rows = {r["student"]: r for r in csv.DictReader((course / "reports/sdpa/scores.csv").open())}
    assert set(rows) == set(table)
    assert rows[ANSWER_KEY_STUDENT]["score"] == f"{MAX_SCORE:g}"
    assert rows[BROKEN_STUDENT]["status"] == "failed" and rows[BROKEN_STUDENT]["score"] == ""
    for name, case in cases.items():
        assert float(rows[name]["score"]) == case.expected_score, name
    for student, row in rows.items():
        page = course / "feedback" / student / "sdpa" / "attention.html"
        assert page.is_file() == (row["status"] == "graded"), student
    graded = [s for s, r in rows.items() if r["status"] == "graded"]
    assert len(graded) == len(demo_cases()) + 1
    for student in graded:
        assert (course / "feedback" / student / "sdpa" / "attention.html").is_file()
    mistakes = [case for case in cases.values() if case.kind == "mistake"]
    for case in mistakes:  # each diagnosis in its exercise's column
        for exercise, codes in case.diagnoses.items():
            assert set(codes) <= set(rows[case.name][f"{exercise} diagnoses"].split()), case.name
