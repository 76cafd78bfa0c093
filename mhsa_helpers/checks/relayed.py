"""Reading a relayed error: the shapes that a course function or numpy refused.

A learner's layer that calls ``mh.attention_head`` with wrongly shaped heads
sees the course function's own error ("Q and K must have the same last axis
d_k, but got Q of shape (2, 6, 4) and K of shape (2, 6, 2)."); numpy's matmul
says "(size 2 is different from 4)". The checks read the shapes back here and
name the slip that made them (:meth:`~.core.Check.relayed`).
"""

from __future__ import annotations

import re

__all__ = ["broadcast_shapes", "core_sizes", "qk_shapes"]

_SHAPE = r"\(([\d,\s]*)\)"


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.replace(",", " ").split())


def qk_shapes(said: str) -> tuple[tuple[int, ...], tuple[int, ...], str] | None:
    """``(Q's shape, K's shape, what)`` from ``mh.attention_scores``'s refusal, or None.

    ``what`` is ``"width"`` (Q and K of different last axes d_k) or
    ``"batch"`` (batch axes, the heads among them, that do not broadcast).
    """
    found = re.search(
        r"Q and K must have (the same last axis d_k|broadcastable batch axes), but got Q of "
        rf"shape {_SHAPE} and K of shape {_SHAPE}",
        said,
    )
    if found is None:
        return None
    what = "width" if "last axis" in found[1] else "batch"
    return _shape(found[2]), _shape(found[3]), what


def core_sizes(said: str, cut: bool = False) -> tuple[int, int] | None:
    """``(the second operand's size, the first's)`` from numpy's matmul core-dimension error.

    ``Q @ K.swapaxes(-1, -2)`` with K of width w and Q of width d_k says
    "(size w is different from d_k)"; None for any other error. With ``cut``, also from
    an error cut short right after the second size ("… (cut)").
    """
    end = r"(\)|(?= … \(cut\)))" if cut else r"\)"
    found = re.search(rf"core dimension.*size (\d+) is different from (\d+){end}", said)
    return (int(found[1]), int(found[2])) if found else None


def broadcast_shapes(said: str) -> list[tuple[int, ...]]:
    """The shapes numpy names in "operands could not be broadcast together with shapes (2,2)
    (5,5)"; empty for any other error."""
    found = re.search(
        r"could not be broadcast together with (?:remapped )?shapes ([\d,()\s\[\]]*)", said
    )
    return [_shape(s) for s in re.findall(_SHAPE, found[1])] if found else []
