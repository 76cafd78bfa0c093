"""A live companion of notebook 16: one slider for the window, the mask and the song's weights.

Like the explorer (:mod:`mhsa_helpers.explorer`) it draws SVG
(:mod:`mhsa_helpers.svg`) and runs the learner's own ``sliding_window_mask``
(``functions=globals()``) only while its check passes; otherwise the course's
reference is drawn and the status line says why
(:func:`mhsa_helpers.live.learner_or_reference`).
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from .. import reference as ref
from ..examples import get_example
from . import svg
from .live import bundle, learner_or_reference

__all__ = ["SlidingWindowWidget"]


class SlidingWindowWidget:
    """The song's sliding-window mask and one head's attention, for a window chosen by a slider.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``); ``sliding_window_mask`` is
        used where its check passes.
    window : int
        The slider's first value, 1 to T.
    """

    def __init__(self, functions=None, window: int = 3):
        self._source, self._cache = functions, {}
        self.example = e = get_example("song")
        Q, K, V = ref.project_qkv(e.X, e.W_q, e.W_k, e.W_v)
        self._qkv = Q, K, V
        self.window_w = widgets.IntSlider(value=window, min=1, max=e.T, description="window")
        self.status_w = widgets.HTML()
        self.figure = widgets.HTML(layout=widgets.Layout(width=f"{svg.WIDTH}px"))
        self.window_w.observe(lambda _: self.update(), names="value")
        self.widget = widgets.VBox([self.window_w, self.status_w, self.figure])
        self.update()

    def update(self) -> None:
        """Redraw for the slider's window."""
        e, w = self.example, self.window_w.value
        fn, status = learner_or_reference("sliding_window_mask", self._source, self._cache)
        M = np.asarray(fn(e.T, w), dtype=float)
        _, A = ref.attention_head(*self._qkv, M)
        seen = int((M[-1] == 0).sum())
        panels = [
            svg.Panel(M, f"mask, window = {w}", e.tokens, e.tokens, "query", "key", neutral=True),
            svg.Panel(
                A, "attention weights", e.tokens, e.tokens, "query", "key", blocked=np.isneginf(M)
            ),
        ]
        self.figure.value = svg.grid(
            panels, svg.step_scale([A], fixed=(0.0, 1.0)), "weight", f"window {w}"
        )
        self.status_w.value = f"{status} The last token sees {seen} key(s)."

    def _repr_mimebundle_(self, **kwargs):
        return bundle(self.widget, self.figure.value, **kwargs)
