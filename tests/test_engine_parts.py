"""The engine's parts on their own: the runner, the misconception models, the checks."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sdpa_ref
from autograder import BLAS_THREAD_VARIABLES
from autograder.compare import Mismatch, as_array, as_number, expect_close
from autograder.diagnoses.codes import CODES, ordered
from autograder.diagnoses.ex3 import MASKED
from autograder.diagnoses.misconceptions import Model, all_models
from autograder.runner import SuiteTest, collect, run_tests
from autograder.sandbox import StudentRaised
from autograder.variants import DEFAULT
from tests.corpus_exec import InProcessStudent

ROOT = Path(__file__).resolve().parents[1]


def in_process(**names) -> InProcessStudent:
    """Stands in for the sandbox proxy: values and functions from a dict, in-process."""
    return InProcessStudent(names, DEFAULT)


def _test(function, exercise="ex1", points=1.0):
    return SuiteTest(exercise, function.__name__.removeprefix("test_"), points, function)


def test_runner_scores_passes_and_keeps_going_after_failures():
    def test_passes(student):
        student.value("a")

    def test_mismatch(student):
        raise Mismatch("a is wrong: try again")

    def test_missing(student):
        student.value("nope")

    def test_raises(student):
        raise StudentRaised("ValueError", "bad shapes")

    results = run_tests(in_process(a=1), tuple(map(_test, (
        test_passes, test_mismatch, test_missing, test_raises))))
    assert [(r.name, r.score, r.diagnoses) for r in results] == [
        ("passes", 1.0, ()), ("mismatch", 0.0, ()), ("missing", 0.0, ("missing-name",)),
        ("raises", 0.0, ("crashed",))]
    assert results[1].message == "a is wrong: try again"
    assert results[2].missing_name == "nope" and "nope is not defined" in results[2].message


def test_a_bug_in_a_check_is_a_kit_error_not_a_student_failure():
    def test_buggy(student):
        return {}["key"]

    (result,) = run_tests(in_process(), (_test(test_buggy),))
    assert not result.passed and result.kit_error == "KeyError: 'key'"
    assert "could not be checked" in result.message


def test_correct_model_is_the_reference():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = sdpa_ref.causal_mask(3, 5)
    for args in ((Q, K, V), (Q, K, V, mask)):
        for got, want in zip(Model()(*args), sdpa_ref.attention(*args), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_each_single_mistake_changes_the_answer_on_a_masked_probe():
    """On one of the diagnosis's masked probes at least: n = m = d_k, where even Q^T K runs,
    and n != m != d_k, where d_k read from the wrong axis (n or m) shows."""
    rng = np.random.default_rng(1)
    Q, K, V = rng.normal(size=(4, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 2))
    probes = ((Q, K, V, sdpa_ref.causal_mask(4)),
              *((*inputs, mask) for inputs, mask in MASKED))
    for model in (m for m in all_models() if m.deviations == 1):
        changed = [not np.allclose(answer[1], Model()(*probe)[1], equal_nan=True)
                   for probe in probes if (answer := model(*probe)) is not None]
        assert any(changed), model


def test_models_come_simplest_first_and_name_known_codes():
    models = all_models()
    assert models[0] == Model() and models[0].codes == frozenset()
    assert [m.deviations for m in models] == sorted(m.deviations for m in models)
    assert set().union(*(m.codes for m in models)) <= set(CODES)


def test_codes_are_reported_in_the_contracts_order():
    assert ordered({"crashed", "no-scaling", "mask-inverted"}) == [
        "no-scaling", "mask-inverted", "crashed"]


def test_checks_refuse_wrong_types_before_shapes_and_shapes_before_values():
    with pytest.raises(Mismatch, match="None"):
        as_array(None, "out")
    with pytest.raises(Mismatch, match="booleans"):
        as_array(np.zeros((2, 2)), "mask", dtype_kind="booleans")
    with pytest.raises(Mismatch, match="single number"):
        as_number([0.5, 0.5], "p_scaled")
    with pytest.raises(Mismatch, match=r"shape \(2, 3\), got \(3, 2\)"):
        expect_close(np.zeros((3, 2)), np.zeros((2, 3)), "attn")
    with pytest.raises(Mismatch, match="not broadcast|shape"):
        expect_close(np.zeros((1, 3)), np.zeros((2, 3)), "attn")  # never broadcast
    with pytest.raises(Mismatch, match="NaN"):
        expect_close(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), "attn")


@pytest.mark.slow
def test_instructor_runs_the_hidden_suites_with_pytest():
    key = ROOT / "solutions" / "sdpa" / "attention.ipynb"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "autograder/suites", "--submission", str(key), "-q",
         "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    assert f"{len(collect())} passed" in done.stdout


def test_missing_modules_are_traced_to_the_names_that_needed_them():
    from types import SimpleNamespace as Outcome

    from autograder.diagnoses.modules import find_missing_modules, missing_module
    from autograder.runner import TestResult
    from autograder.submission import python_cells

    cells = python_cells(
        "import torch\n"
        "from scipy.special import softmax as sp\n"
        "def softmax(z):\n    return sp(z)\n"
        "p_unscaled = softmax([8, 0])[0]\n"
        "from sdpa_ref import attention\n")
    outcomes = [
        Outcome(label="line 1", status="error", error="ModuleNotFoundError: No module named "
                "'torch' (line 1)"),
        Outcome(label="line 2", status="error", error="ModuleNotFoundError: No module named "
                "'scipy' (line 2)"),
        Outcome(label="line 3", status="ok", error=""),
        Outcome(label="line 5", status="error", error="NameError: name 'sp' is not defined"),
        Outcome(label="line 6", status="error", error="ModuleNotFoundError: importing "
                "'sdpa_ref' is not allowed in a submission"),
    ]

    def failed(name, test, **how):
        return TestResult("ex2", test, 1.0, passed=False, **how)

    results = [
        failed("softmax", "a", target="softmax", error_type="NameError",
               error_message="name 'sp' is not defined"),
        failed("p_unscaled", "b", missing_name="p_unscaled"),
        failed("attention", "c", missing_name="attention"),
        failed("causal_mask", "d", target="causal_mask", error_type="ModuleNotFoundError",
               error_message="No module named 'jax.numpy'"),
    ]
    assert find_missing_modules(cells, outcomes, results) == {
        "scipy": ["softmax", "p_unscaled"], "jax": ["causal_mask"]}
    assert missing_module("No module named 'sdpa_ref'") is None
    assert missing_module("No module named '\x1b[2J'") is None


def test_the_grading_process_runs_numpy_on_one_blas_thread():
    """More BLAS threads would spin between the suites' small calls, burning the processor a
    submission graded beside them needs; an instructor's own setting is kept."""
    script = ("import os, numpy as np\nimport autograder.engine\n"
              "a = np.ones((600, 600))\nfor _ in range(5):\n    a @ a\n"
              "print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    script = "import autograder\n" + script  # autograder first, as every entry point does
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stdout.split() == ["1", "1"]
    env["OPENBLAS_NUM_THREADS"] = "2"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stdout.split()[1] == "2"
