"""The causal weights of the lesson's picture, read from a submission for its feedback page.

The notebook's heatmap cell (`ex3_heatmap`) draws the weights the student's `attention`
returns on the lesson's own public example: causal self-attention over T = 8 random tokens.
Grading leaves that cell out (`skipping`); instead the trusted side calls the student's
`causal_mask` and `attention` on the same example, through the sandbox like the suites' calls
(their time counts in the submission's budget), and keeps the weights as plain numbers; the
feedback page draws them (`sdpa_course.reports.heatmap`). No hidden input is involved, and no
picture is made by student code.
"""

from __future__ import annotations

import numpy as np

from autograder.sandbox import StudentError

HEATMAP_CELL = "ex3_heatmap"  # the notebook's cell that draws the picture
T, D_MODEL, D_K, D_V = 8, 16, 8, 4  # the lesson's example, as the cell builds it


def lesson_example() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V exactly as the notebook's heatmap cell makes them (a test holds them equal)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(T, D_MODEL))  # (T, d_model): one embedding per token
    W_q = rng.normal(size=(D_MODEL, D_K)) / np.sqrt(D_MODEL)  # (d_model, d_k)
    W_k = rng.normal(size=(D_MODEL, D_K)) / np.sqrt(D_MODEL)  # (d_model, d_k)
    W_v = rng.normal(size=(D_MODEL, D_V)) / np.sqrt(D_MODEL)  # (d_model, d_v)
    return X @ W_q, X @ W_k, X @ W_v  # (T, d_k), (T, d_k), (T, d_v)


def _cell(value) -> float | None:
    """One weight as a float, None when it is not a finite number (never rounded: a tiny
    weight is not an exact zero, which the page greys)."""
    number = float(value)
    return number if np.isfinite(number) else None


def causal_weights(student) -> dict:
    """`{"size": T, "weights": rows of T floats (None: not finite) or None, "problem": why
    there is no picture, ""}`: the notebook's `attention(Q, K, V, mask=causal_mask(T))`."""
    Q, K, V = lesson_example()
    for name in ("causal_mask", "attention"):
        if not student.has(name):
            return {"size": T, "weights": None,
                    "problem": f"`{name}` is not defined yet: finish Exercise 3."}
    try:
        mask = student.call("causal_mask", T)
        answer = student.call("attention", Q, K, V, mask=mask)
    except StudentError as err:
        kind = getattr(err, "type_name", "")
        if kind == "NotImplementedError":
            return {"size": T, "weights": None, "problem": "Exercise 3 is not answered yet."}
        return {"size": T, "weights": None, "problem": f"your code failed: {str(err)[:300]}"}
    try:
        attn = np.asarray(answer[1], dtype=float)  # (T, T) when the answer is right
    except (TypeError, ValueError, IndexError, KeyError, OverflowError):
        return {"size": T, "weights": None,
                "problem": "attention did not return (out, attn) with numbers in attn."}
    if attn.shape != (T, T):
        return {"size": T, "weights": None,
                "problem": f"attn should have shape ({T}, {T}), got {attn.shape}."}
    return {"size": T, "weights": [[_cell(x) for x in row] for row in attn], "problem": ""}
