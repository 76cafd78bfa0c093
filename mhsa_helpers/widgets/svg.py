"""Vector pictures for the widgets: panels of heatmaps, their colour scale and the picture.

SVG is drawn by the browser at the screen's pixel ratio, so it stays crisp on
any display, and building it is string work (a few milliseconds), so every
picture, first visits included, is quick. Every picture is :data:`WIDTH`
wide; a grid of panels is as tall as its panels need (at most the height it
is given, :data:`HEIGHT` by default), so no box is left blank.

Special values are never painted like ordinary ones: −∞ (a blocked position)
is hatched, NaN is magenta with "NaN", +∞ black with "∞"; a legend under the
picture names each kind present.

Panels are linked: every cell carries classes naming the tokens it belongs to
(``q3``: query token 3's row, ``k5``: key token 5, ``t2``: token 2 as a row of
X, Q, K or V; ``q3h1``: the same within head 1's columns). Hovering or
focusing a cell shows its value and meaning in a tooltip beside the cell
(placed when the picture is built, always inside it) and dims every cell
that shares none of its classes, so the query's row and the key's column
light up in every panel, the way the numbers flow (a CSS rule per class,
written into the picture: no script runs; :mod:`mhsa_helpers.widgets.svg_tips`).
The explorer's query view is :mod:`mhsa_helpers.widgets.svg_query`.

Ids (the hatching, the colour bar's gradient) are made afresh for every
drawing: two pictures of the same state in one page (another notebook's tab)
never share an id, so neither borrows the other's definitions.
"""

from __future__ import annotations

import itertools
import math
import re
import secrets
from dataclasses import dataclass, field
from html import escape

import matplotlib
import numpy as np

from ..plot_style import BLOCKED_FILL, BLOCKED_LABEL, BLOCKED_STRIPES, DIVERGING, SEQUENTIAL
from .svg_tips import Tip, cell_key, link_classes, link_style, tooltip

__all__ = [
    "HEIGHT",
    "WIDTH",
    "Panel",
    "Scale",
    "colourbar",
    "fmt",
    "grid",
    "legend",
    "panel_svg",
    "picture",
    "special_kinds",
    "step_scale",
]

#: CSS pixels: every picture's width, and the tallest a picture may be (a grid of panels is as
#: tall as it needs, within what its frame leaves: :meth:`live.Frame.picture_budget`).
WIDTH, HEIGHT = 920, 520
FONT = "font-family='DejaVu Sans, Arial, sans-serif'"
NAN_FILL, INF_FILL = "#ff00ff", "#000000"
#: Cells not computed yet (a row not decoded, a block not read): dotted grey, not the
#: hatching of a cell blocked by a mask, which means something else.
NOT_YET_FILL = "url(#notyet)"
_COLOURBAR = (WIDTH - 78, 40, 14, HEIGHT - 150)  # x, y, width, height


def _lut(name: str) -> np.ndarray:
    rgba = matplotlib.colormaps[name](np.linspace(0, 1, 256))
    return np.array([matplotlib.colors.to_hex(c) for c in rgba])


_LUTS = {name: _lut(name) for name in (SEQUENTIAL, DIVERGING)}


def text_colour(fill: str) -> str:
    """Black or white, whichever reads on ``fill``."""
    r, g, b = matplotlib.colors.to_rgb(fill)
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "#ffffff"


@dataclass(frozen=True)
class Scale:
    """One colour scale: a colour map and its range."""

    cmap: str = SEQUENTIAL
    vmin: float = 0.0
    vmax: float = 1.0

    def fills(self, M: np.ndarray) -> np.ndarray:
        """Hex colours of the finite entries of ``M`` (others get any colour)."""
        span = (self.vmax - self.vmin) or 1.0
        with np.errstate(all="ignore"):
            idx = np.nan_to_num((M - self.vmin) / span * 255, nan=0, posinf=255, neginf=0)
        return _LUTS[self.cmap][np.clip(idx, 0, 255).astype(int)]


