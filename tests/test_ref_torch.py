"""sdpa_ref against PyTorch's scaled_dot_product_attention in float64 (an independent key).

Skipped when torch is not installed (it is only in the `torch` extra). Mind the mask:
PyTorch's boolean attn_mask means True = attend, the lesson's means True = masked out.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ref_spec import problems, ref_settings

from sdpa_ref import (
    attention,
    causal_mask,
    flash_attention,
    from_torch_mask,
    softmax,
    to_torch_mask,
)

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("error")]


def torch_sdpa(Q, K, V, lesson_mask=None, scale=None, is_causal=False):
    """PyTorch's answer for numpy inputs in the lesson's convention, as a numpy array."""
    mask_batch = () if lesson_mask is None else lesson_mask.shape[:-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], mask_batch)
    q, k, v = (torch.from_numpy(np.broadcast_to(x, batch + x.shape[-2:]).copy()) for x in (Q, K, V))
    attn_mask = None if lesson_mask is None else torch.from_numpy(to_torch_mask(lesson_mask))
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=attn_mask, scale=scale, is_causal=is_causal
    ).numpy()


@ref_settings
@given(problems(magnitudes=(1.0, 1e3)))
def test_attention_agrees_with_torch_in_float64(p):
    out, _ = attention(p["Q"], p["K"], p["V"], p["mask"], scale=p["scale"])
    want = torch_sdpa(p["Q"], p["K"], p["V"], p["mask"], p["scale"])
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-9, atol=1e-10)


@ref_settings
@given(problems(masked=False, max_side=12), st.integers(1, 5), st.integers(1, 5))
def test_causal_flash_agrees_with_torch_is_causal_even_when_n_differs_from_m(p, bq, bk):
    got = flash_attention(p["Q"], p["K"], p["V"], causal=True, scale=p["scale"],
                          block_q=bq, block_k=bk)
    want = torch_sdpa(p["Q"], p["K"], p["V"], scale=p["scale"], is_causal=True)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def test_fully_masked_rows_give_zeros_in_torch_as_in_attention():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 6, 3)), rng.normal(size=(2, 6, 5))
    mask = rng.random((2, 4, 6)) < 0.4
    mask[0, 2] = True
    mask[1, 0] = True
    want = torch_sdpa(Q, K, V, mask)
    np.testing.assert_array_equal(want[0, 2], 0.0)  # PyTorch's own policy, checked here
    np.testing.assert_allclose(attention(Q, K, V, mask)[0], want, rtol=1e-9, atol=1e-10)


def test_a_nan_or_plus_infinity_score_gives_nan_in_torch_as_in_softmax():
    x = np.array([[1.0, np.nan, 0.0], [np.inf, 0.0, 0.0], [1.0, 0.0, -np.inf]])  # (3, 3)
    want = torch.softmax(torch.from_numpy(x), dim=-1).numpy()  # (3, 3)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(softmax(x), want, rtol=1e-12, atol=0)  # NaN where torch's


def test_causal_mask_is_torchs_tril_of_ones_inverted():
    for n, m in [(5, 5), (3, 7), (7, 3)]:
        attend = torch.ones(n, m, dtype=torch.bool).tril()
        np.testing.assert_array_equal(causal_mask(n, m), from_torch_mask(attend))


def test_the_trap_passing_the_lesson_mask_unconverted_inverts_it():
    rng = np.random.default_rng(1)
    Q, K, V = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = causal_mask(5)
    wrong = F.scaled_dot_product_attention(
        *(torch.from_numpy(x) for x in (Q, K, V)), attn_mask=torch.from_numpy(mask)
    ).numpy()
    np.testing.assert_allclose(wrong, attention(Q, K, V, ~mask)[0], rtol=1e-9, atol=1e-10)
    assert not np.allclose(wrong, attention(Q, K, V, mask)[0])
    np.testing.assert_array_equal(wrong[-1], 0.0)  # the last query has no future: fully masked


def test_from_torch_mask_accepts_a_tensor():
    attend = torch.tensor([[True, False], [True, True]])
    np.testing.assert_array_equal(from_torch_mask(attend), [[False, True], [False, False]])
