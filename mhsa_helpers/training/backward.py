"""The model's backward pass, written by hand, and its check by central differences.

Backward through the readout, the residual connection, the attention layer
(``attention_backward``, the reference's :func:`multi_head_self_attention_backward`
by default, the learner's in the training notebook) and the embeddings.
"""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from .model import N_HEADS, Activations, AttentionFn, cross_entropy, forward

__all__ = [
    "backward",
    "cross_entropy_backward",
    "embedding_backward",
    "loss_and_grads",
    "numerical_grads",
    "readout_backward",
]


def cross_entropy_backward(logits, y) -> np.ndarray:
    """The gradient of :func:`cross_entropy` with respect to the logits.

    ``(softmax(logits) - onehot(y)) / N``, with ``N`` the number of positions.

    Parameters
    ----------
    logits : ndarray of shape (..., T, V)
    y : int ndarray of shape (..., T)

    Returns
    -------
    dlogits : ndarray of shape (..., T, V)
    """
    probs = ref.softmax(logits)  # (..., T, V)
    y = np.asarray(y)
    np.put_along_axis(
        probs, y[..., None], np.take_along_axis(probs, y[..., None], axis=-1) - 1.0, axis=-1
    )
    return probs / y.size


def readout_backward(H, W_u, dlogits) -> tuple:
    """Backward through ``logits = H @ W_u + b_u``.

    Parameters
    ----------
    H : ndarray of shape (..., T, d_model)
    W_u : ndarray of shape (d_model, V)
    dlogits : ndarray of shape (..., T, V)

    Returns
    -------
    dH : ndarray of shape (..., T, d_model)
    dW_u : ndarray of shape (d_model, V)
        Summed over every sequence and position.
    db_u : ndarray of shape (V,)
    """
    H2 = H.reshape(-1, H.shape[-1])  # (N, d_model): every position of every sequence
    d2 = dlogits.reshape(-1, dlogits.shape[-1])  # (N, V)
    return dlogits @ W_u.T, H2.T @ d2, d2.sum(axis=0)


def embedding_backward(x, dX, vocab_size: int) -> tuple:
    """Backward through ``X = E[x] + P``: each token's rows of ``dX`` added into its row of ``dE``.

    Parameters
    ----------
    x : int ndarray of shape (..., T)
    dX : ndarray of shape (..., T, d_model)
    vocab_size : int

    Returns
    -------
    dE : ndarray of shape (vocab_size, d_model)
    dP : ndarray of shape (T, d_model)
        Summed over the sequences.
    """
    T, d_model = dX.shape[-2:]
    dE = np.zeros((vocab_size, d_model))
    np.add.at(dE, np.asarray(x).ravel(), dX.reshape(-1, d_model))  # (N,) ids, (N, d_model) rows
    dP = dX.reshape(-1, T, d_model).sum(axis=0)  # (B, T, d_model) summed over B
    return dE, dP


def backward(
    params: dict,
    x,
    acts: Activations,
    dlogits,
    n_heads: int = N_HEADS,
    attention_backward: AttentionFn = ref.multi_head_self_attention_backward,
    mask=None,
) -> dict:
    """The gradient of the loss with respect to every parameter.

    Backward through the readout (:func:`readout_backward`), the residual
    connection (``dX`` gets ``dH`` directly and again through the layer), the
    attention layer (``attention_backward``) and the embeddings
    (:func:`embedding_backward`).

    Parameters
    ----------
    params : dict
    x : int ndarray of shape (..., T)
    acts : Activations
        The forward pass on ``x``.
    dlogits : ndarray of shape (..., T, V)
    n_heads : int
    attention_backward : callable
        ``attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask) ->
        (dX, (dW_q, dW_k, dW_v, dW_o))``, by default the reference's
        :func:`multi_head_self_attention_backward`.
    mask : ndarray broadcastable to (..., T, T), optional

    Returns
    -------
    grads : dict of ndarray
        One per parameter, each of its parameter's shape.
    """
    dH, dW_u, db_u = readout_backward(acts.H, params["W_u"], dlogits)
    W = (params["W_q"], params["W_k"], params["W_v"], params["W_o"])
    dX_layer, dW = attention_backward(acts.X, *W, n_heads, dH, mask)
    dX = dH + np.asarray(dX_layer)  # (..., T, d_model): the residual path and the layer's
    dE, dP = embedding_backward(x, dX, params["E"].shape[0])
    grads = {"E": dE, "P": dP, "W_u": dW_u, "b_u": db_u}
    grads.update({n: np.asarray(g) for n, g in zip(("W_q", "W_k", "W_v", "W_o"), dW, strict=True)})
    return grads


def loss_and_grads(
    params: dict,
    x,
    y,
    n_heads: int = N_HEADS,
    attention: AttentionFn = ref.multi_head_self_attention,
    attention_backward: AttentionFn = ref.multi_head_self_attention_backward,
    mask=None,
) -> tuple:
    """The loss on ``(x, y)`` and its gradient with respect to every parameter.

    Returns
    -------
    loss : float
    grads : dict of ndarray
    """
    acts = forward(params, x, n_heads, attention, mask)
    dlogits = cross_entropy_backward(acts.logits, y)
    grads = backward(params, x, acts, dlogits, n_heads, attention_backward, mask)
    return cross_entropy(acts.logits, y), grads


def numerical_grads(
    params: dict,
    x,
    y,
    n_heads: int = N_HEADS,
    attention: AttentionFn = ref.multi_head_self_attention,
    mask=None,
    eps: float = 1e-6,
) -> dict:
    """The loss's gradient by central differences, one parameter entry at a time.

    ``(L(p + eps) - L(p - eps)) / (2 eps)`` for every entry ``p``: slow (two
    forward passes per entry), for checking :func:`backward` on a tiny model.

    Returns
    -------
    grads : dict of ndarray
        One per parameter, each of its parameter's shape.
    """
    grads = {}
    for name, p in params.items():
        g = np.zeros_like(p)
        flat, gflat = p.reshape(-1), g.reshape(-1)  # views: writing them writes p and g
        for k in range(flat.size):
            old = flat[k]
            flat[k] = old + eps
            up = cross_entropy(forward(params, x, n_heads, attention, mask).logits, y)
            flat[k] = old - eps
            down = cross_entropy(forward(params, x, n_heads, attention, mask).logits, y)
            flat[k] = old
            gflat[k] = (up - down) / (2 * eps)
        grads[name] = g
    return grads
