"""Titles as plain text: a heading's TeX made readable where MathJax does not run.

A page's title is shown in the browser's tab, in every page's contents sidebar, in the
prev/next links and in the search results; only the page itself typesets math
(MathJax is loaded on the pages with math only). :func:`plain` turns the TeX of a
title into Unicode text (``$Z$`` → ``Z``, ``\\sqrt{d_k}`` → ``√d_k``);
``book/conf.py`` applies it to every page's title once Sphinx has read the page.
"""

from __future__ import annotations

import re

__all__ = ["plain"]

#: Control words shown as one character (or none: spacing).
SYMBOLS = {
    "cdot": "\u00b7",
    "times": "\u00d7",
    "div": "\u00f7",
    "dots": "\u2026",
    "ldots": "\u2026",
    "cdots": "\u22ef",
    "top": "\u1d40",
    "infty": "\u221e",
    "to": "\u2192",
    "rightarrow": "\u2192",
    "leftarrow": "\u2190",
    "le": "\u2264",
    "leq": "\u2264",
    "ge": "\u2265",
    "geq": "\u2265",
    "ne": "\u2260",
    "neq": "\u2260",
    "approx": "\u2248",
    "in": "\u2208",
    "sum": "\u2211",
    "prod": "\u220f",
    "odot": "\u2299",
    "otimes": "\u2297",
    "partial": "\u2202",
    "nabla": "\u2207",
    "alpha": "\u03b1",
    "beta": "\u03b2",
    "gamma": "\u03b3",
    "delta": "\u03b4",
    "epsilon": "\u03b5",
    "theta": "\u03b8",
    "lambda": "\u03bb",
    "mu": "\u03bc",
    "pi": "\u03c0",
    "sigma": "\u03c3",
    "tau": "\u03c4",
    "phi": "\u03c6",
    "omega": "\u03c9",
    "Sigma": "\u03a3",
    "quad": " ",
    "qquad": " ",
}
#: Superscripts with a Unicode character of their own.
SUPERSCRIPTS = dict(
    zip(
        "0123456789+-nT",
        "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b\u207f\u1d40",
        strict=True,
    )
)
#: Commands whose braced argument is shown as it is (a name, text, a font).
KEEP_ARGUMENT = r"operatorname|mathrm|mathbf|mathit|mathsf|mathtt|text|textrm|textbf|boldsymbol"
_GROUP = r"\{([^{}]*)\}"  # an innermost braced group
_SIMPLE = re.compile(r"[^\s+\-*/=(),]+")  # needs no parentheses: d_k, 7, QKᵀ, √d_k


def plain(tex: str) -> str:
    """The TeX of a title as plain Unicode text.

    Parameters
    ----------
    tex : str
        A title's text, its math between ``$`` signs or bare (a math node's source).

    Returns
    -------
    str
        The same with no ``$`` and no ``\\``: names and text kept (``\\operatorname{softmax}``
        → ``softmax``), fractions as ``a/b``, roots as ``√x`` (``√(a+b)`` where the root
        holds more than one name), superscript digits and ``T`` raised, symbols as their
        character (``\\times`` → ``×``), the rest of the braces dropped. Subscripts stay
        as written (``d_k``).
    """
    s = tex.replace("$", "")
    s = re.sub(r"\\[,;:! ]", " ", s)
    s = re.sub(r"\\([{}_%&#])", r"\1", s)
    previous = None
    while previous != s:  # innermost groups first: \frac{\sqrt{a}}{b}
        previous = s
        s = re.sub(rf"\\(?:{KEEP_ARGUMENT})\s*{_GROUP}", r"\1", s)
        s = re.sub(rf"\\[dt]?frac\s*{_GROUP}\s*{_GROUP}", lambda m: _frac(*m.groups()), s)
        s = re.sub(rf"\\sqrt\s*{_GROUP}", lambda m: _root(m.group(1)), s)
        s = re.sub(r"\^\s*\{([^{}]*)\}", lambda m: _raised(m.group(1)), s)
        s = re.sub(r"\^\s*(\\top\b|T\b)", "\u1d40", s)
    s = re.sub(r"\\sqrt\s*(\w)", "\u221a\\1", s)
    s = re.sub(r"\^\s*(\\[A-Za-z]+|\w)", lambda m: _raised(m.group(1)), s)
    s = re.sub(r"\\([A-Za-z]+)", lambda m: SYMBOLS.get(m.group(1), m.group(1)), s)
    s = s.replace("{", "").replace("}", "").replace("\\", "")
    return re.sub(r"\s+", " ", s).strip()


def _frac(top: str, bottom: str) -> str:
    wrap = lambda x: x if _SIMPLE.fullmatch(x.strip()) else f"({x.strip()})"  # noqa: E731
    return f"{wrap(top)}/{wrap(bottom)}"


def _root(inside: str) -> str:
    inside = inside.strip()
    return "\u221a" + (inside if _SIMPLE.fullmatch(inside) else f"({inside})")


def _raised(power: str) -> str:
    power = power.strip()
    if power in (r"\top", "T"):
        return "\u1d40"
    if power and all(c in SUPERSCRIPTS for c in power):
        return "".join(SUPERSCRIPTS[c] for c in power)
    return f"^{power}" if len(power) == 1 else f"^({power})"
