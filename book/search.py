"""The search's data: each page's sections and their sentences, read from the built site.

Run after Sphinx (:func:`write`, called by ``book/build.py``): every page of the site
(``index.html`` and ``pages/*.html``; not the search page, the general index or the theme's
files) is read as the reader sees it, section by section (Sphinx's ``<section id=…>``, its
heading, and the prose in it: paragraphs, list items, table cells). The code cells, their
outputs, the widgets, the links box under the title and display math are left out; inline
math is written as plain text (:func:`tex_to_text`: ``\\sqrt{d_k}`` as ``√d_k``), so a
snippet never shows TeX. The result is ``_static/mhsa-search-data.js``, a plain script
setting ``window.mhsaSearchData`` (as Sphinx's ``searchindex.js`` calls
``Search.setIndex``): ``static/mhsa-search.js`` loads it with a ``<script>`` tag on the
search page only, so the search works from a page opened from disk (``file://``, where a
browser refuses ``fetch``) and no other page carries its weight. Nothing is lost from
disk (checked in Chromium by tests/test_site.py: the hits, their sentences and the words
marked on the page opened).

The data::

    {"pages": [[url, title], ...],
     "sections": [[page, anchor, heading, [sentence, ...]], ...]}

``page`` is an index into ``pages``, ``url`` is site-relative, ``anchor`` the section's id
(``""`` for the page's first section, its title). Ranking, stemming and snippets are the
page's job (``static/mhsa-search.js``, tested under ``node --test``).
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

#: Where the data goes in the site, and the global it sets.
DATA = "_static/mhsa-search-data.js"
GLOBAL = "mhsaSearchData"
#: Pages of the site that are not the course's text.
NOT_PAGES = frozenset({"search.html", "genindex.html", "py-modindex.html"})
NOT_FOLDERS = frozenset({"_static", "_sources", "_images", "notebooks"})

#: Elements whose whole content is left out: code cells and their outputs, the widgets,
#: the links box, the "#" after a heading, navigation (and display math, a ``div.math``).
SKIP_CLASSES = frozenset(
    {"cell", "mhsa-book-links", "mhsa-book-widget", "headerlink", "toctree-wrapper"}
)
SKIP_TAGS = frozenset({"script", "style", "nav", "pre", "template", "noscript", "svg", "button"})
#: Elements whose text is one block of prose (split into sentences).
BLOCKS = frozenset({"p", "li", "dt", "dd", "td", "th", "caption", "figcaption"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
VOID = frozenset({"br", "img", "input", "hr", "meta", "link", "wbr", "col", "source", "area"})

#: TeX commands written as the symbol a reader knows.
SYMBOLS = {
    "infty": "∞", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠",
    "cdot": "·", "times": "×", "ell": "ℓ", "sum": "Σ", "prod": "Π", "partial": "∂",
    "dots": "…", "ldots": "…", "cdots": "…", "top": "ᵀ", "to": "→", "rightarrow": "→",
    "leftarrow": "←", "in": "∈", "approx": "≈", "sim": "~", "mid": "|", "pm": "±",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "eta": "η",
    "theta": "θ", "lambda": "λ", "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ",
    "phi": "φ", "omega": "ω", "Delta": "Δ", "Sigma": "Σ", "odot": "⊙", "otimes": "⊗",
    "lVert": "‖", "rVert": "‖", "Vert": "‖", "lvert": "|", "rvert": "|", "prime": "′",
    "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "langle": "⟨", "rangle": "⟩",
}  # fmt: skip
#: Symbols written with a space after them where the TeX has one (``j \le i``); after any
#: other command a space only ends its name (``\partial a`` is ``∂a``).
SPACED = frozenset({"le", "leq", "ge", "geq", "ne", "neq", "cdot", "times", "to", "rightarrow",
                    "leftarrow", "in", "approx", "sim", "mid", "pm", "odot", "otimes", "dots",
                    "ldots", "cdots"})  # fmt: skip
#: Commands that only space or size: dropped (their spacing kept as one space).
SPACING = frozenset({"quad", "qquad", ",", ";", ":", " ", "!", "left", "right", "big", "Big"})
#: Commands whose one argument is shown as it is (``\operatorname{softmax}`` → ``softmax``).
AS_IS = frozenset(
    {"text", "operatorname", "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "textbf",
     "textit", "boldsymbol", "bm", "mathcal", "mathbb", "hat", "tilde", "bar", "vec"}
)  # fmt: skip


def _group(tex: str, at: int) -> tuple[str, int]:
    """The argument of a command at ``at`` (``{…}`` with nesting, or one character) and
    where it ends."""
    while at < len(tex) and tex[at] == " ":
        at += 1
    if at >= len(tex):
        return "", at
    if tex[at] != "{":
        if tex[at] == "\\":
            name = re.match(r"\\([A-Za-z]+|.)", tex[at:])
            return name.group(0), at + len(name.group(0))
        return tex[at], at + 1
    depth = 0
    for i in range(at, len(tex)):
        depth += {"{": 1, "}": -1}.get(tex[i], 0)
        if depth == 0:
            return tex[at + 1 : i], i + 1
    return tex[at + 1 :], len(tex)


def tex_to_text(tex: str) -> str:
    """Inline TeX as plain text a reader can read: ``\\sqrt{d_k}`` → ``√d_k``,
    ``QK^\\top`` → ``QKᵀ``, ``\\frac{a}{b}`` → ``a/b``, ``d_{model}`` → ``d_model``,
    ``\\operatorname{softmax}(x)`` → ``softmax(x)``, ``-\\infty`` → ``−∞``. No backslash
    command is left (an unknown one loses its backslash)."""
    tex = tex.strip()
    if tex.startswith("\\(") and tex.endswith("\\)"):
        tex = tex[2:-2]
    out, i = [], 0
    while i < len(tex):
        ch = tex[i]
        if ch == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", tex[i:])
            name, i = m.group(1), i + len(m.group(0))
            if name.isalpha() and name not in SPACED:
                while i < len(tex) and tex[i] == " ":
                    i += 1
            if name in SPACING:
                out.append(" ")
            elif name in SYMBOLS:
                out.append(SYMBOLS[name])
            elif name in AS_IS:
                arg, i = _group(tex, i)
                out.append(tex_to_text(arg))
            elif name == "sqrt":
                arg, i = _group(tex, i)
                inner = tex_to_text(arg)
                out.append("√" + (inner if len(inner) <= 1 or "_" in inner else f"({inner})"))
            elif name in ("frac", "dfrac", "tfrac"):
                top, i = _group(tex, i)
                bottom, i = _group(tex, i)
                a, b = tex_to_text(top), tex_to_text(bottom)
                wrap = lambda s: s if re.fullmatch(r"[\w√ᵀ′.]+", s) else f"({s})"  # noqa: E731
                out.append(f"{wrap(a)}/{wrap(b)}")
            elif name in ("{", "}", "_", "%", "#", "&", "$"):
                out.append(name)
            else:
                out.append(name)
        elif ch in "^_":
            arg, i = _group(tex, i + 1)
            inner = tex_to_text(arg)
            if ch == "^" and inner in ("ᵀ", "′"):
                out.append(inner)
            elif len(inner) <= 1 or re.fullmatch(r"\w+", inner):
                out.append(ch + inner)
            else:
                out.append(f"{ch}({inner})")
        elif ch in "{}":
            i += 1
        elif ch == "-":
            out.append("−")
            i += 1
        elif ch == "~":
            out.append(" ")
            i += 1
        else:
            out.append(ch)
            i += 1
    text = "".join(out)
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+([,)])", r"\1", text)


#: Where a paragraph is cut into sentences: after . ! or ? (and a closing bracket or quote)
#: and a space, before a capital, a digit, a quote or a bracket (so "e.g. the" and "0.5 of"
#: stay whole).
SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][)\]”’\"]))\s+(?=[A-Z0-9\"“‘(\[])")
#: A sentence longer than this is kept whole, the snippet shows the part that matched.
MAX_SENTENCE = 600


def sentences(text: str) -> list[str]:
    """A block of prose, whitespace collapsed, as its sentences."""
    text = " ".join(text.split())
    return [s for s in SENTENCE_END.split(text) if s] if text else []


@dataclass
class Section:
    """One section of a page: its anchor (``id``), its heading and its sentences."""

    anchor: str
    heading: str = ""
    sentences: list[str] = field(default_factory=list)


class _Reader(HTMLParser):
    """A page's sections in document order (each with the prose directly in it)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self._open: list[tuple[str, bool, Section | None]] = []  # tag, skips, section opened
        self._current: list[Section] = []  # the sections we are in
        self._skip = 0
        self._block: list[str] | None = None  # the prose block or heading being read
        self._heading = False
        self._math: list[str] | None = None

    # a block's text goes to the innermost section
    def _flush(self) -> None:
        if self._block is not None and self._current:
            text = "".join(self._block)
            if self._heading:
                if not self._current[-1].heading:
                    self._current[-1].heading = " ".join(text.split())
            else:
                self._current[-1].sentences += sentences(text)
        self._block = None
        self._heading = False

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            if tag == "br" and self._block is not None:
                self._block.append(" ")
            return
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        skips = tag in SKIP_TAGS or bool(classes & SKIP_CLASSES)
        if tag == "span" and "math" in classes and not self._skip:
            self._math = []  # inline math: read as plain text
        elif tag == "div" and "math" in classes:
            skips = True  # display math: not a sentence
        section = None
        if tag == "section" and not self._skip:
            self._flush()
            section = Section(anchor=a.get("id") or "")
            self.sections.append(section)
            self._current.append(section)
        elif not self._skip and (tag in BLOCKS or tag in HEADINGS):
            self._flush()
            self._block, self._heading = [], tag in HEADINGS
        self._open.append((tag, skips, section))
        self._skip += skips

    def handle_endtag(self, tag):
        if tag in VOID or not any(t == tag for t, _, _ in self._open):
            return
        while self._open:
            name, skips, section = self._open.pop()
            self._skip -= skips
            if name == "span" and self._math is not None and not self._skip:
                if self._block is not None:
                    self._block.append(tex_to_text("".join(self._math)))
                self._math = None
            if (name in BLOCKS or name in HEADINGS) and not self._skip:
                self._flush()
            if section is not None:
                self._flush()
                self._current.remove(section)
            if name == tag:
                break

    def handle_data(self, data):
        if self._skip:
            return
        if self._math is not None:
            self._math.append(data)
        elif self._block is not None:
            self._block.append(data)


