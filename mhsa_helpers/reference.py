"""Reference implementation of multi-head self-attention, one function per step.

These are the functions the learner writes in the course notebooks; the
checks in :mod:`mhsa_helpers.checks` compare the learner's versions with these.
Weights act on the right, as in the course articles: ``Q = X @ W_q`` with
``W_q`` of shape ``(d_model, d_model)``; the head at index ``i`` owns the
columns ``i*d_k:(i+1)*d_k``. Leading batch axes (``...``) are allowed throughout.
"""

from __future__ import annotations

import numbers

import numpy as np

from .exercises import names

#: One function per exercise of the course, named as in the registry.
__all__ = names()


# --------------------------------------------------------------------------
# input validation: one place, so every function words its errors alike
# --------------------------------------------------------------------------
def _as_array(x, name: str) -> np.ndarray:
    """Return ``x`` as a float ndarray, or raise naming what came instead."""
    arr = np.asarray(x)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must be a numeric array, but got dtype {arr.dtype}.")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real, but got dtype {arr.dtype}.")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    return arr


def _check_min_ndim(arr: np.ndarray, ndim: int, name: str, shape: str) -> None:
    if arr.ndim < ndim:
        raise ValueError(
            f"{name} must have shape {shape} (at least {ndim} axes), "
            f"but got an array of shape {arr.shape}."
        )


def _check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, but got {value!r}.")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, but got {value}.")
    return int(value)


def _check_weight(W, d_in: int, name: str) -> np.ndarray:
    W = _as_array(W, name)
    if W.ndim != 2 or W.shape[0] != d_in:
        raise ValueError(
            f"{name} must have shape ({d_in}, d_out) to act on the right of an input "
            f"with last axis {d_in}, but got an array of shape {W.shape}."
        )
    return W


def _check_mask(mask, scores_shape: tuple) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.dtype == bool:
        raise ValueError(
            "mask must be additive (0 where allowed, -inf where blocked), but got a "
            "boolean array; convert it with np.where(allowed, 0.0, -np.inf)."
        )
    mask = _as_array(mask, "mask")
    try:
        out = np.broadcast_shapes(mask.shape, scores_shape)
    except ValueError:
        out = None
    if out != tuple(scores_shape):
        raise ValueError(
            f"mask must broadcast against the scores of shape {tuple(scores_shape)}, "
            f"but got a mask of shape {mask.shape}."
        )
    return mask


# --------------------------------------------------------------------------
# step 1: the input
# --------------------------------------------------------------------------
def positional_encoding(seq_len: int, d_model: int) -> np.ndarray:
    """Sinusoidal positional encoding of "Attention Is All You Need".

    ``PE[pos, 2i] = sin(pos / 10000**(2i / d_model))`` and
    ``PE[pos, 2i+1] = cos(pos / 10000**(2i / d_model))``.

    Parameters
    ----------
    seq_len : int
        Number of positions ``T``.
    d_model : int
        Embedding size; odd sizes get one more sine column than cosine.

    Returns
    -------
    PE : ndarray of shape (seq_len, d_model)
    """
    seq_len = _check_positive_int(seq_len, "seq_len")
    d_model = _check_positive_int(d_model, "d_model")
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
    """Glorot/Xavier-uniform weight matrix.

    Entries are drawn from ``U(-a, a)`` with ``a = sqrt(6 / (d_in + d_out))``,
    which keeps the variance of ``X @ W`` close to that of ``X``.

    Parameters
    ----------
    d_in, d_out : int
        Input and output sizes.
    rng : numpy.random.Generator
        Source of randomness, so that results are reproducible.

    Returns
    -------
    W : ndarray of shape (d_in, d_out)
    """
    d_in = _check_positive_int(d_in, "d_in")
    d_out = _check_positive_int(d_out, "d_out")
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
    """Project the input to queries, keys and values: ``Q = X @ W_q`` etc.

    Parameters
    ----------
    X : ndarray of shape (..., T, d_model)
    W_q, W_k, W_v : ndarray of shape (d_model, d_model)

    Returns
    -------
    Q, K, V : ndarray of shape (..., T, d_model)
    """
    X = _as_array(X, "X")
    _check_min_ndim(X, 2, "X", "(..., T, d_model)")
    d_model = X.shape[-1]
    Ws = [_check_weight(W, d_model, n) for W, n in ((W_q, "W_q"), (W_k, "W_k"), (W_v, "W_v"))]
    return tuple(X @ W for W in Ws)


