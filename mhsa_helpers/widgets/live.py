"""Drawing with the learner's own functions: only where their check passes, and saying so.

The explorer and the extensions' companion widgets share these: the
learner's function is drawn with only while its check passes, and the
status line and notes say whose was used and why (:func:`drawn_with`, on
:mod:`mhsa_helpers.learner`'s rule), and every widget offers its current
picture to static viewers (:func:`bundle`).

They also share one frame (:class:`Frame`) that keeps a widget on one screen:
controls in at most two compact rows, the status line, the picture and the
notes under it. Nothing is cut or scrolled: the picture takes the height
the status and the notes leave (:meth:`Frame.picture_budget`), so the whole
widget fits the notebook area of a laptop's browser window (:data:`VIEW_HEIGHT`),
and the controls above never move.
"""

from __future__ import annotations

import re
from html import escape
from types import MappingProxyType

import ipywidgets as widgets

from .. import reference as ref
from ..learner import as_html, check_sentence, warn
from . import svg

__all__ = [
    "REFERENCE",
    "REFERENCE_STATUS",
    "Frame",
    "Framed",
    "bundle",
    "compact",
    "drawn_with",
    "plain",
    "raised",
]

#: The notebook area's height in CSS px in a 1400 x 900 browser window (a viewport of
#: about 1400 x 790), JupyterLab's menus, toolbar and status bar taken off: measured.
VIEW_HEIGHT = 668
#: Heights in CSS px of a frame's parts: a row of controls, the title, a line of the
#: status and of the notes, and the gaps between the parts.
ROW_HEIGHT, TITLE_HEIGHT, STATUS_LINE, NOTES_LINE, GAPS = 36, 24, 22, 17.6, 36
#: Characters in one line of the status (14 px) and of the notes (13 px), at the
#: picture's width, counted generously (a wrapped line is a line more).
STATUS_CHARS, NOTES_CHARS = 88, 100
#: The picture appears with a short fade, so that a step reads as a change of the same place.
_STYLE = (
    "<style>@keyframes mhsa-in{from{opacity:.55}to{opacity:1}}"
    "svg.mhsa-figure{animation:mhsa-in 160ms ease-out}"
    ".mhsa-status,.mhsa-title{display:block;max-width:100%;white-space:normal;"
    "line-height:20px}"
    ".mhsa-frame .widget-html,.mhsa-frame .widget-html-content{min-width:0;max-width:100%}"
    ".mhsa-notes{font-size:13px;line-height:17.6px;overflow-wrap:normal;word-break:normal}"
    # ipywidgets 8 stacks a toggle group's label above its buttons: here they share a line
    ".mhsa-frame .widget-toggle-buttons{display:flex;align-items:center}"
    ".mhsa-frame .widget-toggle-buttons>div{display:flex;flex-wrap:nowrap}"
    ".mhsa-frame .widget-toggle-buttons .widget-label{flex:0 0 auto;margin-right:4px}"
    ".mhsa-frame .widget-toggle-button{padding:0 4px}"
    "</style>"
)


def plain(html: str) -> str:
    """The text of an HTML fragment, for a tooltip."""
    return escape(re.sub(r"<[^>]+>", "", html), quote=True)


def compact(control, width: str | None = None, label: str = "52px", button: int = 64):
    """Style ``control`` to sit in a row with others: a short label, narrow buttons.

    Toggle buttons get ``button`` CSS px each and a width that holds them all
    on one line (never squeezed by the row). Returns ``control``.
    """
    control.style.description_width = label
    if isinstance(control, widgets.ToggleButtons):
        control.style.button_width = f"{button}px"
        n = len(control.options)
        width = width or f"{int(label.removesuffix('px')) + n * (button + 4) + 8}px"
    control.layout.width = width or "auto"
    control.layout.flex = "0 0 auto"
    control.layout.margin = "2px 6px 2px 0"
    return control


