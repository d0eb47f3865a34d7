"""Small named pieces of student code; `autograder.corpus` assembles submissions from them.

Each piece defines part of one exercise, written the way a student would. The correct pieces
come in several styles (the lesson's code, numpy without the lesson's shortcuts, plain Python
loops); each mistake piece differs from a correct one by the one mistake it is named after.
"""

IMPORTS = "import numpy as np\n"

# -- Exercise 1: numbers written by hand ---------------------------------------------------

EX1_ROUNDED = """
ex1_scores = (0.707, 0.0)
ex1_weights = (0.670, 0.330)
ex1_output = (0.670, 0.330)
"""

EX1_COMPUTED = """
q = np.array([1.0, 0.0])
keys = np.array([[1.0, 0.0], [0.0, 1.0]])
values = np.array([[1.0, 0.0], [0.0, 1.0]])
ex1_scores = keys @ q / np.sqrt(2)
ex1_weights = np.exp(ex1_scores) / np.exp(ex1_scores).sum()
ex1_output = ex1_weights @ values
"""

EX1_NO_SCALING = """
ex1_scores = [1.0, 0.0]
ex1_weights = [0.731, 0.269]
ex1_output = [0.731, 0.269]
"""

EX1_WRONG_SCALE = """
ex1_scores = [0.5, 0.0]      # divided by d_k
ex1_weights = [0.622, 0.378]
ex1_output = [0.622, 0.378]
"""

EX1_NOT_NORMALIZED = """
ex1_scores = (0.707, 0.0)
ex1_weights = (2.028, 1.0)   # exp of the scores, never divided by their sum
ex1_output = (2.028, 1.0)
"""

EX1_TRUNCATED = """
ex1_scores = (0.707, 0.0)
ex1_weights = (0.669, 0.330)   # 0.6698 and 0.3302 cut, not rounded, to three decimals
ex1_output = (0.669, 0.330)
"""

EX1_ROW_VECTORS = """
q = np.array([[1.0, 0.0]])                  # (1, d_k): one query as a row
keys = np.array([[1.0, 0.0], [0.0, 1.0]])
ex1_scores = q @ keys.T / np.sqrt(2)        # (1, 2)
ex1_weights = np.exp(ex1_scores) / np.exp(ex1_scores).sum()
ex1_output = ex1_weights @ np.eye(2)        # (1, 2)
"""

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

SOFTMAX_AXIS_0 = """
def softmax(z):
    e = np.exp(z - z.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
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

EX2_ROUNDED = """
p_unscaled = 0.9997
p_scaled = 0.731
grad_unscaled = 3.35e-4
grad_scaled = 0.197
"""

EX2_COMPUTED = """
p_unscaled = softmax(np.array([8.0, 0.0]))[0]
p_scaled = softmax(np.array([8.0, 0.0]) / np.sqrt(64))[0]
smaller_unscaled = 1 - p_unscaled
smaller_scaled = 1 - p_scaled
grad_unscaled = smaller_unscaled * (1 - smaller_unscaled)
grad_scaled = smaller_scaled * (1 - smaller_scaled)
"""

EX2_TRUNCATED = """
p_unscaled = 0.999       # 0.99966 cut to three significant figures
p_scaled = 0.731
grad_unscaled = 3.35e-4
grad_scaled = 0.196      # 0.19661 cut
"""

EX2_ONE_ELEMENT = """
raw = np.array([[8.0, 0.0]])                     # (1, 2): one query's scores as a row
p_unscaled = softmax(raw)[:, 0]                  # shape (1,)
p_scaled = softmax(raw / np.sqrt(64))[:, :1]     # shape (1, 1)
grad_unscaled = p_unscaled * (1 - p_unscaled)    # shape (1,)
grad_scaled = np.float64(p_scaled.item() * (1 - p_scaled.item()))
"""

EX2_WRONG_KEY = """
p_unscaled = 0.000335   # the smaller key's weight
p_scaled = 0.269
grad_unscaled = 3.35e-4
grad_scaled = 0.197
"""

EX2_NO_SCALING = """
p_unscaled = 0.9997
p_scaled = 0.9997       # forgot to divide by sqrt(64)
grad_unscaled = 3.35e-4
grad_scaled = 3.35e-4
"""

EX2_WRONG_GRADIENT = """
p_unscaled = 0.9997
p_scaled = 0.731
grad_unscaled = -0.9997 * 0.000335   # the cross term -p1 p2, not d p2 / d s2
grad_scaled = -0.731 * 0.269
"""

EX2_WRONG_SCALE = """
p_unscaled = 0.9997
p_scaled = float(softmax(np.array([8.0, 0.0]) / 64)[0])   # divided by d_k, not sqrt(d_k)
grad_unscaled = 3.35e-4
grad_scaled = p_scaled * (1 - p_scaled)                   # right for that weight
"""

EX2_RAW_SCORE_GRADIENT = """
p_unscaled = 0.9997
p_scaled = 0.731
grad_unscaled = 3.35e-4
grad_scaled = 0.731 * 0.269 / 8   # the chain rule through s / 8: d w2 / d (raw score)
"""

EX2_FORWARD_DIFFERENCE = """
def _smaller_weight(gap, nudge):
    return softmax(np.array([gap, nudge]))[1]

h = 1e-2                          # a forward difference with a large step
p_unscaled = softmax(np.array([8.0, 0.0]))[0]
p_scaled = softmax(np.array([1.0, 0.0]))[0]
grad_unscaled = (_smaller_weight(8.0, h) - _smaller_weight(8.0, 0.0)) / h
grad_scaled = (_smaller_weight(1.0, h) - _smaller_weight(1.0, 0.0)) / h
"""

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
ATTENTION_FLOAT32_NO_SCALING = ATTENTION_FLOAT32.replace(
    " / np.float32(np.sqrt(Q.shape[-1]))", "")

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
import sys

sys.path.insert(0, "/work/main")
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

subprocess.Popen(["sleep", "600"])
if os.fork() == 0:
    os.setsid()
    time.sleep(600)
    os._exit(0)
"""

READ_HIDDEN_FILES = """
import glob
import sys

_found = []
for _root in sys.path:
    _found += glob.glob(_root + "/autograder/suites/test_ex1.py")
    _found += glob.glob(_root + "/solutions/sdpa/attention.ipynb")
_texts = []
for _path in _found:
    try:
        with open(_path) as _f:
            _texts.append(_f.read())
    except OSError:
        pass
if _texts:  # only a submission that could read the grader's files defines exercise 1
    ex1_scores = (0.7071, 0.0)
    ex1_weights = (0.6698, 0.3302)
    ex1_output = (0.6698, 0.3302)
"""
