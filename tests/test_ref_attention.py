"""sdpa_ref.attention against the plain-loop specification in ref_spec.py."""

import numpy as np
import pytest
from hypothesis import given
from ref_spec import attention_spec, problems, ref_settings

from sdpa_ref import attention, causal_mask

pytestmark = pytest.mark.filterwarnings("error")


@ref_settings
@given(problems(dtypes=(np.float64,), magnitudes=(1.0, 1e3)))
def test_attention_matches_the_specification_in_float64(p):
    out, attn = attention(p["Q"], p["K"], p["V"], p["mask"], scale=p["scale"])
    want_out, want_attn = attention_spec(**p)
    assert out.shape == want_out.shape and attn.shape == want_attn.shape
    np.testing.assert_allclose(attn, want_attn, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(out, want_out, rtol=1e-9, atol=1e-10)


@ref_settings
@given(problems(dtypes=(np.float32,)))
def test_attention_matches_the_specification_in_float32(p):
    out, attn = attention(p["Q"], p["K"], p["V"], p["mask"], scale=p["scale"])
    want_out, want_attn = attention_spec(**p)
    assert out.dtype == attn.dtype == np.float32
    np.testing.assert_allclose(attn, want_attn, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-5)


@ref_settings
@given(problems(dtypes=(np.float32,), magnitudes=(1e3,)))
def test_float32_survives_scores_in_the_thousands(p):
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out, attn = attention(p["Q"], p["K"], p["V"], p["mask"], scale=p["scale"])
    want_out, want_attn = attention_spec(**p)
    # float32 scores of size |s| carry a rounding error of about eps * |s|, and so do the weights.
    scores = np.abs(p["Q"]).sum(axis=-1).max() * np.abs(p["K"]).max() * (p["scale"] or 1.0)
    tolerance = 8 * np.finfo(np.float32).eps * max(scores, 1.0)
    assert np.isfinite(out).all() and np.isfinite(attn).all()
    np.testing.assert_allclose(attn, want_attn, atol=tolerance)


def test_masked_keys_get_zero_weight_and_rows_sum_to_one():
    rng = np.random.default_rng(1)
    Q, K, V = rng.normal(size=(6, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 3))
    mask = causal_mask(6)
    out, attn = attention(Q, K, V, mask)
    assert (attn[mask] == 0).all()
    np.testing.assert_allclose(attn.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(out[0], V[0], rtol=1e-12)  # query 0 sees only key 0


def test_a_fully_masked_row_gives_zero_weights_and_zero_output_without_warnings():
    rng = np.random.default_rng(2)
    Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = np.zeros((3, 5), dtype=bool)
    mask[1] = True
    with np.errstate(all="raise"):
        out, attn = attention(Q, K, V, mask)
    np.testing.assert_array_equal(attn[1], 0.0)
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_allclose(out[[0, 2]], attention(Q[[0, 2]], K, V)[0], rtol=1e-12)


def test_no_keys_at_all_gives_zero_output():
    out, attn = attention(np.ones((2, 3)), np.ones((0, 3)), np.ones((0, 4)))
    assert attn.shape == (2, 0)
    np.testing.assert_array_equal(out, np.zeros((2, 4)))


def test_shapes_follow_n_m_d_k_d_v_and_the_batch_dims():
    rng = np.random.default_rng(3)
    Q = rng.normal(size=(2, 1, 5, 4))  # (B, 1, n, d_k)
    K = rng.normal(size=(3, 7, 4))  # (H, m, d_k)
    V = rng.normal(size=(7, 6))  # (m, d_v)
    out, attn = attention(Q, K, V, causal_mask(5, 7))
    assert out.shape == (2, 3, 5, 6)
    assert attn.shape == (2, 3, 5, 7)


def test_default_scale_is_one_over_sqrt_d_k():
    rng = np.random.default_rng(4)
    Q, K, V = rng.normal(size=(3, 16)), rng.normal(size=(4, 16)), rng.normal(size=(4, 2))
    np.testing.assert_allclose(attention(Q, K, V)[1], attention(Q, K, V, scale=0.25)[1])
    np.testing.assert_allclose(attention(Q, K, V)[1], attention(Q / 4, K, V, scale=1.0)[1])


def test_exercise_1_by_hand():
    q, K, V = np.array([[1.0, 0.0]]), np.eye(2), np.eye(2)
    out, attn = attention(q, K, V)
    np.testing.assert_allclose(attn, [[0.6698, 0.3302]], atol=1e-4)
    np.testing.assert_allclose(out, [[0.6698, 0.3302]], atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_keeps_the_dtype(dtype):
    x = np.ones((2, 3, 4), dtype)
    out, attn = attention(x, x, x, causal_mask(3), scale=np.float64(0.5))
    assert out.dtype == attn.dtype == dtype


def test_attention_never_modifies_its_inputs_and_accepts_read_only_arrays():
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    mask = rng.random((4, 6)) < 0.5
    before = [x.copy() for x in (Q, K, V, mask)]
    for x in (Q, K, V, mask):
        x.flags.writeable = False
    attention(Q, K, V, mask)
    attention(Q, K, V, mask, scale=2.0)
    for x, original in zip((Q, K, V, mask), before, strict=True):
        np.testing.assert_array_equal(x, original)


def test_plain_lists_are_accepted():
    out, attn = attention([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]])
    assert out.shape == (1, 1) and attn.shape == (1, 2)


def test_the_mask_is_given_by_name_as_the_lesson_does_and_the_scale_only_by_name():
    # The notebook calls attention(Q, K, V, mask=causal_mask(T)); a fifth positional
    # argument is refused rather than silently taken for the scale.
    rng = np.random.default_rng(6)
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    by_name = attention(Q, K, V, mask=causal_mask(4), scale=0.5)
    by_position = attention(Q, K, V, causal_mask(4), scale=0.5)
    for got, want in zip(by_name, by_position, strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError):
        attention(Q, K, V, None, 0.5)
