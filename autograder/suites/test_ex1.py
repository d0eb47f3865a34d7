"""Exercise 1: attention by hand, one query and two keys, with the student's own numbers.

The numbers are the student's variant's (`student.variant.ex1`; by default the lesson's
q = (1, 0), k1 = (1, 0), k2 = (0, 1), v1 = (1, 0), v2 = (0, 1), d_k = 2): small integers, so
hand arithmetic rounded or truncated to three decimals earns full marks (0.707, 0.670 or
0.669, 0.330 for the lesson's). Error carried forward, as an exam marker gives the later
steps: the weights also earn their point when they are the softmax of the student's own
scores and those scores are a catalogued slip on the student's own dot products (unscaled, or
scaled by d_k, sqrt(d_k) or 1/d_k); the output when it is the weighted sum of the student's
own values with the student's own weights, if those weights are a distribution (two numbers
in [0, 1] that sum to 1, to the rounding of two hand numbers) or the catalogued slip of never
normalising (exp of the student's own scores). Scores that are no slip of the student's own
problem (a classmate's numbers, say) carry nothing forward, nor do weights that are neither
(all zeros would otherwise earn the output's point as their own weighted sum).
"""

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import CARRIED_FORWARD, HAND, Mismatch, as_pair, fewer_decimals
from autograder.diagnoses.ex1 import scale_slips
from autograder.sandbox import StudentError
from autograder.variants import root_text

pytestmark = pytest.mark.ex1

_PAIR_HINT = "write the two numbers, one per key, e.g. (0.5, 0.5)"
_TWO_DECIMALS = ("right to two decimals only: give three (rounded or cut), as the exercise "
                 "asks")


def _pair(student, name):
    return as_pair(student.value(name), name, hint=_PAIR_HINT)


def _own(student, name):
    """The student's earlier answer, or None when it cannot be read: no credit carried."""
    try:
        return _pair(student, name)
    except (Mismatch, StudentError):
        return None


def _near(pair, expected, tolerance) -> bool:
    if pair is None or expected is None:
        return False
    with np.errstate(all="ignore"):  # a student's inf or NaN is simply not near
        return bool(np.all(np.abs(pair - expected) <= tolerance))


def _own_slip(scores, numbers) -> bool:
    """The scores are the student's own dot products, scaled right or by a catalogued
    wrong factor: a slip on their own problem, whose later steps deserve credit."""
    return any(_near(scores, numbers.raw * factor, HAND)
               for factor in (numbers.scale, *scale_slips(numbers.d_k)))


@pytest.mark.points(1)
def test_scores(student):
    numbers = student.variant.ex1
    scores, expected = _pair(student, "ex1_scores"), numbers.expected()["ex1_scores"]
    if not _near(scores, expected, HAND):
        raise Mismatch("ex1_scores is wrong to three decimals",
                       _TWO_DECIMALS if fewer_decimals(scores, expected) else
                       f"each score is q·k_i divided by sqrt(d_k) = {root_text(numbers.d_k)}")


@pytest.mark.points(1)
def test_weights(student):
    numbers = student.variant.ex1
    weights = _pair(student, "ex1_weights")
    if _near(weights, numbers.expected()["ex1_weights"], HAND):
        return
    scores = _own(student, "ex1_scores")
    if (scores is not None and _own_slip(scores, numbers)
            and _near(weights, sdpa_ref.softmax(scores), CARRIED_FORWARD)):
        return  # the softmax of the student's own scores: the step itself is right
    if fewer_decimals(weights, numbers.expected()["ex1_weights"]):
        raise Mismatch("ex1_weights is wrong to three decimals", _TWO_DECIMALS)
    raise Mismatch("ex1_weights is not the softmax of your ex1_scores",
                   "the weights are exp(s_i) / (exp(s_1) + exp(s_2)), and sum to 1")


def _carries_forward(weights, scores, numbers) -> bool:
    """The student's weights are a step whose weighted sum deserves the output's point: a
    distribution (each weight in [0, 1], the two summing to 1 within two hand roundings), or
    exp of the student's own scores never divided by their sum (`not-normalized`, which costs
    the weights' point, not the output's too)."""
    if weights is None:
        return False
    with np.errstate(all="ignore"):  # a student's inf or NaN is simply no distribution
        distribution = bool(np.all((weights >= 0) & (weights <= 1))
                            and abs(weights.sum() - 1) <= 2 * HAND)
        exps = None if scores is None else np.exp(scores)  # (2,)
        # exp(s_i) rounded (HAND), from a score rounded (HAND, times exp's slope exp(s_i))
        unnormalised = (exps is not None and bool(np.all(np.isfinite(exps)))
                        and _own_slip(scores, numbers) and _near(weights, exps, HAND * (1 + exps)))
    return distribution or unnormalised


@pytest.mark.points(1)
def test_output(student):
    numbers = student.variant.ex1
    output, expected = _pair(student, "ex1_output"), numbers.expected()["ex1_output"]
    if _near(output, expected, HAND):
        return
    weights = _own(student, "ex1_weights")
    carries = _carries_forward(weights, _own(student, "ex1_scores"), numbers)
    if carries:
        with np.errstate(all="ignore"):
            carried = weights @ numbers.values  # (2,) @ (2, d_v) -> (d_v,)
        # the weighted sum of the student's own weights, each rounded on its own
        if _near(output, carried, 2 * HAND):
            return
    if fewer_decimals(output, expected):
        raise Mismatch("ex1_output is wrong to three decimals", _TWO_DECIMALS)
    if not carries:
        raise Mismatch("ex1_output is wrong to three decimals",
                       "the output is w1 * v1 + w2 * v2 with the softmax weights, which lie "
                       "between 0 and 1 and sum to 1")
    raise Mismatch("ex1_output is not the weighted sum of the values with your ex1_weights",
                   "the output is w1 * v1 + w2 * v2, a vector of the values' size")
