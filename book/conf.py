"""Sphinx's configuration of the static edition (``python book/build.py`` runs Sphinx with it).

Everything a page needs is served from the site itself: MathJax 3 and its fonts
(copied from ``sphinx-mathjax-offline``'s files by :mod:`book.build`), the theme's
own files, the widgets' modules (``_static/mhsa-widgets.js``, the notebook's own, as one
plain script: :func:`book.build.classic`) and their loader ``mhsa-book.js``. Nothing is
fetched from a CDN at build or at view time.
"""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent

project = "Multi-head self-attention, step by step"
author = "the mhsa course"
copyright = "the mhsa course"
extensions = ["myst_nb"]
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints"]
suppress_warnings = ["myst.header"]  # a notebook's first heading may be ## (its title is #)

# The notebooks were run by book/build.py (the course's reference; the learner's stubs
# shown): Sphinx only renders them.
nb_execution_mode = "off"
nb_ipywidgets_js = {}  # no require.js or widget manager from a CDN: mhsa-book.js draws the widgets
myst_enable_extensions = ["dollarmath", "amsmath"]

html_theme = "sphinx_book_theme"
html_title = project
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "use_issues_button": False,
    "use_edit_page_button": False,
    "navigation_with_keys": True,
}
html_context = {"default_mode": "light"}  # the theme's first visit otherwise logs an error
html_copy_source = False  # no copies of the pages' sources (their notebooks are linked)
html_show_sourcelink = False
html_show_search_summary = False  # a summary fetches each hit: refused from file://
html_static_path = [str(HERE / "static"), os.environ["MHSA_BOOK_STATIC"]]
html_extra_path = [os.environ["MHSA_BOOK_EXTRA"]]  # the student notebooks, to download
# the widgets' modules as one plain script, then their loader: a page opened from disk draws too
html_js_files = [("mhsa-widgets.js", {"defer": "defer"}), ("mhsa-book.js", {"defer": "defer"})]
html_js_files.append(("mhsa-search.js", {"defer": "defer"}))  # search with context
html_css_files = ["mhsa-book.css"]

# MathJax 3, local (Sphinx 9's default is MathJax 4 from a CDN)
mathjax_path = "mathjax/tex-chtml.js"
mathjax3_config = {"options": {"enableMenu": False}}


def setup(app):
    """MathJax on every page, search and index included: the sidebar's titles have math."""
    app.set_html_assets_policy("always")
