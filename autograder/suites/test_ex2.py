"""Exercise 2: a stable softmax, and the weights and gradients of scaled vs unscaled scores.

Two keys whose raw scores differ by 8, d_k = 64. The four numbers are accepted to three
significant figures (rounded or truncated), so the lesson's own 0.9997 and 0.731 pass; each
may be a Python number, a numpy scalar, a 0-d or a one-element array.
"""

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import (
    LARGE_SCORES,
    Mismatch,
    as_array,
    as_number,
    expect_close,
    expect_finite,
    expect_shape,
    significant_figures,
)

pytestmark = pytest.mark.ex2

RAW = np.array([8.0, 0.0])  # (2,) raw scores: the larger key first
SCALED = RAW / np.sqrt(64)  # (2,) = (1, 0)

# The hidden inputs of the tests that compare with the reference, by test name
# (tests/test_tolerances.py measures every corpus submission's error on them).
_rng = np.random.default_rng(201)
VECTORS = (_rng.normal(size=2), _rng.normal(size=5))  # (2,), (5,)
MATRIX = np.random.default_rng(202).normal(size=(3, 4))  # (3, 4)
SHIFT = 800.0  # exp(800) overflows float64 (above about 709)
LARGE_BASE = np.random.default_rng(203).normal(size=(2, 5))  # (2, 5)
REFERENCE_INPUTS = {
    "softmax_of_a_vector_matches_reference": VECTORS,
    "softmax_normalises_each_row_of_a_matrix": (MATRIX,),
}

_SOFTMAX_HINT = "softmax(z) is exp(z - max(z)) / sum(exp(z - max(z))) along the last axis"


def _softmax_of(student, z, what):
    got = as_array(student.call("softmax", z), what)
    expect_shape(got, z.shape, what, hint="softmax returns an array of its input's shape")
    return got


def _expect_figures(student, name, reference, hint):
    got = as_number(student.value(name), name)
    if not abs(got - reference) <= significant_figures(reference):
        raise Mismatch(f"{name} is not right to three significant figures", hint)


@pytest.mark.points(1)
def test_softmax_of_a_vector_matches_reference(student):
    for z in VECTORS:  # (size,)
        expect_close(_softmax_of(student, z, "softmax(z) for a 1-D z"), sdpa_ref.softmax(z),
                     "softmax(z) for a 1-D z", hint=_SOFTMAX_HINT)


@pytest.mark.points(1)
def test_softmax_normalises_each_row_of_a_matrix(student):
    expect_close(_softmax_of(student, MATRIX, "softmax(z) for a 2-D z"),
                 sdpa_ref.softmax(MATRIX, -1), "softmax(z) for a 2-D z",
                 hint="each row is one distribution: normalise along the last axis (axis=-1)")


@pytest.mark.points(1)
def test_softmax_survives_large_scores(student):
    """Stability alone: softmax(z + 800) must equal the student's own softmax(z), since
    softmax does not change when every score moves by the same amount; a softmax that is
    wrong in another way loses its points in the tests above, not here."""
    hint = "exp overflows above about 709; subtract the row's maximum first"
    moderate = _softmax_of(student, LARGE_BASE, "softmax(z)")
    expect_finite(moderate, "softmax(z)")
    if not np.any(np.asarray(moderate, dtype=float) > 0):
        raise Mismatch("softmax(z) is all zeros", _SOFTMAX_HINT)
    large = _softmax_of(student, LARGE_BASE + SHIFT, "softmax(z) for large z")
    expect_finite(large, "softmax(z) for large z", hint=hint)
    expect_close(large, moderate, "softmax(z) for large z", tolerance=LARGE_SCORES,
                 hint="adding the same number to every score must not change the softmax; "
                      + hint)


@pytest.mark.points(0.75)
def test_p_unscaled_is_the_weight_on_the_larger_key(student):
    p = sdpa_ref.softmax(RAW)[0]
    _expect_figures(student, "p_unscaled", p,
                    "it is the softmax weight of the larger key for the raw scores (8, 0)")


@pytest.mark.points(0.75)
def test_p_scaled_is_the_weight_on_the_larger_key(student):
    p = sdpa_ref.softmax(SCALED)[0]
    _expect_figures(student, "p_scaled", p,
                    "divide both raw scores by sqrt(d_k) = 8 before the softmax")


@pytest.mark.points(0.75)
def test_grad_unscaled_is_the_smaller_keys_own_derivative(student):
    grad = sdpa_ref.softmax_jacobian(RAW)[1, 1]
    _expect_figures(student, "grad_unscaled", grad,
                    "differentiate the smaller key's weight with respect to its own score, "
                    "and compute it from the unrounded weight")


@pytest.mark.points(0.75)
def test_grad_scaled_is_the_smaller_keys_own_derivative(student):
    grad = sdpa_ref.softmax_jacobian(SCALED)[1, 1]
    _expect_figures(student, "grad_scaled", grad,
                    "the same derivative with the scaled scores (1, 0), taken with respect "
                    "to the scaled score")

