"""Every submission of the corpus gets exactly its expected score, diagnoses and failed tests,
messages that agree with its diagnoses, and self-checks in the notebook that agree with the
grader: with the lesson's numbers (every case), and on a sample of students' variants (every
correct and mistake case written with that student's numbers, graded as that student).

All sandboxes share the sandbox's default pool (one zygote for the session). The time limits
are shortened so that the endless loops of the hostile cases cost about a second each.
"""

import contextlib
import io
import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.corpus import cases, pieces
from autograder.diagnoses import CODES
from autograder.diagnoses.explanations import EXPLAINS, explained_by, explanation_text
from autograder.engine import grade_content
from autograder.exercises import MAX_SCORE
from autograder.sandbox import Cell, Limits, Sandbox
from autograder.submission import read_content
from autograder.variants import DEFAULT
from sdpa_course.course.notebooks import source_notebook_path
from tests import variant_sample
from tests.corpus_exec import run_case
from tests.graded_ahead import GradedAhead, keys_of

QUICK = Limits(cell_seconds=2.0, call_seconds=1.0)
CASES = {case.name: case for case in cases()}
VARIANTS = {"default": DEFAULT,
            **{s: variant_sample.variant(s) for s in variant_sample.QUICK + variant_sample.SLOW}}
# (variant, case) pairs: every case with the lesson's numbers; on students' variants, every
# correct and mistake case (hostile cases do not depend on the numbers).
PAIRS = [pytest.param("default", name, id=name) for name in CASES] + [
    pytest.param(student, name, id=f"{student}-{name}",
                 marks=[pytest.mark.slow] if student in variant_sample.SLOW else [])
    for student in variant_sample.QUICK + variant_sample.SLOW
    for name, case in CASES.items() if case.kind != "hostile"]
MISTAKE_PAIRS = [p for p in PAIRS if CASES[p.values[1]].kind == "mistake"]
GRADED_PAIRS = [p for p in PAIRS if CASES[p.values[1]].kind != "hostile"]

SUITES = Path(__file__).resolve().parents[1] / "autograder" / "suites"
HIDDEN_LINES = {line.strip() for path in SUITES.glob("test_ex*.py")
                for line in path.read_text().splitlines() if len(line.strip()) > 24}


_CASES_OF: dict[str, dict] = {}  # student -> {name: case}, built once (Case is frozen)


def case_of(student: str, name: str):
    """The case written with the student's own numbers."""
    if student not in _CASES_OF:
        _CASES_OF[student] = {case.name: case for case in cases(VARIANTS[student])}
    return _CASES_OF[student][name]


def _graded(pair: tuple[str, str]) -> dict:
    student, name = pair
    return grade_content(case_of(student, name).source, name=f"{name}.py", limits=QUICK,
                         variant=VARIANTS[student])


@pytest.fixture(scope="module")
def reports(request):
    """Each case graded once per variant, shared by the tests of this module: the pairs the
    session's tests of this module name are graded ahead, two at a time (tests/graded_ahead.py),
    any other on demand."""
    graded = GradedAhead(_graded, keys_of(request, ("student", "name")))

    def report(name, student="default"):
        return graded[(student, name)]

    yield report
    graded.close()


@pytest.mark.parametrize("student, name", PAIRS)
def test_case_gets_its_expected_score_and_diagnoses(reports, student, name):
    case, report = case_of(student, name), reports(name, student)
    got = {ex: (r["score"], r["diagnoses"]) for ex, r in report["exercises"].items()}
    expected = {ex: (case.scores[ex], case.expected_diagnoses[ex]) for ex in case.scores}
    assert got == expected, _failures(report)
    assert report["score"] == case.expected_score
    assert report["extra_credit"] == case.expected_extra_credit
    assert "kit_errors" not in report


@pytest.mark.parametrize("student, name", GRADED_PAIRS)
def test_case_fails_exactly_the_tests_its_mistake_breaks(reports, student, name):
    case, report = case_of(student, name), reports(name, student)
    failed = {ex: {t["name"] for t in r["tests"] if not t["passed"]}
              for ex, r in report["exercises"].items()}
    assert failed == case.expected_failures


# Codes that say how the code failed rather than what it computed: their tests' messages
# are the failure itself (the error, the missing name), not a misconception's explanation.
OUTCOMES = {"crashed", "missing-name", "syntax-error", "timeout", "memory-limit",
            "forbidden-import", "unsupported-type", "missing-module", "not-answered"}


