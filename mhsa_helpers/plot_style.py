"""The course's figure style: one size rule, the colours, matplotlib's settings.

JupyterLab never shrinks a course figure and its text reads like the
notebook's. The inline backend shows a figure at :data:`DPI` CSS pixels per
inch (``figure.dpi``; in a notebook the retina PNG has twice the pixels, shown
at the same size). A figure is at most :data:`MAX_WIDTH_PX` CSS pixels wide
(JupyterLab's output area beside the side panel, in a 1400 x 900 window, is
968), and no text is smaller than :data:`FONT_PX`, the notebook's body text.
Importing this module sets :data:`RC`, so a learner's own figures follow it too.

Colour maps are colour-blind safe: ``cividis`` for values of one sign
(weights in [0, 1]) and ``PuOr`` for signed values; heads get the
Okabe-Ito palette (:data:`HEAD_COLOURS`).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

__all__ = [
    "BLOCKED_FILL",
    "BLOCKED_LABEL",
    "BLOCKED_STRIPES",
    "CELL_HEIGHT_PX",
    "CELL_PAD_PX",
    "DIVERGING",
    "DPI",
    "FONT_PX",
    "HEAD_COLOURS",
    "LINE_PANEL_PX",
    "MAX_WIDTH_PX",
    "PAD_PX",
    "RC",
    "SEQUENTIAL",
    "TITLE_PX",
    "WIDTH_PX",
    "points",
    "text_px",
]

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

#: CSS pixels per inch of a figure shown inline (matplotlib's ``figure.dpi``).
DPI = 100
#: Widest figure, in CSS pixels: JupyterLab's output area is 968 wide at 1400 x 900
#: with the side panel open, so a figure this wide is shown at its own size.
MAX_WIDTH_PX = 900
#: Margin the inline backend adds on each side of a figure (``savefig.pad_inches``
#: with ``bbox_inches="tight"``), in CSS pixels.
PAD_PX = 10
#: Smallest text in a figure, in CSS pixels: JupyterLab's body text.
FONT_PX = 14
#: Titles, in CSS pixels.
TITLE_PX = 16
#: Height of a heatmap cell that has its number written in it, in CSS pixels.
CELL_HEIGHT_PX = 36
#: Room beside the widest number of a heatmap cell, in CSS pixels.
CELL_PAD_PX = 12
#: Largest heatmap cell without a number, in CSS pixels (it shrinks to fit).
PLAIN_CELL_PX = 36
#: Tallest block of heatmap cells, in CSS pixels (cells without numbers shrink to it).
MAX_CELLS_HEIGHT_PX = 480
#: Legend text of a cell blocked by a mask (the explorer's words).
BLOCKED_LABEL = "blocked by the mask (score \u2212\u221e, weight 0, no number)"
#: A blocked cell: the explorer's hatch, light grey with dark diagonal stripes
#: (about 6 CSS px apart, 2.5 px wide).
BLOCKED_FILL, BLOCKED_STRIPES = "#d0d0d0", "#303030"
BLOCKED_HATCH, BLOCKED_HATCH_WIDTH = "//", 1.8  # 12 lines per inch; stripe width in points
#: Plotting area of one line-plot panel (width, height), in CSS pixels.
LINE_PANEL_PX = (380, 260)
#: A figure's own width, inside the inline margins, in CSS pixels.
WIDTH_PX = MAX_WIDTH_PX - 2 * PAD_PX


def points(px: float) -> float:
    """Font size in points that is ``px`` CSS pixels in a figure shown inline.

    Parameters
    ----------
    px : float
        Size in CSS pixels.

    Returns
    -------
    float
        The size in points at :data:`DPI`.
    """
    return px * 72 / DPI


#: The rc settings every figure of the course is drawn with (set when this
#: module is imported, so a learner's own figures follow them too).
RC = {
    "figure.dpi": DPI,
    "savefig.pad_inches": PAD_PX / DPI,
    "font.size": points(FONT_PX),
    "axes.titlesize": points(TITLE_PX),
    "axes.labelsize": points(FONT_PX),
    "xtick.labelsize": points(FONT_PX),
    "ytick.labelsize": points(FONT_PX),
    "legend.fontsize": points(FONT_PX),
    "legend.title_fontsize": points(FONT_PX),
    "figure.titlesize": points(TITLE_PX),
    "figure.labelsize": points(FONT_PX),
}
plt.rcParams.update(RC)


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

_TEXT = TextToPath()


def text_px(text, size_px: float = FONT_PX) -> float:
    """Width of ``text`` in CSS pixels at ``size_px`` (the default font)."""
    if not str(text):
        return 0.0
    prop = FontProperties(size=points(size_px))
    width, _, _ = _TEXT.get_text_width_height_descent(str(text), prop, ismath=False)
    return width * DPI / 72
