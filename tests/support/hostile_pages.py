"""A notebook whose every student-controlled part carries script, and Chromium to look for it.

:func:`hostile_notebook` adds to a notebook one cell per route a student has
into a rendered page (markdown with raw HTML, event handlers, ``javascript:``
links, frames, SVG, MathJax; raw cells; outputs of every type and their
metadata; cell and notebook metadata; attachments). Each payload, if it ran,
would log ``ran:<name>`` on the console. :func:`look` opens a page in
Chromium with MathJax served from Debian's ``libjs-mathjax`` in place of the
CDN (every other request off this machine aborted), and reports what ran,
what in the notebook's part of the page could run (an event handler, a
``javascript:`` URL, a frame, a script that is not MathJax's) and the text
the reader sees there.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from nbformat.v4 import new_code_cell, new_markdown_cell, new_output, new_raw_cell
from playwright.sync_api import TimeoutError as PlaywrightTimeout

#: Debian's MathJax 2 (``apt-get install libjs-mathjax``), served for the CDN's.
MATHJAX = Path("/usr/share/javascript/mathjax")
#: What every payload logs when it runs.
MARK = "ran:"


def js(name: str) -> str:
    """The payload's script: one console line, single quotes only (it goes in attributes)."""
    return f"console.log('{MARK}{name}')"


def script(name: str) -> str:
    """A script element running the payload ``name``."""
    return f"<script>{js(name)}</script>"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


SVG = (
    f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"{js('svg-onload')}\">"
    f"<script>{js('svg-script')}</script><rect width='9' height='9'/></svg>"
)

#: Markdown cells: raw HTML, handlers, links, frames, SVG, parser tricks, MathJax.
MARKDOWN = {
    "md-script": f"<script>{js('md-script')}</script>",
    "md-img": f'<img src="x" onerror="{js("md-img")}">',
    "md-svg": f"<svg><script>{js('md-svg-script')}</script></svg>"
    f'<svg onload="{js("md-svg-onload")}"></svg>',
    "md-details": f'<details open ontoggle="{js("md-details")}"><summary>s</summary></details>',
    "md-body": f'<body onload="{js("md-body")}"><p>body</p></body>',
    "md-iframe": f'<iframe srcdoc="<script>{js("md-iframe")}</script>"></iframe>'
    f'<iframe src="javascript:{js("md-iframe-src")}"></iframe>',
    "md-object": f'<object data="data:text/html;base64,{b64(script("md-object"))}"></object>'
    f'<embed src="data:image/svg+xml;base64,{b64(SVG)}">',
    "md-links": f"[markdown link](javascript:{js('md-link')}) "
    f'<a href="jav&#x09;ascript:{js("md-a")}">raw link</a> '
    f'<a href="data:text/html;base64,{b64(script("md-data-link"))}">d</a>',
    "md-form": f'<form action="javascript:{js("md-form")}"><button>go</button></form>'
    f'<input autofocus onfocus="{js("md-input")}">',
    "md-meta": f'<meta http-equiv="refresh" content="0;url=javascript:{js("md-meta")}">'
    '<base href="http://marker.invalid/">',
    "md-style": f"<style>@import 'javascript:{js('md-style')}';</style>"
    f'<p style="background:url(javascript:{js("md-css")})">styled</p>',
    "md-mxss": f'<noscript><p title="</noscript><img src=x onerror={js("md-mxss")}>"></noscript>'
    f"<math><mtext><table><mglyph><style><img src=x onerror={js('md-math-tag')}>"
    f"</style></mglyph></table></mtext></math>"
    f"<!--><img src=x onerror={js('md-comment')}>-->",
    "md-mathjax": f"$\\href{{javascript:{js('md-mathjax')}}}{{click}}$ and "
    f"$$\\unicode{{<img src=x onerror={js('md-unicode')}>}}$$",
    "md-attachment": "![picture](attachment:evil.svg) ![page](attachment:evil.html)",
    "md-clobber": "# submission_id\n\n<a id='base_url' href='#x'>x</a>",
}

