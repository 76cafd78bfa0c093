"""Numbers as a check's sentence shows them: plain digits, never numpy reprs."""

from __future__ import annotations

import numpy as np

__all__ = ["number", "two_numbers"]


def number(x) -> str:
    """A number as a message shows it: 6 significant digits; a huge integer by its size."""
    if isinstance(x, int | np.integer) and abs(int(x)) >= 10**15:
        return f"a whole number of {len(str(abs(int(x))))} digits"
    try:
        return f"{float(x):.6g}"
    except (OverflowError, TypeError, ValueError):
        return "a value that is not a real number"


def two_numbers(got, expected) -> tuple[str, str]:
    """``got`` and ``expected`` with as many digits as it takes to tell them apart (up to 17)."""
    a, b = number(got), number(expected)
    if a != b:
        return a, b
    try:
        x, y = float(got), float(expected)
    except (OverflowError, TypeError, ValueError):
        return a, b
    for digits in range(7, 18):
        a, b = f"{x:.{digits}g}", f"{y:.{digits}g}"
        if a != b:
            break
    return a, b
