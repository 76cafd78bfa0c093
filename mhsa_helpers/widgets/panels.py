"""The extensions' widgets: every state of their controls computed at once, drawn in the page.

A :class:`PanelsWidget` names its controls (:meth:`~PanelsWidget.control_specs`) and
computes the picture and words of one state (:meth:`~PanelsWidget.compute_state`); it sends
every state once (they are small: a few panels of T × T), and ``front/panels.js``
shows the one the controls choose, without the kernel.

The learner's function is drawn only while its check passes, or when the box "draw
my failing functions anyway" is ticked (never a stub); a function that raises or
returns other shapes is replaced by the course's, and the notes say why.
"""

from __future__ import annotations

import itertools
import time
from html import escape

import numpy as np
import traitlets

from .. import reference as ref
from ..budget import RanLong, limited, ran_long
from ..execution.child.contract import interrupts_said
from ..learner import as_html, judge, warn
from ..plot_style import HEAD_COLOURS
from .base import REFERENCE, REFERENCE_STATUS, PictureWidget, encode, esm

__all__ = [
    "LOOP_HERE",
    "NOT_WRITTEN",
    "Panel",
    "PanelsWidget",
    "attempt",
    "head_runs",
    "same_structure",
    "slider",
    "timed",
]

NOT_WRITTEN = "not written yet"
#: Why a learner's function drawn is replaced where it returns other shapes.
SHAPE = "returned a different shape than the reference"


def Panel(M, title, rows, cols, kinds=("row", "column"), *, blocked=None, links=None, **kw):
    """One matrix of a picture, as the page draws it (``front/draw.js`` ``panel``).

    ``kinds`` name what rows and columns are ("query", "key", "token" link the cells of
    several panels); ``blocked``: booleans of M's shape, hatched like a mask's −∞;
    other keywords: ``colour`` (a frame), ``highlight`` (a row), ``blocks`` (head runs
    ``[first, end, colour, label]``), ``neutral`` (a mask: white and hatched),
    ``pending`` (what −∞ means when not blocked: dotted grey), ``meaning``.
    """
    link = {"query": "q", "key": "k", "token": "t"}
    return {
        "M": encode(M),
        "title": title,
        "rows": [str(r) for r in rows],
        "cols": [str(c) for c in cols],
        "kinds": list(kinds),
        "blocked": None if blocked is None else np.asarray(blocked, bool).tolist(),
        "links": list(links) if links is not None else [link.get(k) for k in kinds],
        **kw,
    }


def slider(name: str, label: str, values, buttons=()) -> dict:
    """A control choosing among ``values`` (``[label, value]`` pairs, or values)."""
    options = [list(v) if isinstance(v, tuple | list) else [str(v), v] for v in values]
    return {
        "name": name,
        "label": label,
        "kind": "slider",
        "options": options,
        "buttons": list(buttons),
    }


def head_runs(h: int, width: int = 1) -> list:
    """Head-coloured runs of columns ``[first, end, colour, label]``: ``width`` columns a head."""
    return [[i * width, (i + 1) * width, HEAD_COLOURS[i % len(HEAD_COLOURS)], f"head {i + 1}"]
            for i in range(h)]  # fmt: skip


def same_structure(got, expected) -> bool:
    """Whether ``got`` has the reference's structure: same tuple length, same array shapes."""
    if isinstance(expected, tuple):
        return (
            isinstance(got, tuple | list)
            and len(got) == len(expected)
            and all(same_structure(g, e) for g, e in zip(got, expected, strict=True))
        )
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return False
    return got.shape == np.shape(expected)


def _floats(result):
    if isinstance(result, tuple | list):
        return tuple(np.asarray(r, dtype=float) for r in result)
    return np.asarray(result, dtype=float)


#: What to do with a function of this notebook that runs without end (its cell is above).
LOOP_HERE = "Check the loop's condition, run its cell, then run this cell again."


def timed(run, fn) -> tuple:
    """``(run(fn), seconds it took)``: the reference's call, timed to scale the learner's limit."""
    start = time.perf_counter()
    with np.errstate(all="ignore"):
        value = run(fn)
    return value, time.perf_counter() - start


def attempt(
    run,
    fn,
    expected,
    name: str = "",
    reference_s: float | None = None,
    slow=None,
    then: str = LOOP_HERE,
) -> tuple:
    """``(result as floats, None)`` where ``run(fn)`` gives the reference's structure, else
    ``(None, (kind, what))``: ``("raised", "TypeError: ...")``, ``("shape", SHAPE)`` or
    ``("slow", RanLong)`` (it ran past its time limit, scaled by the reference's
    ``reference_s``: :func:`~mhsa_helpers.budget.limited`; the learner's interrupt is one
    line naming ``name``, then saying ``then``). ``slow`` (a dict), if given, keeps each
    function that ran long: it is not called again, so a widget drawing many states waits
    for it once."""
    if slow is not None and fn in slow:
        return None, ("slow", slow[fn])

    def interrupted(seconds: float) -> str:
        return ran_long(f"Your {name}", seconds, then, " here", reference_s, True)

    try:
        with np.errstate(all="ignore"):
            got = limited(lambda: run(fn), reference_s, interrupted)
    except RanLong as exc:
        if slow is not None:
            slow[fn] = exc
        return None, ("slow", exc)
    except Exception as exc:  # told to the learner, then the reference is drawn
        return None, ("raised", f"{type(exc).__name__}: {exc}")
    if not same_structure(got, expected):
        return None, ("shape", SHAPE)
    return _floats(got), None


