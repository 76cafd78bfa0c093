"""The learner's function where its visible check passes, else the reference's, and why.

One rule for everything that computes with the learner's own functions (the
explorer and the extensions' widgets, the backward notebook, the training
notebook): a function's check runs once per definition
(:func:`check_sentence`), and the learner's function is used only while it
passes (:func:`learner_or_reference`), with a sentence saying whose was used; the
widgets draw a failing one when asked, never a stub (:func:`judge`).
It imports no widget, so the widgets and training both import it downward.
"""

from __future__ import annotations

import re

import numpy as np

from . import reference as ref
from .budget import CHECK_LOOP, CHECK_LOOP_RELAYED

__all__ = ["WARN", "as_html", "check_sentence", "judge", "learner_or_reference", "warn"]


def check_sentence(name: str, fn, cache: dict) -> str | None:
    """The visible check's sentence on the learner's ``fn`` (None: it passes).

    ``cache`` maps ``name`` to ``(function, sentence)``: the check runs once
    per definition, again when the learner redefines the function. The
    sentence is relayed by another cell, which says itself what to do next:
    "then run the cell again" of a function stopped by its time limit is left out.
    """
    cached = cache.get(name)
    if cached is not None and cached[0] is fn:
        return cached[1]
    from .checks import CHECKS, CheckFailed

    check = CHECKS[name]
    calls = check.calls()
    try:
        with np.errstate(all="ignore"):
            check.verdict(calls, check.outcomes_here(fn, calls))
        sentence = None
    except CheckFailed as exc:
        sentence = str(exc).replace(CHECK_LOOP, CHECK_LOOP_RELAYED)
    cache[name] = (fn, sentence)
    return sentence


#: The colour of a line that tells the learner their function was not used.
WARN = "#D55E00"


def warn(html: str) -> str:
    """``html`` in the warning colour."""
    return f"<span style='color:{WARN}'>{html}</span>"


def as_html(sentence: str) -> str:
    """A check's sentence (text, `code` in backticks) as HTML."""
    text = sentence.replace("&", "&amp;").replace("<", "&lt;")
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", text)


def judge(name: str, fn, cache: dict, anyway: bool) -> tuple[str, str | None]:
    """How the learner's ``fn`` for exercise ``name`` is drawn, and its check's sentence:
    "absent" (none), "unwritten" (a stub: never drawn), "used" (its check passes),
    "failing" (the course's is drawn) or "drawn failing" (the box is ticked)."""
    if not callable(fn):
        return "absent", None
    failed = check_sentence(name, fn, cache)
    if failed is None:
        return "used", None
    if "not implemented yet" in failed:
        return "unwritten", failed
    return ("drawn failing" if anyway else "failing"), failed


def learner_or_reference(name: str, functions, cache: dict) -> tuple:
    """``(function to draw with, status sentence)``: the learner's ``name`` where its check passes.

    ``functions`` is read afresh (``globals()`` works).
    """
    fn = dict(functions or {}).get(name)
    kind, failed = judge(name, fn, cache, anyway=False)
    if kind == "absent":
        return getattr(ref, name), f"Drawn with the course's <code>{name}</code>."
    if kind == "used":
        return fn, f"Drawn with <b>your</b> <code>{name}</code>."
    return getattr(ref, name), warn(
        f"The course's <code>{name}</code> instead of yours, whose check fails: {as_html(failed)}"
    )
