"""The comparison's arithmetic at its boundaries (`autograder.compare`): just inside a
tolerance passes, just outside fails, and a value of the wrong kind says what it is.

`tests/test_tolerances.py` measures the margins on the corpus; these tests hold the formulas
themselves (found by mutation testing: tools/mutation_test.py), so that a tolerance cannot be
loosened or tightened without a test noticing.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from autograder.compare import (
    BLOCKWISE_MEMORY,
    BLOCKWISE_MEMORY_T,
    FLOAT_RESULTS,
    HAND,
    Mismatch,
    Tolerance,
    as_array,
    as_floats,
    as_pair,
    as_verdict,
    close,
    expect_close,
    expect_shape,
    mib_seen,
    numbers,
    significant_figures,
)
from autograder.sandbox import MemoryUse
from autograder.suites import test_ex1, test_ex4
from autograder.variants import DEFAULT, Ex1Numbers


@pytest.mark.parametrize("expected", [0.0, 0.5, 1.0, -2.0])
def test_a_value_is_close_up_to_atol_plus_rtol_times_the_expected_value(expected):
    allowed = FLOAT_RESULTS.atol + FLOAT_RESULTS.rtol * abs(expected)
    for inside in (expected + 0.9 * allowed, expected - 0.9 * allowed):
        expect_close(np.array([inside]), np.array([expected]), "x")
        assert FLOAT_RESULTS.ratio([inside], [expected]) == pytest.approx(0.9)
    for outside in (expected + 1.1 * allowed, expected - 1.1 * allowed):
        with pytest.raises(Mismatch, match="x is wrong: the value differs from"):
            expect_close(np.array([outside]), np.array([expected]), "x")
        assert FLOAT_RESULTS.ratio([outside], [expected]) == pytest.approx(1.1)


@pytest.mark.parametrize("expected", [0.0, 0.5, -2.0])
def test_diagnosing_agrees_within_the_tolerance_and_not_beyond(expected):
    allowed = FLOAT_RESULTS.atol + FLOAT_RESULTS.rtol * abs(expected)
    assert close([expected + 0.9 * allowed], [expected])
    assert not close([expected + 1.5 * allowed], [expected])
    assert not close([expected], [expected, expected])  # another shape
    assert not close([np.nan], [expected]) and not close("0.5", [expected])


@pytest.mark.parametrize("actual", [1e-4, -1e-4])
def test_an_error_of_exactly_the_tolerance_passes_in_grading_and_in_diagnosing(actual):
    # |actual - expected| <= atol + rtol |expected|: at expected 0 the bound is atol exactly
    expect_close(np.array([actual]), np.array([0.0]), "x")
    assert FLOAT_RESULTS.ratio([actual], [0.0]) == 1.0
    assert close([actual], [0.0])

def test_a_mismatch_says_how_many_values_differ_in_three_words():
    """one, some or all: the count itself is the answer's to choose (on hidden inputs)."""
    expected = np.zeros((2, 3))
    actual = expected.copy()
    actual[0, 1] = 0.5
    with pytest.raises(Mismatch, match="one of 6 values differs"):
        expect_close(actual, expected, "attn")
    for wrong in range(2, 6):
        actual.flat[:wrong] = 0.5
        with pytest.raises(Mismatch, match="some of 6 values differ") as told:
            expect_close(actual, expected, "attn")
        assert str(wrong) not in str(told.value)
    with pytest.raises(Mismatch, match="all 6 values differ"):
        expect_close(expected + 1, expected, "attn")


@pytest.mark.parametrize(("shape", "expected", "seen"), [
    ((3, 4), (4, 3), "shape (3, 4)"),  # transposed: the kit's own sizes
    ((1, 4, 3), (4, 3), "shape (1, 4, 3)"),  # a kept dimension
    ((9907,), (4, 3), "another shape"),  # a size the answer chose
    ((4, 3, 4, 3), (4, 3), "another shape"),
])
def test_a_shape_is_echoed_only_in_the_sizes_the_kit_chose(shape, expected, seen):
    with pytest.raises(Mismatch) as told:
        expect_shape(np.zeros(shape), expected, "out")
    assert told.value.problem.endswith(seen.removeprefix("shape "))


