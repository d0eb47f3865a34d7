"""Exercise 3: why `attention` or `causal_mask` is wrong, found by probing them (and, in
`checks`, why `rows_sum_to_one` or `future_is_zero` is).

`attention` is called on a few small probes (n != m, n == m, and n = m = d_k = d_v, where
even scores multiplied the wrong way round go through; d_k != d_v; masks hiding the largest
scores, a causal mask, no mask) and its answers are matched against the models of
`misconceptions`, read in each layout a student might return them in (as asked, swapped,
one array transposed). Input mutation, repeated calls, large scores and the causal mask are
checked directly.
"""

from __future__ import annotations

from functools import cache

import numpy as np

import sdpa_ref
from autograder.compare import FLOAT_RESULTS, numbers
from autograder.diagnoses import checks
from autograder.diagnoses.misconceptions import all_models, fitted
from autograder.diagnoses.probe import Prober


def _inputs(seed, n, m, d_k, d_v):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d_k)), rng.normal(size=(m, d_k)), rng.normal(size=(m, d_v))


def _hide_largest(Q, K, per_row):
    scores = Q @ K.T  # (n, m)
    rank = np.argsort(np.argsort(-scores, axis=-1), axis=-1)  # (n, m), 0 = largest
    return rank < per_row  # (n, m)


RECT = _inputs(901, n=3, m=5, d_k=4, d_v=2)
SQUARE = _inputs(902, n=4, m=4, d_k=3, d_v=2)
FULL = _inputs(904, n=4, m=4, d_k=4, d_v=4)  # Q^T K and K Q^T run here without crashing
# (inputs, mask) of each probe; None = no mask argument at all.
MASKED = (
    (RECT, _hide_largest(*RECT[:2], per_row=2)),
    (SQUARE, sdpa_ref.causal_mask(4)),
    (SQUARE, _hide_largest(*SQUARE[:2], per_row=1)),
    (FULL, _hide_largest(*FULL[:2], per_row=1)),
)
UNMASKED = ((RECT, None), (RECT, "None"), (SQUARE, None), (FULL, None))

# How a student may lay out a right or wrong (out, attn): layout -> its code. Weights that
# hold the right values transposed are `transposed` (keys by queries, the wrong orientation),
# as the tests' messages and the notebook's self-check say (issue 27); out transposed is an
# output of the wrong shape.
LAYOUTS = {"as asked": "", "swapped": "returns-swapped", "attn transposed": "transposed",
           "out transposed": "wrong-shape"}


def _pair(value):
    """(first, second) as float arrays when the answer is a pair of numeric arrays, else None."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        return None
    first, second = numbers(value[0]), numbers(value[1])
    return None if first is None or second is None else (first, second)


def _laid_out(pair, layout):
    """The student's pair read as (out, attn) in `layout`."""
    first, second = pair
    return {"as asked": (first, second), "swapped": (second, first),
            "attn transposed": (first, second.T), "out transposed": (first.T, second)}[layout]


def _agrees_fitted(answer, model, Q, K, V, mask) -> bool:
    """`answer` (out, attn) is what `model` computes with the numbers its own attn implies
    (`misconceptions.fitted`): a mask filled with 0, -1 or -10, a scale by 1/log(d_k) or
    1/2 alike. Not cached: the numbers are the student's."""
    if answer is None:
        return False
    model = fitted(model, answer[1], Q, K, V, mask)
    if model is None:
        return False
    with np.errstate(all="ignore"):
        return _agrees(answer, model(Q, K, V, mask))


def _agrees(student, model_result) -> bool:
    """The student's (out, attn) matches a model's, ignoring rows the model fully hid."""
    if model_result is None or student is None:
        return model_result is None and student is None
    (out, attn), (model_out, model_attn) = student, model_result
    if out.shape != model_out.shape or attn.shape != model_attn.shape:
        return False
    rows = ~np.any(np.isnan(model_attn), axis=-1)  # (n,) rows where the model is defined
    a, b, o, p = attn[rows], model_attn[rows], out[rows], model_out[rows]
    return bool(np.all(np.isfinite(a)) and np.all(np.isfinite(o))
                and FLOAT_RESULTS.ratio(a, b) <= 1 and FLOAT_RESULTS.ratio(o, p) <= 1)