# --------------------------------------------------------------------------
# step 4: heads
# --------------------------------------------------------------------------
def split_heads(M, n_heads: int) -> np.ndarray:
    """Split the last axis into ``n_heads`` heads of size ``d_k = d_model // n_heads``.

    The head at index ``i`` of the head axis gets the columns
    ``i*d_k:(i+1)*d_k``. The head axis is moved in front of the token axis so
    that each head is a ``(T, d_k)`` matrix; :func:`merge_heads` undoes this.

    Parameters
    ----------
    M : ndarray of shape (..., T, d_model)
    n_heads : int
        Must divide ``d_model``.

    Returns
    -------
    H : ndarray of shape (..., n_heads, T, d_k)
    """
    M = _as_array(M, "M")
    _check_min_ndim(M, 2, "M", "(..., T, d_model)")
    h = _check_positive_int(n_heads, "n_heads")
    *lead, T, d_model = M.shape
    if d_model % h:
        raise ValueError(f"n_heads must divide d_model, but got d_model={d_model} and n_heads={h}.")
    d_k = d_model // h
    return M.reshape(*lead, T, h, d_k).swapaxes(-2, -3)  # (..., h, T, d_k)


def merge_heads(H) -> np.ndarray:
    """Concatenate the heads back along the last axis; undoes :func:`split_heads`.

    Parameters
    ----------
    H : ndarray of shape (..., h, T, d_k)

    Returns
    -------
    M : ndarray of shape (..., T, h * d_k)
        The head at index ``i`` fills the columns ``i*d_k:(i+1)*d_k``.
    """
    H = _as_array(H, "H")
    _check_min_ndim(H, 3, "H", "(..., h, T, d_k)")
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
    """Scaled dot-product scores ``Z = Q @ K.T / sqrt(d_k)``.

    Dividing by ``sqrt(d_k)`` (the per-head key size, not the sequence
    length) keeps the scores' variance near 1 whatever ``d_k`` is, so the
    softmax does not saturate.

    Parameters
    ----------
    Q : ndarray of shape (..., T_q, d_k)
    K : ndarray of shape (..., T_k, d_k)

    Returns
    -------
    Z : ndarray of shape (..., T_q, T_k)
    """
    Q = _as_array(Q, "Q")
    K = _as_array(K, "K")
    _check_min_ndim(Q, 2, "Q", "(..., T_q, d_k)")
    _check_min_ndim(K, 2, "K", "(..., T_k, d_k)")
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
    """Additive causal mask: query ``i`` may only look at keys ``j <= i``.

    Parameters
    ----------
    seq_len : int

    Returns
    -------
    M : ndarray of shape (seq_len, seq_len)
        ``0`` where ``j <= i`` and ``-inf`` where ``j > i`` (strictly above
        the diagonal). It is added to the scores, never to K.
    """
    T = _check_positive_int(seq_len, "seq_len")
    i = np.arange(T)[:, None]  # (T, 1) query index
    j = np.arange(T)[None, :]  # (1, T) key index
    return np.where(j > i, -np.inf, 0.0)


