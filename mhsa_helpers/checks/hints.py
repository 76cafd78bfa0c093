"""The sentences that more than one check says, each written once.

A check module imports the sentence it shares with another instead of writing it
out again: rewording it here rewords it everywhere. ``tests/test_one_voice.py``
fails when a string of 30 characters or more is written in two check modules.
"""

from __future__ import annotations

import numpy as np

#: A mask made by multiplying 0/1 by −∞: 0 · (−∞) is NaN (causal, padding, sliding-window masks).
ZERO_TIMES_INF = (
    "the allowed positions are NaN, not 0: 0 · (−∞) is NaN. Build the mask with "
    "np.where(blocked, -np.inf, 0.0) instead of multiplying 0s and 1s by −∞."
)


def whole_array_sum(Z) -> str:
    """The sentence for a softmax divided by the sum of the whole array of scores ``Z``.

    Parameters
    ----------
    Z : numpy.ndarray
        The scores (..., T_q, T_k) the softmax ran on.

    Returns
    -------
    str
    """
    rows = int(np.prod(np.shape(Z)[:-1]))
    return (
        "the denominator is the sum of the whole array (E.sum() without an axis), so the "
        f"weights of all {rows} rows sum to 1 together; each row must sum to 1: divide by "
        "its own sum, E.sum(axis=-1, keepdims=True)."
    )
