"""A live companion of notebook 13: the song decoded token by token, its KV cache growing.

:class:`DecodeWidget` feeds the song (2 heads) to ``decode_step`` one token at a time,
passing back the cache each step returns, as a model would; a slider (and Next token /
Reset) chooses how many tokens are decoded. Every number of tokens is computed at once
(:class:`~mhsa_helpers.widgets.panels.PanelsWidget`): the cache K′ and V′ (rows not decoded
yet dotted grey, never the hatching of a mask), the new token's weights over it, and the
outputs step by step beside causal multi-head self-attention over the whole sentence.
"""

from __future__ import annotations

from html import escape

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .panels import Panel, PanelsWidget, head_runs, slider

__all__ = ["DecodeWidget", "decode_all"]


def decode_all(fn, X, weights, n_heads: int) -> tuple:
    """Decode ``X`` (T, d_model) token by token with ``fn`` (``decode_step``), fed its own caches.

    Returns ``(Y, K, V)``: the output of each step, shape (T, d_model), and the cache each
    step returned, shape (T, h, T, d_k) (step t's rows after t: −∞). Raises ValueError where
    a step returns other shapes than the contract's.
    """
    T, d = X.shape
    d_k = d // n_heads
    Y, KV = np.zeros((T, d)), np.full((2, T, n_heads, T, d_k), -np.inf)
    cache = None
    for t in range(T):
        y, cache = fn(X[t], cache, *weights, n_heads)
        y, *kv = (np.asarray(a, dtype=float) for a in (y, *cache))
        if y.shape != (d,) or [c.shape for c in kv] != [(n_heads, t + 1, d_k)] * 2:
            raise ValueError(
                f"at step {t} it returned y of shape {y.shape} and a cache of shapes "
                f"{[c.shape for c in kv]}, not {(d,)} and two of {(n_heads, t + 1, d_k)}"
            )
        Y[t], KV[:, t, :, : t + 1] = y, kv
    return Y, KV[0], KV[1]


class DecodeWidget(PanelsWidget):
    """The song decoded token by token with ``decode_step``: the cache, the weights, the output.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``); ``decode_step`` is used where its check
        passes, or with the box "draw my failing functions anyway" ticked.
    tokens : int
        The slider's first value: how many tokens are decoded (1 to T).
    """

    name = "decode_step"
    where = "The KV cache's widget: run this cell to draw it."
    n_heads = 2

    def __init__(self, functions=None, tokens: int = 1):
        self.example = e = get_example("song")
        mask = ref.causal_mask(e.T)
        self.full = ref.multi_head_self_attention(e.X, *e.weights, self.n_heads, mask)[0]
        super().__init__(functions, tokens=tokens)

    def control_specs(self):
        moves = [["Next token", 1], ["Reset", "first"]]
        return [slider("tokens", "tokens decoded", range(1, self.example.T + 1), moves)]

    def compute_state(self, tokens):
        e, h, t = self.example, self.n_heads, tokens - 1
        (Y, Ks, Vs), line, notes = self.draw_with(
            when="(fed its own caches)", run=lambda f: decode_all(f, e.X, e.weights, h)
        )  # (T, d_model), (T, h, T, d_k) twice
        d_k, token = Ks.shape[-1], f"\u201c{escape(e.tokens[t])}\u201d"
        q = ref.split_heads(e.X[t][None] @ e.W_q, h)  # (h, 1, d_k): the new token's query
        with np.errstate(all="ignore"):
            A = ref.softmax(q @ Ks[t, :, : t + 1].swapaxes(-1, -2) / np.sqrt(d_k))[:, 0]
        W = np.full((e.T, h), -np.inf)
        W[: t + 1] = A.T  # (T, h): cached token × head
        shown = np.where(np.arange(e.T)[:, None] <= t, Y, -np.inf)  # (T, d_model)
        runs = head_runs(h, d_k)
        cached = {"kinds": ("key", "column"), "blocks": runs, "highlight": t,
                  "pending": "not decoded yet: not in the cache"}  # fmt: skip
        rows = {"kinds": ("query", "feature"), "highlight": t}
        panels = [
            Panel(ref.merge_heads(C[t]), f"cache {k}\u2032", e.tokens,
                  [f"{k.lower()}{j % d_k}" for j in range(h * d_k)], **cached,
                  meaning=f"this token's {what} for this head, cached when it was decoded: "
                  "the later steps read it, never change it")
            for k, C, what in (("K", Ks, "key x·W_K"), ("V", Vs, "value x·W_V"))
        ] + [
            Panel(W, f"weights of {token}", e.tokens, range(1, h + 1), ("key", "head"),
                  blocks=head_runs(h),
                  pending="not in the cache yet", meaning=f"the share of this cached token's "
                  f"value in the output of {token} for this head: softmax(q·K′ᵀ/√d_k)"),
            Panel(shown, "y, step by step", e.tokens, e.features, **rows,
                  pending="not decoded yet", meaning="decode_step's output for this token: "
                  "its own q, k, v computed, the earlier ones read from the cache"),
            Panel(self.full, "causal MHSA", e.tokens, e.features, **rows,
                  meaning="multi_head_self_attention over the whole sentence, causal mask: "
                  "this row reads the tokens up to itself"),
        ]  # fmt: skip
        diff = float(np.abs(Y[t] - self.full[t]).max())
        verdict = "equals" if np.allclose(Y[t], self.full[t]) else "<b>does not equal</b>"
        top = max(np.abs(a[np.isfinite(a)]).max(initial=1.0) for a in (Y, Ks, Vs, self.full))
        return {
            "picture": {"panels": panels, "label": f"KV cache after {tokens} tokens",
                        "fixed": [-top, top], "bar": "value"},
            "status": f"{line} Token {tokens} of {e.T}: {token} (position {t}, counting from 0), "
            f"its rows framed dashed; the cache K\u2032, V\u2032 has shape {(h, tokens, d_k)} each "
            "(dotted grey: not decoded yet).",
            "notes": [*notes, *([f"<code>decode_step</code> returns no weights: the weights of "
                      f"{token} drawn are softmax(q·K′ᵀ/√d_k) on your cache, what a right one "
                      "would take; your own arithmetic shows in y only."]
                      if self.failing and self.anyway else []),
                      f"Cached decoding of token {tokens} ({token}) {verdict} row {t} of "
                      "causal <code>multi_head_self_attention</code> recomputed over the whole "
                      f"sentence: max |difference| = {diff:.1e}."],
        }  # fmt: skip