def step_scale(matrices, fixed: tuple[float, float] | None = None) -> Scale:
    """One scale for all ``matrices`` of a step: diverging around 0 if any is negative."""
    if fixed is not None:
        return Scale(SEQUENTIAL, *fixed)
    data = np.concatenate([np.asarray(M, float)[np.isfinite(M)].ravel() for M in matrices])
    if data.size and data.min() < 0:
        vmax = float(np.abs(data).max()) or 1.0
        return Scale(DIVERGING, -vmax, vmax)
    return Scale(SEQUENTIAL, 0.0, float(data.max()) if data.size and data.max() > 0 else 1.0)


@dataclass
class Panel:
    """One matrix of a picture, with what its rows and columns are.

    ``blocks`` are ``(first column, end column, colour, label)`` runs of
    columns that belong to one head; ``colour`` frames the whole panel.
    """

    M: np.ndarray
    title: str
    rows: list
    cols: list
    row_kind: str = "row"
    col_kind: str = "column"
    colour: str | None = None
    highlight: int | None = None
    blocks: list = field(default_factory=list)
    neutral: bool = False  # finite entries white (a mask: 0 allowed, −∞ blocked)
    row_labels: bool = True
    col_labels: bool = True
    #: Cells the mask blocks (booleans of M's shape): drawn hatched, with no number, like a
    #: −∞ score, so that a blocked weight never looks like a learned weight near 0.
    blocked: np.ndarray | None = None
    #: What −∞ means here when it is not a mask's block (e.g. "not decoded yet"): such cells
    #: are drawn dotted grey with this tip, never with the mask's hatching.
    pending: str = ""
    #: What a cell's value means, after "value": e.g. "how much the query takes from the key".
    meaning: str = ""
    #: Link prefixes of rows and columns ("q" query, "k" key, "t" token, a tuple for several;
    #: None: no link);
    #: by default from the kinds: a "query" axis links as "q", "key" as "k", "token" as "t".
    links: tuple | None = None

    def link_prefixes(self) -> tuple:
        """``(row prefix, column prefix)`` of the cells' link classes."""
        if self.links is not None:
            return self.links
        kind = {"query": "q", "key": "k", "token": "t"}
        return kind.get(self.row_kind), kind.get(self.col_kind)


LABELS, GAP, BELOW = 64.0, 22.0, 76.0  # row labels; between panels; title + column labels
#: The smallest cell in CSS px: where long notes leave the picture no room, its cells take
#: this size and the picture grows past its budget rather than vanish.
MIN_CELL = 8.0


def shared_rows(panels) -> bool:
    """Whether every panel has the same rows (then only the first column is labelled)."""
    return all(list(p.rows) == list(panels[0].rows) for p in panels)


def label_band(cols) -> float:
    """The height under a panel that its column labels take: level if short, else slanted."""
    longest = max((text_width(str(c), 11) * 1.08 for c in cols), default=0.0)  # letters
    if max((len(str(c)) for c in cols), default=0) <= 3:
        return 22.0
    return 16.0 + math.sin(math.radians(40)) * longest


def _layout(panels, box, below: float):
    """Columns of the grid and the cell size that fit every panel in ``box`` largest.

    ``below`` is the height between two rows of panels (column labels, then the
    next row's titles); the last row needs only its labels, counted in ``box``.
    Where ``box`` is too small for any cell (long notes leave no room), the
    columns that come nearest to fitting are kept and the cells are
    :data:`MIN_CELL` px.
    """
    _, _, w, h = box
    n = len(panels)
    n_r = max(p.M.shape[0] for p in panels)
    n_c = max(p.M.shape[1] for p in panels)
    margin = GAP if shared_rows(panels) else LABELS + GAP
    sizes = {}
    for ncol in range(1, n + 1):
        nrow = math.ceil(n / ncol)
        across = (w - LABELS - (ncol - 1) * margin) / (ncol * n_c)
        down = (h - (nrow - 1) * below) / (nrow * n_r)
        sizes[ncol] = min(across, down, 60.0)
    largest = max(sizes.values())
    # the fewest rows of panels whose cells are nearly the largest: no half-empty rows
    # (``largest`` may be negative where no cell fits: the best of the sizes is always near)
    near = [c for c, size in sizes.items() if size >= largest - 0.15 * abs(largest)]
    ncol = min(near, key=lambda c: (math.ceil(n / c), -sizes[c]))
    return ncol, max(sizes[ncol], MIN_CELL)


