"""The induction notebook's model: two attention-only layers learn to copy what came next.

The task: a random sequence that repeats. The next token of the repeated part
is found **in context**: look back for the earlier occurrence of the current
token and copy the token that followed it. Two layers do it together: a
*previous-token* head in layer 1 writes into every position which token came
before it, and an *induction* head in layer 2 finds, from query ``t``, the key
whose previous token is the current one (key ``t - L + 1`` for a sequence of
``L`` tokens repeated) and copies its token.

Training sequences repeat ``p`` distinct tokens with a period ``p`` drawn from
:data:`PERIODS` (4 to 8) for every sequence, up to :data:`SEQ_LEN` tokens. With
the period always 8, the model learns a shortcut instead: a layer-1 head that
looks 7 positions back by position, no induction head (sequences with another
period then fail). The held-out sequences are the task itself: 8 distinct
tokens repeated once, measured on the predictions of the second half that
need the earlier occurrence (queries ``L .. 2L - 2``).

The model, for token ids ``x`` (causal mask, no biases but the readout's)::

    X0 = E[x] + P                         (P starts sinusoidal, learned)
    out1, A1 = attention(X0, W_q1, W_k1, W_v1, W_o1)      X1 = X0 + out1
    out2, A2 = attention(X1, W_q2, W_k2, W_v2, W_o2)      X2 = X1 + out2
    logits = X2 @ W_u + b_u               the next token, at every position

``attention`` and ``attention_backward`` are parameters of every function that
runs the model (the reference's by default): the notebook trains with the
learner's own. ``python -m mhsa_helpers.training.induction`` trains with the
fixed seed and writes the worked example ``induction``
(``mhsa_helpers/data/induction.npz``).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .. import reference as ref
from . import heads
from .adam import Adam
from .backward import embedding_backward, readout_backward
from .model import AttentionFn, _log_softmax
from .saved import _write_npz

__all__ = [
    "BATCH_SIZE",
    "DATA",
    "D_MODEL",
    "GOAL",
    "LEARNING_RATE",
    "N_HEADS",
    "PERIOD",
    "PERIODS",
    "SEED",
    "SEQ_LEN",
    "STEPS",
    "VOCAB",
    "Activations",
    "InductionResult",
    "ablation",
    "accuracy",
    "backward",
    "best_first_loss",
    "drop_step",
    "forward",
    "head_scores",
    "held_out",
    "init_params",
    "load_induction",
    "loss_and_grads",
    "main",
    "numerical_grads",
    "parse_tokens",
    "period_masks",
    "save_induction",
    "scores_over_training",
    "sequences",
    "tokens",
    "train",
    "training_batches",
    "without_head",
]

#: The tokens; token id ``k`` is ``VOCAB[k]``.
VOCAB = "ABCDEFGHIJKLMNOPQRSTUVWX"
PERIOD = 8  # L: the held-out sequences repeat 8 tokens once
SEQ_LEN = 2 * PERIOD  # T
PERIODS = (4, 5, 6, 7, 8)  # the training sequences' periods, one drawn per sequence
SEED = 0
HELD_OUT_SEED = 1
HELD_OUT_SIZE = 1000
BATCH_SIZE = 64
D_MODEL = 16
N_HEADS = 2
LEARNING_RATE = 0.03
STEPS = 600
GOAL = 0.95
LAYER_WEIGHTS = ("W_q", "W_k", "W_v", "W_o")

#: The shipped worked example, rebuilt by ``python -m mhsa_helpers.training.induction``.
DATA = Path(__file__).resolve().parent.parent / "data" / "induction.npz"


# ---------------------------------------------------------------------------
# the task's data
# ---------------------------------------------------------------------------
def sequences(n: int, rng: np.random.Generator, periods=(PERIOD,), seq_len: int = SEQ_LEN):
    """``n`` sequences, each ``p`` distinct random tokens repeated up to ``seq_len``.

    Parameters
    ----------
    n : int
    rng : numpy.random.Generator
    periods : sequence of int
        Each sequence draws its period ``p`` from these (uniformly).
    seq_len : int

    Returns
    -------
    x : int ndarray of shape (n, seq_len)
        Token ids in ``0 .. len(VOCAB) - 1``; ``x[:, t] == x[:, t % p]``.
    period : int ndarray of shape (n,)
        Each sequence's period ``p``.
    """
    distinct = np.argsort(rng.random((n, len(VOCAB))), axis=1)[:, : max(periods)]  # (n, p_max)
    period = rng.choice(np.asarray(periods), size=n)  # (n,)
    t = np.arange(seq_len)
    return np.take_along_axis(distinct, t[None, :] % period[:, None], axis=1), period


def training_batches(batch_size: int = BATCH_SIZE, seed: int = SEED, periods=PERIODS):
    """An endless stream of fresh training batches ``(x, period)``, the same for the same seed."""
    rng = np.random.default_rng([seed, 1])
    while True:
        yield sequences(batch_size, rng, periods)


def held_out(n: int = HELD_OUT_SIZE, seed: int = HELD_OUT_SEED) -> np.ndarray:
    """The held-out sequences: ``PERIOD`` distinct tokens repeated once, int (n, SEQ_LEN)."""
    return sequences(n, np.random.default_rng([seed, 2]))[0]


def period_masks(period, seq_len: int = SEQ_LEN) -> tuple:
    """Which predictions are in the first period and which in the repeated part.

    The prediction at position ``t`` is of the token ``x[t + 1]``.

    Parameters
    ----------
    period : int or int ndarray of shape (n,)
    seq_len : int

    Returns
    -------
    first, repeated : bool ndarray of shape (n, seq_len - 1)
        ``first``: the target is in the first period, never seen before
        (``t + 1 < p``); ``repeated``: the target repeats an earlier token
        (``t >= p``), found by induction. The prediction at ``t = p - 1``
        (the first token again) is in neither.
    """
    p = np.atleast_1d(np.asarray(period))[:, None]  # (n, 1)
    t = np.arange(seq_len - 1)[None, :]
    return t + 1 < p, t >= p


def tokens(x) -> list:
    """The letters of a sequence of token ids."""
    return [VOCAB[int(k)] for k in np.asarray(x)]


#: The fewest letters a typed sequence may have: with 2, key t − n + 1 is the previous token.
SHORTEST = 3


def parse_tokens(text: str, length: int = PERIOD) -> np.ndarray:
    """Read a typed sequence of letters ``A``–``X`` into token ids.

    Spaces and commas are ignored, lowercase is read as uppercase.

    Parameters
    ----------
    text : str
        E.g. ``"HELPMIND"``, ``"h e l p"``, ``"H,E,L,P"``.
    length : int
        The most letters the sequence may have (it is repeated once after).

    Returns
    -------
    x : int ndarray of shape (n,)

    Raises
    ------
    ValueError
        With a one-line reason: no letters, a letter outside ``A``–``X``, fewer
        than :data:`SHORTEST` or more than ``length`` letters.
    """
    letters = [c for c in str(text).upper() if not c.isspace() and c != ","]
    if not letters:
        raise ValueError(
            f"Type {SHORTEST} to {length} letters {VOCAB[0]}–{VOCAB[-1]}: the box is empty."
        )
    unknown = sorted({c for c in letters if c not in VOCAB})
    if unknown:
        raise ValueError(
            f"{', '.join(repr(c) for c in unknown)} "
            f"{'is not a token' if len(unknown) == 1 else 'are not tokens'}: "
            f"the model knows the letters {VOCAB[0]}–{VOCAB[-1]} only."
        )
    if len(letters) < SHORTEST:
        raise ValueError(
            f"{len(letters)} {'letter is' if len(letters) == 1 else 'letters are'} too few: "
            f"at least {SHORTEST}, so that the token after the earlier occurrence (key "
            "t − n + 1) is not the current token or the one before it."
        )
    if len(letters) > length:
        raise ValueError(
            f"{len(letters)} letters is too long: at most {length}, "
            f"so that the sequence repeated fits the model's {2 * length} positions."
        )
    return np.array([VOCAB.index(c) for c in letters])


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
def init_params(seed: int = SEED, d_model: int = D_MODEL, seq_len: int = SEQ_LEN) -> dict:
    """The model's parameters before training (Glorot-uniform, ``P`` sinusoidal).

    Returns
    -------
    params : dict of ndarray
        ``E (V, d_model)``, ``P (T, d_model)``, ``W_q1 .. W_o1`` and
        ``W_q2 .. W_o2 (d_model, d_model)`` the two layers, ``W_u (d_model, V)``
        and ``b_u (V,)`` the readout.
    """
    rng = np.random.default_rng([seed, 0])
    V = len(VOCAB)
    params = {"E": ref.init_weights(V, d_model, rng)}
    params["P"] = ref.positional_encoding(seq_len, d_model)
    for layer in (1, 2):
        for name in LAYER_WEIGHTS:
            params[f"{name}{layer}"] = ref.init_weights(d_model, d_model, rng)
    params["W_u"] = ref.init_weights(d_model, V, rng)
    params["b_u"] = np.zeros(V)
    return params


def layer_weights(params: dict, layer: int) -> tuple:
    """``(W_q, W_k, W_v, W_o)`` of layer 1 or 2."""
    return tuple(params[f"{name}{layer}"] for name in LAYER_WEIGHTS)


@dataclass
class Activations:
    """What the forward pass computes, kept for the backward pass.

    Attributes
    ----------
    X0, X1, X2 : ndarray of shape (..., T, d_model)
        The residual stream: the embeddings, after layer 1, after layer 2.
    logits : ndarray of shape (..., T, V)
    A1, A2 : ndarray of shape (..., n_heads, T, T)
        Every head's attention weights, layer 1 and layer 2.
    """

    X0: np.ndarray
    X1: np.ndarray
    X2: np.ndarray
    logits: np.ndarray
    A1: np.ndarray
    A2: np.ndarray


def forward(
    params: dict,
    x,
    n_heads: int = N_HEADS,
    attention: AttentionFn = ref.multi_head_self_attention,
) -> Activations:
    """Run the model on token ids ``x`` of shape (..., T), with the causal mask."""
    x = np.asarray(x)
    mask = ref.causal_mask(x.shape[-1])
    X0 = params["E"][x] + params["P"][: x.shape[-1]]  # (..., T, d_model)
    out1, A1 = attention(X0, *layer_weights(params, 1), n_heads, mask)
    X1 = X0 + out1
    out2, A2 = attention(X1, *layer_weights(params, 2), n_heads, mask)
    X2 = X1 + out2
    logits = X2 @ params["W_u"] + params["b_u"]  # (..., T, V)
    return Activations(X0, X1, X2, logits, np.asarray(A1), np.asarray(A2))


def token_losses(logits, x) -> np.ndarray:
    """Every prediction's cross-entropy, (..., T - 1): position ``t`` predicts ``x[t + 1]``."""
    logp = _log_softmax(np.asarray(logits)[..., :-1, :])
    return -np.take_along_axis(logp, np.asarray(x)[..., 1:, None], axis=-1)[..., 0]


