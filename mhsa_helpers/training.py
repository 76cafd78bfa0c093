"""A tiny attention-only transformer, trained in numpy with the course's backward pass.

The task: **reverse a sequence** of ``SEQ_LEN`` letters drawn from ``VOCAB``.
The output at position ``i`` is the input letter at position ``T - 1 - i``,
which only attention can fetch: a head has to learn to look from query ``i``
to key ``T - 1 - i`` (the anti-diagonal of its attention matrix).

The model, for a sequence of token ids ``x``::

    X      = E[x] + P                       token embedding + position embedding
    out, A = multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads)
    H      = X + out                        residual connection
    logits = H @ W_u + b_u                  one score per letter, at every position

and the loss is the mean cross-entropy of ``logits`` against the reversed
sequence. ``P`` starts as the course's sinusoidal encoding (step 1) and is
learned with the rest. The backward pass is written here by hand, except the
attention layer's, which is :func:`multi_head_self_attention_backward`. The
layer's forward and backward functions are parameters of every function that
runs the model (the reference's by default), so that the training notebook
can train with the learner's own.

``python -m mhsa_helpers.training`` trains with the fixed seed and writes
``mhsa_helpers/data/trained.npz``: the worked example ``get_example("trained")``.
"""

from __future__ import annotations

import argparse
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import reference as ref

__all__ = [
    "BATCH_SIZE",
    "DATA",
    "D_MODEL",
    "GOAL",
    "HELD_OUT_SEED",
    "LEARNING_RATE",
    "N_HEADS",
    "PATTERNS",
    "SEED",
    "SEQ_LEN",
    "STEPS",
    "VOCAB",
    "Activations",
    "Adam",
    "TrainResult",
    "accuracy",
    "backward",
    "cross_entropy",
    "cross_entropy_backward",
    "distinct_sequence",
    "embed",
    "embedding_backward",
    "forward",
    "head_sentence",
    "head_weights",
    "held_out",
    "init_params",
    "layer_functions",
    "letters",
    "load_trained",
    "loss_and_grads",
    "name_heads",
    "numerical_grads",
    "pattern_keys",
    "predict",
    "progress_bar",
    "readout_backward",
    "save_trained",
    "seen_in_training",
    "sequences",
    "targets",
    "train",
    "train_step",
    "training_batches",
    "weight_on_keys",
    "without_head",
]

#: The letters of the task; token id ``k`` is ``VOCAB[k]``.
VOCAB = "ABCDEFGHIJKLMNOP"
SEQ_LEN = 8  # T
D_MODEL = 16
N_HEADS = 2
SEED = 0  # initial weights and training batches
HELD_OUT_SEED = 1  # the held-out sequences: another seed than the training batches
HELD_OUT_SIZE = 1000
BATCH_SIZE = 64
LEARNING_RATE = 1e-2
STEPS = 600
GOAL = 0.99  # held-out accuracy (letters right)
#: The shipped worked example, rebuilt by ``python -m mhsa_helpers.training``.
DATA = Path(__file__).resolve().parent / "data" / "trained.npz"

AttentionFn = Callable[..., tuple]


# --------------------------------------------------------------------------
# the task's data
# --------------------------------------------------------------------------
def sequences(n: int, rng: np.random.Generator, seq_len: int = SEQ_LEN) -> np.ndarray:
    """``n`` sequences of letters drawn uniformly, with replacement.

    Parameters
    ----------
    n : int
    rng : numpy.random.Generator
    seq_len : int

    Returns
    -------
    x : int ndarray of shape (n, seq_len)
        Token ids in ``0 .. len(VOCAB) - 1``.
    """
    return rng.integers(0, len(VOCAB), size=(n, seq_len))


def targets(x: np.ndarray) -> np.ndarray:
    """What the model must output: every sequence reversed.

    Parameters
    ----------
    x : int ndarray of shape (..., T)

    Returns
    -------
    y : int ndarray of shape (..., T)
        ``y[..., i] = x[..., T - 1 - i]``.
    """
    return x[..., ::-1]


def training_batches(batch_size: int = BATCH_SIZE, seed: int = SEED) -> Iterator[tuple]:
    """An endless stream of fresh training batches, the same for the same seed.

    Yields
    ------
    x, y : int ndarray of shape (batch_size, T)
    """
    rng = np.random.default_rng([seed, 1])  # a stream of its own, apart from the weights'
    while True:
        x = sequences(batch_size, rng)
        yield x, targets(x)


def held_out(n: int = HELD_OUT_SIZE, seed: int = HELD_OUT_SEED) -> tuple:
    """Sequences to measure the model on, drawn with another seed than the training batches.

    Returns
    -------
    x, y : int ndarray of shape (n, T)
    """
    x = sequences(n, np.random.default_rng([seed, 2]))
    return x, targets(x)


