"""Student-controlled text in a terminal, a spreadsheet and the class report: nothing a
terminal acts on is sent, nothing invisible reorders or hides what is shown, no cell starts a
formula."""

from __future__ import annotations

import csv

import pytest

from sdpa_course.reports import class_report
from sdpa_course.reports.safe_text import for_spreadsheet, for_terminal, id_for_terminal

UNSEEN = {
    "\x1b[2J": "\\x1b[2J",  # a terminal's escape sequence
    "a\rb\nc\td": "a\\rb\\nc\\td",
    "\x7f\x9b": "\\x7f\\x9b",  # DEL and the 8-bit CSI
    "abc\u202edef": "abc\\u202edef",  # right-to-left override
    "\u2067x\u2069": "\\u2067x\\u2069",  # an isolate
    "a\u200eb\u200fc\u061cd": "a\\u200eb\\u200fc\\u061cd",  # bidirectional marks
    "zero\u200bwidth\u200d": "zero\\u200bwidth\\u200d",
    "\ufeffbom": "\\ufeffbom",
    "line\u2028para\u2029": "line\\u2028para\\u2029",
    "surrogate\udcff": "surrogate\\udcff",  # a folder name that was not UTF-8
}


@pytest.mark.parametrize("text, shown", UNSEEN.items())
def test_control_and_invisible_characters_are_shown_as_escapes(text, shown):
    assert for_terminal(text) == shown


@pytest.mark.parametrize("text", ["jdoe", "Zoë Ångström", "学生", "a b", "é\u0301", "√d_k →"])
def test_visible_text_is_kept_as_it_is(text):
    assert for_terminal(text) == text


def test_ids_with_blanks_at_either_end_are_quoted_so_that_two_rows_differ():
    assert id_for_terminal("jdoe") == "jdoe"
    assert id_for_terminal("jdoe ") == '"jdoe "'
    assert id_for_terminal("\u00a0jdoe") == '"\u00a0jdoe"'
    assert id_for_terminal("") == '""'


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", " =1+1",
                                  "\u00a0=1+1", "  @x"])
def test_a_cell_that_would_start_a_formula_is_kept_as_text(text):
    assert for_spreadsheet(text).startswith("'")


@pytest.mark.parametrize("text, cell", [("\ufeff=1+1", "\\ufeff=1+1"), ("jdoe", "jdoe"),
                                        ("a=1", "a=1"), (None, ""),
                                        ("\t=1", "\\t=1")])
def test_other_cells_are_only_escaped(text, cell):
    assert for_spreadsheet(text) == cell


def test_a_long_hostile_text_is_one_pass():
    text = "\u202e\x1b" * 500_000  # a million characters: linear, so well under a second
    assert for_terminal(text) == "\\u202e\\x1b" * 500_000


def test_the_class_report_shows_an_ids_override_instead_of_obeying_it(tmp_path):
    student = "eve\u202eevil"
    record = {"student": student, "status": "graded", "score": 3, "max_score": 3,
              "exercises": {"ex1": {"score": 0, "max_score": 3, "diagnoses": ["no-scaling"],
                                    "tests": []}}}
    paths = class_report.write_class_report({student: record}, tmp_path, "sdpa")
    page = paths["class report"].read_text(encoding="utf-8")
    assert "\u202e" not in page and "eve\\u202eevil" in page
    rows = list(csv.reader(paths["scores (CSV)"].open(encoding="utf-8")))
    assert rows[1][0] == "eve\\u202eevil"
