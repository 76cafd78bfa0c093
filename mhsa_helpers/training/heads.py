"""Reading the trained heads: which key each head attends to, and without a head."""

from __future__ import annotations

import numpy as np

from .model import N_HEADS
from .task import HELD_OUT_SIZE, SEQ_LEN

__all__ = [
    "PATTERNS",
    "head_sentence",
    "name_heads",
    "pattern_keys",
    "weight_on_keys",
    "without_head",
]

#: Attention patterns a head may learn: for each, the key that query ``i`` looks at.
PATTERNS = {
    "mirror": "the mirror position T−1−i",
    "itself": "its own position i",
    "previous": "the previous position i−1",
    "next": "the next position i+1",
}


def pattern_keys(pattern: str, seq_len: int = SEQ_LEN) -> np.ndarray:
    """The key each query looks at in ``pattern`` (one of :data:`PATTERNS`).

    Returns
    -------
    keys : int ndarray of shape (seq_len,)
        ``keys[i]``: the key of query ``i``. ``previous`` and ``next`` wrap
        around at the ends.
    """
    i = np.arange(seq_len)
    keys = {"mirror": seq_len - 1 - i, "itself": i, "previous": i - 1, "next": i + 1}
    if pattern not in keys:
        raise ValueError(f"pattern must be one of {list(PATTERNS)}, but got {pattern!r}.")
    return keys[pattern] % seq_len


def weight_on_keys(weights, keys) -> np.ndarray:
    """Each head's average weight on the key ``keys[i]`` of each query ``i``.

    Parameters
    ----------
    weights : ndarray of shape (..., n_heads, T, T)
    keys : int ndarray of shape (T,)

    Returns
    -------
    share : ndarray of shape (n_heads,)
        Averaged over the queries and the leading axes; 1 for a head that
        puts all of every query's weight on its key.
    """
    weights = np.asarray(weights)
    T = weights.shape[-1]
    picked = weights[..., np.arange(T), keys]  # (..., n_heads, T)
    return picked.reshape(-1, *picked.shape[-2:]).mean(axis=(0, 2))  # (n_heads,)


def name_heads(weights, threshold: float = 0.8) -> list:
    """What each head learned: the pattern it follows best, and how closely.

    Parameters
    ----------
    weights : ndarray of shape (..., n_heads, T, T)
    threshold : float
        A head whose best pattern gets less average weight than this is
        named ``None`` (no single key).

    Returns
    -------
    heads : list of (str or None, float)
        One ``(pattern, average weight on its keys)`` per head.
    """
    T = np.shape(weights)[-1]
    shares = {p: weight_on_keys(weights, pattern_keys(p, T)) for p in PATTERNS}  # p -> (h,)
    heads = []
    for k in range(np.shape(weights)[-3]):
        best = max(PATTERNS, key=lambda p: shares[p][k])
        heads.append((best if shares[best][k] >= threshold else None, float(shares[best][k])))
    return heads


def without_head(params: dict, k: int, n_heads: int = N_HEADS, key: str = "W_o") -> dict:
    """A copy of ``params`` in which head ``k`` (counted from 0) no longer reaches the output.

    The concatenated heads meet ``W_o`` row by row: head ``k``'s columns
    ``k*d_k:(k+1)*d_k`` multiply the rows ``k*d_k:(k+1)*d_k`` of ``W_o``;
    setting those rows to zero removes the head and keeps the others. ``key``
    names the output weight in ``params`` (``"W_o1"``: a model of several layers).
    """
    out = {n: p.copy() for n, p in params.items()}
    d_k = out[key].shape[0] // n_heads
    out[key][k * d_k : (k + 1) * d_k] = 0.0  # (d_k, d_model) rows of head k
    return out


def head_sentence(k: int, pattern: str | None, share: float) -> str:
    """What head ``k`` (counted from 0) learned, in words, with its measured share."""
    what = PATTERNS.get(pattern or "", "no single key")
    return (
        f"head {k + 1}: {what} ({share:.2f} of its weight on average over "
        f"{HELD_OUT_SIZE} held-out sequences)"
    )
