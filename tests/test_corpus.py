"""Every submission of the corpus gets exactly its expected score, diagnoses and failed tests,
messages that agree with its diagnoses, and self-checks in the notebook that agree with the
grader.

All sandboxes share the sandbox's default pool (one zygote for the session). The time limits
are shortened so that the endless loops of the hostile cases cost about a second each.
"""

import contextlib
import io
import re
from pathlib import Path

import nbformat
import pytest

from autograder.corpus import cases
from autograder.diagnoses import CODES
from autograder.diagnoses.explanations import EXPLAINS, explained_by
from autograder.engine import grade_content
from autograder.sandbox import Limits
from sdpa_course.course.notebooks import source_notebook_path
from tests.corpus_exec import run_case

QUICK = Limits(cell_seconds=2.0, call_seconds=1.0)
CASES = {case.name: case for case in cases()}
SUITES = Path(__file__).resolve().parents[1] / "autograder" / "suites"
HIDDEN_LINES = {line.strip() for path in SUITES.glob("test_ex*.py")
                for line in path.read_text().splitlines() if len(line.strip()) > 24}


@pytest.fixture(scope="module")
def reports():
    """Each case graded once, on demand, shared by the tests of this module."""
    graded = {}

    def report(name):
        if name not in graded:
            case = CASES[name]
            graded[name] = grade_content(case.source, name=f"{name}.py", limits=QUICK)
        return graded[name]

    return report


@pytest.mark.parametrize("name", list(CASES))
def test_case_gets_its_expected_score_and_diagnoses(reports, name):
    case, report = CASES[name], reports(name)
    got = {ex: (r["score"], r["diagnoses"]) for ex, r in report["exercises"].items()}
    expected = {ex: (case.scores[ex], case.expected_diagnoses[ex]) for ex in case.scores}
    assert got == expected, _failures(report)
    assert report["score"] == case.expected_score
    assert "kit_errors" not in report


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.fails is not None])
def test_case_fails_exactly_the_tests_its_mistake_breaks(reports, name):
    case, report = CASES[name], reports(name)
    failed = {ex: {t["name"] for t in r["tests"] if not t["passed"]}
              for ex, r in report["exercises"].items()}
    assert failed == case.expected_failures


# Codes that say how the code failed rather than what it computed: their tests' messages
# are the failure itself (the error, the missing name), not a misconception's explanation.
OUTCOMES = {"crashed", "missing-name", "syntax-error", "timeout", "memory-limit",
            "forbidden-import", "unsupported-type", "missing-module"}


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.kind == "mistake"])
def test_every_failure_of_a_mistake_is_explained_by_its_diagnosis(reports, name):
    """No failed test is left to a generic hint that might contradict the diagnosis."""
    for ex, result in reports(name)["exercises"].items():
        codes = result["diagnoses"]
        for test in result["tests"]:
            if test["passed"] or set(codes) & OUTCOMES:
                continue
            explaining = explained_by(ex, test["name"], codes)
            assert explaining, f"{ex}/{test['name']} failed, unexplained by {codes}"
            for code in explaining:
                assert EXPLAINS[(ex, code)][1] in test["message"], test["message"]


@pytest.mark.parametrize("name", list(CASES))
def test_messages_never_show_hidden_code_or_reference_values(reports, name):
    for exercise in reports(name)["exercises"].values():
        for test in exercise["tests"]:
            message = test["message"]
            assert not re.search(r"\d\.\d", message), message  # no computed values
            assert not any(line in message for line in HIDDEN_LINES), message
            assert "Traceback" not in message
            assert test["passed"] == (message == "")


def test_corpus_covers_every_diagnosis_code():
    shown = {code for case in CASES.values() for codes in case.diagnoses.values()
             for code in codes}
    assert shown == set(CODES)


def test_every_explanation_belongs_to_a_known_code_and_test():
    from autograder.runner import collect

    tests = {(t.exercise, t.name) for t in collect()}
    for (ex, code), (names, _) in EXPLAINS.items():
        assert code in CODES
        assert {(ex, name) for name in names} <= tests, (ex, code)


def test_corpus_has_correct_submissions_in_several_styles():
    correct = [case for case in CASES.values() if case.kind == "correct"]
    assert len(correct) >= 3
    assert all(case.expected_score == 20 and not any(case.diagnoses.values())
               for case in correct)


def test_huge_output_is_truncated_in_the_report(reports):
    assert 0 < len(reports("huge-output")["output"]) <= 8192


def _failures(report) -> str:
    return "\n".join(f"{ex}/{t['name']}: {t['message']}"
                     for ex, r in report["exercises"].items()
                     for t in r["tests"] if not t["passed"])


def test_refused_imports_are_noted_for_the_instructor(reports):
    assert any("sdpa_ref" in note for note in reports("import-reference")["warnings"])
    assert not any("import" in note for note in reports("lesson-style")["warnings"])