def padding_mask(lengths, seq_len: int) -> np.ndarray:
    """Additive padding mask that hides the key positions past each length.

    Parameters
    ----------
    lengths : int or array of int
        Number of real (non-padding) tokens of each sequence, ``0 <= length <= seq_len``.
    seq_len : int

    Returns
    -------
    M : ndarray of shape lengths.shape + (1, seq_len)
        ``0`` for key positions ``< length`` and ``-inf`` beyond. The
        axis of size 1 stands for the queries, so the mask broadcasts
        against scores ``(..., T_q, T_k)`` and blocks keys, not queries.
    """
    T = _check_positive_int(seq_len, "seq_len")
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
    """Numerically stable softmax along ``axis`` (by default the rows).

    ``softmax(z)_j = exp(z_j - max z) / sum_k exp(z_k - max z)``: subtracting
    the maximum changes nothing mathematically but keeps ``exp`` from
    overflowing. A row that is entirely ``-inf`` (every key masked) gives
    zeros, with no NaN and no warning.

    Parameters
    ----------
    Z : ndarray of shape (..., T_q, T_k)
    axis : int, default=-1

    Returns
    -------
    A : ndarray of the same shape as Z
        Each slice along ``axis`` sums to 1 (or is all zeros).
    """
    Z = _as_array(Z, "Z")
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
    """Scaled dot-product attention: ``softmax(Q @ K.T / sqrt(d_k) + M) @ V``.

    Parameters
    ----------
    Q : ndarray of shape (..., T_q, d_k)
    K : ndarray of shape (..., T_k, d_k)
    V : ndarray of shape (..., T_k, d_v)
    mask : ndarray broadcastable to (..., T_q, T_k), optional
        Additive mask (0 or -inf), added to the scores before the softmax.

    Returns
    -------
    output : ndarray of shape (..., T_q, d_v)
    weights : ndarray of shape (..., T_q, T_k)
        The attention matrix; each row sums to 1.
    """
    Z = attention_scores(Q, K)  # (..., T_q, T_k)
    V = _as_array(V, "V")
    _check_min_ndim(V, 2, "V", "(..., T_k, d_v)")
    if V.shape[-2] != Z.shape[-1]:
        raise ValueError(
            f"V must have one row per key, shape (..., {Z.shape[-1]}, d_v), "
            f"but got V of shape {V.shape}."
        )
    if mask is not None:
        Z += _check_mask(mask, Z.shape)
    A = _softmax_inplace(Z)  # (..., T_q, T_k)
    return A @ V, A


def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads: int, mask=None):
    """Multi-head self-attention of "Attention Is All You Need".

    Projects ``X`` to Q, K, V, splits them into ``n_heads`` heads, runs
    :func:`attention_head` on every head at once, concatenates the heads and
    projects the result with ``W_o``.

    Parameters
    ----------
    X : ndarray of shape (..., T, d_model)
    W_q, W_k, W_v, W_o : ndarray of shape (d_model, d_model)
    n_heads : int
        Must divide ``d_model``.
    mask : ndarray of shape (..., T, T) or (..., h, T, T), optional
        Additive mask. With at most as many axes as ``X`` it has no head axis
        and is the same for every head; with one axis more, its axis -3 is the
        head axis (size 1 or ``n_heads``). See :func:`heads_mask`.

    Returns
    -------
    output : ndarray of shape (..., T, d_model)
    weights : ndarray of shape (..., n_heads, T, T)
    """
    Q, K, V = project_qkv(X, W_q, W_k, W_v)  # (..., T, d_model) each
    W_o = _check_weight(W_o, Q.shape[-1], "W_o")
    # split_heads returns strided views; contiguous copies (cheap: T*d_model
    # each) make the batched products below markedly faster.
    Qh = np.ascontiguousarray(split_heads(Q, n_heads))  # (..., h, T, d_k)
    Kh = np.ascontiguousarray(split_heads(K, n_heads))  # (..., h, T, d_k)
    Vh = np.ascontiguousarray(split_heads(V, n_heads))  # (..., h, T, d_k)
    mask = heads_mask(mask, Q.ndim, Qh.shape[-3])  # (..., 1 or h, T, T)
    out, A = attention_head(Qh, Kh, Vh, mask)  # (..., h, T, d_k), (..., h, T, T)
    return merge_heads(out) @ W_o, A  # (..., T, d_model), (..., h, T, T)


