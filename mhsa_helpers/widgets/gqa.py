"""A live companion of extension 12: the attention of every query head as n_kv_heads changes,
with the setting of the figure right above it (the question sentence, the causal mask, its
weights); :func:`heads` draws one attention per head (cross-attention's too)."""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..plot_style import HEAD_COLOURS
from .panels import Panel, PanelsWidget, slider

__all__ = ["GQAWidget", "heads"]


def heads(A, rows, cols, mask, titles, reads, kinds=("query", "key"), meaning=None) -> list:
    """A panel per head of weights ``A`` (h, T_q, T_k), framed in the colour of the K/V head
    ``reads[i]`` (from 0) it reads; hatched where ``mask`` blocks and the weight is 0 (drawn
    anyway, a function that ignores the mask shows its weights there)."""
    return [
        Panel(a, title, rows, cols, kinds, links=("q", "k"), blocked=np.isneginf(mask) & (a == 0),
              colour=HEAD_COLOURS[j % len(HEAD_COLOURS)],
              meaning=meaning or f"the share of the key's value (K/V head {j + 1}) in the "
              "query's output")
        for a, title, j in zip(A, titles, reads, strict=True)
    ]  # fmt: skip


class GQAWidget(PanelsWidget):
    """Grouped-query attention of ``n_heads`` query heads; the slider: ``n_kv_heads``."""

    name = "grouped_query_attention"
    where = "The grouped-query attention widget: run this cell to draw it."

    def __init__(self, functions=None, n_heads: int = 4, n_kv_heads: int = 2):
        self.example, self.n_heads = e, _ = get_example("question"), n_heads
        rng = np.random.default_rng(1)  # the figure's W_K, then W_V
        self.W_k, self.W_v = (ref.init_weights(e.d_model, e.d_model, rng) for _ in "kv")
        self.mask = ref.causal_mask(e.T)  # (T, T)
        super().__init__(functions, kv=n_kv_heads)

    def control_specs(self):
        h = self.n_heads
        return [slider("kv", "K/V heads", [k for k in range(1, h + 1) if h % k == 0])]

    def compute_state(self, kv):
        e, h, group = self.example, self.n_heads, self.n_heads // kv
        cols = kv * e.d_model // h
        (_, A), line, notes = self.draw_with(
            e.X, 3 * e.W_q, 3 * self.W_k[:, :cols], self.W_v[:, :cols], e.W_o, h, kv, self.mask
        )  # A: (h, T, T)
        reads = [i // group for i in range(h)]
        titles = [f"q head {i + 1} · kv {j + 1}" for i, j in enumerate(reads)]
        shared = (
            f"1 K/V head, shared by all {h} query heads (multi-query attention)" if kv == 1
            else f"{kv} K/V heads, one per query head (multi-head attention)" if group == 1
            else f"{kv} K/V heads, each shared by {group} query heads"
        )  # fmt: skip
        return {
            "picture": {"panels": heads(A, e.tokens, e.tokens, self.mask, titles, reads),
                        "label": f"{h} query heads sharing {kv} K/V heads", "fixed": [0, 1],
                        "bar": "weight"},
            "status": line,
            "notes": [*notes, f"{h} query heads, {shared}: a panel's title and frame colour "
                      "name the K/V head it reads.",
                      "The figure's setting above: the question sentence, the causal mask "
                      "(hatched where it blocks), the question's 3·W<sub>Q</sub>, 3·W<sub>K</sub> "
                      "and W<sub>V</sub> drawn by its <code>default_rng(1)</code>; at 4, 2 and 1 "
                      "K/V heads, this picture is the figure's."],
        }  # fmt: skip