def test_the_tolerances_cannot_be_changed_by_the_code_that_uses_them():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FLOAT_RESULTS.rtol = 1.0  # type: ignore[misc]


def test_the_ratio_of_nothing_is_zero_and_of_a_non_finite_error_infinite():
    tolerance = Tolerance(rtol=1e-4, atol=1e-4)
    assert tolerance.ratio([], []) == 0.0
    assert tolerance.ratio([np.nan], [0.5]) == np.inf
    assert tolerance.ratio([np.inf], [0.5]) == np.inf


@pytest.mark.parametrize("reference, unit", [
    (0.99966, 1e-3), (3.352e-4, 1e-6), (-3.352e-4, 1e-6), (-0.73106, 1e-3), (196.61, 1.0),
])
def test_three_significant_figures_allow_one_unit_of_the_third_whatever_the_sign(
        reference, unit):
    assert significant_figures(reference) == pytest.approx(unit, rel=1e-6)


@pytest.mark.parametrize("reference, written", [
    (0.5, 0.501), (0.5, 0.499), (-0.25, -0.251), (3.35e-4, 3.36e-4), (196.0, 197.0),
])
def test_one_unit_of_the_third_significant_figure_off_passes_whatever_its_binary_rounding(
        reference, written):
    # 0.501 - 0.5 is 0.0010000000000000009 in binary: still one unit, as the contract says
    assert abs(written - reference) <= significant_figures(reference)

def test_no_significant_figures_of_zero_or_of_a_non_finite_reference():
    assert significant_figures(0.0) == 0.0
    assert significant_figures(float("inf")) == 0.0


def test_numbers_too_large_for_a_float_are_refused_but_an_infinity_is_a_value():
    huge = np.array([1e300], dtype=np.longdouble) * 1e300  # finite as long double, not float
    if np.isinf(huge).any():
        pytest.skip("this platform's long double is a float64")
    with pytest.raises(Mismatch, match="too large for a float"):
        as_floats(huge, "x")
    assert np.isinf(as_floats(np.array([np.inf, 1.0]), "x")[0])  # wrong later, not here


@pytest.mark.parametrize("value, named", [
    (np.array(["2026-11-20"], dtype="M8[D]"), "datetime64"),
    (np.array([1 + 2j]), "complex128"),
    (np.array([[1.0, 2.0]], dtype=object), "numbers too large for a float"),
    (np.array(["0.5"]), "got text \\(an array of text\\)"),  # not numbers too large;
    # text of any length (its dtype, <U3, would say the length the answer chose)
])
def test_a_value_that_is_not_real_numbers_is_named_in_the_message(value, named):
    with pytest.raises(Mismatch, match=named):
        as_array(value, "x")


class _Hostile:
    """A student's value that numpy cannot even look at without an error of its own."""

    def __array__(self, *args, **kwargs):
        raise RuntimeError("not telling")


def test_a_value_numpy_cannot_read_is_a_mismatch_for_grading_and_no_match_for_diagnosing():
    with pytest.raises(Mismatch, match="should be numbers, got a _Hostile"):
        as_array(_Hostile(), "x")
    assert numbers(_Hostile()) is None
    assert not close(_Hostile(), [0.5])

@pytest.mark.parametrize("mask", [
    np.zeros((2, 2), dtype=np.uint8), np.zeros((2, 2), dtype="M8[s]"), np.zeros((2, 2), "U1"),
])
def test_a_mask_must_be_booleans(mask):
    with pytest.raises(Mismatch, match="booleans"):
        as_array(mask, "mask", dtype_kind="booleans")
    assert as_array(np.zeros((2, 2), bool), "mask", dtype_kind="booleans").dtype == bool


