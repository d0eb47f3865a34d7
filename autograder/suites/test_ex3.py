"""Exercise 3: causal scaled dot-product attention, `attention(Q, K, V, mask=None)`.

Inputs are chosen to expose the mistakes that matter: n != m and d_k != d_v (orientation,
shapes, scale by sqrt(d_v)), d_k > 1 (missing or wrong scale), masks that hide each row's
largest scores (mask ignored, inverted, zero-filled or applied after the softmax), scores
above 710 (a softmax without max subtraction overflows), read-only inputs, repeated calls.
Sizes stay small so that a plain-loop solution runs in well under a second.
"""

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import Mismatch, as_array, expect_close, expect_shape
from autograder.sandbox import StudentRaised

pytestmark = pytest.mark.ex3


def make_inputs(seed, n, m, d_k, d_v):
    """Q (n, d_k), K (m, d_k), V (m, d_v), entries O(1)."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d_k)), rng.normal(size=(m, d_k)), rng.normal(size=(m, d_v))


def mask_hiding_largest_scores(Q, K, hidden_per_row):
    """(n, m) mask, True on each row's `hidden_per_row` largest scores; no row fully masked."""
    scores = Q @ K.T  # (n, d_k) @ (d_k, m) -> (n, m)
    rank = np.argsort(np.argsort(-scores, axis=-1), axis=-1)  # (n, m), 0 = largest
    return rank < hidden_per_row  # (n, m)


def run_attention(student, Q, K, V, *, readonly=False, **mask):
    """The student's (out, attn), checked for type and shape (n, d_v) and (n, m)."""
    try:
        result = student.call("attention", Q, K, V, readonly=readonly, **mask)
    except StudentRaised as err:  # say which sizes it was called with: they are no secret
        (n, d_k), (m, d_v) = Q.shape, V.shape
        err.context = f"with n = {n} queries, m = {m} keys, d_k = {d_k}, d_v = {d_v}"
        raise
    return check_result(result, Q, K, V)


def check_result(result, Q, K, V):
    n, (m, d_v) = Q.shape[0], V.shape
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        kind = (f"{len(result)} values" if isinstance(result, (tuple, list))
                else "None" if result is None else "one value")
        raise Mismatch(f"attention should return two arrays, (out, attn); it returned {kind}")
    out, attn = as_array(result[0], "out"), as_array(result[1], "attn")
    if out.shape == (n, m) and attn.shape == (n, d_v) and (n, m) != (n, d_v):
        raise Mismatch(f"attention returned (attn, out): return out (n, d_v) = {(n, d_v)} "
                       f"first, then attn (n, m) = {(n, m)}")
    hint = "did you multiply K by Q instead of Q by K.T?" if attn.shape == (m, n) else ""
    expect_shape(attn, (n, m), f"attn (n, m) with n = {n} queries and m = {m} keys",
                 hint=hint)
    expect_shape(out, (n, d_v), f"out (n, d_v) with n = {n} queries and d_v = {d_v}",
                 hint="out = attn @ V has one row per query and one column per value dimension")
    return out, attn


def expect_reference(out, attn, Q, K, V, mask=None, *, hint=""):
    ref_out, ref_attn = sdpa_ref.attention(Q, K, V, mask)
    expect_close(attn, ref_attn, "attn", hint=hint)
    expect_close(out, ref_out, "out", hint=hint)


_SCALE_HINT = "attn is softmax(Q K^T / sqrt(d_k)) with the softmax along each row (the keys)"
_MASK_HINT = ("a True in the mask hides that key from that query: set its score to a large "
              "negative number before the softmax")


@pytest.mark.points(1.5)
def test_causal_mask_hides_strictly_the_future(student):
    for T in (1, 2, 6):
        what = f"causal_mask({T})"
        got = as_array(student.call("causal_mask", T), what, dtype_kind="booleans")
        expect_shape(got, (T, T), what)
        if not np.array_equal(got, sdpa_ref.causal_mask(T)):
            raise Mismatch(f"{what} is wrong: it should be True exactly where key j comes "
                           "after query i (strictly above the diagonal), False elsewhere")


