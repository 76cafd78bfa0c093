"""The training loop: Adam on fresh batches, the held-out accuracy measured as it goes.

A progress bar (tqdm: a widget in JupyterLab, a line in a terminal) shows the
steps, the loss and the held-out accuracy when :func:`train` is given ``bar``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from .. import reference as ref
from .adam import LEARNING_RATE, Adam
from .backward import loss_and_grads
from .model import D_MODEL, N_HEADS, AttentionFn, accuracy, init_params
from .task import BATCH_SIZE, SEED, held_out, training_batches

__all__ = ["GOAL", "STEPS", "TrainResult", "train", "train_step"]

STEPS = 600
GOAL = 0.99  # held-out accuracy (letters right)


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
    bar: str | None = None,
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
        by default); see :func:`~mhsa_helpers.training.model.forward` and
        :func:`~mhsa_helpers.training.backward.backward`.
    mask : ndarray broadcastable to (T, T), optional
        Additive mask of the attention layer, in training and evaluation.
    eval_every : int
        Measure the held-out accuracy every this many steps (and after the last).
    goal : float
        The held-out accuracy whose first step and time are recorded.
    held_out_set : tuple (x, y), optional
        By default :func:`~mhsa_helpers.training.task.held_out`.
    callback : callable, optional
        ``callback(step, loss, accuracy)`` after every measurement: the step
        (1 to ``steps``), the last batch's loss and the held-out accuracy.
    bar : str, optional
        Show a progress bar (tqdm) with this description, moved at every
        measurement, with the loss and the held-out accuracy beside it.

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
    shown = tqdm(total=steps, desc=bar, unit="step", disable=bar is None)
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
        shown.update(step - shown.n)
        shown.set_postfix_str(f"loss {losses[-1]:.4f} · held-out accuracy {acc:.1%}")
        if callback is not None:
            callback(step, losses[-1], acc)
    shown.close()
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
