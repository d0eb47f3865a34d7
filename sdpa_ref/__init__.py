"""sdpa_ref: the numpy reference implementation of scaled dot-product attention.

Every grade the kit gives is measured against this package. The mask convention is the
lesson's throughout: a boolean mask (n, m) is **True where query i may NOT look at key j**.

    softmax, softmax_jacobian       softmax.py     stable softmax and d p_i / d x_j
    causal_mask                     masks.py       True strictly above the diagonal
    attention                       attention.py   returns (out, attn), any batch dims
    flash_attention                 flash.py       the same out, tile by tile, O(block) memory
    to_torch_mask, from_torch_mask  torch_masks.py PyTorch's bool attn_mask means "attend"
"""

from .attention import attention
from .flash import flash_attention
from .masks import causal_mask
from .softmax import softmax, softmax_jacobian
from .torch_masks import from_torch_mask, to_torch_mask

__all__ = [
    "attention",
    "causal_mask",
    "flash_attention",
    "from_torch_mask",
    "softmax",
    "softmax_jacobian",
    "to_torch_mask",
]