# --------------------------------------------------------------------------
# beyond the nine steps (capstone): multi-query attention
# --------------------------------------------------------------------------
def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads: int, mask=None):
    """Multi-query attention: every head has its own queries but shares one K and V.

    Parameters
    ----------
    X : ndarray of shape (..., T, d_model)
    W_q, W_o : ndarray of shape (d_model, d_model)
    W_k, W_v : ndarray of shape (d_model, d_k)
        One key and one value projection for all heads, ``d_k = d_model // n_heads``.
    n_heads : int
    mask : ndarray of shape (..., T, T) or (..., h, T, T), optional
        Additive mask. With at most as many axes as ``X`` it has no head axis
        and is the same for every head; with one axis more, its axis -3 is the
        head axis (size 1 or ``n_heads``). See :func:`heads_mask`.

    Returns
    -------
    output : ndarray of shape (..., T, d_model)
    weights : ndarray of shape (..., n_heads, T, T)
    """
    X = _as_array(X, "X")
    _check_min_ndim(X, 2, "X", "(..., T, d_model)")
    d_model = X.shape[-1]
    W_q = _check_weight(W_q, d_model, "W_q")
    Qh = split_heads(X @ W_q, n_heads)  # (..., h, T, d_k)
    d_k = Qh.shape[-1]
    W_k = _check_weight(W_k, d_model, "W_k")
    W_v = _check_weight(W_v, d_model, "W_v")
    if W_k.shape[1] != d_k:
        raise ValueError(
            f"W_k must have shape ({d_model}, {d_k}) (one shared head of size d_k), "
            f"but got an array of shape {W_k.shape}."
        )
    K = (X @ W_k)[..., None, :, :]  # (..., 1, T, d_k): broadcast over the heads
    V = (X @ W_v)[..., None, :, :]  # (..., 1, T, d_v)
    W_o = _check_weight(W_o, d_model, "W_o")
    mask = heads_mask(mask, X.ndim, Qh.shape[-3])  # (..., 1 or h, T, T)
    out, A = attention_head(Qh, K, V, mask)  # (..., h, T, d_v), (..., h, T, T)
    return merge_heads(out) @ W_o, A