def backward(
    params: dict,
    x,
    acts: Activations,
    dlogits,
    n_heads: int = N_HEADS,
    attention_backward: AttentionFn = ref.multi_head_self_attention_backward,
) -> dict:
    """The gradient of every parameter, from ``dlogits`` (..., T, V) back to the embeddings."""
    x = np.asarray(x)
    mask = ref.causal_mask(x.shape[-1])
    grads = {}
    dX2, grads["W_u"], grads["b_u"] = readout_backward(acts.X2, params["W_u"], dlogits)
    dX, dW = attention_backward(acts.X1, *layer_weights(params, 2), n_heads, dX2, mask)
    dX1 = dX2 + np.asarray(dX)  # the residual's two paths
    grads.update({f"{n}2": np.asarray(w) for n, w in zip(LAYER_WEIGHTS, dW, strict=True)})
    dX, dW = attention_backward(acts.X0, *layer_weights(params, 1), n_heads, dX1, mask)
    dX0 = dX1 + np.asarray(dX)
    grads.update({f"{n}1": np.asarray(w) for n, w in zip(LAYER_WEIGHTS, dW, strict=True)})
    grads["E"], grads["P"] = embedding_backward(x, dX0, params["E"].shape[0])
    return {name: grads[name] for name in params}


def loss_and_grads(
    params: dict,
    x,
    n_heads: int = N_HEADS,
    attention: AttentionFn = ref.multi_head_self_attention,
    attention_backward: AttentionFn = ref.multi_head_self_attention_backward,
) -> tuple:
    """The mean cross-entropy of every next-token prediction, and its gradients.

    Returns
    -------
    loss : float
    grads : dict of ndarray
    losses : ndarray of shape (..., T - 1)
        Each prediction's cross-entropy (for the loss of each half).
    """
    x = np.asarray(x)
    acts = forward(params, x, n_heads, attention)
    losses = token_losses(acts.logits, x)
    probs = np.exp(_log_softmax(acts.logits[..., :-1, :]))  # (..., T-1, V)
    target = x[..., 1:, None]
    np.put_along_axis(probs, target, np.take_along_axis(probs, target, axis=-1) - 1.0, axis=-1)
    dlogits = np.zeros_like(acts.logits)
    dlogits[..., :-1, :] = probs / losses.size
    grads = backward(params, x, acts, dlogits, n_heads, attention_backward)
    return float(losses.mean()), grads, losses


