"""The TeX fonts a page's typeset math needs (:mod:`book.typeset`): its style sheet names
those and no other, so the browser fetches no other font and nobody counting what a page
loads counts any. Pure functions of MathJax's CommonHTML output and style sheet."""

from __future__ import annotations

import re

__all__ = ["BASE_FONTS", "STRETCHY_FONTS", "fonts_used", "page_css"]

#: The fonts every formula may use: MathJax's zero-width font, TeX's main font.
BASE_FONTS = frozenset({"MJXZERO", "MJXTEX"})
#: The fonts a stretched delimiter may use (CommonHTML's ``mjx-stretchy`` rule).
STRETCHY_FONTS = frozenset({"MJXTEX-S1", "MJXTEX-S4", "MJXTEX-A"})
_FONT_FACE = re.compile(r"@font-face[^{]*\{[^}]*?font-family:\s*([\w-]+);[^}]*\}\s*")


def fonts_used(html: str) -> frozenset[str]:
    """The TeX fonts (CSS families) that formulas typeset in ``html`` use: the base ones,
    ``MJXTEX-X`` for each character class ``TEX-X``, the stretchy ones where a delimiter
    stretches."""
    used = {f"MJXTEX-{v}" for v in re.findall(r"\bTEX-([A-Z0-9]+)\b", html)}
    return BASE_FONTS | used | (STRETCHY_FONTS if "<mjx-stretchy" in html else frozenset())


def page_css(css: str, fonts: frozenset[str]) -> str:
    """MathJax's style sheet ``css`` with only the ``@font-face`` rules of ``fonts``: the
    browser fetches no other font, and nobody counting what a page loads counts any."""
    return _FONT_FACE.sub(lambda m: m.group(0) if m.group(1) in fonts else "", css)
