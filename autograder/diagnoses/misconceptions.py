"""Attention as a student might get it wrong: each misconception is one option of a model.

A `Model` combines one choice per step (scale, mask handling, softmax axis, normalisation,
orientation); the correct model is all defaults. Exercise 3's diagnosis looks for the models
that reproduce what the student's `attention` returned on a few probe inputs, so mistakes that
come together (no scaling *and* a zero-filled mask) are recognised together.

Two options have a number in them: masked scores set to a constant that is not negative
enough (0, -1, -10: `mask-zero-fill`), and a scale by some other factor than the named ones
(1/log(d_k), 1/2: `wrong-scale`). The number a student used is read off their own answer
(`fitted`), so that each such slip is one mistake, not only the constants of `all_models`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from functools import cache

import numpy as np

# step -> option -> the diagnosis code it stands for ("" for the correct option)
SCALES = {
    "1/sqrt(d_k)": "",
    "none": "no-scaling",
    "1/d_k": "wrong-scale",
    "1/sqrt(d_v)": "wrong-scale",
    "sqrt(d_k)": "wrong-scale",
    # d_k read from the wrong axis: Q.shape[0] or len(Q) (the queries), len(K) (the keys)
    "1/sqrt(n)": "wrong-scale",
    "1/sqrt(m)": "wrong-scale",
    "other factor": "wrong-scale",  # read off the answer by `fitted`, after the named ones
}
MASKING = {
    "fill -inf": "",
    "ignored": "mask-ignored",
    "inverted": "mask-inverted",
    "after softmax": "mask-after-softmax",
    "fill constant": "mask-zero-fill",  # 0 in `all_models`; any constant via `fitted`
}
AXES = {"keys": "", "queries": "softmax-axis"}
NORMALISATION = {"rows": "", "none": "not-normalized", "none, no max": "not-normalized",
                 "whole matrix": "not-normalized",
                 # e / e.sum(axis=-1) without keepdims: the (n,) sums broadcast along the
                 # rows, so column j is divided by row j's sum; crashes unless n = m
                 "rows, no keepdims": "not-normalized"}
ORIENTATION = {"Q K^T": "", "K Q^T": "transposed", "Q^T K": "transposed",
               "Q K": "transposed"}  # K not transposed: runs only where d_k = m


@dataclass(frozen=True)
class Model:
    scale: str = "1/sqrt(d_k)"
    masking: str = "fill -inf"
    axis: str = "keys"
    normalisation: str = "rows"
    orientation: str = "Q K^T"
    fill: float = 0.0  # the constant of masking "fill constant"
    factor: float = 0.0  # the factor of scale "other factor" (0 until `fitted` sets it)

    @property
    def codes(self) -> frozenset[str]:
        return frozenset(
            code
            for code in (SCALES[self.scale], MASKING[self.masking], AXES[self.axis],
                         NORMALISATION[self.normalisation], ORIENTATION[self.orientation])
            if code
        )

    @property
    def deviations(self) -> float:
        """How many steps differ from attention's; a fitted factor counts half a step more
        than a named one, so that a named scale explains what it can first (a scale of
        exactly 1 is `no-scaling`, not some other factor that happens to be 1)."""
        count = len([field for field, default in zip(self.choices, Model().choices, strict=True)
                     if field != default])
        return count + 0.5 * (self.scale == "other factor")

    @property
    def choices(self) -> tuple[str, ...]:
        return (self.scale, self.masking, self.axis, self.normalisation, self.orientation)

    def __call__(self, Q, K, V, mask=None):
        """(out, attn) as this model computes them, or None where it would crash."""
        scores = self.scores(Q, K, V)  # (n, m)
        if scores is None or (self.normalisation == "rows, no keepdims"
                              and scores.shape[0] != scores.shape[1]):
            return None
        hide = None
        if mask is not None:
            hide = {"fill -inf": mask, "ignored": None, "inverted": ~mask,
                    "after softmax": None, "fill constant": None}[self.masking]
            if self.masking == "fill constant":
                scores = np.where(mask, self.fill, scores)  # (n, m)
        if hide is not None:
            scores = np.where(hide, -np.inf, scores)  # (n, m)
        attn = self._softmax(scores)  # (n, m)
        if mask is not None and self.masking == "after softmax":
            attn = np.where(mask, 0.0, attn)  # (n, m), rows now sum to less than 1
        return attn @ V, attn  # (n, m) @ (m, d_v) -> (n, d_v)

    def scores(self, Q, K, V):
        """The scaled scores (n, m) this model computes before masking, or None where the
        code would crash."""
        (n, d_k), (m, d_v) = Q.shape, V.shape
        if self.scale == "other factor" and self.factor <= 0:
            return None  # not fitted yet: this model computes nothing by itself
        factor = self.factor if self.scale == "other factor" else named_factors(
            n, m, d_k, d_v)[self.scale]
        if self.orientation == "K Q^T":
            if n != m:
                return None  # (m, n) weights cannot multiply V (m, d_v): the code crashes
            return K @ Q.T * factor  # (m, d_k) @ (d_k, n) -> (m, n), used as if (n, m)
        if self.orientation == "Q^T K":
            if not n == m == d_k:
                return None  # (d_k, d_k) scores fit neither the mask nor V: a crash
            return Q.T @ K * factor  # (d_k, n) @ (m, d_k) -> (d_k, d_k), used as (n, m)
        if self.orientation == "Q K":
            if d_k != m:
                return None  # (n, d_k) @ (m, d_k) needs d_k = m: the code crashes
            return Q @ K * factor  # (n, d_k) @ (m, d_k) -> (n, d_k) = (n, m), as if (n, m)
        return Q @ K.T * factor  # (n, d_k) @ (d_k, m) -> (n, m)

    def _softmax(self, scores):
        axis = -1 if self.axis == "keys" else 0
        with np.errstate(all="ignore"):
            peak = scores.max(axis=axis, keepdims=True)  # (n, 1) or (1, m)
            shifted = scores if self.normalisation == "none, no max" else scores - peak
            weights = np.exp(shifted)  # (n, m)
            if self.normalisation == "rows":
                weights = weights / weights.sum(axis=axis, keepdims=True)
            elif self.normalisation == "whole matrix":
                weights = weights / weights.sum()
            elif self.normalisation == "rows, no keepdims":  # square only (`__call__`)
                weights = weights / weights.sum(axis=axis)[None, :]  # (n, m) / (1, n)
        return weights  # (n, m)


def named_factors(n, m, d_k, d_v) -> dict[str, float]:
    """The factor of each named scale option."""
    return {"1/sqrt(d_k)": 1 / math.sqrt(d_k), "none": 1.0, "1/d_k": 1 / d_k,
            "1/sqrt(d_v)": 1 / math.sqrt(d_v), "sqrt(d_k)": math.sqrt(d_k),
            "1/sqrt(n)": 1 / math.sqrt(n), "1/sqrt(m)": 1 / math.sqrt(m)}


def fitted(model, attn, Q, K, V, mask):
    """`model` with its numbers (scale "other factor", masking "fill constant") read off the
    student's weights `attn` (n, m), or None when it has none or they cannot be read.

    Within one softmax (a row over the keys, or a column over the queries), weights are
    exp(score) up to a common factor: two unmasked weights a, b with raw scores r, t give the
    scale, (log a - log b) / (r - t); a masked weight a beside an unmasked b of score s gives
    the fill, log a - log b + s. One pair sets each number; whether every other weight then
    agrees is for the caller to compare. A factor that is not positive (uniform weights,
    which ignore the scores, give 0) is no fit; one that a named option gives on these inputs
    is a fit (1/2 where d_k = 4), and `deviations` puts the named options first."""
    if model.scale != "other factor" and model.masking != "fill constant":
        return None
    if attn.ndim != 2 or (mask is not None and attn.shape != mask.shape):
        return None
    if model.scale == "other factor":
        raw = dataclasses.replace(model, scale="none").scores(Q, K, V)  # (n, m) unscaled
        factor = _read_scale(attn, raw, mask, model.axis)
        if factor is None:
            return None
        model = dataclasses.replace(model, factor=factor)
    if model.masking == "fill constant" and mask is not None:
        fill = _read_fill(attn, model.scores(Q, K, V), mask, model.axis)
        if fill is None:
            return None
        model = dataclasses.replace(model, fill=fill)
    return model


def _as_rows(axis, *arrays):
    """The arrays with one softmax per row (columns become rows for a softmax over queries)."""
    return arrays if axis == "keys" else tuple(a.T for a in arrays)


def _read_scale(attn, raw, mask, axis):
    if raw is None or raw.shape != attn.shape:
        return None
    shown = np.ones(attn.shape, dtype=bool) if mask is None else ~mask  # (n, m)
    attn, raw, shown = _as_rows(axis, attn, raw, shown)
    with np.errstate(all="ignore"):
        finite = shown & np.isfinite(attn)  # (n, m)
        top = np.max(np.where(finite, attn, 0.0), axis=-1, keepdims=True)  # (n, 1)
        # A weight a billionth of its row's largest or less is rounding's, not a score's:
        # read off it, any one-hot row "fits" a huge factor, which every other weight, 0
        # within the tolerance, then agrees with.
        usable = finite & (attn > 1e-9 * top)  # (n, m)
        for row in np.flatnonzero(usable.sum(axis=-1) >= 2):
            keys = np.flatnonzero(usable[row])
            first, other = keys[0], keys[np.argmax(np.abs(raw[row, keys] - raw[row, keys[0]]))]
            gap = raw[row, first] - raw[row, other]
            if gap != 0:
                factor = (np.log(attn[row, first]) - np.log(attn[row, other])) / gap
                return float(factor) if np.isfinite(factor) and factor > 0 else None
    return None


def _read_fill(attn, scores, mask, axis):
    if scores is None or scores.shape != attn.shape:
        return None
    attn, mask, scores = _as_rows(axis, attn, mask, scores)
    with np.errstate(all="ignore"):
        usable = np.isfinite(attn) & (attn > 0)  # (n, m) weights whose log is a number
        rows = np.flatnonzero(np.any(mask & usable, axis=-1) & np.any(~mask & usable, axis=-1))
        if not rows.size:
            return None
        row = rows[0]
        hidden = np.flatnonzero(mask[row] & usable[row])[0]
        shown = np.flatnonzero(~mask[row] & usable[row])[0]
        fill = np.log(attn[row, hidden]) - np.log(attn[row, shown]) + scores[row, shown]
    return float(fill) if np.isfinite(fill) else None


@cache
def all_models() -> tuple[Model, ...]:
    """Every combination of options, the simplest (fewest mistakes) first."""
    models = [Model(*choice) for choice in itertools.product(
        SCALES, MASKING, AXES, NORMALISATION, ORIENTATION)
        # over the queries, e / e.sum(axis=0) broadcasts right: that is "rows" already
        if choice[2:4] != ("queries", "rows, no keepdims")]
    return tuple(sorted(models, key=lambda model: model.deviations))