def kv_cache_size(seq_len: int, d_model: int, n_heads: int, multi_query: bool = False) -> int:
    """How many numbers a decoder caches for K and V, per sequence and layer.

    Multi-head attention caches K and V for every head: ``2 * seq_len * d_model``.
    Multi-query attention caches one shared head: ``2 * seq_len * d_k``, that is
    ``n_heads`` times less.
    """
    seq_len = _check_positive_int(seq_len, "seq_len")
    d_model = _check_positive_int(d_model, "d_model")
    h = _check_positive_int(n_heads, "n_heads")
    if d_model % h:
        raise ValueError(f"n_heads must divide d_model, but got d_model={d_model} and n_heads={h}.")
    return 2 * seq_len * (d_model // h if multi_query else d_model)


# --------------------------------------------------------------------------
# beyond the nine steps: the extensions (contract: ../shared/EXTENSIONS.md)
# --------------------------------------------------------------------------
def _heads_for(d_model: int, n_heads) -> tuple[int, int]:
    h = _check_positive_int(n_heads, "n_heads")
    if d_model % h:
        raise ValueError(f"n_heads must divide d_model, but got d_model={d_model} and n_heads={h}.")
    return h, d_model // h


def heads_mask(mask, x_ndim: int, n_heads: int):
    """A layer's additive mask, ready to add to the scores of all heads.

    One rule for every layer (multi-head, multi-query, grouped-query and
    cross-attention, forward and backward): the mask's leading axes are told
    apart by the input's batch axes. For ``X`` of shape ``(..., T_q, d_model)``
    with ``x_ndim`` axes:

    * a mask with at most ``x_ndim`` axes, ``(..., T_q, T_k)``, has no head
      axis: it is shared by every head and gets one, ``(..., 1, T_q, T_k)``;
    * a mask with ``x_ndim + 1`` axes, ``(..., h, T_q, T_k)``, carries its head
      axis at ``-3``, of size 1 or ``n_heads`` (a per-head additive bias);
    * a mask with more axes fits neither form and is refused.

    Parameters
    ----------
    mask : array_like of shape (..., T_q, T_k) or (..., h, T_q, T_k), or None
        Additive (0 where allowed, -inf where blocked, or any bias).
    x_ndim : int
        The number of axes of the layer's input, batch axes and ``(T, d_model)``
        (for cross-attention, the larger of ``X``'s and ``C``'s).
    n_heads : int
        The number of heads of the scores (query heads), ``h``.

    Returns
    -------
    mask : ndarray of shape (..., 1 or h, T_q, T_k), or None
        None for no mask; a mask of fewer than 3 axes is returned as it is
        (it broadcasts over the heads already).

    Raises
    ------
    ValueError
        If the mask has more than ``x_ndim + 1`` axes, or a head axis of
        another size than 1 or ``n_heads``.
    """
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.ndim > x_ndim + 1:
        raise ValueError(
            f"mask must have at most {x_ndim + 1} axes for an input with {x_ndim}: "
            f"(..., T_q, T_k) without a head axis, or (..., n_heads, T_q, T_k) with one, "
            f"but got a mask of shape {mask.shape}."
        )
    if mask.ndim == x_ndim + 1:  # (..., h, T_q, T_k): the head axis is axis -3
        if mask.shape[-3] not in (1, n_heads):
            raise ValueError(
                f"mask has one axis more than the input ({x_ndim}), so its axis -3 is the "
                f"head axis and must have size 1 or n_heads={n_heads}, "
                f"but got a mask of shape {mask.shape}."
            )
        return mask
    if mask.ndim > 2:
        return np.expand_dims(mask, -3)  # (..., 1, T_q, T_k): the same for every head
    return mask  # (T_q, T_k), (T_k,) or a scalar: broadcasts over the heads as it is


def rotary_embedding(X, positions=None, base: float = 10000.0) -> np.ndarray:
    """Rotary position embedding (RoPE), the interleaved RoFormer convention.

    Each pair ``(x[2i], x[2i+1])`` of a token at position ``p`` is rotated
    counter-clockwise by the angle ``p * theta_i``, ``theta_i = base**(-2i/d)``:
    ``out[2i] = x[2i] cos - x[2i+1] sin`` and ``out[2i+1] = x[2i] sin + x[2i+1] cos``.
    The dot product of two rotated vectors then depends on their positions only
    through ``m - n``.

    Parameters
    ----------
    X : ndarray of shape (..., T, d)
        ``d`` must be even.
    positions : int ndarray broadcastable to (..., T), optional
        Each token's position; ``arange(T)`` by default.
    base : float
        Positive; 10000 in RoFormer.

    Returns
    -------
    out : ndarray of shape (..., T, d)
    """
    X = _as_array(X, "X")
    _check_min_ndim(X, 2, "X", "(..., T, d)")
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
    """Grouped-query attention: ``n_heads`` query heads share ``n_kv_heads`` K/V heads.

    Query head ``i`` reads K/V head ``i // (n_heads // n_kv_heads)``: consecutive
    query heads share one. ``n_kv_heads = n_heads`` is multi-head attention,
    ``n_kv_heads = 1`` multi-query attention.

    Parameters
    ----------
    X : ndarray of shape (..., T, d_model)
    W_q, W_o : ndarray of shape (d_model, d_model)
    W_k, W_v : ndarray of shape (d_model, n_kv_heads * d_k)
        K/V head ``j`` owns the columns ``j*d_k:(j+1)*d_k``.
    n_heads : int
        Must divide ``d_model``.
    n_kv_heads : int
        Must divide ``n_heads``.
    mask : ndarray of shape (..., T, T) or (..., h, T, T), optional
        Additive mask. With at most as many axes as ``X`` it has no head axis
        and is the same for every head; with one axis more, its axis -3 is the
        head axis (size 1 or ``n_heads``, the query heads). See :func:`heads_mask`.

    Returns
    -------
    output : ndarray of shape (..., T, d_model)
    weights : ndarray of shape (..., n_heads, T, T)
    """
    X = _as_array(X, "X")
    _check_min_ndim(X, 2, "X", "(..., T, d_model)")
    d_model = X.shape[-1]
    h, d_k = _heads_for(d_model, n_heads)
    kv = _check_positive_int(n_kv_heads, "n_kv_heads")
    if h % kv:
        raise ValueError(
            f"n_kv_heads must divide n_heads, but got n_heads={h} and n_kv_heads={kv}."
        )
    W_q = _check_weight(W_q, d_model, "W_q")
    W_o = _check_weight(W_o, d_model, "W_o")
    W_k, W_v = _check_weight(W_k, d_model, "W_k"), _check_weight(W_v, d_model, "W_v")
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
    """One step of autoregressive decoding with a KV cache.

    The new token's key and value are appended to the cache (new arrays: the
    cache passed in is not modified); its query attends to every cached
    position and to itself. Fed a sequence token by token, the outputs are the
    rows of causal multi-head self-attention over the whole sequence.

    Parameters
    ----------
    x : ndarray of shape (..., d_model)
        One new token, without a token axis.
    cache : tuple (K, V) of ndarrays of shape (..., n_heads, t, d_k), or None
        What the previous call returned; None for the first token.
    W_q, W_k, W_v, W_o : ndarray of shape (d_model, d_model)
    n_heads : int

    Returns
    -------
    y : ndarray of shape (..., d_model)
    cache : tuple (K', V') of ndarrays of shape (..., n_heads, t + 1, d_k)
        ``K'`` equals ``split_heads(X[..., :t+1, :] @ W_k, n_heads)``.
    """
    x = _as_array(x, "x")
    _check_min_ndim(x, 1, "x", "(..., d_model)")
    d_model = x.shape[-1]
    h, d_k = _heads_for(d_model, n_heads)
    W_q, W_k, W_v, W_o = (
        _check_weight(W, d_model, n)
        for W, n in ((W_q, "W_q"), (W_k, "W_k"), (W_v, "W_v"), (W_o, "W_o"))
    )
    row = x[..., None, :]  # (..., 1, d_model): a sequence of one token
    q, k, v = (split_heads(row @ W, h) for W in (W_q, W_k, W_v))  # (..., h, 1, d_k) each
    if cache is None:
        K, V = k, v
    else:
        K_old, V_old = (_as_array(c, n) for c, n in zip(cache, ("cache K", "cache V"), strict=True))
        want = (*x.shape[:-1], h)
        for name, c in (("cache K", K_old), ("cache V", V_old)):
            if c.ndim != len(want) + 2 or c.shape[:-2] != want or c.shape[-1] != d_k:
                raise ValueError(f"{name} must have shape {(*want, 't', d_k)}, but got {c.shape}.")
        K = np.concatenate([K_old, k], axis=-2)  # (..., h, t+1, d_k), a new array
        V = np.concatenate([V_old, v], axis=-2)
    out, _ = attention_head(q, K, V)  # (..., h, 1, d_k): no mask, all positions are past
    return merge_heads(out)[..., 0, :] @ W_o, (K, V)


def tiled_attention(Q, K, V, block_size: int, causal: bool = False) -> np.ndarray:
    """Attention computed block by block over the keys, with an online softmax.

    FlashAttention's idea in numpy: for each block of keys, the scores of every
    query against that block only; a running maximum ``m`` and running sum ``l``
    per query row are rescaled by ``exp(m_old - m_new)`` whenever the maximum
    grows, so the full ``(T_q, T_k)`` matrix is never built.

    Parameters
    ----------
    Q : ndarray of shape (..., T_q, d_k)
    K : ndarray of shape (..., T_k, d_k)
    V : ndarray of shape (..., T_k, d_v)
    block_size : int
        Keys per block (at least 1); the last block may be shorter.
    causal : bool
        Mask the future (needs ``T_q == T_k``), as with ``causal_mask(T)``.

    Returns
    -------
    output : ndarray of shape (..., T_q, d_v)
        Equal to ``attention_head(Q, K, V, mask)[0]``.
    """
    Q, K, V = _as_array(Q, "Q"), _as_array(K, "K"), _as_array(V, "V")
    for M, n, shape in (
        (Q, "Q", "(..., T_q, d_k)"),
        (K, "K", "(..., T_k, d_k)"),
        (V, "V", "(..., T_k, d_v)"),
    ):
        _check_min_ndim(M, 2, n, shape)
    b = _check_positive_int(block_size, "block_size")
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
    """Multi-head cross-attention: queries from ``X``, keys and values from ``C``.

    Parameters
    ----------
    X : ndarray of shape (..., T_q, d_model)
        The sequence that asks (e.g. the decoder's tokens).
    C : ndarray of shape (..., T_k, d_model)
        The sequence that is read (e.g. the encoder's output, the "memory").
    W_q, W_k, W_v, W_o : ndarray of shape (d_model, d_model)
    n_heads : int
        Must divide ``d_model``.
    mask : ndarray of shape (..., T_q, T_k) or (..., h, T_q, T_k), optional
        Additive mask. With at most as many axes as ``X`` (or ``C``, whichever
        has more) it has no head axis and is the same for every head; with one
        axis more, its axis -3 is the head axis (size 1 or ``n_heads``). See
        :func:`heads_mask`.

    Returns
    -------
    output : ndarray of shape (..., T_q, d_model)
    weights : ndarray of shape (..., n_heads, T_q, T_k)
    """
    X, C = _as_array(X, "X"), _as_array(C, "C")
    _check_min_ndim(X, 2, "X", "(..., T_q, d_model)")
    _check_min_ndim(C, 2, "C", "(..., T_k, d_model)")
    d_model = X.shape[-1]
    if C.shape[-1] != d_model:
        raise ValueError(
            f"C must have shape (..., T_k, {d_model}) like X's last axis, but got {C.shape}."
        )
    h, _ = _heads_for(d_model, n_heads)
    W_q, W_k, W_v, W_o = (
        _check_weight(W, d_model, n)
        for W, n in ((W_q, "W_q"), (W_k, "W_k"), (W_v, "W_v"), (W_o, "W_o"))
    )
    Qh = split_heads(X @ W_q, h)  # (..., h, T_q, d_k)
    Kh = split_heads(C @ W_k, h)  # (..., h, T_k, d_k)
    Vh = split_heads(C @ W_v, h)  # (..., h, T_k, d_k)
    mask = heads_mask(mask, max(X.ndim, C.ndim), h)  # (..., 1 or h, T_q, T_k)
    out, A = attention_head(Qh, Kh, Vh, mask)  # (..., h, T_q, d_k)
    return merge_heads(out) @ W_o, A  # (..., T_q, d_model), (..., h, T_q, T_k)


def sliding_window_mask(seq_len: int, window: int) -> np.ndarray:
    """Causal sliding-window mask: query ``i`` sees itself and the ``window - 1`` before it.

    Parameters
    ----------
    seq_len : int
    window : int
        At least 1; ``window >= seq_len`` gives ``causal_mask(seq_len)``.

    Returns
    -------
    mask : ndarray of shape (seq_len, seq_len)
        ``0.0`` where ``i - window < j <= i``, ``-inf`` elsewhere.
    """
    T = _check_positive_int(seq_len, "seq_len")
    w = _check_positive_int(window, "window")
    i = np.arange(T)[:, None]  # (T, 1): queries
    j = np.arange(T)[None, :]  # (1, T): keys
    return np.where((j <= i) & (j > i - w), 0.0, -np.inf)


# --------------------------------------------------------------------------
# after the extensions: the backward pass (LEARNING.md)
# --------------------------------------------------------------------------
def _unbroadcast(g: np.ndarray, shape: tuple) -> np.ndarray:
    """``g`` summed over the axes along which an array of ``shape`` was broadcast to it."""
    extra = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(extra))) if extra > 0 else g
    ones = tuple(k for k, n in enumerate(shape) if n == 1 and g.shape[k] != 1)
    return g.sum(axis=ones, keepdims=True) if ones else g


