"""What every picture widget shares: its ES module, the numbers it sends, the look it draws with.

The kernel computes; the page draws (``front/*.js``, plain ES modules: no build step).
A widget is an :class:`anywidget.AnyWidget` whose ``_esm`` is its module with the modules
it imports inlined (:func:`esm`: a blob URL cannot import its neighbours), so the
notebook and the book (which loads the same files as modules) run the same code.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from types import MappingProxyType

import anywidget
import matplotlib
import numpy as np
import traitlets

from ..plot_style import (
    BLOCKED_FILL,
    BLOCKED_LABEL,
    BLOCKED_STRIPES,
    DIVERGING,
    HEAD_COLOURS,
    SEQUENTIAL,
)

__all__ = ["FRONT", "REFERENCE", "REFERENCE_STATUS", "STYLE", "PictureWidget", "encode", "esm"]

#: ``functions=REFERENCE``: drawn with the course's functions, with no "yours" in the words
#: (the book: no learner's code runs there). A read-only mapping with no functions.
REFERENCE = MappingProxyType({})
#: The status line of a picture drawn for :data:`REFERENCE`.
REFERENCE_STATUS = (
    "Drawn with the course's reference (a static page: no kernel runs here; open the "
    "notebook to draw with your own functions)."
)

#: The front-end modules.
FRONT = Path(__file__).with_name("front")
_IMPORT = re.compile(r'^import \{[^}]*\} from "\./([\w-]+\.js)";\n', re.M)


@functools.cache
def esm(entry: str) -> str:
    """Module ``entry`` (e.g. ``"explorer.js"``) with the modules it imports inlined once each,
    in order, their ``export`` kept only on the entry's own names."""
    done: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        text = (FRONT / name).read_text(encoding="utf-8")
        for dep in _IMPORT.findall(text):
            visit(dep)
        done.append(name)

    visit(entry)
    parts = []
    for name in done:
        text = _IMPORT.sub("", (FRONT / name).read_text(encoding="utf-8"))
        if name != entry:
            text = re.sub(r"^export (?!default)", "", text, flags=re.M)
        parts.append(f"// ---- {name}\n{text}")
    return "\n".join(parts)


def _number(v: float) -> float | str:
    return v if math.isfinite(v) else "NaN" if v != v else "Infinity" if v > 0 else "-Infinity"


def encode(a) -> list | float | str:
    """``a`` as JSON: nested lists of floats, NaN and ±∞ as the strings JavaScript's
    ``Number()`` reads ("NaN", "Infinity", "-Infinity": ``picture.js`` ``decode``)."""
    a = np.asarray(a, dtype=float)
    if np.isfinite(a).all():
        return a.tolist()

    def walk(x):
        return [walk(y) for y in x] if isinstance(x, list) else _number(x)

    return walk(a.tolist())


def _lut(name: str, n: int = 64) -> list[str]:
    rgba = matplotlib.colormaps[name](np.linspace(0, 1, n))
    return [matplotlib.colors.to_hex(c) for c in rgba]


#: The look of every picture: colour maps (64 steps), head colours, special values and
#: their words (plot_style.py is the one place for them; the figures share it).
STYLE = {
    "luts": {"seq": _lut(SEQUENTIAL), "div": _lut(DIVERGING)},
    "heads": HEAD_COLOURS,
    "blocked": {"fill": BLOCKED_FILL, "stripes": BLOCKED_STRIPES},
    "nan": "#ff00ff",
    "inf": "#000000",
    "words": {
        "blocked": BLOCKED_LABEL,
        "nan": "NaN: not a number (0/0, ∞−∞): a bug upstream",
        "inf": "+∞: a number too large (a bug upstream)",
    },
}


class PictureWidget(anywidget.AnyWidget):
    """A picture drawn in the page: the look it draws with, and one line for viewers
    without JavaScript or without the live widget (a notebook reopened, a static page)."""

    look = traitlets.Dict(STYLE).tag(sync=True)  # not "style": a DOMWidget's style is a widget
    #: What a viewer that cannot run the widget is told.
    where = "Run this cell in JupyterLab to draw the picture (it is drawn in the page)."

    def _repr_mimebundle_(self, **kwargs):
        out = super()._repr_mimebundle_(**kwargs)
        data = out[0] if isinstance(out, tuple) else out
        data["text/plain"] = self.where
        return out