#: Raw cells: with nbconvert's HTML mimetype, and with none (both are written into the page).
RAW = {
    "raw-html": ("text/html", f"<script>{js('raw-html')}</script>"),
    "raw-plain": (None, f'<img src="x" onerror="{js("raw-plain")}">'),
}


def outputs() -> list:
    """Outputs of every kind and type, script in each (a code cell holds them all)."""
    html = f'<script>{js("out-html-script")}</script><img src="x" onerror="{js("out-html-img")}">'
    width = f"1 onerror={js('out-png-width')}"
    return [
        new_output("display_data", data={"text/html": html}),
        new_output(
            "display_data",
            data={"text/html": html.replace("out-html", "out-isolated")},
            metadata={"text/html": {"isolated": True}},
        ),
        new_output("display_data", data={"application/javascript": js("out-js")}),
        new_output(
            "display_data",
            data={
                "application/vnd.jupyter.widget-view+json": {
                    "model_id": "m1",
                    "version_major": 2,
                    "version_minor": 0,
                },
                "text/plain": "widget",
            },
        ),
        new_output("display_data", data={"image/svg+xml": SVG}),
        new_output("display_data", data={"text/markdown": f'<img src=x onerror="{js("out-md")}">'}),
        # A broken image: its onerror fires if the width's text reaches the tag.
        new_output(
            "display_data",
            data={"image/png": "bm90IGEgcG5n"},
            metadata={"image/png": {"width": width, "height": width.replace("width", "height")}},
        ),
        new_output(
            "display_data",
            data={"image/jpeg": "bm90IGEganBlZw=="},
            metadata={"width": width.replace("png", "jpeg"), "filenames": {"image/jpeg": "x"}},
        ),
        new_output(
            "display_data", data={"text/latex": f"$\\href{{javascript:{js('out-tex')}}}{{t}}$"}
        ),
        new_output("execute_result", data={"text/plain": f"<script>{js('out-plain')}</script>"}),
        new_output("stream", name="stdout", text=f"<script>{js('out-stream')}</script>\n"),
        new_output(
            "error",
            ename=f"<img src=x onerror={js('out-ename')}>",
            evalue=f"<script>{js('out-evalue')}</script>",
            traceback=[f"<img src=x onerror={js('out-traceback')}>"],
        ),
    ]


def widget_state() -> dict:
    """A notebook's widget state, with a closing script tag in it."""
    return {
        "application/vnd.jupyter.widget-state+json": {
            "state": {"m1": {"x": f"</script><script>{js('widget-state')}</script>"}},
            "version_major": 2,
            "version_minor": 0,
        }
    }


def hostile_notebook(nb, marked: bool = True):
    """``nb`` with every hostile cell appended; still a valid notebook (nbconvert renders no other).

    nbconvert validates a notebook after every preprocessor: an execution
    count or a cell id of text, which only an invalid notebook can carry,
    never reaches a template. With ``marked``, one cell of the student's
    carries nbgrader metadata with a grade id of HTML (nbgrader's templates
    write grade ids into the page as they are): the grade command and
    ``nbgrader autograde`` take such metadata off, the formgrader shows
    whatever ``autograded/`` holds.
    """
    nb = copy.deepcopy(nb)
    for name, source in MARKDOWN.items():
        cell = new_markdown_cell(source)
        if name == "md-attachment":
            cell["attachments"] = {
                "evil.svg": {"image/svg+xml": b64(SVG)},
                "evil.html": {"text/html": b64(f"<script>{js('attached-html')}</script>")},
            }
        nb.cells.append(cell)
    for mime, source in RAW.values():
        cell = new_raw_cell(source)
        if mime:
            cell.metadata["raw_mimetype"] = mime
        nb.cells.append(cell)
    code = new_code_cell("print('hello')", execution_count=1)
    code.outputs = outputs()
    code.metadata["tags"] = [f'x" onmouseover="{js("tag")}']
    code.metadata["alt"] = f'" onload="{js("alt")}'
    nb.cells.append(code)
    if marked:
        cell = new_markdown_cell("a cell of mine, marked as an answer")
        cell.metadata["nbgrader"] = {
            "grade": False,
            "solution": True,
            "locked": False,
            "task": False,
            "grade_id": f"<img src=x onerror={js('grade-id')}>",
            "schema_version": 3,
        }
        nb.cells.append(cell)
    nb.metadata["widgets"] = widget_state()
    nb.metadata["title"] = f"</title><script>{js('title')}</script>"
    return nb


