"""Tooltips and linked cells in an SVG picture, written as CSS into it (no script runs).

Every cell carries classes naming the tokens it belongs to (``q3``: query
token 3's row, ``k5``: key token 5, ``q3h1``: the same within head 1's
columns, :func:`link_classes`). Pointing at or focusing a cell shows its
tooltip (:func:`tooltip`, placed when the picture is built, always inside
it) and dims every cell that shares none of its classes (:func:`link_style`).
"""

from __future__ import annotations

import re
from html import escape

__all__ = [
    "TAB",
    "TIP_CHAR",
    "TIP_LINE",
    "TIP_SIZE",
    "TIP_WRAP",
    "Tip",
    "cell_key",
    "link_classes",
    "link_style",
    "tooltip",
    "wrap",
]


def link_classes(row_link, r: int, col_link, c: int, head: int | None) -> str:
    """The link classes of cell (r, c): its row's and column's tokens, within a head if any."""
    names = []
    for prefixes, i in ((row_link, r), (col_link, c)):
        for prefix in (prefixes,) if isinstance(prefixes, str) else prefixes or ():
            names.append(f"{prefix}{i}")
            if head is not None:
                names.append(f"{prefix}{i}h{head}")
    return " ".join(names)


def link_style(inner: str, uid: str) -> str:
    """CSS of one picture: point at or focus a cell (or a line) for its tooltip, dim what
    shares nothing with it.

    A cell's tooltip follows its transparent target (:func:`tooltip`): one
    rule shows them all. A line of the query's view has one rule of its own
    (a few dozen), and each link class one rule that keeps its cells lit.
    """
    tips = set(re.findall(r"class='tip (c\d+)'", inner))
    targets = {m.split()[-1] for m in re.findall(r"class='hit ([^']*)'", inner)}
    classes = sorted(
        {c for m in re.findall(r"class='(?:cell|link) ([^']*)'", inner) for c in m.split()}
        - {"off"}  # a blocked cell's mark, not a link
        - tips  # an element's own class (its tooltip's), not a link
    )
    scope = f"#mhsa-{uid}"
    lit = ",".join(f"{scope}:has(.{c}:hover) .{c},{scope}:has(.{c}:focus) .{c}" for c in classes)
    lines = ",".join(  # the query's view: a line and its tooltip, siblings
        f"{scope} .{t}:is(:hover,:focus)~.tip.{t}"
        for t in sorted(tips - targets, key=lambda t: int(t[1:]))
    )
    shown = f"{scope} .hit:is(:hover,:focus)+.tip" + (f",{lines}" if lines else "")
    return (
        f"<style>{scope} .tip{{display:none;pointer-events:none;font-size:{TIP_SIZE}px;"
        "font-weight:bold;paint-order:stroke;stroke:#fff;stroke-width:7px;"
        "stroke-linejoin:round}"
        f"{scope} .tip>tspan{{font-weight:normal;fill:#333}}"
        f"{scope} .hit{{fill:transparent}}"
        f"{shown}{{display:inline}}"
        f"{scope} .cell,{scope} .link{{transition:opacity 120ms}}"
        f"{scope} .hit:focus,{scope} .link:focus{{outline:none}}"
        f"{scope} .hit:is(:hover,:focus){{stroke:#000;stroke-width:2.5}}"
        f"{scope}:has(.lk:hover,.lk:focus,.link:hover,.link:focus) :is(.cell,.link)"
        "{opacity:.35}"
        + (f"{lit}{{opacity:1}}" if lit else "")
        + f"{scope} .link:is(:hover,:focus){{opacity:1}}"
        + "</style>"
    )


#: Tooltips: font size, line height and width per character (DejaVu Sans, generous).
TIP_SIZE, TIP_LINE, TIP_CHAR = 12, 16.0, 7.2
#: A tooltip line longer than this many characters wraps.
TIP_WRAP = 110


#: What makes an element reachable by Tab.
TAB = " tabindex='0'"


def wrap(text: str, width: int = TIP_WRAP) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken between words."""
    if len(text) <= width:
        return [text]
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines


class Tip(str):
    """A tooltip's SVG (and its cell's target): the picture draws every tip last."""


def tooltip(
    key: str,
    lines: list[str],
    box: tuple[float, float, float, float],
    hit: str | None = None,
    tab: bool = False,
    width: float = 920,
) -> str:
    """A tooltip for the element of class ``key`` at ``box`` (x, y, width, height).

    Placed above the element, else below it, left-aligned with it, else
    right-aligned, and moved inside the picture (``width`` wide, the
    pictures' :data:`~mhsa_helpers.widgets.svg.WIDTH`): it
    never leaves the picture and never covers the element pointed at.
    The first line is bold (where and what value), the rest plain (what it means).

    With ``hit`` (a cell's link classes), the tooltip comes with a transparent
    target over the element, right before it: pointing at or focusing the
    target shows the tooltip by one rule for all cells (``.hit:hover+.tip``),
    never one rule per cell, and lights the linked cells by their classes.
    ``tab``: the target is reached by Tab.
    """
    x, y, w, h = box
    lines = [part for line in lines for part in wrap(line)]
    tw = TIP_CHAR * max(len(line) for line in lines) + 14
    th = TIP_LINE * len(lines) + 8
    tx = x if x + tw <= width - 4 else x + w - tw
    tx = min(max(tx, 4.0), width - 4 - tw)
    ty = y - th - 6 if y - th - 6 >= 4 else y + h + 6
    # one text, on a white halo (its look is in the picture's style): hundreds of
    # tooltips, hidden, cost a picture little
    rest = "".join(  # a space ends every line but the last: read aloud, the words stay apart
        f"<tspan x='{tx + 7:.0f}' y='{ty + 4 + TIP_LINE * (k + 1.75):.0f}'>{escape(line)}"
        f"{' ' if k < len(lines) - 2 else ''}</tspan>"
        for k, line in enumerate(lines[1:])
    )
    target = ""
    if hit is not None:  # "lk": it has linked cells to light
        classes = f"hit {hit} lk {key}" if hit else f"hit {key}"
        target = (
            f"<rect class='{classes}' x='{x:.1f}' y='{y:.1f}' width='{w:.1f}' "
            f"height='{h:.1f}'{TAB if tab else ''}/>"
        )
    return Tip(
        f"{target}<text class='tip {key}' x='{tx + 7:.0f}' y='{ty + 4 + TIP_LINE * 0.75:.0f}'>"
        f"{escape(lines[0])}{' ' if rest else ''}{rest}</text>"
    )


def cell_key(x: float, y: float) -> str:
    """A cell's own class, from where it is (no two cells of a picture share a place)."""
    return f"at{round(x)}-{round(y)}"
