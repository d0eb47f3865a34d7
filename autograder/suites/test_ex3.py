"""Exercise 3: causal scaled dot-product attention, `attention(Q, K, V, mask=None)`.

Each test checks one property, so that one misconception costs only what it breaks:

- the value tests compare `attn` and `out` with the reference, each in its own test, on
  inputs chosen to expose the mistakes that matter: n != m and d_k != d_v (orientation,
  shapes, scale by sqrt(d_v)), d_k > 1 (missing or wrong scale), masks that hide each row's
  largest scores (mask ignored, inverted, zero-filled or applied after the softmax);
- the property tests compare the student's answers with each other, never with the
  reference: at large scores against the same inputs shifted down (stability), read-only
  against writable inputs, repeated calls against each other, inputs before and after. Their
  inputs are square (n = m = d_k = d_v) so that code that crashes on n != m still shows its
  properties, and each answer must be a valid attention result (finite, out = attn @ V with
  non-negative weights), so that zeros or NaN of the right shape earn nothing.

Every test uses shapes of its own, so that a cache keyed by shape cannot carry an answer from
one test to another. Sizes stay small so that a plain-loop solution runs in well under a second.
"""

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import (
    FLOAT_RESULTS,
    LARGE_SCORES,
    Mismatch,
    as_array,
    close,
    expect_close,
    expect_finite,
    expect_shape,
)
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


def checkerboard_mask(n, m):
    """(n, m) mask with a masked and an unmasked key in every row, whichever way it is read."""
    return (np.arange(n)[:, None] + np.arange(m)[None, :]) % 2 == 1  # (n, m)


def _with_mask(seed, n, m, d_k, d_v, make_mask):
    Q, K, V = make_inputs(seed, n, m, d_k, d_v)
    return Q, K, V, make_mask(Q, K)


# The hidden inputs of the value tests: (Q, K, V, mask). tests/test_tolerances.py measures
# every corpus submission's error on them.
WITHOUT_MASK = (*make_inputs(301, n=5, m=7, d_k=3, d_v=4), None)
CAUSAL = _with_mask(302, 6, 6, 4, 2, lambda Q, K: sdpa_ref.causal_mask(6))
HIDING_LARGEST = _with_mask(303, 4, 6, 5, 3, lambda Q, K: mask_hiding_largest_scores(Q, K, 3))
REFERENCE_INPUTS = {
    "attention_weights_without_mask": WITHOUT_MASK,
    "attention_output_without_mask": WITHOUT_MASK,
    "attention_weights_with_causal_mask": CAUSAL,
    "attention_output_with_causal_mask": CAUSAL,
    "attention_weights_with_mask_hiding_largest_scores": HIDING_LARGEST,
    "attention_output_with_mask_hiding_largest_scores": HIDING_LARGEST,
}


def call_attention(student, Q, K, V, *, readonly=False, **mask):
    """The student's raw answer; a crash says which sizes it was called with (no secret)."""
    try:
        return student.call("attention", Q, K, V, readonly=readonly, **mask)
    except StudentRaised as err:
        (n, d_k), (m, d_v) = Q.shape, V.shape
        err.context = f"with n = {n} queries, m = {m} keys, d_k = {d_k}, d_v = {d_v}"
        raise


def as_result(result):
    """The two arrays of a `(out, attn)` answer, in the order returned, as numbers."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        kind = (f"{len(result)} values" if isinstance(result, (tuple, list))
                else "None" if result is None else "one value")
        raise Mismatch(f"attention should return two arrays, (out, attn); it returned {kind}")
    return as_array(result[0], "out"), as_array(result[1], "attn")


def _reject_swapped(first, second, n, m, d_v):
    if first.shape == (n, m) and second.shape == (n, d_v) and m != d_v:
        raise Mismatch(f"attention returned (attn, out): return out (n, d_v) = {(n, d_v)} "
                       f"first, then attn (n, m) = {(n, m)}")


def weights_of(result, Q, K, V, mask=None):
    """The student's attn, checked for shape (n, m)."""
    out, attn = as_result(result)
    (n, m), d_v = (Q.shape[0], K.shape[0]), V.shape[1]
    _reject_swapped(out, attn, n, m, d_v)
    what = f"attn (n, m) with n = {n} queries and m = {m} keys"
    hint = "attn has one row per query and one column per key"
    if attn.shape == (m, n) and close(attn.T, sdpa_ref.attention(Q, K, V, mask)[1]):
        hint = "it holds the right values, transposed: return attn itself, one row per query"
    expect_shape(attn, (n, m), what, hint=hint)
    return attn


