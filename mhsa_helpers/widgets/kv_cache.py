"""A live companion of notebook 13: the song decoded token by token, its KV cache growing.

:class:`DecodeWidget` feeds the song (2 heads) to ``decode_step`` one token
at a time, passing back the cache each step returns, as a model would. A
slider (and Next/Reset buttons) chooses how many tokens are decoded; the
picture shows each head's cached K and V (one row per decoded token; rows
not decoded yet are dotted grey, never the hatching of a masked cell), the
new token's attention weights over the cache, and its output next to the
same row of causal multi-head self-attention over the whole sentence, with
the largest difference.

The learner's ``decode_step`` (``functions=globals()``) is used only while
its check passes (:func:`mhsa_helpers.widgets.live.drawn_with`) or, as in the
explorer, the box "draw my failing functions anyway" is ticked
(:class:`mhsa_helpers.widgets.anyway.Anyway`); the status
line says which function drew the picture, the notes under it why.
"""

from __future__ import annotations

from html import escape

import ipywidgets as widgets
import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..plot_style import HEAD_COLOURS
from . import svg
from .anyway import Anyway
from .live import Frame, Framed, compact

__all__ = ["DecodeWidget", "decode_all", "not_yet_legend"]

CELL = 32.0  # pixels per cell: the values are printed in the cells, at 11 px
TOP = 60.0  # the top of the cache panels
BOTTOM = 292.0  # the top of the output panels
NOT_YET_FILL = svg.NOT_YET_FILL


def decode_all(fn, X, weights, n_heads: int) -> list[tuple]:
    """Decode ``X`` token by token with ``fn``, feeding it its own caches.

    Parameters
    ----------
    fn : callable
        ``decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads)``.
    X : ndarray of shape (T, d_model)
    weights : tuple of four ndarrays (W_q, W_k, W_v, W_o)
    n_heads : int

    Returns
    -------
    steps : list of T tuples ``(y, K, V)``
        The output of step ``t`` (shape ``(d_model,)``) and the cache it
        returned (each of shape ``(n_heads, t + 1, d_k)``).

    Raises
    ------
    ValueError
        If a returned output or cache does not have the shape of the contract.
    """
    d_k = X.shape[-1] // n_heads
    cache, steps = None, []
    for t in range(X.shape[0]):
        with np.errstate(all="ignore"):
            y, cache = fn(X[t], cache, *weights, n_heads)
        y = np.asarray(y, dtype=float)
        K, V = (np.asarray(c, dtype=float) for c in cache)
        want = (n_heads, t + 1, d_k)
        if y.shape != (X.shape[-1],) or K.shape != want or V.shape != want:
            raise ValueError(
                f"at step {t} it returned y of shape {y.shape} and a cache of shapes "
                f"{K.shape}, {V.shape}; expected {(X.shape[-1],)} and {want}."
            )
        steps.append((y, K, V))
    return steps


def _text(x: float, y: float, text: str, size: int = 12, **attrs) -> str:
    extra = "".join(f" {k.replace('_', '-')}='{v}'" for k, v in attrs.items())
    return f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}'{extra}>{escape(text)}</text>"


def not_yet_legend(x: float, y: float, what: str) -> list[str]:
    """A swatch of the "not yet" dots at ``(x, y)`` and what they mean here."""
    return [
        f"<rect x='{x}' y='{y - 11}' width='14' height='14' fill='{NOT_YET_FILL}' stroke='#555'/>",
        _text(x + 20, y, what),
    ]


