"""A live companion of notebook 16: one slider for the window, the mask and the song's weights.

The learner's ``sliding_window_mask`` (``functions=globals()``) is drawn only while its
check passes, or with the box "draw my failing functions anyway" ticked
(:class:`~mhsa_helpers.widgets.panels.PanelsWidget`); every window is computed at once
and the page shows the one the slider chooses.
"""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .panels import Panel, PanelsWidget, slider

__all__ = ["SlidingWindowWidget"]


class SlidingWindowWidget(PanelsWidget):
    """The song's sliding-window mask and one head's attention, for each window.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``); ``sliding_window_mask`` is used
        where its check passes.
    window : int
        The slider's first value, 1 to T.
    """

    name = "sliding_window_mask"
    where = "The sliding window's widget: run this cell to draw it."

    def __init__(self, functions=None, window: int = 3):
        self.example = e = get_example("song")
        self._qkv = ref.project_qkv(e.X, e.W_q, e.W_k, e.W_v)  # (T, d_model) each
        super().__init__(functions, window=window)

    def control_specs(self):
        return [slider("window", "window", range(1, self.example.T + 1))]

    def compute_state(self, window):
        e, w = self.example, window
        M, line, notes = self.draw_with(e.T, w)  # (T, T)
        _, A = ref.attention_head(*self._qkv, M)  # (T, d_k), (T, T)
        seen = int((M[-1] == 0).sum())
        should = min(w, e.T)  # the keys the last token sees by the definition
        mine = "" if seen == should else f" (by the definition: {should}; the mask drawn is yours)"
        qk = ("query", "key")
        meaning = "0: inside the window, read; −∞: outside it, blocked"
        panels = [
            Panel(M, f"mask, window = {w}", e.tokens, e.tokens, qk, neutral=True, meaning=meaning),
            Panel(
                A, "attention weights", e.tokens, e.tokens, qk, blocked=np.isneginf(M),
                meaning="the share of the key's value in the query's output",
            ),
        ]  # fmt: skip
        return {
            "picture": {"panels": panels, "label": f"window {w}", "fixed": [0, 1], "bar": "weight"},
            "status": f"{line} The last token sees {seen} key(s){mine}.",
            "notes": [
                *notes,
                f"Window {w}, by its definition: each token attends to itself and the "
                f"{w - 1} token(s) before it; the other keys are blocked by the mask (hatched, "
                "weight 0, no number).",
            ],
        }
