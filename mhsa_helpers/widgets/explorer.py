"""Interactive explorer of multi-head self-attention (ipywidgets 8, SVG pictures).

:class:`Explorer` walks through the nine steps on a worked example, with
controls for the example, the number of heads (only divisors of d_model),
the mask (none / causal / padding with a length slider), the query token,
the view (every step's matrices, or one query against every key) and
Prev/Next through the steps.

It runs the learner's own functions (``functions=globals()``) where their
check passes; a function whose check fails, or that is not written yet, is
replaced by the reference and the status line says which and why (with a box
to draw the learner's version anyway). The status line also names every
learner function the picture was drawn with.

Pictures are SVG (:mod:`mhsa_helpers.widgets.svg`): crisp at any pixel ratio,
as tall as the step's panels need within the room the status and notes leave
on a laptop's screen, one colour scale per step with its colour bar, special
values (−∞, NaN, +∞) drawn apart and named, a tooltip beside the cell pointed
at. See ``benchmarks/bench_browser.py``.
"""

from __future__ import annotations

from html import escape

import ipywidgets as widgets
import numpy as np

from .. import reference as ref
from ..examples import EXAMPLES, get_example
from ..exercises import exercise, names
from ..learner import as_html, check_sentence, warn
from . import svg
from .anyway import anyway_box, same_structure
from .explorer_steps import MEANING, STEPS, head_blocks, step_panels
from .live import REFERENCE, REFERENCE_STATUS, Frame, Framed, compact
from .svg_query import query_view

__all__ = ["USED", "Explorer"]

MASKS = ("none", "causal", "padding")
MASK_TIPS = [
    "no mask: every query reads every key",
    "causal: a query reads only itself and the keys before it",
    "padding: keys past the sentence's length are blocked",
]
VIEWS = ("matrices", "query")
#: The mask an example is shown with when chosen: the trained heads learned with none.
SUITED_MASK = {"trained": "none"}


#: The course functions the explorer runs, in the order it runs them.
USED = (
    "project_qkv",
    "split_heads",
    "attention_scores",
    "causal_mask",
    "padding_mask",
    "softmax",
    "attention_head",
    "merge_heads",
)

#: The step whose picture each function first shapes (the status names only those shown).
STEP_OF = {
    "project_qkv": 3,
    "split_heads": 4,
    "attention_scores": 5,
    "causal_mask": 6,
    "padding_mask": 6,
    "softmax": 7,
    "attention_head": 8,
    "merge_heads": 9,
}