class DecodeWidget(Anyway, Framed):
    """The song decoded token by token with ``decode_step``: the cache, the weights, the output.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``), read afresh on every change;
        ``decode_step`` is used where its check passes.
    tokens : int
        The slider's first value: how many tokens are decoded (1 to T).

    Attributes
    ----------
    status_w, figure, notes_w : ipywidgets.HTML
        The status line (who decoded, the verdict), the picture and the notes
        under it (the comparison in words; why the learner's function was
        replaced).
    widget : ipywidgets.VBox
        The whole widget, of one height whatever the controls show.
    """

    name = "decode_step"

    def __init__(self, functions=None, tokens: int = 1):
        self._source, self._cache = functions, {}
        self._runs = None  # (function, its T steps): decoded once per function
        self.example = e = get_example("song")
        self.n_heads = 2
        self.full, _ = ref.multi_head_self_attention(
            e.X, *e.weights, self.n_heads, ref.causal_mask(e.T)
        )
        K_all, V_all = (ref.split_heads(e.X @ W, self.n_heads) for W in (e.W_k, e.W_v))
        self.scale = svg.step_scale([K_all, V_all, self.full])  # one scale for every step
        self.step_w = widgets.IntSlider(value=tokens, min=1, max=e.T, description="tokens decoded")
        self.next_w = widgets.Button(description="Next token", icon="step-forward")
        self.reset_w = widgets.Button(description="Reset", icon="undo")
        self.next_w.on_click(lambda _: self.next())
        self.reset_w.on_click(lambda _: self.reset())
        row = [compact(self.step_w, "360px", "110px"), compact(self.next_w), compact(self.reset_w)]
        self._init_anyway()
        self.frame = Frame([row], beside_status=[self.anyway_w])
        self.step_w.observe(lambda _: self.update(), names="value")
        self.update()

    def next(self) -> None:
        """Decode one more token (up to the last one)."""
        self.step_w.value = min(self.step_w.value + 1, self.step_w.max)

    def reset(self) -> None:
        """Back to the first token."""
        self.step_w.value = 1

    def steps(self) -> tuple[list, str, list[str]]:
        """``(the T decoding steps, status line, notes)``: the learner's function where it can.

        The learner's ``decode_step`` is fed its own caches; if it raises or
        returns the wrong shapes then, the reference is used, the line says
        so and the notes say why.
        """
        e = self.example
        fn, line, notes = self.choose(self._source, self._cache)
        if self._runs is not None and self._runs[0] is fn:
            return self._runs[1], line, notes
        try:
            steps = decode_all(fn, e.X, e.weights, self.n_heads)
        except Exception as exc:  # the learner's function, fed its own caches
            if fn is getattr(ref, self.name):
                raise
            mine, fn = fn, getattr(ref, self.name)
            steps = decode_all(fn, e.X, e.weights, self.n_heads)
            line, notes = self.fell_back(mine, exc, "fed its own caches")
        self._runs = (fn, steps)
        return steps, line, notes

    def weights_of(self, t: int, K: np.ndarray) -> np.ndarray:
        """The new token ``t``'s attention weights over the cache ``K``: shape (h, t + 1)."""
        e = self.example
        q = ref.split_heads(e.X[t][None, :] @ e.W_q, self.n_heads)  # (h, 1, d_k)
        with np.errstate(all="ignore"):
            return ref.softmax(q @ K.swapaxes(-1, -2) / np.sqrt(q.shape[-1]))[:, 0, :]

    def update(self) -> None:
        """Redraw the picture, the status line and the notes for the slider's number of tokens."""
        steps, line, notes = self.steps()
        e, t = self.example, self.step_w.value - 1
        y, K, _ = steps[t]
        diff = float(np.abs(y - self.full[t]).max())
        equal = bool(np.allclose(y, self.full[t]))
        self.difference = diff
        self.next_w.disabled = t == e.T - 1  # the last token: nothing left to decode
        self.figure.value = self.picture(t, steps, self.weights_of(t, K))
        self.frame.status(f"{line} Token {t + 1} of {e.T}: \u201c{escape(e.tokens[t])}\u201d.")
        self.frame.notes([*notes, self.comparison(t, diff, equal)])
        self.show_anyway()

    def comparison(self, t: int, diff: float, equal: bool) -> str:
        """The one sentence comparing decoding step ``t`` with the full recomputation."""
        e = self.example
        verdict = "equals" if equal else "<b>does not equal</b>"
        return (
            f"Cached decoding of token {t + 1} (\u201c{escape(e.tokens[t])}\u201d) {verdict} "
            f"row {t} of causal <code>multi_head_self_attention</code> recomputed over the "
            f"whole sentence: max |difference| = {diff:.1e}."
        )

    def picture(self, t: int, steps: list, w: np.ndarray) -> str:
        """The SVG picture after decoding tokens ``0 … t``."""
        e, h, s = self.example, self.n_heads, CELL
        _, K, V = steps[t]
        d_k = K.shape[-1]
        body = [
            _text(
                20,
                20,
                f"Decoding the song with a KV cache: token {t + 1} of {e.T}, "
                f"\u201c{e.tokens[t]}\u201d (position {t}, counting from 0), {h} heads",
                14,
                font_weight="bold",
                **{"class": "mhsa-info"},  # the top line: a pointed cell's value takes its place
            )
        ]
        x = 10.0 + svg.LABELS
        for i in range(h):
            for kind, C in (("K", K), ("V", V)):
                M = np.full((e.T, d_k), -np.inf)
                M[: t + 1] = C[i]
                panel = svg.Panel(
                    M,
                    f"{kind}, head {i + 1}",
                    e.tokens,
                    [f"{kind.lower()}{j}" for j in range(d_k)],
                    "cached token",
                    "column",
                    colour=HEAD_COLOURS[i],
                    highlight=t,
                    row_labels=(i, kind) == (0, "K"),
                    pending="not decoded yet",
                )
                body += svg.panel_svg(panel, x, TOP, s, self.scale)
                x += d_k * s + (40.0 if kind == "K" else 70.0)
        body += self._bars(t, w, x + 10.0)
        decoded = np.full((e.T, e.d_model), -np.inf)
        decoded[: t + 1] = [step[0] for step in steps[: t + 1]]
        x = 10.0 + svg.LABELS
        for M, title, labels in (
            (decoded, "y, step by step", True),
            (self.full, "causal MHSA", False),  # the same rows: labelled once
        ):
            panel = svg.Panel(
                M,
                title,
                e.tokens,
                e.features,
                "token",
                "feature",
                highlight=t,
                row_labels=labels,
                pending="not decoded yet",
            )
            body += svg.panel_svg(panel, x, BOTTOM, s, self.scale)
            x += e.d_model * s + 44.0
        tx = x + 10.0
        body += [  # the verdict is said once, under the picture (:meth:`comparison`)
            _text(tx, BOTTOM + 12, f"row {t} (\u201c{e.tokens[t]}\u201d), in both panels:", 13),
            _text(tx, BOTTOM + 30, "left, decode_step's y (one token's q, k, v", 13),
            _text(tx, BOTTOM + 48, "computed, the rest read from the cache);", 13),
            _text(tx, BOTTOM + 66, "right, causal MHSA recomputed over the", 13),
            _text(tx, BOTTOM + 84, f"whole sentence (row {t} reads tokens 0 \u2026 {t})", 13),
            _text(tx, BOTTOM + 108, f"cache K\u2032, V\u2032 of shape {K.shape} each", 12),
            _text(tx, BOTTOM + 126, "(heads, cached tokens, d_k): one row more per token", 12),
        ]
        body += svg.colourbar(self.scale, "value", TOP, BOTTOM + e.T * s - TOP)
        body += not_yet_legend(tx, BOTTOM + 156, "not decoded yet: no row in the cache")
        body += [
            f"<rect x='{tx}' y='{BOTTOM + 169}' width='14' height='14' fill='none' "
            "stroke='#000' stroke-width='2' stroke-dasharray='4 2'/>",
            _text(tx + 20, BOTTOM + 180, "dashed frame: the new token's row", 12),
        ]
        return svg.picture(body, f"KV cache after {t + 1} tokens")

    def _bars(self, t: int, w: np.ndarray, x0: float) -> list[str]:
        """Per head, the new token's weights over the cache, as bars (not decoded yet: blank)."""
        e = self.example
        out = [
            _text(x0, TOP - 22, f"“{e.tokens[t]}” attends to its cache", 13, font_weight="bold"),
        ]
        pitch = 14.0
        width = svg._COLOURBAR[0] - 40.0 - (x0 + 70.0) - 40.0
        for i in range(self.n_heads):
            y0 = TOP + i * (e.T * pitch + 34.0)
            colour = HEAD_COLOURS[i]
            out.append(
                f"<rect x='{x0:.1f}' y='{y0 - 12:.1f}' width='64' height='17' rx='3' "
                f"fill='{colour}'/>"
                + _text(x0 + 6, y0 + 1, f"head {i + 1}", 12, fill=svg.text_colour(colour))
            )
            for j in range(e.T):
                yy = y0 + 8 + (j + 1) * pitch
                out.append(_text(x0 + 64, yy, e.tokens[j], 11, text_anchor="end"))
                if j > t:
                    out.append(_text(x0 + 70, yy, "not in the cache yet", 11, fill="#8c8c8c"))
                    continue
                v = float(w[i, j])
                bar = max(v, 0.0) * width if np.isfinite(v) else 0.0
                out.append(
                    f"<rect x='{x0 + 70:.1f}' y='{yy - 10:.1f}' width='{bar:.1f}' height='11' "
                    f"fill='{colour}'><title>{escape(f'head {i + 1}: {e.tokens[t]} → ')}"
                    f"{escape(f'{e.tokens[j]}: weight {v:.3f}')}</title></rect>"
                )
                out.append(_text(x0 + 74 + bar, yy, f"{v:.2f}", 11))
        return out
