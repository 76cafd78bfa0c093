"""What the feedback pages and the formgrader show of a notebook: text or sanitized HTML only.

Both render a student's notebook with nbconvert's ``HTMLExporter`` through
nbgrader's own templates (``feedback`` for ``GenerateFeedback``, on the grade
command's workers and in ``nbgrader generate_feedback``; ``formgrade`` for the
formgrader's submission view, in the instructor's Jupyter session). Stock, that
exporter passes a student's markdown, raw cells and outputs to the page as they
are, scripts included. The course's nbgrader configuration turns on, for every
``HTMLExporter`` nbgrader makes:

* nbconvert's ``sanitize_html``: HTML and markdown outputs go through the
  ``clean_html`` filter; JavaScript and widget outputs and the widget state are
  not written;
* :func:`clean_html` as that filter: an allow-list of harmless tags and
  attributes (bleach), URLs limited to web, mail and in-page links and images
  (never ``javascript:``), ids prefixed and classes limited to the renderers'
  own, so that no student element can stand in for one the page's own scripts
  look up;
* :class:`SafeMarkdown` as ``markdown2html``: nbgrader's templates render
  markdown cells (and a grader's comments) without nbconvert's cleaning, so
  the rendered markdown is cleaned here;
* :class:`ShowAsData`: outputs reduced to the fields and types a page shows
  (an image's size a number, never text that reaches an unquoted attribute),
  the widget state dropped, a grade id escaped.

Every other piece of a notebook reaches those templates as text that nbconvert
or nbgrader escapes (code through Pygments, streams and errors through
``ansi2html``, LaTeX escaped and typeset by MathJax with its ``Safe``
extension), or not at all.

:func:`configure` sets all of it. The course's ``nbgrader_config.py`` calls it,
and so does the ``nbgrader_config.py`` the course installs into the
environment (``etc/jupyter``), which every nbgrader of the environment reads
wherever it runs: the formgrader makes its exporter once, when the Jupyter
server starts, from the configuration it finds then.
"""

from __future__ import annotations

import html
import re

import bleach
from bleach.css_sanitizer import CSSSanitizer
from bleach.html5lib_shim import Filter
from jinja2 import pass_context
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool
from traitlets.config import LoggingConfigurable

__all__ = [
    "CLASSES",
    "ID_PREFIX",
    "SHOWN_OUTPUTS",
    "TAGS",
    "SafeMarkdown",
    "ShowAsData",
    "clean_html",
    "configure",
    "shown_output",
]

#: Tags a student's HTML (rendered markdown, raw cells, HTML outputs) may keep;
#: any other is shown as text.
TAGS = frozenset(
    {
        *("a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup"),
        *("dd", "del", "details", "div", "dl", "dt", "em", "figcaption", "figure"),
        *("h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark"),
        *("ol", "p", "pre", "q", "s", "samp", "small", "span", "strong", "sub", "summary"),
        *("sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var"),
    }
)
#: URL schemes an ``href`` or ``src`` may have (a relative or ``#`` link too).
PROTOCOLS = frozenset({"http", "https", "mailto", "data"})
#: What every id a student's HTML carries starts with (GitHub's choice): no
#: student element takes a name the page's own scripts look up (``window.x``).
ID_PREFIX = "user-content-"
#: The output types a page shows; every other (JavaScript, widgets, ...) is dropped.
SHOWN_OUTPUTS = frozenset(
    {
        *("text/plain", "text/html", "text/markdown", "text/latex"),
        *("image/png", "image/jpeg", "image/svg+xml"),
    }
)
#: The classes nbconvert's markdown and code rendering give (Pygments' token classes, its
#: block's, an anchor's, a diagram's): no other, so that no student element takes a class
#: the page's own scripts act on (the formgrader's ``tabbable``, ``nbgrader_cell``, ...).
CLASSES = re.compile(r"[a-z][a-z0-9]{0,2}|highlight|hl-[\w+-]+|anchor-link|jp-Mermaid|mermaid")
_CELL_ATTRIBUTES = {"align", "colspan", "rowspan", "style"}
_IMAGE_TYPES = ("data:image/png", "data:image/jpeg", "data:image/gif", "data:image/svg+xml")


def _allowed(tag: str, name: str, value: str) -> bool:
    """Whether the attribute ``name="value"`` may stay on ``tag`` (bleach then checks URLs)."""
    if name == "class":
        return all(CLASSES.fullmatch(word) for word in value.split())
    if name in ("id", "title"):
        return True
    url = value.strip().lower()
    if tag == "a" and name == "href":
        return not url.startswith("data:")  # a data: page opened by a click is a page of theirs
    if tag == "img":
        if name == "src":
            return not url.startswith("data:") or url.startswith(_IMAGE_TYPES)
        return name in ("alt", "width", "height")
    if tag in ("td", "th"):
        return name in _CELL_ATTRIBUTES
    return (tag, name) in {("ol", "start"), ("details", "open"), ("col", "span")}


class _PrefixIds(Filter):
    """Every ``id`` gets :data:`ID_PREFIX`, and so does every in-page link to one."""

    def __iter__(self):
        for token in super().__iter__():
            attrs = token.get("data") if token["type"] in ("StartTag", "EmptyTag") else None
            if attrs:
                for key, value in list(attrs.items()):
                    if key == (None, "id") and not value.startswith(ID_PREFIX):
                        attrs[key] = ID_PREFIX + value
                    elif key == (None, "href") and value.startswith("#"):
                        if not value.startswith("#" + ID_PREFIX):
                            attrs[key] = "#" + ID_PREFIX + value[1:]
            yield token


