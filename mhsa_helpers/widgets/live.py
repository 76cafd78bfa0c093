"""Drawing with the learner's own functions: only where their check passes, and saying so.

The explorer and the extensions' companion widgets share these: a function's
check runs once per definition (:func:`check_sentence`), the learner's
function is used only while it passes (:func:`learner_or_reference`), and
every widget offers its current picture to static viewers (:func:`bundle`).
"""

from __future__ import annotations

import re

import numpy as np

from .. import reference as ref

__all__ = ["bundle", "check_sentence", "learner_or_reference"]


def check_sentence(name: str, fn, cache: dict) -> str | None:
    """The visible check's sentence on the learner's ``fn`` (None: it passes).

    ``cache`` maps ``name`` to ``(function, sentence)``: the check runs once
    per definition, again when the learner redefines the function.
    """
    cached = cache.get(name)
    if cached is not None and cached[0] is fn:
        return cached[1]
    from ..checks import CHECKS, CheckFailed
    from ..checks.core import run_calls

    check = CHECKS[name]
    calls = check.calls()
    try:
        with np.errstate(all="ignore"):
            check.verdict(calls, run_calls(name, fn, calls))
        sentence = None
    except CheckFailed as exc:
        sentence = str(exc)
    cache[name] = (fn, sentence)
    return sentence


def learner_or_reference(name: str, functions, cache: dict) -> tuple:
    """``(function to draw with, status sentence)``: the learner's ``name`` where its check passes.

    ``functions`` is read afresh (``globals()`` works).
    """
    fn = dict(functions or {}).get(name)
    if not callable(fn):
        return getattr(ref, name), f"Drawn with the course's <code>{name}</code>."
    failed = check_sentence(name, fn, cache)
    if failed is None:
        return fn, f"Drawn with <b>your</b> <code>{name}</code>."
    text = failed.replace("&", "&amp;").replace("<", "&lt;")  # the sentence as text
    said = re.sub(r"`([^`]*)`", r"<code>\1</code>", text)  # `code` shown as code
    return getattr(ref, name), (
        f"<span style='color:#D55E00'>The course's <code>{name}</code> instead of yours, "
        f"whose check fails: {said}</span>"
    )


def bundle(widget, picture: str, **kwargs):
    """``widget``'s mime bundle plus ``picture`` (SVG) for viewers without live widgets."""
    out = widget._repr_mimebundle_(**kwargs)
    data = out[0] if isinstance(out, tuple) else out
    data["image/svg+xml"] = picture
    return out
