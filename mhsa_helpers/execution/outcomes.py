"""What a call of a learner's function gave, as the course reads it: :class:`Outcome`.

The raw outcomes of the call contract (:func:`.child.contract.call_one`),
whether made in the notebook or sent back by the child, become
:class:`Outcome` objects here (:func:`outcomes_of`). What the child sends is
untrusted: each value is checked (numeric arrays only, a bounded size and
depth, strings on one clipped line, error codes from a fixed vocabulary).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

from .child.contract import ARRAY_LIMIT, clip

__all__ = ["ERROR_CODES", "NODE_LIMIT", "Opaque", "Outcome", "clean_text", "outcomes_of"]


@dataclass(frozen=True)
class Opaque:
    """Stands for a returned object that is neither a numeric array, a number nor a tuple."""

    type_name: str


#: What went wrong in a call, in the child's fixed vocabulary (``raised:<built-in name>`` too).
ERROR_CODES = frozenset(
    {
        "not-implemented",
        "memory",
        "modified",
        "unstable",
        "reference",
        "warning",
        "calls",
        "exit",
        "crashed",
        "garbled",
        "slow",
        "spent",
    }
)


@dataclass(frozen=True)
class Outcome:
    """What one call of the learner's function gave: a value, or an error sentence.

    A call that warned (``code`` "warning") may carry the value it gives
    when the warning is let pass, so that the judge can name the mistake.
    """

    value: Any = None
    error: str | None = None
    #: "Name: message" of the exception a call asked to raise, raised as asked.
    raised: str | None = None
    #: Whether that exception came from a ``raise`` of the learner's (None: unknown).
    raised_here: bool | None = None
    #: Peak bytes of traced allocations during the call, where measured.
    peak: int | None = None
    #: For a call run in a fresh process: the growth of that process's resident memory
    #: from its fork to its peak, in bytes, as the kernel recorded it (-1: unknown).
    resident: int | None = None
    #: What went wrong, when ``error`` is set: one of :data:`ERROR_CODES` or
    #: ``raised:<built-in exception name>``; None if the child's word was not one of them.
    code: str | None = None


#: Containers, numbers and strings the outcomes of one test may hold at the most.
NODE_LIMIT = 10_000
#: What arrays of other kinds than numbers and booleans are called in a message.
_ARRAY_KINDS = {"M": "dates", "m": "time spans", "U": "strings", "S": "bytes", "V": "records"}


def clean_text(value) -> str:
    """A string from the child, one line, no control characters, clipped."""
    text = "".join(c if c.isprintable() else " " for c in str(value))
    return clip(text)


def _decode(value, budget: list, depth: int = 0):
    """The child's plain value, checked: bounded size and depth, numeric arrays only."""
    import numpy as np

    budget[0] -= 1
    if budget[0] < 0 or depth > 8:
        raise ValueError("a result too deep or too large")
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject or value.size > ARRAY_LIMIT:
            return Opaque("an array that cannot be checked")
        if value.dtype.kind not in "biufc":
            return Opaque(f"an array of {_ARRAY_KINDS.get(value.dtype.kind, 'other things')}")
        return value
    if isinstance(value, dict):
        return Opaque(clean_text(value.get("opaque", "dict")))
    if isinstance(value, str):
        return clean_text(value)
    if type(value) in (tuple, list):
        return type(value)(_decode(v, budget, depth + 1) for v in value)
    if isinstance(value, bool | int | float | complex | np.generic) or value is None:
        return value
    return Opaque(clean_text(type(value).__name__))


def _code(value) -> str | None:
    """An error code from the child, if it is one of the vocabulary's."""
    if not isinstance(value, str):
        return None
    if value in ERROR_CODES:
        return value
    kind, _, name = value.partition(":")
    cls = getattr(builtins, name, None)
    if kind == "raised" and isinstance(cls, type) and issubclass(cls, BaseException):
        return value
    return None


def _count(value) -> int | None:
    """A count of bytes from the child: an int, None if absent, -1 if malformed."""
    if value is None:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def outcomes_of(raw) -> list[Outcome]:
    """The child's raw outcomes (:func:`.child.contract.call_one`) as :class:`Outcome` objects.

    Checked: a malformed entry becomes an error outcome, and the whole is
    decoded within :data:`NODE_LIMIT` (a ValueError beyond it).
    """
    budget = [NODE_LIMIT]
    out = []
    for entry in list(raw)[:64]:
        kind, value = (entry[0], entry[1]) if isinstance(entry, tuple) and entry else (None, None)
        if kind == "value":
            out.append(Outcome(value=_decode(value, budget)))
        elif kind == "measured" and isinstance(value, tuple) and len(value) in (2, 3):
            peak, resident = (_count(v) for v in (*value[1:], None)[:2])
            out.append(Outcome(value=_decode(value[0], budget), peak=peak, resident=resident))
        elif kind == "raised":
            own = entry[2] if len(entry) > 2 and isinstance(entry[2], bool) else None
            out.append(Outcome(raised=clean_text(value), raised_here=own))
        else:
            code = _code(entry[2]) if isinstance(entry, tuple) and len(entry) > 2 else None
            behind = _decode(entry[3], budget) if code == "warning" and len(entry) > 3 else None
            out.append(Outcome(value=behind, error=clean_text(value), code=code))
    return out
