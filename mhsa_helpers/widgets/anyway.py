"""The explorer's "draw my failing functions anyway" box, for the extensions' widgets.

The explorer (:mod:`mhsa_helpers.widgets.explorer`) draws a learner's
function only while its check passes, and offers a check box beside its
status line, shown only while a function's check fails, to draw it anyway.
:class:`Anyway` gives the extensions' widgets the same box, the same
behaviour and the same words: a function that is not implemented yet is
never drawn (the box stays hidden), and a failing function drawn anyway
that raises, or returns the wrong shapes, is replaced by the course's and
the notes say why.

This lives here, not in :mod:`mhsa_helpers.widgets.live`, which the
explorer's work is changing at the same time; it uses only its public
functions.
"""

from __future__ import annotations

from html import escape

import ipywidgets as widgets
import numpy as np

from .. import reference as ref
from ..learner import as_html, check_sentence, warn
from .live import drawn_with, raised

__all__ = ["LABEL", "Anyway", "anyway_box", "same_structure"]

#: The box's words, as the explorer's.
LABEL = "draw my failing functions anyway"


def anyway_box() -> widgets.Checkbox:
    """The check box, unticked and hidden (shown while a function's check fails)."""
    return widgets.Checkbox(
        value=False,
        description=LABEL,
        indent=False,
        layout=widgets.Layout(display="none", width="270px", flex="0 0 auto"),
    )


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
    """``result`` as a float array, or a tuple of them."""
    if isinstance(result, tuple | list):
        return tuple(np.asarray(r, dtype=float) for r in result)
    return np.asarray(result, dtype=float)


class Anyway:
    """The box and the choice it makes, for a widget with a ``frame`` and an ``update()``.

    Call :meth:`_init_anyway` before building the frame, put
    :attr:`anyway_w` beside its status line (``Frame(...,
    beside_status=[self.anyway_w])``), choose the function with
    :meth:`choose` and, after each redraw, call :meth:`show_anyway`.

    Attributes
    ----------
    anyway_w : ipywidgets.Checkbox
        "draw my failing functions anyway": shown while the learner's function
        fails its check (or while ticked); ticking it redraws.
    failing : bool
        Whether the learner's function (written, not a stub) fails its check.
    """

    name: str

    def _init_anyway(self) -> None:
        self.anyway_w = anyway_box()
        self.failing = False
        self.anyway_w.observe(lambda _change: self.update(), names="value")

    def choose(self, source, cache: dict) -> tuple:
        """``(function, status line, notes)``: as :func:`~mhsa_helpers.widgets.live.drawn_with`,
        but the learner's failing function where the box is ticked.
        """
        fn, line, notes = drawn_with(self.name, source, cache)
        mine = dict(source or {}).get(self.name)
        self.failing = False
        if fn is mine or not callable(mine):
            return fn, line, notes
        failed = check_sentence(self.name, mine, cache)
        if failed is None or "not implemented yet" in failed:  # a stub: nothing to draw
            return fn, line, notes
        self.failing = True
        if not self.anyway_w.value:
            return fn, line, notes
        return (
            mine,
            warn(f"Drawn with your failing <code>{self.name}</code> (its check fails: see below)."),
            [
                warn(
                    f"Drawn with your failing <code>{self.name}</code> "
                    f"(its check: {as_html(failed)})"
                )
            ],
        )

    def drawing_failing(self, fn) -> bool:
        """Whether ``fn`` is the learner's failing function, drawn because the box is ticked."""
        return self.failing and self.anyway_w.value and fn is not getattr(ref, self.name)

    def fell_back(self, fn, exc: Exception | None, when: str = "here") -> tuple[str, list[str]]:
        """``(status line, notes)`` when the learner's ``fn`` could not be drawn ``when``.

        ``exc`` is what it raised (None: it returned the wrong shapes); the
        course's function is drawn instead.
        """
        failing = self.drawing_failing(fn)
        if exc is not None and not failing:
            return raised(self.name, exc, when)
        said = (
            "returned a different shape than the reference"
            if exc is None
            else f"raised {type(exc).__name__}"
        )
        yours = "your failing one" if failing else "yours"
        line = warn(
            f"Drawn with the course's <code>{self.name}</code> instead of {yours} "
            f"(it {said}: see below)."
        )
        whose = "your failing" if failing else "your"
        drawn = ", drawn anyway," if failing else ""
        detail = "." if exc is None else f": {escape(str(exc))}"
        return line, [
            warn(f"Why not yours: {whose} <code>{self.name}</code>{drawn} {said} {when}{detail}")
        ]

    def draw_with(self, source, cache: dict, *args) -> tuple:
        """``(result, status line, notes)``: the chosen function (:meth:`choose`) on ``args``.

        The course's function stands in, and the notes say why, where the
        learner's raises or returns other shapes than the reference's.
        Arrays come back as float arrays (a tuple of them for a tuple).
        """
        course = getattr(ref, self.name)
        expected = course(*args)
        fn, line, notes = self.choose(source, cache)
        if fn is not course:
            try:
                with np.errstate(all="ignore"):
                    got = fn(*args)
            except Exception as exc:  # told to the learner, then the reference is drawn
                return _floats(expected), *self.fell_back(fn, exc)
            if not same_structure(got, expected):
                return _floats(expected), *self.fell_back(fn, None)
            expected = got
        return _floats(expected), line, notes

    def show_anyway(self) -> None:
        """Show the box while the learner's function fails its check (or while it is ticked)."""
        self.anyway_w.layout.display = "" if self.failing or self.anyway_w.value else "none"
