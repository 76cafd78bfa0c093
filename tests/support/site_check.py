"""Open a built static site (book/build.py's ``build/site``) in headless Chromium, as a reader.

The site is served by ``python -m http.server`` on 127.0.0.1 (a free port,
polled until it answers) and opened in Debian's Chromium (Playwright, no
browser download). Every request not to loopback is aborted and recorded: the
site must work with no network. Each page is reported with what a reader
would meet: console errors and warnings, page errors, failed requests (aborted
or HTTP >= 400), off-machine requests, broken images, whether its math is
typeset (MathJax 3), its sidebar (contents) and prev/next links.

The static edition's widgets (drawn in the page by the notebook's own modules, no
kernel) are found and driven through the selectors in :data:`BOOK`, written once
here: adjust them there if the widgets' DOM changes.

Also a program, for a look by hand::

    .venv/bin/python -m tests.support.site_check build/site [pages/07_softmax.html ...]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote, urljoin, urlsplit

from tests.support.lab_harness import CHROMIUM, CHROMIUM_ARGS, free_port, stop

#: Issue 48's limits: one page with every file of the site it loads (:func:`page_files`), and
#: the front page (tests/test_site.py tests them; benchmarks/bench_site.py prints them).
PAGE_LIMIT, FRONT_LIMIT = 1_500_000, 500_000
#: Hosts that are this machine: every other request is aborted and recorded.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


@dataclass(frozen=True)
class BookSelectors:
    """Where the book's widgets' parts are (CSS selectors, Playwright's dialect).

    A widget is a ``div.mhsa-book-widget`` (book/embed.py) that the page's module
    (``front/*.js``, as in the notebook) fills with its frame (``front/frame.js``): controls
    (``.mhsa-<name>`` each: a select, toggle buttons, a range input), status, the picture
    (``svg.mhsa-figure``, ``front/draw.js``) in a box that scrolls sideways with a sign under
    it, and notes. A panel is a ``g.panel`` whose ``g.cell`` (row after row) hold a rect and
    the number shown; pointing at a cell lights (``.lit``) the cells it links and dims the
    picture (``svg.dim``).
    """

    widget: str = "div.mhsa-book-widget"
    static: str = ".mhsa-book-static"
    picture: str = "svg.mhsa-figure"
    controls: str = ".mhsa-controls"
    status: str = ".mhsa-status"
    notes: str = ".mhsa-notes"
    box: str = ".mhsa-box"
    scroll_sign: str = ".mhsa-scroll"
    next_button: str = "button:has-text('Next')"
    prev_button: str = "button:has-text('Prev')"
    slider: str = "input[type=range]"
    text: str = "input[type=text]"
    panel: str = "g.panel"
    cell: str = "g.cell"


BOOK = BookSelectors()


@dataclass(frozen=True)
class ThemeSelectors:
    """Where the theme's parts are (Furo, book/conf.py; book/templates/page.html adds the
    contents button of a wide screen and the drawer's close button): the contents (a
    drawer on a narrow screen), the buttons that show or hide them, the page's own
    contents ("On this page") and its button, prev/next, the footer."""

    sidebar: str = ".sidebar-drawer"
    sidebar_links: str = ".sidebar-drawer .sidebar-tree a.reference[href]"
    contents_buttons: str = (
        "label.nav-overlay-icon, label.mhsa-contents-button, label.mhsa-contents-close"
    )
    toc: str = ".toc-drawer"
    toc_links: str = ".toc-drawer .toc-tree a[href]"
    toc_buttons: str = "label.toc-overlay-icon"
    prev: str = ".related-pages a.prev-page"
    next: str = ".related-pages a.next-page"
    footer: str = ".main footer"
    code: str = "article pre"


THEME = ThemeSelectors()

#: TeX a reader should never see as text once MathJax has run: a control word
#: (``\frac``), a ``\(`` … ``\]`` delimiter, ``$$``, or ``$x$``.
RAW_TEX = re.compile(r"\\[A-Za-z]{2,}|\\[()\[\]]|\$\$|\$[^$\s]\$|\$[^$\s][^$\n]{0,80}?[^$\s\\]\$")
#: Math in a page's HTML as Sphinx writes it (``<span class="math …">``) or as TeX left in it.
MATH_CLASS = re.compile(r"""class=["'][^"']*\bmath\b""")


# ---------------------------------------------------------------------------- the server


@contextmanager
def serve(site: Path, timeout: float = 30.0):
    """Serve ``site`` with http.server on 127.0.0.1; yield its base URL (ending in ``/``)."""
    site = Path(site).resolve()
    if not (site / "index.html").is_file():
        raise FileNotFoundError(f"{site} has no index.html")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "-d", str(site)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + timeout
        while True:  # poll until it answers: no fixed sleep
            if proc.poll() is not None:
                raise RuntimeError(f"http.server exited with {proc.returncode} (port {port})")
            try:
                with urllib.request.urlopen(base, timeout=2) as r:
                    r.read(1)
                break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"http.server: no answer on {base} in {timeout} s") from None
                time.sleep(0.05)
        yield base
    finally:
        stop(proc)


# ---------------------------------------------------------------------------- static reading


class _Refs(HTMLParser):
    """What a page loads (img, script, link, source, SVG image) and its text outside code."""

    SKIP = frozenset({"script", "style", "pre", "code", "textarea"})

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.text: list[str] = []
        self.all_text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("img", "source") and a.get("src"):
            self.refs.append(a["src"])
        if tag == "img" and a.get("srcset"):
            self.refs += [part.split()[0] for part in a["srcset"].split(",") if part.strip()]
        if tag == "script" and a.get("src"):
            self.refs.append(a["src"])
        if tag == "link" and a.get("href"):
            rel = (a.get("rel") or "").lower().split()
            if {"stylesheet", "preload", "icon", "modulepreload", "shortcut"} & set(rel):
                self.refs.append(a["href"])
        if tag == "image":
            href = a.get("href") or a.get("xlink:href")
            if href:
                self.refs.append(href)
        if tag in self.SKIP:
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in self.SKIP and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        self.all_text.append(data)
        if not self._skip:
            self.text.append(data)


def _read(path: Path) -> _Refs:
    parser = _Refs()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser


def page_text(path: Path) -> str:
    """A page's text as a reader's browser has it before scripts run (tags gone, unescaped)."""
    return "".join(_read(path).all_text)


def page_text_of(html: str) -> str:
    """The text of a piece of HTML as a reader sees it (tags, scripts and styles gone)."""
    parser = _Refs()
    parser.feed(html)
    parser.close()
    return "".join(parser.text)


def has_math(path: Path) -> bool:
    """Whether the page's HTML has math: Sphinx's math elements, or TeX in its prose."""
    html = path.read_text(encoding="utf-8", errors="replace")
    return bool(MATH_CLASS.search(html)) or bool(RAW_TEX.search("".join(_read(path).text)))


def local_file(site: Path, page: Path, ref: str) -> Path | None:
    """The file of ``site`` that ``ref`` (written in ``page``) names, or None if not the site's."""
    parts = urlsplit(ref)
    if parts.scheme in ("data", "blob", "javascript", "mailto", "about"):
        return None
    if parts.scheme or parts.netloc:
        if parts.hostname not in LOOPBACK:
            return None
        rel = unquote(parts.path).lstrip("/")
        target = site / rel
    else:
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if unquote(parts.path).startswith("/"):
            target = site / unquote(parts.path).lstrip("/")
    target = target.resolve()
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_relative_to(site.resolve()) else None


_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)""")


def page_files(site: Path, page: Path, loaded: tuple[str, ...] = ()) -> dict[Path, int]:
    """Every file of ``site`` that ``page`` loads, with its size: the page, what it references
    (img, script, link, source, SVG image; the fonts and images its CSS files name) and
    ``loaded`` (URLs or site-relative paths the browser was seen to fetch: MathJax's fonts)."""
    site = site.resolve()
    page = page.resolve()
    files: dict[Path, int] = {page: page.stat().st_size}
    todo = [(page, ref) for ref in _read(page).refs]
    todo += [(site / "index.html", urljoin("/", u) if "://" not in u else u) for u in loaded]
    while todo:
        origin, ref = todo.pop()
        target = local_file(site, origin, ref)
        if target is None or target in files or not target.is_file():
            continue
        files[target] = target.stat().st_size
        if target.suffix == ".css":
            css = target.read_text(encoding="utf-8", errors="replace")
            todo += [(target, u) for u in _CSS_URL.findall(css)]
    return files


# ---------------------------------------------------------------------------- the browser


@dataclass
class PageReport:
    """What a reader meets on one page."""

    path: str  # site-relative, with its query if any
    seconds: float = 0.0
    console: list[str] = field(default_factory=list)  # errors and warnings
    page_errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # aborted by the browser or HTTP >= 400
    blocked: list[str] = field(default_factory=list)  # off-machine, aborted here
    broken_images: list[str] = field(default_factory=list)
    has_math: bool = False  # the HTML has math to typeset
    mathjax: bool = False  # MathJax 3 started on the page
    mjx: int = 0  # mjx-container elements after typesetting
    raw_tex: list[str] = field(default_factory=list)  # TeX left visible as text
    math_errors: list[str] = field(default_factory=list)  # MathJax's errors (mjx-merror)
    tagged: int = 0  # equations typeset with their number (\\tag), MathJax's labelled rows
    sidebar: list[str] = field(default_factory=list)  # site-relative paths, in order
    prev: str | None = None
    next: str | None = None
    loaded: list[str] = field(default_factory=list)  # site-relative files fetched
    widgets: list[str] = field(default_factory=list)  # each widget's module, and if it drew
    title: str = ""  # the tab's title
    code_cut: list[str] = field(default_factory=list)  # code blocks cut at the right

    @property
    def math_ok(self) -> bool:
        """No math, or math typeset with no TeX left visible."""
        return not self.raw_tex and (not self.has_math or self.mjx > 0)

    @property
    def console_errors(self) -> list[str]:
        """The console's errors (its warnings are kept in :attr:`console`, not counted)."""
        return [m for m in self.console if m.startswith("error:")]

    def problems(self) -> list[str]:
        """What is wrong on the page, one line each (empty: nothing). Console warnings are
        not problems here (see :attr:`console`)."""
        out = [f"console {m}" for m in self.console_errors]
        out += [f"page error {m}" for m in self.page_errors]
        out += [f"failed request {m}" for m in self.failed]
        out += [f"off-machine request {m}" for m in self.blocked]
        out += [f"broken image {m}" for m in self.broken_images]
        if self.has_math and self.mjx == 0:
            out.append(f"math not typeset (MathJax started: {self.mathjax})")
        out += [f"raw TeX visible: {t!r}" for t in self.raw_tex[:5]]
        out += [f"MathJax error: {e}" for e in self.math_errors[:5]]
        return out


_WAIT_MATH = """async (ms) => {
    const mj = window.MathJax;
    if (!(mj && mj.startup && mj.startup.promise)) return false;
    const late = new Promise((_, reject) => setTimeout(() => reject(new Error('MathJax')), ms));
    await Promise.race([mj.startup.promise, late]);
    return true;
}"""

_IMAGES = """async (ms) => {
    const broken = [];
    const until = (p) => Promise.race([p, new Promise((r) => setTimeout(r, ms))]);
    const imgs = [...document.images];
    imgs.forEach((img) => { if (img.loading === 'lazy') img.loading = 'eager'; });
    await until(Promise.all(imgs.map((img) => img.complete ? null : new Promise((r) => {
        img.addEventListener('load', r, {once: true});
        img.addEventListener('error', r, {once: true});
    }))));
    for (const img of imgs)
        if (!img.complete || img.naturalWidth === 0)
            broken.push(img.currentSrc || img.src || img.outerHTML.slice(0, 160));
    for (const im of document.querySelectorAll('svg image')) {
        const href = im.getAttribute('href') || im.getAttribute('xlink:href');
        if (!href) { broken.push('svg <image> with no href'); continue; }
        const url = new URL(href, document.baseURI).href;
        const ok = await until(new Promise((r) => {
            const probe = new Image();
            probe.onload = () => r(probe.naturalWidth > 0);
            probe.onerror = () => r(false);
            probe.src = url;
        }));
        if (ok !== true) broken.push('svg <image> ' + url.slice(0, 160));
    }
    return broken;
}"""

_VISIBLE_TEXT = """() => {
    const skip = new Set(
        ['SCRIPT', 'STYLE', 'PRE', 'CODE', 'TEXTAREA', 'MJX-CONTAINER', 'NOSCRIPT']);
    const out = [];
    const walk = (node) => {
        if (node.nodeType === Node.TEXT_NODE) { out.push(node.data); return; }
        if (node.nodeType !== Node.ELEMENT_NODE || skip.has(node.tagName)) return;
        if (node.closest('.highlight')) return;
        for (const child of node.childNodes) walk(child);
    };
    walk(document.body);
    return out.join('');
}"""

_WIDGETS = """(sel) => [...document.querySelectorAll(sel)].map((w) => w.dataset.entry + ': ' + (
    w.querySelector('.mhsa-book-static') ? 'not drawn: ' + w.innerText.trim().slice(0, 200)
    : w.querySelector('.mhsa-w svg.mhsa-figure') ? 'drawn' : 'no picture'))"""

_LINKS = """(t) => ({
    sidebar: [...document.querySelectorAll(t.sidebar_links)].map((a) => a.href),
    prev: (document.querySelector(t.prev) || {}).href || null,
    next: (document.querySelector(t.next) || {}).href || null,
})"""


class SiteChecker:
    """A served site and one headless Chromium, every off-machine request aborted.

    Use as a context manager; :meth:`check` opens a page and reports it,
    :meth:`open` gives a checked page to drive further (the widgets).
    """

    def __init__(self, site: Path, viewport: tuple[int, int] = (1400, 900), wait_ms: int = 120_000):
        self.site = Path(site).resolve()
        self.viewport = viewport
        self.wait_ms = wait_ms
        self.base = ""
        self._stack = None

    def __enter__(self) -> SiteChecker:
        from contextlib import ExitStack

        from playwright.sync_api import sync_playwright

        self._stack = ExitStack()
        try:
            self.base = self._stack.enter_context(serve(self.site))
            pw = self._stack.enter_context(sync_playwright())
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            self._stack.callback(browser.close)
            self._browser, self._contexts = browser, {}
            self.context = self._context(self.viewport, 1)
            self._current: PageReport | None = None
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def _context(self, viewport: tuple[int, int], scale: float):
        """The browser context of a screen (its viewport, its pixel ratio), made once."""
        if (viewport, scale) not in self._contexts:
            context = self._browser.new_context(
                viewport={"width": viewport[0], "height": viewport[1]},
                device_scale_factor=scale,
                service_workers="block",
            )
            context.route("**/*", self._route)
            self._contexts[viewport, scale] = context
        return self._contexts[viewport, scale]

    # where a request goes
    def _route(self, route) -> None:
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in LOOPBACK:
            if self._current is not None:
                self._current.blocked.append(url)
            route.abort("blockedbyclient")
            return
        route.continue_()

    def url(self, rel: str) -> str:
        """The served URL of a site-relative path."""
        return urljoin(self.base, rel)

    def rel(self, url: str) -> str:
        """A served URL as a site-relative path (its query and fragment dropped)."""
        if not url.startswith(self.base):
            return url
        return unquote(urlsplit(url).path).lstrip("/")

    @contextmanager
    def open(self, rel: str, viewport: tuple[int, int] | None = None, scale: float = 1):
        """Open ``rel`` (site-relative, a query allowed); yield ``(page, report)``, the report
        filled once loaded and typeset and kept up to date while the page is driven. A
        ``viewport`` (width, height) and pixel ratio ``scale`` other than the checker's: a
        phone's, a screenshot's."""
        report = PageReport(path=rel)
        page = self._context(viewport or self.viewport, scale).new_page()
        self._current = report

        def on_console(msg):
            if msg.type in ("error", "warning"):
                where = msg.location.get("url", "") if msg.location else ""
                if where in report.blocked:  # reported once, as an off-machine request
                    return
                report.console.append(f"{msg.type}: {msg.text} ({self.rel(where)})")

        def on_failed(request):
            if request.url in report.blocked:  # aborted here: reported as off-machine
                return
            report.failed.append(f"{request.url} ({request.failure})")

        def on_response(response):
            if response.status >= 400:
                report.failed.append(f"{response.url} (HTTP {response.status})")
            elif response.url.startswith(self.base):
                report.loaded.append(self.rel(response.url))

        page.on("console", on_console)
        page.on("pageerror", lambda e: report.page_errors.append(str(e)))
        page.on("requestfailed", on_failed)
        page.on("response", on_response)
        start = time.monotonic()
        try:
            page.goto(self.url(rel), wait_until="load", timeout=self.wait_ms)
            try:
                report.mathjax = page.evaluate(_WAIT_MATH, self.wait_ms)
            except Exception as e:  # MathJax never finished: the math test says so
                report.page_errors.append(f"MathJax did not finish: {e}")
            page.evaluate("() => document.fonts.ready.then(() => true)")
            try:  # late requests (MathJax's fonts, a widget's script) are reported too
                page.wait_for_load_state("networkidle", timeout=self.wait_ms)
            except Exception:
                report.page_errors.append("network not idle")
            report.broken_images = page.evaluate(_IMAGES, self.wait_ms)
            report.mjx = page.locator("mjx-container").count()
            report.math_errors = page.locator("mjx-merror").evaluate_all(
                "els => els.map((e) => e.getAttribute('data-mjx-error') || e.textContent)"
            )
            report.tagged = page.locator("mjx-mlabeledtr").count()
            report.raw_tex = RAW_TEX.findall(page.evaluate(_VISIBLE_TEXT))
            links = page.evaluate(_LINKS, asdict(THEME))
            report.sidebar = [self.rel(u) for u in links["sidebar"]]
            report.prev = self.rel(links["prev"]) if links["prev"] else None
            report.next = self.rel(links["next"]) if links["next"] else None
            path = local_file(self.site, self.site / "index.html", urlsplit(rel).path)
            report.has_math = bool(path and path.is_file() and has_math(path))
            report.widgets = page.evaluate(_WIDGETS, BOOK.widget)
            report.title = page.title()
            report.code_cut = code_cut(page)
            report.seconds = round(time.monotonic() - start, 2)
            yield page, report
        finally:
            self._current = None
            page.close()

    def check(self, rel: str) -> PageReport:
        """Open ``rel`` and report it."""
        with self.open(rel) as (_, report):
            return report

    def search(self, query: str, viewport=None) -> tuple[PageReport, list[dict]]:
        """The search page for ``query``: its report and the hits it lists, in order (see
        :func:`hits`); no hit listed once the search has said it is done: ``[]``."""
        with self.open(f"search.html?q={quote(query)}", viewport=viewport) as (page, report):
            return report, hits(page, self.wait_ms)


_HITS = """() => [...document.querySelectorAll('#search-results ul.search > li')].map((li) => {
    const link = li.querySelector('a[href]');
    const context = li.querySelector('p.context');
    return {
        title: link ? link.textContent : '', href: link ? link.href : '',
        text: li.innerText, context: context ? context.textContent : '',
        marks: [...li.querySelectorAll('mark')].map((m) => m.textContent),
        context_marks: context ? [...context.querySelectorAll('mark')].map((m) => m.textContent)
            : [],
    };
})"""


def hits(page, wait_ms: int = 120_000) -> list[dict]:
    """The hits a search page lists, in order, once it has said how many it found: each
    ``{title, href (absolute), text, context (the sentence shown), marks (every marked word
    of the hit), context_marks (those of the sentence)}``."""
    page.wait_for_selector("#search-results p.search-summary:not(:empty)", timeout=wait_ms)
    page.wait_for_function(
        "() => !/Searching|Preparing/.test("
        "document.querySelector('#search-results p.search-summary').textContent)",
        timeout=wait_ms,
    )
    return page.evaluate(_HITS)


_HIGHLIGHTED = """() => [...document.querySelectorAll('span.highlighted')].map((el) => ({
    text: el.textContent,
    where: el.closest('nav, svg, mjx-container, .mhsa-book-widget') ? 'outside the text'
        : el.closest('article, [role=main]') ? 'text' : 'elsewhere',
}))"""


def highlighted(page, wait_ms: int = 120_000) -> list[dict]:
    """The words a page opened from a search result marks (``span.highlighted``, once
    ``mhsa-search.js`` has marked them): ``{text, where}``, ``where`` being ``"text"`` (the
    page's article), ``"outside the text"`` (contents, a picture, math) or ``"elsewhere"``."""
    page.wait_for_function(
        "() => document.documentElement.dataset.mhsaHighlighted !== undefined", timeout=wait_ms
    )
    return page.evaluate(_HIGHLIGHTED)


# ---------------------------------------------------------------------------- the theme

_SHOWN = """(t) => {
    const box = document.querySelector(t.region);
    if (!box) return false;
    const r = box.getBoundingClientRect();
    if (r.width < 1 || r.right <= 1 || r.left >= innerWidth - 1) return false;
    if (getComputedStyle(box).visibility === 'hidden') return false;
    const line = (a) => a.getClientRects()[0];  // a link's first line (it may wrap)
    const link = [...document.querySelectorAll(t.links)].find((a) => {
        const q = line(a);
        return q && q.width > 0 && q.top >= 0 && q.bottom <= innerHeight;
    });
    if (!link) return false;
    const q = line(link);
    const hit = document.elementFromPoint((q.left + q.right) / 2, (q.top + q.bottom) / 2);
    return !!hit && (hit === link || link.contains(hit));
}"""


def shown(page, region: str, links: str) -> bool:
    """Whether ``region`` (the contents, the page's contents) is on the screen for a reader:
    on screen, and its first link in view is the thing a click at its middle reaches (no
    overlay or drawer over it)."""
    return page.evaluate(_SHOWN, {"region": region, "links": links})


def wait_shown(page, region: str, links: str, want: bool, timeout_ms: int = 5_000) -> bool:
    """Wait (the drawers slide in 250 ms) until :func:`shown` is ``want``; return it."""
    try:
        page.wait_for_function(
            f"(t) => ({_SHOWN})(t) === {str(want).lower()}",
            arg={"region": region, "links": links},
            timeout=timeout_ms,
        )
    except Exception:
        pass
    return shown(page, region, links)


_PRESSABLE = """(sel) => [...document.querySelectorAll(sel)].map((b, i) => {
    const r = b.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return null;
    const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    if (x < 0 || y < 0 || x > innerWidth || y > innerHeight) return null;
    const hit = document.elementFromPoint(x, y);
    return hit && (hit === b || b.contains(hit)) ? i : null;
}).filter((i) => i !== null)"""


def pressable(page, buttons: str):
    """The first of ``buttons`` a reader can see and click (on screen, nothing over it), as a
    locator; None if there is none."""
    found = page.evaluate(_PRESSABLE, buttons)
    return page.locator(buttons).nth(found[0]) if found else None


_CODE_CUT = """(sel) => {
    const view = document.documentElement.clientWidth;
    const out = [];
    for (const pre of document.querySelectorAll(sel)) {
        for (const el of [pre, pre.closest('.highlight'), pre.closest('.output')]) {
            if (!el) continue;
            const r = el.getBoundingClientRect();
            if (r.width === 0) continue;
            if (el.scrollWidth > el.clientWidth + 1 || r.right > view + 1) {
                out.push(pre.textContent.trim().split('\\n')[0].slice(0, 60)
                    + ` (${el.scrollWidth} px in ${el.clientWidth} px, right at ${r.right})`);
                break;
            }
        }
    }
    return out;
}"""


def code_cut(page) -> list[str]:
    """Code and output blocks whose lines run past their box or the screen, one line each:
    the block's first line and the widths (empty: every line wraps or fits)."""
    return page.evaluate(_CODE_CUT, THEME.code)


_CONTRAST = """(sel) => {
    const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
    const lum = ([r, g, b]) => {
        const f = (v) => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (el) => {
        for (; el; el = el.parentElement) {
            const c = rgb(getComputedStyle(el).backgroundColor);
            if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
        }
        return [255, 255, 255];
    };
    const out = [];
    for (const el of document.querySelectorAll(sel)) {
        if (!el.textContent.trim() || el.getBoundingClientRect().width === 0) continue;
        const a = lum(rgb(getComputedStyle(el).color).slice(0, 3)), b = lum(background(el));
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        out.push([el.textContent.trim().slice(0, 40), ratio]);
    }
    return out;
}"""


def contrast(page, selector: str) -> list[tuple[str, float]]:
    """``(text, contrast ratio)`` of each element of ``selector`` with text: its colour against
    the first opaque background behind it (WCAG's ratio, 1 to 21)."""
    return [tuple(x) for x in page.evaluate(_CONTRAST, selector)]


# ---------------------------------------------------------------------------- the widgets


def picture_png(page, widget) -> bytes:
    """A screenshot of ``widget``'s picture (animations finished).

    A widget may draw its picture anew at any moment (a change of the colour scheme, a
    font loaded): a picture replaced between being found and being shot is found again.
    """
    from playwright.sync_api import Error  # imported where a browser runs, as above

    for attempt in range(5):
        picture = widget.locator(BOOK.picture).first
        picture.wait_for(state="visible", timeout=10_000)
        try:
            picture.scroll_into_view_if_needed()
            return picture.screenshot(animations="disabled")
        except Error as error:
            if "not attached to the DOM" not in str(error) or attempt == 4:
                raise
    raise AssertionError("unreachable")


def widgets(page, with_control: str | None = None):
    """The page's widgets (a Playwright locator), those holding ``with_control`` if given."""
    loc = page.locator(BOOK.widget)
    return loc.filter(has=page.locator(with_control)) if with_control else loc


def control(widget, name: str):
    """The input of ``widget``'s control ``name`` (``front/frame.js``: ``.mhsa-<name>``)."""
    return widget.locator(f".mhsa-{name}").locator("select, input, .mhsa-toggle").first


def choose(widget, name: str, value) -> None:
    """Set control ``name`` as a reader would: a select's option, a toggle's button (by its
    label), a slider's position (the index of ``value`` among its options' labels)."""
    box = widget.locator(f".mhsa-{name}").first
    kind = box.evaluate(
        "(b) => b.querySelector('select') ? 'select' : b.querySelector('.mhsa-toggle') ? "
        "'toggle' : 'slider'"
    )
    if kind == "select":
        box.locator("select").select_option(str(value))
    elif kind == "toggle":
        box.locator("button", has_text=re.compile(rf"^{re.escape(str(value))}$")).click()
    else:
        slider = box.locator("input[type=range]")
        for _ in range(int(slider.get_attribute("max")) + 1):  # arrows, as a keyboard moves it
            shown = box.locator("output").text_content()
            if shown == str(value):
                return
            want = int(value) > int(shown) if shown.isdigit() else True
            slider.press("ArrowRight" if want else "ArrowLeft")
        raise AssertionError(f"{name}: no position shows {value}")


def step_once(page, widget) -> str:
    """Move ``widget`` one step on (Next, else its step slider); say how."""
    nxt = widget.locator(BOOK.next_button)
    if nxt.count() and nxt.first.is_enabled():
        nxt.first.click()
        return "Next button"
    return nudge(widget.locator(f".mhsa-step {BOOK.slider}").first)


def nudge(control) -> str:
    """Change an input (range, number) or a select by one, as a reader's keyboard would."""
    tag = control.evaluate("(e) => e.tagName")
    if tag == "SELECT":
        n, i = control.evaluate("(s) => [s.options.length, s.selectedIndex]")
        control.select_option(index=(i + 1) % n)
        return "select"
    before = control.input_value()
    control.focus()
    control.press("ArrowRight")
    if control.input_value() == before:  # at its end: the other way
        control.press("ArrowLeft")
    return f"input {before} -> {control.input_value()}"


_PANELS = """(svg) => [...svg.querySelectorAll('g.panel')].map((p) => ({
    title: [...p.children].filter((e) => e.tagName === 'text').pop().textContent,
    cells: [...p.querySelectorAll('g.cell')].map((c) => {
        const t = c.querySelector('text');
        const fill = c.querySelector('rect').getAttribute('fill');
        return [t ? t.textContent : null, fill, c.getAttribute('aria-label')];
    }),
}))"""


def panels(widget) -> list[dict]:
    """The panels ``widget``'s picture draws: ``{title, cells: [[number text or None, fill,
    label]]}``, cells row after row (a hatched cell's fill is ``url(#…-blocked)``; the label,
    what a screen reader and the tooltip say, ends its first sentence with ``= value`` to 4
    decimals)."""
    return widget.locator(BOOK.picture).first.evaluate(_PANELS)


def number(text: str) -> float:
    """A number as a cell shows it (a true minus)."""
    return float(text.replace("\u2212", "-"))


def hover_lights_query_and_key(page, widget) -> dict:
    """Point at an attention cell (its tip names a query and a key) of ``widget``'s picture.

    Returns ``{"lit": cells lit at full opacity, "dimmed": the others dimmed, "tip": the
    tooltip's text}``.
    """
    picture = widget.locator(BOOK.picture).first
    cell = picture.locator(f"{BOOK.cell}[aria-label*='query'][aria-label*='key']").nth(3)
    cell.scroll_into_view_if_needed()
    page.mouse.move(1, 1)
    cell.hover()
    settled = """(svg) => {
        const cells = [...svg.querySelectorAll('g.cell')];
        const op = (c) => parseFloat(getComputedStyle(c).opacity);
        const lit = cells.filter((c) => c.classList.contains('lit'));
        const rest = cells.filter((c) => !c.classList.contains('lit'));
        return svg.classList.contains('dim') && lit.length > 1 && rest.length > 0
            && lit.every((c) => op(c) > 0.98) && rest.every((c) => op(c) < 0.9);
    }"""
    try:
        page.wait_for_function(settled, arg=picture.element_handle(), timeout=5_000)
        lit = dimmed = True
    except Exception:
        lit = dimmed = False
    tip = widget.locator(".mhsa-tip").first
    return {"lit": lit, "dimmed": dimmed, "tip": tip.text_content() if tip.is_visible() else ""}


_FIT = """(root) => {
    const px = (r) => [Math.floor(r.left), Math.ceil(r.right)];
    const view = document.documentElement.clientWidth;
    const controls = [...root.querySelectorAll('.mhsa-controls > *')]
        .map((c) => c.getBoundingClientRect()).filter((r) => r.width > 0).map(px);
    const svg = root.querySelector('svg.mhsa-figure');
    const box = root.querySelector('.mhsa-box');
    const sign = root.querySelector('.mhsa-scroll');
    const scale = svg ? svg.getBoundingClientRect().width / svg.width.baseVal.value : 1;
    const sizes = svg ? [...svg.querySelectorAll('g.cell text')].map(
        (t) => parseFloat(t.getAttribute('font-size')) * scale) : [];
    return {
        view, page: document.documentElement.scrollWidth, controls,
        widget: px(root.getBoundingClientRect()),
        smallest: sizes.length ? Math.min(...sizes) : null, numbers: sizes.length,
        picture: svg ? svg.width.baseVal.value : 0, box: box.clientWidth,
        scrolls: box.scrollWidth > box.clientWidth + 1,
        sign: !!sign && !sign.hidden && getComputedStyle(sign).visibility !== 'hidden'
            && sign.getBoundingClientRect().height > 0,  // kept in place, hidden, when not true
    };
}"""


def fit(widget) -> dict:
    """How ``widget`` sits on the screen: ``{view, page}`` (the viewport's and the page's
    widths), ``controls`` and ``widget`` ([left, right] in px), ``smallest`` (the smallest
    number's font size on screen, px), ``picture`` and ``box`` (widths), ``scrolls`` (the box
    scrolls sideways), ``sign`` (the sign saying so is shown)."""
    return widget.evaluate(_FIT)


def control_changes_picture(page, widget, act) -> dict:
    """Do ``act(widget)`` (a control's change); whether the picture's pixels changed."""
    before = picture_png(page, widget)
    how = act(widget)
    deadline = time.monotonic() + 10
    after = picture_png(page, widget)
    while after == before and time.monotonic() < deadline:  # a page script redraws
        page.wait_for_timeout(100)
        after = picture_png(page, widget)
    return {"how": how, "changed": after != before}


# ---------------------------------------------------------------------------- by hand

#: The screens of the screenshots for a human (issue 48), and the pages shown.
SHOT_SCREENS = ((1400, 900), (800, 1000), (390, 844))
SHOT_PAGES = ("index.html", "pages/05_scores.html", "pages/17_backward.html")


def screenshots(site: Path, out: Path, colors: int = 64) -> list[Path]:
    """The front page, 05 and 17 at 1400 x 900, 800 x 1000 and 390 x 844, the contents as
    the page opens and after a click on the contents button (shown, hidden), as small PNGs
    (``colors`` colours) in ``out``; 16's widget in dark mode too. Returns the files."""
    from PIL import Image

    out.mkdir(parents=True, exist_ok=True)
    made = []

    def shot(page, name):
        path = out / f"{name}.png"
        page.screenshot(path=str(path), animations="disabled")
        Image.open(path).convert("RGB").quantize(colors=colors).save(path, optimize=True)
        made.append(path)

    with SiteChecker(site) as checker:
        for (w, h), rel in [(s, r) for s in SHOT_SCREENS for r in SHOT_PAGES]:
            name = Path(rel).stem
            with checker.open(rel, viewport=(w, h)) as (page, _):
                before = shown(page, THEME.sidebar, THEME.sidebar_links)
                shot(page, f"{name}_{w}x{h}_contents_{'shown' if before else 'hidden'}")
                pressable(page, THEME.contents_buttons).click()
                after = wait_shown(page, THEME.sidebar, THEME.sidebar_links, not before)
                shot(page, f"{name}_{w}x{h}_contents_{'shown' if after else 'hidden'}")
        for rel in ("pages/16_sliding_window.html", "pages/18_training.html"):
            if (site / rel).is_file():
                with checker.open(rel, viewport=(1400, 900)) as (page, _):
                    page.emulate_media(color_scheme="dark")
                    page.locator(BOOK.widget).first.scroll_into_view_if_needed()
                    shot(page, f"{Path(rel).stem}_1400x900_dark")
    return made


def main(argv: list[str]) -> None:
    """Report a site's index, its pages (or those named) and its search, as JSON; with
    ``--shots DIR``, take :func:`screenshots` into DIR instead."""
    if "--shots" in argv:
        at = argv.index("--shots")
        for path in screenshots(Path(argv[0]).resolve(), Path(argv[at + 1])):
            print(path, f"{path.stat().st_size / 1e3:.0f} kB")
        return
    site = Path(argv[0]).resolve()
    pages = argv[1:] or [
        "index.html",
        *sorted(
            p.relative_to(site).as_posix()
            for p in site.rglob("*.html")
            if not {"_static", "_sources", "_images"} & set(p.parts)
            and p.name not in ("index.html", "search.html", "genindex.html")
        ),
    ]
    out = {}
    with SiteChecker(site) as checker:
        for rel in pages:
            report = checker.check(rel)
            out[rel] = asdict(report) | {"problems": report.problems()}
            out[rel].pop("loaded")
        report, found = checker.search("softmax")
        out["search"] = {"results": [h["title"] for h in found], "problems": report.problems()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
