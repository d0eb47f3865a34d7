"""The notebook's public self-checks catch the usual mistakes, with a message that says which.

Each test runs the notebook's setup cell and one self-check cell in a fresh namespace holding a
deliberately wrong (or right) answer, and reads what the self-check prints.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder.variants import DEFAULT
from sdpa_course.course.notebooks import source_notebook_path
from tests.variant_sample import in_notebook

REPO = Path(__file__).resolve().parents[1]
CLEAN = "these quick checks pass. More tests run when your work is graded."


@pytest.fixture(scope="module")
def cells() -> dict[str, str]:
    nb = nbformat.read(source_notebook_path(REPO), as_version=4)
    return {cell.id: cell.source for cell in nb.cells}


def run_self_check(cells, grade_id: str, variant=DEFAULT, **student) -> str:
    """What the self-check cell `grade_id` prints for a student namespace (after the
    notebook's setup and *Your numbers* cells, for `variant`'s student)."""
    namespace = in_notebook(cells, variant)
    namespace.update(student)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(cells[grade_id], namespace)
    return buffer.getvalue()


# Student answers, right and wrong, written the way students write them.

def good_softmax(z):
    z = np.asarray(z, dtype=float)  # (..., m)
    e = np.exp(z - z.max(axis=-1, keepdims=True))  # (..., m)
    return e / e.sum(axis=-1, keepdims=True)  # (..., m)


def softmax_over_queries(z):
    z = np.asarray(z, dtype=float)  # (..., m)
    e = np.exp(z - z.max())  # (..., m)
    return e / e.sum(axis=0, keepdims=True)  # (..., m): normalised down the columns


def unstable_softmax(z):
    e = np.exp(np.asarray(z, dtype=float))  # (..., m): overflows for large scores
    return e / e.sum(axis=-1, keepdims=True)  # (..., m)


def softmax_in_place(z):
    z -= z.max(axis=-1, keepdims=True)  # (..., m): changes the caller's array
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


def attention_factory(*, scale="sqrt", transpose=False, swap=False, mask_mode="neg_inf",
                      normalise_axis=-1, mutate=False):
    """attention(Q, K, V, mask) with one chosen mistake."""

    def attention(Q, K, V, mask=None):
        d_k = Q.shape[-1]
        factor = {"sqrt": np.sqrt(d_k), "none": 1.0, "d_k": d_k,
                  "n": np.sqrt(Q.shape[0]), "m": np.sqrt(len(K))}[scale]
        if mutate:
            Q /= factor  # (n, d_k): in place, the caller's Q changes
            scores = Q @ K.T  # (n, m)
        elif transpose:
            scores = (K @ Q.T / factor).T  # (n, m), transposed back below
        else:
            scores = Q @ K.T / factor  # (n, m)
        if mask is not None and mask_mode == "neg_inf":
            scores = np.where(mask, -np.inf, scores)  # (n, m)
        if mask is not None and mask_mode == "inverted":
            scores = np.where(mask, scores, -np.inf)  # (n, m): keeps only the masked entries
        if mask is not None and mask_mode == "zero":
            scores = np.where(mask, 0.0, scores)  # (n, m)
        with np.errstate(invalid="ignore"):  # a fully masked row is NaN, as a student's would be
            e = np.exp(scores - scores.max(axis=normalise_axis, keepdims=True))  # (n, m)
            attn = e / e.sum(axis=normalise_axis, keepdims=True)  # (n, m)
        if mask is not None and mask_mode == "after_softmax":
            attn = np.where(mask, 0.0, attn)  # (n, m): rows no longer sum to 1
        out = attn @ V  # (n, d_v)
        if transpose:
            attn = attn.T  # (m, n): reported the wrong way round
        return (attn, out) if swap else (out, attn)

    return attention


def not_written(*args, **kwargs):
    raise NotImplementedError("Exercise 3: write attention() here")


# --- Exercise 1 --------------------------------------------------------------------------------

def test_ex1_accepts_hand_arithmetic_rounded_to_three_decimals(cells):
    said = run_self_check(cells, "ex1_selfcheck", ex1_scores=(0.707, 0.0),
                          ex1_weights=(0.670, 0.330), ex1_output=[0.670, 0.330])
    assert CLEAN in said


def test_ex1_reports_an_unanswered_stub(cells):
    said = run_self_check(cells, "ex1_selfcheck", ex1_scores=..., ex1_weights=...,
                          ex1_output=...)
    assert "ex1_scores is still `...`: not answered yet" in said


def test_ex1_spots_unscaled_scores(cells):
    weights = good_softmax(np.array([1.0, 0.0]))  # (2,)
    said = run_self_check(cells, "ex1_selfcheck", ex1_scores=(1.0, 0.0), ex1_weights=weights,
                          ex1_output=weights)
    assert "divide them by sqrt(d_k)" in said and CLEAN not in said


def test_ex1_spots_weights_that_do_not_sum_to_one(cells):
    said = run_self_check(cells, "ex1_selfcheck", ex1_scores=(0.707, 0.0),
                          ex1_weights=(2.03, 1.0), ex1_output=(2.03, 1.0))
    assert "your weights sum to 3.030" in said


def test_ex1_spots_a_wrong_shape(cells):
    said = run_self_check(cells, "ex1_selfcheck", ex1_scores=(0.707, 0.0, 1.0),
                          ex1_weights=(0.670, 0.330), ex1_output=(0.670, 0.330))
    assert "ex1_scores should be two numbers" in said


def test_ex1_says_that_numbers_in_quotes_are_not_numbers(cells):
    """The grader reads no text: the self-check must not pass what it fails (fair4)."""
    said = run_self_check(cells, "ex1_selfcheck", ex1_scores=("0.707", "0"),
                          ex1_weights=("0.670", "0.330"), ex1_output=("0.670", "0.330"))
    assert "ex1_scores holds text: write the numbers themselves, without quotes" in said
    assert CLEAN not in said


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_self_checks_say_when_an_answer_is_of_a_type_the_grader_cannot_read(cells):
    """np.matrix, Fraction, Decimal, a namedtuple: the grader's sandbox returns plain types
    only (unsupported-type), so the self-checks must not pass them (fair4)."""
    from collections import namedtuple
    from decimal import Decimal
    from fractions import Fraction

    said = run_self_check(cells, "ex1_selfcheck", ex1_scores=np.matrix([[0.707, 0.0]]),
                          ex1_weights=(Decimal("0.670"), Decimal("0.330")),
                          ex1_output=(0.670, 0.330))
    assert "ex1_scores holds a numpy.matrix, which the grader cannot read" in said
    said = run_self_check(cells, "ex2_selfcheck_numbers", softmax=good_softmax,
                          p_unscaled=Fraction(9997, 10000), p_scaled=0.731,
                          grad_unscaled=0.000335, grad_scaled=0.197)
    assert "p_unscaled holds a fractions.Fraction, which the grader cannot read" in said
    pair = namedtuple("Pair", "out attn")
    right = attention_factory()
    said = run_self_check(cells, "ex3_selfcheck_attention", softmax=good_softmax,
                          attention=lambda *args, **kwargs: pair(*right(*args, **kwargs)))
    assert "which the grader cannot read" in said and CLEAN not in said
    for plain in ((0.707, 0.0), [np.float32(0.707), np.int64(0)], np.array([0.707, 0.0])):
        said = run_self_check(cells, "ex1_selfcheck", ex1_scores=plain,
                              ex1_weights=(0.670, 0.330), ex1_output=(0.670, 0.330))
        assert CLEAN in said, plain


def test_ex1_asks_for_three_decimals_when_two_are_given(cells):
    said = run_self_check(cells, "ex1_selfcheck", ex1_scores=(0.71, 0.0),
                          ex1_weights=(0.670, 0.330), ex1_output=(0.670, 0.330))
    assert "ex1_scores is right to two decimals only: give three" in said
    assert CLEAN not in said


# --- Exercise 2 --------------------------------------------------------------------------------

def test_ex2_softmax_passes_a_correct_softmax(cells):
    assert CLEAN in run_self_check(cells, "ex2_selfcheck_softmax", softmax=good_softmax)


def test_ex2_softmax_reports_the_release_stub(cells):
    def softmax(z):
        raise NotImplementedError("Exercise 2: write softmax() here")

    said = run_self_check(cells, "ex2_selfcheck_softmax", softmax=softmax)
    assert "softmax is not written yet (Exercise 2: write softmax() here)" in said


def test_ex2_softmax_says_when_the_columns_sum_to_one_instead_of_the_rows(cells):
    said = run_self_check(cells, "ex2_selfcheck_softmax", softmax=softmax_over_queries)
    assert "each column of your softmax sums to 1 instead of each row" in said
    assert "right axis" in said


def test_ex2_softmax_spots_overflow(cells):
    said = run_self_check(cells, "ex2_selfcheck_softmax", softmax=unstable_softmax)
    assert "exp overflowed" in said


def test_ex2_softmax_spots_a_modified_input(cells):
    said = run_self_check(cells, "ex2_selfcheck_softmax", softmax=softmax_in_place)
    assert "changed its input array" in said


def numbers(p_unscaled, p_scaled, gradient=lambda w: w * (1 - w)):
    return dict(softmax=good_softmax, p_unscaled=p_unscaled, p_scaled=p_scaled,
                grad_unscaled=gradient(1 - p_unscaled), grad_scaled=gradient(1 - p_scaled))


def lesson_weight(gap: float) -> float:
    return float(good_softmax(np.array([gap, 0.0]))[0])


def test_ex2_numbers_pass_when_right(cells):
    said = run_self_check(cells, "ex2_selfcheck_numbers",
                          **numbers(lesson_weight(8.0), lesson_weight(1.0)))
    assert CLEAN in said


def test_ex2_numbers_report_the_release_stub(cells):
    said = run_self_check(cells, "ex2_selfcheck_numbers", softmax=good_softmax, p_unscaled=...,
                          p_scaled=..., grad_unscaled=..., grad_scaled=...)
    assert "p_unscaled is still `...`: not answered yet" in said


def test_ex2_numbers_spot_the_smaller_keys_weight(cells):
    said = run_self_check(cells, "ex2_selfcheck_numbers",
                          **numbers(1 - lesson_weight(8.0), 1 - lesson_weight(1.0)))
    assert "p_unscaled is the smaller key's weight" in said
    assert "p_scaled is the smaller key's weight" in said


def test_ex2_numbers_spot_a_missing_scale(cells):
    said = run_self_check(cells, "ex2_selfcheck_numbers",
                          **numbers(lesson_weight(8.0), lesson_weight(8.0)))
    assert "divide the scores by sqrt(d_k) = 8" in said


def test_ex2_numbers_spot_a_wrong_gradient_without_revealing_it(cells):
    said = run_self_check(cells, "ex2_selfcheck_numbers",
                          **numbers(lesson_weight(8.0), lesson_weight(1.0),
                                    gradient=lambda w: w * w))
    assert "does not match a finite-difference estimate" in said
    assert "0.19" not in said and "3.35" not in said


def test_ex2_numbers_say_that_numbers_in_quotes_are_not_numbers(cells):
    said = run_self_check(cells, "ex2_selfcheck_numbers", softmax=good_softmax,
                          p_unscaled="0.9997", p_scaled="0.731", grad_unscaled="0.000335",
                          grad_scaled="0.197")
    assert "p_unscaled holds text: write the number itself, without quotes" in said


def test_ex2_numbers_ask_for_three_figures_when_two_are_given(cells):
    """0.73 and 0.20 are right to two figures: the self-check says so, not that the scale
    or the derivative is wrong (fair4)."""
    said = run_self_check(cells, "ex2_selfcheck_numbers", softmax=good_softmax,
                          p_unscaled=1.0, p_scaled=0.73, grad_unscaled=0.00034,
                          grad_scaled=0.20)
    assert "p_scaled = 0.73 is right to two significant figures only: give three" in said
    assert "grad_scaled = 0.2 is right to two significant figures only" in said
    assert "sqrt(d_k)" not in said and "approximately" not in said


def test_ex2_numbers_spot_a_negative_gradient(cells):
    said = run_self_check(cells, "ex2_selfcheck_numbers",
                          **numbers(lesson_weight(8.0), lesson_weight(1.0),
                                    gradient=lambda w: -w * (1 - w)))
    assert "the derivative is positive" in said


# --- Exercise 3 --------------------------------------------------------------------------------

def good_causal_mask(T):
    return np.triu(np.ones((T, T), dtype=bool), k=1)  # (T, T)


@pytest.mark.parametrize("mistake, message", [
    (dict(), CLEAN),
    (dict(transpose=True), "your weights are transposed"),
    (dict(swap=True), "return (out, attn)"),
    (dict(scale="none"), "the unscaled value: divide the scores by sqrt(d_k)"),
    (dict(scale="d_k"), "Check the scale 1 / sqrt(d_k)"),
    (dict(scale="n"), "Check the scale 1 / sqrt(d_k)"),  # d_k = Q.shape[0]: wrong-scale
    (dict(scale="m"), "Check the scale 1 / sqrt(d_k)"),  # d_k = len(K): wrong-scale
    (dict(normalise_axis=0), "did you normalise over the right axis?"),
    (dict(mask_mode="ignored"), "the mask has no effect"),
    (dict(mask_mode="zero"), "set masked scores to -inf"),
    (dict(mask_mode="inverted"), "your mask works backwards"),
    (dict(mask_mode="after_softmax"), "mask the scores before the softmax"),
    (dict(mutate=True), "attention modified Q, K or V"),
])
def test_ex3_attention_self_check_names_the_mistake(cells, mistake, message):
    said = run_self_check(cells, "ex3_selfcheck_attention", softmax=good_softmax,
                          attention=attention_factory(**mistake))
    assert message in said, said
    if mistake:
        assert CLEAN not in said


def test_ex3_attention_gives_a_shape_hint_when_the_matrix_product_fails(cells):
    def attention(Q, K, V, mask=None):
        attn = good_softmax(K @ Q.T / np.sqrt(Q.shape[-1]))  # (m, n)
        return attn @ V, attn  # (m, n) @ (m, d_v) fails when n != m

    said = run_self_check(cells, "ex3_selfcheck_attention", attention=attention)
    assert "Check the shapes, with n = 3 queries and m = 5 keys: Q K^T is (n, m)" in said


def test_ex3_attention_reports_the_release_stub(cells):
    said = run_self_check(cells, "ex3_selfcheck_attention", attention=not_written)
    assert "attention is not written yet (Exercise 3: write attention() here)" in said


def test_ex3_attention_reports_a_crash_without_a_mask(cells):
    def attention(Q, K, V, mask=None):
        return attention_factory()(Q, K, V, mask=mask.copy())  # None has no .copy()

    said = run_self_check(cells, "ex3_selfcheck_attention", attention=attention)
    assert "with mask=None raised" in said


@pytest.mark.parametrize("causal_mask, message", [
    (good_causal_mask, CLEAN),
    (lambda T: np.triu(np.ones((T, T), dtype=bool)), "covers the diagonal"),
    (lambda T: np.tril(np.ones((T, T), dtype=bool), k=-1), "covers the past"),
    (lambda T: np.triu(np.ones((T, T), dtype=int), k=1), "dtype bool"),
    (lambda T: np.zeros((T, T), dtype=bool), "above the diagonal (the future) should be True"),
    (lambda T: np.ones((T, T + 1), dtype=bool), "should have shape (4, 4)"),
])
def test_ex3_causal_mask_self_check_names_the_mistake(cells, causal_mask, message):
    said = run_self_check(cells, "ex3_selfcheck_causal_mask", causal_mask=causal_mask)
    assert message in said, said


def good_rows_check(attn):
    return np.allclose(attn.sum(axis=-1), 1.0)


def good_future_check(attn):
    return bool(np.all(np.triu(attn, k=1) == 0))


@pytest.mark.parametrize("checks, message", [
    (dict(), CLEAN),
    (dict(rows_sum_to_one=lambda a: bool(np.all(a.sum(axis=-1) == 1))),
     "only up to rounding: compare with a tolerance"),
    (dict(rows_sum_to_one=lambda a: bool(np.all(np.abs(a.sum(axis=-1) - 1) < 1e-12))),
     "only up to rounding: compare with a tolerance"),
    (dict(rows_sum_to_one=lambda a: np.allclose(a.sum(axis=0), 1.0)),
     "rows_sum_to_one returned False for a correct float64 causal attention matrix. A correct"),
    (dict(rows_sum_to_one=lambda a: bool(np.all(np.abs(a.sum(axis=-1) - 1) < 0.05))),
     "rows_sum_to_one returned True for a matrix whose row 2 sums to 0.995"),
    (dict(rows_sum_to_one=lambda a: not np.any(np.abs(a.sum(axis=-1) - 1) > 1e-5)),
     "rows_sum_to_one returned True for a matrix whose first row is NaN"),
    (dict(rows_sum_to_one=lambda a: np.isclose(a.sum(axis=-1), 1.0)),
     "returned ndarray, not True or False"),
    (dict(future_is_zero=lambda a: bool(np.all(np.tril(a, k=-1) == 0))),
     "It looks below the diagonal"),
    (dict(future_is_zero=lambda a: bool(np.all(np.triu(a) == 0))), "It wants a zero diagonal"),
    (dict(future_is_zero=lambda a: np.allclose(np.triu(a, k=1), 0.0, atol=1e-5)),
     "future_is_zero returned True for a causal matrix with a weight of 1e-6 on a future key"),
    (dict(future_is_zero=lambda a: not np.any(np.triu(a, k=1) > 0)),
     "future_is_zero returned True for a matrix whose first row is NaN"),
    (dict(future_is_zero=lambda a: a[0, 1:].max()),  # IndexError-free, but not a bool
     "returned float64, not True or False"),
])
def test_ex3_checks_self_check_names_the_mistake(cells, checks, message):
    student = {"rows_sum_to_one": good_rows_check, "future_is_zero": good_future_check,
               **checks}
    said = run_self_check(cells, "ex3_selfcheck_checks", **student)
    assert message in said, said
    if checks:
        assert CLEAN not in said


def test_ex3_checks_self_check_reports_the_release_stubs(cells):
    said = run_self_check(cells, "ex3_selfcheck_checks", rows_sum_to_one=not_written,
                          future_is_zero=not_written)
    assert said.count("is not written yet") == 2, said


def test_self_checks_report_undefined_names_instead_of_crashing(cells):
    for grade_id in ("ex1_selfcheck", "ex2_selfcheck_softmax", "ex2_selfcheck_numbers",
                     "ex3_selfcheck_attention", "ex3_selfcheck_causal_mask",
                     "ex3_selfcheck_checks", "ex4_selfcheck"):
        said = run_self_check(cells, grade_id)
        assert "is not defined: run the" in said


# --- Exercise 4 --------------------------------------------------------------------------------

def blockwise(piece: str):
    """attention_blockwise as a corpus piece defines it."""
    namespace = {"np": np}
    exec(piece, namespace)
    return namespace["attention_blockwise"]


@pytest.mark.parametrize("piece, message", [
    ("BLOCKWISE_KEYS", CLEAN),
    ("BLOCKWISE_TILES", CLEAN),
    ("BLOCKWISE_FLOAT32", CLEAN),
    ("BLOCKWISE_NO_RESCALE", "your answer differs from your own answer with every key in one"),
    ("BLOCKWISE_PER_BLOCK_NORMALISER", "divide by the total only once, at the end"),
    ("BLOCKWISE_CAUSAL_OFF_BY_ONE", "with causal=True the boundary is off by one"),
    ("BLOCKWISE_CAUSAL_IGNORED", "with causal=True every query sees every key"),
    ("BLOCKWISE_UNSTABLE", "with scores near 800 your output contains inf or NaN"),
    ("BLOCKWISE_FULL_MATRIX", "it holds a whole (T, T) array"),
    ("BLOCKWISE_FULL_CAUSAL_MASK", "it holds a whole (T, T) array"),
])
def test_ex4_self_check_names_the_mistake(cells, piece, message):
    from autograder.corpus import pieces

    said = run_self_check(cells, "ex4_selfcheck",
                          attention_blockwise=blockwise(getattr(pieces, piece)))
    assert message in said, said
    if message != CLEAN:
        assert CLEAN not in said


def test_ex4_self_check_reports_the_release_stub_and_a_pair(cells):
    from autograder.corpus import pieces

    said = run_self_check(cells, "ex4_selfcheck", attention_blockwise=not_written)
    assert "attention_blockwise is not written yet" in said
    right = blockwise(pieces.BLOCKWISE_KEYS)

    def pair(Q, K, V, causal=False, block=64):
        return right(Q, K, V, causal=causal, block=block), None

    assert "not a pair" in run_self_check(cells, "ex4_selfcheck", attention_blockwise=pair)


def test_ex4_self_check_warns_when_a_call_at_the_graders_size_is_slow(cells):
    """The grader stops a call after 5 s: a blockwise loop slow at T = 2048 is told so rather
    than passed (fair4). The slowness is 2.6 s of this thread's processor time, which is
    what the self-check counts, so the check does not depend on the machine's load."""
    import time

    from autograder.corpus import pieces

    right = blockwise(pieces.BLOCKWISE_KEYS)

    def slow(Q, K, V, causal=False, block=64):
        if Q.shape[0] == 2048 and not causal:
            end = time.thread_time() + 2.6
            while time.thread_time() < end:  # busy, like a Python loop over every key
                pass
        return right(Q, K, V, causal=causal, block=block)

    said = run_self_check(cells, "ex4_selfcheck", attention_blockwise=slow)
    assert "the grader stops a call after 5 s" in said and CLEAN not in said


def test_ex4_self_check_leaves_tracemalloc_as_it_found_it(cells):
    import tracemalloc

    from autograder.corpus import pieces

    run_self_check(cells, "ex4_selfcheck", attention_blockwise=blockwise(pieces.BLOCKWISE_KEYS))
    assert not tracemalloc.is_tracing()
