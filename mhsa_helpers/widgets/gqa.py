"""A live companion to extension 12: the attention of every query head as n_kv_heads changes.

:class:`GQAWidget` draws the weights of each query head on the question
sentence, framed in the colour of the K/V head it reads, with one slider
for ``n_kv_heads``. Like the explorer, it runs the learner's own
``grouped_query_attention`` (``functions=globals()``) only while its check
passes (or, as in the explorer, while the box "draw my failing functions
anyway" is ticked: :class:`mhsa_helpers.widgets.anyway.Anyway`), and says
which function drew the picture; the check itself is the explorer's
(:func:`mhsa_helpers.learner.check_sentence`, run once per function).

:class:`ExtensionWidget` is the part the extensions' widgets share: the
learner's function or the reference, the frame (controls, one status
line, the SVG picture, the notes under it).
"""

from __future__ import annotations

import math

import ipywidgets as widgets
import numpy as np

from ..examples import get_example
from ..learner import check_sentence
from ..plot_style import HEAD_COLOURS
from . import svg
from .anyway import Anyway
from .live import Frame, Framed, compact

__all__ = ["ExtensionWidget", "GQAWidget"]


class ExtensionWidget(Anyway, Framed):
    """One function of an extension, drawn live: the learner's where its check passes.

    Subclasses set :attr:`name`, build their controls, and define
    :meth:`arguments` (the call for the current controls) and
    :meth:`panels` (what to draw of the result). The widget is a
    :class:`~mhsa_helpers.widgets.live.Frame`: the status line, the picture
    and the notes under it, on one screen whatever the controls show.

    Attributes
    ----------
    frame : Frame
        The layout; ``status_w``, ``figure``, ``notes_w`` and ``widget`` are its parts.
    """

    name: str

    def __init__(self, functions=None, rows=()):
        self._source = functions if functions is not None else {}
        self._checked = {}  # check_sentence's cache: name -> (function, sentence)
        self._init_anyway()
        self.frame = Frame(
            [[compact(c, *size) for c, *size in row] for row in rows],
            beside_status=[self.anyway_w],
        )
        for row in rows:
            for control, *_ in row:
                control.observe(lambda _change: self.update(), names="value")

    def check_of(self, name: str, fn) -> str | None:
        """The check's sentence on the learner's ``fn`` (None: it passes), once per ``fn``."""
        return check_sentence(name, fn, self._checked)

    def arguments(self) -> tuple:
        """The arguments of the function for the current controls."""
        raise NotImplementedError

    def panels(self, result) -> tuple[list, str]:
        """``(svg panels, picture label)`` for a result ``(output, weights)``."""
        raise NotImplementedError

    def picture(self, panels: list, label: str, max_height: float = svg.HEIGHT) -> str:
        """The SVG picture of ``panels`` (weights, on one scale from 0 to 1)."""
        return svg.grid(
            panels, svg.Scale(vmin=0.0, vmax=1.0), "weight", label, max_height=max_height
        )

    def notes(self) -> list[str]:
        """Lines for the notes box that hold for every function (none by default)."""
        return []

    def compute(self) -> tuple:
        """``(result, status line, notes)`` for the current controls.

        The result is the learner's function's where its check passes (or
        the box "draw my failing functions anyway" is ticked) and it runs
        here with the reference's shapes, the course's otherwise; the line
        says which, the notes why.
        """
        return self.draw_with(self._source, self._checked, *self.arguments())

    def update(self) -> None:
        """Redraw the picture, the status line and the notes for the current controls."""
        result, line, notes = self.compute()
        panels, label = self.panels(result)
        self.frame.status(line)
        self.frame.notes([*notes, *self.notes()])
        self.figure.value = self.picture(panels, label, self.frame.picture_budget())
        self.show_anyway()


class GQAWidget(ExtensionWidget):
    """Grouped-query attention on the question sentence: one slider, ``n_kv_heads``.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``), read afresh on every change.
    n_heads : int
        Query heads (a divisor of d_model = 8).
    n_kv_heads : int
        Initial number of K/V heads (a divisor of ``n_heads``).
    """

    name = "grouped_query_attention"

    def __init__(self, functions=None, n_heads: int = 4, n_kv_heads: int = 2):
        self.example = get_example("question")
        d = self.example.d_model
        self.n_heads, d_k = n_heads, d // n_heads
        rng = np.random.default_rng(12)
        # K/V head j reads columns j*d_k:(j+1)*d_k of these: n_kv_heads = n_heads is the layer
        # of the example, scaled to show sharper weights
        self.W_k = 2.0 * self.example.W_k + rng.normal(size=(d, d)) / math.sqrt(d)
        self.W_v = self.example.W_v
        self.kv_w = widgets.SelectionSlider(
            options=[k for k in range(1, n_heads + 1) if n_heads % k == 0],
            value=n_kv_heads,
            description="K/V heads",
        )
        self.d_k = d_k
        super().__init__(functions, rows=[[(self.kv_w, "300px", "70px")]])
        self.update()

    def arguments(self) -> tuple:
        """The question sentence, n_heads query heads, the slider's n_kv_heads K/V heads."""
        e, kv = self.example, self.kv_w.value
        cols = kv * self.d_k
        W_q = 2.0 * e.W_q
        return (e.X, W_q, self.W_k[:, :cols], self.W_v[:, :cols], e.W_o, self.n_heads, kv)

    def panels(self, result) -> tuple[list, str]:
        _, A = result
        e, kv = self.example, self.kv_w.value
        group = self.n_heads // kv
        panels = [
            svg.Panel(
                A[i],
                f"query head {i + 1} · K/V {i // group + 1}",  # its chip fits the panel
                e.tokens,
                e.tokens,
                "query",
                "key",
                colour=HEAD_COLOURS[(i // group) % len(HEAD_COLOURS)],
                meaning=f"the share of the key's value (from K/V head {i // group + 1}) in "
                "the query's output",
            )
            for i in range(self.n_heads)
        ]
        label = f"{self.n_heads} query heads sharing {kv} K/V heads"
        return panels, label

    def notes(self) -> list[str]:
        """What the frames' colours mean and what the slider changes."""
        kv = self.kv_w.value
        h, group = self.n_heads, self.n_heads // kv
        if kv == 1:
            shared = f"1 K/V head, shared by all {h} query heads (multi-query attention)"
        elif group == 1:
            shared = f"{kv} K/V heads, one per query head (multi-head attention)"
        else:
            shared = f"{kv} K/V heads, each shared by {group} query heads"
        return [
            f"{h} query heads, {shared}: a panel's title and frame colour name the K/V head "
            "it reads."
        ]
