"""Reading the explorer's SVG pictures in tests: cells, their tooltips, ids left out."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

_CELL = re.compile(
    r"<g class='cell ([^']*)'><rect [^>]*?fill='([^']+)'/>(?:<text [^>]*>([^<]*)</text>)?</g>"
)
#: A cell's target for the pointer and Tab (transparent, over the cell), by the cell's class.
_HIT = re.compile(r"<rect class='hit [^']*?\b(c\d+)'[^>]*?( tabindex='0')?/>")
_LINK = re.compile(r"<g class='link ([^']*)'( tabindex='0')?>")
_TIP = re.compile(r"<text class='tip (c\d+)'[^>]*>(.*?)</text>")
_LINE = re.compile(r"(?:^|<tspan [^>]*>)([^<]*)")
KEY = re.compile(r"c\d+")  # a cell's own class, which its tooltip carries too
_IDS = re.compile(r"\b(mhsa|blocked|notyet|bar)-\d+-[0-9a-f]+\b")


@dataclass
class Cell:
    """One cell of a picture: its link classes, fill, number (or None), tooltip lines."""

    links: str
    fill: str
    number: str | None
    tip: list[str]
    tab: bool

    @property
    def text(self) -> str:
        """The tooltip's lines as one sentence."""
        return " | ".join(self.tip)


def tips(picture: str) -> dict[str, list[str]]:
    """Each tooltip's lines (unescaped), by the class of the element it belongs to."""
    return {
        key: [html.unescape(t).strip() for t in _LINE.findall(body)]
        for key, body in _TIP.findall(picture)
    }


def cells(picture: str) -> list[Cell]:
    """Every cell of ``picture``, in drawing order."""
    found = tips(picture)
    tabs = dict(_HIT.findall(picture))
    out = []
    for classes, fill, number in _CELL.findall(picture):
        names = classes.split()
        key = next(n for n in names if KEY.fullmatch(n))
        links = " ".join(n for n in names if n != key)
        out.append(Cell(links, fill, number or None, found[key], bool(tabs[key])))
    return out


def links(picture: str) -> list[tuple[str, list[str]]]:
    """``(link classes, tooltip lines)`` of every line of a query's view."""
    found = tips(picture)
    out = []
    for classes, _ in _LINK.findall(picture):
        names = classes.split()
        key = next(n for n in names if KEY.fullmatch(n))
        out.append((" ".join(n for n in names if n != key), found[key]))
    return out


def without_ids(picture: str) -> str:
    """``picture`` with its drawing's own ids replaced by one name (to compare drawings)."""
    return _IDS.sub(r"\1-ID", picture)


def size(picture: str) -> tuple[int, int]:
    """The picture's width and height in CSS px."""
    w, h = re.search(r"<svg [^>]*width='(\d+)' height='(\d+)'", picture).groups()
    return int(w), int(h)


def shown(picture: str) -> list[tuple[str, str | None, tuple[str, ...]]]:
    """What ``picture``'s cells show, whatever their size: fill, number and tooltip of each.

    Two drawings of the same numbers compare equal even where the room left by the
    notes made one's cells larger.
    """
    return [(c.fill, c.number, tuple(c.tip)) for c in cells(picture)]
