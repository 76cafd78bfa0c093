"""A live companion of notebook 14: the online softmax of one query, block by block.

:class:`TiledWidget` walks over the keys of the song in blocks for the last
query ("song"), as ``tiled_attention`` does, with one slider for the block
reached and one for the block size (1 to 4; 4 does not divide T = 6, so its
last block is shorter). The picture shows the scores of the blocks read so
far (the others dotted grey: not read yet, never the hatching of a masked
cell), the weights they give so far, the running maximum
``m``, running sum ``ℓ`` and running output after each block, and at the
last block the final output next to ``attention_head``'s row, with the
largest difference.

The running quantities are computed here, step by step, with the course's
algorithm (:func:`online_softmax`): the learner's ``tiled_attention``
returns only its final output. Where its check passes
(:func:`mhsa_helpers.widgets.live.drawn_with`), the status line compares
that final output with the widget's last row and says "your
tiled_attention"; otherwise it names the course's function, and the notes
under the picture give the check's sentence. As in the explorer, a box
"draw my failing functions anyway" (shown while the check fails) compares
the learner's failing function all the same
(:class:`mhsa_helpers.widgets.anyway.Anyway`).
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..plot_style import HEAD_COLOURS
from . import svg
from .anyway import Anyway
from .kv_cache import _text, not_yet_legend
from .live import Frame, Framed, compact

__all__ = ["OnlineStep", "TiledWidget", "online_softmax"]

CELL = 46.0  # the scores' cells: wide enough for "−1.26"
OUT_CELL = 32.0  # the running outputs' cells
TOP = 70.0  # the top of the scores' cells


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


class TiledWidget(Anyway, Framed):
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

    Attributes
    ----------
    status_w, figure, notes_w : ipywidgets.HTML
        The status line (who computed the final row, the verdict), the
        picture and the notes under it (why the learner's function was
        replaced; what the steps are).
    widget : ipywidgets.VBox
        The whole widget, of one height whatever the sliders show.
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
        self._init_anyway()
        self.frame = Frame(
            [[compact(self.size_w, "300px", "70px"), compact(self.block_w, "300px")]],
            beside_status=[self.anyway_w],
        )
        self.size_w.observe(self._resize, names="value")
        self.block_w.observe(lambda _: self.update(), names="value")
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

    def learner_line(self) -> tuple[str, list[str]]:
        """``(status line, notes)`` on ``tiled_attention``: the learner's final row, or why not."""
        fn, line, notes = self.choose(self._source, self._cache)
        b, final = self.size_w.value, self.steps[-1].output
        try:
            with np.errstate(all="ignore"):
                out = np.asarray(fn(self.Q, self.K, self.V, b), dtype=float)
            if out.shape != self.Q.shape[:-1] + self.V.shape[-1:]:
                raise ValueError(
                    f"it returned shape {out.shape}, not {self.Q.shape[:-1] + self.V.shape[-1:]}"
                )
            row = out[self.query]
        except Exception as exc:  # told to the learner
            line, notes = self.fell_back(fn, exc, f"with block size {b}")
            return line.replace("Drawn with", "Compared with"), notes
        diff = float(np.abs(row - final).max())
        verdict = "equals" if np.allclose(row, final) else "<b>differs from</b>"
        if fn is getattr(ref, self.name):
            line = line.replace("Drawn with", "Compared with")
        elif self.drawing_failing(fn):
            line = line.replace("Drawn with", "Compared with")
        else:
            line = f"Compared with <b>your</b> <code>{self.name}</code> (its check passes)."
        what = "your" if fn is not getattr(ref, self.name) else "the course's"
        if self.drawing_failing(fn):
            what = "your failing"
        line = f"{line} Its row {self.query} {verdict} the online softmax's final row."
        if "instead of yours" in line:  # the course's against itself: the why only
            return line, notes
        return line, [
            *notes,
            f"The steps are the online softmax, computed here; {what} "
            f"<code>{self.name}</code> gives only its output: its row {self.query} "
            f"{verdict} their final row (max |difference| from the online softmax = {diff:.1e}; "
            "the picture compares the online softmax with attention_head).",
        ]

    def update(self) -> None:
        """Redraw for the sliders' block size and block."""
        b = self.size_w.value
        self.steps = online_softmax(self.scores, self.V, b)
        k = min(self.block_w.value, len(self.steps)) - 1
        self.difference = float(np.abs(self.steps[-1].output - self.expected).max())
        self.figure.value = self.picture(k)
        line, notes = self.learner_line()
        self.frame.status(line)
        self.frame.notes(notes)
        self.show_anyway()

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
                f"Online softmax of the query \u201c{q_token}\u201d: block {k + 1} of {len(steps)} "
                f"({'key' if step.end - step.start == 1 else 'keys'} {_keys(step)}), "
                f"block size {b}",
                14,
                font_weight="bold",
                **{"class": "mhsa-info"},  # the top line: a pointed cell's value takes its place
            )
        ]
        x0, top, s = 10.0 + svg.LABELS, TOP, CELL
        S = np.full((1, T), -np.inf)
        S[0, : step.end] = self.scores[: step.end]
        blocks = [
            (st.start, st.end, HEAD_COLOURS[j % 2] if j < k else "#000000", f"block {j + 1}")
            for j, st in enumerate(steps[: k + 1])
        ]
        panel = svg.Panel(
            S,
            "scores S = q·Kᵀ/√d_k",
            [q_token],
            e.tokens,
            "query",
            "key",
            blocks=blocks,
            pending="not read yet",
        )
        body += svg.panel_svg(panel, x0, top, s, self.scale)
        # the weights so far, exp(S_j - m)/ℓ, as bars under their keys
        by = top + s + 124.0
        body.append(_text(20, by - 68, "weights so far: exp(S_j − m)/ℓ", 12, font_weight="bold"))
        for j in range(T):
            cx = x0 + (j + 0.5) * s
            if j >= step.end:
                for dy, word in ((-14, "not"), (0, "read")):
                    body.append(_text(cx, by + dy, word, 11, fill="#8c8c8c", text_anchor="middle"))
                continue
            w = float(np.exp(self.scores[j] - step.m) / step.l)
            hgt = 44.0 * w
            body.append(
                f"<rect x='{cx - 14:.1f}' y='{by - 12 - hgt:.1f}' width='28' height='{hgt:.1f}' "
                f"fill='#0072B2'/>"
            )
            body.append(_text(cx, by, f"{w:.2f}", 11, text_anchor="middle"))
        body.append(
            f"<line x1='{x0}' x2='{x0 + T * s}' y1='{by - 12}' y2='{by - 12}' stroke='#555'/>"
        )
        # the running quantities, one line per block read
        tx, ty = x0 + T * s + 36.0, top + 2.0
        heads = ("block", "keys", "block max", "m", "rescale", "ℓ")
        cols = (0, 46, 96, 172, 224, 292)
        body.append(_text(tx, ty - 22, "after each block", 12, font_weight="bold"))
        for c, head in zip(cols, heads, strict=True):
            body.append(_text(tx + c, ty, head, 11, font_weight="bold"))
        for j, st in enumerate(steps):
            row_y = ty + 20 + 19 * j
            if j > k:
                body.append(_text(tx, row_y, f"{j + 1}   not read yet", 11, fill="#8c8c8c"))
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
        for i, note in enumerate(
            ("orange: the maximum grew, so ℓ and O", "were multiplied by exp(m_old − m)")
        ):
            body.append(_text(tx, ty + 26 + 19 * len(steps) + 16 * i, note, 11, fill="#D55E00"))
        # the running output after each block, and attention_head's row
        oy, c = 292.0, OUT_CELL
        n = len(steps)
        out = np.full((n, self.V.shape[-1]), -np.inf)
        for j in range(k + 1):
            out[j] = steps[j].output
        panel = svg.Panel(
            out,
            "running O/ℓ, block by block",
            [f"block {j + 1}" for j in range(n)],
            e.features,
            "after",
            "feature",
            highlight=k,
            pending="not read yet",
        )
        body += svg.panel_svg(panel, x0, oy, c, self.scale)
        ax = x0 + 4 * c + svg.LABELS + 40.0
        ref_panel = svg.Panel(
            self.expected[None, :],
            "attention_head, row “song”",
            ["softmax(S)·V"],
            e.features,
            "query",
            "feature",
        )
        body += svg.panel_svg(ref_panel, ax, oy, c, self.scale)
        rx = ax + 4 * c + 30.0
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
                _text(rx, oy + 32, "O/ℓ is the attention over the keys", 13),
                _text(rx, oy + 50, "read so far, not yet the output", 13),
            ]
        body += svg.colourbar(self.scale, "score / value", top, oy + 6 * c - top)
        body += not_yet_legend(ax - svg.LABELS, oy + 120, "not read yet: a block the loop")
        body.append(_text(ax - svg.LABELS + 20, oy + 136, "has not reached", 12))
        body += [
            f"<rect x='{ax - svg.LABELS}' y='{oy + 149}' width='14' height='14' fill='none' "
            "stroke='#000' stroke-width='3'/>",
            _text(ax - svg.LABELS + 20, oy + 160, "black frame: the block just read", 12),
        ]
        return svg.picture(body, f"online softmax, block {k + 1} of {n}")
