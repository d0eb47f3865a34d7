"""The causal mask, in the lesson's convention: True = masked out."""

import numpy as np


def causal_mask(n, m=None):
    """Boolean mask (n, m) that hides the future: True where key ``j`` comes after query ``i``.

    True = masked out (the lesson's convention), i.e. True strictly above the diagonal;
    the diagonal itself stays visible, since a position may attend to itself. ``m`` defaults
    to ``n``. For ``n != m`` the diagonal starts at the top-left corner, as for PyTorch's
    ``is_causal=True``: query ``i`` sees keys ``0 .. i``.
    """
    m = n if m is None else m
    return np.arange(m) > np.arange(n)[:, None]  # (1, m) > (n, 1) -> (n, m)
