"""The explorer's query view as SVG: one query against every key, head by head.

Q, K and V by head on top; under them, for each head, a line from the query
to every key, as wide as the query's attention weight, a blocked key dashed
grey with no number. Drawn with :mod:`mhsa_helpers.widgets.svg`'s panels,
scale and picture.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

from ..plot_style import HEAD_COLOURS
from .svg import (
    GAP,
    HEIGHT,
    LABELS,
    NAN_FILL,
    WIDTH,
    Panel,
    fmt,
    legend,
    panel_svg,
    picture,
    special_kinds,
    step_scale,
    text_colour,
)
from .svg_tips import cell_key, tooltip

__all__ = ["query_view"]


def query_view(
    tokens: list[str],
    q: int,
    qkv: list[Panel],
    scores: np.ndarray,
    weights: np.ndarray,
    label: str,
    max_height: float = HEIGHT,
) -> str:
    """The query's view: Q, K, V by head, and per head lines from the query to every key.

    ``scores`` and ``weights`` have shape (h, T): the query's row of Z + M
    and of A in each head. A line's width is the weight; a blocked key gets
    a thin dashed line.
    """
    h, T = weights.shape
    body = []
    n_c = max(p.M.shape[1] for p in qkv)
    ncol = min(h, 4)
    nrow = math.ceil(h / ncol)
    band_h = 28.0 + 15.0 * T  # a head's lines: its title chip, then a line per key
    band_top = max_height - 34.0 - nrow * band_h
    s = min(44.0, (WIDTH - 20.0 - 3 * (LABELS + GAP)) / (3 * n_c), (band_top - 58.0 - 64.0) / T)
    for k, p in enumerate(qkv):
        x = 10.0 + LABELS + k * (n_c * s + LABELS + GAP)
        body += panel_svg(p, x, 58.0, s, step_scale([p.M]))
    pw = (WIDTH - 40.0) / ncol
    for i in range(h):
        colour = HEAD_COLOURS[i % len(HEAD_COLOURS)]
        row, col = divmod(i, ncol)
        x0, y0 = 20.0 + col * pw, band_top + row * band_h
        xq, xk = x0 + 8, x0 + pw * 0.45
        ys = [y0 + 22 + (band_h - 28) * (j + 0.5) / T for j in range(T)]
        yq = (ys[0] + ys[-1]) / 2
        body.append(
            f"<rect x='{x0:.1f}' y='{y0 - 4:.1f}' width='{pw - 12:.1f}' height='18' rx='3' "
            f"fill='{colour}'/><text x='{x0 + 6:.1f}' y='{y0 + 9:.1f}' font-size='12' "
            f"font-weight='bold' fill='{text_colour(colour)}'>head {i + 1}: "
            f"{escape(tokens[q])} attends to</text>"
        )
        start = xq + 7.5 * len(tokens[q]) + 12  # the thickest line's round cap clears the word
        for j in range(T):
            w, z = float(weights[i, j]), float(scores[i, j])
            blocked = np.isneginf(z)
            dash = " stroke-dasharray='3 3'" if blocked or not np.isfinite(w) else ""
            width = 1.0 if blocked or not np.isfinite(w) else 0.5 + 9 * max(w, 0.0)
            stroke = "#999999" if blocked else (NAN_FILL if np.isnan(w) else colour)
            where = f"head {i + 1}: query '{tokens[q]}' → key '{tokens[j]}'"
            tip = (
                [f"{where}: blocked by the mask", "score −∞, so weight 0: no number is drawn"]
                if blocked
                else [
                    f"{where}: weight {fmt(w)}, score {fmt(z)}",
                    f"the share of the value row of '{tokens[j]}' in the output of '{tokens[q]}'",
                ]
            )
            key = cell_key(xk, ys[j])
            body.append(
                f"<g class='link q{q}h{i + 1} k{j}h{i + 1} {key}' tabindex='0'>"
                f"<line class='mhsa-attend' data-weight='{w:.4f}' x1='{start:.1f}' "
                f"y1='{yq:.1f}' x2='{xk:.1f}' y2='{ys[j]:.1f}' stroke='{stroke}' "
                f"stroke-width='{width:.2f}' stroke-linecap='round'{dash}/>"
                + (
                    f"<text x='{xk + 6:.1f}' y='{ys[j] + 4:.1f}' font-size='11' fill='#777'>"
                    f"{escape(tokens[j])} <tspan font-style='italic'>blocked</tspan></text>"
                    if blocked  # like a hatched cell: no number, never a learned 0.00
                    else f"<text x='{xk + 6:.1f}' y='{ys[j] + 4:.1f}' font-size='11'>"
                    f"{escape(tokens[j])} <tspan font-weight='bold'>{fmt(w)}</tspan>"
                    f"<tspan fill='#666' font-size='11'> z {fmt(z)}</tspan></text>"
                )
                + "</g>"
            )
            body.append(
                tooltip(key, tip, (xk, ys[j] - 11, 7.5 * len(tokens[j]) + 90, 15), width=WIDTH)
            )
        body.append(
            f"<text x='{xq:.1f}' y='{yq + 4:.1f}' font-size='12' font-weight='bold' "
            f"fill='#000000'>{escape(tokens[q])}</text>"
        )
    body.append(
        f"<text x='20' y='{max_height - 12}' font-size='12'>line width = the query's attention "
        "weight for that key; z = its score (Z + M); dashed grey, no number = blocked by the mask"
        "</text>"
    )
    body += legend(special_kinds([scores, weights]) - {"blocked"}, max_height - 12 - 18)
    return picture(body, label, max_height)
