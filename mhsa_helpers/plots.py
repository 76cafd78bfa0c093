"""Figures and small visible checks for the notebooks.

Colour maps are colour-blind safe: ``cividis`` for values of one sign
(weights in [0, 1]) and ``PuOr`` for signed values; heads get the
Okabe-Ito palette. ``-inf`` entries (masked scores) are drawn in grey and
labelled ``−∞``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["HEAD_COLOURS", "check_shape", "heads_figure", "heatmap"]

#: Head colours: the Okabe-Ito palette (told apart under the common colour-vision
#: deficiencies) without its yellow, which does not read on white; black and grey
#: take heads 7 and 8. Titles sit on a chip of the colour, in black or white text.
HEAD_COLOURS = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#000000",
    "#7F7F7F",
]
SEQUENTIAL = "cividis"
DIVERGING = "PuOr"


def _retina() -> None:
    """In a notebook, figures as PNGs of twice the resolution, shown at the same size.

    Sharp on a screen of pixel ratio 2 (as sharp as the SVG widgets beside
    them); nothing changes outside IPython.
    """
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # no IPython here: figures go to files or nowhere
        return
    if get_ipython() is not None:
        set_matplotlib_formats("retina")


_retina()


def check_shape(a, shape) -> None:
    """Assert that ``a`` has ``shape`` and say so, as d2l's ``check_shape``."""
    got = np.shape(a)
    assert got == tuple(shape), f"expected shape {tuple(shape)}, but got {got}"
    print(f"\u2713 shape {got}")


def heatmap(
    M,
    row_labels=None,
    col_labels=None,
    title="",
    ax=None,
    annotate=None,
    fmt="{:.2f}",
    cmap=None,
    vmin=None,
    vmax=None,
    frame_colour=None,
):
    """Draw a matrix as a labelled heatmap.

    Parameters
    ----------
    M : ndarray of shape (n_rows, n_cols)
    row_labels, col_labels : list of str, optional
        Token names (or feature names) for the axes.
    title : str
    ax : matplotlib Axes, optional
        A new figure is made when not given.
    annotate : bool, optional
        Write each value in its cell; by default when the matrix is at most 12 x 12.
    cmap : str, optional
        Defaults to a sequential map for non-negative data, diverging otherwise.
    frame_colour : str, optional
        Colour of the frame and title (used for per-head colours).

    Returns
    -------
    ax : matplotlib Axes
    """
    M = np.asarray(M, dtype=float)
    if M.ndim == 1:
        M = M[None, :]
    if M.ndim != 2:
        raise ValueError(f"heatmap needs a matrix of shape (n_rows, n_cols), got {M.shape}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.55 * M.shape[1] + 2, 0.45 * M.shape[0] + 1.2))
    finite = np.isfinite(M)
    shown = np.ma.masked_where(~finite, M)
    data = M[finite]
    if cmap is None:
        cmap = SEQUENTIAL if data.size == 0 or data.min() >= 0 else DIVERGING
    if cmap == DIVERGING and vmin is None and vmax is None and data.size:
        vmax = float(np.abs(data).max()) or 1.0
        vmin = -vmax
    cm = plt.get_cmap(cmap).with_extremes(bad="#d9d9d9")
    im = ax.imshow(shown, cmap=cm, vmin=vmin, vmax=vmax, aspect="auto")
    n_r, n_c = M.shape
    ax.set_xticks(range(n_c), labels=col_labels if col_labels is not None else range(n_c))
    ax.set_yticks(range(n_r), labels=row_labels if row_labels is not None else range(n_r))
    if col_labels is not None and max(len(str(c)) for c in col_labels) > 3:
        ax.tick_params(axis="x", labelrotation=45)
    if annotate is None:
        annotate = n_r <= 12 and n_c <= 12
    if annotate:
        for r in range(n_r):
            for c in range(n_c):
                v = M[r, c]
                if np.isneginf(v):
                    text, colour = "\u2212\u221e", "black"
                else:
                    text = fmt.format(v)
                    red, green, blue, _ = im.cmap(im.norm(v))
                    luminance = 0.299 * red + 0.587 * green + 0.114 * blue
                    colour = "white" if luminance < 0.5 else "black"
                ax.text(c, r, text, ha="center", va="center", fontsize=8, color=colour)
    ax.set_title(title, color=frame_colour or "black", fontsize=10)
    if frame_colour:
        for spine in ax.spines.values():
            spine.set_edgecolor(frame_colour)
            spine.set_linewidth(3)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def heads_figure(H, row_labels=None, col_labels=None, title="", titles=None, **kwargs):
    """One heatmap per head, each framed in its head's colour.

    Parameters
    ----------
    H : ndarray of shape (h, n_rows, n_cols)
    titles : list of str, optional
        One title per head; "head 1", "head 2" … by default.
    **kwargs
        Passed to :func:`heatmap`; without ``vmin``/``vmax`` every head shares one
        colour scale, so that heads can be compared.

    Returns
    -------
    fig : matplotlib Figure
    """
    H = np.asarray(H)
    h = H.shape[0]
    finite = H[np.isfinite(H)]
    if "vmin" not in kwargs and "vmax" not in kwargs and finite.size:  # one scale for all heads
        if finite.min() < 0:
            vmax = float(np.abs(finite).max()) or 1.0
            kwargs.update(vmin=-vmax, vmax=vmax, cmap=kwargs.get("cmap", DIVERGING))
        else:
            kwargs.update(vmin=0.0, vmax=float(finite.max()) or 1.0)
    width = 0.55 * H.shape[2] + 2
    fig, axes = plt.subplots(1, h, figsize=(width * h, 0.45 * H.shape[1] + 1.4), squeeze=False)
    for i, ax in enumerate(axes[0]):
        colour = HEAD_COLOURS[i % len(HEAD_COLOURS)]
        label = titles[i] if titles is not None else f"head {i + 1}"
        heatmap(H[i], row_labels, col_labels, label, ax=ax, frame_colour=colour, **kwargs)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
