"""Exercise 3: causal scaled dot-product attention, `attention(Q, K, V, mask=None)`, the
causal mask, and two checks of a causal weight matrix, `rows_sum_to_one` and `future_is_zero`.

Each test checks one property, so that one misconception costs only what it breaks:

- the value tests compare `attn` and `out` with the reference, each in its own test, on
  inputs chosen to expose the mistakes that matter: n != m and d_k != d_v (orientation,
  shapes, scale by sqrt(d_v)), d_k > 1 (missing or wrong scale), masks that hide each row's
  largest scores (mask ignored, inverted, zero-filled or applied after the softmax);
- the property tests compare the student's answers with each other, never with the
  reference: at large scores against the same inputs shifted down (stability; or, for a
  value mistake that uses the shifted inputs otherwise, such as Q @ K, against what that
  mistake computes there), read-only against writable inputs, repeated calls against each
  other, inputs before and after. Their inputs are square (n = m = d_k = d_v) so that code
  that crashes on n != m still shows its properties; they call without a mask when attention
  raises with one but not without, in the form the code takes (`_property_mask`,
  `_call_unmasked`); and each answer must be a valid attention result (finite,
  out = attn @ V with non-negative weights) and attention of its inputs or what a
  catalogued mistake computes from them (`diagnoses.ex3.catalogued`), so that zeros, NaN or
  uniform weights of the right shape earn nothing while a value mistake keeps the property
  points. Stability also asks for scores SPREAD apart within each row (`spread_inputs`, or
  `spread_in_shape` for code that cannot take their shape), where subtracting anything but
  each row's maximum overflows.

The two checks are graded the way a test is graded: each is handed correct causal attention
matrices (float64 and float32, rows summing to 1 only up to rounding) and matrices broken in
the fact it checks, and earns its point only if it judges every one of them right.

Points: the causal mask 1.5, the six value tests 5.5, the four property tests 2, the checks 2.

Every test uses shapes of its own, so that a cache keyed by shape cannot carry an answer from
one test to another. Sizes stay small so that a plain-loop solution runs in well under a second.
Each student has hidden inputs of their own, shapes and values (`hidden_inputs`, and the
checks' matrices, `check_matrices`, drawn for the student's variant from the course's secret
inputs key; the default variant's are fixed).
"""

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import (
    FLOAT_RESULTS,
    LARGE_SCORES,
    Mismatch,
    as_array,
    as_verdict,
    close,
    expect_close,
    expect_finite,
    expect_shape,
)
from autograder.diagnoses.ex3 import (
    catalogued,
    catalogued_weights,
    uniform_without_mask,
)
from autograder.sandbox import StudentRaised

pytestmark = pytest.mark.ex3


def make_inputs(seed, n, m, d_k, d_v):
    """Q (n, d_k), K (m, d_k), V (m, d_v), entries O(1); `seed` a number or a Generator."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return rng.normal(size=(n, d_k)), rng.normal(size=(m, d_k)), rng.normal(size=(m, d_v))


def mask_hiding_largest_scores(Q, K, hidden_per_row):
    """(n, m) mask, True on each row's `hidden_per_row` largest scores; no row fully masked."""
    scores = Q @ K.T  # (n, d_k) @ (d_k, m) -> (n, m)
    rank = np.argsort(np.argsort(-scores, axis=-1), axis=-1)  # (n, m), 0 = largest
    return rank < hidden_per_row  # (n, m)


def checkerboard_mask(n, m):
    """(n, m) mask with a masked and an unmasked key in every row, whichever way it is read."""
    return (np.arange(n)[:, None] + np.arange(m)[None, :]) % 2 == 1  # (n, m)


def stability_shift(size: int) -> float:
    """The extra component that adds 800 to every scaled score of a (size, size) problem
    (shift**2 / sqrt(d_k) with d_k = size), where exp overflows float64."""
    return float(np.sqrt(800.0 * np.sqrt(size)))


# How far two keys' scaled scores stand above the others' in every row of `spread_inputs`:
# subtracting the row's minimum, mean or first score leaves an exponent above 709 (even the
# mean of two scores is 1000 below), subtracting its maximum is exact.
SPREAD = 2000.0


@lru_cache(maxsize=64)
def spread_inputs(variant):
    """(Q, K, V) of the stability test's third call: its moderate inputs with one more
    component, `lift` for every query, 0 for two keys (`_spread_keys`) and -`lift` for the
    others, so that every query's scores on those two keys are SPREAD above the rest. Shape
    (s, s + 1) for Q and K: a shape of its own (d_k = d_v + 1, n = m = d_v)."""
    (Q, K, V), _ = hidden_inputs(variant)["stability"]  # (s, s) each
    size = Q.shape[0]
    keys = list(_spread_keys(size))
    lift = float(np.sqrt(SPREAD * np.sqrt(size + 1)))  # lift**2 / sqrt(d_k) = SPREAD
    extra_k = np.full((size, 1), -lift)  # (s, 1)
    extra_k[keys] = 0.0
    return (np.hstack([Q, np.full((size, 1), lift)]),  # (s, s + 1)
            np.hstack([K, extra_k]), V)  # (s, s + 1), (s, s)


