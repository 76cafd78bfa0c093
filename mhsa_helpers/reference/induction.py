"""The induction notebook's exercise (19): each head's previous-token and induction score."""

from __future__ import annotations

import numpy as np

__all__ = ["induction_scores"]


def induction_scores(A, period):
    """Both stripes read with fancy indexing (queries ``t``, keys ``t - 1`` and
    ``t - period + 1``), then averaged over the queries and every leading axis at once
    (the leading axes flattened into one)."""
    A = np.asarray(A)
    h, T = A.shape[-3], A.shape[-1]
    t = np.arange(1, period + 1)
    previous = A[..., t, t - 1].reshape(-1, h, len(t)).mean(axis=(0, 2))
    t = np.arange(period, T)
    induction = A[..., t, t - period + 1].reshape(-1, h, len(t)).mean(axis=(0, 2))
    return previous, induction