def seen_in_training(x: np.ndarray, steps: int, batch_size: int = BATCH_SIZE, seed: int = SEED):
    """Which of the sequences ``x`` the first ``steps`` training batches contained.

    Parameters
    ----------
    x : int ndarray of shape (n, T)

    Returns
    -------
    seen : bool ndarray of shape (n,)
    """
    powers = len(VOCAB) ** np.arange(x.shape[-1], dtype=np.int64)  # (T,): one number per sequence
    batches = training_batches(batch_size, seed)
    trained = np.concatenate([next(batches)[0] @ powers for _ in range(steps)])  # (steps*B,)
    return np.isin(x @ powers, trained)


def letters(x) -> list:
    """The letters of a sequence of token ids."""
    return [VOCAB[int(k)] for k in np.asarray(x)]


def distinct_sequence(x: np.ndarray) -> np.ndarray:
    """The first sequence of ``x`` whose letters are all different (readable labels).

    Parameters
    ----------
    x : int ndarray of shape (n, T)

    Returns
    -------
    seq : int ndarray of shape (T,)
    """
    for seq in x:
        if len(set(seq.tolist())) == len(seq):
            return seq
    raise ValueError("no sequence of x has all its letters different.")


# --------------------------------------------------------------------------
# the model: parameters, forward pass
# --------------------------------------------------------------------------
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


# --------------------------------------------------------------------------
# the loss and the backward pass
# --------------------------------------------------------------------------
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


# --------------------------------------------------------------------------
# the optimiser (given: not an exercise)
# --------------------------------------------------------------------------
class Adam:
    """Adam (Kingma and Ba, 2015): a step per parameter, scaled by its gradient's history.

    For each parameter ``p`` with gradient ``g`` at step ``t``::

        m = beta1 * m + (1 - beta1) * g          running mean of the gradient
        v = beta2 * v + (1 - beta2) * g**2       running mean of its square
        p -= lr * (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps)

    The divisions by ``1 - beta**t`` undo the running means' start at zero.
    Every parameter moves by about ``lr`` per step at most, whatever the
    scale of its gradient.

    Parameters
    ----------
    params : dict of ndarray
        Updated in place by :meth:`step`.
    learning_rate : float
    beta1, beta2 : float
    eps : float
    """

    def __init__(self, params: dict, learning_rate=LEARNING_RATE, beta1=0.9, beta2=0.999, eps=1e-8):
        self.learning_rate, self.beta1, self.beta2, self.eps = learning_rate, beta1, beta2, eps
        self.m = {n: np.zeros_like(p) for n, p in params.items()}
        self.v = {n: np.zeros_like(p) for n, p in params.items()}
        self.t = 0

    def step(self, params: dict, grads: dict) -> None:
        """Move every parameter of ``params`` one step against its gradient in ``grads``."""
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        for n, g in grads.items():
            self.m[n] = b1 * self.m[n] + (1 - b1) * g
            self.v[n] = b2 * self.v[n] + (1 - b2) * g * g
            m_hat = self.m[n] / (1 - b1**self.t)
            v_hat = self.v[n] / (1 - b2**self.t)
            params[n] -= self.learning_rate * m_hat / (np.sqrt(v_hat) + self.eps)


# --------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------
def train_step(
    params: dict,
    optimizer: Adam,
    x,
    y,
    n_heads: int = N_HEADS,
    attention: AttentionFn = ref.multi_head_self_attention,
    attention_backward: AttentionFn = ref.multi_head_self_attention_backward,
    mask=None,
) -> float:
    """One step of training on the batch ``(x, y)``; returns the batch's loss before the step."""
    loss, grads = loss_and_grads(params, x, y, n_heads, attention, attention_backward, mask)
    optimizer.step(params, grads)
    return loss


