"""Fair grading of answers the corpus's styles did not cover (fair4): a softmax without 1-D
support loses the vector test only; hand numbers given with too few figures, or in quotes,
are told so instead of a wrong cause; a value test's hint never blames the mask when the
student's own unmasked answer is wrong too, nor the weights when only out is. The hidden
tests run in this process (`test_scoring_gaps.Student`), on the lesson's numbers and on
students' own; tests/test_corpus.py grades the corpus's cases through the sandbox.
"""

from __future__ import annotations

import pytest

from autograder.compare import Mismatch, as_pair
from autograder.corpus import pieces as p
from autograder.diagnoses import ex2 as ex2_diagnoses
from autograder.sandbox import StudentRaised
from autograder.suites import test_ex1, test_ex2, test_ex3
from autograder.variants import DEFAULT
from tests.test_scoring_gaps import IDS, VARIANTS, Student


def _hint(test, student) -> str | None:
    """The failed test's hint, or None when it passes."""
    try:
        test(student)
    except Mismatch as err:
        return err.hint
    return None


# -- exercise 2(a): one misconception, one test --------------------------------------------------

UNSTABLE_VECTORS = """
def softmax(z):
    z = np.asarray(z, dtype=float)
    if z.ndim == 1:
        e = np.exp(z - z.min())   # the 1-D branch overflows on spread scores
        return e / e.sum()
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_a_softmax_for_rows_only_keeps_the_stability_point(variant):
    rows_only = Student(p.SOFTMAX_ROWS_ONLY, variant=variant)
    with pytest.raises(StudentRaised):  # axis 1 of a 1-D z: the vector test is lost
        test_ex2.test_softmax_of_a_vector_matches_reference(rows_only)
    assert _hint(test_ex2.test_softmax_normalises_each_row_of_a_matrix, rows_only) is None
    assert _hint(test_ex2.test_softmax_survives_large_scores, rows_only) is None
    # a 1-D branch that runs but overflows is still judged, and unstable
    unstable = Student(UNSTABLE_VECTORS, variant=variant)
    assert _hint(test_ex2.test_softmax_survives_large_scores, unstable) is not None


# -- hand numbers: too few figures, numbers in quotes ------------------------------------------

def test_two_decimals_are_told_to_give_three_not_blamed_on_the_scale():
    student = Student("ex1_scores = (0.71, 0.0)\nex1_weights = (0.67, 0.33)\n"
                      "ex1_output = (0.67, 0.33)\n")
    assert _hint(test_ex1.test_scores, student) == test_ex1._TWO_DECIMALS
    assert _hint(test_ex1.test_weights, student) is None  # 0.67 is within 0.001 of 0.6698
    assert _hint(test_ex1.test_output, student) is None
    cut = Student("ex1_scores = (0.70, 0.0)\nex1_weights = (0.66, 0.33)\n"
                  "ex1_output = (0.66, 0.33)\n")
    for test in (test_ex1.test_scores, test_ex1.test_weights, test_ex1.test_output):
        assert _hint(test, cut) == test_ex1._TWO_DECIMALS, test.__name__
    # a slip is still a slip: unscaled scores are no rounding
    unscaled = Student(p.ex1_no_scaling(DEFAULT.ex1))
    assert _hint(test_ex1.test_scores, unscaled) != test_ex1._TWO_DECIMALS


def test_two_significant_figures_are_told_to_give_three_and_not_called_imprecise():
    numbers = "p_unscaled = 1.0\np_scaled = 0.73\ngrad_unscaled = 0.00034\ngrad_scaled = 0.20\n"
    student = Student(p.SOFTMAX_STABLE, numbers)
    for test in (test_ex2.test_p_scaled_is_the_weight_on_the_larger_key,
                 test_ex2.test_grad_unscaled_is_the_smaller_keys_own_derivative,
                 test_ex2.test_grad_scaled_is_the_smaller_keys_own_derivative):
        assert "right to two significant figures only" in _hint(test, student), test.__name__
    assert _hint(test_ex2.test_p_unscaled_is_the_weight_on_the_larger_key, student) is None
    assert ex2_diagnoses.diagnose(student) == set()
    # a forward difference (3.369e-4: four figures, not the answer) stays imprecise
    forward = Student(p.SOFTMAX_STABLE, p.ex2_forward_difference(DEFAULT.ex2, 1e-2))
    assert ex2_diagnoses.diagnose(forward) == {"imprecise-gradient"}


def test_numbers_in_quotes_are_told_to_drop_the_quotes():
    for value in (("0.707", "0"), "0.707", ["0.707", 0.0]):
        with pytest.raises(Mismatch) as raised:
            as_pair(value, "ex1_scores")
        assert raised.value.hint == "write the numbers themselves, without quotes", value
        assert "got text" in raised.value.problem


# -- exercise 3: a value test's hint names a cause the student's own answers leave open ---------

LOG_SCALE = p.attention_with(scores="Q @ K.T / np.log(Q.shape[-1])")  # uncatalogued
OUTPUT_SCALED = p.attention_with(result="out / np.sqrt(Q.shape[-1]), attn")
FILL_MINUS_ONE = p.ATTENTION_WHERE.replace("-np.inf", "-1.0")  # a fill too small

MASKED_WEIGHTS = (test_ex3.test_attention_weights_with_causal_mask,
                  test_ex3.test_attention_weights_with_mask_hiding_largest_scores)
MASKED_OUTPUTS = (test_ex3.test_attention_output_with_causal_mask,
                  test_ex3.test_attention_output_with_mask_hiding_largest_scores)


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_a_masked_value_test_does_not_blame_the_mask_for_the_computation(variant):
    student = Student(p.SOFTMAX_STABLE, LOG_SCALE, variant=variant)
    for test in MASKED_WEIGHTS + MASKED_OUTPUTS:
        hint = _hint(test, student)
        assert "without a mask too, so the mask is not the cause" in hint, test.__name__
    # a mask mistake keeps the mask's hint
    fill = Student(p.SOFTMAX_STABLE, FILL_MINUS_ONE, variant=variant)
    for test in MASKED_WEIGHTS + MASKED_OUTPUTS:
        assert _hint(test, fill) == test_ex3._MASK_HINT, test.__name__


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_out_wrong_beside_right_weights_is_told_it_is_not_attn_at_v(variant):
    student = Student(p.SOFTMAX_STABLE, OUTPUT_SCALED, variant=variant)
    for test in MASKED_WEIGHTS + (test_ex3.test_attention_weights_without_mask,):
        assert _hint(test, student) is None, test.__name__
    for test in MASKED_OUTPUTS + (test_ex3.test_attention_output_without_mask,):
        assert _hint(test, student) == test_ex3._OUT_HINT, test.__name__


PROPERTIES = (test_ex3.test_attention_is_stable_at_large_scores,
              test_ex3.test_attention_accepts_read_only_inputs,
              test_ex3.test_attention_leaves_its_inputs_unchanged,
              test_ex3.test_attention_answers_each_call_from_its_own_inputs)
WEIGHTS_UNMASKED = p.attention_with(
    masking="ignored",  # attn as computed before the mask, out from the masked weights
    result="softmax(np.where(mask, -np.inf, scores)) @ V if mask is not None else out, attn")
ZERO_OUTPUT = p.attention_with(result="np.zeros_like(out), attn")


@pytest.mark.parametrize("variant", VARIANTS[:4], ids=IDS[:4])
def test_a_slip_in_the_last_step_keeps_the_property_points(variant):
    """out scaled again, or attn returned before the mask: the value tests charge it (out's
    three, or the masked attn's two), the property tests do not (fair4)."""
    for attention in (OUTPUT_SCALED, WEIGHTS_UNMASKED):
        student = Student(p.SOFTMAX_STABLE, attention, variant=variant)
        for test in PROPERTIES:
            assert _hint(test, student) is None, (attention, test.__name__)
    unmasked = Student(p.SOFTMAX_STABLE, WEIGHTS_UNMASKED, variant=variant)
    assert _hint(test_ex3.test_attention_output_with_causal_mask, unmasked) is None
    assert _hint(test_ex3.test_attention_weights_with_causal_mask, unmasked) is not None
    # right weights beside an out of zeros: the out tests are lost, and the weights were work
    zeros = Student(p.SOFTMAX_STABLE, ZERO_OUTPUT, variant=variant)
    assert _hint(test_ex3.test_attention_output_without_mask, zeros) is not None


# -- exercise 3(c): a tolerance earns the same point however it is compared --------------------

def _rows_check(tolerance, how):
    compare = {"<": f"np.all(np.abs(sums - 1) < {tolerance})",
               "<=": f"np.all(np.abs(sums - 1) <= {tolerance})",
               "allclose": f"np.allclose(sums, 1.0, atol={tolerance})",
               "isclose": f"all(math.isclose(s, 1.0, abs_tol={tolerance}) for s in sums)"}[how]
    return ("import math\n\ndef rows_sum_to_one(attn):\n"
            "    sums = np.asarray(attn, dtype=float).sum(axis=-1)\n"
            f"    return bool({compare})\n")


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_a_tolerance_for_the_rows_earns_the_same_point_however_it_is_compared(variant):
    """The short row sums to 0.995: 1e-2 (far beyond rounding) misses it with <, <= and
    np.allclose alike, 1e-3 and 1e-5 catch it every way. At 0.99 a strict < 1e-2 earned the
    point and np.allclose(atol=1e-2) lost it (fair4)."""
    rows = test_ex3.test_rows_sum_to_one_passes_attention_and_fails_broken_rows
    for how in ("<", "<=", "allclose", "isclose"):
        assert _hint(rows, Student(_rows_check(1e-2, how), variant=variant)) is not None, how
        for tolerance in (1e-3, 1e-5):
            student = Student(_rows_check(tolerance, how), variant=variant)
            assert _hint(rows, student) is None, (how, tolerance)