def numerical_grads(params: dict, x, n_heads: int = N_HEADS, eps: float = 1e-6) -> dict:
    """Every parameter's gradient by central differences (slow: for tiny models)."""
    grads = {}
    for name, p in params.items():
        g = np.zeros_like(p)
        for i in np.ndindex(p.shape):
            keep = p[i]
            p[i] = keep + eps
            up = token_losses(forward(params, x, n_heads).logits, x).mean()
            p[i] = keep - eps
            down = token_losses(forward(params, x, n_heads).logits, x).mean()
            p[i] = keep
            g[i] = (up - down) / (2 * eps)
        grads[name] = g
    return grads


def accuracy(params: dict, x, n_heads: int = N_HEADS, attention=ref.multi_head_self_attention):
    """The fraction right of the repeated half's predictions that need induction.

    For sequences of ``L = T // 2`` tokens repeated once: the predictions at
    ``t = L .. 2L - 2`` (of ``x[L + 1 .. 2L - 1]``).
    """
    x = np.asarray(x)
    L = x.shape[-1] // 2
    right = forward(params, x, n_heads, attention).logits[..., :-1, :].argmax(-1) == x[..., 1:]
    return float(right[..., L:].mean())


def head_scores(A, period: int = PERIOD) -> tuple:
    """Each head's previous-token and induction score, from its attention weights.

    For a sequence of ``period`` tokens repeated (``T >= period + 1`` positions):

    * previous-token score: the mean weight of query ``t`` on key ``t - 1``
      over ``t = 1 .. period``, the keys an induction head reads from (key
      ``t - period + 1`` of the queries ``t = period .. 2 period - 1``);
    * induction score: the mean weight of query ``t`` on key ``t - period + 1``
      (the token after the earlier occurrence of the current one) over the
      repeated part, ``t = period .. T - 1``.

    Parameters
    ----------
    A : ndarray of shape (..., h, T, T)
        Attention weights, any number of leading axes (sequences, steps).
    period : int

    Returns
    -------
    previous, induction : ndarray of shape (h,)
        Averaged over the queries and every leading axis (the course's
        ``induction_scores``, the notebook's exercise).
    """
    return ref.induction_scores(A, period)


