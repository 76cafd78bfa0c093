"""A live companion of extension 15: the simple sentence X reads the question C (the weights
of the figure above it) as more or less of C is real; the rest is padding, hidden by
``padding_mask``."""

from __future__ import annotations

from .. import reference as ref
from ..examples import get_example
from .gqa import heads
from .panels import PanelsWidget, slider

__all__ = ["CrossWidget"]


class CrossWidget(PanelsWidget):
    """Cross-attention of ``n_heads`` heads; the slider: C's length (all of it by default)."""

    name = "cross_attention"
    where = "The cross-attention widget: run this cell to draw it."

    def __init__(self, functions=None, n_heads: int = 2, length: int | None = None):
        self.x, self.c, self.n_heads = get_example("simple"), get_example("question"), n_heads
        super().__init__(functions, length=length or self.c.T)

    def control_specs(self):
        return [slider("length", "C's length", range(1, self.c.T + 1))]

    def compute_state(self, length):
        x, c, h, n, T = self.x, self.c, self.n_heads, length, self.c.T
        mask = ref.padding_mask(n, T)  # (1, T_k)
        (_, A), line, notes = self.draw_with(
            x.X, c.X, 2 * c.W_q, 2 * c.W_k, c.W_v, c.W_o, h, mask
        )  # A: (h, T_q, T_k)
        panels = heads(A, x.tokens, c.tokens, mask, [f"head {i + 1}" for i in range(h)],
                       range(h), ("X's query", "C's key"),
                       "the share of C's token's value in the X token's output")  # fmt: skip
        hidden = (
            "no padding, every query reads all of C." if n == T
            else f"C's last {T - n} position(s) are padding, hidden from every query by "
            "<code>padding_mask</code> (hatched: blocked by the mask)."
        )  # fmt: skip
        said = [f"\u201c{' '.join(e.tokens)}\u201d" for e in (x, c)]
        return {
            "picture": {"panels": panels, "label": f"X reads the first {n} of {T} positions of C",
                        "fixed": [0, 1], "bar": "weight",
                        "axes": ["queries \u2193 (rows): the tokens of X",
                                 "memory C \u2192 (columns): its tokens give the keys and values"]},
            "status": line,
            "notes": [*notes, f"C's length {n} of {T}: {hidden}",
                      f"X = {said[0]} reads C = {said[1]} with the figure's weights above "
                      "(2·W<sub>Q</sub>, 2·W<sub>K</sub>, W<sub>V</sub>, W<sub>O</sub>, 2 heads): "
                      "each row of weights sums to 1 over the positions of C that are not "
                      "padding."],
        }  # fmt: skip
