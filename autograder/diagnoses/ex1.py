"""Exercise 1: which mistake the hand-computed numbers show, on the student's own numbers.

Each catalogued slip is a model of what the three answers become for the student's variant
(`student.variant.ex1`): the scores scaled by the wrong factor (or not at all), or weights
never normalised. The student's pairs of numbers are compared, to three decimals, with each:
the scores and the weights first, the output only when they show nothing.
Answers that are right for other numbers than the student's own, those the notebook shows
(a mistyped student id, a classmate's notebook) or the lesson's (worked before the id was
typed), are `other-variant`, not a misconception.
"""

from __future__ import annotations

import math

import numpy as np

import sdpa_ref
from autograder.compare import HAND, Mismatch, as_pair
from autograder.diagnoses.probe import Prober
from autograder.variants.shown import read_shown
from autograder.variants.variant import DEFAULT

# Answers within this of what another variant's numbers give are that variant's: three
# decimals of hand rounding at each of three steps, well inside the slips' 0.047.
OTHER_VARIANT = 5 * HAND


def scale_slips(d_k: int) -> dict[float, str]:
    """The wrong factors a student might scale the raw scores by, and the code each shows:
    none at all, 1/d_k, sqrt(d_k) and d_k instead of 1/sqrt(d_k)."""
    return {1.0: "no-scaling", 1 / d_k: "wrong-scale", math.sqrt(d_k): "wrong-scale",
            float(d_k): "wrong-scale"}


def _near(pair, expected) -> bool:
    return pair is not None and bool(np.all(np.abs(pair - expected) <= HAND))


def _pair(answer):
    """Two numbers in any layout the grader accepts (a list, (2,), (1, 2)...), else None."""
    try:
        return as_pair(answer.value, "the answer") if answer.ok else None
    except Mismatch:
        return None


def slip_models(numbers) -> list[tuple[str, dict[str, np.ndarray]]]:
    """(code, the three answers that slip gives) for each catalogued slip on these numbers."""
    models = []
    for factor, code in scale_slips(numbers.d_k).items():
        scores = numbers.raw * factor  # (2,)
        weights = sdpa_ref.softmax(scores)  # (2,)
        models.append((code, {"ex1_scores": scores, "ex1_weights": weights,
                              "ex1_output": weights @ numbers.values}))
    with np.errstate(over="ignore"):
        unnormalised = np.exp(numbers.raw * numbers.scale)  # (2,) exp(s_i), never divided
    models.append(("not-normalized", {"ex1_weights": unnormalised,
                                      "ex1_output": unnormalised @ numbers.values}))
    return models


def answers_for_other_variant(student, answers) -> bool:
    """Every answer is right for other numbers than the variant graded: those the notebook
    shows, or the lesson's own (worked before the id was typed: the graded notebook shows
    the student's own numbers by then)."""
    own = student.variant.ex1
    others = {read_shown(student).ex1, DEFAULT.ex1} - {None, own}
    return any(all(pair is not None
                   and bool(np.all(np.abs(pair - expected[name]) <= OTHER_VARIANT))
                   for name, pair in answers.items())
               for expected in (numbers.expected() for numbers in others))


def diagnose(student) -> set[str]:
    prober = Prober(student)
    answers = {name: _pair(prober.value(name))
               for name in ("ex1_scores", "ex1_weights", "ex1_output")}
    if answers_for_other_variant(student, answers):
        return {"other-variant"}
    codes = set()
    models = slip_models(student.variant.ex1)
    # The earliest steps say most: the output alone (w1 v1 + w2 v2) can coincide between
    # slips (a zero value vector, saturated weights), so it is read only when the scores and
    # weights show no slip.
    for names in (("ex1_scores", "ex1_weights"), ("ex1_output",)):
        codes |= {code for code, model in models
                  if any(_near(answers[name], model[name]) for name in names if name in model)}
        if codes:
            break
    weights = answers["ex1_weights"]
    if weights is not None and np.isfinite(weights).all() and abs(weights.sum() - 1) > 2 * HAND:
        codes.add("not-normalized")
    return codes
