"""Exercise 1: attention by hand, one query and two keys, d_k = 2.

The numbers are the lesson's, so hand arithmetic rounded or truncated to three decimals earns
full marks (0.707, 0.670 or 0.669, 0.330). Error carried forward: the weights also earn their
point when they are the softmax of the student's own scores, and the output when it is the
weighted sum of the student's own weights, as an exam marker would give the later steps.
"""

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import CARRIED_FORWARD, HAND, Mismatch, as_pair
from autograder.sandbox import StudentError

pytestmark = pytest.mark.ex1

q = np.array([[1.0, 0.0]])  # (1, d_k)
K = np.array([[1.0, 0.0], [0.0, 1.0]])  # (2, d_k): k1, k2
V = np.array([[1.0, 0.0], [0.0, 1.0]])  # (2, d_v): v1, v2

_PAIR_HINT = "write the two numbers, one per key, e.g. (0.5, 0.5)"


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


@pytest.mark.points(1)
def test_scores(student):
    scores = q @ K.T / np.sqrt(2)  # (1, d_k) @ (d_k, 2) -> (1, 2)
    if not _near(_pair(student, "ex1_scores"), scores[0], HAND):
        raise Mismatch("ex1_scores is wrong to three decimals",
                       "each score is q·k_i divided by sqrt(d_k) = sqrt(2)")


@pytest.mark.points(1)
def test_weights(student):
    weights = _pair(student, "ex1_weights")
    _, attn = sdpa_ref.attention(q, K, V)  # attn (1, 2)
    if _near(weights, attn[0], HAND):
        return
    scores = _own(student, "ex1_scores")
    if scores is not None and _near(weights, sdpa_ref.softmax(scores), CARRIED_FORWARD):
        return  # the softmax of the student's own scores: the step itself is right
    raise Mismatch("ex1_weights is not the softmax of your ex1_scores",
                   "the weights are exp(s_i) / (exp(s_1) + exp(s_2)), and sum to 1")


@pytest.mark.points(1)
def test_output(student):
    output = _pair(student, "ex1_output")
    out, _ = sdpa_ref.attention(q, K, V)  # out (1, d_v)
    if _near(output, out[0], HAND):
        return
    weights = _own(student, "ex1_weights")
    with np.errstate(all="ignore"):
        carried = None if weights is None else weights @ V  # (2,) @ (2, d_v) -> (d_v,)
    if _near(output, carried, 2 * HAND):
        return  # the weighted sum of the student's own weights, each rounded on its own
    raise Mismatch("ex1_output is not the weighted sum of the values with your ex1_weights",
                   "the output is w1 * v1 + w2 * v2, a vector of the values' size")
