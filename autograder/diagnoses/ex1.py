"""Exercise 1: which mistake the hand-computed numbers show.

The student's pair of numbers is compared, to three decimals, with what each mistake gives
for q = (1, 0), k1 = (1, 0), k2 = (0, 1), v1 = (1, 0), v2 = (0, 1), d_k = 2.
"""

from __future__ import annotations

import math

import numpy as np

import sdpa_ref
from autograder.compare import HAND, Mismatch, as_pair
from autograder.diagnoses.probe import Prober

RAW = np.array([1.0, 0.0])  # (2,) q·k1, q·k2
# What the scores become under each scale a student might use, and the code it shows.
SCALES = {
    1 / math.sqrt(2): "",
    1.0: "no-scaling",
    1 / 2: "wrong-scale",
    math.sqrt(2): "wrong-scale",
    2.0: "wrong-scale",
}


def _near(pair, expected) -> bool:
    return pair is not None and bool(np.all(np.abs(pair - expected) <= HAND))


def _pair(answer):
    """Two numbers in any layout the grader accepts (a list, (2,), (1, 2)...), else None."""
    try:
        return as_pair(answer.value, "the answer") if answer.ok else None
    except Mismatch:
        return None


def diagnose(student) -> set[str]:
    prober = Prober(student)
    scores = _pair(prober.value("ex1_scores"))
    weights = _pair(prober.value("ex1_weights"))
    output = _pair(prober.value("ex1_output"))
    codes = set()
    for scale, code in SCALES.items():
        if not code:
            continue
        expected_weights = sdpa_ref.softmax(RAW * scale)  # (2,); the output equals the weights
        if (_near(scores, RAW * scale) or _near(weights, expected_weights)
                or _near(output, expected_weights)):
            codes.add(code)
    for pair in (weights, output):
        if pair is not None and np.isfinite(pair).all() and abs(pair.sum() - 1) > 2 * HAND:
            codes.add("not-normalized")
    return codes