def _defs() -> str:
    return (
        "<defs><pattern id='blocked' width='6' height='6' patternUnits='userSpaceOnUse' "
        f"patternTransform='rotate(45)'><rect width='6' height='6' fill='{BLOCKED_FILL}'/>"
        f"<rect width='2.5' height='6' fill='{BLOCKED_STRIPES}'/></pattern>"
        "<pattern id='notyet' width='8' height='8' patternUnits='userSpaceOnUse'>"
        "<rect width='8' height='8' fill='#f4f4f4'/><circle cx='4' cy='4' r='1.4' fill='#8c8c8c'/>"
        "</pattern></defs>"
    )


def fmt(v: float, compact: bool = False) -> str:
    """``v`` with two decimals (never "-0.00"); ``compact``: without the leading zero."""
    v = float(v)
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "\u2212\u221e" if v < 0 else "\u221e"
    text = f"{v + 0.0:.2f}" if abs(v) >= 0.005 else "0.00"
    if compact and abs(v) < 0.995:
        text = text.replace("0.", ".", 1)
    elif compact and text in ("1.00", "-1.00"):
        text = text[:-3]
    return text


#: Widths of DejaVu Sans glyphs in em, for the numbers drawn in cells.
_EM = {".": 0.318, "-": 0.361, "\u2212": 0.838, "N": 0.748, "a": 0.613}


def text_width(text: str, size: float) -> float:
    """The width in px of ``text`` (a number) at font ``size`` (digits 0.636 em)."""
    return size * sum(_EM.get(ch, 0.636) for ch in text)


