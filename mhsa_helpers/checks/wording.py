"""Numbers as a check's sentence shows them: plain digits, never numpy reprs; and
verbs that agree with what a sentence names ("the heads are", "the output is")."""

from __future__ import annotations

import re

import numpy as np

__all__ = ["agree", "is_plural", "number", "two_numbers"]

#: Where the noun phrase naming an output ends: what follows describes it
#: ("the attention weights (..., h, T, T)", "the output rows [0, 3] on …").
_QUALIFIER = re.compile(r" \(| \[| on | of | after | at | for | from | with ")
#: Plural forms of the verbs (and the pronoun) the checks' sentences put after an output.
_PLURAL = {"is": "are", "has": "have", "was": "were", "does": "do", "its": "their"}


def is_plural(what: str) -> bool:
    """Whether ``what``, an output as a sentence names it, is plural.

    The noun phrase is read up to its first qualifier (a parenthesis, a
    bracket, "on", "of", "after" …): it is plural when it joins names with
    "and" ("Q, K and V") or its last word is an English plural ("the heads",
    "the attention weights", "the output rows"). Code ("softmax(Z)",
    "merge_heads(split_heads(M))") and single letters ("Z", "dQ") are singular.

    Parameters
    ----------
    what : str

    Returns
    -------
    bool
    """
    head = _QUALIFIER.split(str(what).strip(), maxsplit=1)[0]
    if " and " in head:
        return True
    words = head.split()
    if not words:
        return False
    last = words[-1]
    return bool(re.fullmatch(r"[a-z]+[^s]s", last)) and len(last) > 2


def agree(what: str, word: str) -> str:
    """``word``, a verb in the third person singular (or "its"), as ``what`` takes it.

    ``agree("the heads", "has")`` is "have", ``agree("the output", "has")`` is
    "has"; "differs" becomes "differ", "its" becomes "their".

    Parameters
    ----------
    what : str
        The subject, an output as a sentence names it (see :func:`is_plural`).
    word : str
        "is", "has", "was", "does", "its", or a regular verb ending in "s".

    Returns
    -------
    str
    """
    if not is_plural(what):
        return word
    if word in _PLURAL:
        return _PLURAL[word]
    if word.endswith("es") and word[:-2].endswith(("sh", "ch", "x", "ss")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


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