class Frame:
    """A widget on one screen: controls, the status line, the picture, the notes.

    Parameters
    ----------
    rows : list of lists of widgets
        The controls, one list per row (at most two rows keep the frame short).
    title : bool
        Whether there is a title line (a step's name) above the status line.
    beside_status : list of widgets
        Widgets at the right end of the status line (e.g. a check box).
    reserve : tuple of int
        Lines of status and of notes the picture always leaves room for, so that its
        size holds while a slider moves and the notes change by a line.

    Attributes
    ----------
    status_w, figure, notes_w, title_w : ipywidgets.HTML
        The status (what drew the picture), the picture (:data:`svg.WIDTH`
        wide, as tall as it is drawn), the notes under it (why a function was
        replaced, what special values mean) and the title line (None without a
        title). Nothing in them is cut or scrolled.
    widget : ipywidgets.VBox
        The whole frame.
    """

    def __init__(self, rows, title: bool = False, beside_status=(), reserve=(2, 4)):
        self.title_w = widgets.HTML(layout=widgets.Layout(min_height=f"{TITLE_HEIGHT}px"))
        self.status_w = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.figure = widgets.HTML(layout=widgets.Layout(width=f"{svg.WIDTH}px"))
        self.notes_w = widgets.HTML(layout=widgets.Layout(width=f"{svg.WIDTH}px"))
        boxes = [
            widgets.HBox(list(r), layout=widgets.Layout(flex_flow="row nowrap", height="36px"))
            for r in rows
        ]
        self._rows = len(boxes)
        self._reserve = reserve
        self._title = title
        head = [self.title_w] if title else []
        status = self.status_w
        if beside_status:
            self.status_w.layout.width = "auto"
            self.status_w.layout.flex = "1 1 auto"
            status = widgets.HBox([self.status_w, *beside_status])
        self.widget = widgets.VBox(
            [widgets.HTML(_STYLE), *boxes, *head, status, self.figure, self.notes_w],
            layout=widgets.Layout(width=f"{svg.WIDTH + 8}px"),
        )
        self.widget.add_class("mhsa-frame")
        self._status_lines = self._notes_lines = 0

    def status(self, line: str, full: str | None = None) -> None:
        """Set the status (HTML; it wraps, never cut); ``full`` is also its tooltip."""
        tip = plain(full if full is not None else line)
        self.status_w.value = f"<div class='mhsa-status' title='{tip}'>{line}</div>"
        self._status_lines = lines_of(line, STATUS_CHARS)

    def notes(self, lines) -> None:
        """Set the notes under the picture (HTML lines; none leaves no room)."""
        lines = list(lines)
        self.notes_w.value = "<div class='mhsa-notes'>" + "<br>".join(lines) + "</div>"
        self._notes_lines = sum(lines_of(line, NOTES_CHARS) for line in lines)

    def show(self, line: str, notes, draw, full: str | None = None) -> None:
        """Status ``line``, ``notes`` and the picture ``draw(max_height)`` makes in the room
        they leave: the picture is sent first, the words right after it.

        Each part is its own message to the page; the picture, the one the learner
        waits for, does not queue behind the others.
        """
        notes = list(notes)
        self._status_lines = lines_of(line, STATUS_CHARS)
        self._notes_lines = sum(lines_of(n, NOTES_CHARS) for n in notes)
        self.figure.value = draw(self.picture_budget())
        self.status(line, full)
        self.notes(notes)

    def picture_budget(self) -> float:
        """The picture's height in CSS px that the status and notes set now leave on screen."""
        used = (
            self._rows * ROW_HEIGHT
            + (TITLE_HEIGHT if self._title else 0)
            + max(self._reserve[0], self._status_lines) * STATUS_LINE
            + max(self._reserve[1], self._notes_lines) * NOTES_LINE
            + GAPS
        )
        return float(min(svg.HEIGHT, VIEW_HEIGHT - used))


