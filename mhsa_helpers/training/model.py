"""The model: its parameters, its forward pass and its loss (the cross-entropy).

``X = E[x] + P``, one multi-head self-attention layer with a residual
connection, and a linear readout: ``logits = (X + out) @ W_u + b_u``. ``P``
starts as the course's sinusoidal encoding (step 1) and is learned with the
rest. The attention layer is a parameter (``attention``), the reference's by
default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .. import reference as ref
from .task import SEED, SEQ_LEN, VOCAB

__all__ = [
    "D_MODEL",
    "N_HEADS",
    "Activations",
    "AttentionFn",
    "accuracy",
    "cross_entropy",
    "embed",
    "forward",
    "head_weights",
    "init_params",
    "predict",
]

D_MODEL = 16
N_HEADS = 2

#: An attention layer's forward or backward function.
AttentionFn = Callable[..., tuple]


def init_params(seed: int = SEED, d_model: int = D_MODEL, seq_len: int = SEQ_LEN) -> dict:
    """The model's parameters before training.

    Every matrix is drawn with the course's :func:`init_weights` (step 2); the
    position embedding ``P`` starts as the sinusoidal encoding (step 1).

    Returns
    -------
    params : dict of ndarray
        ``E (V, d_model)`` token embedding, ``P (T, d_model)`` position
        embedding, ``W_q, W_k, W_v, W_o (d_model, d_model)`` the attention
        layer, ``W_u (d_model, V)`` and ``b_u (V,)`` the readout, with
        ``V = len(VOCAB)``.
    """
    rng = np.random.default_rng([seed, 0])
    V = len(VOCAB)
    params = {"E": ref.init_weights(V, d_model, rng)}
    params["P"] = ref.positional_encoding(seq_len, d_model)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        params[name] = ref.init_weights(d_model, d_model, rng)
    params["W_u"] = ref.init_weights(d_model, V, rng)
    params["b_u"] = np.zeros(V)
    return params


def embed(params: dict, x) -> np.ndarray:
    """The attention layer's input: each token's embedding plus its position's.

    Parameters
    ----------
    params : dict
        With ``E (V, d_model)`` and ``P (T, d_model)``.
    x : int ndarray of shape (..., T)

    Returns
    -------
    X : ndarray of shape (..., T, d_model)
    """
    return params["E"][np.asarray(x)] + params["P"]  # (..., T, d_model) + (T, d_model)


class Activations(NamedTuple):
    """What the forward pass computes, kept for the backward pass.

    Attributes
    ----------
    X : ndarray of shape (..., T, d_model)
        The attention layer's input.
    H : ndarray of shape (..., T, d_model)
        ``X`` plus the layer's output (the residual connection).
    logits : ndarray of shape (..., T, V)
    weights : ndarray of shape (..., n_heads, T, T)
        Every head's attention matrix.
    """

    X: np.ndarray
    H: np.ndarray
    logits: np.ndarray
    weights: np.ndarray


def forward(
    params: dict,
    x,
    n_heads: int = N_HEADS,
    attention: AttentionFn = ref.multi_head_self_attention,
    mask=None,
) -> Activations:
    """Run the model on token ids ``x``.

    Parameters
    ----------
    params : dict
        As :func:`init_params` makes them.
    x : int ndarray of shape (..., T)
    n_heads : int
    attention : callable
        ``attention(X, W_q, W_k, W_v, W_o, n_heads, mask) -> (output, weights)``,
        by default the reference's :func:`multi_head_self_attention`.
    mask : ndarray broadcastable to (..., T, T), optional
        Additive mask of the attention layer.

    Returns
    -------
    Activations
    """
    X = embed(params, x)  # (..., T, d_model)
    W = (params["W_q"], params["W_k"], params["W_v"], params["W_o"])
    out, A = attention(X, *W, n_heads, mask)  # (..., T, d_model), (..., h, T, T)
    H = X + out  # (..., T, d_model)
    logits = H @ params["W_u"] + params["b_u"]  # (..., T, V)
    return Activations(X, H, logits, np.asarray(A))


def predict(
    params: dict, x, n_heads: int = N_HEADS, attention=ref.multi_head_self_attention, mask=None
):
    """The letter the model puts first at every position: int ndarray of shape (..., T)."""
    return forward(params, x, n_heads, attention, mask).logits.argmax(axis=-1)


def accuracy(
    params: dict, x, y, n_heads: int = N_HEADS, attention=ref.multi_head_self_attention, mask=None
):
    """The fraction of letters the model gets right (a float in [0, 1])."""
    return float((predict(params, x, n_heads, attention, mask) == y).mean())


def head_weights(
    params: dict, x, n_heads: int = N_HEADS, attention=ref.multi_head_self_attention, mask=None
):
    """Every head's attention matrix on token ids ``x``.

    Returns
    -------
    weights : ndarray of shape (..., n_heads, T, T)
        ``weights[..., k, i, j]``: how much query ``i`` of head ``k`` takes from key ``j``.
    """
    return forward(params, x, n_heads, attention, mask).weights


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (..., V)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def cross_entropy(logits, y) -> float:
    """Mean cross-entropy ``-log softmax(logits)[y]`` over every position of every sequence.

    Parameters
    ----------
    logits : ndarray of shape (..., T, V)
    y : int ndarray of shape (..., T)

    Returns
    -------
    loss : float
        ``log V`` for a model that knows nothing (uniform scores), 0 for a
        certain and right one.
    """
    logp = _log_softmax(np.asarray(logits, dtype=float))  # (..., T, V)
    return float(-np.take_along_axis(logp, np.asarray(y)[..., None], axis=-1).mean())
