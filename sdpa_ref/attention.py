"""Scaled dot-product attention, written the way the lesson writes it."""

import math

import numpy as np

from .softmax import softmax


def attention(Q, K, V, mask=None, *, scale=None):
    """Scaled dot-product attention: ``softmax(Q K^T / sqrt(d_k)) V``.

    Q: (..., n, d_k) queries     K: (..., m, d_k) keys     V: (..., m, d_v) values
    mask: (..., n, m) boolean, **True = masked out** (query i may not look at key j), or None.
    scale: multiplies the scores; default ``1 / sqrt(d_k)``.
    Returns ``(out, attn)``: out (..., n, d_v), attn (..., n, m) whose rows sum to 1.

    Leading dimensions broadcast like ``@``. A row whose keys are all masked gets zero
    weights and a zero output, never NaN (PyTorch's CPU kernels do the same). float32 in
    gives float32 out. The inputs are never modified, so read-only arrays are fine.
    """
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    # A Python float: dividing float32 by np.sqrt(d_k), a float64 scalar, would upcast.
    scale = 1.0 / math.sqrt(Q.shape[-1]) if scale is None else float(scale)
    scores = Q @ K.swapaxes(-1, -2) * scale  # (..., n, d_k) @ (..., d_k, m) -> (..., n, m)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)  # (..., n, m); exp(-inf) = 0 exactly
    attn = softmax(scores, axis=-1)  # (..., n, m), normalised over the keys
    out = attn @ V  # (..., n, m) @ (..., m, d_v) -> (..., n, d_v)
    return out, attn
