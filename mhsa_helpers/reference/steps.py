"""The reference of the nine steps, one function per exercise of notebooks 01 to 09.

Each exercise function's docstring here says only how it computes; its
contract (the meaning, the parameters and returns with their shapes) is
written once in ``mhsa_helpers/exercises.toml`` and put in front of it when
:mod:`mhsa_helpers.reference` is imported, so ``help()`` shows both.
"""

from __future__ import annotations

import numpy as np

from .inputs import (
    as_array,
    check_mask,
    check_min_ndim,
    check_positive_int,
    check_weight,
    heads_for,
    heads_mask,
)

__all__ = [
    "attention_head",
    "attention_scores",
    "causal_mask",
    "init_weights",
    "merge_heads",
    "multi_head_self_attention",
    "padding_mask",
    "positional_encoding",
    "project_qkv",
    "softmax",
    "split_heads",
]


# --------------------------------------------------------------------------
# step 1: the input
# --------------------------------------------------------------------------
def positional_encoding(seq_len: int, d_model: int) -> np.ndarray:
    """``PE[pos, 2i] = sin(pos / 10000**(2i / d_model))`` and
    ``PE[pos, 2i+1] = cos(pos / 10000**(2i / d_model))``.
    """
    seq_len = check_positive_int(seq_len, "seq_len")
    d_model = check_positive_int(d_model, "d_model")
    pos = np.arange(seq_len)[:, None]  # (T, 1)
    two_i = np.arange(0, d_model, 2)[None, :]  # (1, ceil(d_model / 2))
    angle = pos / np.power(10000.0, two_i / d_model)  # (T, ceil(d_model / 2))
    PE = np.empty((seq_len, d_model))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return PE


# --------------------------------------------------------------------------
# step 2: the learnable parameters
# --------------------------------------------------------------------------
def init_weights(d_in: int, d_out: int, rng: np.random.Generator) -> np.ndarray:
    """Entries are drawn from ``U(-a, a)`` with ``a = sqrt(6 / (d_in + d_out))``,
    which keeps the variance of ``X @ W`` close to that of ``X``.
    """
    d_in = check_positive_int(d_in, "d_in")
    d_out = check_positive_int(d_out, "d_out")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            "rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
            f"but got {type(rng).__name__}."
        )
    limit = np.sqrt(6.0 / (d_in + d_out))
    return rng.uniform(-limit, limit, size=(d_in, d_out))


# --------------------------------------------------------------------------
# step 3: queries, keys and values
# --------------------------------------------------------------------------
def project_qkv(X, W_q, W_k, W_v):
    """Weights act on the right, as in the course articles, so that a batch of
    sequences ``(..., T, d_model)`` is projected by one product each.
    """
    X = as_array(X, "X")
    check_min_ndim(X, 2, "X", "(..., T, d_model)")
    d_model = X.shape[-1]
    Ws = [check_weight(W, d_model, n) for W, n in ((W_q, "W_q"), (W_k, "W_k"), (W_v, "W_v"))]
    return tuple(X @ W for W in Ws)


# --------------------------------------------------------------------------
# step 4: heads
# --------------------------------------------------------------------------
def split_heads(M, n_heads: int) -> np.ndarray:
    """A reshape to ``(..., T, h, d_k)``, then the head axis moved in front of the
    token axis, so that each head is a ``(T, d_k)`` matrix.
    """
    M = as_array(M, "M")
    check_min_ndim(M, 2, "M", "(..., T, d_model)")
    *lead, T, d_model = M.shape
    h, d_k = heads_for(d_model, n_heads)
    return M.reshape(*lead, T, h, d_k).swapaxes(-2, -3)  # (..., h, T, d_k)


def merge_heads(H) -> np.ndarray:
    """The head axis moved back behind the token axis, then a reshape: the
    inverse of :func:`split_heads`, never a bare reshape.
    """
    H = as_array(H, "H")
    check_min_ndim(H, 3, "H", "(..., h, T, d_k)")
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)  # (..., T, h*d_k)