@pytest.mark.parametrize("value", [
    [0.5, 0.5], (0.5, 0.5), np.array([0.5, 0.5]), np.array([[0.5, 0.5]]), [[0.5, 0.5]],
    [np.float32(0.5), np.array(0.5)], [[0.5], [0.5]],
    [np.array([0.5]), np.array([[0.5]])],  # two one-element numbers, of different shapes
])
def test_a_pair_is_two_numbers_in_any_usual_form(value):
    np.testing.assert_array_equal(as_pair(value, "w"), [0.5, 0.5])


@pytest.mark.parametrize("value", [[0.5, 0.5, 0.0], (0.5,), np.zeros((2, 2)),
                                   [[0.5, 0.5, 0.5]], [0.5, [0.5, 0.5]]])
def test_anything_else_is_not_a_pair(value):
    with pytest.raises(Mismatch):
        as_pair(value, "w")


@pytest.mark.parametrize("value, verdict", [
    (True, True), (False, False), (np.True_, True), (np.False_, False),
    (np.array(True), True), (np.array([False]), False), (np.array([[True]]), True),
])
def test_a_check_answers_with_one_bool_in_any_usual_form(value, verdict):
    assert as_verdict(value, "is_causal") is verdict


@pytest.mark.parametrize("value, named", [
    (np.array([True, False]), "an array of bool of shape (2,)"),
    (np.zeros((0,), bool), "an array of bool of shape (0,)"),
    (np.array([1], np.int64), "an array of int64 of shape (1,)"), (1, "int"),
    (None, "NoneType"), ("True", "str"), ([True], "list"),
])
def test_anything_else_is_not_a_checks_answer_and_says_what_it_is(value, named):
    with pytest.raises(Mismatch, match="should return True or False, got .*" + re.escape(named)):
        as_verdict(value, "is_causal")


def test_the_blockwise_memory_limit_is_the_contracts_quarter_of_one_score_matrix():
    docs = Path(__file__).resolve().parent.parent / "docs"
    contract = (docs / "CONTRACT-ADDITIONS.md").read_text()  # exercise 4, beside CONTRACT.md
    t = int(re.search(r"at T = (\d+) \(`d_k", contract)[1])
    mib = int(re.search(r"T x T float64 matrix\s+\((\d+) MiB\)", contract)[1])
    assert BLOCKWISE_MEMORY_T == t
    assert BLOCKWISE_MEMORY == t * t * np.dtype(np.float64).itemsize // 4 == mib * 2**20
    # and the student reads it as the contract writes it, in whole MiB ("8", not "8.0")
    over = MemoryUse(traced=BLOCKWISE_MEMORY + 1, resident=None)
    said = (rf"the limit is {mib} MiB, a quarter of one {t} x {t} float64 matrix "
            rf"\({4 * mib} MiB\)")
    with pytest.raises(Mismatch, match=said):
        test_ex4._expect_small(over, f"at T = {t}", "a hint")


class _Answers:
    """Stands in for the sandboxed student: `value(name)` gives the answers, graded on the
    lesson's own numbers (the default variant)."""

    variant = DEFAULT

    def __init__(self, **values):
        self.values = values

    def value(self, name):
        return self.values[name]


def test_weights_carry_the_students_own_scores_rounding_forward():
    # Exercise 1's weights judged against the softmax of the student's own (wrong) scores:
    # softmax(1, 0) = (0.731059, 0.268941), truncated to three decimals, is 0.94e-3 off
    own = _Answers(ex1_scores=(1.0, 0.0), ex1_weights=(0.731, 0.268))
    test_ex1.test_weights(own)
    # 1.8e-3 off the softmax of their scores: more than both roundings together
    off = _Answers(ex1_scores=(1.0, 0.0), ex1_weights=(0.7292, 0.2707))
    with pytest.raises(Mismatch, match="not the softmax of your ex1_scores"):
        test_ex1.test_weights(off)