def softmax_backward(A, dA, axis: int = -1) -> np.ndarray:
    """The gradient with respect to the scores ``Z``, given ``A = softmax(Z, axis)`` and ``dA``.

    ``dZ = A * (dA - sum(dA * A, axis, keepdims=True))``: the Jacobian of the
    softmax, ``diag(a) - a aᵀ`` for each slice ``a``, applied to ``dA``
    without building it. A fully masked row (all-zero ``A``) gives a zero row.

    Parameters
    ----------
    A : ndarray of shape (..., T_q, T_k)
        The softmax's output.
    dA : ndarray of the same shape as A
        The gradient of a loss with respect to ``A``.
    axis : int, default=-1
        The axis the softmax normalised.

    Returns
    -------
    dZ : ndarray of the same shape as A
    """
    A, dA = _as_array(A, "A"), _as_array(dA, "dA")
    if A.shape != dA.shape:
        raise ValueError(f"dA must have the shape of A, {A.shape}, but got shape {dA.shape}.")
    if A.ndim == 0:
        raise ValueError("A must have at least one axis, but got a scalar.")
    if not -A.ndim <= axis < A.ndim:
        raise ValueError(
            f"axis must lie in [-{A.ndim}, {A.ndim}) for A of shape {A.shape}, but got {axis}."
        )
    return A * (dA - (dA * A).sum(axis=axis, keepdims=True))


