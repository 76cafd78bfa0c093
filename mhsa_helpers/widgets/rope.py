"""A live companion of notebook 11: slide the song along the positions; the scores stay put.

One slider, ``offset``: the song's tokens stand at positions ``offset …
offset + T - 1``. The rotated tokens change with it, but their dot products
(the scores of self-attention on rotated queries and keys) do not: they
depend on ``m - n`` only. The learner's ``rotary_embedding`` is drawn where
its check passes (:func:`mhsa_helpers.live.learner_or_reference`).
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..examples import get_example
from ..plots import DIVERGING
from . import svg
from .live import bundle, learner_or_reference

__all__ = ["RopeWidget"]


class RopeWidget:
    """The song rotated at positions ``offset + arange(T)``, and its scores.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``).
    offset : int
        The first token's position (0 to 60).
    base : float
        RoPE's base (100 makes the slow pair move visibly on 4 features).
    """

    def __init__(self, functions=None, offset: int = 0, base: float = 100.0):
        self._source, self._cache, self.base = functions, {}, base
        self.example = e = get_example("song")
        norms = np.linalg.norm(e.X, axis=-1)  # kept by the rotation: one scale for every offset
        vmax = float(max(norms.max(), (norms**2).max() / np.sqrt(e.d_model))) or 1.0
        self._scale = svg.Scale(DIVERGING, -vmax, vmax)
        self.offset_w = widgets.IntSlider(value=offset, min=0, max=60, description="offset")
        self.status_w = widgets.HTML()
        self.figure = widgets.HTML(layout=widgets.Layout(width=f"{svg.WIDTH}px"))
        self.offset_w.observe(lambda _: self.update(), names="value")
        self.widget = widgets.VBox([self.offset_w, self.status_w, self.figure])
        self.update()

    def update(self) -> None:
        """Redraw for the slider's offset."""
        e, p = self.example, self.offset_w.value
        fn, status = learner_or_reference("rotary_embedding", self._source, self._cache)
        positions = p + np.arange(e.T)
        R = np.asarray(fn(e.X, positions, self.base), dtype=float)  # (T, d)
        S = R @ R.T / np.sqrt(e.d_model)
        labels = [f"{t}@{q}" for t, q in zip(e.tokens, positions, strict=True)]
        panels = [
            svg.Panel(R, f"X rotated, positions {p} … {p + e.T - 1}", labels, e.features),
            svg.Panel(S, "scores R·Rᵀ/√d (the same for every offset)", labels, labels),
        ]
        self.figure.value = svg.grid(panels, self._scale, "value", f"offset {p}")
        self.status_w.value = status

    def _repr_mimebundle_(self, **kwargs):
        return bundle(self.widget, self.figure.value, **kwargs)