def output_of(result, Q, K, V, mask=None):
    """The student's out, checked for shape (n, d_v)."""
    out, attn = as_result(result)
    (n, m), d_v = (Q.shape[0], K.shape[0]), V.shape[1]
    _reject_swapped(out, attn, n, m, d_v)
    hint = "out = attn @ V has one row per query and one column per value dimension"
    if out.shape == (d_v, n) and close(out.T, sdpa_ref.attention(Q, K, V, mask)[0]):
        hint = "it holds the right values, transposed: return out itself, one row per query"
    expect_shape(out, (n, d_v), f"out (n, d_v) with n = {n} queries and d_v = {d_v}",
                 hint=hint)
    return out


def valid_answer(result, Q, K, V, what="attention's answer"):
    """The answer's two arrays, in the order returned, if they are a valid attention result.

    Finite, and out = attn @ V for weights that are non-negative and not all zero in any
    row. The order of the pair and the orientation of each array are the student's own
    business here (their tests are the value tests), so any layout that fits is accepted.
    """
    first, second = as_result(result)
    for array, name in ((first, "out"), (second, "attn")):
        expect_finite(array, f"{name} in {what}")
    (n, m), d_v = (Q.shape[0], K.shape[0]), V.shape[1]
    for out, attn in ((first, second), (second, first)):
        for weights in (attn, attn.T):
            for values in (out, out.T):
                if (weights.shape == (n, m) and values.shape == (n, d_v)
                        and np.all(weights >= -FLOAT_RESULTS.atol)
                        and np.all(weights.sum(axis=-1) > FLOAT_RESULTS.atol)
                        and close(values, weights @ V)):  # (n, m) @ (m, d_v) -> (n, d_v)
                    return first, second
    raise Mismatch(f"{what} is not an attention result",
                   "attn holds non-negative weights, one row per query, and out = attn @ V")


_SCALE_HINT = "attn is softmax(Q K^T / sqrt(d_k)) with the softmax along each row (the keys)"
_MASK_HINT = ("a True in the mask hides that key from that query: set its score to a large "
              "negative number before the softmax")
_NO_MASK_HINT = "attention(Q, K, V) and attention(Q, K, V, mask=None) both mean no mask"


def _calls(inputs, hint):
    """(keyword arguments, hint) of each call a value test makes: without a mask, one call
    without the argument and one with `mask=None`."""
    mask = inputs[3]
    if mask is None:
        return [({}, hint), ({"mask": None}, _NO_MASK_HINT)]
    return [({"mask": mask}, hint)]


def _expect_values(got, expected, what, hint):
    """`got` matches the reference; a square answer holding it transposed is told so."""
    if got.shape == expected.shape[::-1] and close(got.T, expected):
        hint = (f"it holds the right values, transposed: return {what} itself, one row per "
                "query")
    expect_close(got, expected, what, hint=hint)


def _expect_weights(student, inputs, hint):
    Q, K, V, mask = inputs
    for kwargs, call_hint in _calls(inputs, hint):
        attn = weights_of(call_attention(student, Q, K, V, **kwargs), Q, K, V, mask)
        _expect_values(attn, sdpa_ref.attention(Q, K, V, mask)[1], "attn", call_hint)


def _expect_output(student, inputs, hint):
    Q, K, V, mask = inputs
    for kwargs, call_hint in _calls(inputs, hint):
        out = output_of(call_attention(student, Q, K, V, **kwargs), Q, K, V, mask)
        _expect_values(out, sdpa_ref.attention(Q, K, V, mask)[0], "out", call_hint)


@pytest.mark.points(1.5)
def test_causal_mask_hides_strictly_the_future(student):
    for T in (1, 2, 6):
        what = f"causal_mask({T})"
        got = as_array(student.call("causal_mask", T), what, dtype_kind="booleans")
        expect_shape(got, (T, T), what)
        if not np.array_equal(got, sdpa_ref.causal_mask(T)):
            raise Mismatch(f"{what} is wrong", "it should be True exactly where key j comes "
                           "after query i (strictly above the diagonal), False elsewhere")


@pytest.mark.points(1)
def test_attention_weights_without_mask(student):
    _expect_weights(student, WITHOUT_MASK, _SCALE_HINT)


@pytest.mark.points(1)
def test_attention_output_without_mask(student):
    _expect_output(student, WITHOUT_MASK, _SCALE_HINT)


@pytest.mark.points(0.75)
def test_attention_weights_with_causal_mask(student):
    _expect_weights(student, CAUSAL, _MASK_HINT)


@pytest.mark.points(0.75)
def test_attention_output_with_causal_mask(student):
    _expect_output(student, CAUSAL, _MASK_HINT)


