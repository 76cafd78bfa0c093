"""The reference of the backward pass (notebook 17): gradients of the softmax, a head, the layer.

Each exercise function's docstring here says only how it computes; its
contract (the meaning, the parameters and returns with their shapes) is
written once in ``mhsa_helpers/exercises.toml`` and put in front of it when
:mod:`mhsa_helpers.reference` is imported, so ``help()`` shows both.
"""

from __future__ import annotations

import numpy as np

from .inputs import as_array, check_weight, heads_for, heads_mask
from .steps import attention_head, merge_heads, project_qkv, split_heads

__all__ = [
    "attention_head_backward",
    "multi_head_self_attention_backward",
    "softmax_backward",
]


def _unbroadcast(g: np.ndarray, shape: tuple) -> np.ndarray:
    """``g`` summed over the axes along which an array of ``shape`` was broadcast to it."""
    extra = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(extra))) if extra > 0 else g
    ones = tuple(k for k, n in enumerate(shape) if n == 1 and g.shape[k] != 1)
    return g.sum(axis=ones, keepdims=True) if ones else g


def softmax_backward(A, dA, axis: int = -1) -> np.ndarray:
    """The Jacobian of the softmax, ``diag(a) - a aᵀ`` for each slice ``a``,
    applied to ``dA`` without building it.
    """
    A, dA = as_array(A, "A"), as_array(dA, "dA")
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
    """Forward again (``Z``, ``A``), then backward through ``A @ V``, the softmax
    (:func:`softmax_backward`), the mask (a blocked position has ``A = 0``,
    so no gradient passes it) and the scale ``1/√d_k``. Each gradient is summed
    over the axes along which its input was broadcast.
    """
    Q, K, V = as_array(Q, "Q"), as_array(K, "K"), as_array(V, "V")
    out, A = attention_head(Q, K, V, mask)  # (..., T_q, d_v), (..., T_q, T_k)
    dOut = as_array(dOut, "dOut")
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
    """Backward through ``W_o``, :func:`merge_heads` (its inverse is
    :func:`split_heads`), every head (:func:`attention_head_backward`),
    :func:`split_heads` (inverse :func:`merge_heads`) and the three projections.
    """
    Q, K, V = project_qkv(X, W_q, W_k, W_v)  # (..., T, d_model) each
    X = as_array(X, "X")
    W_o = check_weight(W_o, Q.shape[-1], "W_o")
    d_model = X.shape[-1]
    h, _ = heads_for(d_model, n_heads)
    dOut = as_array(dOut, "dOut")
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
