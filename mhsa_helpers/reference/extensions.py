"""The reference beyond the nine steps: the capstone's multi-query attention and the extensions.

Notebook 10 (multi-query attention, the KV cache's size) and the six
extensions, notebooks 11 to 16 (rotary embeddings, grouped-query attention,
KV-cache decoding, tiled attention, cross-attention, sliding-window masks).

Each exercise function's docstring here says only how it computes; its
contract (the meaning, the parameters and returns with their shapes) is
written once in ``mhsa_helpers/exercises.toml`` and put in front of it when
:mod:`mhsa_helpers.reference` is imported, so ``help()`` shows both.
"""

from __future__ import annotations

import numbers

import numpy as np

from .inputs import (
    as_array,
    check_min_ndim,
    check_positive_int,
    check_weight,
    heads_for,
    heads_mask,
)
from .steps import attention_head, merge_heads, split_heads

__all__ = [
    "cross_attention",
    "decode_step",
    "grouped_query_attention",
    "kv_cache_size",
    "multi_query_attention",
    "rotary_embedding",
    "sliding_window_mask",
    "tiled_attention",
]


# --------------------------------------------------------------------------
# the capstone, notebook 10
# --------------------------------------------------------------------------
def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads: int, mask=None):
    """The shared K and V get a head axis of size 1 and broadcast over the
    query heads; the mask follows :func:`mhsa_helpers.reference.inputs.heads_mask`.
    """
    X = as_array(X, "X")
    check_min_ndim(X, 2, "X", "(..., T, d_model)")
    d_model = X.shape[-1]
    W_q = check_weight(W_q, d_model, "W_q")
    Qh = split_heads(X @ W_q, n_heads)  # (..., h, T, d_k)
    d_k = Qh.shape[-1]
    W_k = check_weight(W_k, d_model, "W_k")
    W_v = check_weight(W_v, d_model, "W_v")
    if W_k.shape[1] != d_k:
        raise ValueError(
            f"W_k must have shape ({d_model}, {d_k}) (one shared head of size d_k), "
            f"but got an array of shape {W_k.shape}."
        )
    K = (X @ W_k)[..., None, :, :]  # (..., 1, T, d_k): broadcast over the heads
    V = (X @ W_v)[..., None, :, :]  # (..., 1, T, d_v)
    W_o = check_weight(W_o, d_model, "W_o")
    mask = heads_mask(mask, X.ndim, Qh.shape[-3])  # (..., 1 or h, T, T)
    out, A = attention_head(Qh, K, V, mask)  # (..., h, T, d_v), (..., h, T, T)
    return merge_heads(out) @ W_o, A


def kv_cache_size(seq_len: int, d_model: int, n_heads: int, multi_query: bool = False) -> int:
    """Multi-head attention caches K and V for every head: ``2 * seq_len * d_model``.
    Multi-query attention caches one shared head: ``2 * seq_len * d_k``, that is
    ``n_heads`` times less.
    """
    seq_len = check_positive_int(seq_len, "seq_len")
    d_model = check_positive_int(d_model, "d_model")
    _, d_k = heads_for(d_model, n_heads)
    return 2 * seq_len * (d_k if multi_query else d_model)


# --------------------------------------------------------------------------
# the extensions, notebooks 11 to 16
# --------------------------------------------------------------------------
def rotary_embedding(X, positions=None, base: float = 10000.0) -> np.ndarray:
    """The interleaved RoFormer convention: each pair ``(x[2i], x[2i+1])`` of a
    token at position ``p`` is rotated counter-clockwise by ``p * theta_i``,
    ``theta_i = base**(-2i/d)``: ``out[2i] = x[2i] cos - x[2i+1] sin`` and
    ``out[2i+1] = x[2i] sin + x[2i+1] cos``. The dot product of two rotated
    vectors then depends on their positions only through ``m - n``.
    """
    X = as_array(X, "X")
    check_min_ndim(X, 2, "X", "(..., T, d)")
    d = X.shape[-1]
    if d % 2:
        raise ValueError(f"d must be even to rotate pairs of features, but got d={d}.")
    if not isinstance(base, numbers.Real) or isinstance(base, bool) or not base > 0:
        raise ValueError(f"base must be a positive number, but got {base!r}.")
    if positions is None:
        pos = np.arange(X.shape[-2])  # (T,)
    else:
        pos = np.asarray(positions)
        if not np.issubdtype(pos.dtype, np.integer):
            raise ValueError(f"positions must be integers, but got dtype {pos.dtype}.")
        try:
            fits = np.broadcast_shapes(pos.shape, X.shape[:-1]) == X.shape[:-1]
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"positions must broadcast to {X.shape[:-1]} (one per token), "
                f"but got shape {pos.shape}."
            )
    theta = float(base) ** (-np.arange(0, d, 2) / d)  # (d/2,)
    angle = pos[..., None].astype(np.float64) * theta  # (..., T, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    x0, x1 = X[..., 0::2], X[..., 1::2]  # (..., T, d/2) each
    out = np.empty(X.shape, dtype=np.result_type(X.dtype, cos.dtype))
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out