@pytest.mark.parametrize("student, name", MISTAKE_PAIRS)
def test_every_failure_of_a_mistake_is_explained_by_its_diagnosis(reports, student, name):
    """No failed test is left to a generic hint that might contradict the diagnosis; a slip
    outside the catalogue (no code) gets plain messages, never a canned cause (issue 27). Each
    hint is given once per exercise, on the first test it explains; the later ones name it."""
    canned = {say for (_ex, _code), (_tests, say) in EXPLAINS.items() if say}
    for ex, result in reports(name, student)["exercises"].items():
        codes = result["diagnoses"]
        if result.get("attempted") is False:
            continue  # the optional exercise, left alone: nothing to explain
        messages = {test["name"]: test["message"] for test in result["tests"]}
        for test in result["tests"]:
            if test["passed"] or set(codes) & OUTCOMES:
                continue
            if not codes:
                said = [say for say in canned if say.split(":")[0] in test["message"]]
                assert not said, (test["message"], said)
                continue
            explaining = explained_by(ex, test["name"], codes)
            assert explaining, f"{ex}/{test['name']} failed, unexplained by {codes}"
            said = "; ".join(text for code in explaining
                             if (text := explanation_text(ex, code, VARIANTS[student])))
            above = re.search(r"the same cause as (\w+), explained above", test["message"])
            if above:
                assert said and said in messages[above.group(1)], test["message"]
            else:
                assert said in test["message"], test["message"]


@pytest.mark.parametrize("student, name", PAIRS)
def test_messages_never_show_hidden_code_or_reference_values(reports, student, name):
    for exercise in reports(name, student)["exercises"].values():
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
    assert all(case.expected_score == MAX_SCORE and not any(case.diagnoses.values())
               for case in correct)


def test_huge_output_is_truncated_in_the_report(reports):
    assert 0 < len(reports("huge-output")["output"]) <= 8192


