"""Exercise 3: why `attention` or `causal_mask` is wrong, found by probing them.

`attention` is called on a few small probes (n != m and n == m, d_k != d_v, a mask hiding
the largest scores, a causal mask, no mask, large scores) and its answers are matched
against the models of `misconceptions`. Shapes, swapped returns, input mutation, repeated
calls and the causal mask are checked directly.
"""

from __future__ import annotations

import numpy as np

import sdpa_ref
from autograder.diagnoses.misconceptions import all_models
from autograder.diagnoses.probe import Prober


def _inputs(seed, n, m, d_k, d_v):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d_k)), rng.normal(size=(m, d_k)), rng.normal(size=(m, d_v))


def _hide_largest(Q, K, per_row):
    scores = Q @ K.T  # (n, m)
    rank = np.argsort(np.argsort(-scores, axis=-1), axis=-1)  # (n, m), 0 = largest
    return rank < per_row  # (n, m)


def _pair(value):
    """(first, second) as float arrays when the answer is a pair of numeric arrays, else None."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        return None
    try:
        first, second = (np.asarray(v, dtype=float) for v in value)
    except (TypeError, ValueError):
        return None
    return first, second


def _agrees(student, model_result) -> bool:
    """The student's (out, attn) matches a model's, ignoring rows the model fully hid."""
    if model_result is None or student is None:
        return model_result is None and student is None
    (out, attn), (model_out, model_attn) = student, model_result
    if out.shape != model_out.shape or attn.shape != model_attn.shape:
        return False
    rows = ~np.any(np.isnan(model_attn), axis=-1)  # (n,) rows where the model is defined
    a, b = attn[rows], model_attn[rows]
    o, p = out[rows], model_out[rows]
    return bool(np.all(np.isfinite(a)) and np.all(np.isfinite(o))
                and np.allclose(a, b, rtol=1e-6, atol=1e-9)
                and np.allclose(o, p, rtol=1e-6, atol=1e-9))


class _Probe:
    """One call of the student's attention and its answer, as (out, attn) or None."""

    def __init__(self, prober, Q, K, V, mask_kwargs):
        self.Q, self.K, self.V = Q, K, V
        self.mask = mask_kwargs.get("mask")
        answer = prober.call("attention", Q, K, V, **mask_kwargs)
        self.crashed = not answer.ok
        self.result = _pair(answer.value) if answer.ok else None
        self.shapes_ok = self.result is not None and (
            self.result[0].shape == (Q.shape[0], V.shape[1])
            and self.result[1].shape == (Q.shape[0], K.shape[0]))

    def answer(self, swapped=False):
        """The student's (out, attn), or (attn, out) read as swapped; None after a crash."""
        if self.result is None or not swapped:
            return self.result
        return self.result[1], self.result[0]

    def expected(self, model):
        return model(self.Q, self.K, self.V, self.mask)


def _best_models(probes):
    """The simplest models that reproduce every probe, and whether returns are swapped."""
    for swapped in (False, True):
        found, depth = [], None
        for model in all_models():
            if depth is not None and model.deviations > depth:
                break
            if all(_agrees(p.answer(swapped), p.expected(model)) for p in probes):
                found.append(model)
                depth = model.deviations
        if found:
            return found, swapped
    return [], False


def diagnose(student) -> set[str]:
    prober = Prober(student)
    codes = _diagnose_causal_mask(prober)
    if prober.student.has("attention"):
        codes |= _diagnose_attention(prober)
    return codes


def _diagnose_attention(prober) -> set[str]:
    codes: set[str] = set()
    rect = _inputs(901, n=3, m=5, d_k=4, d_v=2)
    square = _inputs(902, n=4, m=4, d_k=3, d_v=2)
    masked = [
        _Probe(prober, *rect, {"mask": _hide_largest(*rect[:2], per_row=2)}),
        _Probe(prober, *square, {"mask": sdpa_ref.causal_mask(4)}),
        _Probe(prober, *square, {"mask": _hide_largest(*square[:2], per_row=1)}),
    ]
    models, swapped = _best_models(masked)
    if models:
        # Report only what every simplest explanation agrees on.
        codes |= set.intersection(*(set(model.codes) for model in models))
        if swapped:
            codes.add("returns-swapped")
    codes |= _shape_codes(masked)

    unmasked = [_Probe(prober, *rect, {}), _Probe(prober, *rect, {"mask": None}),
                _Probe(prober, *square, {})]
    if _mask_none_broken(masked, unmasked, models, swapped):
        codes.add("mask-none-broken")
    if not models:
        codes |= _unmasked_codes(unmasked)
    codes |= _shape_codes(unmasked)

    if _unstable(prober, masked[1], unmasked[0]):
        codes.add("unstable-softmax")
    if _mutates(prober, rect):
        codes.add("mutates-input")
    if _stateful(prober, masked[0]):
        codes.add("stateful")
    return codes


