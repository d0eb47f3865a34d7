"""Attention as a student might get it wrong: each misconception is one option of a model.

A `Model` combines one choice per step (scale, mask handling, softmax axis, normalisation,
orientation); the correct model is all defaults. Exercise 3's diagnosis looks for the models
that reproduce what the student's `attention` returned on a few probe inputs, so mistakes that
come together (no scaling *and* a zero-filled mask) are recognised together.
"""

from __future__ import annotations

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
}
MASKING = {
    "fill -inf": "",
    "ignored": "mask-ignored",
    "inverted": "mask-inverted",
    "after softmax": "mask-after-softmax",
    "fill 0": "mask-zero-fill",
}
AXES = {"keys": "", "queries": "softmax-axis"}
NORMALISATION = {"rows": "", "none": "not-normalized", "none, no max": "not-normalized",
                 "whole matrix": "not-normalized"}
ORIENTATION = {"Q K^T": "", "K Q^T": "transposed", "Q^T K": "transposed"}


@dataclass(frozen=True)
class Model:
    scale: str = "1/sqrt(d_k)"
    masking: str = "fill -inf"
    axis: str = "keys"
    normalisation: str = "rows"
    orientation: str = "Q K^T"

    @property
    def codes(self) -> frozenset[str]:
        return frozenset(
            code
            for code in (SCALES[self.scale], MASKING[self.masking], AXES[self.axis],
                         NORMALISATION[self.normalisation], ORIENTATION[self.orientation])
            if code
        )

    @property
    def deviations(self) -> int:
        return len([field for field, default in zip(self.choices, Model().choices, strict=True)
                    if field != default])

    @property
    def choices(self) -> tuple[str, ...]:
        return (self.scale, self.masking, self.axis, self.normalisation, self.orientation)

    def __call__(self, Q, K, V, mask=None):
        """(out, attn) as this model computes them, or None where it would crash."""
        (n, d_k), (m, d_v) = Q.shape, V.shape
        factor = {"1/sqrt(d_k)": 1 / math.sqrt(d_k), "none": 1.0, "1/d_k": 1 / d_k,
                  "1/sqrt(d_v)": 1 / math.sqrt(d_v), "sqrt(d_k)": math.sqrt(d_k),
                  "1/sqrt(n)": 1 / math.sqrt(n), "1/sqrt(m)": 1 / math.sqrt(m)}[self.scale]
        if self.orientation == "K Q^T":
            if n != m:
                return None  # (m, n) weights cannot multiply V (m, d_v): the code crashes
            scores = K @ Q.T * factor  # (m, d_k) @ (d_k, n) -> (m, n), used as if (n, m)
        elif self.orientation == "Q^T K":
            if not n == m == d_k:
                return None  # (d_k, d_k) scores fit neither the mask nor V: a crash
            scores = Q.T @ K * factor  # (d_k, n) @ (m, d_k) -> (d_k, d_k), used as (n, m)
        else:
            scores = Q @ K.T * factor  # (n, d_k) @ (d_k, m) -> (n, m)
        hide = None
        if mask is not None:
            hide = {"fill -inf": mask, "ignored": None, "inverted": ~mask,
                    "after softmax": None, "fill 0": None}[self.masking]
            if self.masking == "fill 0":
                scores = np.where(mask, 0.0, scores)  # (n, m)
        if hide is not None:
            scores = np.where(hide, -np.inf, scores)  # (n, m)
        attn = self._softmax(scores)  # (n, m)
        if mask is not None and self.masking == "after softmax":
            attn = np.where(mask, 0.0, attn)  # (n, m), rows now sum to less than 1
        return attn @ V, attn  # (n, m) @ (m, d_v) -> (n, d_v)

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
        return weights  # (n, m)


@cache
def all_models() -> tuple[Model, ...]:
    """Every combination of options, the simplest (fewest mistakes) first."""
    models = [Model(*choice) for choice in itertools.product(
        SCALES, MASKING, AXES, NORMALISATION, ORIENTATION)]
    return tuple(sorted(models, key=lambda model: model.deviations))