def lines_of(html: str, width: int) -> int:
    """How many lines ``html`` takes where a line holds ``width`` characters (words kept)."""
    text = re.sub(r"<[^>]+>", "", html).replace("&lt;", "<").replace("&amp;", "&")
    lines, used = 1, 0
    for word in text.split():
        if used and used + 1 + len(word) > width:
            lines, used = lines + 1, len(word)
        else:
            used += len(word) + (1 if used else 0)
    return lines


class Framed:
    """A widget laid out by a :class:`Frame` (its :attr:`frame`): its parts by name, and its
    picture offered to static viewers.
    """

    frame: Frame

    @property
    def status_w(self):
        """The status line (:attr:`Frame.status_w`)."""
        return self.frame.status_w

    @property
    def title_w(self):
        """The title line (:attr:`Frame.title_w`)."""
        return self.frame.title_w

    @property
    def figure(self):
        """The picture (:attr:`Frame.figure`)."""
        return self.frame.figure

    @property
    def notes_w(self):
        """The notes under the picture (:attr:`Frame.notes_w`)."""
        return self.frame.notes_w

    @property
    def widget(self):
        """The whole widget (:attr:`Frame.widget`)."""
        return self.frame.widget

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, plus the current picture (SVG) for static viewers.

        JupyterLab prefers the widget view; where widgets are not live (a
        rendered notebook on a website) the picture is shown instead.
        """
        return bundle(self.widget, self.figure.value, **kwargs)


#: ``functions=REFERENCE``: drawn with the course's functions, with no "yours" in the words,
#: where no learner's code can run (the static edition's pre-drawn states, book/freeze.py).
#: An empty read-only mapping: code that reads it as the learner's functions finds none.
REFERENCE = MappingProxyType({})
#: The status line of a picture drawn for :data:`REFERENCE`.
REFERENCE_STATUS = (
    "Drawn with the course's reference (a static page: no kernel runs here; open the "
    "notebook to draw with your own functions)."
)


def drawn_with(name: str, functions, cache: dict) -> tuple:
    """``(function, status line, notes)``: the learner's ``name`` where its check passes.

    The short line fits a :class:`Frame`'s status; where the learner's
    function is replaced, ``notes`` (HTML lines for :meth:`Frame.notes`)
    hold why, with the check's whole sentence. ``functions`` is read afresh
    (``globals()`` works); :data:`REFERENCE` draws with the course's and says so.
    """
    course = getattr(ref, name)
    if functions is REFERENCE:
        return course, REFERENCE_STATUS, []
    fn = dict(functions or {}).get(name)
    if not callable(fn):
        return (
            course,
            f"Drawn with the course's <code>{name}</code> (yours is not defined yet).",
            [
                f"Once your <code>{name}</code> is defined above, the next change of a "
                "control draws with it."
            ],
        )
    failed = check_sentence(name, fn, cache)
    if failed is None:
        return fn, f"Drawn with <b>your</b> <code>{name}</code> (its check passes).", []
    return (
        course,
        warn(
            f"Drawn with the course's <code>{name}</code> instead of yours "
            "(its check fails: see below)."
        ),
        [warn(f"Why not yours: the check of your <code>{name}</code> fails: {as_html(failed)}")],
    )


def raised(name: str, exc: Exception, when: str = "here") -> tuple[str, list[str]]:
    """``(status line, notes)`` when the learner's ``name`` passed its check but raised ``when``."""
    return (
        warn(
            f"Drawn with the course's <code>{name}</code> instead of yours "
            f"(yours raised {type(exc).__name__}: see below)."
        ),
        [
            warn(
                f"Why not yours: your <code>{name}</code> passes its check but, {when}, "
                f"raised {type(exc).__name__}: {escape(str(exc))}"
            )
        ],
    )


def bundle(widget, picture: str, **kwargs):
    """``widget``'s mime bundle plus ``picture`` (SVG) for viewers without live widgets."""
    out = widget._repr_mimebundle_(**kwargs)
    data = out[0] if isinstance(out, tuple) else out
    data["image/svg+xml"] = picture
    return out
