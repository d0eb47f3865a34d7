"""Every submission of the corpus gets exactly its expected score and diagnoses.

All sandboxes share the sandbox's default pool (one zygote for the session). The time limits
are shortened so that the endless loops of the hostile cases cost about a second each.
"""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.corpus import cases, pieces
from autograder.diagnoses import CODES
from autograder.engine import grade_content
from autograder.sandbox import Cell, Limits, Sandbox
from autograder.submission import read_content

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


def _processes_running(marker: str) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += f"sleep\0{marker}".encode() in Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                pass
    return count


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_background_processes_are_running_while_graded_and_gone_afterwards():
    marker = f"613.{os.getpid()}{secrets.randbelow(10**6)}"  # this run's own `sleep`
    source = CASES["background-processes"].source.replace(pieces.BACKGROUND_MARKER, marker)
    cells = [Cell(c.source, c.label, c.first_line)
             for c in read_content(source, name="background.py")]
    with Sandbox(cells, limits=QUICK) as sandbox:
        assert all(o.status == "ok" for o in sandbox.start())
        assert _processes_running(marker) == 2  # the child and the setsid daemon
    assert _processes_running(marker) == 0
    report = grade_content(source, name="background.py", limits=QUICK)
    assert report["score"] == 20 and _processes_running(marker) == 0


def test_the_hostile_reader_finds_the_answer_key_when_nothing_stops_it(tmp_path):
    """Run unsandboxed, the corpus's reader does find the grader's files: inside the sandbox,
    it is the sandbox that stops it (`read-hidden-files` loses exercise 1)."""
    script = pieces.READ_HIDDEN_FILES + "\nprint('ex1_scores' in dir(), len(_found))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    defined, found = done.stdout.split()
    assert defined == "True" and int(found) >= 2, done.stderr
