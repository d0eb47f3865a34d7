"""Exercise 2: a stable softmax, and the weights and gradients of scaled vs unscaled scores.

Two keys whose raw scores differ by 8, d_k = 64. The four numbers are accepted to three
significant figures, so the lesson's own rounded 0.9997 and 0.731 pass.
"""

import numpy as np
import pytest

import sdpa_ref
from autograder.compare import (
    Mismatch,
    as_array,
    as_number,
    expect_close,
    expect_shape,
    three_significant_figures,
)

pytestmark = pytest.mark.ex2

RAW = np.array([8.0, 0.0])  # (2,) raw scores: the larger key first
SCALED = RAW / np.sqrt(64)  # (2,) = (1, 0)

_SOFTMAX_HINT = "softmax(z) is exp(z - max(z)) / sum(exp(z - max(z))) along the last axis"


def _softmax_of(student, z, what):
    got = as_array(student.call("softmax", z), what)
    expect_shape(got, z.shape, what, hint="softmax returns an array of its input's shape")
    return got


def _expect_figures(student, name, reference, hint):
    got = as_number(student.value(name), name)
    tolerance = three_significant_figures(reference)
    if not abs(got - reference) <= tolerance:
        raise Mismatch(f"{name} is not right to three significant figures: {hint}")


@pytest.mark.points(1)
def test_softmax_of_a_vector_matches_reference(student):
    rng = np.random.default_rng(201)
    for size in (2, 5):
        z = rng.normal(size=size)  # (size,)
        expect_close(_softmax_of(student, z, "softmax(z) for a 1-D z"), sdpa_ref.softmax(z),
                     "softmax(z) for a 1-D z", hint=_SOFTMAX_HINT)


@pytest.mark.points(1)
def test_softmax_normalises_each_row_of_a_matrix(student):
    z = np.random.default_rng(202).normal(size=(3, 4))  # (3, 4)
    expect_close(_softmax_of(student, z, "softmax(z) for a 2-D z"), sdpa_ref.softmax(z, -1),
                 "softmax(z) for a 2-D z",
                 hint="each row is one distribution: normalise along the last axis (axis=-1)")


@pytest.mark.points(1)
def test_softmax_survives_large_scores(student):
    rng = np.random.default_rng(203)
    z = 800.0 + rng.normal(size=(2, 5))  # (2, 5): exp(800) overflows float64
    expect_close(_softmax_of(student, z, "softmax(z) for large z"), sdpa_ref.softmax(z, -1),
                 "softmax(z) for large z",
                 hint="exp overflows above about 709; subtract the row's maximum first")


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
                    "for a softmax weight p, d p / d (its own score) = p (1 - p)")


@pytest.mark.points(0.75)
def test_grad_scaled_is_the_smaller_keys_own_derivative(student):
    grad = sdpa_ref.softmax_jacobian(SCALED)[1, 1]
    _expect_figures(student, "grad_scaled", grad,
                    "the same derivative p (1 - p), with p from the scaled scores (1, 0)")