def panel_svg(p: Panel, x: float, y: float, s: float, scale: Scale) -> list[str]:
    """The cells of one panel, its labels, frame, head blocks and highlight."""
    M = np.asarray(p.M, float)
    n_r, n_c = M.shape
    fills = scale.fills(M)
    out = ["<g class='panel'>"]
    size = 11 if s < 42 else 12 if s < 52 else 13  # at least 11 px, larger in larger cells
    finite = M[np.isfinite(M)]
    frame = 6 if p.blocks or p.colour else 4  # room for a head's frame
    compact = False  # "0.24" as ".24" where only that fits (the tooltip has every digit)
    values = False
    for compact in (False, True):
        widest = max((text_width(fmt(v, compact), size) for v in finite), default=0.0)
        values = widest + frame <= s  # every number fits its cell
        if values:
            break
    row_link, col_link = p.link_prefixes()
    head_of = {}  # column -> head number, from the head blocks
    for k, (first, end, *_) in enumerate(p.blocks):
        head_of.update({c: k + 1 for c in range(first, end)})
    tab_row = p.highlight if p.highlight is not None else 0  # Tab walks this row only
    values_of = M.tolist()  # Python floats: a cell's tests cost nanoseconds, not numpy's calls
    blocked = p.blocked.tolist() if p.blocked is not None else None
    fills = fills.tolist() if isinstance(fills, np.ndarray) else fills
    for r in range(n_r):
        for c in range(n_c):
            v = values_of[r][c]
            cx, cy = x + c * s, y + r * s
            key = cell_key(cx, cy)
            links = link_classes(row_link, r, col_link, c, head_of.get(c))
            where = f"{p.title}: {p.row_kind} '{p.rows[r]}', {p.col_kind} '{p.cols[c]}'"
            tip = [f"{where} = {fmt(v)}", p.meaning]
            if v != v:  # NaN, a learner's bug, shows even where the mask blocks
                fill, mark = NAN_FILL, "NaN"
                tip[1] = "NaN: not a number (0/0, ∞−∞): a bug upstream"
            elif v == math.inf:
                fill, mark = INF_FILL, "\u221e"
            elif p.pending and v == -math.inf and (blocked is None or not blocked[r][c]):
                fill, mark = NOT_YET_FILL, None
                tip = [f"{where}: {p.pending}"]
            elif (blocked is not None and blocked[r][c]) or v == -math.inf:
                fill, mark = "url(#blocked)", None
                tip = [f"{where}: blocked by the mask", "score −∞, so weight 0: no number is drawn"]
            else:
                fill = "#ffffff" if p.neutral else fills[r][c]
                # a mask's allowed cells are plain white (their 0 in the tooltip): no column of
                # "0.00" beside scores too wide to carry numbers
                mark = fmt(v, compact) if values and not p.neutral else None
            out.append(
                f"<g class='cell {links} {key}{' off' if fill.startswith('url') else ''}'>"
                f"<rect x='{cx:.1f}' y='{cy:.1f}' width='{s:.1f}' height='{s:.1f}' fill='{fill}'/>"
            )
            if mark:
                ink = "#ffffff" if fill.startswith("url") else text_colour(fill)
                out.append(
                    f"<text x='{cx + s / 2:.1f}' y='{cy + s / 2 + size / 3:.1f}' "
                    f"font-size='{size}' text-anchor='middle' fill='{ink}' "
                    f"pointer-events='none'>{mark}</text>"
                )
            tips = [t for t in tip if t]
            out.append("</g>")
            out.append(tooltip(key, tips, (cx, cy, s, s), hit=links, tab=r == tab_row, width=WIDTH))
    every = max(1, math.ceil(13.0 / s))  # labels 13 px apart at least: every k-th if need be
    level = label_band(p.cols) <= 22.0
    widest_col = max((text_width(str(c), 11) * 1.08 for c in p.cols), default=0.0)
    every_col = max(1, math.ceil((widest_col + 3 if level else 18.0) / s))  # slanted: 18 px
    for r, label in enumerate(p.rows if p.row_labels else []):
        if r % every:
            continue
        out.append(
            f"<text x='{x - 8:.1f}' y='{y + (r + 0.5) * s + 4:.1f}' font-size='11' "
            f"text-anchor='end'>{escape(str(label))}</text>"
        )
    for c, label in enumerate(p.cols if p.col_labels else []):
        if c % every_col:
            continue
        lx, ly = x + (c + 0.5) * s, y + n_r * s + 10
        if level:  # short labels stand level, centred under their column, clear of frames
            out.append(
                f"<text x='{lx:.1f}' y='{ly + 8:.1f}' font-size='11' text-anchor='middle'>"
                f"{escape(str(label))}</text>"
            )
            continue
        out.append(
            f"<text x='{lx:.1f}' y='{ly:.1f}' font-size='11' text-anchor='end' "
            f"transform='rotate(-40 {lx:.1f} {ly:.1f})'>{escape(str(label))}</text>"
        )
    for first, end, colour, label in p.blocks:
        bx = x + first * s
        if (end - first) * s < 7.0 * len(label) + 4:
            label = label.split()[-1]  # "head 3" -> "3" where it does not fit
        out.append(
            f"<rect x='{bx + 1.5:.1f}' y='{y + 1.5:.1f}' width='{(end - first) * s - 3:.1f}' "
            f"height='{n_r * s - 3:.1f}' fill='none' stroke='{colour}' stroke-width='3'/>"
            f"<rect x='{bx:.1f}' y='{y - 15:.1f}' width='{(end - first) * s:.1f}' height='13' "
            f"fill='{colour}'/><text x='{bx + (end - first) * s / 2:.1f}' y='{y - 5:.1f}' "
            f"font-size='11' text-anchor='middle' fill='{text_colour(colour)}'>{label}</text>"
        )
    if p.neutral:
        out.append(
            f"<rect x='{x:.1f}' y='{y:.1f}' width='{n_c * s:.1f}' height='{n_r * s:.1f}' "
            "fill='none' stroke='#555'/>"
        )
    if p.colour:
        out.append(
            f"<rect x='{x - 2:.1f}' y='{y - 2:.1f}' width='{n_c * s + 4:.1f}' "
            f"height='{n_r * s + 4:.1f}' fill='none' stroke='{p.colour}' stroke-width='4'/>"
        )
    if p.highlight is not None:
        box = (
            f"x='{x:.1f}' y='{y + p.highlight * s:.1f}' width='{n_c * s:.1f}' height='{s:.1f}' "
            "fill='none'"
        )
        out.append(  # black dashes on white: readable on every cell and frame colour
            f"<rect {box} stroke='#ffffff' stroke-width='4'/>"
            f"<rect class='mhsa-highlight' {box} stroke='#000000' stroke-width='2.5' "
            "stroke-dasharray='6 3'/>"
        )
    title_y = y - (22 if p.blocks else 8)
    if p.colour:  # a chip in the head's colour: readable whatever the colour
        if 7.0 * len(p.title) + 12 > n_c * s + GAP:  # narrow panel: "A·V, head 7" -> "head 7"
            p.title = p.title.split(", ")[-1]
        width = 7.0 * len(p.title) + 12
        out.append(
            f"<rect x='{x - 2:.1f}' y='{title_y - 13:.1f}' width='{width:.1f}' height='18' "
            f"rx='3' fill='{p.colour}'/><text x='{x + 4:.1f}' y='{title_y:.1f}' "
            f"font-size='12' font-weight='bold' fill='{text_colour(p.colour)}'>"
            f"{escape(p.title)}</text>"
        )
    else:
        out.append(
            f"<text x='{x:.1f}' y='{title_y:.1f}' font-size='12' font-weight='bold'>"
            f"{escape(p.title)}</text>"
        )
    out.append("</g>")
    return out