def _same_answer(a, b) -> bool:
    return a is not None and b is not None and all(
        x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
        for x, y in zip(a, b, strict=True))


def _stateful(prober, first) -> bool:
    """Same inputs, a different answer; or new inputs of the same shapes, the old answer."""
    if first.result is None:
        return False
    (n, d_k), (m, d_v) = first.Q.shape, first.V.shape
    other = _inputs(903, n=n, m=m, d_k=d_k, d_v=d_v)
    new = _Probe(prober, *other, {"mask": first.mask})
    again = _Probe(prober, first.Q, first.K, first.V, {"mask": first.mask})
    changed = again.result is not None and not _same_answer(again.result, first.result)
    return changed or _same_answer(new.result, first.result)


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


def _mask_none_broken(masked, unmasked, models, swapped) -> bool:
    """Masks work the student's way, but no mask, or mask=None, goes wrong or crashes."""
    if models:
        return not all(
            any(_agrees(p.answer(swapped), p.expected(model)) for model in models)
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
    models, swapped = _best_models(probes)
    codes = set.intersection(*(set(m.codes) for m in models)) if models else set()
    if not models:
        attn = probes[0].result[1]
        if not np.allclose(attn.sum(axis=-1), 1.0, atol=1e-6) and not np.allclose(
                attn.sum(axis=0), 1.0, atol=1e-6):
            codes.add("not-normalized")
    return codes | ({"returns-swapped"} if swapped else set())


def _unstable(prober, moderate_masked, moderate_plain) -> bool:
    """Large scores (about 800 after scaling) give NaN/inf or a crash where small ones did not."""
    for moderate in (moderate_masked, moderate_plain):
        if moderate.result is None or not all(np.all(np.isfinite(a)) for a in moderate.result):
            continue
        Q, K, V = (a.copy() for a in (moderate.Q, moderate.K, moderate.V))
        Q[:, 0] += 40.0  # every scaled score gains about 800; their differences stay O(1)
        K[:, 0] += 40.0
        kwargs = {"mask": moderate.mask} if moderate.mask is not None else {}
        large = _Probe(prober, Q, K, V, kwargs)
        if large.crashed and large.result is None:
            return True
        if large.result is not None and not all(np.all(np.isfinite(a)) for a in large.result):
            return True
    return False


def _mutates(prober, inputs) -> bool:
    Q, K, V = inputs
    mask = _hide_largest(Q, K, per_row=2)  # (n, m)
    answer = prober.call_with_inputs("attention", Q, K, V, mask=mask)
    if not answer.ok:
        return False
    _, args, kwargs = answer.value
    before = (Q, K, V, mask)
    after = (*args, kwargs.get("mask"))
    return any(not np.array_equal(np.asarray(a), b) for a, b in zip(after, before, strict=True))


def _diagnose_causal_mask(prober) -> set[str]:
    if not prober.student.has("causal_mask"):
        return set()
    T = 5
    answer = prober.call("causal_mask", T)
    if not answer.ok:
        return set()
    try:
        got = np.asarray(answer.value)
    except (TypeError, ValueError):
        return set()
    if got.shape != (T, T):
        return {"wrong-shape"}
    got = got.astype(bool) if got.dtype.kind in "biuf" else got
    ones = np.ones((T, T), dtype=bool)  # (T, T)
    if np.array_equal(got, np.triu(ones, k=0)):
        return {"causal-diagonal"}
    if np.array_equal(got, np.tril(ones, k=-1)):
        return {"causal-wrong-triangle"}
    if np.array_equal(got, np.tril(ones, k=0)):
        return {"causal-wrong-triangle", "causal-diagonal"}
    return set()