def test_carried_forward_weights_allow_the_rounding_of_both_steps():
    # d_k = 6, q.k1 = 4, q.k2 = -1. Scaling by 1/d_k (a slip) gives the scores 0.6667 and
    # -0.1667, written truncated as 0.666 and -0.166; the weights of the unrounded scores,
    # truncated, are 0.697 and 0.302: 1.22e-3 from the softmax of the written scores, more
    # than one rounding (HAND) and within both (CARRIED_FORWARD).
    numbers = Ex1Numbers(q=(1, 1, 1, 1, 0, 0), k1=(1, 1, 1, 1, 0, 0), k2=(-1, 0, 0, 0, 0, 0),
                         v1=(1, 0), v2=(0, 1), d_k=6)
    student = _Answers(ex1_scores=(0.666, -0.166), ex1_weights=(0.697, 0.302))
    student.variant = dataclasses.replace(DEFAULT, ex1=numbers)
    test_ex1.test_weights(student)

def test_hand_numbers_are_judged_to_three_decimals():
    test_ex1.test_scores(_Answers(ex1_scores=(0.707, 0.0)))  # truncated: 0.1e-3 off
    test_ex1.test_scores(_Answers(ex1_scores=(0.7062, 0.0)))  # 0.91e-3 off
    with pytest.raises(Mismatch, match="three decimals"):
        test_ex1.test_scores(_Answers(ex1_scores=(0.7060, 0.0)))  # 1.11e-3 off


def test_one_unit_of_the_third_decimal_is_within_hand_whatever_its_binary_rounding():
    # CONTRACT section 1: hand numbers are accepted within +-0.001, and in binary
    # 0.5 - 0.499 is 0.0010000000000000009: a decimal unit off must not fail on that.
    for exact, written in ((0.5, 0.499), (0.25, 0.251), (1.0, 0.999), (0.0, -0.001)):
        assert abs(written - exact) <= HAND
    assert abs(0.4989 - 0.5) > HAND


def test_fewer_decimals_is_only_an_answer_written_with_fewer_decimals_than_asked():
    from autograder.compare import fewer_decimals

    assert fewer_decimals([0.71, 0.0], [0.7071, 0.0])  # two decimals of 0.7071
    assert fewer_decimals([0.7], [0.7071])  # cut, within one unit of the second decimal
    assert not fewer_decimals([0.707], [0.7071])  # three decimals: as asked, just wrong
    assert not fewer_decimals([0.7071], [0.7071])
    assert not fewer_decimals([0.69], [0.7071])  # two decimals, off by more than a unit
    assert not fewer_decimals([0.71], [0.7071, 0.0])  # another shape
    assert not fewer_decimals([0.71], [0.7071, 0.7071])  # another shape, broadcast: still not
    assert not fewer_decimals([[0.71], [0.71]], [0.7071, 0.7071])


def test_fewer_figures_is_only_a_number_written_with_fewer_significant_figures_than_asked():
    from autograder.compare import fewer_figures

    assert fewer_figures(0.73, 0.7312) and fewer_figures(0.00034, 0.0003352)  # rounded
    assert fewer_figures(0.73, 0.7399)  # cut, within one unit of the second figure
    assert fewer_figures(-0.73, -0.7312)  # a negative one alike
    assert not fewer_figures(0.731, 0.7312)  # three figures: as asked, just wrong
    assert not fewer_figures(0.71, 0.7312)  # two figures, off by more than a unit
    assert not fewer_figures(0.0, 0.0)  # a zero has no figures to count: right, not fewer
    assert not fewer_figures(float("nan"), 0.73) and not fewer_figures(0.73, float("inf"))


def test_memory_in_a_message_is_mib_rounded_up_to_a_power_of_two():
    """`mib_seen`: whole MiB, rounded up (a byte over is the next MiB), at least 1, then up
    to the next power of two, so that a call cannot spell a number in the size it allocates
    (the four arithmetic mutants of its two lines left it saying other sizes)."""
    MiB = 2**20
    said = {0: 1, 1: 1, MiB - 1: 1, MiB: 1, MiB + 1: 2, 2 * MiB: 2, 2 * MiB + 1: 4,
            3 * MiB: 4, 4 * MiB: 4, 5 * MiB - 1: 8, 8 * MiB: 8, 8 * MiB + 1: 16,
            33 * MiB: 64, 96 * MiB: 128, 2**40: 2**20}
    assert {nbytes: mib_seen(nbytes) for nbytes in said} == said
