"""A small in-process runner for the hidden suites: collect once, run per submission.

`pytest.main` per submission costs far more than the tests themselves, so the suites' test
functions and marks are collected once, and each submission runs them in order with the
`student` fixture. pytest stays the way an instructor runs the same files
(`pytest autograder/suites --submission PATH`).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import time
from dataclasses import dataclass, field
from functools import cache

from autograder.compare import Mismatch
from autograder.exercises import EXERCISES
from autograder.sandbox import MissingName, StudentError, StudentRaised
from autograder.suites import SUITE_MODULES
from autograder.suites.marks import MARKS_ONLY


@dataclass(frozen=True)
class SuiteTest:
    exercise: str
    name: str  # the function name without `test_`
    points: float
    function: object


@dataclass
class TestResult:
    exercise: str
    name: str
    max_score: float
    passed: bool
    message: str = ""  # problem and hint together, as the test said them
    problem: str = ""  # what is wrong ...
    hint: str = ""  # ... and the test's generic advice, which a diagnosis may replace
    diagnoses: tuple[str, ...] = ()  # from the sandbox: crashed, timeout, missing-name...
    missing_name: str | None = None
    target: str = ""  # the name the student's code failed in (`softmax`), when it did
    raised: bool = False  # the student's code raised an ordinary exception
    error_type: str = ""  # the type of that exception (ModuleNotFoundError, NameError...)
    error_message: str = ""  # and its message, as the sandbox passed it on
    error_where: str = ""  # and where it was raised: `cell 27 (ex3_attention), line 4`
    ellipsis: bool = False  # the value read was `...` itself, the release's placeholder
    kit_error: str = ""  # the check itself failed: a bug in the kit, shown to instructors
    seconds: float = field(default=0.0, compare=False)

    @property
    def score(self) -> float:
        return self.max_score if self.passed else 0.0


def _marks(obj) -> list:
    marks = getattr(obj, "pytestmark", [])
    return list(marks) if isinstance(marks, (list, tuple)) else [marks]


def _mark_names(obj) -> dict[str, tuple]:
    return {getattr(mark, "name", ""): tuple(getattr(mark, "args", ())) for mark in _marks(obj)}


def _import_suite(name: str):
    """The suite module `name`; where pytest is not imported yet, with a stand-in that has
    only its marks (`suites.marks`: the real one costs a tenth of a second of every check)."""
    if "pytest" in sys.modules or f"autograder.suites.{name}" in sys.modules:
        return importlib.import_module(f"autograder.suites.{name}")
    sys.modules["pytest"] = MARKS_ONLY
    try:
        return importlib.import_module(f"autograder.suites.{name}")
    finally:  # a later `import pytest` anywhere gets the real one
        if sys.modules.get("pytest") is MARKS_ONLY:
            del sys.modules["pytest"]


@cache
def collect() -> tuple[SuiteTest, ...]:
    """Every hidden test, in file order, with its exercise and points from its marks."""
    tests = []
    for module_name in SUITE_MODULES:
        module = _import_suite(module_name)
        module_marks = _mark_names(module)
        for name, function in vars(module).items():
            if not (name.startswith("test_") and inspect.isfunction(function)):
                continue
            marks = {**module_marks, **_mark_names(function)}
            exercises = [key for key in EXERCISES if key in marks]
            if len(exercises) != 1 or "points" not in marks:
                raise RuntimeError(f"{module_name}.{name} needs one exercise mark and points")
            (points,) = marks["points"]
            tests.append(SuiteTest(exercises[0], name.removeprefix("test_"), float(points),
                                   function))
    return tuple(tests)


def run_tests(student, tests: tuple[SuiteTest, ...] | None = None) -> list[TestResult]:
    """Run the hidden tests against one submission; one result per test, in order."""
    return [run_test(student, test) for test in (collect() if tests is None else tests)]


def run_test(student, test: SuiteTest) -> TestResult:
    result = TestResult(test.exercise, test.name, test.points, passed=False)
    start = time.perf_counter()
    try:
        test.function(student)
        result.passed = True
    except Mismatch as failure:
        result.message = str(failure)
        result.problem, result.hint = failure.problem, failure.hint
    except StudentError as err:
        result.message = result.problem = describe_student_error(err)
        result.diagnoses = (err.diagnosis,)
        result.raised = isinstance(err, StudentRaised)
        result.target = str(getattr(err, "target", "") or "")
        result.ellipsis = _is_ellipsis(err)
        if result.raised:
            result.error_type, result.error_message = err.type_name, err.message
            result.error_where = err.where
        if isinstance(err, MissingName):
            result.missing_name = err.name
    except Exception as bug:  # the check itself broke: never the student's fault
        result.message = result.problem = ("this answer could not be checked; your "
                                           "instructor has been told")
        result.kit_error = f"{type(bug).__name__}: {bug}"
    result.seconds = time.perf_counter() - start
    return result


def not_attempted(results) -> bool:
    """Every test failed because the function is not there or is still the release's stub
    (NotImplementedError, `not-answered`): an exercise left alone, not a wrong answer."""
    return bool(results) and all(
        not r.passed and (r.missing_name or r.error_type == "NotImplementedError"
                          or "not-answered" in r.diagnoses)
        for r in results)


_ERROR_LIMIT = 300


def _is_ellipsis(err) -> bool:
    """The value read is `...` itself (the release's placeholder), not a value holding one:
    `diagnoses.unanswered` says `not-answered` when the answer's cell is still the stub."""
    return err.diagnosis == "unsupported-type" and "an ellipsis;" in str(err)


def describe_student_error(err) -> str:
    """What the sandbox said about the student's code, in the student's terms."""
    during = getattr(err, "during", "running your code")
    code = err.diagnosis
    if code == "missing-name":
        return (f"{err.name} is not defined: check its spelling, and that the code defining "
                "it runs without an error")
    if code == "timeout" and "time budget" in str(err):
        return (f"the submission's time budget was used up before or while {during}: look "
                "for slow or endless loops in your cells and functions")
    if code == "timeout":
        return (f"your code ran out of time while {during}: look for an endless loop, or "
                "for Python loops doing what numpy could do a whole block at a time")
    if code == "memory-limit":
        return f"your code used too much memory while {during}"
    if code == "forbidden-import":
        return (f"your code imported {getattr(err, 'module', 'a grader module')}, which "
                "submissions may not use: write the computation yourself")
    text = str(err).strip() or type(err).__name__
    if len(text) > _ERROR_LIMIT:
        text = text[:_ERROR_LIMIT] + " ..."
    if code == "unsupported-type":
        name = getattr(err, "target", "the answer")
        if "ellipsis" in text:
            return f"{name} is still `...`: replace it with your answer"
        return f"{name} gave something that cannot be graded as numbers: {text}"
    context = getattr(err, "context", "")
    return f"your code failed while {during}" + (f" {context}" if context else "") + f": {text}"
