"""Line plots: the training notebook's curves and the RoPE notebook's turning pair.

Each panel's plotting area is :data:`~mhsa_helpers.plot_style.LINE_PANEL_PX`
(:func:`line_figure`); the size rule and the colours are
:mod:`mhsa_helpers.plot_style`'s.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .plot_style import DPI, HEAD_COLOURS, LINE_PANEL_PX, WIDTH_PX

__all__ = [
    "accuracy_by_position",
    "halves_curves",
    "line_figure",
    "scores_over_training",
    "training_curves",
    "turning_figure",
]


def line_figure(n_panels: int = 1, square: bool = False):
    """A figure of ``n_panels`` line plots side by side, each of ``LINE_PANEL_PX``.

    Parameters
    ----------
    n_panels : int
        Number of plots in the row.
    square : bool
        Make each plot as high as it is wide (for pictures of the plane).

    Returns
    -------
    fig : matplotlib Figure
    axes : ndarray of matplotlib Axes, of shape (n_panels,)
    """
    w, h = LINE_PANEL_PX
    h = w if square else h
    width = min(WIDTH_PX, n_panels * (w + 100))  # + room for tick and axis labels
    fig, axes = plt.subplots(
        1, n_panels, figsize=(width / DPI, (h + 90) / DPI), squeeze=False, layout="constrained"
    )
    return fig, axes[0]


def training_curves(losses, eval_steps, accuracies, vocab_size, goal):
    """The training loss (log scale) and the held-out accuracy, side by side.

    Parameters
    ----------
    losses : array_like of shape (n_steps,)
        Loss of each batch.
    eval_steps, accuracies : array_like of shape (n_evals,)
        When the held-out accuracy was measured, and its value.
    vocab_size : int
        Letters in the vocabulary: ``log V`` is the loss of a model that knows
        nothing, ``1/V`` the accuracy of chance.
    goal : float
        Accuracy that training aims for.

    Returns
    -------
    fig : matplotlib Figure
    """
    fig, (ax1, ax2) = line_figure(2)
    ax1.semilogy(np.arange(1, len(losses) + 1), losses, color=HEAD_COLOURS[0])
    ax1.axhline(np.log(vocab_size), color="grey", linestyle=":", label="log V: knows nothing")
    ax1.set(xlabel="step", ylabel="training loss", title="loss of each batch (log scale)")
    ax1.legend()
    ax2.plot(eval_steps, accuracies, marker=".", color=HEAD_COLOURS[2])
    # the goal sits just under the final accuracy: drawn over the curve, dark, not hidden by it
    ax2.axhline(goal, color=HEAD_COLOURS[5], linestyle="--", linewidth=1.6, zorder=3)
    ax2.annotate(
        f"goal {goal:.0%}",
        (0.02, goal),
        xycoords=("axes fraction", "data"),
        xytext=(0, -6),
        textcoords="offset points",
        va="top",
        color=HEAD_COLOURS[5],
    )
    ax2.axhline(1 / vocab_size, color="grey", linestyle="--", label="chance 1/V")
    ax2.set(xlabel="step", ylabel="accuracy", title="held-out accuracy", ylim=(0, 1.02))
    ax2.legend(loc="lower right")
    return fig


def halves_curves(loss_first, loss_repeated, chance, best_first, drop=None):
    """The training loss of the first period against the repeated part's, the drop marked.

    Parameters
    ----------
    loss_first, loss_repeated : array_like of shape (n_steps,)
        Each batch's loss on the first period's predictions and on the repeated part's.
    chance : float
        ``log V``: the loss of a model that knows nothing.
    best_first : float
        The best loss possible on the first period (a token not seen yet).
    drop : int, optional
        The step where the repeated part's loss drops: a dashed line.

    Returns
    -------
    fig : matplotlib Figure
    """
    fig, (ax,) = line_figure(1)
    steps = np.arange(1, len(loss_first) + 1)
    ax.plot(steps, loss_first, color=HEAD_COLOURS[0], label="first period: no earlier occurrence")
    ax.plot(steps, loss_repeated, color=HEAD_COLOURS[2], label="repeated part: copy it")
    ax.axhline(chance, color="grey", linestyle=":", label="log V: knows nothing")
    ax.axhline(best_first, color=HEAD_COLOURS[0], linestyle=":", label="best on the first period")
    if drop is not None:
        ax.axvline(drop, color="black", linestyle="--", linewidth=1)
        ax.annotate(f"drop: step {drop}", (drop, chance / 2), xytext=(4, 0),
                    textcoords="offset points", fontsize="small")  # fmt: skip
    ax.set(xlabel="step", ylabel="training loss", title="loss of each half", ylim=(0, None))
    ax.legend(fontsize="small")
    return fig


def scores_over_training(steps, previous, induction, drop=None):
    """Every head's previous-token and induction score against the training step.

    Parameters
    ----------
    steps : array_like of shape (n,)
    previous, induction : dict
        Layer (1, 2) to an array of shape (n, n_heads): each head's score at each step.
    drop : int, optional
        The step where the repeated part's loss drops: a dashed line.

    Returns
    -------
    fig : matplotlib Figure
    """
    fig, axes = line_figure(2)
    for ax, scores, name in zip(
        axes, (previous, induction), ("previous-token", "induction"), strict=True
    ):
        for layer, style in ((1, "-"), (2, "--")):
            S = np.asarray(scores[layer])
            for k in range(S.shape[1]):
                ax.plot(steps, S[:, k], style, color=HEAD_COLOURS[k + 2 * (layer - 1)],
                        label=f"layer {layer} head {k + 1}")  # fmt: skip
        if drop is not None:
            ax.axvline(drop, color="black", linestyle="--", linewidth=1)
        ax.set(xlabel="step", ylabel="score", title=f"{name} score", ylim=(0, 1.02))
    axes[0].legend(fontsize="small")
    return fig


def accuracy_by_position(per_position, visible, vocab_size):
    """Held-out accuracy at each output position, green where the answer is visible.

    Parameters
    ----------
    per_position : array_like of shape (T,)
        Accuracy at each output position.
    visible : array_like of bool, shape (T,)
        Whether the causal mask lets the position see its answer.
    vocab_size : int
        Letters in the vocabulary (chance is ``1/V``).

    Returns
    -------
    fig : matplotlib Figure
    """
    T = len(per_position)
    fig, (ax,) = line_figure(1)
    ax.bar(
        np.arange(T),
        per_position,
        color=[HEAD_COLOURS[2] if v else HEAD_COLOURS[5] for v in visible],
    )
    ax.axhline(1 / vocab_size, color="grey", linestyle="--", label="chance 1/V")
    ax.set(xlabel="output position i", ylabel="held-out accuracy", ylim=(0, 1.02))
    ax.set_title("causal mask: the answer at T−1−i\nis visible only for i ≥ (T−1)/2")
    ax.set_xticks(range(T))
    ax.legend(loc="center left")
    return fig


def turning_figure(turned, title=None):
    """Arrows from the origin to one pair of features turned to positions 0, 1, ….

    Parameters
    ----------
    turned : array_like of shape (n_positions, 2)
        The pair at each position (all of one length).
    title : str, optional
        By default "one pair at positions 0 … n-1".

    Returns
    -------
    fig : matplotlib Figure
    """
    turned = np.asarray(turned, dtype=float)
    radius = float(np.linalg.norm(turned[0]))
    fig, (ax,) = line_figure(1, square=True)
    ax.add_patch(plt.Circle((0, 0), radius, fill=False, ls=":", color="grey"))
    last = max(len(turned) - 1, 1)
    for p, (a, b) in enumerate(turned):
        ax.annotate(
            "", (a, b), (0, 0), arrowprops={"arrowstyle": "->", "color": plt.cm.cividis(p / last)}
        )
        ax.text(1.18 * a, 1.18 * b, f"p={p}", ha="center", va="center")
    lim = 1.45 * radius
    ax.set_xlim(-lim, lim), ax.set_ylim(-lim, lim), ax.set_aspect("equal")
    ax.set_title(title if title is not None else f"one pair at positions 0 … {len(turned) - 1}")
    return fig
