"""Behaviour of the diagnoses that only a mutant showed no test held (docs/mutation-score.md):
each test here kills a mutant that survived the suite, on inputs whose sizes all differ, so
that no size can stand in for another."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_weights_of_the_wrong_shape_beside_the_right_out_are_a_wrong_shape():
    """ex3.py `shapes_ok`: attn must be (n, m) too (`==` -> `is not` checked out's shape
    alone, and weights missing a key were called not normalised, an extra axis nothing)."""
    from autograder.diagnoses import ex3
    from tests.test_scoring_gaps import Student

    source = """
def attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    attn = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attn = attn / attn.sum(axis=-1, keepdims=True)
    return attn @ V, ATTN
"""
    for attn in ("attn[:, :-1]", "attn[None]"):  # (n, m - 1), (1, n, m)
        assert ex3.diagnose(Student(source.replace("ATTN", attn))) == {"wrong-shape"}, attn


def test_each_named_scale_option_multiplies_the_scores_by_what_its_name_says():
    """misconceptions.py `named_factors` (`1 / math.sqrt(n)` -> `1 * ...`, and the same for
    m, left the option's name and its factor apart: the fitted factor still called the
    slip wrong-scale, but a named option is the one meant to explain it first)."""
    from autograder.diagnoses.misconceptions import SCALES, named_factors

    n, m, d_k, d_v = 3, 5, 4, 2
    expected = {"1/sqrt(d_k)": 0.5, "none": 1.0, "1/d_k": 0.25, "1/sqrt(d_v)": 2 ** -0.5,
                "sqrt(d_k)": 2.0, "1/sqrt(n)": 3 ** -0.5, "1/sqrt(m)": 5 ** -0.5}
    assert set(expected) == set(SCALES) - {"other factor"}
    assert named_factors(n, m, d_k, d_v) == pytest.approx(expected, rel=1e-12)


def test_each_blockwise_model_scale_divides_the_scores_as_its_name_says():
    """ex4.py `blockwise_model`'s scales, the right steps otherwise: attention with that
    factor (`"d_k": 1 / d_k` -> `1 * d_k` multiplied by d_k)."""
    from autograder.diagnoses.ex4 import blockwise_model

    factors = {"sqrt(d_k)": 0.5, "none": 1.0, "d_k": 0.25, "sqrt(d_v)": 2 ** -0.5,
               "times sqrt(d_k)": 2.0, "sqrt(m)": 5 ** -0.5}  # d_k = 4, d_v = 2, m = 5
    for scale, factor in factors.items():
        np.testing.assert_allclose(blockwise_model(Q, K, V, 2, scale=scale),
                                   sdpa_ref.attention(Q, K, V, scale=factor)[0],
                                   rtol=1e-12, atol=1e-12, err_msg=scale)


def test_a_student_process_that_gives_up_while_probed_gets_no_codes_not_a_kit_error():
    """diagnoses `_probe`: a StudentError outside a probe's guarded calls (the process gone
    when asked whether a name exists) means no codes (`except StudentError` replaced by
    another exception let it through, and the kit failed the submission)."""
    from autograder.diagnoses import PROBES, _probe
    from autograder.sandbox.errors import StudentDied
    from autograder.variants import DEFAULT

    class GaveUp:
        """A `Student` whose process is gone: each question to it raises."""

        variant = DEFAULT

        def __getattr__(self, name):
            def gone(*args, **kwargs):
                raise StudentDied("the process ended (signal 9)")
            return gone

    for key in PROBES:
        assert _probe(key, GaveUp()) == set(), key


def test_one_answer_kept_and_returned_for_new_inputs_is_stateful_when_some_keys_get_nothing():
    """ex3.py `_valid`: an answer is an attention result when every query's row of weights
    has some weight (`axis=-1` -> `~1` summed the keys' columns instead, and an answer
    kept from the first call and returned for new inputs went unnoticed when a key got no
    weight: here every query weighs only the first key)."""
    from autograder.diagnoses import ex3
    from tests.test_scoring_gaps import Student

    source = """
KEPT = {}
def attention(Q, K, V, mask=None):
    shapes = (Q.shape, K.shape, V.shape)
    if shapes not in KEPT:  # worked out once for each shape, then returned for any inputs
        attn = np.zeros((Q.shape[0], K.shape[0]))
        attn[:, 0] = 1.0
        KEPT[shapes] = (attn @ V, attn)
    return KEPT[shapes]
"""
    assert "stateful" in ex3.diagnose(Student(source))
