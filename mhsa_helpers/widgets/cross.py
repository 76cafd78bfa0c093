"""A live companion to extension 15: cross-attention as more or less of the memory C is visible.

:class:`CrossWidget` lets the simple sentence ("The cat sat on the mat")
read the question ("Where did the cat sit ?") and draws each head's
``T_q × T_k`` weights, with one slider: how many positions of ``C`` are
real (the rest are padding, hidden by ``padding_mask``). It runs the
learner's own ``cross_attention`` (``functions=globals()``) only while its
check passes, and says which function drew the picture
(:class:`mhsa_helpers.widgets.gqa.ExtensionWidget`).
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..plot_style import HEAD_COLOURS
from . import svg
from .gqa import ExtensionWidget

__all__ = ["CrossWidget"]


class CrossWidget(ExtensionWidget):
    """Cross-attention of the simple sentence over the question; one slider, the memory length.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``), read afresh on every change.
    n_heads : int
        A divisor of d_model = 8.
    length : int, optional
        Initial number of visible positions of ``C`` (all by default).
    """

    name = "cross_attention"

    def __init__(self, functions=None, n_heads: int = 2, length: int | None = None):
        self.x, self.c = get_example("simple"), get_example("question")
        self.n_heads = n_heads
        T_k = self.c.T
        self.length_w = widgets.IntSlider(
            value=length or T_k, min=1, max=T_k, description="C's length"
        )
        super().__init__(functions, rows=[[(self.length_w, "320px", "80px")]])
        self.update()

    def arguments(self) -> tuple:
        """X the simple sentence, C the question, padded after the slider's length."""
        x, c = self.x, self.c
        mask = ref.padding_mask(self.length_w.value, c.T)  # (1, T_k): the padding of C
        return (x.X, c.X, 2.0 * c.W_q, 2.0 * c.W_k, c.W_v, c.W_o, self.n_heads, mask)

    def panels(self, result) -> tuple[list, str]:
        _, A = result
        blocked = np.broadcast_to(np.arange(self.c.T) >= self.length_w.value, A.shape[-2:])
        shown = [
            svg.Panel(
                A[i],
                f"head {i + 1}",
                self.x.tokens,
                self.c.tokens,
                "query (from X)",
                "key (from the memory C)",
                colour=HEAD_COLOURS[i % len(HEAD_COLOURS)],
                blocked=blocked,
                meaning="the share of C's token's value in the X token's output",
            )
            for i in range(self.n_heads)
        ]
        n = self.length_w.value
        return shown, f"X reads the first {n} of {self.c.T} positions of C"

    def picture(self, panels: list, label: str, max_height: float = svg.HEIGHT) -> str:
        """The weights, with the axes named: rows X's queries, columns the memory C."""
        return svg.grid(
            panels,
            svg.Scale(vmin=0.0, vmax=1.0),
            "weight",
            label,
            axes=(
                "queries \u2193 (rows): the tokens of X",
                "memory C \u2192 (columns): its tokens give the keys and values",
            ),
            max_height=max_height,
        )

    def notes(self) -> list[str]:
        """Which position of C the slider hides."""
        n, T = self.length_w.value, self.c.T
        reads = (
            f"X = \u201c{' '.join(self.x.tokens)}\u201d reads C = "
            f"\u201c{' '.join(self.c.tokens)}\u201d: each row of weights sums to 1 over the "
            "positions of C that are not padding."
        )
        if n == T:
            return [f"C's length {n} of {T}: no padding, every query reads all of C.", reads]
        return [
            f"C's length {n} of {T}: C's last {T - n} position(s) are padding, hidden from "
            "every query by <code>padding_mask</code> (hatched: blocked by the mask).",
            reads,
        ]
