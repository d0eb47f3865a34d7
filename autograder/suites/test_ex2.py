"""Exercise 2: a stable softmax, and the weights and gradients of scaled vs unscaled scores.

Two keys whose raw scores differ by the student's gap, with the student's d_k
(`student.variant.ex2`; the lesson's 8 and 64 by default). The four numbers are accepted to
three significant figures (rounded or truncated), so the lesson's own 0.9997 and 0.731 pass;
each may be a Python number, a numpy scalar, a 0-d or a one-element array. The softmax's hidden
inputs are the student's own too (drawn from the course's secret inputs key).
"""

from functools import lru_cache

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
    fewer_figures,
    significant_figures,
)
from autograder.sandbox import StudentRaised
from autograder.variants import root_text

pytestmark = pytest.mark.ex2

SHIFT = 800.0  # exp(800) overflows float64 (above about 709)
# How far one score of each row of `wide_scores` stands above the row's others: subtracting
# anything but the row's maximum (its minimum, its mean, its first score) leaves an exponent
# above 709 even for two scores (2000 / 2), while subtracting the maximum is exact.
SPREAD = 2000.0


@lru_cache(maxsize=64)
def hidden_inputs(variant) -> dict[str, tuple]:
    """The softmax's hidden inputs: two vectors, a non-square matrix, a base for large scores.

    The default variant's are fixed (seeds 201 to 203); any other variant's are drawn from its
    own random numbers, with sizes of their own.
    """
    if variant.inputs_seed is None:
        rng = np.random.default_rng(201)
        vectors = (rng.normal(size=2), rng.normal(size=5))  # (2,), (5,)
        matrix = np.random.default_rng(202).normal(size=(3, 4))  # (3, 4)
        base = np.random.default_rng(203).normal(size=(2, 5))  # (2, 5)
    else:
        rng = variant.rng("ex2")
        rows, columns = rng.choice(np.arange(2, 7), size=2, replace=False)  # rows != columns
        vectors = (rng.normal(size=int(rng.integers(2, 4))),  # (2 or 3,)
                   rng.normal(size=int(rng.integers(4, 8))))  # (4 to 7,)
        matrix = rng.normal(size=(int(rows), int(columns)))  # (rows, columns)
        base = rng.normal(size=(int(rng.integers(2, 4)), int(rng.integers(4, 7))))
    return {"vectors": vectors, "matrix": matrix, "large_base": base}


@lru_cache(maxsize=64)
def wide_scores(variant) -> np.ndarray:
    """(rows, columns): the large-scores base with one score of each row raised by SPREAD,
    never the first column's (so that subtracting the first score overflows too). Every row
    has its raised score, so a softmax shifting by the matrix's maximum stays exact. The
    columns are drawn after the other inputs (the default variant's from seed 204), which
    stay as they were."""
    base = hidden_inputs(variant)["large_base"]  # (rows, columns)
    rng = (np.random.default_rng(204) if variant.inputs_seed is None
           else variant.rng("ex2 wide"))
    raised = rng.integers(1, base.shape[1], size=base.shape[0])  # (rows,), never column 0
    wide = base.copy()  # (rows, columns)
    wide[np.arange(base.shape[0]), raised] += SPREAD
    return wide


def reference_inputs(variant) -> dict[str, tuple]:
    """The hidden inputs of the tests that compare with the reference, by test name
    (tests/test_tolerances.py measures every corpus submission's error on them)."""
    inputs = hidden_inputs(variant)
    return {"softmax_of_a_vector_matches_reference": inputs["vectors"],
            "softmax_normalises_each_row_of_a_matrix": (inputs["matrix"],)}


_SOFTMAX_HINT = "softmax(z) is exp(z - max(z)) / sum(exp(z - max(z))) along the last axis"


def _softmax_of(student, z, what):
    got = as_array(student.call("softmax", z), what)
    expect_shape(got, z.shape, what, hint="softmax returns an array of its input's shape")
    return got


def _expect_figures(student, name, reference, hint):
    got = as_number(student.value(name), name)
    if not abs(got - reference) <= significant_figures(reference):
        if fewer_figures(got, reference):
            hint = ("right to two significant figures only: give three (rounded or cut), as "
                    "the exercise asks")
        raise Mismatch(f"{name} is not right to three significant figures", hint)


@pytest.mark.points(1)
def test_softmax_of_a_vector_matches_reference(student):
    for z in hidden_inputs(student.variant)["vectors"]:  # (size,)
        expect_close(_softmax_of(student, z, "softmax(z) for a 1-D z"), sdpa_ref.softmax(z),
                     "softmax(z) for a 1-D z", hint=_SOFTMAX_HINT)


@pytest.mark.points(1)
def test_softmax_normalises_each_row_of_a_matrix(student):
    matrix = hidden_inputs(student.variant)["matrix"]  # (rows, columns)
    expect_close(_softmax_of(student, matrix, "softmax(z) for a 2-D z"),
                 sdpa_ref.softmax(matrix, -1), "softmax(z) for a 2-D z",
                 hint="each row is one distribution: normalise along the last axis (axis=-1)")


