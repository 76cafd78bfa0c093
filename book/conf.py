"""Sphinx's configuration of the static edition (``python book/build.py`` runs Sphinx with it).

Everything a page needs is served from the site itself: the Furo theme (its icons are
inline SVG, its contents drawer opens on a phone by CSS alone), the math typeset at build
time (:mod:`book.typeset`: the pages with math load a style sheet and MathJax's TeX fonts,
copied from ``sphinx-mathjax-offline``'s files by :mod:`book.build`; no page loads
MathJax's script), the widgets' modules (``_static/mhsa-widgets.js``, the notebook's own,
as one plain script: :func:`book.build.classic`) and their loader ``mhsa-book.js`` on the
pages with a widget, and ``mhsa-keys.js`` (← / → turn the page from outside any widget).
``templates/page.html`` adds a contents button at every width and the footer's links.
Nothing is fetched from a CDN at build or at view time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from docutils import nodes

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from book.pages import REPOSITORY  # noqa: E402
from book.titles import plain  # noqa: E402

project = "Multi-head self-attention, step by step"
author = "the mhsa course"
copyright = "the mhsa course"
extensions = ["myst_nb", "book.typeset"]  # book.typeset: the math, typeset at build time
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints"]
suppress_warnings = ["myst.header"]  # a notebook's first heading may be ## (its title is #)

# The notebooks were run by book/build.py (the course's reference; the learner's stubs
# shown): Sphinx only renders them.
nb_execution_mode = "off"
nb_ipywidgets_js = {}  # no require.js or widget manager from a CDN: mhsa-book.js draws the widgets
myst_enable_extensions = ["dollarmath", "amsmath"]

html_theme = "furo"
html_title = project
html_theme_options = {
    "top_of_page_buttons": [],  # no "view source" / "edit" links: the notebooks are linked
    "navigation_with_keys": False,  # ← / → are mhsa-keys.js's: never from inside a widget
}
templates_path = [str(HERE / "templates")]
#: The footer's links (templates/page.html): the issue tracker, and the licence named as
#: the first line of the repository's LICENSE says it.
LICENSE = HERE.parent / "LICENSE"
html_context = {
    "mhsa_issues": f"https://github.com/{REPOSITORY}/issues",
    "mhsa_license": f"https://github.com/{REPOSITORY}/blob/HEAD/LICENSE",
    "mhsa_license_name": LICENSE.read_text(encoding="utf-8").splitlines()[0].strip(),
}
html_copy_source = False  # no copies of the pages' sources (their notebooks are linked)
html_show_sourcelink = False
html_show_search_summary = False  # a summary fetches each hit: refused from file://
html_static_path = [str(HERE / "static"), os.environ["MHSA_BOOK_STATIC"]]
html_extra_path = [os.environ["MHSA_BOOK_EXTRA"]]  # the student notebooks, to download
html_js_files = [("mhsa-keys.js", {"defer": "defer"})]
html_js_files.append(("mhsa-search.js", {"defer": "defer"}))  # search with context
html_css_files = ["mhsa-book.css"]
#: On a page with a widget only: the widgets' modules as one plain script, then their loader
#: (a page opened from disk draws too).
WIDGET_JS = ("mhsa-widgets.js", "mhsa-book.js")

# The math: typeset at build time by MathJax 3 run with Node.js (book/typeset.py), so the pages
# carry it as HTML and load only its style sheet and fonts, where they have math.
html_math_renderer = "mhsa"


def plain_titles(app, doctree) -> None:
    """The page's title as plain text (:func:`book.titles.plain`) wherever it is shown
    outside the page: the tab, the contents sidebar, prev/next, search. The page's own
    heading and its sections in its "On this page" keep their math (typeset on the page)."""
    docname = app.env.docname
    titles = [app.env.titles.get(docname), app.env.longtitles.get(docname)]
    toc = app.env.tocs.get(docname)  # the sidebar's entry: the first link of the page's toc
    titles += [next((r for r in toc.findall(nodes.reference) if not r["anchorname"]), None)]
    for title in filter(None, titles):
        for math in list(title.findall(nodes.math)):
            math.replace_self(nodes.Text(plain(math.astext())))


def widget_scripts(app, pagename, templatename, context, doctree) -> None:
    """The widgets' scripts on the pages that have a widget (``book/embed.py``'s div)."""
    if 'class="mhsa-book-widget"' in context.get("body", ""):
        for name in WIDGET_JS:
            app.add_js_file(name, defer="defer")


def setup(app):
    """Plain titles once a page is read (after Sphinx's own title collector); the widgets'
    scripts where they are used."""
    app.connect("doctree-read", plain_titles, priority=900)
    app.connect("html-page-context", widget_scripts)
