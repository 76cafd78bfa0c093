"""The static edition's math, typeset at build time: a Sphinx extension (``book/conf.py``).

Every formula is typeset once, by MathJax 3 run with Node.js (``book/typeset.cjs``, on
``sphinx-mathjax-offline``'s files), into HTML (MathJax's CommonHTML output, with its MathML
for screen readers); the page carries it, and loads only its style sheet, which names the
TeX fonts its formulas use and no other (``_static/mathjax/page-<page>.css``, on the pages
with math). No page loads MathJax's 1.2 MB script and no formula waits for it; a page
without math loads nothing of it. A formula MathJax cannot read (an undefined command, a
TeX error) is a build warning naming the page and the TeX.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.locale import _
from sphinx.util import logging
from sphinx.util.math import get_node_equation_number

from book.fonts import fonts_used, page_css

__all__ = ["CSS", "Typesetter", "mathjax_folder", "setup"]

HERE = Path(__file__).resolve().parent
#: A page's style sheet for its math, in the site's ``_static`` (beside MathJax's fonts).
CSS = "mathjax/page-{}.css"
logger = logging.getLogger(__name__)
#: The build's typesetter, started at its first formula and ended with the build.
_running: dict[str, Typesetter] = {}
#: The pages with math, and the fonts each one's formulas use.
_fonts: dict[str, frozenset[str]] = {}


def mathjax_folder() -> Path:
    """MathJax 3's files (``node-main.js``, its components and fonts), as installed by
    ``sphinx-mathjax-offline`` (requirements-site.txt)."""
    try:
        dist = distribution("sphinx-mathjax-offline")
    except PackageNotFoundError:
        raise ExtensionError(
            "sphinx-mathjax-offline is not installed: run the README's site command "
            "(it installs requirements-site.txt in .site-venv)."
        ) from None
    return Path(dist.locate_file("sphinx-mathjax-offline/static/mathjax"))


class Typesetter:
    """One Node.js process running ``typeset.cjs``, asked one formula at a time.

    Parameters
    ----------
    folder : Path
        MathJax's files (:func:`mathjax_folder`).

    Raises
    ------
    ExtensionError
        ``node`` is not on the PATH, or MathJax did not start.
    """

    def __init__(self, folder: Path):
        node = shutil.which("node")
        if node is None:
            raise ExtensionError(
                "the book's math is typeset at build time with Node.js, and `node` is not on "
                "the PATH: install Node.js (Debian: apt-get install nodejs), then build again."
            )
        self._proc = subprocess.Popen(
            [node, str(HERE / "typeset.cjs"), str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def _ask(self, question: dict) -> dict:
        self._proc.stdin.write(json.dumps(question) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise ExtensionError(f"MathJax (node typeset.cjs) stopped: {self._proc.stderr.read()}")
        return json.loads(line)

    def html(self, tex: str, display: bool) -> tuple[str, str | None]:
        """``(html, error)``: the formula typeset, and MathJax's complaint (None: none)."""
        answer = self._ask({"tex": tex, "display": display})
        return answer["html"], answer["error"]

    def css(self) -> str:
        """The style sheet for every character typeset so far (fonts relative to MathJax's
        folder)."""
        return self._ask({"css": True})["css"]

    def close(self) -> None:
        """End the node process."""
        self._proc.stdin.close()
        self._proc.wait(timeout=30)


def _typeset(node, tex: str, display: bool) -> str:
    if "node" not in _running:
        _running["node"] = Typesetter(mathjax_folder())
    html, error = _running["node"].html(tex, display)
    if error:
        logger.warning("MathJax cannot typeset %r: %s", tex, error, location=node)
    return html


def visit_math(self, node: nodes.math) -> None:
    """An inline formula: ``<span class="math">`` holding MathJax's HTML."""
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(_typeset(node, node.astext(), display=False) + "</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node: nodes.math_block) -> None:
    """A displayed formula, its number (and link) as Sphinx's MathJax renderer writes it;
    paragraphs of a block aligned together, a line break in one split, as there."""
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node.get("no-wrap", node.get("nowrap", False)):
        tex = node.astext()
    else:
        if node["number"]:
            number = get_node_equation_number(self, node)
            self.body.append(f'<span class="eqno">({number})')
            self.add_permalink_ref(node, _("Link to this equation"))
            self.body.append("</span>")
        parts = [p for p in node.astext().split("\n\n") if p.strip()]
        parts = [rf"\begin{{split}}{p}\end{{split}}" if r"\\" in p else p for p in parts]
        tex = parts[0] if len(parts) == 1 else (
            r"\begin{align}\begin{aligned}" + r"\\".join(parts) + r"\end{aligned}\end{align}"
        )  # fmt: skip
    self.body.append(_typeset(node, tex, display=True) + "</div>\n")
    raise nodes.SkipNode


def style_sheet(app, pagename, templatename, context, doctree) -> None:
    """The math's style sheet on the pages with math only: the page's own (its fonts)."""
    if context.get("has_maths_elements"):
        _fonts[pagename] = fonts_used(context.get("body", "") + context.get("toc", ""))
        app.add_css_file(CSS.format(pagename.replace("/", "-")))


def write_style_sheet(app, exception) -> None:
    """After the pages: each page's style sheet, in ``_static`` (every character typeset in
    the site, the page's fonts only)."""
    typesetter = _running.pop("node", None)
    if typesetter is None:
        return
    try:
        if exception is None and app.builder.format == "html":
            css = typesetter.css()
            for pagename, fonts in _fonts.items():
                target = Path(app.outdir) / "_static" / CSS.format(pagename.replace("/", "-"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(page_css(css, fonts), encoding="utf-8")
    finally:
        _fonts.clear()
        typesetter.close()


def setup(app):
    """Register the renderer (``html_math_renderer = "mhsa"``) and its style sheet."""
    app.add_html_math_renderer(
        "mhsa",
        inline_renderers=(visit_math, None),
        block_renderers=(visit_displaymath, None),
    )
    app.connect("html-page-context", style_sheet)
    app.connect("build-finished", write_style_sheet)
    return {"parallel_read_safe": True, "parallel_write_safe": False}
