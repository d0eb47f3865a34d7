"""Exercise 2: which mistake the softmax and the four numbers show.

The numbers are compared, to three significant figures, with what each mistake gives for the
student's own gap and d_k (`student.variant.ex2`). A gradient that is exactly p (1 - p) for
the student's own (wrong) weight is no gradient mistake: the weight's own code (wrong-scale,
no-scaling, wrong-key) explains it. Multiplying by sqrt(d_k) instead of dividing saturates
the softmax as much as no scaling does (both weights are 1.00 to three figures for every gap
of the family), so it reads as no-scaling. Weights that are the student's own wrong softmax
of the right scores (the notebook computes them with it) show the softmax's mistake, named by
its own codes, not a scaling one.
"""

from __future__ import annotations

import numpy as np

import sdpa_ref
from autograder.compare import (
    FLOAT_RESULTS,
    Mismatch,
    as_number,
    fewer_figures,
    numbers,
    significant_figures,
)
from autograder.diagnoses.probe import Prober
from autograder.variants.shown import read_shown
from autograder.variants.variant import DEFAULT

# A derivative within this fraction of the right one, with the right sign, is an imprecise
# estimate (a finite difference with a large step, p rounded before p (1 - p)), not a wrong
# formula: those are off by a factor (1/8 for the raw score) or have the wrong sign.
IMPRECISE = 0.2


def _number(answer):
    try:
        return as_number(answer.value, "the answer") if answer.ok else None
    except Mismatch:
        return None


def _same(value, reference) -> bool:
    return (value is not None and reference is not None
            and abs(value - reference) <= significant_figures(reference))


def _weight(scores) -> float:
    """The larger key's softmax weight for two scores."""
    return float(sdpa_ref.softmax(np.asarray(scores, dtype=float))[0])


def diagnose(student) -> set[str]:
    prober = Prober(student)
    codes = _diagnose_softmax(prober) if student.has("softmax") else set()
    p_unscaled, p_scaled, grad_unscaled, grad_scaled = (
        _number(prober.value(name))
        for name in ("p_unscaled", "p_scaled", "grad_unscaled", "grad_scaled"))
    numbers = student.variant.ex2
    answers = {"p_unscaled": p_unscaled, "p_scaled": p_scaled, "grad_unscaled": grad_unscaled,
               "grad_scaled": grad_scaled}
    if _for_other_variant(student, answers):
        return codes | {"other-variant"}  # the softmax's own codes stand
    weight_codes = _weight_codes(numbers, p_unscaled, p_scaled, grad_scaled)
    if _from_own_wrong_softmax(prober, student, numbers, p_unscaled, p_scaled):
        weight_codes &= {"not-normalized"}  # the softmax's mistake, not a scaling one
    codes |= weight_codes
    codes |= _gradient_codes(numbers, grad_unscaled, grad_scaled, p_unscaled, p_scaled)
    return codes


def _for_other_variant(student, answers) -> bool:
    """Every number is right (to three significant figures, give or take one unit) for other
    numbers than the variant graded: those the notebook shows, or the lesson's own."""
    others = {read_shown(student).ex2, DEFAULT.ex2} - {None, student.variant.ex2}
    return any(all(value is not None
                   and abs(value - expected[name]) <= 2 * significant_figures(expected[name])
                   for name, value in answers.items())
               for expected in (numbers.expected() for numbers in others))


def _own_weight(prober, scores) -> float | None:
    """The larger key's weight as the student's own softmax gives it, or None."""
    got = _array(prober.call("softmax", np.asarray(scores, dtype=float)))
    if got is None or got.shape != (2,) or not np.isfinite(got[0]):
        return None
    return float(got[0])


def _from_own_wrong_softmax(prober, student, numbers, p_unscaled, p_scaled) -> bool:
    """A weight is what the student's own softmax gives for the right scores, and that
    softmax is wrong there: the weights carry the softmax's mistake (which its own codes
    name), so they are no evidence of a scaling or key mistake (ones give 1.00 everywhere,
    which reads like unscaled scores; z over its sum gives 0, like a factor of sqrt(d_k))."""
    if not student.has("softmax"):
        return False
    for p, scores in ((p_unscaled, numbers.raw), (p_scaled, numbers.scaled)):
        own = _own_weight(prober, scores)
        if p is not None and own is not None and _same(p, own) and not _same(
                own, _weight(scores)):
            return True
    return False