def page_sections(html: str) -> list[Section]:
    """The sections of a page's HTML with a heading or a sentence, in order; the first one's
    heading is the page's title."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return [s for s in reader.sections if s.heading or s.sentences]


def site_pages(site: Path) -> list[Path]:
    """The site's pages to search, the front page first, then by path (course order)."""
    found = [
        p
        for p in site.rglob("*.html")
        if p.name not in NOT_PAGES and not NOT_FOLDERS & set(p.relative_to(site).parts[:-1])
    ]
    return sorted(found, key=lambda p: (p.relative_to(site) != Path("index.html"), str(p)))


def data(site: Path) -> dict:
    """The search data of a built site (see the module's docstring)."""
    pages, sections = [], []
    for path in site_pages(site):
        found = page_sections(path.read_text(encoding="utf-8"))
        if not found:
            continue
        index = len(pages)
        pages.append([path.relative_to(site).as_posix(), found[0].heading])
        for n, s in enumerate(found):
            anchor = "" if n == 0 else s.anchor
            sections.append([index, anchor, s.heading, [x[:MAX_SENTENCE] for x in s.sentences]])
    return {"pages": pages, "sections": sections}


def write(site: Path) -> str:
    """Write the search data of the site at ``site`` into its ``_static/``; returns one line
    saying how much it holds and weighs (plain and gzipped)."""
    found = data(site)
    text = json.dumps(found, ensure_ascii=False, separators=(",", ":"))
    code = f"window.{GLOBAL} = {text};\n".encode()
    target = site / DATA
    target.write_bytes(code)
    packed = len(gzip.compress(code, compresslevel=9, mtime=0))
    n = sum(len(s[3]) for s in found["sections"])
    return (
        f"search data: {len(found['pages'])} pages, {len(found['sections'])} sections, "
        f"{n} sentences, {len(code) / 1e3:.0f} kB ({packed / 1e3:.0f} kB gzipped)"
    )