class _Probe:
    """One call of the student's attention and its answer, as a pair of arrays or None."""

    def __init__(self, prober, inputs, mask):
        self.Q, self.K, self.V = inputs
        self.mask = None if isinstance(mask, str) else mask
        kwargs = {} if mask is None else {"mask": self.mask}
        answer = prober.call("attention", *inputs, **kwargs)
        self.crashed = not answer.ok
        self.result = _pair(answer.value) if answer.ok else None

    def answer(self, layout="as asked"):
        """The student's answer read as (out, attn) in `layout`; None after a crash."""
        return None if self.result is None else _laid_out(self.result, layout)

    def expected(self, model):
        return _model_answer(model, self.Q, self.K, self.V, self.mask)

    def fits(self, model, layout) -> bool:
        """The answer, read in `layout`, is what `model` computes here (with the fill
        constant, for a model that has one, read off the answer itself)."""
        answer = self.answer(layout)
        if model.scale == "other factor":  # no answer of its own until fitted to this one
            return _agrees_fitted(answer, model, self.Q, self.K, self.V, self.mask)
        return _agrees(answer, self.expected(model)) or _agrees_fitted(
            answer, model, self.Q, self.K, self.V, self.mask)

    @property
    def shapes_ok(self) -> bool:
        return self.result is not None and (
            self.result[0].shape == (self.Q.shape[0], self.V.shape[1])
            and self.result[1].shape == (self.Q.shape[0], self.K.shape[0]))


_MODEL_CACHE: dict = {}


def _model_answer(model, Q, K, V, mask):
    """A model's answer on a probe; the probes are fixed, so each is computed once."""
    key = (model, *(a.shape for a in (Q, K, V)), Q.tobytes(), K.tobytes(), V.tobytes(),
           None if mask is None else mask.tobytes())
    if key not in _MODEL_CACHE:
        _MODEL_CACHE[key] = model(Q, K, V, mask)
    return _MODEL_CACHE[key]


@cache
def _candidates():
    """(model, layout) pairs, the simplest (fewest mistakes) first."""
    pairs = [(model, layout) for model in all_models() for layout in LAYOUTS]
    return tuple(sorted(pairs, key=lambda p: p[0].deviations + (p[1] != "as asked")))


def _best_models(probes):
    """The simplest (model, layout) pairs that reproduce every probe."""
    if all(p.result is None for p in probes):
        return []  # nothing answered: no model can be told from a crash alone
    found, depth = [], None
    for model, layout in _candidates():
        deviations = model.deviations + (layout != "as asked")
        if depth is not None and deviations > depth:
            break
        if all(p.fits(model, layout) for p in probes):
            found.append((model, layout))
            depth = deviations
    return found


def _codes(found) -> set[str]:
    """What every simplest explanation agrees on."""
    sets = [set(model.codes) | ({LAYOUTS[layout]} - {""}) for model, layout in found]
    return set.intersection(*sets) if sets else set()


def diagnose(student) -> set[str]:
    prober = Prober(student)
    codes = _diagnose_causal_mask(prober)
    if prober.student.has("attention"):
        codes |= _diagnose_attention(prober)
    return codes | checks.diagnose(student)


def _diagnose_attention(prober) -> set[str]:
    masked = [_Probe(prober, inputs, mask) for inputs, mask in MASKED]
    found = _best_models(masked)
    codes = _codes(found)
    unmasked = [_Probe(prober, inputs, mask) for inputs, mask in UNMASKED]
    if _mask_none_broken(masked, unmasked, found):
        codes.add("mask-none-broken")
    if not found:
        codes |= _unmasked_codes(unmasked) | _shape_codes(masked) | _shape_codes(unmasked)
    if _unstable(prober, masked[1], unmasked[0]):
        codes.add("unstable-softmax")
    if _mutates(prober, RECT):
        codes.add("mutates-input")
    if _stateful(prober, masked[0]):
        codes.add("stateful")
    return codes


def _same_answer(a, b) -> bool:
    return a is not None and b is not None and all(
        x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
        for x, y in zip(a, b, strict=True))


def _stateful(prober, first) -> bool:
    """Same inputs, a different answer; or new inputs of the same shapes, the old answer
    (when that answer is an attention result at all: zeros never change either)."""
    if first.result is None:
        return False
    (n, d_k), (m, d_v) = first.Q.shape, first.V.shape
    other = _inputs(903, n=n, m=m, d_k=d_k, d_v=d_v)
    new = _Probe(prober, other, first.mask)
    again = _Probe(prober, (first.Q, first.K, first.V), first.mask)
    changed = again.result is not None and not _same_answer(again.result, first.result)
    return changed or (_valid(first) and _same_answer(new.result, first.result))


