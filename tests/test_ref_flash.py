"""sdpa_ref.flash_attention: the same numbers as attention, without the (n, m) matrix."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ref_spec import attention_spec, problems, ref_settings

from sdpa_ref import attention, causal_mask, flash_attention

pytestmark = pytest.mark.filterwarnings("error")

blocks = st.tuples(st.integers(1, 5), st.integers(1, 5))


def dense(p, causal):
    """What flash_attention must equal: attention with the causal mask, or no mask."""
    n, m = p["Q"].shape[-2], p["K"].shape[-2]
    mask = causal_mask(n, m) if causal else None
    return attention(p["Q"], p["K"], p["V"], mask, scale=p["scale"])[0]


@ref_settings
@given(problems(magnitudes=(1.0, 1e3), masked=False, max_side=12), st.booleans(), blocks)
def test_flash_equals_attention_in_float64(p, causal, block):
    got = flash_attention(p["Q"], p["K"], p["V"], causal=causal, scale=p["scale"],
                          block_q=block[0], block_k=block[1])
    want = dense(p, causal)
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@ref_settings
@given(problems(dtypes=(np.float32,), masked=False, max_side=12), st.booleans(), blocks)
def test_flash_matches_the_specification_in_float32(p, causal, block):
    got = flash_attention(p["Q"], p["K"], p["V"], causal=causal, scale=p["scale"],
                          block_q=block[0], block_k=block[1])
    n, m = p["Q"].shape[-2], p["K"].shape[-2]
    want, _ = attention_spec(p["Q"], p["K"], p["V"], causal_mask(n, m) if causal else None,
                             p["scale"])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_shift_moves_when_a_later_key_scores_far_higher():
    # Key 0 scores -2000 and key 5 scores +2000: weights relative to key 0 would be e**4000.
    Q = np.array([[1.0, 0.0]])
    K = np.zeros((8, 2))
    K[0, 0], K[5, 0], K[6, 0] = -2000.0, 2000.0, 1999.0
    V = np.arange(16.0).reshape(8, 2)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = flash_attention(Q, K, V, scale=1.0, block_k=2)
    np.testing.assert_allclose(got, attention(Q, K, V, scale=1.0)[0], rtol=1e-12)
    weight_on_key_6 = 1 / (1 + np.e)  # keys 5 and 6 share everything: softmax(2000, 1999)
    np.testing.assert_allclose(got, np.array([[10.0, 11.0]]) + 2 * weight_on_key_6, rtol=1e-12)


@pytest.mark.parametrize("first_key", [0.0, -40.0])
def test_the_scan_for_a_rise_is_skipped_only_where_cauchy_schwarz_allows_it(first_key):
    # float32: key 1 scores 60 above the shift (key 0's score), within exp's range
    # (e**60 ~ 1e26) but, times values of 1e13, beyond float32's (3e38). A bound that
    # took the wrong key's norm (0 when key 0 is at 0), the wrong sign of the shift
    # (-40), or the whole exponent range as its slack would miss the rise.
    Q = np.array([[1.0, 0.0]], np.float32)
    K = np.array([[first_key, 0], [first_key + 60, 0], [first_key + 59, 0]], np.float32)
    V = np.array([[0.0], [1e13], [2e13]], np.float32)
    with np.errstate(over="raise", invalid="raise"):
        got = flash_attention(Q, K, V, scale=1.0, block_k=2)
    want = attention(Q.astype(np.float64), K, V, scale=1.0)[0]  # (1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_tiles_that_do_not_divide_n_and_m_cover_everything():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(37, 5)), rng.normal(size=(53, 5)), rng.normal(size=(53, 3))
    for causal in (False, True):
        got = flash_attention(Q, K, V, causal=causal, block_q=8, block_k=16)
        want = attention(Q, K, V, causal_mask(37, 53) if causal else None)[0]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_the_default_tiles_match_attention_when_they_do_not_divide_n_and_m():
    rng = np.random.default_rng(5)
    n, m = 2100, 2500  # default tiles: 2048 + 52 queries, 2048 + 452 keys
    Q, K, V = rng.normal(size=(n, 16)), 3 * rng.normal(size=(m, 16)), rng.normal(size=(m, 4))
    for causal in (False, True):
        got = flash_attention(Q, K, V, causal=causal)
        want = attention(Q, K, V, causal_mask(n, m) if causal else None)[0]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def peak_bytes(f, *args, **kwargs):
    """Peak memory numpy allocates while f runs (numpy reports its buffers to tracemalloc)."""
    tracemalloc.start()
    try:
        f(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_flash_never_allocates_the_score_matrix():
    rng = np.random.default_rng(1)
    n = m = 2048
    Q, K, V = (rng.normal(size=(n, 8)) for _ in range(3))
    peak = peak_bytes(flash_attention, Q, K, V, block_q=128, block_k=256)
    score_matrix = n * m * 8  # 32 MiB
    assert peak < score_matrix / 16, f"peak {peak / 2**20:.1f} MiB"


def test_the_default_tile_keeps_t_8192_within_64_mib():
    rng = np.random.default_rng(6)
    T, d = 8192, 64
    Q, K, V = (rng.normal(size=(T, d)) for _ in range(3))
    peak = peak_bytes(flash_attention, Q, K, V)
    tile = 2048 * 2048 * 8  # 32 MiB of scores
    copies = 4 * T * (d + 1) * 8  # [scale Q | -c], [K | 1], [V | 1] and out
    sums = 3 * 2048 * (d + 1) * 8  # a tile's weights @ [V | 1], the running sums, the next ones
    norms = 2 * T * 8  # |scale q_i| and |k_j|
    assert peak < tile + copies + sums + norms + 2**16 < 64 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_a_small_problem_gets_a_small_tile():
    Q = K = V = np.ones((6, 4))
    assert peak_bytes(flash_attention, Q, K, V) < 2**16  # not the default 32 MiB tile


def test_flash_keeps_the_dtype_and_the_batch_dims():
    x = np.ones((2, 1, 5, 4), np.float32)
    y = np.ones((3, 6, 4), np.float32)
    out = flash_attention(x, y, y[..., :2], causal=True)
    assert out.shape == (2, 3, 5, 2) and out.dtype == np.float32


def test_flash_never_modifies_its_inputs_and_accepts_read_only_arrays():
    rng = np.random.default_rng(2)
    Q, K, V = rng.normal(size=(9, 3)), rng.normal(size=(11, 3)), rng.normal(size=(11, 2))
    before = [x.copy() for x in (Q, K, V)]
    for x in (Q, K, V):
        x.flags.writeable = False
    flash_attention(Q, K, V, causal=True, block_q=4, block_k=4)
    for x, original in zip((Q, K, V), before, strict=True):
        np.testing.assert_array_equal(x, original)


def test_no_keys_at_all_gives_zero_output_like_attention():
    out = flash_attention(np.ones((2, 3)), np.ones((0, 3)), np.ones((0, 4)))
    np.testing.assert_array_equal(out, attention(np.ones((2, 3)), np.ones((0, 3)),
                                                 np.ones((0, 4)))[0])


def test_a_mask_passed_by_position_as_to_attention_is_refused_not_read_as_causal():
    # attention(Q, K, V, mask) takes the mask fourth; flash_attention has no mask, and its
    # options are named only, so the habit cannot turn a mask into `causal` or a tile size.
    Q = K = V = np.ones((3, 2))
    with pytest.raises(TypeError):
        flash_attention(Q, K, V, causal_mask(3))
    np.testing.assert_allclose(flash_attention(Q, K, V, causal=True),
                               attention(Q, K, V, mask=causal_mask(3))[0])


def test_the_default_tile_is_2048_by_2048():
    """The tile the 64 MiB bound above is worked out for: the defaults compute exactly what
    asking for 2048 x 2048 computes (a default changed by one, 2047 or 2049 queries or keys,
    splits 2100 queries and keys elsewhere, and some last bit differs)."""
    rng = np.random.default_rng(7)
    n = m = 2100
    Q, K, V = rng.normal(size=(n, 4)), 3 * rng.normal(size=(m, 4)), rng.normal(size=(m, 3))
    for causal in (False, True):
        np.testing.assert_array_equal(
            flash_attention(Q, K, V, causal=causal),
            flash_attention(Q, K, V, causal=causal, block_q=2048, block_k=2048))


def test_a_shift_not_needed_is_not_made_however_many_tiles():
    """The shift moves only where a tile's scores rise past the slack (a bump of 1.0 instead
    of 0.0 elsewhere moved it by one per tile: after 1000 tiles every weight underflowed, and
    out was 0 / 0). Every score here is 0, but |scale q| |k| is far above the slack, so each
    tile is looked at."""
    m = 1000
    Q = np.array([[100.0, 0.0]])  # (1, 2)
    K = np.tile([[0.0, 100.0]], (m, 1))  # (m, 2), each orthogonal to q
    V = np.random.default_rng(3).normal(size=(m, 3))  # (m, 3)
    got = flash_attention(Q, K, V, block_k=1)  # (1, 3), one key per tile
    np.testing.assert_allclose(got, V.mean(axis=0, keepdims=True), rtol=1e-12, atol=1e-14)