def scores_over_training(result, period: int = PERIOD, scores=head_scores) -> tuple:
    """Every head's two scores at every kept step of ``result`` (its probe's attention).

    ``scores`` computes them from one step's weights (:func:`head_scores` by
    default; the notebook passes the learner's ``induction_scores``).

    Returns
    -------
    previous, induction : dict
        Layer (1, 2) to an ndarray of shape (n_probes, n_heads).
    """
    previous, induction = {}, {}
    for layer, probe in ((1, result.probe_A1), (2, result.probe_A2)):
        pairs = [scores(A, period) for A in probe]
        previous[layer] = np.array([s[0] for s in pairs])
        induction[layer] = np.array([s[1] for s in pairs])
    return previous, induction


def without_head(params: dict, layer: int, head: int, n_heads: int = N_HEADS) -> dict:
    """A copy of ``params`` with one head cut off: its rows of ``W_o`` of that layer zeroed
    (:func:`.heads.without_head` on the layer's ``W_o``)."""
    return heads.without_head(params, head, n_heads, key=f"W_o{layer}")


def ablation(params: dict, x, n_heads: int = N_HEADS, attention=ref.multi_head_self_attention):
    """The held-out accuracy with each head of each layer cut off in turn.

    Returns
    -------
    accuracies : dict
        ``(layer, head)`` (heads counted from 1) to the accuracy without that
        head; ``None`` to the accuracy with every head.
    """
    out = {None: accuracy(params, x, n_heads, attention)}
    for layer in (1, 2):
        for k in range(n_heads):
            cut = without_head(params, layer, k, n_heads)
            out[(layer, k + 1)] = accuracy(cut, x, n_heads, attention)
    return out