def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads: int, n_kv_heads: int, mask=None):
    """Each K/V head is repeated ``n_heads // n_kv_heads`` times along the head
    axis; the mask follows :func:`mhsa_helpers.reference.inputs.heads_mask`.
    """
    X = as_array(X, "X")
    check_min_ndim(X, 2, "X", "(..., T, d_model)")
    d_model = X.shape[-1]
    h, d_k = heads_for(d_model, n_heads)
    kv = check_positive_int(n_kv_heads, "n_kv_heads")
    if h % kv:
        raise ValueError(
            f"n_kv_heads must divide n_heads, but got n_heads={h} and n_kv_heads={kv}."
        )
    W_q = check_weight(W_q, d_model, "W_q")
    W_o = check_weight(W_o, d_model, "W_o")
    W_k, W_v = check_weight(W_k, d_model, "W_k"), check_weight(W_v, d_model, "W_v")
    for name, W in (("W_k", W_k), ("W_v", W_v)):
        if W.shape[1] != kv * d_k:
            raise ValueError(
                f"{name} must have shape ({d_model}, {kv * d_k}) (n_kv_heads * d_k columns), "
                f"but got an array of shape {W.shape}."
            )
    group = h // kv
    Qh = split_heads(X @ W_q, h)  # (..., h, T, d_k)
    Kh = np.repeat(split_heads(X @ W_k, kv), group, axis=-3)  # (..., h, T, d_k)
    Vh = np.repeat(split_heads(X @ W_v, kv), group, axis=-3)  # (..., h, T, d_k)
    mask = heads_mask(mask, X.ndim, h)  # (..., 1 or h, T, T)
    out, A = attention_head(Qh, Kh, Vh, mask)  # (..., h, T, d_k)
    return merge_heads(out) @ W_o, A  # (..., T, d_model), (..., h, T, T)


def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads: int):
    """The new token's query attends to every cached position and to itself,
    with no mask: every cached position is in its past.
    """
    x = as_array(x, "x")
    check_min_ndim(x, 1, "x", "(..., d_model)")
    d_model = x.shape[-1]
    h, d_k = heads_for(d_model, n_heads)
    W_q, W_k, W_v, W_o = (
        check_weight(W, d_model, n)
        for W, n in ((W_q, "W_q"), (W_k, "W_k"), (W_v, "W_v"), (W_o, "W_o"))
    )
    row = x[..., None, :]  # (..., 1, d_model): a sequence of one token
    q, k, v = (split_heads(row @ W, h) for W in (W_q, W_k, W_v))  # (..., h, 1, d_k) each
    if cache is None:
        K, V = k, v
    else:
        K_old, V_old = (as_array(c, n) for c, n in zip(cache, ("cache K", "cache V"), strict=True))
        want = (*x.shape[:-1], h)
        for name, c in (("cache K", K_old), ("cache V", V_old)):
            if c.ndim != len(want) + 2 or c.shape[:-2] != want or c.shape[-1] != d_k:
                raise ValueError(f"{name} must have shape {(*want, 't', d_k)}, but got {c.shape}.")
        K = np.concatenate([K_old, k], axis=-2)  # (..., h, t+1, d_k), a new array
        V = np.concatenate([V_old, v], axis=-2)
    out, _ = attention_head(q, K, V)  # (..., h, 1, d_k): no mask, all positions are past
    return merge_heads(out)[..., 0, :] @ W_o, (K, V)