def _spread_keys(size: int) -> tuple[int, int]:
    """The two keys (never the first) that score SPREAD above the others in the spread calls,
    the same for every variant: the middle one and the last. Two, so that the answer there
    is not one value row (a key's V, as one raised key made it): a value slip that also
    puts all the weight on one raised key matched that row, passing for the students whose
    numbers let it and failing for the others (K.reshape(d_k, m) for K.T, a quarter of
    them). The others are lowered rather than these raised: the two keep their moderate
    scores, which attention weighs as any scores (in float32 too: scores near 2000 would
    lose the difference between the two to rounding), and no such slip reproduces."""
    return size // 2, size - 1


def spread_in_shape(variant):
    """(Q, K, V) of `spread_inputs`' call in the moderate inputs' own shape (s, s): their last
    component, 0 for all, set as `spread_inputs` sets the added one. For code that cannot
    take d_k != m (Q @ K): its stability is judged all the same."""
    (Q, K, V), _ = hidden_inputs(variant)["stability"]  # (s, s) each, last component 0
    size = Q.shape[0]
    lift = float(np.sqrt(SPREAD * np.sqrt(size)))  # lift**2 / sqrt(d_k) = SPREAD
    Q, K = Q.copy(), K.copy()  # (s, s) each
    Q[:, -1] = lift
    K[:, -1] = -lift
    K[list(_spread_keys(size)), -1] = 0.0  # these two SPREAD above the others
    return Q, K, V


# Shapes (n, m, d_k, d_v) the notebook's self-checks and heatmap call attention with before
# the hidden tests run: a drawn shape avoids them, so that an answer cached by shape (the
# `stateful` mistake) cannot reach a hidden test from them.
NOTEBOOK_SHAPES = frozenset({(3, 5, 4, 2), (5, 5, 4, 4), (3, 2, 64, 2), (3, 3, 4, 2),
                             (8, 8, 8, 8)})
SQUARE_SIZES = (3, 5, 6, 7, 9)  # the property tests' n = m = d_k = d_v, one each


def _value_shapes(rng) -> tuple[tuple[int, ...], ...]:
    """(n, m, d_k, d_v) of the three value tests: without a mask n != m, causal n = m = T,
    hiding the largest scores n != m and m >= 4. Always d_k != d_v and m != d_v (the
    orientation, the scale by sqrt(d_v) and a swapped pair all show), d_k != n and d_k != m
    (d_k read from the wrong axis, Q.shape[0] or len(K), shows), d_k >= 2, each shape its
    own."""
    shapes: list[tuple[int, ...]] = []
    for kind in ("without mask", "causal", "hiding largest"):
        while True:
            if kind == "causal":
                n = m = int(rng.integers(3, 8))
            else:
                n, m = (int(x) for x in rng.choice(np.arange(2, 8), size=2, replace=False))
            d_k, d_v = (int(x) for x in rng.choice(np.arange(2, 7), size=2, replace=False))
            shape = (n, m, d_k, d_v)
            if (m != d_v and d_k not in (n, m)
                    and not (kind == "hiding largest" and m < 4)
                    and shape not in NOTEBOOK_SHAPES and shape not in shapes):
                shapes.append(shape)
                break
    return tuple(shapes)


