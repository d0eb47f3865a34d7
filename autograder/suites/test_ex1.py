"""Exercise 1: attention by hand, one query and two keys, d_k = 2.

The numbers are the lesson's, so the student's hand arithmetic rounded to three decimals
earns full marks (0.707, 0.670, 0.330).
"""

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import THREE_DECIMALS, as_array, expect_close, expect_shape

pytestmark = pytest.mark.ex1

q = np.array([[1.0, 0.0]])  # (1, d_k)
K = np.array([[1.0, 0.0], [0.0, 1.0]])  # (2, d_k): k1, k2
V = np.array([[1.0, 0.0], [0.0, 1.0]])  # (2, d_v): v1, v2


def _pair(student, name):
    pair = as_array(student.value(name), name)
    expect_shape(pair, (2,), name, hint="write the two numbers, one per key, e.g. (0.5, 0.5)")
    return pair


@pytest.mark.points(1)
def test_scores(student):
    scores = q @ K.T / np.sqrt(2)  # (1, 2)
    expect_close(_pair(student, "ex1_scores"), scores[0], "ex1_scores", rtol=0,
                 atol=THREE_DECIMALS, hint="each score is q·k_i divided by sqrt(d_k) = sqrt(2)")


@pytest.mark.points(1)
def test_weights(student):
    _, attn = sdpa_ref.attention(q, K, V)  # attn (1, 2)
    expect_close(_pair(student, "ex1_weights"), attn[0], "ex1_weights", rtol=0,
                 atol=THREE_DECIMALS,
                 hint="the weights are the softmax of the scaled scores, and sum to 1")


@pytest.mark.points(1)
def test_output(student):
    out, _ = sdpa_ref.attention(q, K, V)  # out (1, d_v)
    expect_close(_pair(student, "ex1_output"), out[0], "ex1_output", rtol=0,
                 atol=THREE_DECIMALS,
                 hint="the output is w1 * v1 + w2 * v2, a vector of the values' size")