class PanelsWidget(PictureWidget):
    """A widget whose every state is computed at once and shown by the page.

    Subclasses set :attr:`name` (the learner's function drawn) and define
    :meth:`control_specs` and :meth:`compute_state`.

    Attributes
    ----------
    values : dict
        The controls' values now (the page sets them).
    states : list of dict
        Every state: ``{key, picture: {panels, label, fixed, bar, axes}, status, notes,
        title, options}``.
    anyway : bool
        "draw my failing functions anyway".
    failing : bool
        Whether the learner's function (written, not a stub) fails its check.
    """

    _esm = esm("panels.js")
    controls = traitlets.List().tag(sync=True)
    values = traitlets.Dict().tag(sync=True)
    states = traitlets.List().tag(sync=True)
    anyway = traitlets.Bool(False).tag(sync=True)
    failing = traitlets.Bool(False).tag(sync=True)
    name: str = ""

    def __init__(self, functions=None, **values):
        self._source, self._cache, self._slow = functions, {}, {}
        super().__init__()
        self.controls = self.control_specs()
        self.values = {c["name"]: values.get(c["name"], c["options"][0][1]) for c in self.controls}
        self.observe(lambda _: self.refresh(), names="anyway")
        self.refresh()

    def control_specs(self) -> list[dict]:
        """The controls, in order (:func:`slider`)."""
        raise NotImplementedError

    def compute_state(self, **values) -> dict:
        """``{picture, status, notes}`` (and ``title``, ``options``) for ``values``."""
        raise NotImplementedError

    def combinations(self):
        """Every combination of the controls' values (a subclass may drop impossible ones)."""
        names = [c["name"] for c in self.controls]
        for combo in itertools.product(*([o[1] for o in c["options"]] for c in self.controls)):
            yield dict(zip(names, combo, strict=True))

    def refresh(self) -> None:
        """Compute every state with the learner's function as it is now, and send them."""
        with interrupts_said(f"Drawing {self.name} was interrupted: run this cell again."):
            states = [{"key": key, **self.compute_state(**key)} for key in self.combinations()]
        self.states = states

    def current(self) -> dict:
        """The state the controls show now."""
        return next(s for s in self.states if s["key"] == self.values)

    # ------------------------------------------------------------------ the learner's rule
    def choose(self) -> tuple:
        """``(function, status line, notes)``: the learner's where its check passes, or when
        the box is ticked (never a stub); the course's otherwise, with why."""
        course = getattr(ref, self.name)
        self.failing = False
        if self._source is REFERENCE:
            return course, REFERENCE_STATUS, []
        mine = dict(self._source or {}).get(self.name)
        code = f"<code>{self.name}</code>"
        kind, failed = judge(self.name, mine, self._cache, self.anyway)
        self.failing = kind in ("failing", "drawn failing")
        if kind == "used":
            return mine, f"Drawn with <b>your</b> {code} (its check passes).", []
        if kind in ("absent", "unwritten"):  # none, or a stub: never drawn
            once = "defined above" if kind == "absent" else "written and its check passes"
            return (
                course,
                f"Drawn with the course's {code}: yours is {NOT_WRITTEN}.",
                [f"Once your {code} is {once}, run this cell again to draw with it."],
            )
        if kind == "drawn failing":
            return (
                mine,
                warn(f"Drawn with your failing {code} (its check fails: see below)."),
                [warn(f"Drawn with your failing {code} (its check: {as_html(failed)})")],
            )
        return (
            course,
            warn(f"Drawn with the course's {code} instead of yours (its check fails: see below)."),
            [
                warn(
                    f"Why not yours: the check of your {code} fails: {as_html(failed)} Fix it, "
                    "run its cell, then run this cell again."
                )
            ],
        )

    def draw_with(self, *args, when: str = "here", run=None) -> tuple:
        """``(result, status line, notes)``: the chosen function on ``args`` (or ``run(fn)``:
        how to call it); the course's where the learner's raises, returns other shapes or
        runs past its time limit (:func:`attempt`)."""
        run = run or (lambda f: f(*args))
        course = getattr(ref, self.name)
        expected, reference_s = timed(run, course)
        fn, line, notes = self.choose()
        if fn is course:
            return _floats(expected), line, notes
        got, why = attempt(run, fn, expected, self.name, reference_s, self._slow)
        if why is None:
            return got, line, notes
        whose = f"{'your failing' if self.failing else 'your'} <code>{self.name}</code>"
        if why[0] == "slow":  # the time of the call that ran long (the first state's)
            said = why[1].said(whose, LOOP_HERE, f" {when}")
        else:
            said = f"{whose} {f'raised {escape(why[1])}' if why[0] == 'raised' else why[1]} {when}."
        return (
            _floats(expected),
            warn(f"Drawn with the course's <code>{self.name}</code> instead of yours (see below)."),
            [warn(f"Why not yours: {said}")],
        )
