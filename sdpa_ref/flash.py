"""Blockwise attention with an online softmax: the FlashAttention idea, in numpy.

``attention`` builds the whole (n, m) weight matrix: O(n m) memory, 512 MiB at n = m = 8192
in float64. Here each block of queries visits the keys one block at a time and keeps only
two running sums: ``sum_j exp(s_j - c) v_j`` and ``sum_j exp(s_j - c)``. Their ratio is the
output, ``softmax(s) @ V``, whatever the shift ``c``: the matrix never exists.

The shift only has to keep ``exp`` in range. The textbook online softmax uses the running
maximum and rescales the sums whenever it grows; that costs a subtraction over every tile.
Here ``c`` starts at a real score (the query's score with key 0, so the largest weight is
at least 1 and nothing that matters underflows), rides inside the first product for free,
and moves, rescaling the sums by ``exp(-bump)``, only when a tile rises more than a slack
above it. Recent FlashAttention kernels rescale lazily in the same way. The slack is a
quarter of the dtype's exponent range (e**22 in float32, e**177 in float64), which leaves
the sums room for m * max|v| up to 10**29 in float32.

Even the tile's maximum costs a pass over it, so it is only looked for when needed: by
Cauchy-Schwarz no score exceeds ``|scale q_i| * max_j |k_j|``, and when that bound is
within the slack of the shift (for inputs of unit scale in float64, always), no tile can
rise too far.

The tile is large (32 MiB of float64 scores by default): each of its two products is a
call into BLAS that waits until all of BLAS's threads have run, and on a machine shared
with other programs that wait, not the arithmetic, decides the time of many short calls.
"""

import math

import numpy as np


def flash_attention(Q, K, V, *, causal=False, scale=None, block_q=2048, block_k=2048):
    """Scaled dot-product attention computed tile by tile; equals ``attention(Q, K, V)[0]``.

    Q: (..., n, d_k)   K: (..., m, d_k)   V: (..., m, d_v)   leading dimensions broadcast.
    causal: mask the future as ``causal_mask(n, m)`` does (query i sees keys 0 .. i).
    scale: multiplies the scores; default ``1 / sqrt(d_k)``.
    block_q, block_k: the tile, (block_q, block_k) scores at a time; extra memory is
        O(block_q * block_k + (n + m) d), never O(n m): under 52 MiB at n = m = 8192,
        d = 64 in float64. Large tiles make few, long matrix products (see above).
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
    if K.shape[-2] > 0:  # no keys at all: zero weights, zero output, as in `attention`
        for b in np.ndindex(batch):
            _flash_2d(Q[b], K[b], V[b], out[b], causal, scale, block_q, block_k)
    return out


def _flash_2d(Q, K, V, out, causal, scale, block_q, block_k):
    """One head: Q (n, d_k), K (m, d_k), V (m, d_v) with m > 0; writes out (n, d_v)."""
    (n, d_k), (m, d_v), dtype = Q.shape, V.shape, out.dtype
    slack = math.log(np.finfo(dtype).max) / 4  # a score may rise this far above the shift
    # [scale Q | -c] @ [K | 1]^T = scale Q K^T - c: the product also subtracts the shift.
    Q1 = np.empty((n, d_k + 1), dtype)  # (n, d_k + 1)
    Q1[:, :d_k] = Q * scale  # (n, d_k): scaling n d_k numbers, not n m scores
    Q1[:, d_k] = -(Q1[:, :d_k] @ K[0])  # (n,) c = each query's score with key 0
    K1 = np.concatenate([K, np.ones((m, 1))], axis=1, dtype=dtype)  # (m, d_k + 1)
    # [V | 1]: one product gives both weights @ V and the sum of the weights.
    V1 = np.concatenate([V, np.ones((m, 1))], axis=1, dtype=dtype)  # (m, d_v + 1)
    q_norm = np.linalg.norm(Q1[:, :d_k], axis=1)  # (n,) |scale q_i|
    k_norm = np.linalg.norm(K, axis=1)  # (m,) |k_j|
    block_q, block_k = min(block_q, n), min(block_k, m)  # a small problem needs a small tile
    tile = np.empty((block_q, block_k), dtype)  # shifted scores, then weights, of one tile
    tile_sums = np.empty((block_q, d_v + 1), dtype)  # weights @ [V | 1] of one tile
    for q0 in range(0, n, block_q):
        q1 = min(q0 + block_q, n)
        Qb = Q1[q0:q1]  # (bq, d_k + 1), a view: its last column is -c for these queries
        sums = np.zeros((q1 - q0, d_v + 1), dtype)  # (bq, d_v + 1) running [weights @ V | sum]
        k_end = min(m, q1) if causal else m  # causal: keys past the block's last query are unseen
        for k0 in range(0, k_end, block_k):
            k1 = min(k0 + block_k, k_end)
            s = tile[: q1 - q0, : k1 - k0]  # (bq, bk) view into the reused buffer
            np.matmul(Qb, K1[k0:k1].T, out=s)  # (bq, d_k + 1) @ (d_k + 1, bk) -> (bq, bk)
            if causal and k1 - 1 > q0:  # the tile reaches above the diagonal
                future = np.arange(k0, k1) > np.arange(q0, q1)[:, None]  # (bq, bk)
                np.copyto(s, -np.inf, where=future)
            reach = q_norm[q0:q1] * k_norm[k0:k1].max() + Qb[:, d_k]  # (bq,) >= every rise
            if not (reach <= slack).all():  # Cauchy-Schwarz cannot rule out a big rise: look
                rise = s.max(axis=1)  # (bq,) how far this tile climbs above the shift
                bump = np.where(rise > slack, rise, 0.0)  # (bq,) move c only where exp may blow up
                if bump.any():
                    s -= bump[:, None]  # (bq, bk)
                    sums *= np.exp(-bump)[:, None]  # (bq, d_v + 1) old sums, onto the new shift
                    Qb[:, d_k] -= bump  # (bq,) later tiles subtract the new shift
            np.exp(s, out=s)  # (bq, bk) weights, each below e**slack
            w = tile_sums[: q1 - q0]  # (bq, d_v + 1)
            np.matmul(s, V1[k0:k1], out=w)  # (bq, bk) @ (bk, d_v + 1) -> (bq, d_v + 1)
            sums += w
        # Some weight is at least exp(0) = 1 (key 0's, or the top of a tile that moved c): sum > 0.
        np.divide(sums[:, :d_v], sums[:, d_v:], out=out[q0:q1])  # (bq, d_v)
