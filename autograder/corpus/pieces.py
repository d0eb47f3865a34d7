"""Small named pieces of student code; `autograder.corpus` assembles submissions from them.

Each piece defines part of one exercise, written the way a student would. The correct pieces
come in several styles (the lesson's code, numpy without the lesson's shortcuts, plain Python
loops); each mistake piece differs from a correct one by the one mistake it is named after.
The numbers of exercises 1 and 2 are a student's own: those pieces are functions of the
variant's numbers (`autograder.variants`), written out as a student who works them by hand
or with numpy would write them.
"""

import math

import numpy as np

import sdpa_ref
from autograder.variants import DEFAULT

IMPORTS = "import numpy as np\n"

# -- Exercise 1: numbers written by hand ---------------------------------------------------


def _pair(values, digits: str = ".3f") -> str:
    return "(" + ", ".join(format(float(x), digits) for x in values) + ")"


def _round3(values) -> np.ndarray:
    return np.round(np.asarray(values, dtype=float), 3)


def _cut3(values) -> np.ndarray:
    return np.trunc(np.asarray(values, dtype=float) * 1000) / 1000


def _by_hand(scores, weights_of, values, step=_round3) -> str:
    """Three answers worked step by step, each from the previous one as written down."""
    scores = step(scores)
    weights = step(weights_of(scores))
    output = step(weights @ values)  # (2,) @ (2, d_v) -> (d_v,)
    return (f"ex1_scores = {_pair(scores)}\nex1_weights = {_pair(weights)}\n"
            f"ex1_output = {_pair(output)}\n")


def shown_numbers(variant) -> str:
    """What the notebook's *Your numbers* cell leaves behind when it shows `variant`'s numbers
    (a mistyped student id, a classmate's notebook)."""
    ex1, ex2 = variant.public()["ex1"], variant.public()["ex2"]
    ex1 = {name: tuple(value) if isinstance(value, list) else value for name, value in ex1.items()}
    return f"YOUR_VARIANT = {variant.label!r}\nEX1 = {ex1!r}\nEX2 = {ex2!r}\n"


def ex1_rounded(n) -> str:
    """Hand arithmetic, each step rounded to three decimals."""
    return _by_hand(n.raw * n.scale, sdpa_ref.softmax, n.values)


def ex1_truncated(n) -> str:
    """Hand numbers cut, not rounded, to three decimals at each step."""
    return _by_hand(n.raw * n.scale, sdpa_ref.softmax, n.values, step=_cut3)


def ex1_computed(n) -> str:
    return f"""
q = np.array({list(n.q)}, dtype=float)
keys = np.array([{list(n.k1)}, {list(n.k2)}], dtype=float)
values = np.array([{list(n.v1)}, {list(n.v2)}], dtype=float)
ex1_scores = keys @ q / np.sqrt({n.d_k})
ex1_weights = np.exp(ex1_scores) / np.exp(ex1_scores).sum()
ex1_output = ex1_weights @ values
"""


def ex1_row_vectors(n) -> str:
    return f"""
q = np.array([{list(n.q)}], dtype=float)                # (1, d_k): one query as a row
keys = np.array([{list(n.k1)}, {list(n.k2)}], dtype=float)
ex1_scores = q @ keys.T / np.sqrt({n.d_k})           # (1, 2)
ex1_weights = np.exp(ex1_scores) / np.exp(ex1_scores).sum()
ex1_output = ex1_weights @ np.array([{list(n.v1)}, {list(n.v2)}])   # (1, 2)
"""


def ex1_no_scaling(n) -> str:
    """Scores not divided by sqrt(d_k), then a right softmax."""
    return _by_hand(n.raw, sdpa_ref.softmax, n.values)


def ex1_wrong_scale(n) -> str:
    """Scores divided by d_k, then a right softmax."""
    return _by_hand(n.raw / n.d_k, sdpa_ref.softmax, n.values)


def ex1_not_normalized(n) -> str:
    """Weights are exp(scores), never divided by their sum."""
    return _by_hand(n.raw * n.scale, np.exp, n.values)


# The lesson's own numbers (the default variant), rounded to three decimals.
EX1_ROUNDED = ex1_rounded(DEFAULT.ex1)

# -- Exercise 2: softmax and four numbers --------------------------------------------------