# --------------------------------------------------------------------------- Chromium

#: What, in the notebook's part of a page, could run: found by the page's own DOM.
CHECK = """(root) => {
  const scope = document.querySelector(root) || document.body;
  const found = [];
  const urls = /^(href|src|action|formaction|data|xlink:href|background|poster|codebase)$/;
  for (const el of scope.querySelectorAll('*')) {
    const tag = el.tagName.toLowerCase();
    if (['iframe', 'frame', 'object', 'embed', 'base', 'form', 'meta', 'link', 'applet',
         'input', 'button', 'textarea', 'select', 'style', 'noscript', 'template']
        .includes(tag) && !el.closest('.panel-heading, .panel-footer')) {
      found.push(`<${tag}>`);
    }
    if (tag === 'script' && !(el.type || '').startsWith('math/tex')) {
      found.push(`<script> ${el.outerHTML.slice(0, 80)}`);
    }
    for (const a of el.attributes) {
      const name = a.name.toLowerCase();
      const value = a.value.replace(/[\\s\\u0000-\\u001f]/g, '').toLowerCase();
      if (name.startsWith('on') || name === 'srcdoc') found.push(`${tag} ${name}=`);
      if (urls.test(name) && (value.startsWith('javascript:') || value.startsWith('vbscript:')
          || (value.startsWith('data:') && !(tag === 'img' && value.startsWith('data:image/'))))) {
        found.push(`${tag} ${name}=${a.value.slice(0, 40)}`);
      }
    }
  }
  return found;
}"""


#: MathJax has typeset the page: its queue is empty and some math is shown.
TYPESET = (
    "() => window.MathJax && MathJax.Hub && MathJax.Hub.queue"
    " && MathJax.Hub.queue.pending === 0 && MathJax.Hub.queue.running === 0"
    " && document.querySelector('.MathJax_CHTML') !== null"
)


@dataclass
class Seen:
    """What Chromium saw on a page: payloads that ran, live parts left, the text shown."""

    ran: list = field(default_factory=list)
    live: list = field(default_factory=list)
    text: str = ""
    typeset: int = 0
    offsite: list = field(default_factory=list)


def _mathjax(route) -> None:
    """Serve a request for the CDN's MathJax 2 from Debian's copy; abort what is not there."""
    path = urlsplit(route.request.url).path
    rel = path.split("/mathjax/", 1)[1].split("/", 1)[1] if "/mathjax/" in path else ""
    if rel == "latest.js":
        rel = "unpacked/latest.js"
    local = MATHJAX / rel
    if rel and local.is_file():
        kind = "application/javascript" if rel.endswith(".js") else None
        route.fulfill(path=str(local), content_type=kind)
    else:
        route.abort()