def best_first_loss(periods=PERIODS, vocab: int = len(VOCAB)) -> float:
    """The best possible mean loss on the first period's predictions, periods drawn uniformly.

    The token after ``t + 1`` distinct ones is any of the ``vocab - t - 1`` not
    seen yet, so even a model that knows this has loss ``log(vocab - t - 1)``
    there: below ``log vocab`` (chance), never lower.
    """
    best = [np.log(vocab - 1 - t) for p in periods for t in range(p - 1)]
    return float(np.mean(best))


def drop_step(losses, level: float, window: int = 10) -> int | None:
    """The first step whose loss, averaged over the last ``window`` steps, is below ``level``."""
    smooth = np.convolve(np.asarray(losses), np.ones(window) / window, mode="valid")
    below = np.flatnonzero(smooth < level)
    return int(below[0] + window) if below.size else None


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------
@dataclass
class InductionResult:
    """What :func:`train` returns.

    Attributes
    ----------
    params : dict of ndarray
        The trained parameters.
    losses, loss_first, loss_repeated : ndarray of shape (steps,)
        Every step's training loss: over all predictions, over the first
        period's (unpredictable beyond the tokens not seen yet) and over the
        repeated part's (found by induction).
    eval_steps, accuracies : ndarray of shape (n_evals,)
        When the held-out accuracy was measured, and its value.
    probe_steps : ndarray of shape (n_probes,)
        The steps after which the attention on the probe sequences was kept.
    probe_A1, probe_A2 : ndarray of shape (n_probes, n_heads, T, T)
        Each layer's attention weights then, averaged over the probe sequences
        (held-out ones, ``PERIOD`` tokens repeated once).
    steps_to_goal : int or None
        The first measured step whose held-out accuracy reached the goal.
    seconds, cpu_seconds : float
        Wall-clock and CPU time of the whole run.
    """

    params: dict
    losses: np.ndarray
    loss_first: np.ndarray
    loss_repeated: np.ndarray
    eval_steps: np.ndarray
    accuracies: np.ndarray
    probe_steps: np.ndarray
    probe_A1: np.ndarray
    probe_A2: np.ndarray
    steps_to_goal: int | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    settings: dict = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        """The held-out accuracy at the end of training."""
        return float(self.accuracies[-1])

    def summary(self) -> str:
        """One sentence: the final held-out accuracy, and when the goal was first reached."""
        goal = self.settings.get("goal", GOAL)
        reached = (
            f"{goal:.0%} first reached after {self.steps_to_goal} steps"
            if self.steps_to_goal is not None
            else f"{goal:.0%} not reached"
        )
        return (
            f"held-out accuracy on the repeated half {self.accuracy:.1%} after "
            f"{len(self.losses)} steps ({self.seconds:.1f} s); {reached}"
        )


