"""sdpa_ref.softmax and softmax_jacobian against the plain-loop specification."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ref_spec import ref_settings, softmax_spec

from sdpa_ref import softmax, softmax_jacobian

# A RuntimeWarning on stderr costs a student their marks under nbgrader: none allowed here.
pytestmark = pytest.mark.filterwarnings("error")

scores = st.floats(-1e4, 1e4) | st.just(-math.inf)


@ref_settings
@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=6), elements=scores))
def test_softmax_matches_the_specification_on_every_row(x):
    got = softmax(x)
    for index in np.ndindex(x.shape[:-1]):
        np.testing.assert_allclose(got[index], softmax_spec(list(x[index])), rtol=1e-9, atol=1e-10)


@ref_settings
@given(hnp.arrays(np.float64, (3, 4, 5), elements=st.floats(-50, 50)), st.integers(-3, 2))
def test_softmax_normalises_along_the_axis_it_is_given(x, axis):
    got = softmax(x, axis=axis)
    np.testing.assert_allclose(got.sum(axis=axis), 1.0, rtol=1e-12)
    np.testing.assert_allclose(got, np.moveaxis(softmax(np.moveaxis(x, axis, -1)), -1, axis))


def test_large_scores_do_not_overflow():
    with np.errstate(all="raise", under="ignore"):
        np.testing.assert_array_equal(softmax(np.array([1000.0, 0.0])), [1.0, 0.0])
        np.testing.assert_allclose(softmax(np.array([800.0, 799.0])), [0.7310585786, 0.2689414214])
        assert np.isclose(softmax(np.array([-1e6, -1e6 - 1.0]))[0], 0.7310585786)


def test_an_axis_of_minus_infinity_gives_zeros_not_nan():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 0.0]])
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(softmax(x), [[0.0, 0.0, 0.0], [0.5, 0.0, 0.5]])


def test_a_nan_or_plus_infinity_makes_its_axis_nan_not_zeros():
    x = np.array([[1.0, np.nan, 0.0], [np.inf, 0.0, 0.0], [1.0, 0.0, -np.inf]])
    with np.errstate(invalid="ignore"):
        weights = softmax(x)  # (3, 3)
        columns = softmax(x, axis=0)  # (3, 3)
    assert np.isnan(weights[:2]).all()
    np.testing.assert_allclose(weights[2], [0.7310585786300049, 0.2689414213699951, 0.0])
    assert np.isnan(columns[:, :2]).all()
    assert not np.isnan(columns[:, 2]).any()


def test_an_empty_axis_gives_an_empty_result():
    assert softmax(np.zeros((3, 0))).shape == (3, 0)


def test_integer_scores_give_float64_weights():
    np.testing.assert_allclose(softmax(np.array([1, 0])), [0.7310585786300049, 0.2689414213699951])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_keeps_the_float_dtype(dtype):
    x = np.array([[1.0, 2.0, 3.0]], dtype)
    assert softmax(x).dtype == dtype
    assert softmax_jacobian(x).dtype == dtype


def test_softmax_leaves_its_input_alone_and_accepts_read_only_arrays():
    x = np.array([3.0, 1.0, -np.inf])
    x.flags.writeable = False
    softmax(x)
    softmax_jacobian(x)
    np.testing.assert_array_equal(x, [3.0, 1.0, -np.inf])


def finite_difference_jacobian(x, axis, h=1e-6):
    """J[..., i, j] by central differences, one input coordinate j at a time."""
    x = np.moveaxis(x, axis, -1)  # (..., k)
    columns = []
    for j in range(x.shape[-1]):
        step = np.zeros(x.shape[-1])
        step[j] = h
        columns.append((softmax(x + step) - softmax(x - step)) / (2 * h))  # (..., k) = dp/dx_j
    return np.stack(columns, axis=-1)  # (..., k, k)


@ref_settings
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                  elements=st.floats(-5, 5)), st.data())
def test_jacobian_matches_finite_differences(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    got = softmax_jacobian(x, axis=axis)
    assert got.shape == np.moveaxis(x, axis, -1).shape + (x.shape[axis],)
    # Central differences with h = 1e-6 are good to about 1e-9 here.
    np.testing.assert_allclose(got, finite_difference_jacobian(x, axis), atol=1e-8)


def test_jacobian_rows_sum_to_zero_and_it_is_symmetric():
    J = softmax_jacobian(np.array([0.3, -1.2, 2.0, 0.0]))
    np.testing.assert_allclose(J.sum(axis=-1), 0.0, atol=1e-15)
    np.testing.assert_allclose(J, J.T)


def test_jacobian_and_softmax_work_along_the_last_axis_by_default():
    x = np.array([[0.3, -1.2, 2.0], [1.0, 1.0, -4.0]])  # (2, 3): two rows of scores
    np.testing.assert_allclose(softmax(x), np.stack([softmax(row) for row in x]))
    J = softmax_jacobian(x)  # (2, 3, 3): one Jacobian per row
    assert J.shape == (2, 3, 3)
    for row, jacobian in zip(x, J, strict=True):
        np.testing.assert_allclose(jacobian, softmax_jacobian(row))


@pytest.mark.parametrize(
    "raw_scores, weight_on_larger, gradient_of_smaller",
    [((8.0, 0.0), 0.99966, 3.352e-4), ((1.0, 0.0), 0.73106, 0.19661)],
)
def test_exercise_2_numbers(raw_scores, weight_on_larger, gradient_of_smaller):
    p = softmax(np.array(raw_scores))
    J = softmax_jacobian(np.array(raw_scores))
    assert p[0] == pytest.approx(weight_on_larger, abs=1e-5)
    assert J[1, 1] == pytest.approx(gradient_of_smaller, rel=1e-3)  # d p_small / d s_small
    assert J[1, 1] == pytest.approx(p[1] * (1 - p[1]))
