"""Numerically stable softmax and its Jacobian."""

import numpy as np


def softmax(x, axis=-1):
    """Softmax of ``x`` along ``axis``: ``exp(x) / sum(exp(x))``, computed without overflow.

    x: array (..., k, ...); returns an array of the same shape and float dtype.

    The maximum is subtracted first, so the largest exponent is ``exp(0) = 1`` and scores
    like 1000 do not overflow. An axis whose entries are all ``-inf`` (every key masked out)
    gives all zeros rather than NaN: no weight at all instead of ``0 / 0``. A NaN or a
    ``+inf`` in an axis makes that axis all NaN, as PyTorch's softmax does: nothing to
    weigh is a fact, an undefined score is an error to show, not to hide as zeros.
    """
    x = np.asarray(x)
    x = x.astype(np.result_type(x, 1.0), copy=False)  # integers -> float64; float32 stays
    peak = np.max(x, axis=axis, keepdims=True, initial=-np.inf)  # (..., 1, ...); no keys: -inf
    peak = np.where(peak == -np.inf, 0.0, peak)  # all -inf: shift by 0, since -inf - -inf is NaN
    weights = np.exp(x - peak)  # (..., k, ...), each in [0, 1]
    total = np.sum(weights, axis=axis, keepdims=True)  # (..., 1, ...)
    # total is 0 (no keys), NaN (a NaN or +inf score) or >= 1: only the first is left as zeros
    return np.divide(weights, total, out=np.zeros_like(weights), where=total != 0)


def softmax_jacobian(x, axis=-1):
    """Jacobian of ``softmax(x, axis)``: ``J[..., i, j] = d p_i / d x_j = p_i (delta_ij - p_j)``.

    x: array (..., k, ...); returns (..., k, k), where ``...`` are the other axes of ``x`` in
    order. Exercise 2's gradient "d weight of the smaller key / d its own score" is the
    diagonal entry ``J[1, 1] = p_1 (1 - p_1)`` for the scores ``(8, 0)`` or ``(1, 0)``.
    """
    p = np.moveaxis(softmax(x, axis), axis, -1)  # (..., k)
    eye = np.eye(p.shape[-1], dtype=p.dtype)  # (k, k)
    return p[..., :, None] * (eye - p[..., None, :])  # (..., k, 1) * (..., k, k) -> (..., k, k)
