"""Per-student variants: how they are derived, what varies, and that grading stays fair on
every one of them.

The fast property tests run the hidden suites and diagnoses of exercises 1 and 2 in this
process on many variants (the corpus's correct and mistaken answers, written with each
student's own numbers); the engine itself grades a sample of variants in test_corpus.py.
"""

from __future__ import annotations

import ast
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

import autograder.variants.numbers as numbers_module
import sdpa_ref
from autograder.compare import HAND, significant_figures
from autograder.corpus import cases, classmate
from autograder.diagnoses import diagnose_submission
from autograder.diagnoses.ex1 import scale_slips, slip_models
from autograder.runner import collect, run_tests
from autograder.sandbox import MissingName, StudentRaised
from autograder.suites import test_ex2, test_ex3
from autograder.variants import DEFAULT, BadSeed, new_seed, numbers_key, variant_for
from autograder.variants.keys import inputs_seed
from autograder.variants.numbers import LESSON_EX1, LESSON_EX2, student_numbers
from sdpa_course.assignment import NUMBERS_CELL
from tests.corpus_exec import call_quietly, run_case
from tests.variant_sample import SEED, in_notebook, released_numbers_cell

REPO = Path(__file__).resolve().parents[1]
CLASS = [f"student{i:03d}" for i in range(200)]
MANY = [f"s{i}" for i in range(80)]  # the students of the in-process property tests
EX12_TESTS = tuple(t for t in collect() if t.exercise in ("ex1", "ex2"))


# -- deriving a variant ------------------------------------------------------------------------

def test_a_variant_is_a_function_of_the_seed_the_assignment_and_the_student():
    alice = variant_for(SEED, "sdpa", "alice")
    assert variant_for(SEED, "sdpa", "alice") == alice
    others = [variant_for(SEED, "sdpa", "bob"), variant_for(SEED, "other", "alice"),
              variant_for(new_seed(), "sdpa", "alice")]
    assert all(other.label != alice.label and other.inputs_seed != alice.inputs_seed
               for other in others)


def test_the_public_key_and_the_secret_inputs_come_from_separate_labels():
    """HMAC under distinct labels: the numbers key (public, in the release) is neither the
    seed nor the inputs key, and each student's inputs seed differs from both."""
    key = numbers_key(SEED)
    assert key != SEED and len(key) == 64
    assert format(inputs_seed(SEED, "sdpa", "alice"), "064x") not in (key, SEED)
    # the release can give every student's numbers, never their hidden inputs
    assert student_numbers(key, "sdpa", "alice")["label"] == variant_for(SEED, "sdpa",
                                                                         "alice").label


@pytest.mark.parametrize("seed", ["", "abc", "zz" * 32, "a" * 31, "0" * 33, None])
def test_a_malformed_seed_is_refused(seed):
    with pytest.raises(BadSeed):
        numbers_key(seed)


def test_no_seed_or_no_student_gives_the_lesson_s_own_exercise():
    assert variant_for(None, "sdpa", "alice").label == "default"
    assert variant_for(None, "sdpa", "alice").inputs_seed is None
    assert student_numbers(numbers_key(SEED), "sdpa", "")["label"] == "default"
    assert DEFAULT.ex1.expected()["ex1_weights"] == pytest.approx([0.6698, 0.3302], abs=1e-4)
    assert DEFAULT.ex2.expected()["p_scaled"] == pytest.approx(0.73106, abs=1e-5)
    # the lesson's hidden inputs as they were before variants
    inputs = test_ex3.hidden_inputs(DEFAULT)
    assert [inputs[k][0].shape + inputs[k][2].shape for k in
            ("without_mask", "causal", "hiding_largest")] == [(5, 3, 7, 4), (6, 4, 6, 2),
                                                             (4, 5, 6, 3)]
    assert test_ex2.hidden_inputs(DEFAULT)["matrix"].shape == (3, 4)


def test_200_students_get_at_least_50_exercise_1_answers_and_20_exercise_2_answer_sets():
    variants = [variant_for(SEED, "sdpa", student) for student in CLASS]
    ex1 = {tuple(np.round(np.concatenate(list(v.ex1.expected().values())), 4)) for v in variants}
    ex2 = {tuple(round(x, 8) for x in v.ex2.expected().values()) for v in variants}
    assert len(ex1) >= 50 and len(ex2) >= 20, (len(ex1), len(ex2))
    assert {v.ex1.d_k for v in variants} == {2, 4}