@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes
    ----------
    params : dict of ndarray
        The trained parameters.
    losses : ndarray of shape (steps,)
        The training loss of every step's batch.
    eval_steps : ndarray of shape (n_evals,)
        The steps after which the held-out accuracy was measured.
    accuracies : ndarray of shape (n_evals,)
        The held-out accuracy after each of those steps.
    steps_to_goal : int or None
        The first measured step whose held-out accuracy reached the goal.
    seconds_to_goal : float or None
        Wall-clock seconds from the start of training to that step.
    seconds : float
        Wall-clock seconds of the whole run.
    """

    params: dict
    losses: np.ndarray
    eval_steps: np.ndarray
    accuracies: np.ndarray
    steps_to_goal: int | None = None
    seconds_to_goal: float | None = None
    seconds: float = 0.0
    settings: dict = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        """The held-out accuracy at the end of training."""
        return float(self.accuracies[-1])

    def summary(self) -> str:
        """One sentence: the final held-out accuracy, and when the goal was first reached."""
        steps, goal = len(self.losses), self.settings.get("goal", GOAL)
        reached = (
            f"{goal:.0%} first reached after {self.steps_to_goal} steps "
            f"({self.seconds_to_goal:.2f} s)"
            if self.steps_to_goal is not None
            else f"{goal:.0%} not reached"
        )
        return (
            f"held-out accuracy {self.accuracy:.2%} after {steps} steps "
            f"({self.seconds:.1f} s); {reached}"
        )


def train(
    steps: int = STEPS,
    *,
    n_heads: int = N_HEADS,
    d_model: int = D_MODEL,
    batch_size: int = BATCH_SIZE,
    learning_rate: float = LEARNING_RATE,
    seed: int = SEED,
    attention: AttentionFn = ref.multi_head_self_attention,
    attention_backward: AttentionFn = ref.multi_head_self_attention_backward,
    mask=None,
    eval_every: int = 25,
    goal: float = GOAL,
    held_out_set: tuple | None = None,
    callback: Callable | None = None,
) -> TrainResult:
    """Train the model on the reversal task with Adam; the same seed gives the same run.

    Parameters
    ----------
    steps : int
        Number of batches to train on.
    n_heads, d_model : int
    batch_size : int
    learning_rate : float
    seed : int
        Seed of the initial weights and of the training batches.
    attention, attention_backward : callable
        The attention layer's forward and backward functions (the reference's
        by default); see :func:`forward` and :func:`backward`.
    mask : ndarray broadcastable to (T, T), optional
        Additive mask of the attention layer, in training and evaluation.
    eval_every : int
        Measure the held-out accuracy every this many steps (and after the last).
    goal : float
        The held-out accuracy whose first step and time are recorded.
    held_out_set : tuple (x, y), optional
        By default :func:`held_out`.
    callback : callable, optional
        ``callback(step, loss, accuracy)`` after every measurement: the step
        (1 to ``steps``), the last batch's loss and the held-out accuracy.

    Returns
    -------
    TrainResult
    """
    x_test, y_test = held_out_set if held_out_set is not None else held_out()
    params = init_params(seed, d_model)
    optimizer = Adam(params, learning_rate)
    batches = training_batches(batch_size, seed)
    losses, eval_steps, accuracies = [], [], []
    steps_to_goal = seconds_to_goal = None
    start = time.perf_counter()
    for step in range(1, steps + 1):
        x, y = next(batches)
        losses.append(
            train_step(params, optimizer, x, y, n_heads, attention, attention_backward, mask)
        )
        if step % eval_every and step != steps:
            continue
        acc = accuracy(params, x_test, y_test, n_heads, attention, mask)
        eval_steps.append(step)
        accuracies.append(acc)
        if steps_to_goal is None and acc >= goal:
            steps_to_goal, seconds_to_goal = step, time.perf_counter() - start
        if callback is not None:
            callback(step, losses[-1], acc)
    settings = dict(
        steps=steps, n_heads=n_heads, d_model=d_model, batch_size=batch_size,
        learning_rate=learning_rate, seed=seed, goal=goal,
    )  # fmt: skip
    return TrainResult(
        params,
        np.array(losses),
        np.array(eval_steps),
        np.array(accuracies),
        steps_to_goal,
        seconds_to_goal,
        time.perf_counter() - start,
        settings,
    )


# --------------------------------------------------------------------------
# reading the heads
# --------------------------------------------------------------------------
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


def without_head(params: dict, k: int, n_heads: int = N_HEADS) -> dict:
    """A copy of ``params`` in which head ``k`` (counted from 0) no longer reaches the output.

    The concatenated heads meet ``W_o`` row by row: head ``k``'s columns
    ``k*d_k:(k+1)*d_k`` multiply the rows ``k*d_k:(k+1)*d_k`` of ``W_o``;
    setting those rows to zero removes the head and keeps the others.
    """
    out = {n: p.copy() for n, p in params.items()}
    d_k = out["W_o"].shape[0] // n_heads
    out["W_o"][k * d_k : (k + 1) * d_k] = 0.0  # (d_k, d_model) rows of head k
    return out


def layer_functions(functions=None, cache: dict | None = None, directory=None) -> tuple:
    """The attention layer to train with: the learner's where its check passes.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions by name (:func:`mhsa_helpers.execution.saved.learner_functions`).
    cache : dict, optional
        Checks already run (see :func:`mhsa_helpers.widgets.live.learner_or_reference`).
    directory : str or Path, optional
        Where ``functions`` were read from (saved notebooks). Given, a function
        that is missing or not implemented yet is said to be read from its
        saved notebook, with when it was saved: it may be written but not saved.

    Returns
    -------
    attention, attention_backward : callable
        ``multi_head_self_attention`` and ``multi_head_self_attention_backward``,
        each the learner's where its check passes, else the reference's.
    status : str
        HTML: one sentence per function saying whose was used, and why.
    """
    from .execution.saved import saved_hint
    from .widgets.live import learner_or_reference

    cache = {} if cache is None else cache
    chosen, said = [], []
    for name in ("multi_head_self_attention", "multi_head_self_attention_backward"):
        fn, sentence = learner_or_reference(name, functions, cache)
        chosen.append(fn)
        sentence = sentence.replace("Drawn with", "Trains with")
        unwritten = not callable(dict(functions or {}).get(name)) or "not implemented yet" in (
            sentence
        )
        if directory is not None and unwritten:
            sentence += " " + saved_hint(name, directory)
        said.append(sentence)
    return chosen[0], chosen[1], "<br>".join(said)


def head_sentence(k: int, pattern: str | None, share: float) -> str:
    """What head ``k`` (counted from 0) learned, in words, with its measured share."""
    what = PATTERNS.get(pattern or "", "no single key")
    return (
        f"head {k + 1}: {what} ({share:.2f} of its weight on average over "
        f"{HELD_OUT_SIZE} held-out sequences)"
    )


# --------------------------------------------------------------------------
# the shipped worked example
# --------------------------------------------------------------------------
def save_trained(result: TrainResult, path=DATA, held_out_set: tuple | None = None) -> dict:
    """Write the trained model and one held-out sequence to ``path`` (``.npz``).

    The file holds every parameter, the attention layer's input ``X`` for the
    first held-out sequence whose letters are all different, its letters,
    and what each head learned, measured on the whole held-out set.

    Returns
    -------
    arrays : dict
        What was written.
    """
    x_test, _ = held_out_set if held_out_set is not None else held_out()
    params, h = result.params, result.settings["n_heads"]
    seq = distinct_sequence(x_test)
    heads = name_heads(head_weights(params, x_test, h))
    arrays = dict(params)
    arrays.update(
        X=embed(params, seq),  # (T, d_model)
        sequence=seq,
        tokens=np.array(letters(seq)),
        n_heads=np.array(h),
        head_patterns=np.array([p or "" for p, _ in heads]),
        head_shares=np.array([s for _, s in heads]),
        accuracy=np.array(result.accuracy),
        steps=np.array(result.settings["steps"]),
        seed=np.array(result.settings["seed"]),
    )
    _write_npz(Path(path), arrays)
    return arrays


def _write_npz(path: Path, arrays: dict) -> None:
    """``np.savez_compressed`` with fixed dates: the same arrays give the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, a in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with z.open(info, "w") as f:
                np.lib.format.write_array(f, np.asarray(a), allow_pickle=False)


