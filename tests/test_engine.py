"""The grading pipeline end to end: reports, tolerances, broken input and `sdpa-course check`."""

import json
import re
from pathlib import Path

import pytest

from autograder.check import check_path
from autograder.compare import HAND, significant_figures
from autograder.corpus import case
from autograder.engine import grade_content, grade_submission
from autograder.exercises import EXERCISES, EXTRA_CREDIT, MAX_SCORE
from autograder.report import render_text
from autograder.runner import collect

ROOT = Path(__file__).resolve().parents[1]
ANSWER_KEY = ROOT / "solutions" / "sdpa" / "attention.ipynb"


@pytest.fixture(scope="module")
def answer_key_report():
    return grade_submission(ANSWER_KEY)


def with_ex1(scores, weights, output):
    """The lesson-style correct submission with exercise 1 answered by these numbers."""
    source = case("lesson-style").source
    start = source.index("ex1_scores")
    end = source.index("\n", source.index("ex1_output")) + 1
    return (source[:start] + f"ex1_scores = {scores}\nex1_weights = {weights}\n"
            f"ex1_output = {output}\n" + source[end:])


def with_ex2_numbers(**numbers):
    source = case("lesson-style").source
    lines = [line for line in source.splitlines()
             if line.split(" = ")[0] not in numbers]
    return "\n".join(lines + [f"{k} = {v!r}" for k, v in numbers.items()]) + "\n"


# -- the suites' structure -----------------------------------------------------------------

def test_hidden_tests_add_up_to_each_exercises_points():
    totals = {key: 0.0 for key in EXERCISES}
    for test in collect():
        totals[test.exercise] += test.points
    assert totals == {"ex1": 3.0, "ex2": 6.0, "ex3": 11.0, "ex4": 4.0}
    assert MAX_SCORE == 20.0 and EXTRA_CREDIT == 4.0  # exercise 4 is extra credit


def test_report_counts_extra_credit_apart_from_the_score():
    report = grade_content(case("numpy-computed").source, name="s.py")
    assert (report["score"], report["max_score"], report["extra_credit"]) == (20.0, 20.0, 4.0)
    ex4 = report["exercises"]["ex4"]
    assert (ex4["extra_credit"], ex4["attempted"], ex4["max_score"]) == (True, True, 4.0)
    assert all("extra_credit" not in report["exercises"][key] for key in ("ex1", "ex2", "ex3"))
    text = render_text(report)
    assert "4.0 / 4.0  (extra credit)" in text and "plus extra credit" in text


def test_an_optional_exercise_left_alone_costs_nothing_and_says_so():
    report = grade_content(case("ex4-stub-left").source, name="s.py")
    assert (report["score"], report["extra_credit"]) == (20.0, 0.0)
    ex4 = report["exercises"]["ex4"]
    assert (ex4["score"], ex4["attempted"], ex4["diagnoses"]) == (0.0, False, [])
    text = render_text(report)
    assert "not attempted: it is optional, and costs nothing" in text
    assert "NotImplementedError" not in text and "plus extra credit" not in text


def test_three_significant_figures_accepts_the_lessons_rounding_and_cut_numbers():
    cases = [(0.99966, 0.9997), (0.99966, 1.00), (0.99966, 0.999), (0.73106, 0.731),
             (3.3524e-4, 3.35e-4), (0.19661, 0.197), (0.19661, 0.196)]
    for reference, written in cases:
        assert abs(written - reference) <= significant_figures(reference)
    assert abs(0.998 - 0.99966) > significant_figures(0.99966)
    assert abs(3.4e-4 - 3.3524e-4) > significant_figures(3.3524e-4)
    assert abs(3.369e-4 - 3.3524e-4) > significant_figures(3.3524e-4)  # forward difference


def test_three_decimals_accepts_exercise_1_rounded_or_cut():
    for written, exact in ((0.707, 0.70711), (0.670, 0.66976), (0.330, 0.33024),
                           (0.669, 0.66976), (0.6698, 0.66976)):
        assert abs(written - exact) <= HAND
    assert abs(0.668 - 0.66976) > HAND


# -- the answer key and the report ---------------------------------------------------------

def test_answer_key_earns_every_point_with_no_diagnosis(answer_key_report):
    report = answer_key_report
    assert (report["score"], report["max_score"]) == (20.0, 20.0)
    assert report["extra_credit"] == EXTRA_CREDIT == 4.0  # exercise 4 included
    for key, exercise in report["exercises"].items():
        assert exercise["score"] == exercise["max_score"] == EXERCISES[key].max_score
        assert exercise["diagnoses"] == []
        assert all(t["passed"] and t["message"] == "" for t in exercise["tests"])


