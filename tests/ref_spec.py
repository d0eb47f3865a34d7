"""The specification of attention, one number at a time: plain Python loops, float64.

Independent of ``sdpa_ref`` on purpose: no numpy arithmetic, only ``math``. The tests of
the reference compare against these, plus the hypothesis strategies that feed both.
"""

import math

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# Modest example counts keep each file to a few seconds; no deadline on a shared machine.
ref_settings = settings(max_examples=40, deadline=None)


def softmax_spec(scores):
    """Softmax of a list of floats; -inf means masked. All masked: all zeros (the policy)."""
    visible = [s for s in scores if s != -math.inf]
    if not visible:
        return [0.0] * len(scores)
    top = max(visible)
    weights = [math.exp(s - top) for s in scores]  # exp(-inf) is 0.0
    total = math.fsum(weights)
    return [w / total for w in weights]


def weights_spec(Q, K, mask=None, scale=None):
    """Q (n, d_k), K (m, d_k), mask (n, m) True = masked out -> attn (n, m) as lists."""
    n, d_k, m = len(Q), len(Q[0]), len(K)
    scale = 1 / math.sqrt(d_k) if scale is None else scale
    attn = []
    for i in range(n):
        scores = []
        for j in range(m):
            if mask is not None and mask[i][j]:
                scores.append(-math.inf)
            else:
                dot = math.fsum(float(Q[i][t]) * float(K[j][t]) for t in range(d_k))
                scores.append(scale * dot)
        attn.append(softmax_spec(scores))
    return attn


def weighted_sum_spec(attn, V):
    """attn (n, m), V (m, d_v) -> out (n, d_v) as lists: each query's weighted sum of values."""
    n, m, d_v = len(attn), len(V), len(V[0])
    return [
        [math.fsum(attn[i][j] * float(V[j][c]) for j in range(m)) for c in range(d_v)]
        for i in range(n)
    ]


def attention_spec(Q, K, V, mask=None, scale=None):
    """Batched: leading dimensions broadcast; one loop of the definition per batch index.

    Returns float64 arrays out (..., n, d_v) and attn (..., n, m); attn's leading
    dimensions come from Q, K and the mask only, out's from V as well.
    """
    n, m, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    mask_batch = () if mask is None else np.shape(mask)[:-2]
    attn_batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], mask_batch)
    batch = np.broadcast_shapes(attn_batch, V.shape[:-2])
    Q = np.broadcast_to(Q, attn_batch + Q.shape[-2:])
    K = np.broadcast_to(K, attn_batch + K.shape[-2:])
    mask = None if mask is None else np.broadcast_to(mask, attn_batch + (n, m))
    attn = np.empty(attn_batch + (n, m))
    for b in np.ndindex(attn_batch):
        attn[b] = weights_spec(Q[b], K[b], None if mask is None else mask[b], scale)
    every_attn = np.broadcast_to(attn, batch + (n, m))
    V = np.broadcast_to(V, batch + V.shape[-2:])
    out = np.empty(batch + (n, d_v))
    for b in np.ndindex(batch):
        out[b] = weighted_sum_spec(every_attn[b], V[b])
    return out, attn


@st.composite
def problems(draw, dtypes=(np.float64,), magnitudes=(1.0,), masked=True, max_side=6):
    """Random attention inputs: broadcasting batch dims, n != m, d_k != d_v, masks or None.

    A mask's density is drawn from 0 (nothing hidden) to 1 (every row fully masked), so
    fully masked rows turn up often. ``magnitude`` multiplies Q: 1e3 gives scores in the
    thousands, where a naive exp overflows (exp(710) is already inf in float64).
    """
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=4, max_dims=2, max_side=3))
    batch_q, batch_k, batch_v, batch_mask = shapes.input_shapes
    n, m, d_k, d_v = (draw(st.integers(1, max_side)) for _ in range(4))
    dtype = draw(st.sampled_from(dtypes))
    magnitude = draw(st.sampled_from(magnitudes))
    density = draw(st.sampled_from([None, 0.0, 0.3, 0.7, 1.0] if masked else [None]))
    scale = draw(st.sampled_from([None, None, 0.5]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Q = (magnitude * rng.standard_normal(batch_q + (n, d_k))).astype(dtype)
    K = rng.standard_normal(batch_k + (m, d_k)).astype(dtype)
    V = rng.standard_normal(batch_v + (m, d_v)).astype(dtype)
    mask = None if density is None else rng.random(batch_mask + (n, m)) < density
    return {"Q": Q, "K": K, "V": V, "mask": mask, "scale": scale}
