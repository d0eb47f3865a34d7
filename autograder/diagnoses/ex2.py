"""Exercise 2: which mistake the softmax and the four numbers show."""

from __future__ import annotations

import numpy as np

import sdpa_ref
from autograder.compare import three_significant_figures
from autograder.diagnoses.probe import Prober

RAW = np.array([8.0, 0.0])  # (2,) the larger key first
SCALED = RAW / 8.0  # (2,) divided by sqrt(d_k) = sqrt(64)


def _number(answer):
    try:
        value = np.asarray(answer.value, dtype=float)
    except (TypeError, ValueError):
        return None
    return float(value) if answer.ok and value.ndim == 0 else None


def _same(value, reference) -> bool:
    return value is not None and abs(value - reference) <= three_significant_figures(reference)


def diagnose(student) -> set[str]:
    prober = Prober(student)
    codes = _diagnose_softmax(prober) if student.has("softmax") else set()
    p_unscaled, p_scaled = (_number(prober.value(name)) for name in ("p_unscaled", "p_scaled"))
    big, big_scaled = sdpa_ref.softmax(RAW)[0], sdpa_ref.softmax(SCALED)[0]
    if _same(p_unscaled, 1 - big) or any(_same(p_scaled, 1 - p) for p in (big, big_scaled)):
        codes.add("wrong-key")
    if _same(p_scaled, big) or _same(p_scaled, 1 - big):
        codes.add("no-scaling")
    if any(p is not None and not 0 <= p <= 1 for p in (p_unscaled, p_scaled)):
        codes.add("not-normalized")

    grads = {name: _number(prober.value(name)) for name in ("grad_unscaled", "grad_scaled")}
    right = {"grad_unscaled": sdpa_ref.softmax_jacobian(RAW)[1, 1],
             "grad_scaled": sdpa_ref.softmax_jacobian(SCALED)[1, 1]}
    if _same(grads["grad_scaled"], right["grad_unscaled"]):
        codes.add("no-scaling")
    elif any(value is not None and not _same(value, right[name])
             for name, value in grads.items()):
        codes.add("wrong-gradient")
    return codes


def _diagnose_softmax(prober) -> set[str]:
    codes = set()
    rng = np.random.default_rng(902)
    vector, matrix = rng.normal(size=4), rng.normal(size=(3, 4))  # (4,), (3, 4)
    got_vector = _array(prober.call("softmax", vector))
    got_matrix = _array(prober.call("softmax", matrix))
    for got, z in ((got_vector, vector), (got_matrix, matrix)):
        if got is None or got.shape != z.shape:
            continue
        if z.ndim == 2 and np.allclose(got, sdpa_ref.softmax(z, axis=0), atol=1e-9):
            codes.add("softmax-axis")
        elif not np.allclose(got.sum(axis=-1), 1.0, atol=1e-6):
            codes.add("not-normalized")
    large = _array(prober.call("softmax", 800.0 + vector))
    moderate_ok = got_vector is not None and bool(np.all(np.isfinite(got_vector)))
    if moderate_ok and (large is None or not np.all(np.isfinite(large))):
        codes.add("unstable-softmax")
    return codes


def _array(answer):
    if not answer.ok:
        return None
    try:
        return np.asarray(answer.value, dtype=float)
    except (TypeError, ValueError):
        return None
