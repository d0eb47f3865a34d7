"""sdpa_ref.causal_mask and the conversions to and from PyTorch's mask convention."""

import numpy as np
import pytest

from sdpa_ref import causal_mask, from_torch_mask, to_torch_mask


@pytest.mark.parametrize("n, m", [(1, 1), (5, 5), (3, 7), (7, 3), (4, 1), (1, 4)])
def test_causal_mask_hides_exactly_the_keys_after_each_query(n, m):
    mask = causal_mask(n, m)
    assert mask.shape == (n, m) and mask.dtype == np.bool_
    for i in range(n):
        for j in range(m):
            assert mask[i, j] == (j > i)


def test_causal_mask_is_square_by_default_and_keeps_the_diagonal():
    mask = causal_mask(6)
    assert mask.shape == (6, 6)
    assert not mask.diagonal().any()
    np.testing.assert_array_equal(mask, np.triu(np.ones((6, 6), dtype=bool), k=1))


def test_causal_mask_rows_each_hide_their_future():
    mask = causal_mask(4, 6)
    np.testing.assert_array_equal(mask.sum(axis=1), [5, 4, 3, 2])  # query i sees keys 0..i


def test_to_torch_mask_inverts_the_convention():
    lesson = causal_mask(3)
    torch_style = to_torch_mask(lesson)
    np.testing.assert_array_equal(torch_style, np.tril(np.ones((3, 3), dtype=bool)))
    np.testing.assert_array_equal(from_torch_mask(torch_style), lesson)


def test_mask_conversion_keeps_batch_dims_and_does_not_modify_its_input():
    lesson = np.random.default_rng(0).random((2, 3, 4, 5)) < 0.5
    before = lesson.copy()
    lesson.flags.writeable = False
    assert to_torch_mask(lesson).shape == (2, 3, 4, 5)
    np.testing.assert_array_equal(lesson, before)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64, object, "U5", "M8[s]"])
@pytest.mark.parametrize("convert", [to_torch_mask, from_torch_mask])
def test_mask_conversion_refuses_every_mask_that_is_not_boolean(convert, dtype):
    # PyTorch adds a float attn_mask to the scores: 0/1 floats are not a True/False mask, nor
    # are old uint8 masks, objects, strings or dates.
    with pytest.raises(TypeError, match="boolean"):
        convert(np.zeros((3, 3)).astype(dtype))