def test_every_family_member_keeps_its_numbers_small_and_its_slips_apart():
    """The family's promises, for many students: small integers, scores of at most 4, a
    scaled gap of 0.5 to 2; every wrong scale at least 0.047 away from the right weights
    (47 times the three-decimal tolerance) and from each other scale's; unnormalised weights
    summing to 1.05 or more; ex2's gap 6 to 9 and d_k a perfect square from 16 to 100,
    never the lesson's worked scaled gaps 1 and 2."""
    for student in CLASS:
        variant = variant_for(SEED, "sdpa", student)
        n, m = variant.ex1, variant.ex2
        assert all(abs(x) <= 2 for x in (*n.q, *n.k1, *n.k2, *n.v1, *n.v2))
        assert n.d_k in (2, 4) and np.abs(n.raw).max() <= 4
        assert 0.5 <= abs(n.raw[0] - n.raw[1]) / math.sqrt(n.d_k) <= 2
        weights = {factor: sdpa_ref.softmax(n.raw * factor)
                   for factor in (n.scale, *scale_slips(n.d_k))}
        for a, b in itertools.combinations(weights, 2):
            if scale_slips(n.d_k).get(a) != scale_slips(n.d_k).get(b) or n.scale in (a, b):
                assert np.abs(weights[a] - weights[b]).max() >= 0.047 or (
                    a != n.scale and b != n.scale and min(a, b) >= 1)  # both saturated
        assert np.exp(n.raw * n.scale).sum() >= 1.05
        assert 6 <= m.gap <= 9 and math.isqrt(m.d_k) ** 2 == m.d_k and 16 <= m.d_k <= 100
        assert m.gap / math.sqrt(m.d_k) not in (1.0, 2.0)


def test_every_students_ex3_inputs_keep_the_properties_the_tests_rely_on():
    seen = set()
    for student in CLASS:
        inputs = test_ex3.hidden_inputs(variant_for(SEED, "sdpa", student))
        shapes = []
        for key in ("without_mask", "causal", "hiding_largest"):
            Q, K, V, mask = inputs[key]
            (n, d_k), (m, d_v) = Q.shape, V.shape
            assert d_k >= 2 and d_k != d_v and m != d_v
            assert (n == m) == (key == "causal")
            assert (n, m, d_k, d_v) not in test_ex3.NOTEBOOK_SHAPES
            if mask is not None:
                assert not mask.all(axis=-1).any()  # no row fully masked
            shapes.append((n, m, d_k, d_v))
        squares = [inputs["stability"][0][0].shape[0], inputs["read_only"][0].shape[0],
                   inputs["unchanged"][0].shape[0], inputs["stateless"][0][0].shape[0]]
        assert len(set(shapes)) == 3 and len(set(squares)) == 4
        seen.add(inputs["without_mask"][0].tobytes())
    assert len(seen) == len(CLASS)  # inputs leaked by one say nothing about another's


def test_stability_inputs_gain_800_on_every_scaled_score():
    for student in CLASS[:50]:
        (Q0, K0, _), (Q1, K1, _) = test_ex3.hidden_inputs(
            variant_for(SEED, "sdpa", student))["stability"]
        gain = (Q1 @ K1.T - Q0 @ K0.T) / np.sqrt(Q0.shape[1])  # (s, s)
        assert np.allclose(gain, 800.0)


# -- the notebook works the numbers out as the grader does -----------------------------------

SHARED = ("_variant_digest", "_draws", "_ex1_fits", "_ex1_numbers", "_ex2_numbers",
          "student_numbers")


def _definitions(source: str) -> dict[str, str]:
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = ast.dump(node)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = ast.dump(node)
    return found


@pytest.fixture(scope="module")
def cells():
    import nbformat

    from sdpa_course.course.notebooks import source_notebook_path

    notebook = nbformat.read(source_notebook_path(REPO), as_version=4)
    return {cell.id: cell.source for cell in notebook.cells}


def test_the_notebook_holds_the_graders_own_code_for_the_numbers(cells):
    mine = _definitions(Path(numbers_module.__file__).read_text())
    theirs = _definitions(cells[NUMBERS_CELL])
    for name in (*SHARED, "LESSON_EX1", "LESSON_EX2", "DEFAULT_LABEL"):
        assert theirs[name] == mine[name], f"{name} differs from autograder/variants/numbers.py"


