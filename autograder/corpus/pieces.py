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
