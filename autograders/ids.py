"""Student ids checked once, at the door, and student text shown escaped.

A student id is whatever the submitting account chose (``nbgrader submit
--student``, which refuses only ``*`` and ``+``): the course's collect step
and the grade command accept an id only when :func:`is_safe` says so, so
that no id reaches a path, the gradebook, the CSV export or a worker unless
it is plain. Everything a student chose that the instructor reads (an id, a
folder name, a stamp) is shown through :func:`shown`: no control character,
no terminal escape, no line break and no bidirectional override reaches the
terminal or a report.
"""

from __future__ import annotations

import re

__all__ = ["ID_RULE", "is_safe", "printable", "shown"]

#: The ids the course accepts, as the README states them.
ID_RULE = (
    "ASCII letters, digits and . _ @ -, starting with a letter or a digit, at most 64 characters"
)
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


def is_safe(student_id) -> bool:
    """Whether ``student_id`` is an id the course accepts (:data:`ID_RULE`).

    Parameters
    ----------
    student_id : object
        What a submission claims as its student id.

    Returns
    -------
    bool
        True only for a str made of ASCII letters, digits and ``._@-``,
        starting with a letter or a digit, 1 to 64 characters long: never a
        path (no ``/``, not ``.`` or ``..``), never a CSV formula, never a
        line break or control character.
    """
    return isinstance(student_id, str) and _SAFE.fullmatch(student_id) is not None


def printable(text: str, backslashes: bool = True) -> str:
    """``text`` with every unprintable character escaped (``\\n``, ``\\x1b``, ``\\u202e``).

    Parameters
    ----------
    text : str
        Any text; a student may have chosen part of it.
    backslashes : bool
        Double every backslash, so that no escape can be forged (False for
        text whose student parts went through :func:`shown` already).

    Returns
    -------
    str
        The same text on one line, with nothing a terminal would act on:
        control characters, escapes, line and paragraph separators and
        format characters (bidirectional overrides) come out as Python
        escapes.
    """
    out = []
    for ch in str(text):
        if ch == "\\" and backslashes:
            out.append("\\\\")
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def shown(text, limit: int = 80) -> str:
    """``text`` quoted, escaped (:func:`printable`) and cut to ``limit`` characters, for reports.

    Parameters
    ----------
    text : object
        What a student chose (an id, a folder name, a stamp).
    limit : int
        At most this many characters of the escaped text are shown, then ``…``.

    Returns
    -------
    str
        For example ``'a\\nb'`` for an id holding a line break.
    """
    escaped = printable(str(text))
    if len(escaped) > limit:
        escaped = escaped[:limit] + "…"
    return f"'{escaped}'"