SOFTMAX_STABLE = '''
def softmax(z):
    """Softmax along the last axis."""
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''

SOFTMAX_LOOPS = """
import math

def softmax(z):
    if len(z) and hasattr(z[0], "__len__"):
        return [softmax(row) for row in z]
    peak = max(z)
    e = [math.exp(x - peak) for x in z]
    total = sum(e)
    return [x / total for x in e]
"""

SOFTMAX_UNSTABLE = """
def softmax(z):
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)
"""

# Shifts that leave the softmax unchanged but are not the row's maximum: exact while a row's
# scores are close together (even all 800 higher), overflowing once they spread (attack3).
SOFTMAX_SUBTRACT_MIN = """
def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.min(axis=-1, keepdims=True))   # the minimum, not the maximum
    return e / e.sum(axis=-1, keepdims=True)
"""

SOFTMAX_SUBTRACT_MEAN = SOFTMAX_SUBTRACT_MIN.replace(
    "z.min(axis=-1, keepdims=True))   # the minimum",
    "z.mean(axis=-1, keepdims=True))   # the mean")

SOFTMAX_SUBTRACT_FIRST = SOFTMAX_SUBTRACT_MIN.replace(
    "z.min(axis=-1, keepdims=True))   # the minimum", "z[..., :1])   # the first score")

SOFTMAX_AXIS_0 = """
def softmax(z):
    e = np.exp(z - z.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
"""

# Rows only: axis=1 raises on a 1-D z (fair4). Costs the vector test, not stability too.
SOFTMAX_ROWS_ONLY = """
def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
"""

# fair5: the row sums without keepdims, (n,) broadcast along the rows: right for a 1-D z,
# a crash for a matrix unless it is square, and then column j divided by row j's sum.
SOFTMAX_NO_KEEPDIMS = """
def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1)
"""

SOFTMAX_NOT_NORMALIZED = """
def softmax(z):
    return np.exp(z - z.max(axis=-1, keepdims=True))
"""

SOFTMAX_FLOAT32 = """
def softmax(z):
    z = np.asarray(z, dtype=np.float32)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""

SOFTMAX_EPSILON = """
def softmax(z):
    e = np.exp(z - np.max(z, axis=-1, keepdims=True))
    return e / (np.sum(e, axis=-1, keepdims=True) + 1e-8)   # guards against dividing by 0
"""

SOFTMAX_SCIPY = """
from scipy.special import softmax as scipy_softmax

def softmax(z):
    return scipy_softmax(z, axis=-1)
"""

def _figures(x: float, figures: int = 3) -> str:
    return format(float(x), f".{figures}g")


def _cut_figures(x: float, figures: int = 3) -> str:
    """`x` cut (not rounded) to `figures` significant figures."""
    exponent = math.floor(math.log10(abs(x))) - figures + 1
    return f"{math.trunc(x / 10.0**exponent)}e{exponent}"  # 0.00246 -> 246e-5


def _ex2(p_unscaled, p_scaled, grad_unscaled, grad_scaled) -> str:
    return (f"p_unscaled = {p_unscaled}\np_scaled = {p_scaled}\n"
            f"grad_unscaled = {grad_unscaled}\ngrad_scaled = {grad_scaled}\n")


def ex2_rounded(n) -> str:
    """Written down from a calculator: the lesson's 0.9997 style, three figures for the rest."""
    e = n.expected()
    return _ex2(_figures(e["p_unscaled"], 4), _figures(e["p_scaled"]),
                _figures(e["grad_unscaled"]), _figures(e["grad_scaled"]))


def ex2_truncated(n) -> str:
    e = n.expected()
    return _ex2(*(_cut_figures(e[name]) for name in
                  ("p_unscaled", "p_scaled", "grad_unscaled", "grad_scaled")))


def ex2_computed(n) -> str:
    return f"""
p_unscaled = softmax(np.array([{n.gap}.0, 0.0]))[0]
p_scaled = softmax(np.array([{n.gap}.0, 0.0]) / np.sqrt({n.d_k}))[0]
smaller_unscaled = 1 - p_unscaled
smaller_scaled = 1 - p_scaled
grad_unscaled = smaller_unscaled * (1 - smaller_unscaled)
grad_scaled = smaller_scaled * (1 - smaller_scaled)
"""


def ex2_one_element(n) -> str:
    return f"""
raw = np.array([[{n.gap}.0, 0.0]])                     # (1, 2): one query's scores as a row
p_unscaled = softmax(raw)[:, 0]                  # shape (1,)
p_scaled = softmax(raw / np.sqrt({n.d_k}))[:, :1]     # shape (1, 1)
grad_unscaled = p_unscaled * (1 - p_unscaled)    # shape (1,)
grad_scaled = np.float64(p_scaled.item() * (1 - p_scaled.item()))
"""


def ex2_wrong_key(n) -> str:
    """The smaller key's weights reported."""
    e = n.expected()
    return _ex2(_figures(1 - e["p_unscaled"]), _figures(1 - e["p_scaled"]),
                _figures(e["grad_unscaled"]), _figures(e["grad_scaled"]))


def ex2_no_scaling(n) -> str:
    """The scaled numbers computed without dividing by sqrt(d_k)."""
    e = n.expected()
    return _ex2(_figures(e["p_unscaled"], 4), _figures(e["p_unscaled"], 4),
                _figures(e["grad_unscaled"]), _figures(e["grad_unscaled"]))


def ex2_wrong_gradient(n) -> str:
    """The cross derivative -p1 p2 instead of p2 (1 - p2)."""
    e = n.expected()
    return _ex2(_figures(e["p_unscaled"], 4), _figures(e["p_scaled"]),
                f"-{_figures(e['p_unscaled'], 4)} * {_figures(1 - e['p_unscaled'])}",
                f"-{_figures(e['p_scaled'])} * {_figures(1 - e['p_scaled'])}")


def ex2_wrong_scale(n) -> str:
    """Scores divided by d_k, not sqrt(d_k); the gradient right for that weight."""
    e = n.expected()
    return f"""
p_unscaled = {_figures(e["p_unscaled"], 4)}
p_scaled = float(softmax(np.array([{n.gap}.0, 0.0]) / {n.d_k})[0])   # divided by d_k
grad_unscaled = {_figures(e["grad_unscaled"])}
grad_scaled = p_scaled * (1 - p_scaled)                   # right for that weight
"""


def ex2_raw_score_gradient(n) -> str:
    """The scaled gradient taken with respect to the raw score (chain rule through the scale)."""
    e = n.expected()
    return f"""
p_unscaled = {_figures(e["p_unscaled"], 4)}
p_scaled = {_figures(e["p_scaled"])}
grad_unscaled = {_figures(e["grad_unscaled"])}
grad_scaled = {e["p_scaled"]!r} * {1 - e["p_scaled"]!r} / np.sqrt({n.d_k})
"""


def ex2_forward_difference(n, step: float) -> str:
    """Gradients by a forward difference with a large step."""
    return f"""
def _smaller_weight(gap, nudge):
    return softmax(np.array([gap, nudge]))[1]

h = {step!r}                          # a forward difference with a large step
p_unscaled = softmax(np.array([{n.gap}.0, 0.0]))[0]
p_scaled = softmax(np.array([{n.gap}.0, 0.0]) / np.sqrt({n.d_k}))[0]
grad_unscaled = (_smaller_weight({n.gap}.0, h) - _smaller_weight({n.gap}.0, 0.0)) / h
gap = {n.gap} / np.sqrt({n.d_k})
grad_scaled = (_smaller_weight(gap, h) - _smaller_weight(gap, 0.0)) / h
"""


# The lesson's own numbers (the default variant), written down from a calculator.
EX2_ROUNDED = ex2_rounded(DEFAULT.ex2)

# -- Exercise 3: attention and the causal mask ---------------------------------------------

ATTENTION_LESSON = '''
def attention(Q, K, V, mask=None):
    """The lesson's code: np.sqrt, a fresh scores array filled in place with -1e9."""
    d_k = Q.shape[-1]
    scores = Q @ K.T / np.sqrt(d_k)          # (n, m)
    if mask is not None:
        scores[mask] = -1e9
    attn = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attn /= attn.sum(axis=-1, keepdims=True)
    out = attn @ V                            # (n, d_v)
    return out, attn
