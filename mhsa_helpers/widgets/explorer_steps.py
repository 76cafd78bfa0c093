"""What the explorer draws at each of its nine steps: the panels, their meaning, their colours.

:func:`step_panels` turns every intermediate matrix of the layer
(:meth:`~mhsa_helpers.widgets.explorer.Explorer.compute`) into the panels of
one step; :data:`MEANING` is what a cell of each matrix means, shown when the
learner points at it.
"""

from __future__ import annotations

import numpy as np

from ..plot_style import HEAD_COLOURS
from . import svg

__all__ = ["MEANING", "STEPS", "head_blocks", "head_colour", "step_panels"]

STEPS = (
    "1. Input embeddings X",
    "2. Learnable parameters W_Q, W_K, W_V, W_O",
    "3. Queries, keys, values: Q = X·W_Q, K = X·W_K, V = X·W_V",
    "4. Dividing into heads",
    "5. Scores Z = Q·Kᵀ/√d_k, per head",
    "6. Masking: Z + M",
    "7. Attention A = softmax(Z + M), per head",
    "8. Output of each head: A·V",
    "9. Concatenate the heads, project with W_O",
)


#: What a cell of each matrix means, shown with its value when the learner points at it.
MEANING = {
    "Q": "what the token looks for (its query), one column",
    "K": "what the token offers to be found by (its key), one column",
    "V": "what the token passes on when read (its value), one column",
    "Z": "how well the query matches the key, (Q row · K row) / √d_k",
    "M": "added to the score: 0 lets the query read the key, −∞ blocks it",
    "ZM": "the score after the mask",
    "A": "the share of the key's value in the query's output (each row sums to 1)",
    "AV": "the head's output for the token: its row of A times this column of V",
    "concat": "the heads' outputs side by side",
    "out": "the layer's output: the concatenated row times this column of W_O",
}


def head_colour(i: int) -> str:
    """Head ``i``'s colour (counted from 0)."""
    return HEAD_COLOURS[i % len(HEAD_COLOURS)]


def head_blocks(h: int, d_k: int) -> list:
    """Head-coloured column runs of a (T, h·d_k) matrix."""
    return [(i * d_k, (i + 1) * d_k, head_colour(i), f"head {i + 1}") for i in range(h)]


def step_panels(e, s: dict, h: int, step: int, q: int) -> tuple[list, tuple | None, str]:
    """Step ``step``'s panels, its fixed colour range (or None) and colour-bar label.

    Parameters
    ----------
    e : Example
        The worked example drawn.
    s : dict of ndarray
        Every intermediate matrix (:meth:`Explorer.compute`).
    h : int
        The number of heads.
    step : int
        The step, 1 to 9 (:data:`STEPS`).
    q : int
        The query token highlighted.

    Returns
    -------
    panels : list of Panel
    fixed : tuple of float or None
        The colour range, where the step fixes it (weights: 0 to 1).
    bar_label : str
    """
    d_k = e.d_model // h
    tok, feat = e.tokens, e.features
    kcols = [f"v{j + 1}" for j in range(d_k)]  # a head's value columns, from 1
    head = [(f"head {i + 1}", head_colour(i)) for i in range(h)]

    def P(M, title, rows, cols, kinds=("token", "column"), **kw):
        return svg.Panel(M, title, rows, cols, *kinds, **kw)

    qk = ("query", "key")
    if step == 1:
        meaning = "the token's input embedding, one feature"
        return [P(s["X"], "X (input)", tok, feat, highlight=q, meaning=meaning)], None, "X"
    if step == 2:
        ws = ("W_Q", "W_K", "W_V", "W_O")
        meaning = "how much the input feature (row) adds to the output column"
        panels = [
            P(W, n, feat, feat, ("feature", "column"), meaning=meaning)
            for n, W in zip(ws, e.weights, strict=True)
        ]
        return panels, None, "W"
    if step in (3, 4):
        blocks = head_blocks(h, d_k) if step == 4 else []
        return (
            [P(s[n], n, tok, feat, highlight=q, blocks=blocks, meaning=MEANING[n]) for n in "QKV"],
            None,
            "Q, K, V",
        )
    if step == 5:
        panels = [
            P(s["Z"][i], f"Z, {t}", tok, tok, qk, colour=c, highlight=q, meaning=MEANING["Z"])
            for i, (t, c) in enumerate(head)
        ]
        return panels, None, "score"
    if step == 6:
        mask = P(s["M"], "mask M", tok, tok, qk, highlight=q, neutral=True, meaning=MEANING["M"])
        panels = [mask] + [
            P(
                s["ZM"][i],
                f"Z + M, {t}",
                tok,
                tok,
                qk,
                colour=c,
                highlight=q,
                meaning=MEANING["ZM"],
            )
            for i, (t, c) in enumerate(head)
        ]
        return panels, None, "score"
    if step == 7:
        blocked = np.broadcast_to(np.isneginf(s["M"]), s["A"].shape[-2:])  # (T, T)
        panels = [
            P(
                s["A"][i],
                f"A, {t}",
                tok,
                tok,
                qk,
                colour=c,
                highlight=q,
                blocked=blocked,
                meaning=MEANING["A"],
            )
            for i, (t, c) in enumerate(head)
        ]
        return panels, (0.0, 1.0), "weight"
    if step == 8:
        panels = [
            P(
                s["heads"][i],
                f"A·V, {t}",
                tok,
                kcols,
                ("token", "value column"),
                colour=c,
                highlight=q,
                meaning=MEANING["AV"],
            )
            for i, (t, c) in enumerate(head)
        ]
        return panels, None, "value"
    panels = [
        P(
            s["concat"],
            "concatenated heads",
            tok,
            feat,
            highlight=q,
            blocks=head_blocks(h, d_k),
            meaning=MEANING["concat"],
        ),
        P(s["out"], "output = concat · W_O", tok, feat, highlight=q, meaning=MEANING["out"]),
        P(
            np.stack([s["X"][q], s["out"][q]]),
            f"'{tok[q]}': input vs output",
            ["input", "output"],
            feat,
            ("vector", "column"),
        ),
    ]
    return panels, None, "value"