def attention_head_backward(Q, K, V, dOut, mask=None):
    """The gradients of one head, ``output = softmax(Q·Kᵀ/√d_k + mask)·V``, from ``dOut``.

    Forward again (``Z``, ``A``), then backward through ``A @ V``, the softmax
    (:func:`softmax_backward`), the mask (a blocked position has ``A = 0``,
    so no gradient passes it) and the scale ``1/√d_k``.

    Parameters
    ----------
    Q : ndarray of shape (..., T_q, d_k)
    K : ndarray of shape (..., T_k, d_k)
    V : ndarray of shape (..., T_k, d_v)
    dOut : ndarray of shape (..., T_q, d_v)
        The gradient of a loss with respect to the output.
    mask : ndarray broadcastable to (..., T_q, T_k), optional
        Additive mask (0 or -inf), with or without the head axis of Q.

    Returns
    -------
    dQ : ndarray of the shape of Q
    dK : ndarray of the shape of K
    dV : ndarray of the shape of V
        Each summed over the axes along which its input was broadcast.
    """
    Q, K, V = _as_array(Q, "Q"), _as_array(K, "K"), _as_array(V, "V")
    out, A = attention_head(Q, K, V, mask)  # (..., T_q, d_v), (..., T_q, T_k)
    dOut = _as_array(dOut, "dOut")
    if dOut.shape != out.shape:
        raise ValueError(
            f"dOut must have the shape of the output, {out.shape}, but got shape {dOut.shape}."
        )
    scale = np.sqrt(Q.shape[-1])
    dV = A.swapaxes(-1, -2) @ dOut  # (..., T_k, d_v)
    dZ = softmax_backward(A, dOut @ V.swapaxes(-1, -2)) / scale  # (..., T_q, T_k)
    dQ = dZ @ K  # (..., T_q, d_k)
    dK = dZ.swapaxes(-1, -2) @ Q  # (..., T_k, d_k)
    return _unbroadcast(dQ, Q.shape), _unbroadcast(dK, K.shape), _unbroadcast(dV, V.shape)