def train(
    steps: int = STEPS,
    *,
    n_heads: int = N_HEADS,
    d_model: int = D_MODEL,
    batch_size: int = BATCH_SIZE,
    learning_rate: float = LEARNING_RATE,
    seed: int = SEED,
    periods=PERIODS,
    attention: AttentionFn = ref.multi_head_self_attention,
    attention_backward: AttentionFn = ref.multi_head_self_attention_backward,
    eval_every: int = 25,
    probe_every: int = 5,
    goal: float = GOAL,
    held_out_set=None,
    bar: str | None = None,
) -> InductionResult:
    """Train the two-layer model with Adam on repeated sequences; the same seed, the same run.

    Parameters
    ----------
    steps : int
    n_heads, d_model, batch_size : int
    learning_rate : float
    seed : int
        Seed of the initial weights and of the training batches.
    periods : sequence of int
        The training sequences' periods (:func:`sequences`); ``(8,)`` is the
        fixed-period task, which teaches a positional shortcut instead.
    attention, attention_backward : callable
        The attention layer's forward and backward (the reference's by default).
    eval_every : int
        Measure the held-out accuracy every this many steps (and after the last).
    probe_every : int
        Keep the attention on 32 probe sequences every this many steps.
    goal : float
    held_out_set : int ndarray of shape (n, T), optional
        By default :func:`held_out`.
    bar : str, optional
        Show a progress bar (tqdm) with this description.

    Returns
    -------
    InductionResult
    """
    x_test = held_out() if held_out_set is None else held_out_set
    probe = held_out(32, seed=3)
    params = init_params(seed, d_model)
    optimizer = Adam(params, learning_rate)
    batches = training_batches(batch_size, seed, periods)
    losses, first, repeated, eval_steps, accuracies = [], [], [], [], []
    probe_steps, probe_A1, probe_A2 = [], [], []
    steps_to_goal = None
    shown = tqdm(total=steps, desc=bar, unit="step", disable=bar is None)
    wall, cpu = time.perf_counter(), time.process_time()
    for step in range(1, steps + 1):
        x, period = next(batches)
        loss, grads, each = loss_and_grads(params, x, n_heads, attention, attention_backward)
        optimizer.step(params, grads)
        in_first, in_repeated = period_masks(period, x.shape[-1])
        losses.append(loss)
        first.append(float(each[in_first].mean()))
        repeated.append(float(each[in_repeated].mean()))
        if step % probe_every == 0 or step == 1:
            acts = forward(params, probe, n_heads, attention)
            probe_steps.append(step)
            probe_A1.append(acts.A1.mean(axis=0))
            probe_A2.append(acts.A2.mean(axis=0))
        if step % eval_every and step != steps:
            continue
        acc = accuracy(params, x_test, n_heads, attention)
        eval_steps.append(step)
        accuracies.append(acc)
        if steps_to_goal is None and acc >= goal:
            steps_to_goal = step
        shown.update(step - shown.n)
        shown.set_postfix_str(f"loss {loss:.3f} · held-out accuracy {acc:.1%}")
    shown.close()
    settings = dict(
        steps=steps, n_heads=n_heads, d_model=d_model, batch_size=batch_size,
        learning_rate=learning_rate, seed=seed, periods=tuple(periods), goal=goal,
    )  # fmt: skip
    return InductionResult(
        params,
        np.array(losses),
        np.array(first),
        np.array(repeated),
        np.array(eval_steps),
        np.array(accuracies),
        np.array(probe_steps),
        np.array(probe_A1),
        np.array(probe_A2),
        steps_to_goal,
        time.perf_counter() - wall,
        time.process_time() - cpu,
        settings,
    )


# ---------------------------------------------------------------------------
# the shipped worked example
# ---------------------------------------------------------------------------
def save_induction(result: InductionResult, path=DATA) -> dict:
    """Write the trained parameters and one held-out sequence to ``path`` (``.npz``).

    Returns
    -------
    arrays : dict
        What was written: every parameter, ``sequence`` (the first held-out
        sequence), ``accuracy`` (held-out), ``steps``, ``seed``, ``n_heads``.
    """
    arrays = dict(result.params)
    arrays.update(
        sequence=held_out()[0],
        n_heads=np.array(result.settings["n_heads"]),
        accuracy=np.array(result.accuracy),
        steps=np.array(result.settings["steps"]),
        seed=np.array(result.settings["seed"]),
    )
    _write_npz(Path(path), arrays)
    return arrays


def load_induction(path=DATA) -> dict:
    """The arrays :func:`save_induction` wrote (counts as ints)."""
    with np.load(path, allow_pickle=False) as f:
        out = {k: f[k] for k in f.files}
    for k in ("n_heads", "steps", "seed"):
        out[k] = int(out[k])
    return out


def main(argv=None) -> int:
    """Train with the fixed seed and write the worked example ``induction``."""
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--out", type=Path, default=DATA, help=f"where to write (default {DATA})")
    p.add_argument("--steps", type=int, default=STEPS)
    args = p.parse_args(argv)
    result = train(args.steps, bar="training")
    save_induction(result, args.out)
    print(result.summary())
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