def test_report_has_the_contract_keys_and_types(answer_key_report):
    report = json.loads(json.dumps(answer_key_report))
    assert report["submission"] == str(ANSWER_KEY)
    assert set(report["exercises"]) == {"ex1", "ex2", "ex3", "ex4"}
    assert isinstance(report["extra_credit"], float)
    for exercise in report["exercises"].values():
        assert set(exercise) >= {"score", "max_score", "diagnoses", "tests"}
        for test in exercise["tests"]:
            assert set(test) >= {"name", "score", "max_score", "passed", "message"}
            assert isinstance(test["score"], float) and isinstance(test["passed"], bool)
        assert exercise["score"] == sum(t["score"] for t in exercise["tests"])


def test_text_table_shows_each_exercise_and_failed_tests():
    report = grade_content(case("ex3-mask-inverted").source, name="s.py")
    text = render_text(report)
    assert "ex3" in text and "7.5 / 11.0" in text and "16.5 / 20.0" in text
    assert "mask-inverted" in text and "attention_weights_with_causal_mask" in text


def test_exercise_1_accepts_three_decimals_and_not_two():
    good = grade_content(with_ex1((0.707, 0), [0.670, 0.330], (0.670, 0.330)), name="a.py")
    assert good["exercises"]["ex1"]["score"] == 3.0
    rough = grade_content(with_ex1((0.71, 0), [0.66, 0.34], (0.66, 0.34)), name="a.py")
    passed = [t["name"] for t in rough["exercises"]["ex1"]["tests"] if t["passed"]]
    assert passed == ["output"]  # w1 v1 + w2 v2 with the student's own weights: carried forward


def test_an_answer_left_as_the_release_placeholder_is_reported_as_not_answered():
    exercise = grade_content(with_ex1("...", "...", "..."), name="a.py")["exercises"]["ex1"]
    assert exercise["score"] == 0 and exercise["diagnoses"] == ["not-answered"]
    assert all("not answered yet: it is still `...`" in test["message"]
               for test in exercise["tests"])


def test_exercise_2_accepts_three_significant_figures():
    good = grade_content(with_ex2_numbers(p_unscaled=1.00, p_scaled=0.731,
                                          grad_unscaled=3.35e-4, grad_scaled=0.197),
                         name="a.py")
    assert good["exercises"]["ex2"]["score"] == 6.0
    off = grade_content(with_ex2_numbers(p_unscaled=0.998, p_scaled=0.73,
                                         grad_unscaled=3.4e-4, grad_scaled=0.2), name="a.py")
    assert off["exercises"]["ex2"]["score"] == 3.0


