"""A live companion of notebook 16: one slider for the window, the mask and the song's weights.

Like the explorer (:mod:`mhsa_helpers.explorer`) it draws SVG
(:mod:`mhsa_helpers.svg`) and runs the learner's own ``sliding_window_mask``
(``functions=globals()``) only while its check passes (or the box "draw my
failing functions anyway" is ticked); otherwise the course's
reference is drawn, the status line says so and the notes under the picture
say why (:func:`mhsa_helpers.widgets.live.drawn_with`).
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from .. import reference as ref
from ..examples import get_example
from . import svg
from .anyway import Anyway
from .live import Frame, Framed, compact

__all__ = ["SlidingWindowWidget"]


class SlidingWindowWidget(Anyway, Framed):
    """The song's sliding-window mask and one head's attention, for a window chosen by a slider.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``); ``sliding_window_mask`` is
        used where its check passes.
    window : int
        The slider's first value, 1 to T.

    Attributes
    ----------
    status_w, figure, notes_w : ipywidgets.HTML
        The status line, the picture (the mask, T × T, and the weights, T × T,
        blocked cells hatched) and the notes under it.
    widget : ipywidgets.VBox
        The whole widget, of one height whatever the slider shows.
    """

    name = "sliding_window_mask"

    def __init__(self, functions=None, window: int = 3):
        self._source, self._cache = functions, {}
        self.example = e = get_example("song")
        Q, K, V = ref.project_qkv(e.X, e.W_q, e.W_k, e.W_v)
        self._qkv = Q, K, V
        self.window_w = widgets.IntSlider(value=window, min=1, max=e.T, description="window")
        self._init_anyway()
        self.frame = Frame([[compact(self.window_w, "320px")]], beside_status=[self.anyway_w])
        self.window_w.observe(lambda _: self.update(), names="value")
        self.update()

    def update(self) -> None:
        """Redraw for the slider's window."""
        e, w = self.example, self.window_w.value
        M, line, notes = self.draw_with(self._source, self._cache, e.T, w)  # (T, T)
        _, A = ref.attention_head(*self._qkv, M)
        seen = int((M[-1] == 0).sum())
        panels = [
            svg.Panel(
                M,
                f"mask, window = {w}",
                e.tokens,
                e.tokens,
                "query",
                "key",
                neutral=True,
                meaning="0: inside the window, read; −∞: outside it, blocked",
            ),
            svg.Panel(
                A,
                "attention weights",
                e.tokens,
                e.tokens,
                "query",
                "key",
                blocked=np.isneginf(M),
                meaning="the share of the key's value in the query's output",
            ),
        ]
        self.frame.status(f"{line} The last token sees {seen} key(s).")
        self.frame.notes(
            [
                *notes,
                f"Window {w}: each token attends to itself and the {w - 1} token(s) before it; "
                "the other keys are blocked by the mask (hatched, weight 0, no number).",
            ]
        )
        self.figure.value = svg.grid(
            panels,
            svg.step_scale([A], fixed=(0.0, 1.0)),
            "weight",
            f"window {w}",
            max_height=self.frame.picture_budget(),
        )
        self.show_anyway()
