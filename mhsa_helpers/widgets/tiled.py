"""A live companion of notebook 14: the online softmax of one query, block by block.

:class:`TiledWidget` walks over the keys of the song in blocks for the last
query ("song"), as ``tiled_attention`` does, with one slider for the block
reached and one for the block size (1 to 4; 4 does not divide T = 6, so its
last block is shorter). The picture shows the scores of the blocks read so
far (the others hatched), the weights they give so far, the running maximum
``m``, running sum ``ℓ`` and running output after each block, and at the
last block the final output next to ``attention_head``'s row, with the
largest difference.

The running quantities are computed here, step by step, with the course's
algorithm (:func:`online_softmax`): the learner's ``tiled_attention``
returns only its final output. Where its check passes
(:func:`mhsa_helpers.live.learner_or_reference`), the status line compares
that final output with the widget's last row and says "your
tiled_attention"; otherwise it names the reference and the check's sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import ipywidgets as widgets
import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..plots import HEAD_COLOURS
from . import svg
from .kv_cache import _not_yet_legend, _text
from .live import bundle, learner_or_reference

__all__ = ["OnlineStep", "TiledWidget", "online_softmax"]

CELL = 56.0  # the scores' cells: wide enough for "−1.26"


@dataclass(frozen=True)
class OnlineStep:
    """The running quantities of one query row after one block of keys.

    Attributes
    ----------
    start, end : int
        The block's keys, ``start … end - 1``.
    block_max : float
        The largest score of the block.
    m : float
        The running maximum after the block.
    rescale : float
        ``exp(m_old - m)``: what the running sum and output were multiplied by.
    l : float
        The running sum ``ℓ = Σ_j exp(S_j - m)`` over the keys read so far.
    O : ndarray of shape (d_v,)
        The running (unnormalised) output ``Σ_j exp(S_j - m) V_j``.
    """

    start: int
    end: int
    block_max: float
    m: float
    rescale: float
    l: float  # the ℓ of the formulas
    O: np.ndarray

    @property
    def output(self) -> np.ndarray:
        """The running output divided by the running sum: the output if the keys ended here."""
        return self.O / self.l


def online_softmax(scores, V, block_size: int) -> list[OnlineStep]:
    """The online softmax of one row of ``scores`` over the rows of ``V``, block by block.

    Parameters
    ----------
    scores : ndarray of shape (T,)
        One query's scores (finite).
    V : ndarray of shape (T, d_v)
    block_size : int >= 1
        Keys per block; the last block may be shorter.

    Returns
    -------
    steps : list of OnlineStep
        One per block; the last one's ``output`` is ``softmax(scores) @ V``.
    """
    scores, V = np.asarray(scores, dtype=float), np.asarray(V, dtype=float)
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    m, l, O = -np.inf, 0.0, np.zeros(V.shape[-1])
    steps = []
    for s in range(0, scores.shape[0], block_size):
        e = min(s + block_size, scores.shape[0])
        S = scores[s:e]
        m_new = max(m, float(S.max()))
        rescale = float(np.exp(m - m_new))  # exp(-inf) = 0 before the first block
        P = np.exp(S - m_new)
        l = rescale * l + float(P.sum())
        O = rescale * O + P @ V[s:e]
        m = m_new
        steps.append(OnlineStep(s, e, float(S.max()), m, rescale, l, O.copy()))
    return steps


def _keys(step: OnlineStep) -> str:
    return str(step.start) if step.end - step.start == 1 else f"{step.start}–{step.end - 1}"


class TiledWidget:
    """The online softmax of the song's last query, block by block over the keys.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions (``globals()``), read afresh on every change;
        ``tiled_attention``'s final output is compared where its check passes.
    block_size : int
        The first block size (1 to 4).
    block : int
        The first block shown (1-based).
    """

    name = "tiled_attention"

    def __init__(self, functions=None, block_size: int = 2, block: int = 1):
        self._source, self._cache = functions, {}
        self.example = e = get_example("song")
        self.Q, self.K, self.V = ref.project_qkv(e.X, e.W_q, e.W_k, e.W_v)
        self.query = e.T - 1
        self.scores = (self.Q @ self.K.T / np.sqrt(self.K.shape[-1]))[self.query]
        self.expected = ref.attention_head(self.Q, self.K, self.V)[0][self.query]
        self.scale = svg.step_scale([self.scores, self.V])  # one scale for every step
        self.size_w = widgets.SelectionSlider(
            options=[1, 2, 3, 4], value=block_size, description="block size"
        )
        self.block_w = widgets.IntSlider(
            value=block, min=1, max=self._n_blocks(block_size), description="block"
        )
        self.status_w = widgets.HTML()
        self.figure = widgets.HTML(layout=widgets.Layout(width=f"{svg.WIDTH}px"))
        self.size_w.observe(self._resize, names="value")
        self.block_w.observe(lambda _: self.update(), names="value")
        self.widget = widgets.VBox([self.size_w, self.block_w, self.status_w, self.figure])
        self.update()

    def _n_blocks(self, b: int) -> int:
        return -(-self.example.T // b)

    def _resize(self, _change) -> None:
        """A new block size: as many blocks on the slider, the same share of keys read."""
        n = self._n_blocks(self.size_w.value)
        with self.block_w.hold_trait_notifications():
            self.block_w.max = max(n, self.block_w.min)
            self.block_w.value = min(self.block_w.value, n)
        self.update()

    def learner_line(self) -> str:
        """The status's sentence on ``tiled_attention``: the learner's final row, or why not."""
        fn, status = learner_or_reference(self.name, self._source, self._cache)
        b, final = self.size_w.value, self.steps[-1].output
        try:
            with np.errstate(all="ignore"):
                row = np.asarray(fn(self.Q, self.K, self.V, b), dtype=float)[self.query]
        except Exception as exc:  # told to the learner
            return (
                f"<span style='color:#D55E00'>Your <code>{self.name}</code> passes its check "
                f"but raised {type(exc).__name__} here: {escape(str(exc))}</span>"
            )
        diff = float(np.abs(row - final).max())
        verdict = "equals" if np.allclose(row, final) else "<b>differs from</b>"
        if fn is getattr(ref, self.name):
            why = f"{status} " if "instead" in status else ""  # the check's sentence
            return (
                f"{why}The steps are computed here with the online softmax; the course's "
                f"<code>{self.name}</code> (block size {b}) {verdict} their final row "
                f"(max |difference| = {diff:.1e})."
            )
        return (
            f"The steps are computed here with the online softmax; <b>your</b> "
            f"<code>{self.name}</code> passes its check and, with block size {b}, its row "
            f"{self.query} {verdict} their final row (max |difference| = {diff:.1e})."
        )

    def update(self) -> None:
        """Redraw for the sliders' block size and block."""
        b = self.size_w.value
        self.steps = online_softmax(self.scores, self.V, b)
        k = min(self.block_w.value, len(self.steps)) - 1
        self.difference = float(np.abs(self.steps[-1].output - self.expected).max())
        self.figure.value = self.picture(k)
        self.status_w.value = self.learner_line()

    def picture(self, k: int) -> str:
        """The SVG picture after block ``k`` (0-based) of the current block size."""
        e, steps, b = self.example, self.steps, self.size_w.value
        step, T = steps[k], e.T
        last = k == len(steps) - 1
        q_token = e.tokens[self.query]
        body = [
            _text(
                20,
                24,
                f"Online softmax of the query “{q_token}”: block {k + 1} of {len(steps)} "
                f"(keys {_keys(step)}), block size {b}",
                14,
                font_weight="bold",
            )
        ]
        x0, top, s = 10.0 + svg.LABELS + 40.0, 70.0, CELL
        S = np.full((1, T), -np.inf)
        S[0, : step.end] = self.scores[: step.end]
        blocks = [
            (st.start, st.end, HEAD_COLOURS[j % 2] if j < k else "#000000", f"block {j + 1}")
            for j, st in enumerate(steps[: k + 1])
        ]
        panel = svg.Panel(
            S, "scores S = q·Kᵀ/√d_k", [q_token], e.tokens, "query", "key", blocks=blocks
        )
        body += svg.panel_svg(panel, x0, top + 22, s, self.scale)
        # the weights so far, exp(S_j - m)/ℓ, as bars under their keys
        by = top + 22 + s + 140.0
        body.append(_text(20, by - 80, "weights so far: exp(S_j − m)/ℓ", 12, font_weight="bold"))
        for j in range(T):
            cx = x0 + (j + 0.5) * s
            if j >= step.end:
                body.append(_text(cx, by, "not read", 10, fill="#999999", text_anchor="middle"))
                continue
            w = float(np.exp(self.scores[j] - step.m) / step.l)
            hgt = 60.0 * w
            body.append(
                f"<rect x='{cx - 14:.1f}' y='{by - 12 - hgt:.1f}' width='28' height='{hgt:.1f}' "
                f"fill='#0072B2'/>"
            )
            body.append(_text(cx, by, f"{w:.2f}", 11, text_anchor="middle"))
        body.append(
            f"<line x1='{x0}' x2='{x0 + T * s}' y1='{by - 12}' y2='{by - 12}' stroke='#555'/>"
        )
        # the running quantities, one line per block read
        tx, ty = x0 + T * s + 40.0, top + 10.0
        heads = ("block", "keys", "block max", "m", "rescale", "ℓ")
        cols = (0, 52, 110, 185, 245, 315)
        body.append(_text(tx, ty - 22, "after each block", 12, font_weight="bold"))
        for c, head in zip(cols, heads, strict=True):
            body.append(_text(tx + c, ty, head, 11, font_weight="bold"))
        for j, st in enumerate(steps):
            row_y = ty + 20 + 19 * j
            if j > k:
                body.append(_text(tx, row_y, f"{j + 1}   not read yet", 11, fill="#999999"))
                continue
            cells = (
                f"{j + 1}",
                _keys(st),
                f"{st.block_max:.2f}",
                f"{st.m:.2f}",
                f"×{st.rescale:.3f}" if j else "—",
                f"{st.l:.3f}",
            )
            weight = "bold" if j == k else "normal"
            grown = j and st.rescale < 1
            for c, cell, col in zip(cols, cells, range(6), strict=True):
                fill = "#D55E00" if grown and col in (3, 4) else "#000000"
                body.append(_text(tx + c, row_y, cell, 11, font_weight=weight, fill=fill))
        body.append(
            _text(
                tx,
                ty + 20 + 19 * len(steps) + 6,
                "orange: the maximum grew, ℓ and O were multiplied by exp(m_old − m)",
                10,
                fill="#D55E00",
            )
        )
        # the running output after each block, and attention_head's row
        oy = 330.0
        n = len(steps)
        out = np.full((n, self.V.shape[-1]), -np.inf)
        for j in range(k + 1):
            out[j] = steps[j].output
        cell = min(34.0, 200.0 / n)
        panel = svg.Panel(
            out,
            "running output O/ℓ after each block",
            [f"block {j + 1}" for j in range(n)],
            e.features,
            "after",
            "feature",
            highlight=k,
        )
        body += svg.panel_svg(panel, x0, oy, 34.0 if n <= 6 else cell, self.scale)
        ax = x0 + 4 * 34.0 + svg.LABELS + 70.0
        ref_panel = svg.Panel(
            self.expected[None, :],
            "attention_head, row “song”",
            ["softmax(S)·V"],
            e.features,
            "query",
            "feature",
        )
        body += svg.panel_svg(ref_panel, ax, oy, 34.0, self.scale)
        rx = ax + 4 * 34.0 + 30.0
        if last:
            diff = float(np.abs(step.output - self.expected).max())
            ok = np.allclose(step.output, self.expected)
            body += [
                _text(rx, oy + 14, "last block: O/ℓ is the output", 13),
                _text(
                    rx,
                    oy + 38,
                    f"{'equal' if ok else 'NOT equal'}: max |difference| = {diff:.1e}",
                    15,
                    font_weight="bold",
                    fill="#000000" if ok else "#D55E00",
                ),
            ]
        else:
            body += [
                _text(rx, oy + 14, f"{T - step.end} key(s) not read yet:", 13),
                _text(rx, oy + 32, "O/ℓ is the attention over the keys read so far,", 13),
                _text(rx, oy + 50, "not yet the output", 13),
            ]
        body += svg.colourbar(self.scale, "score / value", top + 22, 420.0)
        body += _not_yet_legend(svg.HEIGHT - 14, "not read yet: a block the loop has not reached")
        body.append(_text(420, svg.HEIGHT - 14, "black frame: the block just read", 12))
        return svg.picture(body, f"online softmax, block {k + 1} of {n}")

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, plus the current picture (SVG) for static viewers."""
        return bundle(self.widget, self.figure.value, **kwargs)
