"""Blockwise attention with an online softmax: the FlashAttention idea, in numpy.

``attention`` builds the whole (n, m) weight matrix: O(n m) memory, 512 MiB at n = m = 8192
in float64. Here the keys are visited one block at a time and each query block keeps
only a running maximum, a running sum of weights and a running weighted sum of values.
When a later block raises the maximum, the old sums are rescaled by ``exp(old - new)``,
so the result is exactly ``softmax(scores) @ V`` without the matrix ever existing.
"""

import math

import numpy as np


def flash_attention(Q, K, V, *, causal=False, scale=None, block_q=512, block_k=1024):
    """Scaled dot-product attention computed tile by tile; equals ``attention(Q, K, V)[0]``.

    Q: (..., n, d_k)   K: (..., m, d_k)   V: (..., m, d_v)   leading dimensions broadcast.
    causal: mask the future as ``causal_mask(n, m)`` does (query i sees keys 0 .. i).
    scale: multiplies the scores; default ``1 / sqrt(d_k)``.
    block_q, block_k: tile size; extra memory is O(block_q * block_k + (n + m) d), never O(n m).
    Returns out (..., n, d_v). The weights are never stored, so there is no ``attn``.
    """
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    scale = 1.0 / math.sqrt(Q.shape[-1]) if scale is None else float(scale)
    dtype = np.result_type(Q, K, V, 1.0)  # float32 stays float32, integers become float64
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    Q = np.broadcast_to(Q, batch + Q.shape[-2:])  # (..., n, d_k), a view
    K = np.broadcast_to(K, batch + K.shape[-2:])  # (..., m, d_k)
    V = np.broadcast_to(V, batch + V.shape[-2:])  # (..., m, d_v)
    out = np.zeros(batch + (Q.shape[-2], V.shape[-1]), dtype)  # (..., n, d_v)
    for b in np.ndindex(batch):
        _flash_2d(Q[b], K[b], V[b], out[b], causal, scale, block_q, block_k)
    return out


def _flash_2d(Q, K, V, out, causal, scale, block_q, block_k):
    """One head: Q (n, d_k), K (m, d_k), V (m, d_v); writes into out (n, d_v), zero-filled."""
    (n, _), (m, d_v), dtype = Q.shape, V.shape, out.dtype
    Q = (Q * scale).astype(dtype, copy=False)  # (n, d_k): scaling n d_k numbers, not n m scores
    # A column of ones after V: one product then gives both weights @ V and the weights' sum.
    V1 = np.concatenate([V, np.ones((m, 1))], axis=1, dtype=dtype)  # (m, d_v + 1)
    tile = np.empty((block_q, block_k), dtype)  # scores, then weights, of one tile
    tile_sums = np.empty((block_q, d_v + 1), dtype)  # weights @ [V | 1] of one tile
    for q0 in range(0, n, block_q):
        q1 = min(q0 + block_q, n)
        row_max = np.full(q1 - q0, -np.inf, dtype)  # (bq,) largest score seen so far
        sums = np.zeros((q1 - q0, d_v + 1), dtype)  # (bq, d_v + 1) running [weights @ V | sum]
        k_end = min(m, q1) if causal else m  # causal: keys past the block's last query are unseen
        for k0 in range(0, k_end, block_k):
            k1 = min(k0 + block_k, k_end)
            s = tile[: q1 - q0, : k1 - k0]  # (bq, bk) view into the reused buffer
            np.matmul(Q[q0:q1], K[k0:k1].T, out=s)  # (bq, d_k) @ (d_k, bk) -> (bq, bk)
            if causal and k1 - 1 > q0:  # the tile reaches above the diagonal
                future = np.arange(k0, k1) > np.arange(q0, q1)[:, None]  # (bq, bk)
                np.copyto(s, -np.inf, where=future)
            new_max = np.maximum(row_max, s.max(axis=1))  # (bq,)
            shift = np.where(new_max == -np.inf, 0.0, new_max)  # nothing seen yet: avoid NaN
            s -= shift[:, None]  # (bq, bk), all <= 0
            np.exp(s, out=s)  # (bq, bk) unnormalised weights in [0, 1]
            sums *= np.exp(row_max - shift)[:, None]  # (bq, d_v + 1) old sums, rescaled
            w = tile_sums[: q1 - q0]  # (bq, d_v + 1)
            np.matmul(s, V1[k0:k1], out=w)  # (bq, bk) @ (bk, d_v + 1) -> (bq, d_v + 1)
            sums += w
            row_max = new_max
        total = sums[:, d_v:]  # (bq, 1) sum of weights; 0 only if every key was masked
        np.divide(sums[:, :d_v], total, out=out[q0:q1], where=total > 0)  # (bq, d_v)