def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads: int, dOut, mask=None):
    """The gradients of :func:`multi_head_self_attention`'s output with respect to X and weights.

    Backward through ``W_o``, :func:`merge_heads` (its inverse is
    :func:`split_heads`), every head (:func:`attention_head_backward`),
    :func:`split_heads` (inverse :func:`merge_heads`) and the three projections.

    Parameters
    ----------
    X : ndarray of shape (..., T, d_model)
    W_q, W_k, W_v, W_o : ndarray of shape (d_model, d_model)
    n_heads : int
        Must divide ``d_model``.
    dOut : ndarray of shape (..., T, d_model)
        The gradient of a loss with respect to the layer's output.
    mask : ndarray of shape (..., T, T) or (..., h, T, T), optional
        The forward pass's additive mask, by the forward's rule
        (:func:`heads_mask`): a head axis at -3 only if it has one axis more than ``X``.

    Returns
    -------
    dX : ndarray of shape (..., T, d_model)
    grads : tuple of 4 ndarrays of shape (d_model, d_model)
        ``(dW_q, dW_k, dW_v, dW_o)``, summed over the leading batch axes.
    """
    Q, K, V = project_qkv(X, W_q, W_k, W_v)  # (..., T, d_model) each
    X = _as_array(X, "X")
    W_o = _check_weight(W_o, Q.shape[-1], "W_o")
    d_model = X.shape[-1]
    h, _ = _heads_for(d_model, n_heads)
    dOut = _as_array(dOut, "dOut")
    if dOut.shape != Q.shape:
        raise ValueError(
            f"dOut must have the shape of the output, {Q.shape}, but got shape {dOut.shape}."
        )
    Qh, Kh, Vh = (split_heads(M, h) for M in (Q, K, V))  # (..., h, T, d_k) each
    mask = heads_mask(mask, X.ndim, h)  # (..., 1 or h, T, T)
    heads, _ = attention_head(Qh, Kh, Vh, mask)  # (..., h, T, d_k)
    merged = merge_heads(heads)  # (..., T, d_model)
    dMerged = dOut @ W_o.T  # (..., T, d_model)
    dQh, dKh, dVh = attention_head_backward(Qh, Kh, Vh, split_heads(dMerged, h), mask)
    dQ, dK, dV = (merge_heads(G) for G in (dQh, dKh, dVh))  # (..., T, d_model) each

    def total(A, B):  # Aᵀ·B summed over every leading axis: (d_model, d_model)
        return A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])

    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T  # (..., T, d_model)
    return dX, (total(X, dQ), total(X, dK), total(X, dV), total(merged, dOut))