@lru_cache(maxsize=64)
def hidden_inputs(variant) -> dict:
    """Every hidden input of this suite for one student: (Q, K, V, mask) per test.

    The default variant's are fixed (seeds 301 to 308); any other variant's shapes and values
    are drawn from its own random numbers (`Variant.rng`), so that inputs leaked by one
    submission say nothing about another's. Every test uses shapes of its own.
    """
    if variant.inputs_seed is None:
        rng = None
        value_shapes = ((5, 7, 3, 4), (6, 6, 4, 2), (4, 6, 5, 3))
        sizes = (4, 3, 6, 5)
        seeds = range(301, 309)
    else:
        rng = variant.rng("ex3")
        value_shapes = _value_shapes(rng)
        sizes = tuple(int(s) for s in rng.choice(SQUARE_SIZES, size=4, replace=False))
        seeds = [rng] * 8
    seeds = iter(seeds)
    without_mask, causal, hiding = value_shapes
    Q, K, V = make_inputs(next(seeds), *without_mask)
    inputs = {"without_mask": (Q, K, V, None)}
    Q, K, V = make_inputs(next(seeds), *causal)
    inputs["causal"] = (Q, K, V, sdpa_ref.causal_mask(causal[0]))
    Q, K, V = make_inputs(next(seeds), *hiding)
    inputs["hiding_largest"] = (Q, K, V, mask_hiding_largest_scores(Q, K, hiding[1] // 2))
    stable, read_only, unchanged, stateless = sizes
    Q, K, V = make_inputs(next(seeds), stable, stable, stable - 1, stable)
    zeros, shift = np.zeros((stable, 1)), np.full((stable, 1), stability_shift(stable))
    inputs["stability"] = ((np.hstack([Q, zeros]), np.hstack([K, zeros]), V),  # (s, s) each
                           (np.hstack([Q, shift]), np.hstack([K, shift]), V))
    for name, size in (("read_only", read_only), ("unchanged", unchanged)):
        inputs[name] = (*make_inputs(next(seeds), *(size,) * 4), checkerboard_mask(size, size))
    first, second = (make_inputs(next(seeds), *(stateless,) * 4) for _ in range(2))
    inputs["stateless"] = (first, second, checkerboard_mask(stateless, stateless))
    return inputs


def reference_inputs(variant) -> dict[str, tuple]:
    """The hidden inputs of the value tests, (Q, K, V, mask) by test name
    (tests/test_tolerances.py measures every corpus submission's error on them)."""
    inputs = hidden_inputs(variant)
    return {f"attention_{part}_{case}": inputs[key]
            for part in ("weights", "output")
            for case, key in (("without_mask", "without_mask"),
                              ("with_causal_mask", "causal"),
                              ("with_mask_hiding_largest_scores", "hiding_largest"))}


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
        # a count the answer chose (on hidden inputs) is named up to 5 (`compare.shape_seen`)
        kind = ((f"{len(result)} values" if len(result) <= 5 else "more than 5 values")
                if isinstance(result, (tuple, list))
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


_UNCATALOGUED_HINT = ("the property tests need attention computed from the inputs: right, "
                      "or wrong only by a mistake the value tests catch; fix the values first")


def valid_answer(result, Q, K, V, what="attention's answer", mask=None, student=None):
    """The answer's two arrays, in the order returned, if they are a valid attention result.

    Finite, and out = attn @ V for weights that are non-negative and not all zero in any
    row; and attention of these inputs or what a catalogued mistake computes on them
    (`diagnoses.ex3.catalogued`; without a mask, given the `student`, also
    `_mask_none_broken`), so that an answer ignoring its inputs earns no property test while
    a value mistake, which the value tests charge, keeps them. An out that is not
    attn @ V is a value mistake too when attn itself is attention or a catalogued
    mistake's weights (`diagnoses.ex3.catalogued_weights`: out scaled again, or attn
    returned unmasked). The order of the
    pair and the orientation of each array are the student's own business here (their tests
    are the value tests), so any layout that fits is accepted.
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
                    _expect_catalogued((first, second), Q, K, V, mask, what, student)
                    return first, second
    if catalogued_weights((first, second), Q, K, V, mask):
        return first, second  # right weights, out a slip of the last step: a value mistake
    raise Mismatch(f"{what} is not an attention result",
                   "attn holds non-negative weights, one row per query, and out = attn @ V")


def _mask_none_broken(student, pair, Q, K, V) -> bool:
    """`pair`, from a call without a mask, holds uniform weights, and the same inputs with a
    mask give a catalogued answer: the mask line run on mask=None (`mask-none-broken`, which
    the unmasked value tests charge), not weights that ignore the inputs."""
    if not uniform_without_mask(pair, K):
        return False
    mask = checkerboard_mask(Q.shape[0], K.shape[0])  # (n, m)
    try:
        masked = as_result(call_attention(student, Q, K, V, mask=mask))
    except (Mismatch, StudentRaised):
        return False
    return catalogued(masked, Q, K, V, mask)


def _expect_catalogued(pair, Q, K, V, mask, what, student=None):
    if not catalogued(pair, Q, K, V, mask) and not (
            mask is None and student is not None and _mask_none_broken(student, pair, Q, K, V)):
        raise Mismatch(f"{what} is neither attention of its inputs nor what a known mistake "
                       "computes from them", _UNCATALOGUED_HINT)


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


_OUT_HINT = ("attn is right here, so out is not attn @ V: each output row is the weighted sum "
             "of the values, with that query's row of attn as the weights")
_NOT_THE_MASK_HINT = ("{what} is wrong on these inputs without a mask too, so the mask is not "
                      "the cause: " + _SCALE_HINT)


def _right_weights(result, Q, K, V, mask) -> bool:
    """The student's answer holds the reference weights as attn (never raises)."""
    try:
        attn = as_result(result)[1]
    except Mismatch:
        return False
    return close(attn, sdpa_ref.attention(Q, K, V, mask)[1])


def _wrong_without_mask(student, Q, K, V, what) -> bool:
    """The student's own `what` ("attn" or "out") on the same inputs without a mask is wrong
    too (never raises): then a masked test's failure is not the mask's doing."""
    which = 1 if what == "attn" else 0
    try:
        got = as_result(call_attention(student, Q, K, V))[which]
    except (Mismatch, StudentRaised):
        return False
    return not close(got, sdpa_ref.attention(Q, K, V)[which])


def _cause(student, result, inputs, what, hint):
    """The hint of a failed value test, once the student's own answers rule a cause out: out
    wrong beside right weights is the last step's doing (whatever the mask), and a masked
    test failing as its unmasked twin does is the computation's, not the mask's. (A
    diagnosis, when the report has one, replaces the hint anyway.)"""
    Q, K, V, mask = inputs
    if what == "out" and _right_weights(result, Q, K, V, mask):
        return _OUT_HINT
    if mask is not None and _wrong_without_mask(student, Q, K, V, what):
        return _NOT_THE_MASK_HINT.format(what=what)
    return hint


def _expect_values_of(student, inputs, what, hint):
    """Each call of the value test (`_calls`) gives `what`, "attn" or "out", as the reference."""
    Q, K, V, mask = inputs
    index, of = (1, weights_of) if what == "attn" else (0, output_of)
    for kwargs, call_hint in _calls(inputs, hint):
        result = call_attention(student, Q, K, V, **kwargs)
        got = of(result, Q, K, V, mask)
        try:
            _expect_values(got, sdpa_ref.attention(Q, K, V, mask)[index], what, call_hint)
        except Mismatch as err:
            if err.hint != call_hint:
                raise  # a hint of its own (transposed, NaN): it already says what is wrong
            raise Mismatch(err.problem, _cause(student, result, inputs, what, call_hint)) \
                from None


def _expect_weights(student, inputs, hint):
    _expect_values_of(student, inputs, "attn", hint)


def _expect_output(student, inputs, hint):
    _expect_values_of(student, inputs, "out", hint)


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
    _expect_weights(student, hidden_inputs(student.variant)["without_mask"], _SCALE_HINT)


@pytest.mark.points(1)
def test_attention_output_without_mask(student):
    _expect_output(student, hidden_inputs(student.variant)["without_mask"], _SCALE_HINT)


@pytest.mark.points(0.75)
def test_attention_weights_with_causal_mask(student):
    _expect_weights(student, hidden_inputs(student.variant)["causal"], _MASK_HINT)


@pytest.mark.points(0.75)
def test_attention_output_with_causal_mask(student):
    _expect_output(student, hidden_inputs(student.variant)["causal"], _MASK_HINT)


@pytest.mark.points(1)
def test_attention_weights_with_mask_hiding_largest_scores(student):
    _expect_weights(student, hidden_inputs(student.variant)["hiding_largest"], _MASK_HINT)


@pytest.mark.points(1)
def test_attention_output_with_mask_hiding_largest_scores(student):
    _expect_output(student, hidden_inputs(student.variant)["hiding_largest"], _MASK_HINT)


# What the stability test expects, and no more: the cause (exp overflowing, say) is the
# diagnosis's to name (`unstable-softmax`), only where its probe agrees (issue 27).
_STABLE_HINT = ("softmax(Q K^T / sqrt(d_k)) stays finite however large the scores, and is "
                "unchanged when every score of a row grows by the same amount")


@pytest.mark.points(0.5)
def test_attention_is_stable_at_large_scores(student):
    moderate, large = hidden_inputs(student.variant)["stability"]  # same Q K^T, + 800
    expected = valid_answer(_call_unmasked(student, *moderate), *moderate, student=student)
    got = as_result(_call_unmasked(student, *large))
    hint = _STABLE_HINT
    for name, a in zip(("out", "attn"), got, strict=True):
        expect_finite(a, f"{name} at large scores", hint=hint)
    for name, a, b in zip(("out", "attn"), got, expected, strict=True):
        # A value mistake that uses the shifted inputs otherwise (Q @ K, attn @ K) changes
        # the answer without any overflow: it is stable if it computes its own mistake there.
        if (a.shape != b.shape or LARGE_SCORES.ratio(a, b) > 1) and not _catalogued_at(
                got, *large):
            raise Mismatch(f"{name} changes when every score grows by the same amount "
                           "(about 800), which leaves the softmax as it was", hint)
    Q, K, V = spread_inputs(student.variant)  # two keys SPREAD above the others
    where = f"when two keys' scores are {SPREAD:.0f} above the others"
    try:
        spread = as_result(_call_unmasked(student, Q, K, V))
    except StudentRaised:  # not these shapes (Q @ K needs d_k = m): the same spread in (s, s)
        Q, K, V = spread_in_shape(student.variant)
        spread = as_result(_call_unmasked(student, Q, K, V))
    for name, a in zip(("out", "attn"), spread, strict=True):
        expect_finite(a, f"{name} {where}", hint=hint)
    if not _catalogued_at(spread, Q, K, V) and not _mask_none_broken(student, spread, Q, K, V):
        raise Mismatch(f"attention's answer {where} is not softmax(Q K^T / sqrt(d_k)) V",
                       hint)


def _call_unmasked(student, Q, K, V):
    """attention without a mask, in the form the code takes: no mask argument, or mask=None
    where it has no default. Both mean no mask; which form fails is the unmasked value tests'
    to charge (`mask-none-broken`), not a property test's."""
    try:
        return call_attention(student, Q, K, V)
    except StudentRaised:
        return call_attention(student, Q, K, V, mask=None)


def _property_mask(student, Q, K, V, mask) -> dict:
    """The mask argument a property test calls attention with: its own mask, or no mask
    (mask=None, or no argument) when attention raises with that mask and runs without one (a
    masking slip such as `if mask:`, or no mask parameter at all, which the value tests
    charge), so that the property is still judged (never raises)."""
    for kwargs in ({"mask": mask}, {"mask": None}, {}):
        try:
            call_attention(student, Q.copy(), K.copy(), V.copy(),
                           **{name: None if value is None else value.copy()
                              for name, value in kwargs.items()})
        except StudentRaised:
            continue
        return kwargs
    return {"mask": mask}  # it raises every way: the test's own call says so


def _catalogued_at(pair, Q, K, V) -> bool:
    """`pair` is what attention or a catalogued mistake computes on these inputs, its out
    included or, for a slip of the last step alone, its weights (whatever out's shape: the
    exp's stability shows in the weights, and out's values are the value tests' business)."""
    return catalogued(pair, Q, K, V) or catalogued_weights(pair, Q, K, V, any_out_shape=True)


@pytest.mark.points(0.5)
def test_attention_accepts_read_only_inputs(student):
    Q, K, V, mask = hidden_inputs(student.variant)["read_only"]  # (s, s) each
    given = _property_mask(student, Q, K, V, mask)
    mask = given.get("mask")
    writable = valid_answer(call_attention(student, Q, K, V, **given), Q, K, V, mask=mask)
    read_only = as_result(call_attention(student, Q, K, V, readonly=True, **given))
    for name, a, b in zip(("out", "attn"), read_only, writable, strict=True):
        if a.shape != b.shape or not close(a, b):
            raise Mismatch(f"{name} changes when Q, K, V and mask are read-only arrays",
                           "work on new arrays rather than writing into the inputs")


@pytest.mark.points(0.5)
def test_attention_leaves_its_inputs_unchanged(student):
    Q, K, V, mask = hidden_inputs(student.variant)["unchanged"]  # (s, s) each
    given = _property_mask(student, Q, K, V, mask)
    mask = given.get("mask")
    result, args, kwargs = student.call_with_inputs("attention", Q, K, V, **given)
    for name, before, after in zip("QKV", (Q, K, V), args, strict=True):
        if not _unchanged(after, before):
            raise Mismatch(f"attention modified its input {name} in place",
                           "compute on a new array (scores = Q @ K.T / ...) and leave the "
                           "inputs alone")
    if mask is not None and not _unchanged(kwargs.get("mask"), mask):
        raise Mismatch("attention modified the mask it was given", "build a new array instead")
    valid_answer(result, Q, K, V, mask=mask)


def _unchanged(after, before) -> bool:
    try:
        return bool(np.array_equal(np.asarray(after), before))
    except Exception:  # noqa: BLE001 - whatever it became, it is not the input any more
        return False


@pytest.mark.points(0.5)
def test_attention_answers_each_call_from_its_own_inputs(student):
    first, second, mask = hidden_inputs(student.variant)["stateless"]  # (s, s) each
    given = _property_mask(student, *first, mask)
    mask = given.get("mask")
    answers = [call_attention(student, *inputs, **given)
               for inputs in (first, second, first, second)]
    # the first call cannot be stale yet
    answers[0] = valid_answer(answers[0], *first, mask=mask)
    answers[1:] = [as_result(answer) for answer in answers[1:]]
    for again, before in ((answers[2], answers[0]), (answers[3], answers[1])):
        if not all(close(a, b) for a, b in zip(again, before, strict=True)):
            raise Mismatch("attention answered differently when called again with the same "
                           "inputs", "it must not keep state between calls")
    if all(close(a, b) for a, b in zip(answers[0], answers[1], strict=True)):
        raise Mismatch("attention gave the same answer for two different inputs of the same "
                       "shape", "each call must depend only on its own Q, K, V and mask")


# -- Exercise 3(c): the student's two checks, graded the way a test is graded ------------------
#
# Each check is handed correct causal attention matrices, which it must accept, and matrices
# broken in the one fact it checks, which it must reject; it earns its point only if it judges
# every one of them right. A matrix broken only in the other check's fact is handed to neither.
# The broken matrices' shape and dtype are among the correct ones', and the two kinds come in a
# mixed order, so that neither the shape nor the count of calls gives the answer away.
# Each matrix broken at an edge a loop or a slice can be off by one at (the first or the last
# row, the first diagonal above the main one, the top-right corner) is handed out too.
# Each student gets matrices of their own (`check_matrices`): sizes, values, the row scaled,
# the future key that leaks and the row of NaN are drawn for their variant, so that matrices
# leaked by one submission say nothing about another's; the default variant's are fixed. A
# message names a matrix's size and its broken row (as the description says), never a value.


def causal_weights(seed, T, dtype):
    """A correct causal attention matrix (T, T) in `dtype`: rows sum to 1 up to rounding;
    `seed` a number or a Generator."""
    Q, K, V = (a.astype(dtype) for a in make_inputs(seed, T, T, 4, 2))
    return sdpa_ref.attention(Q, K, V, sdpa_ref.causal_mask(T))[1]  # (T, T), dtype


def _scaled_row(attn, row, factor):
    broken = attn.copy()  # (T, T)
    broken[row] *= factor
    return broken


def _leaking(attn, t, j, weight):
    """Weight moved from query t's own key onto the future key j > t: rows still sum to 1."""
    broken = attn.copy()  # (T, T)
    broken[t, j] += weight
    broken[t, t] -= weight
    return broken


def _nan_row(attn, row):
    broken = attn.copy()  # (T, T)
    broken[row] = np.nan  # what a -inf fill gives a fully masked row
    return broken


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
             "ninth", "tenth")


def row_named(row: int) -> str:
    """Row `row` (counted from 0) as a student reads it: `fourth row`, or `row 12`."""
    return f"{_ORDINALS[row]} row" if row < len(_ORDINALS) else f"row {row + 1}"


@dataclass(frozen=True)
class CheckPlan:
    """What one student's check matrices are: their sizes and where the broken ones are
    broken (their values come from fixed seeds or the student's random numbers).

    `small64`, `small32`: a correct float64 and float32 matrix; `medium32`, `medium64`: a
    larger one of each; `base`: the float64 matrix the broken ones start from (a correct one
    of its own shape and dtype is handed out too). `scaled_row`'s weights are multiplied by
    SHORT_ROW; `leak` = (t, j), j > t, receives 1e-6 taken from (t, t); `nan_row` is NaN, never
    the last row, which has no future key: a NaN there would break only the rows' sums, and
    the matrix is handed to both checks. `adjacent_leak` = t: (t, t + 1), just above the
    diagonal, receives 1e-6 the same way.

    Besides these, every plan breaks the edges a check's loop or slice can be off by one at:
    the first and the last row scaled (each a matrix of its own), and a leak just above the
    diagonal (`adjacent_leak`) and in the top-right corner (0, T - 1), where `np.triu(a, k=2)`
    and a loop ending a row or a column early look past.
    """

    small64: int
    small32: int
    medium32: int
    medium64: int
    base: int
    scaled_row: int
    leak: tuple[int, int]
    nan_row: int
    adjacent_leak: int


# The lesson's own (default variant): fixed, as before variants (seeds 311-317).
DEFAULT_CHECK_PLAN = CheckPlan(small64=6, small32=7, medium32=64, medium64=48, base=8,
                               scaled_row=3, leak=(2, 5), nan_row=0, adjacent_leak=5)
SMALL_SIZES = range(4, 11)  # T of the small matrices, the base among them (ordinal words)
MEDIUM_SIZES = range(40, 81)  # T of the larger float64 and float32 matrices
LEAK = 1e-6  # the weight a leaking matrix puts on one future key
# The factor of the scaled row: it sums to half a hundredth less than 1, so that a tolerance
# of 1e-2 misses it however it is compared (<, <=, np.allclose's atol), not only some ways,
# and one of 1e-3 (beyond any float rounding, but tight enough) catches it every way (fair4).
SHORT_ROW = 0.995


# A correct matrix's rows sum to 1 within this (float32 rounding over at most 80 weights),
# 50 times inside np.allclose's tolerance (rtol 1e-5), the loosest a right check is expected
# to be. Few draws are redrawn for it (1 in 300 of the (60, 60) float32 ones, measured).
ROUNDING_AT_MOST = 2e-7


def _rounded(attn) -> bool:
    """Every row sums to 1 within ROUNDING_AT_MOST, and some row only up to rounding, both in
    the matrix's own dtype and exactly (so that a check comparing with `== 1`, however it
    sums, meets a row it rejects)."""
    own = attn.sum(axis=-1)  # (T,) in attn's dtype
    if not (own != 1).any():
        return False
    # each row's exact sum (Python floats hold float32 and float64 values exactly)
    exact = [math.fsum(row) for row in attn.tolist()]
    return (max(abs(total - 1) for total in exact) <= ROUNDING_AT_MOST
            and any(total != 1 for total in exact))


def _drawn_weights(rng, T, dtype):
    """A correct causal matrix drawn from `rng`, redrawn until its rows show rounding, and
    no more than ROUNDING_AT_MOST of it."""
    while True:
        attn = causal_weights(rng, T, dtype)  # (T, T)
        if _rounded(attn):
            return attn


def _draw_leaking_query(rng, base) -> int:
    """t < T - 1: a query with a future key after it, whose own weight is large enough to
    give LEAK away and stay a weight (>= 0)."""
    T = base.shape[0]
    while True:
        t = int(rng.integers(0, T - 1))
        if base[t, t] >= 1000 * LEAK:
            return t


def _draw_leak(rng, base) -> tuple[int, int]:
    """(t, j), j > t: a query that can give LEAK away (`_draw_leaking_query`), and a key
    after it."""
    t = _draw_leaking_query(rng, base)
    return t, int(rng.integers(t + 1, base.shape[0]))


def _lesson_weights() -> tuple[CheckPlan, dict[str, np.ndarray]]:
    """The default variant's plan and matrices, from their fixed seeds."""
    plan = DEFAULT_CHECK_PLAN
    weights = {"small64": causal_weights(311, plan.small64, np.float64),  # (6, 6)
               "small32": causal_weights(312, plan.small32, np.float32),  # (7, 7)
               "medium32": causal_weights(313, plan.medium32, np.float32),  # (64, 64)
               "medium64": causal_weights(315, plan.medium64, np.float64),  # (48, 48)
               "base": causal_weights(316, plan.base, np.float64),  # (8, 8)
               "unmasked": sdpa_ref.attention(*make_inputs(317, plan.base, plan.base, 4,
                                                         2))[1]}  # (8, 8), no mask
    return plan, weights


def _drawn_check_weights(rng) -> tuple[CheckPlan, dict[str, np.ndarray]]:
    """A student's plan and matrices: sizes, values and broken entries drawn from `rng`."""
    small64, small32, base = (int(x) for x in rng.choice(SMALL_SIZES, size=3, replace=False))
    medium32, medium64 = (int(x) for x in rng.choice(MEDIUM_SIZES, size=2, replace=False))
    weights = {"base": _drawn_weights(rng, base, np.float64)}  # (b, b)
    broken = {"scaled_row": int(rng.integers(0, base)), "leak": _draw_leak(rng, weights["base"]),
              "nan_row": int(rng.integers(0, base - 1))}  # not the last: see CheckPlan
    sizes = {"small64": small64, "small32": small32, "medium32": medium32, "medium64": medium64}
    for (name, size), dtype in zip(sizes.items(), (np.float64, np.float32, np.float32,
                                                   np.float64), strict=True):
        weights[name] = _drawn_weights(rng, size, dtype)
    weights["unmasked"] = sdpa_ref.attention(*make_inputs(rng, base, base, 4, 2))[1]  # (b, b)
    # drawn after the others, which stay as they were before it
    broken["adjacent_leak"] = _draw_leaking_query(rng, weights["base"])
    plan = CheckPlan(**sizes, base=base, **broken)
    return plan, weights


class CheckMatrices(NamedTuple):
    """(matrix, what the student is told it is) pairs; the hidden values never reach a
    message, only the sizes and which row is broken."""

    correct: tuple  # every check must accept each of these
    rows_broken: tuple  # rows_sum_to_one must reject each of these
    future_broken: tuple  # future_is_zero must reject each of these
    plan: CheckPlan


@lru_cache(maxsize=64)
def check_matrices(variant) -> CheckMatrices:
    """The matrices one student's checks are handed: the lesson's own for the default variant
    (seeds 311 to 317), any other variant's sizes, values and broken entries drawn from its
    own random numbers (`Variant.rng`)."""
    plan, weights = (_lesson_weights() if variant.inputs_seed is None
                     else _drawn_check_weights(variant.rng("ex3 checks")))
    base = weights["base"]  # (b, b): the broken ones start here
    rounded = "whose rows sum to 1 only up to rounding"
    correct = (
        (weights["small64"], "a correct float64 causal attention matrix"),
        (weights["small32"], f"a correct float32 causal attention matrix, {rounded}"),
        (weights["medium32"], f"a correct ({plan.medium32}, {plan.medium32}) float32 causal "
                              f"attention matrix, {rounded}"),
        (weights["medium64"], f"a correct ({plan.medium64}, {plan.medium64}) float64 causal "
                              "attention matrix"),
        # the broken matrices' own shape and dtype, correct: a check cannot tell them by shape
        (base, f"a correct ({plan.base}, {plan.base}) float64 causal attention matrix"),
    )
    transposed = (base.T, "a causal attention matrix transposed (its columns sum to 1, its "
                          "rows do not, and its weights sit above the diagonal)")
    nan_row = (_nan_row(base, plan.nan_row), f"a causal attention matrix whose "
               f"{row_named(plan.nan_row)} is NaN (a fully masked row under a -inf fill)")
    short = "sums to half a hundredth less than 1"
    T, adjacent = plan.base, plan.adjacent_leak
    rows_broken = (
        (_scaled_row(base, plan.scaled_row, SHORT_ROW), f"a causal attention matrix whose "
         f"{row_named(plan.scaled_row)} {short}"),
        transposed,
        nan_row,
        # the edges a loop or a slice can be off by one at
        (_scaled_row(base, 0, SHORT_ROW), f"a causal attention matrix whose first row {short}"),
        (_scaled_row(base, T - 1, SHORT_ROW), f"a causal attention matrix whose last row "
                                              f"{short}"),
    )
    future_broken = (
        (_leaking(base, *plan.leak, LEAK), "a causal attention matrix with a weight of 1e-6 "
                                           "on one future key"),
        (weights["unmasked"], "an attention matrix computed without the causal mask"),
        transposed,
        nan_row,
        (_leaking(base, adjacent, adjacent + 1, LEAK), f"a causal attention matrix whose "
         f"{row_named(adjacent)} has a weight of 1e-6 on the very next key, just above the "
         "diagonal"),
        (_leaking(base, 0, T - 1, LEAK), "a causal attention matrix whose first row has a "
                                         "weight of 1e-6 on the last key, the top-right corner"),
    )
    return CheckMatrices(correct, rows_broken, future_broken, plan)


_ROWS_HINT = "each row of the matrix must sum to 1, up to floating-point rounding"
_FUTURE_HINT = ("every weight strictly above the diagonal (key j after query t) must be "
                "exactly 0; the diagonal and below may hold any weight")


def check_order(variant, name: str, count: int) -> list[int]:
    """The order the matrices are handed to check `name`: correct and broken mixed, drawn from
    the student's hidden inputs (a fixed mix for the default variant), so that a check that
    counts its calls, instead of reading the matrix, cannot know which answer is wanted."""
    rng = (variant.rng(f"ex3 {name} order") if variant.inputs_seed is not None
           else np.random.default_rng(318))
    return [int(i) for i in rng.permutation(count)]


def judge_check(student, name, correct, broken, hint):
    """The check accepts every correct matrix and rejects every broken one, asked in a mixed
    order (`check_order`)."""
    cases = [(attn, what, True) for attn, what in correct]
    cases += [(attn, what, False) for attn, what in broken]
    for index in check_order(student.variant, name, len(cases)):
        attn, what, right = cases[index]
        verdict = as_verdict(_call_check(student, name, attn, what), name)
        if right and not verdict:
            raise Mismatch(f"{name} returned False for {what}", f"a correct matrix must pass: "
                           f"{hint}")
        if not right and verdict:
            raise Mismatch(f"{name} returned True for {what}", f"a broken matrix must fail: "
                           f"{hint}")


def _call_check(student, name, attn, what):
    try:
        return student.call(name, attn, readonly=True)
    except StudentRaised as err:
        err.context = f"on {what}"
        raise


@pytest.mark.points(1)
def test_rows_sum_to_one_passes_attention_and_fails_broken_rows(student):
    matrices = check_matrices(student.variant)
    judge_check(student, "rows_sum_to_one", matrices.correct, matrices.rows_broken, _ROWS_HINT)


@pytest.mark.points(1)
def test_future_is_zero_passes_causal_attention_and_fails_any_leak(student):
    matrices = check_matrices(student.variant)
    judge_check(student, "future_is_zero", matrices.correct, matrices.future_broken,
                _FUTURE_HINT)