def colourbar(
    scale: Scale,
    label: str,
    y: float | None = None,
    h: float | None = None,
    x: float | None = None,
):
    """The colour bar at the right (or at ``x``), from ``y`` for ``h`` pixels (the panels')."""
    x0, y0, w, h0 = _COLOURBAR
    x = x0 if x is None else min(x, x0)
    y, h = y0 if y is None else y, h0 if h is None else max(h, 120.0)
    lut = _LUTS[scale.cmap]
    stops = "".join(
        f"<stop offset='{k / 10:.1f}' stop-color='{lut[round(255 * (1 - k / 10))]}'/>"
        for k in range(11)
    )
    out = [
        f"<linearGradient id='bar' x1='0' y1='0' x2='0' y2='1'>{stops}</linearGradient>",
        f"<rect class='mhsa-colourbar' x='{x}' y='{y}' width='{w}' height='{h}' "
        "fill='url(#bar)' stroke='#555'/>",
        f"<text x='{x + w / 2}' y='{y - 10}' font-size='11' text-anchor='middle'>"
        f"{escape(label)}</text>",
    ]
    for k in range(5):
        v = scale.vmax - k / 4 * (scale.vmax - scale.vmin)
        ty = y + k / 4 * h
        out.append(
            f"<line x1='{x + w}' x2='{x + w + 4}' y1='{ty:.1f}' y2='{ty:.1f}' stroke='#555'/>"
            f"<text x='{x + w + 6}' y='{ty + 4:.1f}' font-size='11'>{v:.2f}</text>"
        )
    return out


def legend(kinds: set[str], y: float) -> list[str]:
    """Swatches for the special values present: blocked, NaN, +∞."""
    items = [
        ("blocked", "url(#blocked)", BLOCKED_LABEL),
        ("nan", NAN_FILL, "NaN: not a number (0/0, ∞−∞)"),
        ("inf", INF_FILL, "+∞"),
    ]
    out, x = [], 20.0
    for kind, fill, label in items:
        if kind in kinds:
            out.append(
                f"<rect x='{x}' y='{y - 11}' width='14' height='14' fill='{fill}' stroke='#555'/>"
                f"<text x='{x + 20}' y='{y}' font-size='12'>{escape(label)}</text>"
            )
            x += 30 + 7.0 * len(label)
    return out


def special_kinds(matrices, blocked=()) -> set[str]:
    """Which special values (blocked −∞, NaN, +∞) occur in ``matrices`` or ``blocked`` cells."""
    kinds = {"blocked"} if any(b is not None and np.any(b) for b in blocked) else set()
    for M in matrices:
        M = np.asarray(M, float)
        if np.isneginf(M).any():
            kinds.add("blocked")
        if np.isnan(M).any():
            kinds.add("nan")
        if np.isposinf(M).any():
            kinds.add("inf")
    return kinds


_KEY = re.compile(r"\bat\d+-\d+\b")
_DRAWINGS = itertools.count(1)