@pytest.mark.parametrize("name, piece, score", [
    ("ex3-mask-inverted", "ATTENTION_MASK_INVERTED", 7.5),
    # The notebook's own self-check calls attention first: a cache keyed by shape must not
    # carry its answers into the hidden tests or hide the diagnosis.
    ("ex3-stateful", "ATTENTION_STATEFUL", 10.5),
])
def test_a_mistake_grades_the_same_in_a_notebook_as_in_a_py_file(name, piece, score):
    from autograder.corpus import pieces

    notebook = json.loads(ANSWER_KEY.read_text())
    for cell in notebook["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "ex3_attention":
            cell["source"] = getattr(pieces, piece)
    from_notebook = grade_content(notebook, name="mistake.ipynb")["exercises"]["ex3"]
    from_py = grade_content(case(name).source, name="s.py")["exercises"]["ex3"]
    assert (from_notebook["score"], from_notebook["diagnoses"]) == (
        from_py["score"], from_py["diagnoses"]) == (score, list(case(name).diagnoses["ex3"]))


# -- broken submissions --------------------------------------------------------------------

def test_syntax_error_in_one_notebook_cell_costs_only_its_exercise():
    notebook = json.loads(ANSWER_KEY.read_text())
    for cell in notebook["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "ex3_causal_mask":
            cell["source"] = "def causal_mask(T)\n    return None\n"
    report = grade_content(notebook, name="broken.ipynb")
    assert report["exercises"]["ex1"]["score"] == 3.0
    assert report["exercises"]["ex2"]["score"] == 6.0
    assert report["exercises"]["ex3"]["score"] == 9.5
    assert report["exercises"]["ex3"]["diagnoses"] == ["missing-name", "syntax-error"]
    failed = [c for c in report["cells"] if "ex3_causal_mask" in c["cell"]]
    assert failed and failed[0]["status"] == "syntax-error" and "line 1" in failed[0]["error"]
    message = next(t["message"] for t in report["exercises"]["ex3"]["tests"]
                   if not t["passed"])
    assert "causal_mask is not defined" in message and "ex3_causal_mask" in message


def test_syntax_error_in_a_py_file_reports_its_line():
    source = "import numpy as np\n\nex1_scores = (0.707, 0.0\nex1_weights = 1\n"
    report = grade_content(source, name="s.py")
    assert report["score"] == 0.0
    assert "line 3" in report["cells"][0]["error"] or "line 4" in report["cells"][0]["error"]


def test_an_error_in_one_statement_keeps_the_others():
    source = case("lesson-style").source.replace(
        "def causal_mask", "raise RuntimeError('oops')\n\ndef causal_mask")
    report = grade_content(source, name="s.py")
    assert report["score"] == 20.0
    assert report["cells"][0]["status"] == "error"


# -- sdpa-course check ---------------------------------------------------------------------

def test_check_prints_the_table_and_exits_0_whatever_the_score(tmp_path, capsys):
    path = case("ex1-no-scaling").write(tmp_path)
    assert check_path(path) == 0
    out = capsys.readouterr().out
    assert "19.0 / 20.0" in out and "no-scaling" in out


def test_check_json_prints_the_report(tmp_path, capsys):
    path = case("ex2-wrong-key").write(tmp_path)
    assert check_path(path, as_json=True) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["submission"] == str(path)
    assert report["exercises"]["ex2"]["diagnoses"] == ["wrong-key"]


@pytest.mark.parametrize("content, message", [
    ('{"cells": [', "not a valid notebook"),
    ("", "empty"),
    (json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": "x = 1",
      "metadata": {"nbgrader": {"grade_id": "hw9_q1"}}}]}), "another assignment"),
])
def test_check_refuses_input_it_cannot_grade_with_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "attention.ipynb"
    path.write_text(content)
    assert check_path(path) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_check_on_a_missing_file_exits_2(tmp_path, capsys):
    assert check_path(tmp_path / "nope.py") == 2
    assert "no such file" in capsys.readouterr().err


# Exercise 3(c)'s checks that never read the matrix: one counts its calls (True for as many
# calls as there are correct matrices), one answers from the shape alone (False for the broken
# matrices' size, which the student's variant draws).
COUNTING_CHECKS = """
_calls = {"rows": 0, "future": 0}
def rows_sum_to_one(attn):
    _calls["rows"] += 1
    return _calls["rows"] <= CORRECT
def future_is_zero(attn):
    _calls["future"] += 1
    return _calls["future"] <= CORRECT
"""
SHAPE_CHECKS = """
def rows_sum_to_one(attn):
    return len(attn) != BROKEN_SIZE
def future_is_zero(attn):
    return len(attn) != BROKEN_SIZE
"""


@pytest.mark.parametrize("checks", [COUNTING_CHECKS, SHAPE_CHECKS], ids=["counting", "shape"])
@pytest.mark.parametrize("seed", [None, "ab" * 32], ids=["default", "course-seed"])
def test_checks_that_never_read_the_matrix_earn_nothing(checks, seed):
    from autograder.variants import variant_for

    variant = variant_for(seed, "sdpa", "mallory")
    from autograder.suites import test_ex3

    matrices = test_ex3.check_matrices(variant)
    correct, broken_size = len(matrices.correct), matrices.plan.base
    checks = checks.replace("CORRECT", str(correct)).replace("BROKEN_SIZE", str(broken_size))
    source = case("lesson-style", variant).source + checks
    tests = grade_content(source, name="s.py", variant=variant)["exercises"]["ex3"]["tests"]
    verdicts = {t["name"]: t["passed"] for t in tests if "_passes_" in t["name"]}
    assert verdicts == {"rows_sum_to_one_passes_attention_and_fails_broken_rows": False,
                        "future_is_zero_passes_causal_attention_and_fails_any_leak": False}


def test_the_report_has_the_contracts_keys_and_those_the_readme_lists_beyond_them(
        answer_key_report):
    contract = {"submission", "score", "max_score", "exercises", "extra_credit", "variant"}
    readme = (ROOT / "README.md").read_text()
    beyond = readme.split("Beyond the contract's keys, the report has", 1)[1].split(". The", 1)[0]
    listed = set(re.findall(r"(?:^|,|\band)\s+`([a-z_]+)`", beyond))
    assert {"cells", "missing_modules"} <= listed  # the paragraph was read
    assert set(answer_key_report) == contract | listed