def _failures(report) -> str:
    """The failed tests' messages, and what the submission printed (a hostile case says there
    what it got hold of: `read-hidden-files` names the files it could read)."""
    failed = [f"{ex}/{t['name']}: {t['message']}" for ex, r in report["exercises"].items()
              for t in r["tests"] if not t["passed"]]
    output = report.get("output", "").strip()
    return "\n".join(failed + ([f"its output: {output[-2000:]}"] if output else []))


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
    it is the sandbox that stops it (`read-hidden-files` loses exercise 1). It runs from this
    checkout with a home of its own, so what it finds first is this checkout's files, wherever
    the checkout lies (beside another, under /tmp, deep in a folder): everything it read lies
    in this checkout or this environment, never in another checkout on the machine."""
    checkout = Path(__file__).resolve().parents[1]
    script = (pieces.READ_HIDDEN_FILES
              + "\nimport json\nprint('ex1_scores' in dir(), json.dumps(_read))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=checkout, env={**os.environ, "HOME": str(tmp_path)}, timeout=120)
    defined, read = done.stdout.split(" ", 1)
    read = [Path(os.path.realpath(path)) for path in json.loads(read)]
    assert defined == "True" and read, done.stderr
    allowed = (checkout, Path(os.path.realpath(sys.prefix)))
    outside = [str(path) for path in read if not any(path.is_relative_to(a) for a in allowed)]
    assert not outside, f"the reader read files outside {checkout} and {sys.prefix}: {outside}"


# -- the notebook's self-checks agree with the grader ------------------------------------------

SELF_CHECKS = {"ex1": ("ex1_selfcheck",),
               "ex2": ("ex2_selfcheck_softmax", "ex2_selfcheck_numbers"),
               "ex3": ("ex3_selfcheck_attention", "ex3_selfcheck_causal_mask",
                       "ex3_selfcheck_checks"),
               "ex4": ("ex4_selfcheck",)}
CLEAN = "these quick checks pass"
# (exercise, code) -> what the exercise's self-checks say about it (any of the phrases). A
# code missing here is beyond what the self-checks look at; a misconception's phrase must
# not appear where the grader did not diagnose it.
SELF_CHECK_SAYS = {
    ("ex1", "no-scaling"): ("divide them by sqrt(d_k)",),
    ("ex1", "wrong-scale"): ("scaled by the wrong factor",),
    ("ex1", "not-normalized"): ("softmax weights always sum to 1",),
    ("ex2", "unstable-softmax"): ("exp overflowed",),
    ("ex2", "softmax-axis"): ("instead of each row",),
    ("ex2", "not-normalized"): ("divide by the sum of the exponentials",),
    ("ex2", "wrong-key"): ("the smaller key's weight",),
    ("ex2", "no-scaling"): ("divide the scores by sqrt(d_k)",),
    ("ex2", "wrong-scale"): ("uses scores divided by d_k",),
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
    ("ex3", "mask-zero-fill"): ("is not enough",),
    ("ex3", "mask-none-broken"): ("When mask is None",),
    ("ex3", "transposed"): ("Q K^T is (n, m)", "did you multiply K by Q", "are transposed"),
    ("ex3", "returns-swapped"): ("return (out, attn)",),
    ("ex3", "wrong-shape"): ("should have shape",),
    ("ex3", "mutates-input"): ("modified Q, K or V",),
    ("ex3", "stateful"): ("must not keep state",),
    ("ex3", "causal-diagonal"): ("covers the diagonal",),
    ("ex3", "causal-wrong-triangle"): ("covers the past",),
    ("ex3", "check-exact-float"): ("compare with a tolerance",),
    ("ex3", "check-lower-triangle"): ("It looks below the diagonal",),
    ("ex3", "check-diagonal"): ("It wants a zero diagonal",),
    ("ex4", "blockwise-causal-off-by-one"): ("the boundary is off by one",),
    ("ex4", "mask-ignored"): ("every query sees every key",),
    ("ex4", "unstable-softmax"): ("exp overflowed",),
    ("ex4", "blockwise-quadratic-memory"): ("it holds a whole (T, T) array",),
    ("ex1", "unsupported-type"): ("which the grader cannot read",),
    ("ex2", "unsupported-type"): ("which the grader cannot read",),
    ("ex3", "unsupported-type"): ("which the grader cannot read",),
}
# Phrases a code's self-check may say besides its own: weights returned transposed are told
# their shape too ("attn should have shape (n, m) ...: your weights are transposed").
SELF_CHECK_ALSO_SAYS = {("ex3", "transposed"): ("should have shape",)}
# How a failure shows when the self-check cannot run the code (any of the phrases).
FAILURE_SAYS = {"missing-name": ("is not defined",), "syntax-error": ("is not defined",),
                "crashed": ("raised", "not written yet", "is not defined"),
                "not-answered": ("not written yet", "not answered yet"),
                "missing-module": ("raised", "is not defined", "is not installed where")}


@pytest.fixture(scope="module")
def self_check_cells() -> dict[str, str]:
    notebook = nbformat.read(source_notebook_path(Path(__file__).resolve().parents[1]),
                             as_version=4)
    return {cell.id: cell.source for cell in notebook.cells}


def _self_checks_say(cells, case, student="default") -> dict[str, str]:
    """Exercise -> what its self-checks print after the case's code ran, as in the notebook
    released to the student."""
    namespace = variant_sample.in_notebook(cells, VARIANTS[student])
    run_case(case, namespace)
    said = {}
    for ex, grade_ids in SELF_CHECKS.items():
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            for grade_id in grade_ids:
                exec(cells[grade_id], namespace)
        said[ex] = buffer.getvalue()
    return said


@pytest.mark.parametrize("student, name", GRADED_PAIRS)
def test_self_checks_agree_with_the_grader(reports, self_check_cells, student, name):
    """Full marks: every self-check of the exercise is clean. Points lost: the self-checks
    name each diagnosis they look for, and none the grader did not give."""
    said = _self_checks_say(self_check_cells, case_of(student, name), student)
    for ex, result in reports(name, student)["exercises"].items():
        text, codes = said[ex], result["diagnoses"]
        if result["score"] == result["max_score"]:
            assert text.count(CLEAN) == len(SELF_CHECKS[ex]), text
            continue
        for code in codes:
            phrases = SELF_CHECK_SAYS.get((ex, code)) or FAILURE_SAYS.get(code, ())
            assert not phrases or any(p in text for p in phrases), (ex, code, text)
        also = {p for code in codes for p in SELF_CHECK_ALSO_SAYS.get((ex, code), ())}
        for (where, code), phrases in SELF_CHECK_SAYS.items():
            if where == ex and code not in codes:
                assert not any(p in text and p not in also for p in phrases), (ex, code, text)