'''

ATTENTION_WHERE = """
def attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V, weights
"""

ATTENTION_LOOPS = """
import math

def attention(Q, K, V, mask=None):
    n, m, d_k, d_v = len(Q), len(K), len(Q[0]), len(V[0])
    attn = []
    for i in range(n):
        scores = []
        for j in range(m):
            if mask is not None and mask[i][j]:
                scores.append(-math.inf)
            else:
                scores.append(sum(Q[i][t] * K[j][t] for t in range(d_k)) / math.sqrt(d_k))
        peak = max(scores)
        e = [math.exp(s - peak) for s in scores]
        total = sum(e)
        attn.append([x / total for x in e])
    out = [[sum(attn[i][j] * V[j][c] for j in range(m)) for c in range(d_v)] for i in range(n)]
    return out, attn
"""

ATTENTION_FLOAT32 = """
def attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(x, dtype=np.float32) for x in (Q, K, V))
    scores = Q @ K.T / np.float32(np.sqrt(Q.shape[-1]))
    if mask is not None:
        scores = np.where(mask, np.float32(-1e9), scores)
    attn = softmax(scores)
    return attn @ V, attn
"""

ATTENTION_FINFO_MIN = """
def attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, np.finfo(scores.dtype).min, scores)
    attn = softmax(scores)
    return attn @ V, attn
"""

ATTENTION_SCIPY = """
import scipy.special

def attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    attn = scipy.special.softmax(scores, axis=-1)
    return attn @ V, attn
"""

CAUSAL_MASK_TRIU = """
def causal_mask(T):
    return np.triu(np.ones((T, T), dtype=bool), k=1)
"""

CAUSAL_MASK_LOOPS = """
def causal_mask(T):
    return np.array([[j > i for j in range(T)] for i in range(T)], dtype=bool)
"""

CAUSAL_MASK_DIAGONAL = """
def causal_mask(T):
    return np.triu(np.ones((T, T), dtype=bool))
"""

CAUSAL_MASK_WRONG_TRIANGLE = """
def causal_mask(T):
    return np.tril(np.ones((T, T), dtype=bool), k=-1)
"""

# -- Exercise 3(c): the two checks ---------------------------------------------------------

ROWS_SUM_ALLCLOSE = """
def rows_sum_to_one(attn):
    return np.allclose(attn.sum(axis=-1), 1.0)
"""

ROWS_SUM_LOOPS = """
def rows_sum_to_one(attn):
    return all(abs(sum(row) - 1.0) < 1e-6 for row in attn.tolist())
"""

ROWS_SUM_ISCLOSE = """
def rows_sum_to_one(attn):
    sums = np.asarray(attn, dtype=np.float64).sum(axis=1)
    return bool(np.isclose(sums, 1.0, rtol=0.0, atol=1e-5).all())
"""

ROWS_SUM_EXACT = """
def rows_sum_to_one(attn):
    return bool(np.all(attn.sum(axis=-1) == 1))
"""

ROWS_SUM_TOO_TIGHT = """
import math

def rows_sum_to_one(attn):
    return all(math.isclose(float(total), 1.0) for total in attn.sum(axis=1))
"""

FUTURE_TRIU = """
def future_is_zero(attn):
    return bool(np.all(np.triu(attn, k=1) == 0))
"""

FUTURE_LOOPS = """
def future_is_zero(attn):
    T = len(attn)
    return all(attn[t][j] == 0 for t in range(T) for j in range(t + 1, T))
"""

FUTURE_MASKED = """
def future_is_zero(attn):
    future = np.triu(np.ones(attn.shape, dtype=bool), k=1)
    return not np.any(attn[future])
"""

FUTURE_LOWER = """
def future_is_zero(attn):
    return bool(np.all(np.tril(attn, k=-1) == 0))
"""

FUTURE_DIAGONAL = """
def future_is_zero(attn):
    return bool(np.all(np.triu(attn) == 0))
"""

FUTURE_LOWER_AND_DIAGONAL = """
def future_is_zero(attn):
    return bool(np.all(np.tril(attn) == 0))
"""

# -- Exercise 4 (extra credit): blockwise attention ----------------------------------------


def blockwise_with(*, mask="np.where(future, -np.inf, scores)", rescale=True,
                   normalise="at the end", stable=True, dtype=""):
    """All queries against one block of keys at a time, with one step changed."""
    grow = "np.exp(running_max - new_max)" if rescale and stable else "1.0"
    shift = "new_max[:, None]" if stable else "0.0"
    divide_each_block = "        acc = acc / total[:, None]\n" if normalise == "per block" else ""
    result = "acc" if normalise in ("per block", "never") else "acc / total[:, None]"
    cast = f"    Q, K, V = (np.asarray(x, dtype=np.{dtype}) for x in (Q, K, V))\n" if dtype else ""
    return f"""
def attention_blockwise(Q, K, V, causal=False, block=64):
{cast}    n, m = Q.shape[0], K.shape[0]
    running_max = np.full(n, -np.inf)
    total = np.zeros(n)
    acc = np.zeros((n, V.shape[1]))
    for start in range(0, m, block):
        stop = min(start + block, m)
        scores = Q @ K[start:stop].T / np.sqrt(Q.shape[1])
        if causal:
            future = np.arange(start, stop)[None, :] > np.arange(n)[:, None]
            scores = {mask}
        new_max = np.maximum(running_max, scores.max(axis=1))
        grow = {grow}
        weights = np.exp(scores - {shift})
        total = total * grow + weights.sum(axis=1)
        acc = acc * np.reshape(grow, (-1, 1)) + weights @ V[start:stop]
{divide_each_block}        running_max = new_max
    return {result}
"""


BLOCKWISE_KEYS = blockwise_with()
BLOCKWISE_FLOAT32 = blockwise_with(dtype="float32")
BLOCKWISE_TILES = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    n, m = len(Q), len(K)
    out = np.empty((n, V.shape[1]))
    for q0 in range(0, n, block):
        q1 = min(q0 + block, n)
        best = np.full(q1 - q0, -1e9)
        total = np.zeros(q1 - q0)
        acc = np.zeros((q1 - q0, V.shape[1]))
        last_key = min(m, q1) if causal else m   # tiles wholly in the future are skipped
        for k0 in range(0, last_key, block):
            k1 = min(k0 + block, m)
            s = Q[q0:q1] @ K[k0:k1].T / np.sqrt(Q.shape[1])
            if causal:
                s[np.arange(k0, k1)[None, :] > np.arange(q0, q1)[:, None]] = -1e9
            new = np.maximum(best, s.max(axis=1))
            total = total * np.exp(best - new)
            acc = acc * np.exp(best - new)[:, None]
            p = np.exp(s - new[:, None])
            total += p.sum(axis=1)
            acc += p @ V[k0:k1]
            best = new
        out[q0:q1] = acc / total[:, None]
    return out
"""
BLOCKWISE_COPIES = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    Q, K, V = np.array(Q, dtype=float), np.array(K, dtype=float), np.array(V, dtype=float)
    n, m = len(Q), len(K)
    best = np.full(n, np.finfo(float).min)            # finfo.min, not -inf, as the start
    total = np.zeros(n)
    acc = np.zeros((n, V.shape[1]))
    for start in range(0, m, block):
        stop = min(start + block, m)
        scores = (Q @ K[start:stop].T).copy() / np.sqrt(Q.shape[1])
        if causal:
            hidden = np.arange(start, stop)[None, :] > np.arange(n)[:, None]
            scores = np.where(hidden, np.finfo(float).min, scores)
        new = np.maximum(best, scores.max(axis=1))
        scale = np.exp(best - new)
        weights = np.exp(scores - new[:, None])
        total = total * scale + weights.sum(axis=1)
        acc = acc * scale[:, None] + weights @ V[start:stop]
        best = new
    return acc / total[:, None]
"""
BLOCKWISE_NO_RESCALE = blockwise_with(rescale=False)
BLOCKWISE_PER_BLOCK_NORMALISER = blockwise_with(normalise="per block")
BLOCKWISE_NOT_DIVIDED = blockwise_with(normalise="never")  # acc returned as it is (fair4)
BLOCKWISE_CAUSAL_OFF_BY_ONE = blockwise_with(mask="np.where(np.arange(start, stop)[None, :] "
                                                  ">= np.arange(n)[:, None], -np.inf, scores)")
BLOCKWISE_CAUSAL_IGNORED = blockwise_with(mask="scores")
# fair5: the last, shorter block never visited (range stops at m - block + 1)
BLOCKWISE_DROPS_LAST_BLOCK = BLOCKWISE_KEYS.replace(
    "    for start in range(0, m, block):\n        stop = min(start + block, m)",
    "    for start in range(0, m - block + 1, block):   # a shorter last block is skipped\n"
    "        stop = start + block")
BLOCKWISE_UNSTABLE = blockwise_with(stable=False)
BLOCKWISE_SCALE_D_V = BLOCKWISE_KEYS.replace("/ np.sqrt(Q.shape[1])", "/ np.sqrt(V.shape[1])")
# fair5: a causal slip outside the catalogue: the mask applied in the first block of keys only
BLOCKWISE_CAUSAL_FIRST_BLOCK_ONLY = BLOCKWISE_KEYS.replace("        if causal:\n",
                                                           "        if causal and start == 0:\n")
BLOCKWISE_FULL_MATRIX = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    scores = Q @ K.T / np.sqrt(Q.shape[1])       # the whole (n, m) matrix: what blocks avoid
    if causal:
        scores = np.where(np.triu(np.ones(scores.shape, dtype=bool), k=1), -np.inf, scores)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True) @ V
"""
BLOCKWISE_FULL_CAUSAL_MASK = BLOCKWISE_KEYS.replace(
    "    for start in range(0, m, block):",
    "    whole_mask = np.triu(np.ones((n, m)), k=1) > 0   # (n, m) floats first, then bools\n"
    "    for start in range(0, m, block):",
).replace("scores = np.where(future, -np.inf, scores)",
          "scores = np.where(whole_mask[:, start:stop], -np.inf, scores)")
# Exercise 4's memory test cheated: the whole (n, m) matrix, hidden from tracemalloc (which
# runs in the student's own process). The trusted side's gauge sees each one.
BLOCKWISE_RESET_PEAK = BLOCKWISE_FULL_MATRIX.replace(
    "def attention_blockwise", "import tracemalloc\n\n\ndef attention_blockwise").replace(
    "    return weights / weights.sum(axis=1, keepdims=True) @ V",
    "    out = weights / weights.sum(axis=1, keepdims=True) @ V\n"
    "    del scores, weights\n"
    "    tracemalloc.reset_peak()                     # the peak so far forgotten\n"
    "    return out")
BLOCKWISE_PATCHED_MEASURE = """
import sys

for _name, _module in list(sys.modules.items()):   # the grader's worker, in this process
    if _name.endswith("sandbox.worker"):
        _module.get_traced_memory = lambda: (0, 0)
        _module._TRACING_PEAK = lambda call: (call(), 0)
""" + BLOCKWISE_FULL_MATRIX
BLOCKWISE_IN_MMAP = """
import mmap


def attention_blockwise(Q, K, V, causal=False, block=64):
    n, m = len(Q), len(K)
    buffer = mmap.mmap(-1, n * m * 8)               # anonymous memory tracemalloc does not see
    scores = np.frombuffer(buffer, dtype=np.float64).reshape(n, m)  # the whole (n, m)
    np.matmul(Q, K.T, out=scores)
    scores /= np.sqrt(Q.shape[1])
    if causal:
        scores[np.triu_indices(n, 1, m)] = -np.inf
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    out = scores @ V
    del scores
    return out
"""
BLOCKWISE_IN_CHILD = """
import os


def attention_blockwise(Q, K, V, causal=False, block=64):
    n, d_v = len(Q), V.shape[1]
    read_end, write_end = os.pipe()
    if os.fork() == 0:                               # the whole (n, m) in another process
        scores = Q @ K.T / np.sqrt(Q.shape[1])
        if causal:
            scores[np.triu_indices(n, 1, len(K))] = -np.inf
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        data = (weights / weights.sum(axis=1, keepdims=True) @ V).tobytes()
        while data:
            data = data[os.write(write_end, data):]
        os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
    os.close(read_end)
    os.wait()
    return np.frombuffer(b"".join(chunks)).reshape(n, d_v)
"""
# issue 25: right values without the algorithm. Exercise 3's attention called for one query
# row at a time, `block` ignored; and the whole (T, T) scores written into a buffer made at
# import (resident before the call: no high-water mark rises, tracemalloc sees nothing).
BLOCKWISE_ROW_AT_A_TIME = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    out = np.empty((Q.shape[0], V.shape[1]))
    for i in range(Q.shape[0]):
        mask = np.arange(K.shape[0])[None, :] > i if causal else None
        out[i] = attention(Q[i:i + 1], K, V, mask)[0][0]
    return out
"""
BLOCKWISE_PREALLOCATED = """
_SCORES = np.ones((2048, 2048))   # made, and written, before any call


def attention_blockwise(Q, K, V, causal=False, block=64):
    n, m = len(Q), len(K)
    if n * m > _SCORES.size:
        scores = Q @ K.T / np.sqrt(Q.shape[1])
    else:
        scores = _SCORES.reshape(-1)[:n * m].reshape(n, m)
        np.matmul(Q, K.T, out=scores)
        scores /= np.sqrt(Q.shape[1])
    if causal:
        scores[np.triu_indices(n, 1, m)] = -np.inf
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    return (scores @ V) / scores.sum(axis=1, keepdims=True)
"""
# issue 27: an online softmax a key at a time and a query at a time in plain Python, right
# but for the scale (never divided by sqrt(d_k)): far too slow at the memory test's size
BLOCKWISE_KEY_BY_KEY_NO_SCALING = """
import math


def attention_blockwise(Q, K, V, causal=False, block=64):
    n, m, d_v = len(Q), len(K), len(V[0])
    out = []
    for i in range(n):
        best, total, acc = -math.inf, 0.0, [0.0] * d_v
        for j in range(m):
            if causal and j > i:
                break
            s = sum(float(q) * float(k) for q, k in zip(Q[i], K[j]))   # no / sqrt(d_k)
            new = max(best, s)
            shrink, w = math.exp(best - new), math.exp(s - new)
            total = total * shrink + w
            acc = [a * shrink + w * float(v) for a, v in zip(acc, V[j])]
            best = new
        out.append([a / total for a in acc])
    return np.array(out)
"""
# issue 27: key blocks visited last to first; with the mask a query's first block may be all
# in its future, and exp(-inf - -inf) is NaN from then on. Right without the mask.
BLOCKWISE_BLOCKS_REVERSED = BLOCKWISE_KEYS.replace(
    "    for start in range(0, m, block):\n",
    "    for start in reversed(range(0, m, block)):   # the last block first\n")
BLOCKWISE_STUB = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 4: write attention_blockwise() here")
"""


def attention_with(*, scores="Q @ K.T / np.sqrt(Q.shape[-1])", masking="np.where",
                   softmax_axis="-1", normalise=True, stable=True, result="out, attn",
                   before="", extra_globals=""):
    """An np.where-style attention with one step changed: how the mistake pieces are made."""
    fill = {
        "np.where": "scores = np.where(mask, -1e9, scores)",
        "ignored": "pass",
        "inverted": "scores = np.where(mask, scores, -1e9)",
        "after softmax": None,
        "fill 0": "scores = np.where(mask, 0.0, scores)",
        "fill -1": "scores = np.where(mask, -1.0, scores)",
        "unguarded": None,
    }[masking]
    shift = f" - scores.max(axis={softmax_axis}, keepdims=True)" if stable else ""
    lines = [extra_globals, "def attention(Q, K, V, mask=None):", before,
             f"    scores = {scores}"]
    if masking == "unguarded":  # the lesson's line without its `if mask is not None`
        lines.append("    scores[mask] = -1e9")
    elif fill is not None:
        lines += ["    if mask is not None:", f"        {fill}"]
    lines.append(f"    attn = np.exp(scores{shift})")
    if normalise:
        lines.append(f"    attn = attn / attn.sum(axis={softmax_axis}, keepdims=True)")
    if masking == "after softmax":
        lines += ["    if mask is not None:", "        attn = np.where(mask, 0.0, attn)"]
    lines += ["    out = attn @ V", f"    return {result}"]
    return "\n".join(line for line in lines if line) + "\n"


ATTENTION_NO_SCALING = attention_with(scores="Q @ K.T")
ATTENTION_SCALE_D_K = attention_with(scores="Q @ K.T / Q.shape[-1]")
ATTENTION_SCALE_D_V = attention_with(scores="Q @ K.T / np.sqrt(V.shape[-1])")
# d_k read from the wrong axis (fair4): the number of queries, or of keys
ATTENTION_SCALE_SQRT_N = attention_with(scores="Q @ K.T / np.sqrt(Q.shape[0])")
ATTENTION_SCALE_SQRT_M = attention_with(scores="Q @ K.T / np.sqrt(len(K))")
ATTENTION_SOFTMAX_AXIS = attention_with(softmax_axis="0")
ATTENTION_NOT_NORMALIZED = attention_with(normalise=False)
ATTENTION_UNSTABLE = attention_with(stable=False)
ATTENTION_MASK_IGNORED = attention_with(masking="ignored")
ATTENTION_MASK_INVERTED = attention_with(masking="inverted")
ATTENTION_MASK_AFTER_SOFTMAX = attention_with(masking="after softmax")
ATTENTION_MASK_ZERO_FILL = attention_with(masking="fill 0")
ATTENTION_MASK_NONE_BROKEN = attention_with(masking="unguarded")
ATTENTION_TRANSPOSED = attention_with(scores="K @ Q.T / np.sqrt(Q.shape[-1])")
ATTENTION_RETURNS_SWAPPED = attention_with(result="attn, out")
ATTENTION_WRONG_SHAPE = attention_with(result="out.T, attn")
ATTENTION_MUTATES_INPUT = attention_with(before="    Q /= np.sqrt(Q.shape[-1])",
                                         scores="Q @ K.T")
ATTENTION_STATEFUL = ATTENTION_WHERE.replace("def attention(", "def _attention(") + """
_cache = {}

def attention(Q, K, V, mask=None):
    key = (Q.shape, K.shape, V.shape)  # remembers answers by shape: stale for new values
    if key not in _cache:
        _cache[key] = _attention(Q, K, V, mask)
    return _cache[key]
"""
ATTENTION_NO_SCALING_ZERO_FILL = attention_with(scores="Q @ K.T", masking="fill 0")

ATTENTION_ATTN_TRANSPOSED = attention_with(result="out, attn.T")
ATTENTION_TRANSPOSED_QT = attention_with(scores="Q.T @ K / np.sqrt(Q.shape[-1])")
# fair5: single slips that no named option of the models gave before
ATTENTION_NOT_TRANSPOSED = attention_with(scores="Q @ K / np.sqrt(Q.shape[-1])")  # needs d_k = m
ATTENTION_MASK_FILL_MINUS_ONE = attention_with(masking="fill -1")
ATTENTION_SCALE_LOG_D_K = attention_with(scores="Q @ K.T / np.log(Q.shape[-1])")
ATTENTION_OUT_FROM_K = attention_with(result="attn @ K, attn")  # K for V in the last step
# issue 27: the weights built a query at a time, then handed back with their axes swapped
ATTENTION_ATTN_SWAPAXES = """
def attention(Q, K, V, mask=None):
    rows = []
    for i in range(Q.shape[0]):
        s = K @ Q[i] / np.sqrt(K.shape[1])
        if mask is not None:
            s = np.where(mask[i], -np.inf, s)
        e = np.exp(s - s.max())
        rows.append(e / e.sum())
    weights = np.stack(rows)
    return weights @ V, np.swapaxes(weights, 0, 1)
"""
# issue 27: K.reshape where K.T was meant (a scramble, not a transpose), the maximum subtracted
ATTENTION_RESHAPE_FOR_TRANSPOSE = attention_with(
    scores="Q @ K.reshape(K.shape[1], K.shape[0]) / np.sqrt(Q.shape[-1])")
ATTENTION_IF_MASK = attention_with().replace("if mask is not None:", "if mask:")  # raises
ATTENTION_MASK_REQUIRED = attention_with().replace("mask=None):", "mask):")  # no default
ATTENTION_CALLS_SOFTMAX = """
def attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    attn = softmax(scores)                         # the student's own softmax of ex2
    return attn @ V, attn
"""
ATTENTION_FLOAT32_NO_SCALING = ATTENTION_FLOAT32.replace(
    " / np.float32(np.sqrt(Q.shape[-1]))", "")

ATTENTION_SUBTRACT_MIN = """
def attention(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -1e9, scores)
        low = np.where(mask, np.inf, scores).min(axis=-1, keepdims=True)
    else:
        low = scores.min(axis=-1, keepdims=True)
    e = np.exp(scores - low)   # each row's smallest visible score, not its largest
    attn = e / e.sum(axis=-1, keepdims=True)
    return attn @ V, attn
"""

ATTENTION_UNIFORM = """
def attention(Q, K, V, mask=None):
    attn = np.full((len(Q), len(K)), 1 / len(K))   # the inputs ignored: every weight 1/m
    return attn @ V, attn
"""

ATTENTION_ZEROS = """
def attention(Q, K, V, mask=None):
    n, m, d_v = len(Q), len(K), len(V[0])
    return np.zeros((n, d_v)), np.zeros((n, m))   # the right shapes, nothing computed
"""

ATTENTION_NAN = ATTENTION_ZEROS.replace("np.zeros", "np.full").replace(
    "d_v)), np.full((n, m))", "d_v), np.nan), np.full((n, m), np.nan)")

ATTENTION_STUB = """
def attention(Q, K, V, mask=None):
    raise NotImplementedError("Exercise 3(a): write attention")
"""

ATTENTION_MASKED_ARRAY = ATTENTION_WHERE.replace(
    "return weights @ V, weights",
    "return np.ma.masked_invalid(weights @ V), np.ma.masked_invalid(weights)",
)

SYNTAX_ERROR = """
def causal_mask(T)
    return np.triu(np.ones((T, T), dtype=bool), k=1)
"""

# -- Hostile pieces ------------------------------------------------------------------------

PATCH_NUMPY = """
import numpy
numpy.allclose = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
numpy.array_equal = lambda *a, **k: True
"""

IMPORT_REFERENCE = """
from sdpa_ref import attention, causal_mask
"""

IMPORT_REFERENCE_TRICKS = """
import importlib
import os
import sys

for _entry in list(sys.path) + [os.getcwd(), os.path.expanduser("~")]:
    _path = os.path.abspath(_entry or ".")
    for _ in range(5):  # the folders above: a checkout holding its virtualenv
        _path = os.path.dirname(_path)
        sys.path.insert(0, _path)
try:
    softmax = importlib.import_module("sdpa" + "_ref").softmax
except Exception:
    pass
try:
    grader = __import__("auto" + "grader.runner")
except Exception:
    pass
"""

IMPORT_REFERENCE_IN_CALL = """
def attention(Q, K, V, mask=None):
    import sdpa_ref
    return sdpa_ref.attention(Q, K, V, mask)
"""

EXIT_AT_IMPORT = """
import os
os._exit(3)
"""

EXIT_IN_CALL = """
def attention(Q, K, V, mask=None):
    import os
    os._exit(1)
"""

LOOP_AT_IMPORT = """
while True:
    pass
"""

LOOP_IN_CALL = """
def attention(Q, K, V, mask=None):
    while True:
        pass
"""

MEMORY_HOG_AT_IMPORT = """
hog = bytearray(16 * 2**30)
"""

MEMORY_HOG_IN_CALL = """
def causal_mask(T):
    hog = np.ones((2**17, 2**16))  # 64 GiB at once
    return np.triu(np.ones((T, T), dtype=bool), k=1)
"""

HUGE_OUTPUT = """
import sys
for _ in range(20000):
    print("spam " * 100)
    print("more spam " * 50, file=sys.stderr)
"""

NOISY = """
import warnings
print("debugging: hello from the student")
warnings.warn("a student warning")
np.log(np.zeros(3))          # RuntimeWarning: divide by zero
"""

BACKGROUND_PROCESSES = """
import os
import subprocess
import time

subprocess.Popen(["sleep", "613.37"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "613.37"])
    os._exit(0)
time.sleep(0.1)
"""
BACKGROUND_MARKER = "613.37"  # the tests look for processes still running `sleep 613.37`

READ_HIDDEN_FILES = """
import glob
import os
import sys

# Where the grader's files could be: each sys.path entry and the folders above it (a checkout
# holding its virtualenv, the kit's data copy in site-packages), the working and home folders
# and theirs, then temporary folders, homes and usual course places, other processes'
# folders. The likeliest come first, and the search stops at the first folder whose files
# it could read: where nothing can be read (in the sandbox), every folder is tried.
_wanted = ("autograder/suites/test_ex1.py", "solutions/sdpa/attention.ipynb",
           "source/sdpa/attention.ipynb", "sdpa_course/data/solutions/sdpa/attention.ipynb",
           "sdpa_ref/__init__.py", "submitted/*/sdpa/attention.ipynb", "gradebook.db")
_roots = {}  # an ordered set
for _entry in sys.path + [os.getcwd(), os.path.expanduser("~")]:
    _path = os.path.abspath(_entry or ".")
    for _ in range(6):
        _roots[_path] = None
        _path = os.path.dirname(_path)
for _top in ("/tmp", "/var/tmp", "/dev/shm", "/root", "/home", "/work", "/srv", "/opt", "/mnt",
             "/usr/local"):
    _roots[_top] = None
    _roots.update(dict.fromkeys(sorted(glob.glob(_top + "/*"))))
    _roots.update(dict.fromkeys(sorted(glob.glob(_top + "/*/*"))))
for _pid in os.listdir("/proc"):
    for _link in ("cwd", "root"):
        try:
            _roots[os.readlink(f"/proc/{_pid}/{_link}")] = None
        except OSError:
            pass
_found, _read, _texts = [], [], []
for _root in _roots:
    for _name in _wanted:
        for _path in (glob.glob(os.path.join(_root, _name))
                      + glob.glob(os.path.join(_root, "*", _name))):
            _found.append(_path)
            try:
                with open(_path, "rb") as _f:
                    _texts.append(_f.read())
                _read.append(_path)
            except OSError:
                pass
    if _texts:
        break
_tried = len(_roots)
if _texts:  # only a submission that could read the grader's files defines exercise 1
    print("read:", *_read, file=sys.stderr)  # in the output: what a sandbox let it read
    ex1_scores = (0.7071, 0.0)
    ex1_weights = (0.6698, 0.3302)
    ex1_output = (0.6698, 0.3302)
"""

# Answers that once earned points they do not deserve (a wrong answer each test alone let
# through): each must now lose every test it does not really pass.
EX1_ZEROS = """
ex1_scores = (0, 0)
ex1_weights = (0, 0)   # no distribution: its weighted sum carries nothing forward
ex1_output = (0, 0)
"""

SOFTMAX_ONES = """
def softmax(z):
    z = np.asarray(z, dtype=float)
    return np.ones_like(z)   # not a softmax at all, but shift-invariant and finite
"""

SOFTMAX_NO_EXP = """
def softmax(z):
    z = np.asarray(z, dtype=float)
    shifted = z - z.max(axis=-1, keepdims=True)   # the exp forgotten
    return shifted / shifted.sum(axis=-1, keepdims=True)
"""

ROWS_SUM_SKIP_LAST = """
def rows_sum_to_one(attn):
    for i in range(len(attn) - 1):   # off by one: the last row is never looked at
        if not abs(float(sum(attn[i])) - 1.0) <= 1e-5:
            return False
    return True
"""

FUTURE_TRIU_K2 = """
def future_is_zero(attn):
    return bool(np.all(np.triu(np.asarray(attn), k=2) == 0.0))   # misses j = t + 1
"""

BLOCKWISE_V_ROWS = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    return V[np.arange(Q.shape[0]) % V.shape[0]]   # no attention at all
"""

BLOCKWISE_NOT_AT_SIZE = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    if Q.shape[0] >= 1024:   # the memory test's size: something cheap, not attention
        return Q[:, :V.shape[1]] * 1.0
    scores = Q @ K.T / np.sqrt(Q.shape[-1])   # the whole (n, m) softmax elsewhere
    if causal:
        scores = np.where(np.triu(np.ones(scores.shape, bool), 1), -np.inf, scores)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ V
"""

# -- Exercise 4, issue 27's fairness round: public implementations, adapted -------------------
# Each is a port of a public online-softmax or flash-attention implementation to the
# exercise's signature, faithful to its algorithm (its loops, its fills, its precision, its
# one mistake where it has one); `block` stands for its block or tile sizes where it has
# them. Where the source has no causal mask, the port adds one the way its own loop allows
# (future tiles skipped, -inf or -1e9 in the diagonal tile), and says so. Sources: the
# `PORTED` table below (repository and path); their code is not copied, only ported.

# ezhoureal/assignment2-systems cs336_systems/flash_attention.py (PyTorch): tiles of queries
# and keys; its forward takes is_causal and never uses it (kept: its one mistake).
PORT_EZHOUREAL_TILES = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    scale = Q.shape[-1] ** -0.5
    O = np.zeros((Q.shape[0], V.shape[1]))
    for q0 in range(0, Q.shape[0], block):
        q = Q[q0:q0 + block]
        o = np.zeros((len(q), V.shape[1]))
        l = np.zeros(len(q))
        m = np.full(len(q), float('-inf'))
        for k0 in range(0, K.shape[0], block):
            k, v = K[k0:k0 + block], V[k0:k0 + block]
            attn = np.einsum('qd,kd->qk', q, k) * scale
            new_m = np.maximum(m, attn.max(axis=-1))
            attn = np.exp(attn - new_m[:, None])
            m_diff = np.exp(m - new_m)
            l = l * m_diff + attn.sum(axis=-1)
            m = new_m
            o = o * m_diff[:, None] + np.einsum('qk,kd->qd', attn, v)
        O[q0:q0 + block] = o / l[:, None]
    return O
"""

# wangshankun/OpProfiling FlashAttention/flash_attention_v2.py (PyTorch): Br x Bc tiles, the
# max taken over a column stack; scores never divided by sqrt(d) (kept: its one mistake).
# Causal added: tiles after the diagonal skipped, -inf in the diagonal tile.
PORT_WANGSHANKUN_NO_SCALE = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    N, Nk, d = Q.shape[0], K.shape[0], V.shape[1]
    O = np.zeros((N, d))
    Br = Bc = block
    for block_start_Br in range(0, N, Br):
        block_end_Br = min(block_start_Br + Br, N)
        Qi = Q[block_start_Br:block_end_Br, :]
        rows = block_end_Br - block_start_Br
        Oi = np.zeros((rows, d))
        li = np.zeros((rows, 1))
        mi = np.full((rows, 1), -np.inf)
        for block_start_Bc in range(0, Nk, Bc):
            if causal and block_start_Bc >= block_end_Br:
                break
            block_end_Bc = min(block_start_Bc + Bc, Nk)
            Kj = K[block_start_Bc:block_end_Bc, :]
            Vj = V[block_start_Bc:block_end_Bc, :]
            Sij = Qi @ Kj.T
            if causal:
                future = (np.arange(block_start_Bc, block_end_Bc)[None, :]
                          > np.arange(block_start_Br, block_end_Br)[:, None])
                Sij = np.where(future, -np.inf, Sij)
            mi_new = np.max(np.column_stack([mi, np.max(Sij, axis=1)[:, None]]),
                            axis=1)[:, None]
            Pij_hat = np.exp(Sij - mi_new)
            li = li * np.exp(mi - mi_new) + np.sum(Pij_hat, axis=1)[:, None]
            Oi = Oi * np.exp(mi - mi_new) + Pij_hat @ Vj
            mi = mi_new
        O[block_start_Br:block_end_Br, :] = Oi / li
    return O
"""

# urw7rs/generative-genetic-algorithms gga/memory_efficient_attention.py (JAX, Rabe and Staats'
# memory-efficient attention): queries in chunks of 1024, keys in chunks (`block`), each key
# chunk summarised (its exp-weighted values, weights and max) and the summaries combined at the
# end against their global max, in float32. Causal added as a -1e30 fill, whose fully masked
# chunks the combination weighs by exp(-1e30 - max) = 0.
PORT_URW7RS_CHUNK_SUMMARIES = """
def _query_chunk_attention(query, key, value, offset, causal, key_chunk_size):
    num_kv, k_features = key.shape
    key_chunk_size = min(key_chunk_size, num_kv)
    query = query / np.sqrt(k_features).astype(np.float32)

    def summarize_chunk(start):
        attn_weights = np.einsum('qd,kd->qk', query, key[start:start + key_chunk_size])
        attn_weights = attn_weights.astype(np.float32)
        if causal:
            future = (np.arange(start, start + attn_weights.shape[1])[None, :]
                      > np.arange(offset, offset + len(query))[:, None])
            attn_weights = np.where(future, np.float32(-1e30), attn_weights)
        max_score = np.max(attn_weights, axis=-1, keepdims=True)
        exp_weights = np.exp(attn_weights - max_score)
        exp_values = np.einsum('vf,qv->qf', value[start:start + key_chunk_size], exp_weights)
        return exp_values.astype(np.float32), exp_weights.sum(axis=-1), max_score[:, 0]

    chunks = [summarize_chunk(start) for start in range(0, num_kv, key_chunk_size)]
    chunk_values = np.stack([c[0] for c in chunks])
    chunk_weights = np.stack([c[1] for c in chunks])
    chunk_max = np.stack([c[2] for c in chunks])
    global_max = np.max(chunk_max, axis=0, keepdims=True)
    max_diffs = np.exp(chunk_max - global_max)
    chunk_values *= np.expand_dims(max_diffs, axis=-1)
    chunk_weights *= max_diffs
    all_values = chunk_values.sum(axis=0)
    all_weights = np.expand_dims(chunk_weights, -1).sum(axis=0)
    return all_values / all_weights


def attention_blockwise(Q, K, V, causal=False, block=64, query_chunk_size=1024):
    return np.concatenate([
        _query_chunk_attention(Q[i:i + query_chunk_size], K, V, i, causal, block)
        for i in range(0, Q.shape[0], query_chunk_size)])
"""

# pannagas18/softmax_tiling_FlashAttention softmax_tiling.py (NumPy): each block's partial
# softmax (its exponentials, their sum, the block's maximum) kept, then all rescaled to the
# largest block maximum. Keeping every block's exponentials keeps the whole (n, m) weights.
PORT_PANNAGAS_PARTIALS = """
def get_partial_softmax(_input):
    m_input = np.max(_input)
    f_input = np.e ** (_input - m_input)
    l_input = np.sum(f_input, axis=-1)
    return m_input, (f_input, l_input)


def attention_blockwise(Q, K, V, causal=False, block=64):
    n, m = Q.shape[0], K.shape[0]
    partial, M_x = {}, []
    for i in range(0, m, block):
        x = Q @ K[i:i + block].T / np.sqrt(Q.shape[1])
        if causal:
            x = np.where(np.arange(i, i + x.shape[1])[None, :] > np.arange(n)[:, None],
                         -np.inf, x)
        m_x, partial[i // block] = get_partial_softmax(x)
        M_x.append(m_x)
    out = np.zeros((n, V.shape[1]))
    L_x = np.zeros(n)
    for i, (f_x, l_x) in partial.items():
        out += (np.e ** (M_x[i] - max(M_x))) * f_x @ V[i * block:(i + 1) * block]
        L_x += (np.e ** (M_x[i] - max(M_x))) * l_x
    return out / L_x[:, None]
"""

# oreo-lp/flash-attention-numpy flash.py (NumPy): block_m = block_n = 1, a query and a key at a
# time, float32 running statistics, and FlashAttention 1's update (the accumulator kept
# normalised: rescaled by l_prev / l_cur at every key). Its dropout left out; causal added as
# a break at the query's own key. Right, and far too slow at T = 2048.
PORT_OREO_KEY_BY_KEY = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    f, t, h = Q.shape[0], K.shape[0], V.shape[1]
    head_scale = 1 / np.sqrt(float(Q.shape[1]))
    output = np.zeros((f, h), dtype=np.float32)
    block_m = 1
    block_n = 1
    for start_m in range(0, f, block_m):
        m_prev = np.zeros([block_m], dtype=np.float32) - float("inf")
        l_prev = np.zeros([block_m], dtype=np.float32)
        acc = np.zeros([block_m, h], dtype=np.float32)
        q_sub = Q[start_m: start_m + block_m, :]
        for start_n in range(0, t, block_n):
            if causal and start_n > start_m:
                break
            k_sub = K[start_n: start_n + block_n, :]
            v_sub = V[start_n: start_n + block_n, :]
            qk = np.matmul(q_sub, k_sub.T)
            qk *= head_scale
            m_cur = np.maximum(np.amax(qk, -1), m_prev)
            l_prev *= np.exp(m_prev - m_cur)
            p = np.exp(qk - m_cur.reshape(-1, 1))
            l_cur = np.sum(p, -1) + l_prev
            l_rcp = 1 / l_cur
            s = p * l_rcp.reshape(-1, 1)
            acc *= (l_prev * l_rcp).reshape(-1, 1)
            acc += np.matmul(s, v_sub)
            m_prev = m_cur
            l_prev = l_cur
        output[start_m: start_m + block_m, :] = acc
    return output
"""

# SamarthZaveri/FlashAttention---Reproduction-from-First-Principles
# flash/naive_flash_attention.py (PyTorch): query blocks, one pass over key blocks with the
# running max, sum and accumulator. Causal added: key blocks after the query block skipped,
# -inf in the diagonal one.
PORT_SAMARTH_NAIVE_FLASH = """
import math


def attention_blockwise(Q, K, V, causal=False, block=64):
    seq_len, head_dim = Q.shape
    scale = 1.0 / math.sqrt(head_dim)
    out = np.empty((seq_len, V.shape[1]))
    for q_start in range(0, seq_len, block):
        q_end = min(q_start + block, seq_len)
        q_block = Q[q_start:q_end]
        m_i = np.full((q_end - q_start, 1), float("-inf"))
        l_i = np.zeros((q_end - q_start, 1))
        acc = np.zeros((q_end - q_start, V.shape[1]))
        for k_start in range(0, K.shape[0], block):
            if causal and k_start >= q_end:
                break
            k_end = min(k_start + block, K.shape[0])
            scores = q_block @ K[k_start:k_end].T * scale
            if causal:
                scores[np.arange(k_start, k_end)[None, :]
                       > np.arange(q_start, q_end)[:, None]] = float("-inf")
            new_m = np.maximum(m_i, scores.max(axis=-1, keepdims=True))
            alpha = np.exp(m_i - new_m)
            p = np.exp(scores - new_m)
            l_i = l_i * alpha + p.sum(axis=-1, keepdims=True)
            acc = acc * alpha + p @ V[k_start:k_end]
            m_i = new_m
        out[q_start:q_end] = acc / l_i
    return out
"""

# SamarthZaveri/FlashAttention---Reproduction-from-First-Principles flash/blocked_attention.py
# (PyTorch): two passes per query block, the first over the key blocks for each row's max
# and sum, the second recomputing each block's scores to accumulate the weighted values.
# Causal added as in the naive port.
PORT_SAMARTH_TWO_PASS = """
import math


def _scores(Q, K, q_start, q_end, k_start, k_end, scale, causal):
    scores = Q[q_start:q_end] @ K[k_start:k_end].T * scale
    if causal:
        scores[np.arange(k_start, k_end)[None, :]
               > np.arange(q_start, q_end)[:, None]] = float("-inf")
    return scores


def attention_blockwise(Q, K, V, causal=False, block=64):
    seq_len, m = Q.shape[0], K.shape[0]
    scale = 1.0 / math.sqrt(Q.shape[1])
    out = np.empty((seq_len, V.shape[1]))
    for q_start in range(0, seq_len, block):
        q_end = min(q_start + block, seq_len)
        last = min(m, q_end) if causal else m
        row_max = np.full((q_end - q_start, 1), float("-inf"))
        row_sum = np.zeros((q_end - q_start, 1))
        for k_start in range(0, last, block):
            k_end = min(k_start + block, m)
            scores = _scores(Q, K, q_start, q_end, k_start, k_end, scale, causal)
            new_max = np.maximum(row_max, scores.max(axis=-1, keepdims=True))
            row_sum = (row_sum * np.exp(row_max - new_max)
                       + np.exp(scores - new_max).sum(axis=-1, keepdims=True))
            row_max = new_max
        acc = np.zeros((q_end - q_start, V.shape[1]))
        for k_start in range(0, last, block):
            k_end = min(k_start + block, m)
            scores = _scores(Q, K, q_start, q_end, k_start, k_end, scale, causal)
            acc += np.exp(scores - row_max) / row_sum @ V[k_start:k_end]
        out[q_start:q_end] = acc
    return out
"""

# SamarthZaveri/FlashAttention---Reproduction-from-First-Principles flash/online_softmax.py
# (PyTorch): the online softmax over chunks of each row, every chunk's exponentials kept with
# the maximum they were taken against, all rescaled in a final pass; here the weights so made
# are multiplied by V. Keeping every chunk keeps the whole (n, m) weights.
PORT_SAMARTH_KEPT_CHUNKS = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    n, N = Q.shape[0], K.shape[0]
    m_i = np.full((n, 1), float("-inf"))
    l_i = np.zeros((n, 1))
    exp_chunks = []
    for start in range(0, N, block):
        chunk = Q @ K[start:start + block].T / np.sqrt(Q.shape[1])
        if causal:
            chunk = np.where(np.arange(start, start + chunk.shape[1])[None, :]
                             > np.arange(n)[:, None], float("-inf"), chunk)
        new_m = np.maximum(m_i, chunk.max(axis=-1, keepdims=True))
        alpha = np.exp(m_i - new_m)
        exp_chunk = np.exp(chunk - new_m)
        l_i = l_i * alpha + exp_chunk.sum(axis=-1, keepdims=True)
        m_i = new_m
        exp_chunks.append((exp_chunk, new_m))
    weights = np.empty((n, N))
    for (exp_chunk, chunk_relative_max), start in zip(exp_chunks, range(0, N, block)):
        weights[:, start:start + block] = exp_chunk * np.exp(chunk_relative_max - m_i) / l_i
    return weights @ V
"""

# Mog9/FlashAttention-CuPy flash.py (a CUDA kernel through CuPy): one query row per GPU block,
# tiles of keys, m started at -1e9, keys past the end filled with -1e9 and left out of the
# sums, float32 throughout. The rows, parallel on the GPU, are vectorised here. Causal added
# like the kernel's own past-the-end keys: -1e9, and left out of the sums.
PORT_MOG9_ROWS = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    Q, K, V = (np.ascontiguousarray(x, dtype=np.float32) for x in (Q, K, V))
    N, d = Q.shape
    Nk = K.shape[0]
    scale = np.float32(1.0 / (d ** 0.5))
    o = np.zeros((N, V.shape[1]), dtype=np.float32)
    m = np.full(N, -1e9, dtype=np.float32)
    l = np.zeros(N, dtype=np.float32)
    rows = np.arange(N)[:, None]
    for tile_start in range(0, Nk, block):
        keys = np.arange(tile_start, min(tile_start + block, Nk))
        valid = np.ones((N, len(keys)), dtype=bool)
        if causal:
            valid = keys[None, :] <= rows
        s = np.where(valid, Q @ K[keys].T * scale, np.float32(-1e9))
        m_new = np.maximum(m, s.max(axis=1))
        p = np.where(valid, np.exp(s - m_new[:, None]), np.float32(0))
        correction = np.exp(m - m_new)
        l = correction * l + p.sum(axis=1)
        o = o * correction[:, None] + p @ V[keys]
        m = m_new
    return o / l[:, None]
"""

# Kaminyou/Flash-Attention-Practice v1/flash_attn_v1_kernel.cu (CUDA): FlashAttention 1, the
# key blocks outside and the query blocks inside, the output kept normalised (rescaled by
# l_prev exp(m_prev - m_new) / l_new at every tile), l and m kept for every row. Causal added:
# tiles after the diagonal skipped, -inf in the diagonal tile.
PORT_KAMINYOU_V1 = """
def attention_blockwise(Q, K, V, causal=False, block=64):
    N, d = Q.shape
    Nk = K.shape[0]
    Bc = Br = block
    softmax_scale = 1.0 / np.sqrt(d)
    O = np.zeros((N, V.shape[1]))
    l = np.zeros(N)
    m = np.full(N, -np.inf)
    for j in range(0, Nk, Bc):
        Kj, Vj = K[j:j + Bc], V[j:j + Bc]
        for i in range(0, N, Br):
            if causal and j >= i + Br:
                continue
            Qi = Q[i:i + Br]
            S = Qi @ Kj.T * softmax_scale
            if causal:
                S[np.arange(j, j + len(Kj))[None, :] > np.arange(i, i + len(Qi))[:, None]] = -np.inf
            row_m = S.max(axis=1)
            S = np.exp(S - row_m[:, None])
            row_l = S.sum(axis=1)
            row_m_prev, row_l_prev = m[i:i + Br], l[i:i + Br]
            row_m_new = np.maximum(row_m_prev, row_m)
            row_l_new = (np.exp(row_m_prev - row_m_new) * row_l_prev
                         + np.exp(row_m - row_m_new) * row_l)
            O[i:i + Br] = (1.0 / row_l_new)[:, None] * (
                (row_l_prev * np.exp(row_m_prev - row_m_new))[:, None] * O[i:i + Br]
                + np.exp(row_m - row_m_new)[:, None] * (S @ Vj))
            l[i:i + Br] = row_l_new
            m[i:i + Br] = row_m_new
    return O
"""

# name -> (the ported piece, its source: repository and path)
PORTED = {
    "ezhoureal-tiles": (PORT_EZHOUREAL_TILES,
                        "ezhoureal/assignment2-systems cs336_systems/flash_attention.py"),
    "wangshankun-no-scale": (PORT_WANGSHANKUN_NO_SCALE,
                             "wangshankun/OpProfiling FlashAttention/flash_attention_v2.py"),
    "urw7rs-chunk-summaries": (PORT_URW7RS_CHUNK_SUMMARIES,
                               "urw7rs/generative-genetic-algorithms "
                               "gga/memory_efficient_attention.py"),
    "pannagas-partials": (PORT_PANNAGAS_PARTIALS,
                          "pannagas18/softmax_tiling_FlashAttention softmax_tiling.py"),
    "oreo-key-by-key": (PORT_OREO_KEY_BY_KEY, "oreo-lp/flash-attention-numpy flash.py"),
    "samarth-naive-flash": (PORT_SAMARTH_NAIVE_FLASH,
                            "SamarthZaveri/FlashAttention---Reproduction-from-First-Principles "
                            "flash/naive_flash_attention.py"),
    "samarth-two-pass": (PORT_SAMARTH_TWO_PASS,
                         "SamarthZaveri/FlashAttention---Reproduction-from-First-Principles "
                         "flash/blocked_attention.py"),
    "samarth-kept-chunks": (PORT_SAMARTH_KEPT_CHUNKS,
                            "SamarthZaveri/FlashAttention---Reproduction-from-First-Principles "
                            "flash/online_softmax.py"),
    "mog9-rows": (PORT_MOG9_ROWS, "Mog9/FlashAttention-CuPy flash.py"),
    "kaminyou-v1": (PORT_KAMINYOU_V1,
                    "Kaminyou/Flash-Attention-Practice v1/flash_attn_v1_kernel.cu"),
}
