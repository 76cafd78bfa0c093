"""Heatmaps for the notebooks, and the small visible check ``check_shape``.

The size rule and the colours are :mod:`mhsa_helpers.plot_style`'s; line
plots are in :mod:`mhsa_helpers.line_plots`.

One masking rule for every figure, the same as the pictures drawn in the page
(``mhsa_helpers/widgets/front/draw.js``): a cell blocked by an attention mask (its
score ``−∞``, its weight 0) is hatched, light grey with dark diagonal stripes,
and carries **no number**, so that a blocked weight never reads as a learned
weight near 0.00. A cell is blocked where the matrix itself is ``−∞`` (a mask,
or scores with the mask added) or where the ``mask`` given with it blocks it (a
boolean array, ``True`` = blocked, or an additive mask, ``−∞`` = blocked). A
figure with blocked cells has a legend entry for them, :data:`BLOCKED_LABEL`. A mask
itself (0 or ``−∞`` only) is drawn as a mask: allowed cells white with no number, no
colour bar.

Heatmaps are laid out by the cell (:func:`heatmaps`): a cell with its number
written in it is :data:`~mhsa_helpers.plot_style.CELL_HEIGHT_PX` high and as
wide as the widest number plus :data:`~mhsa_helpers.plot_style.CELL_PAD_PX`;
panels that do not fit in one row wrap into a second, and where even two rows
do not fit, the numbers are dropped and the cells shrink, never the text.
"""

from __future__ import annotations

import math

import matplotlib
import matplotlib.patches
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from .plot_style import (
    BLOCKED_FILL,
    BLOCKED_HATCH,
    BLOCKED_HATCH_WIDTH,
    BLOCKED_LABEL,
    BLOCKED_STRIPES,
    CELL_HEIGHT_PX,
    CELL_PAD_PX,
    DIVERGING,
    DPI,
    FONT_PX,
    HEAD_COLOURS,
    MAX_CELLS_HEIGHT_PX,
    PLAIN_CELL_PX,
    SEQUENTIAL,
    TITLE_PX,
    WIDTH_PX,
    points,
    text_px,
)

__all__ = [
    "blocked_cells",
    "blocked_patch",
    "check_shape",
    "heads_figure",
    "heatmap",
    "heatmaps",
    "mark_cells",
]


def check_shape(a, shape) -> None:
    """Assert that ``a`` has ``shape`` and say so, as d2l's ``check_shape``."""
    got = np.shape(a)
    assert got == tuple(shape), f"expected shape {tuple(shape)}, but got {got}"
    print(f"\u2713 shape {got}")


# ---------------------------------------------------------------- heatmaps

_PANEL_KEYS = (
    "M",
    "row_labels",
    "col_labels",
    "title",
    "annotate",
    "fmt",
    "cmap",
    "vmin",
    "vmax",
    "frame_colour",
    "xlabel",
    "ylabel",
    "mask",
    "neutral",
)
_LINE_PX = 1.25 * FONT_PX  # height of one line of text
_TICK_PX = 10  # tick and its gap to the label
_GAP_PX = 24  # between two panels
_CBAR_PX = 12  # width of a colour bar


def _matrix(M) -> np.ndarray:
    M = np.asarray(M, dtype=float)
    if M.ndim == 1:
        M = M[None, :]
    if M.ndim != 2:
        raise ValueError(f"heatmap needs a matrix of shape (n_rows, n_cols), got {M.shape}.")
    return M


def blocked_cells(M, mask=None) -> np.ndarray:
    """Which cells of ``M`` a mask blocks: ``M`` is ``−∞`` there, or ``mask`` blocks them.

    Parameters
    ----------
    M : array_like of shape (..., n_rows, n_cols)
        Weights or scores (a score of ``−∞`` is blocked).
    mask : array_like, optional
        Broadcastable to ``M``'s shape: booleans (``True`` = blocked) or an
        additive mask (``−∞`` = blocked, 0 = allowed).

    Returns
    -------
    blocked : ndarray of bool, of ``M``'s shape
    """
    M = np.asarray(M, dtype=float)
    blocked = np.isneginf(M)
    if mask is not None:
        mask = np.asarray(mask)
        by_mask = mask if mask.dtype == bool else np.isneginf(mask.astype(float))
        try:
            blocked = blocked | np.broadcast_to(by_mask, M.shape)
        except ValueError:
            raise ValueError(
                f"a mask of shape {mask.shape} does not broadcast to the matrix's {M.shape}"
            ) from None
    return blocked


