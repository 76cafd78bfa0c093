"""A live companion of notebook 11: slide the song along the positions; the scores stay put.

The song's tokens stand at positions ``offset … offset + T - 1``: the rotated tokens change
with the slider, their dot products (the scores) do not, as they depend on ``m - n`` only.
"""

from __future__ import annotations

import numpy as np

from ..examples import get_example
from .panels import Panel, PanelsWidget, slider

__all__ = ["RopeWidget"]


class RopeWidget(PanelsWidget):
    """The song rotated by ``rotary_embedding`` at positions ``offset + arange(T)``, and its
    scores. ``offset``: the slider's first value (0 to 60); ``base``: RoPE's (100 turns the
    slow pair visibly on 4 features)."""

    name = "rotary_embedding"
    where = "RoPE's widget: run this cell to draw it."

    def __init__(self, functions=None, offset: int = 0, base: float = 100.0):
        self.example, self.base = e, _ = get_example("song"), base
        norms = np.linalg.norm(e.X, axis=-1)  # kept by a rotation: one scale for every offset
        self.vmax = float(max(norms.max(), (norms**2).max() / np.sqrt(e.d_model)))
        super().__init__(functions, offset=offset)

    def control_specs(self):
        return [slider("offset", "offset", range(61))]

    def compute_state(self, offset):
        e, p = self.example, offset
        R, line, notes = self.draw_with(e.X, p + np.arange(e.T), self.base)  # (T, d_model)
        S = np.round(R @ R.T / np.sqrt(e.d_model), 12)  # (T, T): equal for every offset
        rows = [f"{t}@{p + i}" for i, t in enumerate(e.tokens)]
        where = f"positions {p} … {p + e.T - 1}"
        panels = [
            Panel(R, f"X rotated, {where}", rows, e.features, ("token", "feature"),
                  links=(["q", "k"], None),  # a rotated row is a query and a key
                  meaning="the token's features, each pair turned by its position's angle"),
            Panel(S, "scores R·Rᵀ/√d", rows, rows, ("query", "key"),
                  meaning="(rotated row · rotated row) / √d: the same at every offset, as it "
                  "depends only on how far apart the two tokens are"),
        ]  # fmt: skip
        return {
            "picture": {"panels": panels, "label": f"offset {p}",
                        "fixed": [-self.vmax, self.vmax], "bar": "value"},
            "status": line,
            "notes": [*notes, "The rotated rows change with the offset; their dot products, "
                      "the scores, do not: they depend only on m − n, how far apart two "
                      "positions are."],
        }  # fmt: skip