def _weight_codes(numbers, p_unscaled, p_scaled, grad_scaled) -> set[str]:
    codes = set()
    big, big_scaled = _weight(numbers.raw), _weight(numbers.scaled)
    # Other factors a student might scale the raw scores by: 1 / d_k, sqrt(d_k).
    wrong_scales = (1 / numbers.d_k, np.sqrt(numbers.d_k))
    if _same(p_unscaled, 1 - big) or any(_same(p_scaled, 1 - p) for p in (big, big_scaled)):
        codes.add("wrong-key")
    if _same(p_scaled, big) or _same(p_scaled, 1 - big):
        codes.add("no-scaling")  # (sqrt(d_k) as a factor also gives about 1: read as this)
    elif any(_same(p_scaled, p) or _same(p_scaled, 1 - p)
             for p in (_weight(numbers.raw * factor) for factor in wrong_scales)):
        codes.add("wrong-scale")
    elif (p_scaled is not None and 0.5 < p_scaled < 1 and not _same(p_scaled, big_scaled)
          and _same(grad_scaled, _own_derivative(p_scaled))):
        codes.add("wrong-scale")  # some other factor, and the rest right for that weight
    if any(p is not None and not 0 <= p <= 1 for p in (p_unscaled, p_scaled)):
        codes.add("not-normalized")
    return codes


def _own_derivative(p_larger) -> float | None:
    """The smaller key's p (1 - p) from the student's own weight on the larger key."""
    if p_larger is None or not 0 <= p_larger <= 1:
        return None
    return (1 - p_larger) * p_larger


def _gradient_codes(numbers, grad_unscaled, grad_scaled, p_unscaled, p_scaled) -> set[str]:
    expected = numbers.expected()
    right = {"unscaled": expected["grad_unscaled"], "scaled": expected["grad_scaled"]}
    codes = set()
    for kind, value, own_p in (("unscaled", grad_unscaled, p_unscaled),
                               ("scaled", grad_scaled, p_scaled)):
        if value is None or _same(value, right[kind]):
            continue
        own = _own_derivative(own_p)
        if own is not None and _same(value, own):
            continue  # right for the student's own weight: the weight's code says why
        if kind == "scaled" and _same(value, right["unscaled"]):
            codes.add("no-scaling")
        elif kind == "scaled" and _same(value, right["scaled"] / np.sqrt(numbers.d_k)):
            codes.add("raw-score-gradient")  # chain rule through s / sqrt(d_k): the raw score's
        elif fewer_figures(value, right[kind]):
            continue  # right, given to two figures: the test says to give three
        elif value * right[kind] > 0 and abs(value - right[kind]) <= IMPRECISE * right[kind]:
            codes.add("imprecise-gradient")
        else:
            codes.add("wrong-gradient")
    return codes


def _diagnose_softmax(prober) -> set[str]:
    codes = set()
    rng = np.random.default_rng(902)
    vector, matrix = rng.normal(size=4), rng.normal(size=(3, 4))  # (4,), (3, 4)
    got_vector = _array(prober.call("softmax", vector))
    got_matrix = _array(prober.call("softmax", matrix))
    for got, z in ((got_vector, vector), (got_matrix, matrix)):
        if got is None or got.shape != z.shape or not np.all(np.isfinite(got)):
            continue
        if z.ndim == 2 and FLOAT_RESULTS.ratio(got, sdpa_ref.softmax(z, axis=0)) <= 1:
            codes.add("softmax-axis")
        elif FLOAT_RESULTS.ratio(got.sum(axis=-1), np.ones(z.shape[:-1])) > 1:
            codes.add("not-normalized")
    moderate_ok = got_vector is not None and bool(np.all(np.isfinite(got_vector)))
    # every score + 800; then one score 2000 above the others, where subtracting the
    # minimum, the mean or the first score overflows too (only the maximum is exact)
    wide = vector.copy()  # (4,)
    wide[1] += 2000.0
    for z in (800.0 + vector, wide):
        large = _array(prober.call("softmax", z))
        if moderate_ok and (large is None or not np.all(np.isfinite(large))):
            codes.add("unstable-softmax")
    return codes


def _array(answer):
    return numbers(answer.value) if answer.ok else None