def blocked_patch(**kwargs):
    """A patch drawn like a blocked cell (for a legend, or over a cell)."""
    from matplotlib.patches import Rectangle

    return Rectangle(
        kwargs.pop("xy", (0, 0)),
        kwargs.pop("width", 1),
        kwargs.pop("height", 1),
        facecolor=BLOCKED_FILL,
        hatch=BLOCKED_HATCH,
        hatchcolor=BLOCKED_STRIPES,
        hatch_linewidth=BLOCKED_HATCH_WIDTH,
        linewidth=0,
        **kwargs,
    )


def _scale(M, cmap, vmin, vmax, blocked=None):
    """The colour map and its limits: sequential for data >= 0, else diverging and symmetric.

    Blocked cells are not data: they do not set the limits.
    """
    data = M[np.isfinite(M) & (True if blocked is None else ~blocked)]
    if cmap is None:
        cmap = SEQUENTIAL if data.size == 0 or data.min() >= 0 else DIVERGING
    if cmap == DIVERGING and vmin is None and vmax is None and data.size:
        vmax = float(np.abs(data).max()) or 1.0
        vmin = -vmax
    if vmin is None:
        vmin = float(data.min()) if data.size else 0.0
    if vmax is None:
        vmax = float(data.max()) if data.size else 1.0
    return cmap, vmin, vmax


def _cell_text(v, fmt) -> str:
    return "\u2212\u221e" if np.isneginf(v) else fmt.format(v).replace("-", "\u2212")


def _panel(spec, common) -> dict:
    """One panel's settings: a dict, or a tuple ``(M, row_labels, col_labels, title)``."""
    p = dict.fromkeys(_PANEL_KEYS)
    p.update(title="", fmt="{:.2f}")
    p.update(common)
    if isinstance(spec, dict):
        p.update(spec)
    else:
        p.update(zip(_PANEL_KEYS[: len(spec)], spec, strict=True))
    unknown = set(p) - set(_PANEL_KEYS)
    if unknown:
        raise TypeError(f"unknown heatmap settings {sorted(unknown)}")
    p["M"] = M = _matrix(p["M"])
    p["blocked"] = blocked = blocked_cells(M, p["mask"])  # (n_rows, n_cols)
    if p["neutral"] is None:  # an additive mask (0 or −∞ only) is drawn as a mask
        p["neutral"] = bool(
            blocked.any() and not M[~blocked].any() and np.isfinite(M[~blocked]).all()
        )
    if p["neutral"]:  # allowed white, blocked hatched: no colour scale, no numbers
        p["cmap"], p["vmin"], p["vmax"], p["annotate"] = "Greys", 0.0, 1.0, False
    p["cmap"], p["vmin"], p["vmax"] = _scale(M, p["cmap"], p["vmin"], p["vmax"], blocked)
    n_r, n_c = M.shape
    p["rows"] = [str(s) for s in (p["row_labels"] if p["row_labels"] is not None else range(n_r))]
    p["cols"] = [str(s) for s in (p["col_labels"] if p["col_labels"] is not None else range(n_c))]
    if len(p["rows"]) != n_r or len(p["cols"]) != n_c:
        raise ValueError(
            f"{len(p['rows'])} row and {len(p['cols'])} column labels for a {n_r} x {n_c} matrix"
        )
    numbers = [] if p["neutral"] else [_cell_text(v, p["fmt"]) for v in M[~blocked]]
    p["number_px"] = max(text_px(s) for s in numbers) if numbers else 0.0
    p["want_numbers"] = p["annotate"] if p["annotate"] is not None else n_r <= 12 and n_c <= 12
    return p


def _step(size_px: float, label_px: float) -> int:
    """Label every ``step``-th cell, so that labels ``label_px`` wide do not touch."""
    return max(1, math.ceil(label_px / max(size_px, 1e-9)))