def _normalised_like_softmax(got, z) -> bool:
    """`got` is softmax(z) once its slices are divided by their sums, along the rows or down
    the columns: the exponentials are right, however they are normalised (normalising is
    what the two tests above grade). Ones, or scores never exponentiated, are not."""
    got = np.asarray(got, dtype=float)
    for axis in range(-1, -z.ndim - 1, -1):  # the last axis, then the others
        with np.errstate(all="ignore"):
            normalised = got / got.sum(axis=axis, keepdims=True)  # z.shape
        if (np.all(np.isfinite(normalised))
                and LARGE_SCORES.ratio(normalised, sdpa_ref.softmax(z, axis)) <= 1):
            return True
    return False


def _handles_a_vector(student, z) -> bool:
    """softmax(z) of a moderate 1-D z runs, keeps z's shape and is softmax(z) up to how it is
    normalised. A softmax that cannot take 1-D input at all (axis=1, a reshape to a column)
    loses the vector test for it, not stability too: then only its 2-D calls are judged."""
    try:
        got = _softmax_of(student, z, "softmax(z) for a 1-D z")
    except (Mismatch, StudentRaised):
        return False
    return _normalised_like_softmax(got, z)


@pytest.mark.points(1)
def test_softmax_survives_large_scores(student):
    """Stability: softmax(z + 800) must equal the student's own softmax(z), since softmax does
    not change when every score moves by the same amount, and be softmax(z) itself (the
    reference, which subtracts the maximum) up to how it is normalised: a softmax that is
    wrong in its normalisation loses its points in the tests above, not here, while one that
    never exponentiates (ones, z over its sum) has nothing that could overflow. Then scores
    SPREAD apart within each row (`wide_scores`), where subtracting anything but the row's
    maximum (its minimum, mean or first score) overflows, must give softmax(z) too, again up
    to how it is normalised: as a matrix, and as one row when the softmax takes 1-D input
    at all (`_handles_a_vector`). A softmax that takes 1-D input and no matrix at all is
    judged on the rows, one at a time."""
    hint = "exp overflows above about 709; subtract the row's maximum first"
    base = hidden_inputs(student.variant)["large_base"]  # (rows, columns)
    wide = wide_scores(student.variant)  # (rows, columns)
    if _raises_on_a_matrix(student, base) and _handles_a_vector(student, base[0]):
        # No 2-D input at all (e / e.sum(axis=-1) without keepdims): the matrix test charges
        # that; stability is judged on the rows, one 1-D call each.
        for row, wide_row in zip(base, wide, strict=True):
            _expect_stable(student, row, [(wide_row, "softmax(z) for a 1-D z")], hint)
        return
    spread = [(wide, "softmax(z)")]
    if _handles_a_vector(student, base[0]):
        spread.append((wide[0], "softmax(z) for a 1-D z"))
    _expect_stable(student, base, spread, hint)


def _raises_on_a_matrix(student, z) -> bool:
    try:
        student.call("softmax", z)
    except StudentRaised:
        return True
    return False


def _expect_stable(student, base, spread, hint):
    """softmax(base + SHIFT) is the student's own softmax(base), and softmax of each z in
    `spread` (scores SPREAD apart) is softmax(z), both up to how they are normalised."""
    moderate = _softmax_of(student, base, "softmax(z)")
    expect_finite(moderate, "softmax(z)")
    if not np.any(np.asarray(moderate, dtype=float) > 0):
        raise Mismatch("softmax(z) has no positive weight", _SOFTMAX_HINT)
    large = _softmax_of(student, base + SHIFT, "softmax(z) for large z")
    expect_finite(large, "softmax(z) for large z", hint=hint)
    expect_close(large, moderate, "softmax(z) for large z", tolerance=LARGE_SCORES,
                 hint="adding the same number to every score must not change the softmax; "
                      + hint)
    if not _normalised_like_softmax(large, base):
        raise Mismatch("softmax(z) for large z is not proportional to exp(z) along either "
                       "axis", _SOFTMAX_HINT)
    for z, what in spread:
        what += f" for scores {SPREAD:.0f} apart within a row"
        got = _softmax_of(student, z, what)
        expect_finite(got, what, hint=hint)
        if not _normalised_like_softmax(got, z):
            raise Mismatch(f"{what} is not softmax(z)", hint)


@pytest.mark.points(0.75)
def test_p_unscaled_is_the_weight_on_the_larger_key(student):
    numbers = student.variant.ex2
    _expect_figures(student, "p_unscaled", numbers.expected()["p_unscaled"],
                    f"it is the softmax weight of the larger key for the raw scores "
                    f"({numbers.gap}, 0)")


@pytest.mark.points(0.75)
def test_p_scaled_is_the_weight_on_the_larger_key(student):
    numbers = student.variant.ex2
    _expect_figures(student, "p_scaled", numbers.expected()["p_scaled"],
                    f"divide both raw scores by sqrt(d_k) = {root_text(numbers.d_k)} before "
                    "the softmax")


@pytest.mark.points(0.75)
def test_grad_unscaled_is_the_smaller_keys_own_derivative(student):
    _expect_figures(student, "grad_unscaled", student.variant.ex2.expected()["grad_unscaled"],
                    "differentiate the smaller key's weight with respect to its own score, "
                    "and compute it from the unrounded weight")


@pytest.mark.points(0.75)
def test_grad_scaled_is_the_smaller_keys_own_derivative(student):
    numbers = student.variant.ex2
    _expect_figures(student, "grad_scaled", numbers.expected()["grad_scaled"],
                    f"the same derivative with the scaled scores ({numbers.gap}, 0) / "
                    f"{root_text(numbers.d_k)}, taken with respect to the scaled score")
