"""The explorer of multi-head self-attention: the kernel computes, the page draws.

:class:`Explorer` computes every intermediate matrix of the layer on a worked
example for one data state (example, heads, mask, padding length), with the
learner's own functions where their check passes, and sends them once with
the words of each step; ``front/explorer.js`` draws every step, query and
view from them in the page, without the kernel.

A function whose check fails, or that is not written yet, is replaced by the
reference and the words say which and why (with a box to draw the learner's
version anyway, in the step it belongs to).
"""

from __future__ import annotations

from html import escape

import numpy as np
import traitlets

from .. import reference as ref
from ..examples import EXAMPLES, get_example
from ..execution.child.contract import interrupts_said
from ..exercises import exercise, names
from ..learner import as_html, judge, warn
from .base import REFERENCE, REFERENCE_STATUS, PictureWidget, encode, esm
from .panels import NOT_WRITTEN, attempt, timed

__all__ = ["REFERENCE", "REFERENCE_STATUS", "STEP_OF", "USED", "Explorer"]

#: The course functions the explorer runs, and the step whose picture each first shapes.
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
USED = tuple(STEP_OF)
#: The mask an example is shown with when chosen: the one its trained heads learned with
#: (the reversal model with none, the induction model with the causal mask).
SUITED_MASK = {"trained": "none", "induction": "causal"}
#: What a cell of each matrix means, shown with its value when the learner points at it.
MEANING = {
    "X": "the token's input embedding, one feature",
    "W": "how much the input feature (row) adds to the output column",
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
#: The status line of steps 1–2: no function draws them.
NO_FUNCTION = "Drawn from the example's own numbers: the functions come in from step 3."


def _books(names) -> str:
    """The notebooks where the course's functions ``names`` are written: "notebooks 03 and 05"."""
    nbs = sorted({exercise(n).notebook[:2] for n in names})
    many = f"{', '.join(nbs[:-1])} and {nbs[-1]}" if len(nbs) > 1 else nbs[0]
    return f"notebook{'s' if len(nbs) > 1 else ''} {many}"


def default_heads(e) -> int:
    """The number of heads an example opens with: the second smallest choice."""
    return e.head_choices[min(1, len(e.head_choices) - 1)]


class Explorer(PictureWidget):
    """Step-by-step explorer of multi-head self-attention.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions by name (``globals()`` works, read afresh on every
        change of data state); only the course's exercises count, each only while its
        check passes. :data:`REFERENCE`: the course's, and the words say so.
    example : str
        One of ``mhsa_helpers.EXAMPLES``.
    layer : int
        The model's layer shown: 1 but for an example of several layers (``"induction"``:
        1 or 2).
    n_heads : int, optional
        Defaults to the second smallest divisor of d_model.
    mask : {"none", "causal", "padding"}, optional
        Defaults to the mask the example's heads learned with (:data:`SUITED_MASK`), else
        none.
    step : int
        1 to 9.
    query : int
        The query token's position.
    view : {"matrices", "query"}
    controls : tuple of str
        Which controls the page shows, among "example", "layer", "heads", "mask", "query",
        "view" and "step" ("layer" only while the example has several layers).
    saved : bool
        Whether ``functions`` come from the learner's saved notebooks (the capstone:
        :func:`mhsa_helpers.execution.saved.learner_functions`): the words then say so.

    Attributes
    ----------
    state : dict
        ``{example, layer, heads, mask, length}``: the data state; the page sets it, a
        change recomputes :attr:`data` and :attr:`texts`.
    data : dict
        The example's labels and every intermediate matrix (:meth:`compute`), encoded.
    texts : list of dict
        For each step 1–9: ``{status, notes, failing}``, HTML (the query view uses step 7's).
    """

    _esm = esm("explorer.js")
    state = traitlets.Dict().tag(sync=True)
    data = traitlets.Dict().tag(sync=True)
    texts = traitlets.List().tag(sync=True)
    step = traitlets.Int(1).tag(sync=True)
    query = traitlets.Int(0).tag(sync=True)
    view = traitlets.Unicode("matrices").tag(sync=True)
    anyway = traitlets.Bool(False).tag(sync=True)
    controls = traitlets.List().tag(sync=True)
    where = (
        "The explorer: run this cell to draw it (a notebook reopened keeps no kernel; "
        "the course's book shows it without one)."
    )

    def __init__(
        self,
        functions=None,
        example="song",
        n_heads=None,
        mask=None,
        step=1,
        query=0,
        view="matrices",
        controls=("example", "layer", "heads", "mask", "query", "view", "step"),
        saved=False,
        layer=1,
    ):
        self._source = functions if functions is not None else {}
        self._saved = saved
        self._checked = {}  # name -> (function, the check's sentence or None)
        self._slow = {}  # function -> how it ran past its time limit (it is not called again)
        self._reset_mask = None  # the mask the learner had, where an example reset it
        self._valid = {}  # the state last made valid (the page's set_state holds notifications:
        # self.state is the asked one already when the validator runs)
        self.notes = {}
        e = get_example(example, layer)
        super().__init__(step=step, query=query, view=view, controls=list(controls))
        self.observe(self._on_change, names=["state", "anyway"])
        self.state = {
            "example": example,
            "layer": layer,
            "heads": n_heads or default_heads(e),
            "mask": mask or SUITED_MASK.get(example, "none"),
            "length": max(1, e.T - 2),
        }

    # ------------------------------------------------------------------ state
    @property
    def example(self):
        return get_example(self.state["example"], self.state["layer"])

    @property
    def functions(self) -> dict:
        """The learner's course functions among ``functions``, as they are now."""
        exercises = names()
        return {n: f for n, f in dict(self._source).items() if n in exercises and callable(f)}

    def change_state(self, **changes) -> None:
        """Change the data state (``example``, ``layer``, ``heads``, ``mask``, ``length``) as the
        page does."""
        self.state = {**self.state, **changes}

    @traitlets.validate("state")
    def _suited(self, proposal) -> dict:
        """The state asked for, made valid for its example before anything sees it."""
        old, new = self._valid, dict(proposal["value"])
        e = get_example(new["example"])
        if new.get("layer") not in e.layer_choices:
            new["layer"] = e.layer_choices[0]  # a new example of one layer: its own
        if new["example"] != old.get("example"):
            if new.get("heads") not in e.head_choices:
                new["heads"] = default_heads(e)
            new["length"] = min(new.get("length", e.T), e.T)
            suited = SUITED_MASK.get(new["example"])
            self._reset_mask = None  # said of the example that set it aside only
            if old and suited is not None and new["mask"] != suited:
                self._reset_mask, new["mask"] = new["mask"], suited  # said until changed
            if old:
                self.query = 0
        elif new["mask"] != old.get("mask"):
            self._reset_mask = None  # the learner's own choice now
        self._valid = new
        return new

    def _on_change(self, _change) -> None:
        self.update()

    def _call(self, name, *args):
        """The learner's function where its check passes (or when asked), else the reference;
        ``self.notes[name]``: how it was judged (:func:`~mhsa_helpers.learner.judge`) or why
        it was replaced."""
        # a learner's ±∞ upstream (drawn anyway): no warning (timed silences them)
        expected, reference_s = timed(lambda f: f(*args), getattr(ref, name))
        fn = self.functions.get(name)
        if fn is None:
            return expected
        kind, failed = judge(name, fn, self._checked, self.anyway)
        if kind in ("unwritten", "failing"):
            self.notes[name] = (kind, failed)
            return expected
        then = self._loop_again(name)
        got, why = attempt(lambda f: f(*args), fn, expected, name, reference_s, self._slow, then)
        if why is not None:
            self.notes[name] = why
            return expected
        self.notes.setdefault(name, (kind, failed))
        return got

    def compute(self) -> dict:
        """Every intermediate matrix of the current data state, by name."""
        e, st = self.example, self.state
        h = st["heads"]
        self.notes = {}
        Q, K, V = self._call("project_qkv", e.X, e.W_q, e.W_k, e.W_v)  # (T, d_model) each
        Qh, Kh, Vh = (self._call("split_heads", M, h) for M in (Q, K, V))  # (h, T, d_k)
        Z = self._call("attention_scores", Qh, Kh)  # (h, T, T)
        if st["mask"] == "causal":
            M = self._call("causal_mask", e.T)
        elif st["mask"] == "padding":
            M = self._call("padding_mask", st["length"], e.T) + np.zeros((e.T, e.T))
        else:
            M = np.zeros((e.T, e.T))
        with np.errstate(all="ignore"):
            ZM = Z + M  # (h, T, T)
        A = self._call("softmax", ZM)  # (h, T, T)
        heads, _ = self._call("attention_head", Qh, Kh, Vh, M)  # (h, T, d_k)
        concat = self._call("merge_heads", heads)  # (T, d_model)
        out = concat @ e.W_o  # (T, d_model)
        return dict(
            X=e.X, W_Q=e.W_q, W_K=e.W_k, W_V=e.W_v, W_O=e.W_o, Q=Q, K=K, V=V, Qh=Qh, Kh=Kh,
            Vh=Vh, Z=Z, M=M, ZM=ZM, A=A, heads=heads, concat=concat, out=out,
        )  # fmt: skip

    # ------------------------------------------------------------------ words
    def words(self, shown: int) -> dict:
        """The status line and notes of the picture of step ``shown``: only the functions it
        uses (of the steps it shows, the mask chosen), why a learner's was not used first."""
        mask_fn = f"{self.state['mask']}_mask"
        drawn = [
            n for n in USED if STEP_OF[n] <= shown and (not n.endswith("_mask") or n == mask_fn)
        ]
        notes = {n: v for n, v in self.notes.items() if n in drawn}
        kind = {n: notes.get(n, ("absent",))[0] for n in drawn}

        def named(which):
            return [n for n in drawn if kind[n] in which]

        def code(which):
            return ", ".join(f"<code>{n}</code>" for n in named(which))

        parts = []
        if code({"used"}):
            parts.append(f"<b>your</b> {code({'used'})} (checks pass)")
        if code({"drawn failing"}):
            parts.append(warn(f"your failing {code({'drawn failing'})}, as asked"))
        if bad := code({"failing", "raised", "shape", "slow"}):
            parts.append(warn(f"the course's {bad} instead of yours"))
        if code({"unwritten", "absent"}):
            parts.append(
                f"the course's {'other ' if parts else ''}functions (below: which, and why)"
            )
        line = "Drawn with " + " · ".join(parts) + "." if parts else NO_FUNCTION
        lines = []
        for n in drawn:
            k, text = notes.get(n, (None, None))
            yours, fix = self._yours(n), self._again("Fix", [n])
            if k == "failing":
                why = as_html(text).rstrip(".")
                lines.append(warn(f"Why not {yours}: its check fails: {why}.{fix}"))
            elif k in ("raised", "shape"):
                said = f"{'raised ' if k == 'raised' else ''}{escape(text)}"
                lines.append(warn(f"Why not {yours}: it {said}.{fix}"))
            elif k == "slow":  # text: the RanLong of its first call here
                lines.append(warn(f"Why not {yours}: {text.said('it', self._loop_again(n))}"))
            elif k == "drawn failing":
                lines.append(warn(f"Drawn with {yours}, failing; its check: {as_html(text)}"))
        for which in ("unwritten", "absent"):
            if not (these := named({which})):
                continue
            one, books = len(these) == 1, _books(these)
            said = f"Drawn with the course's {code({which})}: "
            if which == "unwritten" or self._saved:
                said += f"yours {'is' if one else 'are'} "
            if which == "unwritten":
                stub = f" in {books} as saved (a stub there; written but not saved yet?)"
                lines.append(
                    f"{said}{NOT_WRITTEN}{stub if self._saved else ''}."
                    f"{self._again('Write', these)}"
                )
            elif self._saved:
                lines.append(
                    f"{said}not in your saved {books} (not written, not saved, or a cell there "
                    f"raises: the progress report says which). Save {'it' if one else 'them'}, "
                    "then run this cell again."
                )
            else:
                lines.append(
                    f"{said}the exercise{'' if one else 's'} of {books}; the capstone "
                    "(notebook 10) draws with yours."
                )
        if self._source is REFERENCE:
            line, lines = REFERENCE_STATUS, []
        e, st = self.example, self.state
        suited = SUITED_MASK.get(e.name, "none")
        with_it = "no mask" if suited == "none" else f"the {suited} mask"
        if self._reset_mask is not None:
            lines.append(
                f"Mask set to {suited} (it was {self._reset_mask}): the trained heads learned "
                f"with {with_it}. Choose a mask above to see what it blocks."
            )
        if e.head_notes and st["heads"] == e.n_heads:
            by = f" by layer {e.layer} of {e.n_layers}" if e.n_layers > 1 else ""
            learned = f"Learned{by}: " + "; ".join(e.head_notes) + "."
            if st["mask"] != suited and suited == "none":
                learned += (
                    f" The {st['mask']} mask drawn here was not there in training: "
                    "it blocks keys the heads learned to read."
                )
            elif st["mask"] != suited:
                drawn = "no mask" if st["mask"] == "none" else f"the {st['mask']} mask"
                learned += f" Drawn here with {drawn}: the heads learned with {with_it}."
            lines.append(learned)
        failing = any(k in ("failing", "drawn failing") for k in kind.values())
        return {"status": line, "notes": lines, "failing": failing}

    def _yours(self, name: str) -> str:
        """The learner's function by name, and where it was read from when saved."""
        where = f" (the copy saved in {_books([name])})" if self._saved else ""
        return f"your <code>{name}</code>{where}"

    def _loop_again(self, name: str) -> str:
        """What to do with the learner's ``name`` that runs without end."""
        if self._saved:
            where = _books([name])
            return f"Check the loop's condition in {where}, save it, then run this cell again."
        return "Check the loop's condition, run its cell, then this one."

    def _again(self, verb: str, which: list) -> str:
        """What to do to have ``which`` drawn: the explorer's cell reads them when it runs."""
        it = "it" if len(which) == 1 else "them"
        if self._saved:
            return f" {verb} {it}, save {it}, then run this cell again."
        return f" {verb} {it}, run {'its cell' if it == 'it' else 'their cells'}, then this one."

    # ------------------------------------------------------------------ sending
    def update(self) -> None:
        """Compute the data state and its words, and send them to the page."""
        e, st = self.example, self.state
        with interrupts_said("The explorer was interrupted: run this cell again."):
            arrays = self.compute()
            texts = [self.words(shown) for shown in range(1, 10)]
        with self.hold_sync():  # one message: the page draws the new state once
            self._publish(e, st, arrays, texts)

    def _publish(self, e, st, arrays, texts) -> None:
        self.data = {
            "example": e.name,
            "state": dict(st),  # what these arrays are of (the page's title and buttons)
            "title": e.title,
            "tokens": list(e.tokens),
            "features": list(e.features),
            "h": st["heads"],
            "head_choices": list(e.head_choices),
            "layer_choices": e.layer_choices,
            "examples": [[get_example(n).title, n] for n in EXAMPLES],
            "meaning": MEANING,
            "arrays": {k: encode(v) for k, v in arrays.items()},
        }
        self.texts = texts