def _bar_labels(vmin, vmax, length_px) -> list[str]:
    """The tick labels matplotlib will write on a colour bar ``length_px`` long."""
    if not vmax > vmin:
        return [_cell_text(vmin, "{:g}")]
    nbins = min(9, max(1, int(length_px // (2 * FONT_PX))))  # as matplotlib's AutoLocator
    ticks = MaxNLocator(nbins, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, vmax)
    ticks = ticks[(ticks >= vmin - 1e-12) & (ticks <= vmax + 1e-12)]
    decimals = max(len(f"{t:.6g}".partition(".")[2]) for t in ticks)
    return [_cell_text(t, f"{{:.{decimals}f}}") for t in ticks]


def _geometry(p, cell_w, cell_h, show_rows, colour_bar) -> dict:
    """Where the parts of one panel go, in CSS pixels, for cells of ``cell_w`` x ``cell_h``."""
    n_r, n_c = p["M"].shape
    g = {"cell_w": cell_w, "cell_h": cell_h, "show_rows": show_rows}
    g["row_step"] = _step(cell_h, _LINE_PX + 2)
    rows_px = max(text_px(s) for s in p["rows"][:: g["row_step"]])
    col_px = max(text_px(s) for s in p["cols"])
    # named columns turn their labels by 45° where they do not fit; numbered ones are thinned
    g["rotate"] = p["col_labels"] is not None and col_px > cell_w - 4 and n_c > 1
    g["col_step"] = _step(cell_w * 0.7, _LINE_PX + 2) if g["rotate"] else _step(cell_w, col_px + 4)
    left = (rows_px + _TICK_PX if show_rows else 0) + (_LINE_PX + 4 if p["ylabel"] else 0)
    bottom = _TICK_PX + ((col_px + _LINE_PX) * 0.72 if g["rotate"] else _LINE_PX)
    bottom += _LINE_PX + 4 if p["xlabel"] else 0
    width, height = n_c * cell_w, n_r * cell_h
    title_px = text_px(p["title"], TITLE_PX)
    overhang = max(0.0, (title_px - width) / 2)  # a title wider than its cells
    left = max(left, overhang)
    if g["rotate"]:  # the first column's label, turned, reaches left of the cells
        left = max(left, 0.72 * (text_px(p["cols"][0]) + _LINE_PX) - cell_w / 2)
    right = overhang
    if colour_bar:
        ticks = max(text_px(label) for label in _bar_labels(p["vmin"], p["vmax"], height))
        right = max(right, 10 + _CBAR_PX + _TICK_PX + ticks)
    g.update(left=left, right=right, bottom=bottom, top=(1.6 * TITLE_PX if p["title"] else 6))
    g.update(width=left + width + right, height=g["top"] + height + bottom, cells=(width, height))
    return g


def _layout(panels, columns, shared_bar, numbers):
    """Panels per row, the rows' geometries and the figure's width, for one cell rule."""
    n = len(panels)
    cell_w = max((p["number_px"] for p in panels), default=0) + CELL_PAD_PX
    rows = [list(range(i, min(i + columns, n))) for i in range(0, n, columns)]

    def build(cw, ch):
        geoms, width = [], 0.0
        for row in rows:
            gs = []
            for k, i in enumerate(row):
                same = (
                    k > 0
                    and panels[i]["rows"] == panels[row[k - 1]]["rows"]
                    and not panels[i]["ylabel"]
                )
                bar = not shared_bar and not panels[i]["neutral"]
                gs.append(_geometry(panels[i], cw, ch, not same, bar))
            geoms.append(gs)
            width = max(width, sum(g["width"] for g in gs) + _GAP_PX * (len(gs) - 1))
        if shared_bar:
            width += 10 + _CBAR_PX + _TICK_PX + 40
        return geoms, width

    if numbers:
        return build(cell_w, CELL_HEIGHT_PX)
    n_r = max(p["M"].shape[0] for p in panels)
    n_c = max(sum(panels[i]["M"].shape[1] for i in row) for row in rows)
    side = PLAIN_CELL_PX
    for _ in range(4):  # the labels' room depends a little on the cell size
        _, width = build(side, min(side, MAX_CELLS_HEIGHT_PX / n_r))
        if width <= WIDTH_PX:
            break
        side = max(2.0, side - (width - WIDTH_PX) / n_c)
    return build(side, min(side, MAX_CELLS_HEIGHT_PX / n_r))


def _draw(ax, p, g, numbers, cax):
    """Draw panel ``p`` into ``ax`` with geometry ``g``; the colour bar goes to ``cax``."""
    M, blocked = p["M"], p["blocked"]
    n_r, n_c = M.shape
    cm = plt.get_cmap(p["cmap"]).with_extremes(bad="#d9d9d9")
    if p["neutral"]:  # a mask: every allowed cell white, framed
        cm = matplotlib.colors.ListedColormap(["#ffffff"])
    im = ax.imshow(
        np.ma.masked_where(~np.isfinite(M) | blocked, M),
        cmap=cm,
        vmin=p["vmin"],
        vmax=p["vmax"],
        aspect="auto",
    )
    xs, ys = range(0, n_c, g["col_step"]), range(0, n_r, g["row_step"])
    ax.set_xticks(xs, labels=[p["cols"][i] for i in xs])
    ax.set_yticks(ys, labels=[p["rows"][i] for i in ys] if g["show_rows"] else [])
    if g["rotate"]:
        ax.tick_params(axis="x", labelrotation=45)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")
    for r, c in zip(*np.nonzero(blocked), strict=True):  # hatched, as in the explorer
        ax.add_patch(blocked_patch(xy=(c - 0.5, r - 0.5), gid="blocked"))
    if numbers:
        for (r, c), v in np.ndenumerate(M):
            if blocked[r, c] or p["neutral"]:
                continue  # no number: a blocked weight is not a learned 0.00; a mask is white
            if not np.isfinite(v):
                colour = "black"
            else:
                red, green, blue, _ = im.cmap(im.norm(v))
                colour = "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black"
            ax.text(
                c,
                r,
                _cell_text(v, p["fmt"]),
                ha="center",
                va="center",
                fontsize=points(FONT_PX),
                color=colour,
            )
    ax.set_title(p["title"], color=p["frame_colour"] or "black", fontsize=points(TITLE_PX))
    if p["xlabel"]:
        ax.set_xlabel(p["xlabel"])
    if p["ylabel"]:
        ax.set_ylabel(p["ylabel"])
    if p["frame_colour"]:
        for spine in ax.spines.values():
            spine.set_edgecolor(p["frame_colour"])
            spine.set_linewidth(3)
    if cax is not None:
        ax.figure.colorbar(im, cax=cax)
    return im


_LEGEND_PX = _LINE_PX + 16  # height of the legend's row under the panels
_LEGEND_KW = {"frameon": False, "handlelength": 2.4, "handleheight": 1.2, "borderaxespad": 0.0}


def _legend_width_px() -> float:
    """Width of the blocked cells' legend entry: swatch, gap and text, in CSS px."""
    return (_LEGEND_KW["handlelength"] + 0.8 + 0.8) * FONT_PX + text_px(BLOCKED_LABEL)


def heatmaps(panels, title="", columns=None, **kwargs):
    """Draw matrices side by side as labelled heatmaps, sized by the course's cell rule.

    Each cell with its number is :data:`CELL_HEIGHT_PX` high and as wide as the
    widest number of the figure plus :data:`CELL_PAD_PX`, so the numbers are
    :data:`FONT_PX` high however many panels there are. Panels that do not fit
    in :data:`MAXWIDTH_PX` wrap into rows; where more than two rows would be
    needed (or a matrix is larger than 12 x 12), the numbers are left out and
    the cells shrink to fit. Panels whose colour scales are all the same share
    one colour bar; a panel with the same row labels as its left neighbour
    leaves them to it.

    Parameters
    ----------
    panels : list of dict or tuple
        One per matrix: a dict of :func:`heatmap`'s settings (``M``,
        ``row_labels``, ``col_labels``, ``title``, ``annotate``, ``fmt``,
        ``cmap``, ``vmin``, ``vmax``, ``frame_colour``, ``xlabel``,
        ``ylabel``, ``mask``), or a tuple ``(M, row_labels, col_labels, title)``.
    title : str
        Title above the whole figure.
    columns : int, optional
        Panels per row; by default as many as fit.
    **kwargs
        Settings shared by every panel (a panel's own settings win).

    Returns
    -------
    fig : matplotlib Figure
    """
    ps = [_panel(spec, kwargs) for spec in panels]
    if not ps:
        raise ValueError("heatmaps needs at least one matrix")
    scaled = [p for p in ps if not p["neutral"]]  # a mask has no colour scale
    shared_bar = len(ps) > 1 and len({(p["cmap"], p["vmin"], p["vmax"]) for p in scaled}) == 1
    numbers = bool(scaled) and all(p["want_numbers"] for p in scaled)
    choice = None
    if columns is not None:
        choice = (columns, numbers)
    elif numbers:
        for c in range(len(ps), 0, -1):
            if math.ceil(len(ps) / c) > 2:
                break
            if _layout(ps, c, shared_bar, True)[1] <= WIDTH_PX:
                choice = (c, True)
                break
    if choice is None:
        choice = (len(ps), False)
        while choice[0] > 1 and _layout(ps, choice[0], shared_bar, False)[1] > WIDTH_PX:
            choice = (choice[0] - 1, False)
    columns, numbers = choice
    geoms, width = _layout(ps, columns, shared_bar, numbers)
    top = 1.8 * TITLE_PX if title else 0.0
    row_heights = [max(g["height"] for g in gs) for gs in geoms]
    height = top + sum(row_heights) + _GAP_PX * (len(geoms) - 1)
    legend = any(p["blocked"].any() for p in ps)
    if legend:  # one row under the panels for the blocked cells' swatch
        height += _LEGEND_PX
        masks = any(p["neutral"] for p in ps)  # and a swatch for a mask's allowed cells
        width = max(
            width, _legend_width_px() + (text_px("allowed (0)") + 5 * FONT_PX if masks else 0)
        )
    fig = plt.figure(figsize=(width / DPI, height / DPI))

    def rect(x, y, w, h):  # CSS px from the top left to figure fractions
        return [x / width, 1 - (y + h) / height, w / width, h / height]

    y = top
    cells_top, cells_bottom, cells_right, images = None, 0.0, 0.0, []
    for row, (gs, row_height) in enumerate(zip(geoms, row_heights, strict=True)):
        x = 0.0
        for k, g in enumerate(gs):
            p = ps[row * columns + k]
            w, h = g["cells"]
            ax = fig.add_axes(rect(x + g["left"], y + g["top"], w, h))
            cax = None
            if not shared_bar and not p["neutral"]:
                cax = fig.add_axes(rect(x + g["left"] + w + 10, y + g["top"], _CBAR_PX, h))
            images.append(_draw(ax, p, g, numbers, cax))
            cells_top = y + g["top"] if cells_top is None else cells_top
            cells_bottom = max(cells_bottom, y + g["top"] + h)
            cells_right = max(cells_right, x + g["left"] + w + g["right"])
            x += g["width"] + _GAP_PX
        y += row_height + _GAP_PX
    if shared_bar:
        cax = fig.add_axes(rect(cells_right + 10, cells_top, _CBAR_PX, cells_bottom - cells_top))
        fig.colorbar(
            next(im for im, p in zip(images, ps, strict=True) if not p["neutral"]), cax=cax
        )
    if title:
        fig.suptitle(title, y=1 - 0.3 * TITLE_PX / height, va="top", fontsize=points(TITLE_PX))
    if legend:
        allowed = (
            [  # a mask's white cells say what they are
                matplotlib.patches.Patch(
                    facecolor="#ffffff", edgecolor="#555555", label="allowed (0)"
                )
            ]
            if any(p["neutral"] for p in ps)
            else []
        )
        fig.legend(
            handles=[*allowed, blocked_patch(label=BLOCKED_LABEL)],
            ncols=1 + len(allowed),
            loc="lower left",
            bbox_to_anchor=(0.0, 0.0),
            **_LEGEND_KW,
        )
    return fig


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
    xlabel=None,
    ylabel=None,
    mask=None,
):
    """Draw a matrix as a labelled heatmap.

    Parameters
    ----------
    M : ndarray of shape (n_rows, n_cols)
    row_labels, col_labels : list of str, optional
        Token names (or feature names) for the axes.
    title : str
    ax : matplotlib Axes, optional
        A new figure, sized by the cell rule of :func:`heatmaps`, is made when
        not given; a given Axes keeps its size.
    annotate : bool, optional
        Write each value in its cell; by default when the matrix is at most
        12 x 12 (and, in a new figure, when the numbers fit).
    fmt : str
        Format of the numbers in the cells.
    cmap : str, optional
        Defaults to a sequential map for non-negative data, diverging otherwise.
    vmin, vmax : float, optional
        Limits of the colour scale.
    frame_colour : str, optional
        Colour of the frame and title (used for per-head colours).
    xlabel, ylabel : str, optional
        Axis labels.
    mask : array_like, optional
        The attention mask, broadcastable to ``M``: booleans (``True`` =
        blocked) or an additive mask (``−∞`` = blocked). Blocked cells, and
        cells where ``M`` is ``−∞``, are hatched with no number, and a legend
        says so.

    Returns
    -------
    ax : matplotlib Axes
    """
    settings = {
        "M": M,
        "row_labels": row_labels,
        "col_labels": col_labels,
        "title": title,
        "annotate": annotate,
        "fmt": fmt,
        "cmap": cmap,
        "vmin": vmin,
        "vmax": vmax,
        "frame_colour": frame_colour,
        "xlabel": xlabel,
        "ylabel": ylabel,
        "mask": mask,
    }
    if ax is None:
        return heatmaps([settings]).axes[0]
    p = _panel(settings, {})
    bbox = ax.get_position().transformed(ax.figure.transFigure)  # display pixels
    scale = DPI / ax.figure.dpi
    n_r, n_c = p["M"].shape
    g = _geometry(p, bbox.width * scale / n_c, bbox.height * scale / n_r, True, False)
    im = _draw(ax, p, g, p["want_numbers"], None)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if p["blocked"].any():  # under the tick labels
        ax.legend(
            handles=[blocked_patch(label=BLOCKED_LABEL)],
            loc="upper left",
            bbox_to_anchor=(0.0, -g["bottom"] / (n_r * g["cell_h"])),
            **_LEGEND_KW,
        )
    return ax


def heads_figure(H, row_labels=None, col_labels=None, title="", titles=None, mask=None, **kwargs):
    """One heatmap per head, each framed in its head's colour.

    Laid out by :func:`heatmaps`: one row of heads where they fit with their
    numbers, two rows where they do not, and no numbers beyond that.

    Parameters
    ----------
    H : ndarray of shape (h, n_rows, n_cols)
    row_labels, col_labels : list of str, optional
        Token names (or feature names) for the axes, the same for every head.
    title : str
        Title above the heads.
    titles : list of str, optional
        One title per head; "head 1", "head 2" … by default.
    mask : array_like, optional
        The attention mask, broadcastable to ``H``: ``(n_rows, n_cols)`` for
        every head, or ``(h, n_rows, n_cols)``; booleans (``True`` = blocked)
        or an additive mask (``−∞`` = blocked). Blocked cells, and cells where
        ``H`` is ``−∞``, are hatched with no number, and a legend says so.
    **kwargs
        Passed to :func:`heatmaps`; without ``vmin``/``vmax`` every head shares one
        colour scale, so that heads can be compared.

    Returns
    -------
    fig : matplotlib Figure
    """
    H = np.asarray(H, dtype=float)
    h = H.shape[0]
    blocked = blocked_cells(H, mask)  # (h, n_rows, n_cols)
    finite = H[np.isfinite(H) & ~blocked]
    if "vmin" not in kwargs and "vmax" not in kwargs and finite.size:  # one scale for all heads
        if finite.min() < 0:
            vmax = float(np.abs(finite).max()) or 1.0
            kwargs.update(vmin=-vmax, vmax=vmax, cmap=kwargs.get("cmap", DIVERGING))
        else:
            kwargs.update(vmin=0.0, vmax=float(finite.max()) or 1.0)
    panels = [
        {
            "M": H[i],
            "title": titles[i] if titles is not None else f"head {i + 1}",
            "frame_colour": HEAD_COLOURS[i % len(HEAD_COLOURS)],
            "mask": blocked[i],
        }
        for i in range(h)
    ]
    return heatmaps(panels, title, row_labels=row_labels, col_labels=col_labels, **kwargs)


def mark_cells(fig, cells, colour="#D55E00"):
    """Outline cells of a :func:`heads_figure`'s heatmaps (a stripe a head follows).

    Parameters
    ----------
    fig : matplotlib Figure
        As :func:`heads_figure` returns it.
    cells : list
        One entry per panel, in order: a list of ``(row, column)`` cells to outline.
    colour : str

    Returns
    -------
    fig : matplotlib Figure
    """
    panels = [ax for ax in fig.axes if ax.images]
    for ax, marked in zip(panels, cells, strict=True):
        for i, j in marked:
            ax.add_patch(
                matplotlib.patches.Rectangle(
                    (j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=colour, linewidth=2
                )
            )
    return fig