def _valid(probe) -> bool:
    """The answer is finite and each row of attn has some positive weight. (Not whether
    out = attn @ V: a stale answer was computed from other inputs.)"""
    if not probe.shapes_ok or not _finite(probe.result):
        return False
    return bool(np.all(probe.result[1].sum(axis=-1) > FLOAT_RESULTS.atol))


def _shape_codes(probes) -> set[str]:
    codes = set()
    for p in probes:
        if p.result is None or p.shapes_ok:
            continue
        (n, _), (m, d_v) = p.Q.shape, p.V.shape
        out, attn = p.result
        if out.shape == (n, m) and attn.shape == (n, d_v):
            codes.add("returns-swapped")
            continue
        codes.add("wrong-shape")
        if attn.shape == (m, n) and n != m:
            codes.add("transposed")
    return codes


def _mask_none_broken(masked, unmasked, found) -> bool:
    """Masks work the student's way, but no mask, or mask=None, goes wrong or crashes."""
    if found:
        return not all(
            any(p.fits(model, layout) for model, layout in found)
            for p in unmasked
        )
    # Unexplained masks: only a crash without a mask where the same inputs with one ran.
    partners = ((unmasked[0], masked[0]), (unmasked[1], masked[0]), (unmasked[2], masked[1]))
    return any(plain.crashed and not with_mask.crashed for plain, with_mask in partners)


def _unmasked_codes(unmasked) -> set[str]:
    """When masked calls explain nothing, what the unmasked calls alone show."""
    probes = [p for p in unmasked if p.result is not None and p.shapes_ok]
    if not probes:
        return set()
    found = _best_models(probes)
    codes = _codes(found)
    if not found and _finite(probes[0].result):
        attn = probes[0].result[1]
        rows_sum_to_one = FLOAT_RESULTS.ratio(attn.sum(axis=-1), 1.0) <= 1
        columns_sum_to_one = FLOAT_RESULTS.ratio(attn.sum(axis=0), 1.0) <= 1
        if not rows_sum_to_one and not columns_sum_to_one:
            codes.add("not-normalized")
    return codes


def _finite(result) -> bool:
    return result is not None and all(np.all(np.isfinite(a)) for a in result)


SPREAD = 2000.0  # one key's scaled score this far above the others: see `_spread`


def _spread(Q, K):
    """Q, K with one more component that raises every query's scaled score on key 1 by
    SPREAD: subtracting anything but each row's maximum (its minimum, its mean, its first
    score) overflows there, subtracting the maximum stays exact."""
    lift = np.sqrt(SPREAD * np.sqrt(Q.shape[1] + 1))  # lift**2 / sqrt(d_k + 1) = SPREAD
    extra_k = np.zeros((K.shape[0], 1))  # (m, 1)
    extra_k[1] = lift
    return (np.hstack([Q, np.full((Q.shape[0], 1), lift)]),  # (n, d_k + 1)
            np.hstack([K, extra_k]))  # (m, d_k + 1)


def _unstable(prober, moderate_masked, moderate_plain) -> bool:
    """Large scores (about 800 after scaling), or scores SPREAD apart within a row, give
    NaN/inf or a crash where small ones did not."""
    for moderate in (moderate_masked, moderate_plain):
        if not _finite(moderate.result):
            continue
        Q, K, V = (a.copy() for a in (moderate.Q, moderate.K, moderate.V))
        Q[:, 0] += 40.0  # every scaled score gains about 800; their differences stay O(1)
        K[:, 0] += 40.0
        for inputs in ((Q, K, V), (*_spread(moderate.Q, moderate.K), V)):
            large = _Probe(prober, inputs, moderate.mask)
            if large.crashed or (large.result is not None and not _finite(large.result)):
                return True
    return False