@pytest.mark.points(2)
def test_attention_without_mask_matches_reference(student):
    Q, K, V = make_inputs(301, n=5, m=7, d_k=3, d_v=4)
    out, attn = run_attention(student, Q, K, V)
    expect_reference(out, attn, Q, K, V, hint=_SCALE_HINT)
    out, attn = run_attention(student, Q, K, V, mask=None)
    expect_reference(out, attn, Q, K, V, hint="attention(Q, K, V, mask=None) means no mask")


@pytest.mark.points(1.5)
def test_attention_with_causal_mask_matches_reference(student):
    Q, K, V = make_inputs(302, n=6, m=6, d_k=4, d_v=2)
    mask = sdpa_ref.causal_mask(6)  # (6, 6)
    out, attn = run_attention(student, Q, K, V, mask=mask)
    expect_reference(out, attn, Q, K, V, mask, hint=_MASK_HINT)


@pytest.mark.points(2)
def test_attention_with_mask_hiding_largest_scores(student):
    Q, K, V = make_inputs(303, n=4, m=6, d_k=5, d_v=3)
    mask = mask_hiding_largest_scores(Q, K, hidden_per_row=3)  # (4, 6)
    out, attn = run_attention(student, Q, K, V, mask=mask)
    expect_reference(out, attn, Q, K, V, mask, hint=_MASK_HINT)


@pytest.mark.points(1)
def test_attention_is_stable_at_large_scores(student):
    Q, K, V = make_inputs(304, n=4, m=5, d_k=4, d_v=3)
    Q[:, 0] += 40.0  # a shared component: every scaled score is about 800, their
    K[:, 0] += 40.0  # differences stay O(1), and exp(800) overflows float64
    out, attn = run_attention(student, Q, K, V, mask=sdpa_ref.causal_mask(4, 5))
    expect_reference(out, attn, Q, K, V, sdpa_ref.causal_mask(4, 5),
                     hint="exp overflows above about 709: subtract each row's maximum score "
                          "before exponentiating")


@pytest.mark.points(1)
def test_attention_accepts_read_only_inputs(student):
    Q, K, V = make_inputs(305, n=3, m=5, d_k=2, d_v=4)
    mask = sdpa_ref.causal_mask(3, 5)  # (3, 5)
    writable = run_attention(student, Q, K, V, mask=mask)
    read_only = run_attention(student, Q, K, V, mask=mask, readonly=True)
    for name, a, b in zip(("out", "attn"), writable, read_only, strict=True):
        if not np.array_equal(a, b, equal_nan=True):
            raise Mismatch(f"{name} changes when Q, K, V and mask are read-only arrays: "
                           "work on new arrays rather than writing into the inputs")


@pytest.mark.points(1)
def test_attention_leaves_its_inputs_unchanged(student):
    Q, K, V = make_inputs(306, n=4, m=6, d_k=3, d_v=2)
    mask = mask_hiding_largest_scores(Q, K, hidden_per_row=2)  # (4, 6)
    result, args, kwargs = student.call_with_inputs("attention", Q, K, V, mask=mask)
    check_result(result, Q, K, V)
    for name, before, after in zip("QKV", (Q, K, V), args, strict=True):
        if not np.array_equal(np.asarray(after), before):
            raise Mismatch(f"attention modified its input {name} in place: compute on a "
                           "new array (scores = Q @ K.T / ...) and leave the inputs alone")
    if not np.array_equal(np.asarray(kwargs["mask"]), mask):
        raise Mismatch("attention modified the mask it was given: build a new array instead")


@pytest.mark.points(1)
def test_attention_answers_each_call_from_its_own_inputs(student):
    first = make_inputs(307, n=3, m=4, d_k=2, d_v=5)
    second = make_inputs(308, n=3, m=4, d_k=2, d_v=5)
    mask = sdpa_ref.causal_mask(3, 4)  # (3, 4)
    for inputs in (first, second, first, second):
        out, attn = run_attention(student, *inputs, mask=mask)
        expect_reference(out, attn, *inputs, mask,
                         hint="attention must not keep state between calls: each call "
                              "depends only on its own Q, K, V and mask")
