"""Converting masks between the lesson's convention and PyTorch's.

The lesson:  True = masked out (query i may NOT look at key j).
PyTorch:     ``F.scaled_dot_product_attention(..., attn_mask=m)`` with a boolean ``m`` reads
             True = attend (query i MAY look at key j).

The trap: both are boolean arrays of the same shape, so passing the lesson's mask straight
to PyTorch raises nothing. It silently inverts the mask: a causal mask then lets every
query see only the future, and the last query, which has no future, gets a fully masked row.
A second trap: a *float* ``attn_mask`` is added to the scores, so ``mask.float()`` adds
1.0 to the masked scores instead of hiding them. Hence both functions insist on booleans.
"""

import numpy as np


def to_torch_mask(mask):
    """Lesson mask (..., n, m), True = masked out -> PyTorch ``attn_mask``, True = attend.

    Returns a numpy bool array; hand it to PyTorch with ``torch.from_numpy``.
    """
    return np.logical_not(_boolean(mask))  # (..., n, m)


def from_torch_mask(mask):
    """PyTorch boolean ``attn_mask`` (..., n, m), True = attend -> lesson mask, True = masked out.

    Accepts a numpy array or a CPU ``torch.Tensor``; returns a numpy bool array.
    """
    return np.logical_not(_boolean(mask))  # (..., n, m)


def _boolean(mask):
    mask = np.asarray(mask)  # a CPU torch.Tensor converts without a copy
    if mask.dtype != np.bool_:
        raise TypeError(
            f"expected a boolean mask, got dtype {mask.dtype}: PyTorch adds a float attn_mask "
            "to the scores (0 keeps, -inf hides), so it is not a True/False mask"
        )
    return mask