# --------------------------------------------------------------------------
# step 5: scores
# --------------------------------------------------------------------------
def _scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Unchecked ``Q @ K.T / sqrt(d_k)``; the scale is applied to Q, the smaller array."""
    d_k = Q.shape[-1]
    scale = np.asarray(1.0 / np.sqrt(d_k), dtype=Q.dtype)
    return (Q * scale) @ K.swapaxes(-1, -2)  # (..., T_q, T_k)


def attention_scores(Q, K) -> np.ndarray:
    """Dividing by ``sqrt(d_k)`` (the per-head key size, not the sequence
    length) keeps the scores' variance near 1 whatever ``d_k`` is, so the
    softmax does not saturate. The scale is applied to ``Q``, the smaller array.
    """
    Q = as_array(Q, "Q")
    K = as_array(K, "K")
    check_min_ndim(Q, 2, "Q", "(..., T_q, d_k)")
    check_min_ndim(K, 2, "K", "(..., T_k, d_k)")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            "Q and K must have the same last axis d_k, but got Q of shape "
            f"{Q.shape} and K of shape {K.shape}."
        )
    try:
        np.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
    except ValueError:
        raise ValueError(
            "Q and K must have broadcastable batch axes, but got Q of shape "
            f"{Q.shape} and K of shape {K.shape}."
        ) from None
    return _scores(Q, K)


# --------------------------------------------------------------------------
# step 6: masks
# --------------------------------------------------------------------------
def causal_mask(seq_len: int) -> np.ndarray:
    """Built from the query index ``i`` (rows) and the key index ``j`` (columns)."""
    T = check_positive_int(seq_len, "seq_len")
    i = np.arange(T)[:, None]  # (T, 1) query index
    j = np.arange(T)[None, :]  # (1, T) key index
    return np.where(j > i, -np.inf, 0.0)


def padding_mask(lengths, seq_len: int) -> np.ndarray:
    """Built from the key index only: every query, padded or not, sees the same real keys."""
    T = check_positive_int(seq_len, "seq_len")
    arr = np.asarray(lengths)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(
            f"lengths must be an int or an array of ints, but got {lengths!r} (dtype {arr.dtype})."
        )
    if np.any(arr < 0) or np.any(arr > T):
        raise ValueError(f"lengths must lie between 0 and seq_len={T}, but got {arr.tolist()!r}.")
    j = np.arange(T)  # (T,) key index
    blocked = j >= arr[..., None, None]  # (..., 1, T)
    return np.where(blocked, -np.inf, 0.0)


# --------------------------------------------------------------------------
# step 7: softmax
# --------------------------------------------------------------------------
def _softmax_inplace(Z: np.ndarray, axis: int = -1) -> np.ndarray:
    """Softmax that overwrites ``Z`` (a float array owned by the caller)."""
    m = Z.max(axis=axis, keepdims=True)
    # A row that is entirely -inf has max -inf; shifting by 0 instead keeps
    # exp(-inf - 0) = 0 and avoids the -inf - -inf = nan of a naive shift.
    m[~np.isfinite(m)] = 0.0
    Z -= m
    np.exp(Z, out=Z)
    s = Z.sum(axis=axis, keepdims=True)
    s[s == 0] = 1.0  # an all -inf row is all zeros after exp; keep it so, without 0/0
    Z *= 1.0 / s  # one division per row, then a multiplication per entry
    return Z


def softmax(Z, axis: int = -1) -> np.ndarray:
    """``softmax(z)_j = exp(z_j - max z) / sum_k exp(z_k - max z)``: subtracting
    the maximum changes nothing mathematically but keeps ``exp`` from
    overflowing. An all ``-inf`` slice is shifted by 0 instead of by its
    maximum, which keeps it at zeros without ``-inf - -inf = nan``.
    """
    Z = as_array(Z, "Z")
    if Z.ndim == 0:
        raise ValueError("Z must have at least one axis, but got a scalar.")
    if not -Z.ndim <= axis < Z.ndim:
        raise ValueError(
            f"axis must lie in [-{Z.ndim}, {Z.ndim}) for Z of shape {Z.shape}, but got {axis}."
        )
    return _softmax_inplace(Z.copy(), axis=axis)


# --------------------------------------------------------------------------
# steps 8 and 9: one head, then all of them
# --------------------------------------------------------------------------
def attention_head(Q, K, V, mask=None):
    """The mask is added to the scores, before the softmax (never to ``K`` or to
    the weights).
    """
    Z = attention_scores(Q, K)  # (..., T_q, T_k)
    V = as_array(V, "V")
    check_min_ndim(V, 2, "V", "(..., T_k, d_v)")
    if V.shape[-2] != Z.shape[-1]:
        raise ValueError(
            f"V must have one row per key, shape (..., {Z.shape[-1]}, d_v), "
            f"but got V of shape {V.shape}."
        )
    if mask is not None:
        Z += check_mask(mask, Z.shape)
    A = _softmax_inplace(Z)  # (..., T_q, T_k)
    return A @ V, A


def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads: int, mask=None):
    """Projects ``X`` to Q, K, V, splits them into ``n_heads`` heads, runs
    :func:`attention_head` on every head at once, concatenates the heads and
    projects the result with ``W_o``. The mask follows the layers' one rule,
    :func:`mhsa_helpers.reference.inputs.heads_mask`.
    """
    Q, K, V = project_qkv(X, W_q, W_k, W_v)  # (..., T, d_model) each
    W_o = check_weight(W_o, Q.shape[-1], "W_o")
    # split_heads returns strided views; contiguous copies (cheap: T*d_model
    # each) make the batched products below markedly faster.
    Qh = np.ascontiguousarray(split_heads(Q, n_heads))  # (..., h, T, d_k)
    Kh = np.ascontiguousarray(split_heads(K, n_heads))  # (..., h, T, d_k)
    Vh = np.ascontiguousarray(split_heads(V, n_heads))  # (..., h, T, d_k)
    mask = heads_mask(mask, Q.ndim, Qh.shape[-3])  # (..., 1 or h, T, T)
    out, A = attention_head(Qh, Kh, Vh, mask)  # (..., h, T, d_k), (..., h, T, T)
    return merge_heads(out) @ W_o, A  # (..., T, d_model), (..., h, T, T)
