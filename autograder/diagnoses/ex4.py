"""Exercise 4: why `attention_blockwise` is wrong, found by probing it.

- Values: the student's output on two probes without the mask (the scores rise from block to
  block, so the running maximum moves at every block) is matched against models of the
  online softmax with one step changed: the running sums not rescaled when the maximum grows
  (`blockwise-no-rescale`), the normaliser applied per block (`blockwise-per-block-normaliser`),
  the scale missing or wrong (`no-scaling`, `wrong-scale`). The simplest model that fits
  names the mistake.
- The causal boundary: with V the identity, the output *is* the weight matrix, so the keys
  each query sees can be read off it. Every query seeing keys 0 to t - 1 or 0 to t + 1 where
  it should see 0 to t, at some queries at least (at every diagonal, or only where a block
  starts), is `blockwise-causal-off-by-one`; every key seen by every query is `mask-ignored`.
- Large scores giving NaN or inf where moderate ones did not: `unstable-softmax`.
- Memory: a call at T = 2048 with the causal mask that allocates more than a quarter of a
  T x T float64 matrix, the memory test's limit, or raises its process's memory high-water
  mark past the test's bound (as read from outside the process: a peak hidden from
  tracemalloc), or touches that much memory written before or during it (a buffer made in
  advance), holds a whole (T, T) array at once (`blockwise-quadratic-memory`).
- The keys in blocks: within those limits at T = 2048, but answering a few queries against
  many keys without the mask (LONG_N against LONG_M, n * m = T * T) over the limits, or with
  a peak that does not grow with `block` (WIDE_BLOCK against LONG_BLOCK, on COMPARED_M of
  those keys), the code takes each query's whole row of keys, or one key at a time, not
  `block` keys at a time (`blockwise-keys-not-blocked`).
"""

from __future__ import annotations

import math
from functools import cache
from itertools import product

import numpy as np

from autograder.compare import (
    BLOCKWISE_MEMORY,
    BLOCKWISE_MEMORY_D,
    BLOCKWISE_MEMORY_T,
    BLOCKWISE_RESIDENT,
    FLOAT_RESULTS,
    numbers,
)
from autograder.diagnoses.probe import Prober

# How each variant of the online softmax departs from the right one, and its code.
RESCALES = {"both": "", "neither": "blockwise-no-rescale", "sum only": "blockwise-no-rescale",
            "output only": "blockwise-no-rescale"}
NORMALISERS = {"at the end": "", "inside the loop": "blockwise-per-block-normaliser",
               "sum of blocks": "blockwise-per-block-normaliser",
               "mean of blocks": "blockwise-per-block-normaliser",
               "never": "not-normalized"}  # acc returned, never divided by the total
# The scales exercise 3's models name too, those that one block of queries can tell (not
# sqrt(n): the memory test models a few rows of queries only).
SCALES = {"sqrt(d_k)": "", "none": "no-scaling", "d_k": "wrong-scale",
          "sqrt(d_v)": "wrong-scale", "times sqrt(d_k)": "wrong-scale", "sqrt(m)": "wrong-scale"}


def blockwise_model(Q, K, V, block, *, rescale="both", normaliser="at the end",
                    scale="sqrt(d_k)", mask=None):
    """out of a blockwise attention with the named steps (right by default); `mask` (n, m),
    True = masked out, hides keys (a row masked whole gives NaN, as the loop would)."""
    (n, d_k), (m, d_v) = Q.shape, V.shape
    factor = {"sqrt(d_k)": 1 / math.sqrt(d_k), "none": 1.0, "d_k": 1 / d_k,
              "sqrt(d_v)": 1 / math.sqrt(d_v), "times sqrt(d_k)": math.sqrt(d_k),
              "sqrt(m)": 1 / math.sqrt(m)}[scale]
    running_max = np.full(n, -np.inf)  # (n,)
    total = np.zeros(n)  # (n,) running sum of the weights
    acc = np.zeros((n, d_v))  # (n, d_v) running weights @ V
    per_block = []  # each block's own softmax @ V, for the per-block normalisers
    for k0 in range(0, m, block):
        scores = Q @ K[k0:k0 + block].T * factor  # (n, d_k) @ (d_k, b) -> (n, b)
        if mask is not None:
            scores = np.where(mask[:, k0:k0 + block], -np.inf, scores)  # (n, b)
        new_max = np.maximum(running_max, scores.max(axis=-1))  # (n,)
        weights = np.exp(scores - new_max[:, None])  # (n, b)
        per_block.append(weights @ V[k0:k0 + block] / weights.sum(axis=-1, keepdims=True))
        shrink = np.exp(running_max - new_max)  # (n,), 0 at the first block
        total = total * (shrink if rescale in ("both", "sum only") else 1.0)
        total = total + weights.sum(axis=-1)
        acc = acc * (shrink[:, None] if rescale in ("both", "output only") else 1.0)
        acc = acc + weights @ V[k0:k0 + block]  # (n, b) @ (b, d_v) -> (n, d_v)
        if normaliser == "inside the loop":
            acc = acc / total[:, None]
        running_max = new_max
    if normaliser == "sum of blocks":
        return np.sum(per_block, axis=0)  # (n, d_v)
    if normaliser == "mean of blocks":
        return np.mean(per_block, axis=0)  # (n, d_v)
    if normaliser in ("inside the loop", "never"):
        return acc  # (n, d_v)
    return acc / total[:, None]  # (n, d_v)