def look(browser, url: str, root: str = "#notebook-container", screenshot: Path | None = None):
    """Open ``url`` in a new page of ``browser``; what ran and what is shown under ``root``."""
    seen = Seen()
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on("console", lambda m: seen.ran.append(m.text) if MARK in m.text else None)
    page.on("dialog", lambda d: (seen.ran.append(f"dialog: {d.message}"), d.dismiss()))

    def route(r):
        host = urlsplit(r.request.url).hostname or ""
        if host == "cdnjs.cloudflare.com" and "/mathjax/" in r.request.url:
            _mathjax(r)
        elif host in ("", "127.0.0.1", "localhost"):
            r.continue_()
        else:
            seen.offsite.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    try:
        page.goto(url, wait_until="load")
        # MathJax typesets after load: wait until its queue is empty (a broken page may never)
        try:
            page.wait_for_function(TYPESET, timeout=60_000)
        except PlaywrightTimeout:
            pass  # seen.typeset says how much was typeset
        page.wait_for_timeout(500)
        seen.typeset = page.locator(".MathJax_CHTML").count()
        seen.live = page.evaluate(CHECK, root)
        seen.text = page.locator(root).first.inner_text()
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=False)
    finally:
        page.close()
    return seen


# --------------------------------------------------------------------- in-process rendering


def feedback_exporter(config):
    """The ``HTMLExporter`` nbgrader's ``GenerateFeedback`` renders with, from ``config``.

    Made as nbgrader makes it (``BaseConverter.start``), with the converter's
    preprocessors but ``GetGrades``, which reads a gradebook: :func:`render`
    gives the scores instead.
    """
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import GetGrades

    converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
    exporter = HTMLExporter(parent=converter, config=converter.config)
    for step in converter.preprocessors:
        if step is not GetGrades:
            exporter.register_preprocessor(step)
    return exporter


def formgrader_exporter(course: Path):
    """The ``HTMLExporter`` of the formgrader of a Jupyter server started in ``course``.

    As nbgrader's ``load_jupyter_server_extension`` makes it (the formgrader's
    configuration read from the working directory: call it there).
    """
    from types import SimpleNamespace

    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    formgrader = FormgradeExtension()
    formgrader.root_dir = str(course)
    formgrader.initialize([])
    app = SimpleNamespace(settings={})
    formgrader.init_tornado_settings(app)
    return app.settings["nbgrader_exporter"]


def render(exporter, nb) -> str:
    """``nb`` as ``exporter`` renders it for a page, with the scores ``GetGrades`` would give."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") or meta.get("task"):
            meta["score"] = 0
    resources = {
        "nbgrader": {"notebook": "07_softmax", "score": 0, "max_score": 2, "late_penalty": 0},
        "base_url": "",
        "notebook_id": "07_softmax",
        "assignment_id": "mhsa",
        "submission_id": "s1",
        "student": "ada",
        "index": 0,
        "total": 1,
        "notebook_path": "autograded/ada/mhsa/07_softmax.ipynb",
    }
    return exporter.from_notebook_node(nb, resources=resources)[0]


#: Elements that load or run something, or send a form: none may come from a notebook.
ACTIVE = frozenset(
    {"script", "iframe", "frame", "object", "embed", "applet", "base", "form", "meta", "link"}
)
URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "data", "xlink:href", "poster"})


def active_parts(page: str) -> list[str]:
    """What in an HTML page could run or load: its scripts, handlers, frames, script URLs.

    Read by Python's HTML parser (not a browser's): :func:`look` is the browser's view.
    """
    from bs4 import BeautifulSoup

    found = []
    for el in BeautifulSoup(page, "html.parser").find_all(True):
        if el.name in ACTIVE and not (el.get("type") or "").startswith("math/tex"):
            found.append(f"<{el.name}> {el.get('src') or el.get('href') or el.get_text()[:60]}")
        for name, value in el.attrs.items():
            value = " ".join(value) if isinstance(value, list) else str(value)
            url = "".join(value.split()).lower()
            if name.startswith("on") or name == "srcdoc":
                found.append(f"{el.name} {name}={value[:60]}")
            elif name in URL_ATTRIBUTES and url.startswith(("javascript:", "vbscript:", "data:")):
                if not (el.name == "img" and url.startswith("data:image/")):
                    found.append(f"{el.name} {name}={value[:60]}")
    return sorted(found)