def tiled_attention(Q, K, V, block_size: int, causal: bool = False) -> np.ndarray:
    """FlashAttention's idea in numpy: for each block of keys, the scores of every
    query against that block only; a running maximum ``m`` and running sum ``l``
    per query row are rescaled by ``exp(m_old - m_new)`` whenever the maximum
    grows, so the full ``(T_q, T_k)`` matrix is never built.
    """
    Q, K, V = as_array(Q, "Q"), as_array(K, "K"), as_array(V, "V")
    for M, n, shape in (
        (Q, "Q", "(..., T_q, d_k)"),
        (K, "K", "(..., T_k, d_k)"),
        (V, "V", "(..., T_k, d_v)"),
    ):
        check_min_ndim(M, 2, n, shape)
    b = check_positive_int(block_size, "block_size")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if K.shape[-1] != d_k or V.shape[-2] != T_k:
        raise ValueError(
            f"K must have shape (..., T_k, {d_k}) and V (..., T_k, d_v) with the same T_k, "
            f"but got K of shape {K.shape} and V of shape {V.shape}."
        )
    if causal and T_q != T_k:
        raise ValueError(f"causal attention needs T_q == T_k, but got T_q={T_q} and T_k={T_k}.")
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    dtype = np.result_type(Q, K, V)
    m = np.full((*lead, T_q, 1), -np.inf, dtype=dtype)  # running max per query row
    l = np.zeros((*lead, T_q, 1), dtype=dtype)  # running sum of exp(score - m)
    acc = np.zeros((*lead, T_q, V.shape[-1]), dtype=dtype)  # running sum of exp(...) V
    rows = np.arange(T_q)[:, None]  # (T_q, 1)
    scale = 1.0 / np.sqrt(d_k)
    for s in range(0, T_k, b):
        e = min(s + b, T_k)
        S = Q @ K[..., s:e, :].swapaxes(-1, -2) * scale  # (..., T_q, e - s): one block
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)  # (T_q, e - s) mask, no more
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))  # (..., T_q, 1)
        shift = np.where(np.isneginf(m_new), 0.0, m_new)  # rows with no key yet: shift by 0
        P = np.exp(S - shift)  # (..., T_q, e - s)
        rescale = np.exp(m - shift)  # the old sums were taken against the old max
        l = l * rescale + P.sum(axis=-1, keepdims=True)
        acc = acc * rescale + P @ V[..., s:e, :]
        m = m_new
    return np.divide(acc, l, out=np.zeros_like(acc), where=l > 0)  # (..., T_q, d_v)


def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads: int, mask=None):
    """The mask follows :func:`mhsa_helpers.reference.inputs.heads_mask`, counting
    the axes of ``X`` or ``C``, whichever has more.
    """
    X, C = as_array(X, "X"), as_array(C, "C")
    check_min_ndim(X, 2, "X", "(..., T_q, d_model)")
    check_min_ndim(C, 2, "C", "(..., T_k, d_model)")
    d_model = X.shape[-1]
    if C.shape[-1] != d_model:
        raise ValueError(
            f"C must have shape (..., T_k, {d_model}) like X's last axis, but got {C.shape}."
        )
    h, _ = heads_for(d_model, n_heads)
    W_q, W_k, W_v, W_o = (
        check_weight(W, d_model, n)
        for W, n in ((W_q, "W_q"), (W_k, "W_k"), (W_v, "W_v"), (W_o, "W_o"))
    )
    Qh = split_heads(X @ W_q, h)  # (..., h, T_q, d_k)
    Kh = split_heads(C @ W_k, h)  # (..., h, T_k, d_k)
    Vh = split_heads(C @ W_v, h)  # (..., h, T_k, d_k)
    mask = heads_mask(mask, max(X.ndim, C.ndim), h)  # (..., 1 or h, T_q, T_k)
    out, A = attention_head(Qh, Kh, Vh, mask)  # (..., h, T_q, d_k)
    return merge_heads(out) @ W_o, A  # (..., T_q, d_model), (..., h, T_q, T_k)


def sliding_window_mask(seq_len: int, window: int) -> np.ndarray:
    """Built like :func:`causal_mask`, with the keys more than ``window - 1``
    before the query blocked too.
    """
    T = check_positive_int(seq_len, "seq_len")
    w = check_positive_int(window, "window")
    i = np.arange(T)[:, None]  # (T, 1): queries
    j = np.arange(T)[None, :]  # (1, T): keys
    return np.where((j <= i) & (j > i - w), 0.0, -np.inf)