@pytest.mark.points(1)
def test_attention_weights_with_mask_hiding_largest_scores(student):
    _expect_weights(student, HIDING_LARGEST, _MASK_HINT)


@pytest.mark.points(1)
def test_attention_output_with_mask_hiding_largest_scores(student):
    _expect_output(student, HIDING_LARGEST, _MASK_HINT)


STABILITY_SHIFT = 40.0  # an extra component 40 in every query and key: scores gain 800


def stability_inputs():
    """(moderate, large): the same Q K^T up to one constant, about 800 after scaling.

    Q (4, 3) and K (4, 3) get a fourth component, 0 in `moderate` and 40 in `large`, so
    every scaled score of `large` is that of `moderate` plus 40 * 40 / sqrt(4) = 800, where
    exp overflows float64; the softmax of each row does not change.
    """
    Q, K, V = make_inputs(304, n=4, m=4, d_k=3, d_v=4)
    zeros, shift = np.zeros((4, 1)), np.full((4, 1), STABILITY_SHIFT)  # (4, 1)
    moderate = (np.hstack([Q, zeros]), np.hstack([K, zeros]), V)  # (4, 4) each
    large = (np.hstack([Q, shift]), np.hstack([K, shift]), V)  # (4, 4) each
    return moderate, large


@pytest.mark.points(1)
def test_attention_is_stable_at_large_scores(student):
    moderate, large = stability_inputs()
    expected = valid_answer(call_attention(student, *moderate), *moderate)
    got = as_result(call_attention(student, *large))
    hint = "exp overflows above about 709: subtract each row's maximum score first"
    for name, a, b in zip(("out", "attn"), got, expected, strict=True):
        expect_finite(a, f"{name} at large scores", hint=hint)
        if a.shape != b.shape or LARGE_SCORES.ratio(a, b) > 1:
            raise Mismatch(f"{name} changes when every score grows by the same amount "
                           "(about 800), which leaves the softmax as it was", hint)


@pytest.mark.points(1)
def test_attention_accepts_read_only_inputs(student):
    Q, K, V = make_inputs(305, n=3, m=3, d_k=3, d_v=3)
    mask = checkerboard_mask(3, 3)  # (3, 3)
    writable = valid_answer(call_attention(student, Q, K, V, mask=mask), Q, K, V)
    read_only = as_result(call_attention(student, Q, K, V, mask=mask, readonly=True))
    for name, a, b in zip(("out", "attn"), read_only, writable, strict=True):
        if a.shape != b.shape or not close(a, b):
            raise Mismatch(f"{name} changes when Q, K, V and mask are read-only arrays",
                           "work on new arrays rather than writing into the inputs")


@pytest.mark.points(1)
def test_attention_leaves_its_inputs_unchanged(student):
    Q, K, V = make_inputs(306, n=6, m=6, d_k=6, d_v=6)
    mask = checkerboard_mask(6, 6)  # (6, 6)
    result, args, kwargs = student.call_with_inputs("attention", Q, K, V, mask=mask)
    for name, before, after in zip("QKV", (Q, K, V), args, strict=True):
        if not _unchanged(after, before):
            raise Mismatch(f"attention modified its input {name} in place",
                           "compute on a new array (scores = Q @ K.T / ...) and leave the "
                           "inputs alone")
    if not _unchanged(kwargs.get("mask"), mask):
        raise Mismatch("attention modified the mask it was given", "build a new array instead")
    valid_answer(result, Q, K, V)


def _unchanged(after, before) -> bool:
    try:
        return bool(np.array_equal(np.asarray(after), before))
    except Exception:  # noqa: BLE001 - whatever it became, it is not the input any more
        return False


@pytest.mark.points(1)
def test_attention_answers_each_call_from_its_own_inputs(student):
    first = make_inputs(307, n=5, m=5, d_k=5, d_v=5)
    second = make_inputs(308, n=5, m=5, d_k=5, d_v=5)
    mask = checkerboard_mask(5, 5)  # (5, 5)
    answers = [call_attention(student, *inputs, mask=mask)
               for inputs in (first, second, first, second)]
    answers[0] = valid_answer(answers[0], *first)  # the first call cannot be stale yet
    answers[1:] = [as_result(answer) for answer in answers[1:]]
    for again, before in ((answers[2], answers[0]), (answers[3], answers[1])):
        if not all(close(a, b) for a, b in zip(again, before, strict=True)):
            raise Mismatch("attention answered differently when called again with the same "
                           "inputs", "it must not keep state between calls")
    if all(close(a, b) for a, b in zip(answers[0], answers[1], strict=True)):
        raise Mismatch("attention gave the same answer for two different inputs of the same "
                       "shape", "each call must depend only on its own Q, K, V and mask")