class Explorer(Framed):
    """Step-by-step explorer of multi-head self-attention.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions by name (``globals()`` works, and is read
        afresh on every change, so a redefined function is used at once);
        only the course's exercises count. A function is used only while its
        check passes; otherwise the reference is, and the status says why.
        :data:`~mhsa_helpers.widgets.live.REFERENCE`: the course's functions,
        and the status says so (a static page, no learner's code).
    example : str
        One of ``mhsa_helpers.EXAMPLES``.
    n_heads : int, optional
        Defaults to the second smallest divisor of d_model.
    mask : {"none", "causal", "padding"}
    step : int
        1 to 9.
    query : int
        The query token's position.
    view : {"matrices", "query"}
        Every matrix of the step, or the query's scores and weights per head.
    controls : tuple of str, optional
        Which controls to show, among "example", "heads", "mask", "query",
        "view" and "step"; all by default.
    saved : bool
        Whether ``functions`` come from the learner's saved notebooks
        (:func:`mhsa_helpers.execution.saved.learner_functions`, the capstone) rather
        than from the notebook it runs in: the notes then say why a function
        is missing in those words.
    """

    def __init__(
        self,
        functions=None,
        example="song",
        n_heads=None,
        mask="none",
        step=1,
        query=0,
        view="matrices",
        controls=("example", "heads", "mask", "query", "view", "step"),
        saved=False,
    ):
        self._source = functions if functions is not None else {}
        self._saved = saved
        self._reset_mask = None  # the mask the learner had, where an example reset it
        self._checked = {}  # name -> (function, the check's sentence or None)
        self._built = None  # (state, panels): what update() built for render() to draw
        self.notes = {}
        e = get_example(example)
        self.example_w = compact(
            widgets.Dropdown(
                options=[(get_example(n).title, n) for n in EXAMPLES],
                value=example,
                description="example",
            ),
            "330px",
            "58px",
        )
        self.heads_w = compact(
            widgets.ToggleButtons(
                options=e.head_choices,
                description="heads",
                value=n_heads or e.head_choices[min(1, len(e.head_choices) - 1)],
            ),
            "206px",  # room for four choices, whatever the example allows
            "44px",
            button=34,
        )
        self.mask_w = compact(
            widgets.ToggleButtons(
                options=MASKS, value=mask, description="mask", tooltips=MASK_TIPS
            ),
            None,
            "38px",
            button=66,
        )
        self.length_w = compact(
            widgets.IntSlider(
                value=max(1, e.T - 2), min=1, max=e.T, description="length", readout=True
            ),
            "190px",
            "46px",
        )
        self.query_w = compact(
            widgets.Dropdown(options=self._token_options(e), value=query, description="query"),
            "176px",
            "58px",
        )
        self.view_w = compact(
            widgets.ToggleButtons(options=VIEWS, value=view, description="view"),
            None,
            "36px",
            button=72,
        )
        self.prev_w = compact(widgets.Button(description="\u25c0 Prev"), "76px")
        self.next_w = compact(widgets.Button(description="Next \u25b6"), "76px")
        self.step_w = compact(
            widgets.IntSlider(value=step, min=1, max=len(STEPS), description="step"),
            "196px",
            "40px",
        )
        self.anyway_w = anyway_box()
        for w in (
            self.heads_w,
            self.mask_w,
            self.length_w,
            self.query_w,
            self.view_w,
            self.step_w,
            self.anyway_w,
        ):
            w.observe(self._on_change, names="value")
        self.example_w.observe(self._on_example, names="value")
        self.prev_w.on_click(lambda _: self._move(-1))
        self.next_w.on_click(lambda _: self._move(+1))
        first = {"example": [self.example_w], "heads": [self.heads_w], "mask": [self.mask_w]}
        second = {"query": [self.query_w], "view": [self.view_w]}
        second["step"] = [self.prev_w, self.next_w, self.step_w]
        second["mask"] = [self.length_w]  # the padding length: room for its slider here
        rows = [
            [w for c in first if c in controls for w in first[c]],
            [w for c in second if c in controls for w in second[c]],
        ]
        self.frame = Frame(  # its pictures change with the step: only the lines it has
            [r for r in rows if r], title=True, beside_status=[self.anyway_w], reserve=(1, 0)
        )
        self._busy = False
        self.update()

    # ------------------------------------------------------------------ state
    @property
    def example(self):
        return get_example(self.example_w.value)

    @property
    def functions(self) -> dict:
        """The learner's course functions among ``functions``, as they are now."""
        exercises = names()
        return {n: f for n, f in dict(self._source).items() if n in exercises and callable(f)}

    @staticmethod
    def _token_options(e):
        seen = {}
        options = []
        for i, t in enumerate(e.tokens):
            seen[t] = seen.get(t, 0) + 1
            options.append((t if seen[t] == 1 else f"{t} ({i + 1})", i))
        return options

    def check_of(self, name: str, fn) -> str | None:
        """The check's sentence on the learner's ``fn`` (None: it passes), once per ``fn``."""
        return check_sentence(name, fn, self._checked)

    def _call(self, name, *args):
        """The learner's function where its check passes (or when asked), else the reference."""
        expected = getattr(ref, name)(*args)
        fn = self.functions.get(name)
        if fn is None:
            return expected
        failed = self.check_of(name, fn)
        if failed is not None and "not implemented yet" in failed:
            self.notes[name] = ("unwritten", failed)
            return expected
        if failed is not None and not self.anyway_w.value:
            self.notes[name] = ("failing", failed)
            return expected
        try:
            with np.errstate(all="ignore"):
                got = fn(*args)
        except Exception as exc:  # told to the learner, then the reference is drawn
            self.notes[name] = ("raised", f"{type(exc).__name__}: {exc}")
            return expected
        if not same_structure(got, expected):
            self.notes[name] = ("shape", "returned a different shape here than the reference")
            return expected
        self.notes.setdefault(name, ("drawn failing" if failed else "used", failed))
        if isinstance(expected, tuple):
            return tuple(np.asarray(g, dtype=float) for g in got)
        return np.asarray(got, dtype=float)

    def compute(self) -> dict:
        """Every intermediate matrix of the current state."""
        e = self.example
        h = self.heads_w.value
        self.notes = {}
        Q, K, V = self._call("project_qkv", e.X, e.W_q, e.W_k, e.W_v)
        Qh, Kh, Vh = (self._call("split_heads", M, h) for M in (Q, K, V))
        Z = self._call("attention_scores", Qh, Kh)
        if self.mask_w.value == "causal":
            M = self._call("causal_mask", e.T)
        elif self.mask_w.value == "padding":
            M = self._call("padding_mask", self.length_w.value, e.T) + np.zeros((e.T, e.T))
        else:
            M = np.zeros((e.T, e.T))
        with np.errstate(all="ignore"):
            ZM = Z + M
        A = self._call("softmax", ZM)  # step 7
        heads, _ = self._call("attention_head", Qh, Kh, Vh, M)  # step 8
        concat = self._call("merge_heads", heads)
        out = concat @ e.W_o
        return dict(X=e.X, Q=Q, K=K, V=V, Z=Z, M=M, ZM=ZM, A=A, heads=heads, concat=concat, out=out)

    # ------------------------------------------------------------------ drawing
    def panels(self, s: dict) -> tuple[list, tuple | None, str]:
        """The current step's panels, its fixed colour range (or None) and colour-bar label."""
        h, step, q = self.heads_w.value, self.step_w.value, self.query_w.value
        return step_panels(self.example, s, h, step, q)

    def _drawn_matrices(self, s: dict) -> list:
        """The matrices the picture shows (for the notes on NaN and +∞)."""
        q = self.query_w.value
        if self.view_w.value == "query":
            self._titles = None
            return [s["ZM"][:, q], s["A"][:, q]]
        self._built = (s, self.panels(s))  # drawn next by render(), built once
        panels = self._built[1][0]
        self._titles = [p.title for p in panels]
        return [p.M for p in panels]

    def render(self, s: dict | None = None, max_height: float = svg.HEIGHT) -> str:
        """The current picture as SVG text, at most ``max_height`` px tall (recomputed if
        ``s`` is None)."""
        s = self.compute() if s is None else s
        e, q = self.example, self.query_w.value
        h = self.heads_w.value
        label = f"{e.title}, step {self.step_w.value}, {h} heads, mask {self.mask_w.value}"
        if self.view_w.value == "query":
            qkv = [
                svg.Panel(
                    s[n],
                    n,
                    e.tokens,
                    e.features,
                    "token",
                    "column",
                    highlight=q,
                    blocks=head_blocks(h, e.d_model // h),
                    meaning=MEANING[n],
                    links=("q" if n == "Q" else "k", None),
                )
                for n in "QKV"
            ]
            return query_view(e.tokens, q, qkv, s["ZM"][:, q], s["A"][:, q], label, max_height)
        built = self._built
        panels, fixed, bar = built[1] if built and built[0] is s else self.panels(s)
        self._built = None
        scale = svg.step_scale([p.M for p in panels], fixed)
        return svg.grid(panels, scale, bar, label, max_height=max_height)

    def _special_note(self) -> str:
        """Words for NaN and +∞ in the picture (a learner's bug, never the reference's)."""
        notes = []
        titles = self._titles
        for k, M in enumerate(self._drawn):
            M = np.asarray(M, float)
            where = titles[k] if titles else ("the query's scores", "the query's weights")[k]
            for kind, mask in (("NaN", np.isnan(M)), ("+∞", np.isposinf(M))):
                if mask.any():
                    colour = "magenta" if kind == "NaN" else "black"
                    notes.append(f"{where}: {int(mask.sum())} {kind} (drawn {colour})")
        return "; ".join(notes)

    def _status_notes(self) -> tuple[str, list[str]]:
        """The status line and the notes: only the functions of the steps the picture shows.

        The line says what the picture was drawn with: the learner's functions
        by name, the course's in a word. The notes put first why a learner's
        function was not used (or was drawn although its check fails), then what
        special values mean, which functions come from elsewhere and why, the
        functions not written yet (summed up in one line) and, for trained heads,
        what each head learned.
        """
        shown = 7 if self.view_w.value == "query" else self.step_w.value
        drawn = [n for n in USED if STEP_OF[n] <= shown]
        notes = {n: v for n, v in self.notes.items() if n in drawn}
        mine = self.functions
        # "absent": the learner has none; "idle": theirs, not needed here (a mask not chosen)
        kind = {n: notes[n][0] if n in notes else "idle" if n in mine else "absent" for n in drawn}

        def code(which):
            return ", ".join(f"<code>{n}</code>" for n in drawn if kind[n] in which)

        parts = []
        if code({"used"}):
            parts.append(f"<b>your</b> {code({'used'})} (checks pass)")
        if code({"drawn failing"}):
            parts.append(warn(f"your failing {code({'drawn failing'})}, as asked"))
        if code({"failing", "raised", "shape"}):
            bad = code({"failing", "raised", "shape"})
            parts.append(warn(f"the course's {bad} instead of yours (why: below)"))
        if code({"unwritten", "absent"}):
            other = "other functions" if parts else "functions"
            parts.append(f"the course's {other} (below: which, and why)")
        line = "Drawn with " + " · ".join(parts) + "."
        if self._source is REFERENCE:  # no learner's functions to speak of
            line, kind = REFERENCE_STATUS, {n: "reference" for n in drawn}
        lines = []
        for n in drawn:  # the reasons first
            k, text = notes.get(n, (None, None))
            if k == "failing":
                lines.append(
                    warn(f"Why not your <code>{n}</code>: its check fails: {as_html(text)}")
                )
            elif k in ("raised", "shape"):
                said = f"{'raised ' if k == 'raised' else ''}{escape(text)}"
                lines.append(warn(f"Why not your <code>{n}</code>: it {said}."))
        for n in drawn:
            k, text = notes.get(n, (None, None))
            if k == "drawn failing":
                lines.append(
                    warn(f"Drawn with your failing <code>{n}</code>; its check: {as_html(text)}")
                )
        special = self._special_note()
        if special:
            lines.append(
                f"<span class='mhsa-special' style='color:#b000b0'>\u26a0 {special}.</span>"
            )
        if code({"unwritten"}):  # this notebook's exercises before other notebooks' functions
            lines.append(
                f"Not written yet, so drawn with the course's: {code({'unwritten'})}; yours "
                "is drawn once its check passes (run its cell, then change a control here)."
            )
        others = [] if self._saved else [n for n in self.functions if n not in USED]
        if others:  # a whole layer (09) or a function of another step: why it is not drawn
            lines.append(
                "Your "
                + ", ".join(f"<code>{n}</code>" for n in others)
                + " is checked by its test cell; the explorer draws the layer step by step, "
                "with the functions of notebooks 03–08."
            )
        if code({"absent"}):
            where = sorted({exercise(n).notebook[:2] for n in drawn if kind[n] == "absent"})
            span = where[0] if len(where) == 1 else f"{where[0]}–{where[-1]}"
            books = "notebooks" if len(where) > 1 else "notebook"
            lines.append(
                f"The course's {code({'absent'})}: yours are not in your saved {books} {span} "
                "(not written, not saved, or a cell there raises: the progress report says "
                "which); save them and run this cell again."
                if self._saved
                else f"The course's {code({'absent'})}: yours are written in {books} {span}, "
                "not here; the capstone's explorer (notebook 10) draws with them."
            )
        e = self.example
        if self._reset_mask is not None:
            lines.append(
                f"Mask set to none (it was {self._reset_mask}): the trained heads learned "
                "with no mask. Choose a mask above to see what it blocks."
            )
        if e.head_notes and self.heads_w.value == e.n_heads:  # trained heads: what each learned
            learned = "Learned: " + "; ".join(e.head_notes) + "."
            if self.mask_w.value != "none":
                learned += (
                    f" The {self.mask_w.value} mask drawn here was not there in training: "
                    "it blocks keys the heads learned to read."
                )
            lines.append(learned)
        return line, lines

    def update(self):
        """Bring the title, status line, picture and notes up to date with the controls."""
        if self._busy:
            return
        e = self.example
        h = self.heads_w.value
        padding = self.mask_w.value == "padding"  # the length slider only with its mask
        self.length_w.disabled = not padding
        self.length_w.layout.visibility = "visible" if padding else "hidden"
        query_view = self.view_w.value == "query"  # one picture whatever the step
        self.prev_w.disabled = query_view or self.step_w.value == 1
        self.next_w.disabled = query_view or self.step_w.value == len(STEPS)
        self.step_w.disabled = query_view
        state = self.compute()
        self._drawn = self._drawn_matrices(state)
        line, notes = self._status_notes()
        full = line + " " + " ".join(notes)
        self.frame.show(line, notes, lambda height: self.render(state, height), full)
        if self.view_w.value == "query":  # the same whatever the step
            title = "<b>The query's view</b> (steps 3–7)"
        else:
            title = f"<b>Step {STEPS[self.step_w.value - 1]}</b>"
        mask = self.mask_w.value
        if mask == "padding":
            mask += f" (length {self.length_w.value} of {e.T})"
        self.title_w.value = (
            f"<div class='mhsa-title'>{title} · <b>h = {h}</b> head{'s' if h > 1 else ''} of "
            f"d_k = {e.d_model // h} · mask: {mask} · query: "
            f"'{e.tokens[self.query_w.value]}'</div>"
        )
        failing = any(k in ("failing", "drawn failing") for k, _ in self.notes.values())
        self.anyway_w.layout.display = "" if failing or self.anyway_w.value else "none"

    # ------------------------------------------------------------------ events
    def _on_change(self, change):
        if change["owner"] is self.mask_w and not self._busy:
            self._reset_mask = None  # the learner's own choice now
        self.update()

    def _on_example(self, change):
        e = get_example(change["new"])
        self._busy = True
        try:
            h = self.heads_w.value
            self.heads_w.options = e.head_choices
            self.heads_w.value = (
                h if h in e.head_choices else e.head_choices[min(1, len(e.head_choices) - 1)]
            )
            self.query_w.options = self._token_options(e)
            self.query_w.value = 0
            self.length_w.max = e.T
            self.length_w.value = min(self.length_w.value, e.T)
            suited = SUITED_MASK.get(change["new"])
            if suited is not None and self.mask_w.value != suited:  # the example's own mask
                self._reset_mask = self.mask_w.value  # said in the notes until changed
                self.mask_w.value = suited
        finally:
            self._busy = False
        self.update()

    def _move(self, delta):
        self.step_w.value = int(np.clip(self.step_w.value + delta, 1, len(STEPS)))

    # ------------------------------------------------------------------ display
    def static(self):
        """The current picture, for readers without a live kernel."""
        from IPython.display import SVG

        return SVG(self.figure.value)
