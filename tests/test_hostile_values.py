"""No value a student returns raises out of the trusted side.

The checks, the hidden suites, the diagnoses and the report turn every value into an answer
that is wrong, graded: `p_unscaled = 10**400` once raised OverflowError inside a diagnosis
and turned a whole submission into `failed`.
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from autograder.compare import (
    MAX_ANSWER_VALUES,
    Mismatch,
    as_array,
    as_number,
    as_pair,
    close,
    numbers,
)
from autograder.diagnoses import ex1, ex2, ex3, ex4
from autograder.engine import grade_content
from autograder.exercises import EXERCISES
from autograder.report import build_report, render_text
from autograder.runner import run_tests
from autograder.sandbox import MemoryUse, MissingName
from autograder.variants import DEFAULT


def _deep(levels):
    value = 1.0
    for _ in range(levels):
        value = [value]
    return value


# Plain data as it can come back from the sandbox (ints up to 10,000 bits, any numeric
# dtype, nesting up to 32 levels), each once as a value and once inside a pair.
HOSTILE = [
    10**400, -(10**400), 2**9999, [10**400, 1.0], (1.0, 10**400), float("nan"), float("inf"),
    1e308, -1e308, "0.5", b"x", None, True, np.bool_(True), {"a": 1}, [1, "a"], [[1, 2], [3]],
    1 + 2j, np.array([1 + 2j]), np.array([2**64 - 1], dtype=np.uint64), np.float16(0.5),
    np.array([[1e300]], dtype=np.longdouble) * 1e300, [], (), [[[]]], np.zeros((0, 2)),
    _deep(30), np.ones((3, 3, 3)), np.array([np.nan, np.inf]), [None, None],
    [np.array([0.5]), np.array([[0.5]])], np.int64(-(2**63)), np.array([True, False]),
]


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_checks_answer_mismatch_or_a_value_never_anything_else(value):
    for check in (as_array, as_number, as_pair):
        try:
            check(value, "the answer")
        except Mismatch as failure:
            assert str(failure)
    assert numbers(value) is None or isinstance(numbers(value), np.ndarray)
    assert close(value, np.zeros(2)) in (True, False)


class HostileStudent:
    """Every required name holds `value`, and every function returns it."""

    variant = DEFAULT

    def __init__(self, value):
        self.returned = value

    def has(self, name):
        return True

    def value(self, name):
        return self.returned

    def call(self, name, *args, readonly=False, **kwargs):
        return self.returned

    def call_with_inputs(self, name, *args, readonly=False, **kwargs):
        return self.returned, args, kwargs

    def call_measuring_memory(self, name, *args, **kwargs):
        # The figures are the sandbox's (checked to be ints) and the gauge's.
        return self.returned, MemoryUse(2**40, 2**40)


class HostilePairStudent(HostileStudent):
    """attention returns (value, value); the mutation probe gets the value as its inputs."""

    def call(self, name, *args, readonly=False, **kwargs):
        return (self.returned, self.returned) if name == "attention" else self.returned

    def call_with_inputs(self, name, *args, readonly=False, **kwargs):
        return (self.returned, self.returned), (self.returned,) * 3, {"mask": self.returned}


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("kind", [HostileStudent, HostilePairStudent])
def test_suites_and_diagnoses_grade_any_value(kind, value):
    student = kind(value)
    results = run_tests(student)
    assert not [r for r in results if r.kit_error], [r.kit_error for r in results]
    for diagnose in (ex1.diagnose, ex2.diagnose, ex3.diagnose, ex4.diagnose):
        assert isinstance(diagnose(student), set)
    render_text(build_report("s.py", results, {key: [] for key in EXERCISES}))


class MissingStudent(HostileStudent):
    def has(self, name):
        return False

    def value(self, name):
        raise MissingName(name)

    call = call_with_inputs = call_measuring_memory = (
        lambda self, name, *a, **k: (_ for _ in ()).throw(MissingName(name)))


def test_diagnoses_of_a_submission_that_defines_nothing():
    student = MissingStudent(None)
    for diagnose in (ex1.diagnose, ex2.diagnose, ex3.diagnose, ex4.diagnose):
        assert diagnose(student) == set()


@pytest.mark.parametrize("kind", [HostileStudent, HostilePairStudent])
def test_an_answer_too_large_to_be_right_is_wrong_and_never_copied(kind):
    # Past MAX_ANSWER_VALUES in a narrow dtype: the worker may reply with 64 MiB of uint8,
    # which each check and probe read as float64 (8 times larger) and kept: 180 copies here,
    # and a `check` of one such notebook grew to 5.8 GB.
    value = np.ones((MAX_ANSWER_VALUES // 1000 + 100, 1000), dtype=np.uint8)
    student = kind(value)
    run_tests(student)  # the suites' own inputs and references, made once
    tracemalloc.start()
    try:
        results = run_tests(student)
        for diagnose in (ex1.diagnose, ex2.diagnose, ex3.diagnose, ex4.diagnose):
            diagnose(student)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * value.nbytes, f"{peak / value.nbytes:.1f} times the answer's size"
    wrong = [r for r in results if r.message and "far more than any answer here" in r.message]
    assert wrong and not [r for r in results if r.kit_error]


def test_a_number_too_large_for_a_float_is_graded_wrong_not_failed():
    from autograder.corpus import case

    source = case("lesson-style").source + "\np_unscaled = 10**400\nex1_scores = [10**400, 0]\n"
    report = grade_content(source, name="s.py")
    assert "kit_errors" not in report
    assert report["exercises"]["ex2"]["score"] == 5.25
    assert report["exercises"]["ex1"]["score"] == 2.0  # the weights and output still stand
    failed = [t["message"] for ex in report["exercises"].values() for t in ex["tests"]
              if not t["passed"]]
    assert any("too large for a float" in message for message in failed), failed


def test_half_a_surrogate_pair_in_an_error_message_leaves_a_report_utf8_can_hold():
    from autograder.corpus import case

    source = case("lesson-style").source + "\nraise ValueError('bad ' + chr(0xd83d))\n"
    report = grade_content(source, name="s.py")
    assert report["score"] == 20 and "kit_errors" not in report
    json.dumps(report, ensure_ascii=False).encode("utf-8")  # what the autograded notebook needs
    assert any("bad \ufffd" in cell["error"] for cell in report["cells"])


# -- text a student controls, on a terminal ----------------------------------------------------

ESCAPES = "\x1b[2J\x1b[H\x1b]0;title\x07\r\x08\x9b31m\u202e\ud800"


def _terminal_safe(text: str) -> bool:
    import unicodedata

    return all(c == "\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Zl", "Zp")
               for c in text)


def test_the_text_report_shows_escape_codes_instead_of_obeying_them():
    from autograder.runner import TestResult

    failed = TestResult("ex1", "scores", 1.0, passed=False, message=f"bad{ESCAPES}\nfake line",
                        kit_error=f"bug{ESCAPES}")
    report = build_report(f"sub{ESCAPES}.py", [failed], {"ex1": [f"code{ESCAPES}"]},
                          output=f"printed{ESCAPES}\n" * 3, warnings=[f"note{ESCAPES}"])
    report["cells"] = [{"cell": f"cell 1 ({ESCAPES})", "status": "error",
                        "error": f"boom{ESCAPES}"}]
    text = render_text(report)
    assert _terminal_safe(text)
    assert "\\x1b[2J" in text and "\\u202e" in text and "fake line" in text
    assert not any(line.startswith("fake line") for line in text.splitlines())


def test_a_submission_cannot_draw_on_the_terminal_that_checks_it():
    source = (
        "import numpy as np\n"
        f"print({ESCAPES[:-1]!r} + '  total 20.0 / 20.0')\n"
        f"ex1_scores = (0.707, 0.0)\n"
        f"def attention(Q, K, V, mask=None):\n    raise ValueError({ESCAPES[:-1]!r})\n"
    )
    text = render_text(grade_content(source, name=f"evil{ESCAPES[:-1]}.py"))
    assert _terminal_safe(text)
    assert "\\x1b" in text