# -- the notebook's self-checks agree with the grader ------------------------------------------

SELF_CHECKS = {"ex1": ("ex1_selfcheck",),
               "ex2": ("ex2_selfcheck_softmax", "ex2_selfcheck_numbers"),
               "ex3": ("ex3_selfcheck_attention", "ex3_selfcheck_causal_mask")}
CLEAN = "these quick checks pass"
# (exercise, code) -> what the exercise's self-checks say about it (any of the phrases). A
# code missing here is beyond what the self-checks look at; a misconception's phrase must
# not appear where the grader did not diagnose it.
SELF_CHECK_SAYS = {
    ("ex1", "no-scaling"): ("divide it by sqrt(d_k)",),
    ("ex1", "wrong-scale"): ("scaled by the wrong factor",),
    ("ex1", "not-normalized"): ("softmax weights always sum to 1",),
    ("ex2", "unstable-softmax"): ("exp overflowed",),
    ("ex2", "softmax-axis"): ("instead of each row",),
    ("ex2", "not-normalized"): ("divide by the sum of the exponentials",),
    ("ex2", "wrong-key"): ("the smaller key's weight",),
    ("ex2", "no-scaling"): ("divide the scores by sqrt(64)",),
    ("ex2", "wrong-scale"): ("divided by d_k = 64",),
    ("ex2", "wrong-gradient"): ("does not match a finite-difference estimate", "cannot be right"),
    ("ex2", "raw-score-gradient"): ("derivative with respect to the raw score",),
    ("ex2", "imprecise-gradient"): ("only approximately right",),
    ("ex3", "no-scaling"): ("the unscaled value",),
    ("ex3", "wrong-scale"): ("Check the scale 1 / sqrt(d_k)",),
    ("ex3", "softmax-axis"): ("instead of each row",),
    ("ex3", "not-normalized"): ("the rows of your weights do not sum to 1",),
    ("ex3", "unstable-softmax"): ("exp overflowed",),
    ("ex3", "mask-ignored"): ("the mask has no effect",),
    ("ex3", "mask-inverted"): ("your mask works backwards",),
    ("ex3", "mask-after-softmax"): ("mask the scores before the softmax",),
    ("ex3", "mask-zero-fill"): ("0 is not enough",),
    ("ex3", "mask-none-broken"): ("When mask is None",),
    ("ex3", "transposed"): ("Q K^T is (n, m)", "did you multiply K by Q"),
    ("ex3", "returns-swapped"): ("return (out, attn)",),
    ("ex3", "wrong-shape"): ("should have shape",),
    ("ex3", "mutates-input"): ("modified Q, K or V",),
    ("ex3", "stateful"): ("must not keep state",),
    ("ex3", "causal-diagonal"): ("covers the diagonal",),
    ("ex3", "causal-wrong-triangle"): ("covers the past",),
    ("ex3", "unsupported-type"): ("return plain numpy arrays",),
}
# How a failure shows when the self-check cannot run the code (any of the phrases).
FAILURE_SAYS = {"missing-name": ("is not defined",), "syntax-error": ("is not defined",),
                "crashed": ("raised", "not written yet", "is not defined"),
                "missing-module": ("raised", "is not defined", "is not installed where")}


@pytest.fixture(scope="module")
def self_check_cells() -> dict[str, str]:
    notebook = nbformat.read(source_notebook_path(Path(__file__).resolve().parents[1]),
                             as_version=4)
    return {cell.id: cell.source for cell in notebook.cells}


def _self_checks_say(cells, case) -> dict[str, str]:
    """Exercise -> what its self-checks print after the case's code ran, as in the notebook."""
    namespace: dict = {}
    exec(cells["setup"], namespace)
    run_case(case, namespace)
    said = {}
    for ex, grade_ids in SELF_CHECKS.items():
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            for grade_id in grade_ids:
                exec(cells[grade_id], namespace)
        said[ex] = buffer.getvalue()
    return said


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.kind != "hostile"])
def test_self_checks_agree_with_the_grader(reports, self_check_cells, name):
    """Full marks: every self-check of the exercise is clean. Points lost: the self-checks
    name each diagnosis they look for, and none the grader did not give."""
    said = _self_checks_say(self_check_cells, CASES[name])
    for ex, result in reports(name)["exercises"].items():
        text, codes = said[ex], result["diagnoses"]
        if result["score"] == result["max_score"]:
            assert text.count(CLEAN) == len(SELF_CHECKS[ex]), text
            continue
        for code in codes:
            phrases = SELF_CHECK_SAYS.get((ex, code)) or FAILURE_SAYS.get(code, ())
            assert not phrases or any(p in text for p in phrases), (ex, code, text)
        for (where, code), phrases in SELF_CHECK_SAYS.items():
            if where == ex and code not in codes:
                assert not any(p in text for p in phrases), (ex, code, text)