def slip_models() -> list[dict]:
    """Keyword arguments of `blockwise_model` for every catalogued way to get the online
    softmax wrong (and the right one first)."""
    return [kwargs for _, _, kwargs in _models()]


@cache
def _models():
    """(deviations, codes, keyword arguments) of every variant, the simplest first."""
    found = []
    for rescale, normaliser, scale in product(RESCALES, NORMALISERS, SCALES):
        if normaliser in ("sum of blocks", "mean of blocks") and rescale != "both":
            continue  # these never carry sums from block to block: rescaling is moot
        codes = {RESCALES[rescale], NORMALISERS[normaliser], SCALES[scale]} - {""}
        found.append((len(codes), frozenset(codes),
                      {"rescale": rescale, "normaliser": normaliser, "scale": scale}))
    return tuple(sorted(found, key=lambda model: model[0]))


def _rising_inputs(seed, n, m, d_k, d_v):
    """Inputs whose scores rise from key to key: the running maximum moves at every block."""
    rng = np.random.default_rng(seed)
    Q, K, V = rng.normal(size=(n, d_k)), rng.normal(size=(m, d_k)), rng.normal(size=(m, d_v))
    Q[:, 0] = 2.0
    K[:, 0] = np.linspace(0.0, 3.0, m)  # each query's scores grow by 6 / sqrt(d_k) overall
    return Q, K, V


VALUE_PROBES = ((_rising_inputs(941, n=5, m=13, d_k=4, d_v=3), 4),
                (_rising_inputs(942, n=4, m=11, d_k=3, d_v=2), 3))
CAUSAL_T, CAUSAL_BLOCK = 11, 4


def _answer(prober, Q, K, V, **kwargs):
    answer = prober.call("attention_blockwise", Q, K, V, **kwargs)
    return numbers(answer.value) if answer.ok else None


def diagnose(student) -> set[str]:
    prober = Prober(student)
    if not student.has("attention_blockwise"):
        return set()
    return (_value_codes(prober) | _causal_codes(prober) | _stability_codes(prober)
            | _memory_codes(prober))


def _value_codes(prober) -> set[str]:
    answers = [_answer(prober, *inputs, causal=False, block=block)
               for inputs, block in VALUE_PROBES]
    if any(a is None for a in answers):
        return set()
    found, depth = [], None
    for deviations, codes, kwargs in _models():
        if depth is not None and deviations > depth:
            break
        if all(a.shape == (inputs[0].shape[0], inputs[2].shape[1])
               and bool(np.all(np.isfinite(a)))
               and FLOAT_RESULTS.ratio(a, blockwise_model(*inputs, block, **kwargs)) <= 1
               for a, (inputs, block) in zip(answers, VALUE_PROBES, strict=True)):
            found.append(codes)
            depth = deviations
    return set(frozenset.intersection(*found)) if found else set()


def _causal_codes(prober) -> set[str]:
    """Which keys each query sees, read off the output when V is the identity."""
    T = CAUSAL_T
    rng = np.random.default_rng(943)
    Q, K = rng.normal(size=(T, 3)), rng.normal(size=(T, 3))  # (T, 3) each
    weights = _answer(prober, Q, K, np.eye(T), causal=True, block=CAUSAL_BLOCK)  # (T, T)
    if weights is None or weights.shape != (T, T):
        return set()
    with np.errstate(invalid="ignore"):
        seen = np.isfinite(weights) & (np.abs(weights) > 1e-12)  # (T, T)
    last_seen = []
    for row in seen:
        count = int(row.sum())
        if not row[:count].all():
            return set()  # not a prefix of the keys: some other mistake
        last_seen.append(count - 1)  # -1 when the query sees nothing (NaN or zeros)
    offsets = np.array(last_seen) - np.arange(T)  # (T,) 0 where the boundary is right
    if np.all(np.array(last_seen) == T - 1):
        return {"mask-ignored"}
    if np.any(offsets != 0) and np.all(np.abs(offsets) <= 1):
        return {"blockwise-causal-off-by-one"}
    return set()