_CLEANER = bleach.Cleaner(
    tags=TAGS,
    attributes=_allowed,
    protocols=PROTOCOLS,
    strip=False,  # a tag that is not allowed is shown as the text the student wrote
    strip_comments=True,
    css_sanitizer=CSSSanitizer(allowed_css_properties=["text-align"]),
    filters=[_PrefixIds],
)


def clean_html(element) -> str:
    """``element`` (HTML, str or bytes) with only harmless tags, attributes and URLs.

    nbconvert's ``clean_html`` filter, with the course's allow-list: what is
    not allowed is shown as text, never run.
    """
    element = element.decode() if isinstance(element, bytes) else str(element)
    return _CLEANER.clean(element)


class SafeMarkdown(LoggingConfigurable):
    """The ``markdown2html`` filter: the exporter's own rendering, then :func:`clean_html`.

    Registered through ``HTMLExporter.filters``, it is made with the exporter
    as its parent, so attachments, anchors and code highlighting are the
    exporter's (configured) ones.
    """

    @pass_context
    def __call__(self, context, source) -> str:
        """Render ``source`` (markdown) as the exporter would, then clean it."""
        render = getattr(self.parent, "markdown2html", None)
        if render is None:
            from nbconvert.filters import markdown2html

            return clean_html(markdown2html(source))
        return clean_html(render(context, source))


# jinja looks for the flag on the callable it is given: this filter's instances.
SafeMarkdown.jinja_pass_arg = SafeMarkdown.__call__.jinja_pass_arg


def _size(value):
    """An image's width or height as an integer, or None (a student's text is not a size)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value) if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _image_metadata(meta) -> dict:
    """Of an output's metadata, only what the templates use for images, checked."""
    if not isinstance(meta, dict):
        return {}
    out = {}
    for mime in ("image/png", "image/jpeg"):
        sub = meta.get(mime)
        if isinstance(sub, dict):
            kept = {k: _size(sub.get(k)) for k in ("width", "height")}
            kept = {k: v for k, v in kept.items() if v is not None}
            if isinstance(sub.get("alt"), str):
                kept["alt"] = sub["alt"]
            if sub.get("unconfined") is True:
                kept["unconfined"] = True
            if kept:
                out[mime] = kept
    for key in ("width", "height"):
        if _size(meta.get(key)) is not None:
            out[key] = _size(meta[key])
    if isinstance(meta.get("alt"), str):
        out["alt"] = meta["alt"]
    return out


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def shown_output(out):
    """An output as a page shows it: its kind's fields only, the types of :data:`SHOWN_OUTPUTS`."""
    from nbformat import NotebookNode

    kind = out.get("output_type")
    if kind == "stream":
        name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
        return NotebookNode(output_type=kind, name=name, text=_text(out.get("text")))
    if kind == "error":
        return NotebookNode(
            output_type=kind,
            ename=_text(out.get("ename")),
            evalue=_text(out.get("evalue")),
            traceback=[_text(line) for line in out.get("traceback") or []],
        )
    if kind not in ("display_data", "execute_result"):
        return None
    data = out.get("data") if isinstance(out.get("data"), dict) else {}
    data = {k: _text(v) for k, v in data.items() if k in SHOWN_OUTPUTS}
    if not data:  # only types no page shows (JavaScript, a widget view)
        return None
    shown = NotebookNode(
        output_type=kind,
        data=NotebookNode(data),
        metadata=NotebookNode(_image_metadata(out.get("metadata"))),
    )
    if kind == "execute_result":
        count = out.get("execution_count")
        shown["execution_count"] = count if type(count) is int else None
    return shown


class ShowAsData(Preprocessor):
    """Reduce what a student controls to what the page shows, before any template sees it.

    Outputs keep their kind's fields and the types of :data:`SHOWN_OUTPUTS`
    (no JavaScript, no widget view, no file name), an image's size only as a
    number; a cell's execution count is a number or nothing; a grade id is
    escaped (nbgrader's templates write it into the page as it is); the
    notebook's widget state is dropped.
    """

    enabled = Bool(True, help="nbconvert preprocessors are off unless enabled").tag(config=True)

    def preprocess(self, nb, resources):
        """Drop the widget state, then reduce every cell."""
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        """Reduce one cell's outputs, execution count and grade id."""
        meta = cell.get("metadata", {}).get("nbgrader")
        if isinstance(meta, dict) and "grade_id" in meta:
            meta["grade_id"] = html.escape(str(meta["grade_id"]))
        if cell.get("cell_type") == "code":
            count = cell.get("execution_count")
            cell["execution_count"] = count if type(count) is int else None
            outputs = (shown_output(o) for o in cell.get("outputs") or [] if isinstance(o, dict))
            cell["outputs"] = [o for o in outputs if o is not None]
        return cell, resources


def configure(c) -> None:
    """Make every ``HTMLExporter`` that reads ``c`` render pages as this module says.

    Parameters
    ----------
    c : traitlets.config.Config
        An nbgrader configuration (``get_config()`` in an ``nbgrader_config.py``).
    """
    c.HTMLExporter.sanitize_html = True
    c.HTMLExporter.filters = {
        "clean_html": "autograders.pages.clean_html",
        "markdown2html": "autograders.pages.SafeMarkdown",
    }
    c.HTMLExporter.preprocessors = ["autograders.pages.ShowAsData"]
