"""Behaviour of the diagnoses that only a mutant showed no test held (docs/mutation-score.md):
each test here kills a mutant that survived the suite, on inputs whose sizes all differ, so
that no size can stand in for another."""

from __future__ import annotations

import numpy as np

import sdpa_ref
from autograder.diagnoses.ex3 import catalogued_weights

RNG = np.random.default_rng(28)
# n queries, m keys, d_k, d_v: four different sizes.
Q = RNG.standard_normal((3, 4))  # (n, d_k)
K = RNG.standard_normal((5, 4))  # (m, d_k)
V = RNG.standard_normal((5, 2))  # (m, d_v)


def test_right_weights_beside_an_out_of_shape_n_by_d_v_are_a_slip_of_the_last_step():
    """ex3.py:333: out's shape is (n, d_v), d_v being V's second size; read as V's first (m),
    the slip below would be called no attention at all, and an out of the keys' size (n, m)
    a slip."""
    out, attn = sdpa_ref.attention(Q, K, V)  # (3, 2), (3, 5)
    for pair in ((2 * out, attn), (attn, 2 * out), (2 * out.T, attn)):
        assert catalogued_weights(pair, Q, K, V)
    assert not catalogued_weights((attn, attn), Q, K, V)  # out of shape (n, m), not (n, d_v)
    assert catalogued_weights((attn, attn), Q, K, V, any_out_shape=True)


def test_an_answer_holding_nan_that_repeats_itself_is_not_called_stateful():
    """ex3.py `_same_answer`: the same answer twice is the same answer when it holds NaN
    (`equal_nan=True` -> `False` called every such answer stateful)."""
    from autograder.diagnoses import ex3
    from tests.test_scoring_gaps import Student

    source = """
def attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    attn = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attn = attn / attn.sum(axis=-1, keepdims=True)
    out = attn @ V
    out[0] = np.nan  # the same slip at every call
    return out, attn
"""
    assert "stateful" not in ex3.diagnose(Student(source))
    counted = "CALLS = []\n" + source.replace(  # a state kept between calls
        "out[0] = np.nan  # the same slip at every call",
        "out[0] = np.nan\n    CALLS.append(1)\n    out = out + len(CALLS)")
    assert "stateful" in ex3.diagnose(Student(counted))