def test_the_notebook_shows_each_student_the_numbers_the_grader_expects(cells):
    for student in MANY[:40]:
        namespace = in_notebook(cells, variant_for(SEED, "sdpa", student))  # asserts label
        variant = variant_for(SEED, "sdpa", student)
        assert namespace["EX1"] == {k: v if k == "d_k" else tuple(v)
                                    for k, v in variant.public()["ex1"].items()}
        assert namespace["EX2"] == variant.public()["ex2"]


def _numbers_cell_says(cells, *, key: str, typed: str = "", env=None, monkeypatch) -> str:
    import contextlib
    import io

    for name in ("SDPA_STUDENT_ID", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    namespace = {"STUDENT_ID": typed}
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(cells["setup"], namespace)
        exec(released_numbers_cell(cells[NUMBERS_CELL], key), namespace)
    return buffer.getvalue() + f"\n[{namespace['YOUR_VARIANT']}]"


def test_the_notebook_finds_the_id_typed_then_the_graders_then_jupyterhub_s(cells, monkeypatch):
    key = numbers_key(SEED)
    label = {s: variant_for(SEED, "sdpa", s).label for s in ("ann", "bo", "cy")}
    said = _numbers_cell_says(cells, key=key, typed=" ann ", monkeypatch=monkeypatch,
                              env={"SDPA_STUDENT_ID": "bo", "JUPYTERHUB_USER": "cy"})
    assert f"[{label['ann']}]" in said and "typed in the cell above" in said
    said = _numbers_cell_says(cells, key=key, monkeypatch=monkeypatch,
                              env={"SDPA_STUDENT_ID": "bo", "JUPYTERHUB_USER": "cy"})
    assert f"[{label['bo']}]" in said
    said = _numbers_cell_says(cells, key=key, monkeypatch=monkeypatch,
                              env={"JUPYTERHUB_USER": "cy"})
    assert f"[{label['cy']}]" in said and "JupyterHub" in said
    said = _numbers_cell_says(cells, key=key, monkeypatch=monkeypatch)
    assert "[default]" in said and "No student id found" in said
    said = _numbers_cell_says(cells, key="", typed="ann", monkeypatch=monkeypatch)
    assert "[default]" in said and "belongs to no course" in said


# -- fair on every variant: the suites and diagnoses in this process -------------------------

class InProcessStudent:
    """A corpus case's names, run in this process: values and functions as the sandbox gives
    them (a function's exception is the student's, StudentRaised)."""

    def __init__(self, namespace, variant):
        self.namespace, self.variant = namespace, variant

    def has(self, name):
        return name in self.namespace

    def value(self, name):
        if name not in self.namespace:
            raise MissingName(name)
        return self.namespace[name]

    def call(self, name, *args, readonly=False, **kwargs):
        function = self.value(name)
        result = call_quietly(function, *args, **kwargs)
        if result is None:
            raise StudentRaised("Exception", f"{name} raised")
        return result


def _grade_ex12(case, variant) -> dict[str, tuple]:
    """Exercise -> (score, diagnoses, failed tests) of exercises 1 and 2, in this process."""
    student = InProcessStudent(run_case(case), variant)
    results = run_tests(student, EX12_TESTS)
    diagnoses = diagnose_submission(student, results)
    return {ex: (sum(r.score for r in results if r.exercise == ex), diagnoses[ex],
                 {r.name for r in results if r.exercise == ex and not r.passed})
            for ex in ("ex1", "ex2")}


@pytest.mark.parametrize("student", ["default", *MANY])
def test_every_correct_and_mistaken_answer_grades_the_same_on_every_variant(student):
    """Every correct style earns every point of exercises 1 and 2 (the variant's answer key
    among them), and every catalogued mistake loses exactly its tests, with its diagnosis."""
    variant = DEFAULT if student == "default" else variant_for(SEED, "sdpa", student)
    for case in cases(variant):
        if case.kind == "hostile" or case.name in ("scipy-without-scipy", "syntax-error"):
            continue  # the sandbox's business: hostile code, modules, a file that fails to parse
        got = _grade_ex12(case, variant)
        for ex in ("ex1", "ex2"):
            expected = (case.scores[ex], case.expected_diagnoses[ex],
                        case.expected_failures[ex] if case.fails is not None else got[ex][2])
            assert got[ex] == expected, (student, case.name, ex)


def _figures(value: float, figures: int = 3) -> float:
    return float(format(value, f".{figures}g"))


def _float32_answers(numbers) -> dict[str, float]:
    """Exercise 2 computed in float32 throughout, the smaller weight as 1 - p."""
    def softmax32(z):
        z = np.asarray(z, dtype=np.float32)  # (2,)
        e = np.exp(z - z.max())  # (2,)
        return e / e.sum()  # (2,)

    p = softmax32([numbers.gap, 0.0])[0]
    p_s = softmax32(np.array([numbers.gap, 0.0]) / np.float32(np.sqrt(numbers.d_k)))[0]
    return {"p_unscaled": p, "p_scaled": p_s, "grad_unscaled": (1 - p) * p,
            "grad_scaled": (1 - p_s) * p_s}


def test_ex2_answers_in_float32_stay_a_tenth_of_a_figure_away_on_every_gap_and_d_k():
    """Beyond a gap of 9, 1 - p in float32 would cost grad_unscaled its third figure."""
    for gap, d_k in itertools.product(range(6, 10), (16, 25, 36, 49, 64, 81, 100)):
        numbers = variant_for(SEED, "sdpa", "x").ex2.__class__(gap, d_k)
        expected, got = numbers.expected(), _float32_answers(numbers)
        for name, value in expected.items():
            assert abs(float(got[name]) - value) <= significant_figures(value) / 10, (gap, d_k)


def test_a_student_who_submits_a_classmates_numbers_loses_those_points():
    """The classmate's answers are wrong for the student: each test of a number that differs
    fails, with no credit carried forward from scores that are not a slip of their own."""
    kept_for_nothing = 0
    for student in MANY:
        variant = variant_for(SEED, "sdpa", student)
        other = classmate(variant)
        copied = next(c for c in cases(other) if c.name == "lesson-style")
        got = _grade_ex12(copied, variant)
        assert got["ex1"][0] == 0 and got["ex1"][2] == {"scores", "weights", "output"}
        lost = {t for t in got["ex2"][2] if t.startswith(("p_", "grad_"))}
        assert lost >= {"p_scaled_is_the_weight_on_the_larger_key",
                        "grad_unscaled_is_the_smaller_keys_own_derivative",
                        "grad_scaled_is_the_smaller_keys_own_derivative"}, student
        kept_for_nothing += got["ex2"][0] - 3  # softmax's 3 points are the student's own
    # p_unscaled is 0.998 to 1.00 for every gap: right for both students, now and then
    assert kept_for_nothing <= 0.75 * len(MANY)


def test_each_catalogued_slip_of_exercise_1_stays_apart_from_the_right_answers():
    for student in CLASS:
        variant = variant_for(SEED, "sdpa", student)
        right = variant.ex1.expected()
        for code, model in slip_models(variant.ex1):
            apart = max(np.abs(model[name] - right[name]).max() for name in model)
            assert apart >= 30 * HAND, (student, code)


def test_hand_rounding_at_every_step_stays_inside_the_tolerance_on_every_variant():
    """Rounded or cut to three decimals at each step, from the previous step as written."""
    for student in CLASS:
        n = variant_for(SEED, "sdpa", student).ex1
        exact = n.expected()
        for step in (lambda x: np.round(x, 3), lambda x: np.trunc(x * 1000) / 1000):
            scores = step(exact["ex1_scores"])
            weights = step(sdpa_ref.softmax(scores))
            output = step(weights @ n.values)
            assert np.abs(scores - exact["ex1_scores"]).max() <= HAND
            assert np.abs(weights - sdpa_ref.softmax(scores)).max() <= HAND
            assert np.abs(output - weights @ n.values).max() <= 2 * HAND


def test_lesson_numbers_and_the_default_answers_read_as_before():
    assert LESSON_EX1 == {"q": (1, 0), "k1": (1, 0), "k2": (0, 1), "v1": (1, 0), "v2": (0, 1),
                          "d_k": 2}
    assert LESSON_EX2 == {"gap": 8, "d_k": 64}
    assert _figures(DEFAULT.ex2.expected()["grad_unscaled"]) == 3.35e-4