def catalogued(pair, Q, K, V, mask=None) -> bool:
    """Whether `pair`, the student's two arrays in the order returned, read in any layout a
    student might return them in, is what attention computes on these inputs or what one of
    `misconceptions`' models does (a value mistake, which the value tests charge). Rows a
    model leaves without any key (NaN) are not compared; some row must be. The suite's
    property tests ask this of their answers, so that an answer which ignores its inputs
    (uniform weights, say) earns nothing there while a value mistake keeps them."""
    pair = _pair(pair)
    if pair is None:
        return False
    layouts = [_laid_out(pair, layout) for layout in LAYOUTS]
    for model in all_models():
        with np.errstate(all="ignore"):
            expected = model(Q, K, V, mask)
        if any(_agrees_fitted(answer, model, Q, K, V, mask) for answer in layouts):
            return True
        if expected is None or np.all(np.isnan(expected[1])):
            continue
        if any(_agrees(answer, expected) for answer in layouts):
            return True
    return False


def catalogued_weights(pair, Q, K, V, mask=None, *, any_out_shape=False) -> bool:
    """Weaker than `catalogued`, for answers whose out is not their attn @ V: one array of
    `pair` holds, either way round, the weights that attention or one of `misconceptions`'
    models computes on these inputs, and the other is finite with out's shape (n, d_v),
    either way round. A slip in the last step alone (out scaled again, out computed from
    other weights than the attn returned) is a value mistake, which the value tests charge;
    weights that ignore the inputs are still nothing here. With `any_out_shape`, out may have
    any shape (a test of the weights alone: out computed from K instead of V, say)."""
    pair = _pair(pair)
    if pair is None:
        return False
    (n, m), d_v = (Q.shape[0], K.shape[0]), V.shape[1]
    for weights, values in (pair, pair[::-1]):
        if (not any_out_shape and values.shape not in ((n, d_v), (d_v, n))) or not np.all(
                np.isfinite(values)):
            continue
        for attn in (weights, weights.T):
            if attn.shape == (n, m) and np.all(np.isfinite(attn)) and _modelled(attn, Q, K, V,
                                                                                  mask):
                return True
    return False


def _modelled(attn, Q, K, V, mask) -> bool:
    """`attn` is what some model computes as weights, on the rows the model defines."""
    for model in all_models():
        with np.errstate(all="ignore"):
            refitted = fitted(model, attn, Q, K, V, mask)
            refit = None if refitted is None else refitted(Q, K, V, mask)
        if refit is not None and FLOAT_RESULTS.ratio(attn, refit[1]) <= 1:
            return True
        with np.errstate(all="ignore"):
            expected = model(Q, K, V, mask)
        if expected is None:
            continue
        rows = ~np.any(np.isnan(expected[1]), axis=-1)  # (n,)
        if rows.any() and FLOAT_RESULTS.ratio(attn[rows], expected[1][rows]) <= 1:
            return True
    return False


def uniform_without_mask(pair, K) -> bool:
    """Every weight 1/m: what `mask-none-broken` (the mask line run on mask=None, which
    fills every score alike) gives without a mask, in either order of the pair."""
    pair = _pair(pair)
    m = K.shape[0]
    return pair is not None and any(
        a.ndim == 2 and m in a.shape and bool(np.allclose(a, 1 / m)) for a in pair)


def _mutates(prober, inputs) -> bool:
    Q, K, V = inputs
    mask = _hide_largest(Q, K, per_row=2)  # (n, m)
    answer = prober.call_with_inputs("attention", Q, K, V, mask=mask)
    if not answer.ok:
        return False
    try:
        _, args, kwargs = answer.value
        after = (*args, kwargs.get("mask"))
        return any(not np.array_equal(np.asarray(a), b)
                   for a, b in zip(after, (Q, K, V, mask), strict=True))
    except Exception:  # noqa: BLE001 - inputs turned into something else: changed
        return True


def _diagnose_causal_mask(prober) -> set[str]:
    if not prober.student.has("causal_mask"):
        return set()
    T = 5
    answer = prober.call("causal_mask", T)
    if not answer.ok:
        return set()
    try:
        got = np.asarray(answer.value)
    except Exception:  # noqa: BLE001 - not an array: nothing to diagnose
        return set()
    if got.dtype.kind not in "biuf":
        return set()
    if got.shape != (T, T):
        return {"wrong-shape"}
    got = got.astype(bool)
    ones = np.ones((T, T), dtype=bool)  # (T, T)
    if np.array_equal(got, np.triu(ones, k=0)):
        return {"causal-diagonal"}
    if np.array_equal(got, np.tril(ones, k=-1)):
        return {"causal-wrong-triangle"}
    if np.array_equal(got, np.tril(ones, k=0)):
        return {"causal-wrong-triangle", "causal-diagonal"}
    return set()