def load_trained(path=DATA) -> dict:
    """The arrays :func:`save_trained` wrote (strings as lists, counts as ints)."""
    with np.load(path, allow_pickle=False) as f:
        out = {k: f[k] for k in f.files}
    for k in ("tokens", "head_patterns"):
        out[k] = [str(s) for s in out[k]]
    for k in ("n_heads", "steps", "seed"):
        out[k] = int(out[k])
    return out


def progress_bar(steps: int, description: str = "training") -> tuple:
    """A progress bar (ipywidgets) and the callback for :func:`train` that moves it.

    Returns
    -------
    widget : ipywidgets.HBox
        The bar and a line with the step, the loss and the held-out accuracy.
    callback : callable
        ``callback(step, loss, accuracy)``.
    """
    import ipywidgets as widgets

    bar = widgets.IntProgress(value=0, min=0, max=steps, description=description)
    line = widgets.HTML()

    def callback(step: int, loss: float, acc: float) -> None:
        bar.value = step
        line.value = f"step {step}/{steps} · loss {loss:.4f} · held-out accuracy {acc:.1%}"

    return widgets.HBox([bar, line]), callback


def _progress_line(step: int, loss: float, acc: float, steps: int) -> None:
    done = int(30 * step / steps)
    bar = "#" * done + "." * (30 - done)
    end = "\n" if step == steps else ""
    print(f"\r[{bar}] step {step}/{steps}  loss {loss:.4f}  held-out accuracy {acc:.3f}", end=end)
    sys.stdout.flush()


def main(argv=None) -> int:
    """Train with the fixed seed and write the worked example ``trained``."""
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--out", type=Path, default=DATA, help=f"where to write (default {DATA})")
    p.add_argument("--steps", type=int, default=STEPS)
    args = p.parse_args(argv)
    result = train(args.steps, callback=lambda s, loss, a: _progress_line(s, loss, a, args.steps))
    arrays = save_trained(result, args.out)
    print(result.summary())
    heads = zip(arrays["head_patterns"], arrays["head_shares"], strict=True)
    for k, (pattern, share) in enumerate(heads):
        print(head_sentence(k, str(pattern), share))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
