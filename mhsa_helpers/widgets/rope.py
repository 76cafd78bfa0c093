"""A live companion of notebook 11: slide the song along the positions; the scores stay put.

One slider, ``offset``: the song's tokens stand at positions ``offset …
offset + T - 1``. The rotated tokens change with it, but their dot products
(the scores of self-attention on rotated queries and keys) do not: they
depend on ``m - n`` only. The learner's ``rotary_embedding`` is drawn where
its check passes (:func:`mhsa_helpers.widgets.live.drawn_with`) or the box
"draw my failing functions anyway" is ticked
(:class:`mhsa_helpers.widgets.anyway.Anyway`), in the
shared frame (:class:`mhsa_helpers.widgets.live.Frame`).
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..examples import get_example
from ..plot_style import DIVERGING
from . import svg
from .anyway import Anyway
from .live import Frame, Framed, compact

__all__ = ["RopeWidget"]


class RopeWidget(Anyway, Framed):
    """The song rotated at positions ``offset + arange(T)``, and its scores.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``).
    offset : int
        The first token's position (0 to 60).
    base : float
        RoPE's base (100 makes the slow pair move visibly on 4 features).

    Attributes
    ----------
    status_w, figure, notes_w : ipywidgets.HTML
        The status line, the picture and the notes under it.
    widget : ipywidgets.VBox
        The whole widget, of one height whatever the slider shows.
    """

    name = "rotary_embedding"

    def __init__(self, functions=None, offset: int = 0, base: float = 100.0):
        self._source, self._cache, self.base = functions, {}, base
        self.example = e = get_example("song")
        norms = np.linalg.norm(e.X, axis=-1)  # kept by the rotation: one scale for every offset
        vmax = float(max(norms.max(), (norms**2).max() / np.sqrt(e.d_model))) or 1.0
        self._scale = svg.Scale(DIVERGING, -vmax, vmax)
        self.offset_w = widgets.IntSlider(value=offset, min=0, max=60, description="offset")
        self._init_anyway()
        self.frame = Frame([[compact(self.offset_w, "320px")]], beside_status=[self.anyway_w])
        self.offset_w.observe(lambda _: self.update(), names="value")
        self.update()

    def update(self) -> None:
        """Redraw for the slider's offset."""
        e, p = self.example, self.offset_w.value
        positions = p + np.arange(e.T)
        R, line, notes = self.draw_with(self._source, self._cache, e.X, positions, self.base)
        # equal for every offset up to rounding (1e-16): shown equal, as the text says they are
        S = np.round(R @ R.T / np.sqrt(e.d_model), 12)
        labels = [f"{t}@{q}" for t, q in zip(e.tokens, positions, strict=True)]
        panels = [
            svg.Panel(
                R,
                f"X rotated, positions {p} … {p + e.T - 1}",
                labels,
                e.features,
                "token",
                "feature",
                meaning="the token's features, each pair turned by its position's angle",
                links=(("q", "k"), None),  # a rotated row serves as query and as key
            ),
            svg.Panel(
                S,
                "scores R·Rᵀ/√d (the same for every offset)",
                labels,
                labels,
                "query",
                "key",
                meaning="(rotated row · rotated row) / √d: depends only on how far apart",
            ),
        ]
        self.frame.status(f"{line} Positions {p} … {p + e.T - 1}.")
        self.frame.notes(
            [
                *notes,
                "The rotated rows change with the offset; their dot products, the scores, do "
                "not: they depend only on m − n, how far apart two positions are.",
            ]
        )
        self.figure.value = svg.grid(
            panels, self._scale, "value", f"offset {p}", max_height=self.frame.picture_budget()
        )
        self.show_anyway()
