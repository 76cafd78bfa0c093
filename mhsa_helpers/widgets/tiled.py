"""A live companion of notebook 14: the online softmax of one query, block by block.

:class:`TiledWidget` walks over the song's keys in blocks for the last query ("song"), as
``tiled_attention`` does: one slider for the block size (1 to 4; 4 does not divide T = 6,
so its last block is shorter), one for the block reached. Every state is computed at once
(:class:`~mhsa_helpers.widgets.panels.PanelsWidget`): the scores read so far and the
weights they give so far (keys not read yet dotted grey, never the hatching of a mask),
the running maximum m, sum ℓ and output O/ℓ after each block (computed here with the
course's algorithm, :func:`online_softmax`), and the row ``tiled_attention`` returns beside
``attention_head``'s.
"""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..plot_style import HEAD_COLOURS
from .panels import Panel, PanelsWidget, slider

__all__ = ["TiledWidget", "online_softmax"]


def online_softmax(scores, V, block_size: int) -> list[tuple]:
    """The online softmax of one query's ``scores`` (T,) over ``V`` (T, d_v), block by block.

    Returns ``(start, end, m, l, O)`` per block: its keys ``start … end - 1``, then the
    running maximum, sum ``Σ exp(S_j − m)`` and output ``Σ exp(S_j − m) V_j`` over the keys
    read so far; the last ``O / l`` is ``softmax(scores) @ V``.
    """
    m, l, O, steps = -np.inf, 0.0, np.zeros(V.shape[-1]), []
    for s in range(0, len(scores), block_size):
        e = min(s + block_size, len(scores))
        m_new = max(m, float(scores[s:e].max()))
        r, P = np.exp(m - m_new), np.exp(scores[s:e] - m_new)  # r = 0 before the first block
        m, l, O = m_new, r * l + P.sum(), r * O + P @ V[s:e]
        steps.append((s, e, m, l, O))
    return steps


class TiledWidget(PanelsWidget):
    """The online softmax of the song's last query, block by block over the keys.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``); ``tiled_attention``'s row is drawn where
        its check passes, or with the box "draw my failing functions anyway" ticked.
    block_size : int
        The first block size (1 to 4).
    block : int
        The first block reached (1-based; at most the size's number of blocks).
    """

    name = "tiled_attention"
    where = "The tiled attention's widget: run this cell to draw it."
    sizes = (1, 2, 3, 4)

    def __init__(self, functions=None, block_size: int = 2, block: int = 1):
        self.example = e = get_example("song")
        self.QKV = ref.project_qkv(e.X, e.W_q, e.W_k, e.W_v)  # (T, d_model) each
        Q, K, self.V = self.QKV
        self.scores = (Q @ K.T / np.sqrt(K.shape[-1]))[-1]  # (T,): the query "song"
        self.expected = ref.attention_head(*self.QKV)[0][-1]  # (d_v,)
        sums = [step[3] for b in self.sizes for step in online_softmax(self.scores, self.V, b)]
        self.top = float(max(np.abs(self.scores).max(), np.abs(self.V).max(), *sums))
        super().__init__(functions, size=block_size, block=min(block, self.blocks(block_size)))

    def blocks(self, b: int) -> int:
        """How many blocks of ``b`` keys the song has."""
        return -(-self.example.T // b)

    def control_specs(self):
        T = self.example.T
        return [
            slider("size", "block size", self.sizes),
            slider("block", "block reached", range(1, T + 1)),
        ]

    def combinations(self):
        """Each size's blocks, its last first: the page shows the first state that matches
        best, so a size with fewer blocks than the one reached shows its last block."""
        for b in self.sizes:
            n = self.blocks(b)
            yield from ({"size": b, "block": k} for k in (n, *range(1, n)))

    def compute_state(self, size, block):
        e, T, n, k = self.example, self.example.T, self.blocks(size), block - 1
        steps = online_softmax(self.scores, self.V, size)
        s, end, m, l, O = steps[k]
        out, line, notes = self.draw_with(*self.QKV, size, when=f"(block size {size})")
        read = np.where(np.arange(T) < end, self.scores, -np.inf)  # (T,): S so far
        runs = [[st[0], st[1], "#000000" if j == k else HEAD_COLOURS[j % 2], f"block {j + 1}"]
                for j, st in enumerate(steps[: k + 1])]  # fmt: skip
        ml = np.full((2, n), -np.inf)  # m and ℓ after each block read
        ml[:, : k + 1] = [[st[2] for st in steps[: k + 1]], [st[3] for st in steps[: k + 1]]]
        panels = [
            Panel([read, np.where(read > -np.inf, np.exp(read - m) / l, read)], "the keys read",
                  ["S", "weight"], e.tokens, ("row", "key"), blocks=runs,
                  pending="not read yet: a block the loop has not reached",
                  meaning="S: the score q·k/√d_k of the query “song” for this key; weight: "
                  "exp(S − m)/ℓ with the m and ℓ of the keys read so far (final once every "
                  "block is read)"),
            Panel(ml, "running m and ℓ", ["m", "ℓ"], range(1, n + 1), ("row", "after block"),
                  blocks=[[j, j + 1, *r[2:]] for j, r in enumerate(runs)], pending="not read "
                  "yet", meaning="m: the largest score of the keys read so far, the softmax's "
                  "shift; ℓ: Σ exp(S_j − m) over them, rescaled by exp(m_old − m) when m grew"),
            Panel([O / l, out[-1], self.expected], "output of “song”",
                  ["O/ℓ", "tiled", "full"], e.features, ("row", "feature"),
                  meaning="O/ℓ: the attention over the keys read so far; tiled: "
                  f"tiled_attention's output (block size {size}); full: attention_head's"),
        ]  # fmt: skip
        old = steps[k - 1][2] if k else m
        rescaled = (f"m starts at {m:.2f}" if not k else f"m stays {m:.2f}: ℓ and O are not "
                    "rescaled" if m == old else f"m grows from {old:.2f} to {m:.2f}: ℓ and O are "
                    f"multiplied by exp(m_old − m) = {np.exp(old - m):.2f}")  # fmt: skip
        keys = f"key {s}" if end - s == 1 else f"keys {s}–{end - 1}"
        diff = float(np.abs(out[-1] - self.expected).max())
        verdict = "equals" if np.allclose(out[-1], self.expected) else "<b>differs from</b>"
        return {
            "options": {"block": [[str(j), j] for j in range(1, n + 1)]},
            "picture": {"panels": panels, "label": f"online softmax, block {block} of {n}",
                        "fixed": [-self.top, self.top], "bar": "value"},
            "status": f"{line} Block {block} of {n} ({keys}, framed black): {rescaled}.",
            "notes": [*notes, f"{T - end} key(s) not read yet (dotted grey): O/ℓ is the "
                      "attention over the keys read so far." if end < T else "Last block: O/ℓ "
                      "is the output.", "The running m, ℓ and O/ℓ are the course's online "
                      "softmax, computed here: <code>tiled_attention</code> returns only the "
                      f"output; its row “song” (tiled) {verdict} <code>attention_head</code>'s "
                      f"(full): max |difference| = {diff:.1e}."],
        }  # fmt: skip
