"""Every submission of the corpus gets exactly its expected score and diagnoses.

All sandboxes share the sandbox's default pool (one zygote for the session). The time limits
are shortened so that the endless loops of the hostile cases cost about a second each.
"""

import re
from pathlib import Path

import pytest

from autograder.corpus import cases
from autograder.diagnoses import CODES
from autograder.engine import grade_content
from autograder.sandbox import Limits

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