def _stability_codes(prober) -> set[str]:
    """Scores near 800 give NaN, inf or a crash where the same scores near 0 did not."""
    Q, K, V = VALUE_PROBES[0][0]
    moderate = _answer(prober, Q, K, V, causal=False, block=4)
    if moderate is None or not np.all(np.isfinite(moderate)):
        return set()
    Q, K = Q.copy(), K.copy()
    Q[:, 1] += 40.0  # every scaled score gains about 800 (1600 / sqrt(d_k)), and more
    K[:, 1] += 40.0
    large = _answer(prober, Q, K, V, causal=False, block=4)
    return {"unstable-softmax"} if large is None or not np.all(np.isfinite(large)) else set()


# The memory test's call without the mask: a few queries against many keys, n * m = T * T,
# so that its limits hold as they are (the whole (n, m) scores, or a block of queries against
# all the keys, are over them); then the keys-in-blocks comparison: the same queries against
# the first COMPARED_M of those keys, at two blocks.
LONG_N = 128  # queries
LONG_M = BLOCKWISE_MEMORY_T * BLOCKWISE_MEMORY_T // LONG_N  # keys: 32768
MEMORY_BLOCK = 64  # the memory test's block at T = 2048
# The comparison's two blocks. Keys taken `block` at a time hold at least one (rows, block)
# array of scores, a query at a time or all together, so the wide call's peak is higher by
# at least half of one float32 row of the extra width (WIDER_BYTES); code whose memory
# ignores `block` (whole rows of keys, one key at a time) peaks the same at both. The narrow
# block is not smaller, so that code keeping a summary per block (m / block of them, Rabe and
# Staats' chunks) still peaks higher at the wide one.
LONG_BLOCK, WIDE_BLOCK = 256, 2048
WIDER_BYTES = (WIDE_BLOCK - LONG_BLOCK) * 4 // 2
# The comparison's keys: two wide blocks (sixteen narrow ones). Both calls take the same
# inputs, so memory that follows the keys and not the block (copies of K and V, a float32
# cast) is the same in both and cancels out; a peak that follows the keys (a query's whole
# row) is as high at the narrow block as at the wide one, whatever the number of keys. An
# eighth of LONG_M: the wide call's (LONG_N, WIDE_BLOCK) blocks cost the same per key as the
# narrow call's, and fewer keys cost less.
COMPARED_M = 2 * WIDE_BLOCK


def over_limits(use) -> bool:
    """A measured call (`MemoryUse`) over the memory test's limits, by any of its figures."""
    return (use.traced is not None and use.traced > BLOCKWISE_MEMORY) or any(
        figure is not None and figure > BLOCKWISE_RESIDENT
        for figure in (use.resident, getattr(use, "touched", None)))


def not_in_blocks(narrow, wide) -> bool:
    """Two measured calls (`MemoryUse`) of the long probe, at LONG_BLOCK and WIDE_BLOCK:
    the first over the limits, or a peak that does not grow with the block."""
    if over_limits(narrow):
        return True
    if narrow.traced is None or wide.traced is None:
        return False  # not measured: the memory test says so, this is no diagnosis
    return wide.traced - narrow.traced < WIDER_BYTES


def _memory_codes(prober) -> set[str]:
    """The memory test's measure, on inputs of its own: over the limit with the mask at T =
    2048; or within it there, but over it without the mask on a few queries against many
    keys, or with a peak there that does not grow with the block (the keys not taken a block
    at a time)."""
    rng = np.random.default_rng(944)
    T = BLOCKWISE_MEMORY_T
    Q, K, V = (rng.normal(size=(T, BLOCKWISE_MEMORY_D)) for _ in range(3))  # (T, d) each
    answer = prober.call_measuring_memory("attention_blockwise", Q, K, V, causal=True,
                                          block=MEMORY_BLOCK)
    if answer.ok and over_limits(answer.value[1]):
        return {"blockwise-quadratic-memory"}
    Q = rng.normal(size=(LONG_N, BLOCKWISE_MEMORY_D))  # (n, d)
    K, V = (rng.normal(size=(LONG_M, BLOCKWISE_MEMORY_D)) for _ in range(2))  # (m, d) each
    uses = []
    for keys, block in ((LONG_M, LONG_BLOCK), (COMPARED_M, LONG_BLOCK),
                        (COMPARED_M, WIDE_BLOCK)):
        answer = prober.call_measuring_memory("attention_blockwise", Q, K[:keys], V[:keys],
                                              causal=False, block=block)
        out = numbers(answer.value[0]) if answer.ok else None
        if out is None or out.shape != (LONG_N, BLOCKWISE_MEMORY_D) or not np.all(
                np.isfinite(out)) or np.ptp(out, axis=0).max() <= 1e-9:
            return set()  # no answer to judge: the value tests and crashes say why
        if keys == LONG_M and over_limits(answer.value[1]):
            return {"blockwise-keys-not-blocked"}
        uses.append(answer.value[1])
    return {"blockwise-keys-not-blocked"} if not_in_blocks(*uses[1:]) else set()