def picture(body: list[str], label: str, height: float = HEIGHT) -> str:
    """The picture, ``height`` px tall, its ids (hatch, colour bar) new to this drawing.

    Ids are global in an HTML page: two explorers showing the same state in
    one page (another notebook's tab) would otherwise draw each other's
    definitions (Chromium paints nothing for a definition in a hidden tab).
    Every drawing gets ids of its own, from a counter and a random part, so
    no two drawings in any page share one. Tooltips go last, over everything.
    """
    tips = "".join(part for part in body if isinstance(part, Tip))  # over everything else
    inner = _defs() + "".join(part for part in body if not isinstance(part, Tip)) + tips
    keys: dict[str, str] = {}  # each element's class by where it is -> a short one, c0, c1, ...
    inner = _KEY.sub(lambda m: keys.setdefault(m.group(0), f"c{len(keys)}"), inner)
    uid = f"{next(_DRAWINGS)}-{secrets.token_hex(4)}"
    for name in ("blocked", "notyet", "bar"):
        inner = inner.replace(f"id='{name}'", f"id='{name}-{uid}'")
        inner = inner.replace(f"url(#{name})", f"url(#{name}-{uid})")
    hint = (
        "<text class='mhsa-info' x='10' y='16' font-size='13' fill='#555'>"
        "Point at a cell (or Tab to it) for its value and meaning; linked cells stay lit.</text>"
        if "class='cell " in inner and "class='mhsa-info'" not in inner  # unless it has a title
        else ""
    )
    height = round(height)
    return (
        f"<svg class='mhsa-figure' id='mhsa-{uid}' xmlns='http://www.w3.org/2000/svg' "
        f"width='{WIDTH}' height='{height}' viewBox='0 0 {WIDTH} {height}' {FONT} role='img' "
        f"aria-label='{escape(label)}'>{link_style(inner, uid)}<rect width='{WIDTH}' "
        f"height='{height}' fill='#ffffff'/>{hint}{inner}</svg>"
    )


def grid(
    panels: list[Panel],
    scale: Scale,
    bar_label: str,
    label: str,
    axes: tuple | None = None,
    max_height: float = HEIGHT,
) -> str:
    """The panels of one step in a grid, with one colour bar and a legend of special values.

    ``axes`` names what the rows and the columns are, ``(rows, columns)``: written down
    the left edge and under the panels. The picture is as tall as the panels
    need, at most ``max_height``: the cells take the largest size that fits.
    """
    top = 58.0 if any(p.blocks for p in panels) else 48.0  # head chips clear of the top line
    band = max(label_band(p.cols) for p in panels)  # the column labels under a row of panels
    kinds = special_kinds((p.M for p in panels), (p.blocked for p in panels))
    foot = band + (22.0 if axes is not None else 0.0) + (24.0 if kinds else 0.0) + 8.0
    same_cols = all(list(p.cols) == list(panels[0].cols) for p in panels)
    # labels, then the next row's titles (and head chips); the same columns in every panel:
    # labelled under the last row only, as the same rows are beside the first column only
    below = (0.0 if same_cols else band) + top - 10.0
    box = (10.0, top, _COLOURBAR[0] - 40.0, max_height - top - foot)
    ncol, s = _layout(panels, box, below)
    shared = shared_rows(panels)
    n_r = max(p.M.shape[0] for p in panels)
    n_c = max(p.M.shape[1] for p in panels)
    step_x = n_c * s + (GAP if shared else LABELS + GAP)
    step_y = n_r * s + below
    body = []
    for k, p in enumerate(panels):
        row, col = divmod(k, ncol)
        p.row_labels = not shared or col == 0
        p.col_labels = not same_cols or k + ncol >= len(panels)  # no panel below it
        body += panel_svg(p, box[0] + LABELS + col * step_x, box[1] + row * step_y, s, scale)
    n_rows = math.ceil(len(panels) / ncol)
    right = box[0] + LABELS + min(ncol, len(panels)) * step_x  # beside the panels, not far off
    height = n_rows * step_y - below  # the panels' height
    bar_h = max(height, 120.0)
    total = max(top + height + foot, top + bar_h + 12.0)  # as tall as the panels need
    body += colourbar(scale, bar_label, box[1], height, right + 16)
    y = top + height + band
    if axes is not None:
        rows, cols = axes
        mid = box[1] + height / 2
        body.append(
            f"<text x='16' y='{mid:.0f}' font-size='12' font-weight='bold' text-anchor='middle' "
            f"transform='rotate(-90 16 {mid:.0f})'>{escape(rows)}</text>"
            f"<text x='{box[0] + LABELS}' y='{y + 14:.0f}' font-size='12' "
            f"font-weight='bold'>{escape(cols)}</text>"
        )
    body += legend(kinds, total - 12)
    return picture(body, label, total)
