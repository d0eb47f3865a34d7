"""Exercise 3(c): why `rows_sum_to_one` or `future_is_zero` judges wrongly, found by probing.

Each check is handed a few small matrices chosen so that the usual slips answer differently
from a right check:

- `rows_sum_to_one` comparing sums with 1 exactly (`== 1`, or more tightly than float32
  rounding) accepts rows of dyadic weights, whose sums are exactly 1 in binary, and rejects
  correct softmax rows, whose sums are 1 only up to rounding;
- `future_is_zero` looking below the diagonal accepts a matrix that is zero there, not above,
  and rejects a correct causal one;
- `future_is_zero` also demanding a zero diagonal rejects a correct causal matrix (whose
  diagonal holds each query's weight on itself) and accepts one zero on and above it.

A check that needs the triangle it looks at to be zero is read off four matrices: zero
strictly above the diagonal (correct), on and above it, strictly below it, on and below it.
"""

from __future__ import annotations

import numpy as np

import sdpa_ref
from autograder.diagnoses.probe import Prober

# Rows of dyadic fractions: each sums to exactly 1.0 in binary floating point, however summed.
EXACT = np.array([[1.0, 0.0, 0.0, 0.0],
                  [0.5, 0.5, 0.0, 0.0],
                  [0.25, 0.25, 0.5, 0.0],
                  [0.125, 0.375, 0.25, 0.25]])  # (4, 4), causal


def _softmax_weights(seed, T, dtype):
    """A correct causal attention matrix whose rows sum to 1 only up to rounding."""
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.normal(size=(T, 3)).astype(dtype) for _ in range(3))
    return sdpa_ref.attention(Q, K, V, sdpa_ref.causal_mask(T))[1]  # (T, T)


ROUNDED = (_softmax_weights(921, 9, np.float64), _softmax_weights(922, 9, np.float32))
CAUSAL = ROUNDED[0]  # (9, 9): zero strictly above the diagonal, non-zero on and below it
PAST_ZERO = CAUSAL.T.copy()  # (9, 9): zero strictly below the diagonal, non-zero above it
ON_AND_ABOVE_ZERO = np.tril(CAUSAL, k=-1)  # (9, 9): zero on and above the diagonal
ON_AND_BELOW_ZERO = np.triu(PAST_ZERO, k=1)  # (9, 9): zero on and below the diagonal


def _says(prober, name, attn):
    """The check's verdict as a bool, or None when it crashed or gave no bool."""
    answer = prober.call(name, attn, readonly=True)
    value = answer.value
    if not answer.ok or not isinstance(value, (bool, np.bool_)):
        return None
    return bool(value)


def diagnose(student) -> set[str]:
    prober = Prober(student)
    codes = set()
    if student.has("rows_sum_to_one"):
        exact = _says(prober, "rows_sum_to_one", EXACT)
        rounded = [_says(prober, "rows_sum_to_one", attn) for attn in ROUNDED]
        if exact is True and False in rounded:
            codes.add("check-exact-float")
    if student.has("future_is_zero") and _says(prober, "future_is_zero", CAUSAL) is False:
        says = {name: _says(prober, "future_is_zero", attn) for name, attn in (
            ("on and above", ON_AND_ABOVE_ZERO), ("below", PAST_ZERO),
            ("on and below", ON_AND_BELOW_ZERO))}
        if says["below"] is True or says["on and below"] is True:
            codes.add("check-lower-triangle")
        if says["on and above"] is True or (says["on and below"] is True
                                            and says["below"] is False):
            codes.add("check-diagonal")
    return codes
