"""The static web edition as a reader meets it: built once with the README's site command, with
no network, then opened in headless Chromium with every off-machine request aborted.

Each property is checked once, over every page: the pages are there in course order, load
cleanly offline (no console error, no failed or off-machine request, no broken image, math
typeset), publish no solution, link the student notebook and Binder, search works, the sizes
stay small (every page under 1.5 MB with what it loads, the front page under 0.5 MB), the
contents open and close at every width, ← / → turn the page only from outside a widget,
titles are plain text, long pages have their own contents, no code is cut at the right, the
footer links the issue tracker and the licence, and the widgets, drawn in the page by the
notebook's own modules with no kernel, respond and draw numpy's numbers, at 1400 x 790 and
on a 390 x 844 phone, and stay readable in dark mode. Screenshots for a human:
``test-output/site/`` (ignored by git).

``MHSA_SITE=path/to/html`` checks a site already built there instead of building one (for
work on the checks; tests/support/site_check.py is the checker).
"""

from __future__ import annotations

import hashlib
import html
import itertools
import json
import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import asdict
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from book.embed import STATIC_LINE
from book.pages import REPOSITORY
from mhsa_helpers.examples import EXAMPLES, get_example
from mhsa_helpers.exercises import NOTEBOOKS as COURSE
from tests.support import site_check as sc

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "notebooks" / "mhsa"
SOLUTIONS = ROOT / "solutions" / "mhsa"
NOTEBOOKS = [nb.stem for nb in COURSE]  # the registry's course order: 00 … 18
OUT = ROOT / "test-output" / "site"
BINDER = "https://mybinder.org/v2/gh/mhsa-course/mhsa-course/HEAD?urlpath=lab/tree/notebooks/mhsa/"
COLAB = "https://colab.research.google.com/github/mhsa-course/mhsa-course/blob/main/notebooks/mhsa/"
#: Pages with the explorer, and with an extension's widget (every state computed at build time).
EXPLORER_PAGES = tuple(
    nb.stem for nb in COURSE if "explorer" in nb.widgets and nb.kind != "training"
)  # the registry's; 18 trains a model and is checked on its own
PANELS_PAGES = tuple(nb.stem for nb in COURSE if nb.kind == "extension" and nb.widgets)
#: The training notebooks' pages with widgets (18: the reversal model; 19: the induction model).
TRAINING_PAGES = tuple(nb.stem for nb in COURSE if nb.kind == "training" and nb.widgets)
#: A laptop's browser window, a tablet and a phone (CSS px).
WIDE, TABLET, PHONE = (1400, 790), (800, 1000), (390, 844)
SCREENS = (WIDE, PHONE)
#: Limits: one page with every site file it loads, the front page (issue 48); the whole site.
PAGE_LIMIT, FRONT_LIMIT, SITE_LIMIT = sc.PAGE_LIMIT, sc.FRONT_LIMIT, 80_000_000
#: The project's issue tracker, which every page's footer links.
ISSUES = f"https://github.com/{REPOSITORY}/issues"
#: Solution lines shorter than this are too common to mean anything (``return out``).
TRIVIAL = 12
MARKERS = re.compile(r"^\s*###\s*(BEGIN|END)\s+(SOLUTION|HIDDEN TESTS)\b")
MATH_SOURCE = re.compile(r"\$[^$\n]+\$|\\\(|\\\[|\\begin\{")


# ---------------------------------------------------------------------------- building


def site_command(readme: str) -> str:
    """The command on the first line of the fenced block after ``<!-- site-command -->``
    (read as .ci/run reads the test command)."""
    lines = readme.splitlines()
    try:
        at = next(i for i, line in enumerate(lines) if line.strip() == "<!-- site-command -->")
    except StopIteration:
        raise AssertionError("README.md has no <!-- site-command --> marker") from None
    fence, command = [*lines[at + 1 : at + 3], "", ""][:2]
    assert fence.startswith("```") and command.strip(), (
        "README.md: <!-- site-command --> is not followed by a fenced block with a command"
    )
    return command.strip()


def split_command(command: str) -> tuple[str | None, str]:
    """``(setup, build)``: everything before the last ``&&`` (make the environment, needs the
    package registry) and the build after it (needs no network)."""
    parts = [p.strip() for p in command.split("&&")]
    assert all(parts) and command.count("'") % 2 == 0 and command.count('"') % 2 == 0, command
    return (" && ".join(parts[:-1]) or None), parts[-1]


def _offline_prefix() -> list[str]:
    """The words that run a command in a new network namespace with loopback only; skips the
    test (with the reason) where that cannot be made."""
    prefix = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    if not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("no offline build: unshare (util-linux) or ip (iproute2) is missing")
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
    if probe.returncode:
        pytest.skip(f"no offline build: `unshare -rn` fails here: {probe.stderr.strip()}")
    return prefix


def _setup_stamp(setup: str) -> str:
    """What the environment was made from: the setup command and the requirements."""
    h = hashlib.sha256(setup.encode())
    for name in [*sorted(p.name for p in ROOT.glob("requirements*.txt")), "pyproject.toml"]:
        h.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    return h.hexdigest()


def _run(words: list[str], what: str, timeout: float) -> None:
    r = subprocess.run(
        words, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=timeout,
    )  # fmt: skip
    if r.returncode:
        pytest.fail(f"{what} failed ({r.returncode}):\n{r.stdout[-6000:]}", pytrace=False)


def site_environment(setup: str | None) -> Path:
    """The site environment (``.site-venv``), made by the README's site command's ``setup``
    part only when it is not already made from the same command and requirements (a stamp
    in it, written after a setup that succeeded: an install cut short, or new pins, runs
    the setup again). Returns its folder (tests/test_book.py builds with it too)."""
    venv = re.search(r"-m\s+venv\s+(\S+)", setup or "")
    folder = ROOT / (venv.group(1) if venv else ".site-venv")
    if setup:
        stamp = folder / ".mhsa-setup-stamp"
        want = _setup_stamp(setup)
        if not stamp.is_file() or stamp.read_text() != want:
            stamp.unlink(missing_ok=True)
            _run(["bash", "-c", setup], f"the site's setup ({setup})", timeout=1800)
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(want)
    return folder


@pytest.fixture(scope="module")
def site() -> Path:
    """The site, built once with the README's site command: its ``build/site``.

    The command makes an environment (``python3 -m venv .site-venv && …pip install…``),
    then builds (the part after the last ``&&``). The build must need no network (a site
    that fetches a theme or runs notebooks against a server at build time is a site CI
    cannot rebuild), so it runs in a network namespace of its own with loopback only
    (``unshare -rn``, no root needed). pip does need the package registry, so the setup
    part runs first, with the network, and only when the environment is not already made
    from the same command and requirements (a stamp in it, written after a setup that
    succeeded: an install cut short, or new pins, runs the setup again). Building into a
    temporary copy would mean a new environment each time (minutes of pip); the command
    runs in the repository, as a reader would run it, writing ``build/site`` (removed
    first, so no earlier build is checked) and ``.site-venv`` (both ignored by git).
    Where ``unshare -rn`` cannot run, the tests are skipped, saying why.
    """
    given = os.environ.get("MHSA_SITE")
    if given:
        return Path(given).resolve()
    setup, build = split_command(site_command((ROOT / "README.md").read_text()))
    offline = _offline_prefix()
    site_environment(setup)
    out = ROOT / "build" / "site"
    shutil.rmtree(out, ignore_errors=True)
    _run([*offline, "bash", "-c", build], f"the offline build ({build})", timeout=2400)
    assert (out / "index.html").is_file(), f"{build} wrote no {out}/index.html"
    return out


@pytest.fixture(scope="module")
def checker(site):
    """The site served on loopback and one headless Chromium (off-machine requests aborted)."""
    with sc.SiteChecker(site) as c:
        yield c


@pytest.fixture(scope="module")
def pages(site) -> dict[str, str]:
    """Each notebook's page, site-relative: ``{"07_softmax": "pages/07_softmax.html"}``."""
    found = {}
    for stem in NOTEBOOKS:
        hits = [
            p.relative_to(site).as_posix()
            for p in site.rglob(f"{stem}.html")
            if not {"_static", "_sources", "_images"} & set(p.relative_to(site).parts)
        ]
        if len(hits) == 1:
            found[stem] = hits[0]
    return found


@pytest.fixture(scope="module")
def reports(site, checker, pages) -> dict[str, sc.PageReport]:
    """Every page opened once: the index, each notebook's page, search and the general index."""
    rels = ["index.html", *pages.values()]
    rels += [name for name in ("search.html", "genindex.html") if (site / name).is_file()]
    return {rel: checker.check(rel) for rel in rels}


# ---------------------------------------------------------------------------- the tests


def test_every_notebook_has_its_page_in_course_order(site, pages, reports):
    """index.html at the top; one page per notebook, listed in the contents and linked
    prev/next in course order (00 → 18)."""
    assert (site / "index.html").is_file()
    missing = [stem for stem in NOTEBOOKS if stem not in pages]
    assert not missing, f"notebooks with no page (or several): {missing}"
    order = [pages[s] for s in NOTEBOOKS]
    for rel, report in reports.items():
        listed = [p for p in report.sidebar if p in order]
        assert listed == order, f"{rel}: contents {listed}"
    chain = ["index.html", *order]
    for before, after in itertools.pairwise(chain):
        assert reports[before].next == after, f"{before}: next is {reports[before].next}"
        if before != "index.html":
            assert reports[after].prev == before, f"{after}: prev is {reports[after].prev}"


def test_every_page_loads_cleanly_offline(pages, reports):
    """No console error, page error, failed or off-machine request, broken image;
    math typeset (no TeX left as text) wherever the page, or its notebook, has math."""
    problems = {rel: r.problems() for rel, r in reports.items() if r.problems()}
    for stem, rel in pages.items():
        if _has_math(STUDENT / f"{stem}.ipynb") and reports[rel].mjx == 0:
            problems.setdefault(rel, []).append("the notebook has math, the page none typeset")
    assert not problems, json.dumps(problems, indent=1)[:8000]


def test_no_solution_line_is_published(site):
    """No line of a solution or hidden test (not also in a student notebook) in the site."""
    lines = _solution_lines()
    assert len(lines) > 50, "the solutions' lines were not found"
    texts = _site_texts(site)
    leaks = {
        f"{rel}: {line}"
        for rel, text in texts.items()
        for line in lines
        if _norm(line) in text
    }  # fmt: skip
    assert not leaks, f"{len(leaks)} solution lines published:\n" + "\n".join(sorted(leaks)[:40])


def test_every_page_links_its_notebook_binder_and_colab(site, pages):
    """Each notebook's page offers its student notebook (a file of the site, byte for byte the
    repository's), a Binder launch of it and the same notebook in Colab (whose first cell
    installs the course's package: tests/test_colab.py)."""
    wrong = []
    for stem in pages:
        page = site / pages[stem]
        hrefs = _hrefs(page)
        notebook = (STUDENT / f"{stem}.ipynb").read_bytes()
        files = [sc.local_file(site, page, h) for h in hrefs if ".ipynb" in h.split("?")[0]]
        if not any(f and f.is_file() and f.read_bytes() == notebook for f in files):
            wrong.append(f"{stem}: no link to a copy of notebooks/mhsa/{stem}.ipynb ({files})")
        if BINDER + f"{stem}.ipynb" not in hrefs:
            wrong.append(f"{stem}: no Binder link {BINDER}{stem}.ipynb")
        if COLAB + f"{stem}.ipynb" not in hrefs:
            wrong.append(f"{stem}: no Colab link {COLAB}{stem}.ipynb")
    assert not wrong, "\n".join(wrong)


def test_the_front_page_lists_titles_and_offers_every_notebook_in_one_archive(site, pages):
    """The front page names each notebook by its title (never its file name) and links a zip
    of every student notebook, byte for byte the repository's, in course order's names."""
    index = site / "index.html"
    texts = _link_texts(index)
    titles = [texts.get(rel, "") for rel in pages.values()]
    assert all(t and "$" not in t and t not in NOTEBOOKS for t in titles), titles
    if "05_scores" in pages:
        assert texts[pages["05_scores"]] == "Step 5 — The score matrix Z", texts
    zips = [sc.local_file(site, index, h) for h in _hrefs(index) if h.endswith(".zip")]
    assert len(zips) == 1 and zips[0] and zips[0].is_file(), zips
    with zipfile.ZipFile(zips[0]) as z:
        assert sorted(z.namelist()) == sorted(f"mhsa/{s}.ipynb" for s in NOTEBOOKS)
        for stem in NOTEBOOKS:
            assert z.read(f"mhsa/{stem}.ipynb") == (STUDENT / f"{stem}.ipynb").read_bytes()


def test_every_numbered_equation_shows_its_number(pages, reports):
    """Each display equation the notebook numbers (``\\tag``) is typeset with its number,
    and MathJax reports no error (loading cleanly checks that too, on every page)."""
    wrong = {}
    for stem, rel in pages.items():
        tags = sum(_source(c).count("\\tag{") for c in _cells(STUDENT / f"{stem}.ipynb"))
        if reports[rel].tagged != tags or reports[rel].math_errors:
            wrong[stem] = (tags, reports[rel].tagged, reports[rel].math_errors[:3])
    assert not wrong, f"{{stem: (tags, typeset with a number, errors)}}: {wrong}"


def test_18_shows_the_two_sequences_it_suggests(site, pages):
    """AAAABBBB and PPPPPPPP, suggested by the text, are drawn in the page: each one's line
    (the model's output) followed by its picture."""
    if "18_training" not in pages:
        pytest.skip("18_training is not in this site")
    text = (site / pages["18_training"]).read_text()
    lines = [text.find(f"{word}: the model outputs") for word in ("AAAABBBB", "PPPPPPPP")]
    assert min(lines) >= 0, f"a sequence's line is missing: {lines}"
    ends = [lines[1], lines[1] + 50_000]
    for word, start, end in zip(("AAAABBBB", "PPPPPPPP"), lines, ends, strict=True):
        assert "<img" in text[start:end], f"no picture under {word}'s line, before the next"


#: The course's own terms, and the page about each: the page the course named for it.
ABOUT = {
    "softmax": "07_softmax",
    "causal mask": "06_masking",
    "KV cache": "13_kv_cache",
    "backward": "17_backward",
    "RoPE": "11_rope",
    "scores": "05_scores",
    "heads": "04_heads",
    "GQA": "12_gqa",
    "tiled": "14_tiled",
    "cross attention": "15_cross",
    "sliding window": "16_sliding_window",
    "padding mask": "06_masking",
    "positional encoding": "01_input",
}
#: The search's data (book/search.py) and the most it may weigh.
SEARCH_DATA, SEARCH_DATA_LIMIT = "_static/mhsa-search-data.js", 150_000


def _search_data(site: Path) -> dict:
    code = (site / SEARCH_DATA).read_text(encoding="utf-8")
    prefix = "window.mhsaSearchData = "
    assert code.startswith(prefix) and code.endswith(";\n"), f"{SEARCH_DATA}: {code[:80]!r}"
    return json.loads(code[len(prefix) : -2])


def _marked_as(word: str, query: str) -> bool:
    """Whether a marked word is one of the query's, in some form (masking for mask)."""
    return any(word.lower()[:4] == q.lower()[:4] for q in query.split())


def test_search_ranks_the_page_about_the_term_first_and_shows_the_sentence(checker, pages, site):
    """search.html?q=…, offline, for the course's own terms: the page about the term first;
    every hit shows a sentence and marks words of the query, no other; the first hit marks
    them in its sentence, except where the page's sentences never write the term (05 says
    Z, 12 never writes GQA: found by the title or the page's name, marked there)."""
    data = _search_data(site)
    prose = {url: "" for url, _ in data["pages"]}  # each page's sentences
    for page, _, _, sentences in data["sections"]:
        prose[data["pages"][page][0]] += " ".join(sentences).lower() + " "
    wrong = []
    for query, stem in ABOUT.items():
        report, found = checker.search(query)
        assert not report.problems(), (query, report.problems())
        if not found:
            wrong.append(f"{query!r}: no hit")
            continue
        first = found[0]["href"].split("?")[0].split("#")[0].removeprefix(checker.base)
        if first != pages[stem]:
            wrong.append(f"{query!r}: first {first}, expected {pages[stem]}")
        for hit in found:
            if not hit["context"].strip() or not hit["marks"]:
                wrong.append(f"{query!r}: {hit['title']!r} shows {hit['text']!r}")
            wrong += [f"{query!r}: {m!r} marked" for m in hit["marks"] if not _marked_as(m, query)]
        written = all(w.lower() in prose[pages[stem]] for w in query.split())
        if written and not found[0]["context_marks"]:
            wrong.append(f"{query!r}: the first hit's sentence marks nothing: {found[0]['text']}")
        if not written:
            assert query in ("scores", "GQA"), f"{pages[stem]}'s sentences never write {query!r}"
    assert not wrong, "\n".join(wrong)


def test_a_result_opens_its_page_with_the_words_marked_in_its_text(checker, pages):
    """A hit's link carries ?highlight=: the page opened marks the query's words in its text
    (not in the contents, a picture or math), and still loads cleanly, math typeset."""
    _, found = checker.search("causal mask")
    href = found[0]["href"].removeprefix(checker.base)
    assert "highlight=" in href and href.startswith(pages["06_masking"]), href
    with checker.open(href) as (page, report):
        marked = sc.highlighted(page, checker.wait_ms)
        assert not report.problems(), report.problems()
    assert {m["where"] for m in marked} == {"text"}, marked
    assert {m["text"].lower() for m in marked} == {"causal", "mask"}, marked


def test_search_works_from_disk(checker, pages, site):
    """search.html opened from disk (file://, where a browser fetches nothing): the data is a
    plain script, so the hits are the same, and a hit opens its page with the words marked."""
    page = checker.context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{(site / 'search.html').as_uri()}?q=KV%20cache", wait_until="load")
        found = sc.hits(page, checker.wait_ms)
        assert found and found[0]["href"].startswith((site / pages["13_kv_cache"]).as_uri()), found
        assert found[0]["context_marks"], found[0]
        page.goto(found[0]["href"], wait_until="load")
        marked = sc.highlighted(page, checker.wait_ms)
        assert marked and {m["where"] for m in marked} == {"text"}, marked
        assert not errors, errors
    finally:
        page.close()


def test_the_search_data_is_small_whole_and_plain_text(site, pages):
    """The search's data: a plain script (loaded by a <script> tag, so from disk too) under
    150 kB, every notebook's page in it, no TeX left in its sentences or headings."""
    size = (site / SEARCH_DATA).stat().st_size
    assert size <= SEARCH_DATA_LIMIT, f"{SEARCH_DATA} is {size} bytes"
    data = _search_data(site)
    urls = {url for url, _ in data["pages"]}
    assert set(pages.values()) <= urls, sorted(set(pages.values()) - urls)
    texts = [t for _, _, heading, sentences in data["sections"] for t in [heading, *sentences]]
    tex = [t for t in texts if sc.RAW_TEX.search(t)]
    assert not tex, tex[:10]


def test_pages_and_site_are_small(site, reports):
    """No page over 1.5 MB with the site's files it loads, the front page under 0.5 MB (every
    file the browser was seen to fetch among those counted); the whole site at most 80 MB."""
    heavy, uncounted = {}, {}
    for rel, report in reports.items():
        files = sc.page_files(site, site / rel, tuple(report.loaded))
        static = sc.page_files(site, site / rel)  # what benchmarks/bench_site.py weighs
        fetched = {sc.local_file(site, site / "index.html", "/" + u) for u in report.loaded}
        missed = sorted(p.relative_to(site).as_posix() for p in fetched - set(static) if p)
        if missed:
            uncounted[rel] = missed
        total = sum(files.values())
        if total >= (FRONT_LIMIT if rel == "index.html" else PAGE_LIMIT):
            top = sorted(files.items(), key=lambda kv: -kv[1])[:5]
            heavy[rel] = [total, [(p.relative_to(site).as_posix(), n) for p, n in top]]
    assert not heavy, heavy
    assert not uncounted, f"fetched, not counted by page_files: {uncounted}"
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())
    assert size <= SITE_LIMIT, f"the site is {size / 1e6:.1f} MB"


def test_titles_are_plain_text_and_only_pages_with_math_pay_for_it(site, reports):
    """The tab's title and the contents' titles hold no TeX (no $, no backslash, no typeset
    math) on every page; no page loads MathJax's script (the math is typeset at build time);
    a page whose HTML has no math loads nothing of it (no math style sheet, no TeX font)."""
    wrong = []
    for rel, report in reports.items():
        if "$" in report.title or "\\" in report.title:
            wrong.append(f"{rel}: tab title {report.title!r}")
        html = (site / rel).read_text(encoding="utf-8")
        sidebar = html[html.find('class="sidebar-drawer"') : html.find('class="main"')]
        if "mjx-container" in sidebar or re.search(r"\$|\\[(a-z]", sc.page_text_of(sidebar)):
            wrong.append(f"{rel}: math in the contents sidebar")
        files = [p.relative_to(site).as_posix() for p in sc.page_files(site, site / rel)]
        scripts = [f for f in files if "mathjax" in f.lower() and f.endswith(".js")]
        if scripts:
            wrong.append(f"{rel}: loads {scripts}")
        if not sc.has_math(site / rel):
            math = [f for f in files if "mathjax" in f.lower()]
            if math:
                wrong.append(f"{rel}: no math, loads {math}")
    assert not wrong, "\n".join(wrong)


def test_every_page_footer_links_the_issue_tracker_and_the_licence(site, reports):
    """Every page's footer links the project's issue tracker and the repository's LICENSE,
    naming the licence as the first line of LICENSE does."""
    license_file = ROOT / "LICENSE"
    assert license_file.is_file(), "no LICENSE in the repository"
    name = license_file.read_text(encoding="utf-8").splitlines()[0].strip()
    wrong = []
    for rel in reports:
        html = (site / rel).read_text(encoding="utf-8")
        footer = html[html.rfind("<footer") :]
        hrefs = _hrefs_in(footer)
        if ISSUES not in hrefs:
            wrong.append(f"{rel}: no link to {ISSUES} in the footer")
        licence = [h for h in hrefs if h.endswith("/LICENSE")]
        if not licence or name not in sc.page_text_of(footer):
            wrong.append(f"{rel}: the footer does not link LICENSE naming {name!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("screen", [(1400, 900), TABLET, PHONE], ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_contents_button_opens_and_closes_the_contents(checker, pages, screen):
    """At 1400, 800 and 390 px the visible contents button, clicked, shows or hides the
    contents (on a phone and a tablet, a drawer: its own button closes it); shown at first
    on a wide screen only."""
    t = sc.THEME
    with checker.open(pages["05_scores"], viewport=screen) as (page, report):
        wide = screen[0] >= 1400
        assert sc.shown(page, t.sidebar, t.sidebar_links) == wide, "at first"
        seen = [wide]
        for _ in range(2):
            button = sc.pressable(page, t.contents_buttons)
            assert button is not None, f"no contents button to press (contents shown: {seen})"
            button.click()
            seen.append(sc.wait_shown(page, t.sidebar, t.sidebar_links, not seen[-1]))
        assert seen == [wide, not wide, wide], f"contents shown, then after each click: {seen}"
        assert not (report.console_errors or report.page_errors), report.problems()


def test_arrows_turn_the_page_from_the_page_only_never_from_a_widget(checker, pages):
    """← / → inside a widget move its control (the slider) and leave the page where it is;
    from the search box too; with the focus on the page itself, → opens the next page and
    ← the one before."""
    with checker.open(pages["16_sliding_window"], viewport=WIDE) as (page, report):
        here = page.url
        widget = _widget(page, sc.BOOK.slider)
        slider = widget.locator(sc.BOOK.slider).first
        before = slider.input_value()
        slider.focus()
        for key in ("ArrowRight", "ArrowLeft", "ArrowLeft"):
            page.keyboard.press(key)
        page.wait_for_timeout(300)  # a page turn would have begun
        assert page.url == here, f"an arrow in the widget turned the page to {page.url}"
        assert slider.input_value() != before, "the arrows did not move the slider"
        search = page.locator("input[name=q]").first
        search.focus()
        page.keyboard.press("ArrowLeft")
        page.wait_for_timeout(300)
        assert page.url == here, "an arrow in the search box turned the page"
        page.evaluate("() => document.activeElement.blur()")
        with page.expect_navigation():
            page.keyboard.press("ArrowRight")
        assert checker.rel(page.url) == report.next, (page.url, report.next)
        with page.expect_navigation():
            page.keyboard.press("ArrowLeft")
        assert checker.rel(page.url) == pages["16_sliding_window"], page.url


def test_long_pages_have_their_own_contents_whole(checker, site, pages, reports):
    """Every page with two sections or more shows "On this page" at 1400 px, linking each
    section, every link inside the column (none clipped at the right; the column scrolls
    where it is taller than the screen): 17 and 18 among them."""
    t = sc.THEME
    long_pages = [
        rel for rel in reports if len(re.findall(r'<section id="', (site / rel).read_text())) > 2
    ]
    assert {pages["17_backward"], pages["18_training"]} <= set(long_pages), long_pages
    wrong = []
    for rel in long_pages:
        with checker.open(rel, viewport=(1400, 900)) as (page, _):
            if not sc.shown(page, t.toc, t.toc_links):
                wrong.append(f"{rel}: no 'On this page' shown")
                continue
            fit = page.evaluate(_TOC_FIT, asdict(t))
            if fit["links"] < 2 or fit["clipped"] or not fit["reachable"]:
                wrong.append(f"{rel}: {fit}")
    assert not wrong, "\n".join(wrong)


_TOC_FIT = """(t) => {
    const box = document.querySelector(t.toc);
    const scroller = box.querySelector('.toc-scroll') || box;
    const right = Math.min(box.getBoundingClientRect().right, document.documentElement.clientWidth);
    const links = [...document.querySelectorAll(t.toc_links)];
    const clipped = links.filter((a) => a.getBoundingClientRect().right > right + 1)
        .map((a) => a.textContent.trim().slice(0, 40));
    const style = getComputedStyle(scroller);
    const reachable = scroller.scrollHeight <= scroller.clientHeight + 1
        || ['auto', 'scroll'].includes(style.overflowY);
    return {links: links.length, clipped, reachable};
}"""


@pytest.mark.parametrize("screen", [(1400, 900), PHONE], ids=lambda s: f"{s[0]}x{s[1]}")
def test_no_code_is_cut_at_the_right(checker, reports, screen):
    """At 1400 and 390 px, every code and output block's lines wrap or fit: no block scrolls
    sideways or runs off the screen (measured: scrollWidth against clientWidth)."""
    cut = {}
    for rel, report in reports.items():
        if screen == (1400, 900):
            found = report.code_cut  # measured when the page was opened, at 1400 x 900
        else:
            with checker.open(rel, viewport=screen) as (page, _):
                found = sc.code_cut(page)
        if found:
            cut[rel] = found[:5]
    assert not cut, json.dumps(cut, indent=1)


def test_widgets_are_readable_in_dark_mode(checker, pages):
    """With the reader's system in dark mode (Furo follows it), every text of a widget keeps
    a contrast of 4.5 or more against what is behind it (WCAG AA), and the widget still
    responds."""
    with checker.open(pages["16_sliding_window"], viewport=WIDE) as (page, report):
        page.emulate_media(color_scheme="dark")
        widget = _widget(page, sc.BOOK.slider)
        texts = sc.contrast(page, f"{sc.BOOK.widget} .mhsa-w :is(span, div, output, label, p)")
        assert texts, "no text in the widget"
        dim = [(text, round(ratio, 2)) for text, ratio in texts if ratio < 4.5]
        assert not dim, dim
        moved = sc.control_changes_picture(
            page, widget, lambda w: sc.nudge(w.locator(sc.BOOK.slider).first)
        )
        assert moved["changed"], moved
        assert not (report.console_errors or report.page_errors), report.problems()


def test_every_widget_is_drawn_by_its_module_and_says_where_it_lives_without_js(site, reports):
    """Each widget's module drew it (its one line for a reader without JavaScript replaced);
    the page's HTML, read without scripts, has that line for each widget."""
    drawn = {rel: r.widgets for rel, r in reports.items() if r.widgets}
    wanted = {f"pages/{stem}.html" for stem in (*EXPLORER_PAGES, *PANELS_PAGES, *TRAINING_PAGES)}
    assert wanted <= set(drawn), sorted(wanted - set(drawn))
    wrong = {rel: w for rel, w in drawn.items() if any(not x.endswith(": drawn") for x in w)}
    assert not wrong, wrong
    for rel, found in drawn.items():
        assert sc.page_text(site / rel).count(STATIC_LINE) == len(found), rel
    entries = {x.split(":")[0] for w in drawn.values() for x in w}
    assert {"explorer.js", "reverse.js", "panels.js"} <= entries


def test_a_page_opened_from_disk_draws_its_widgets(checker, pages, site):
    """A reader who opens a page from disk (file://, no server) meets the same widgets: the
    modules are one plain script (book.build.classic), which a browser loads from a file."""
    page = checker.context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto((site / pages["10_capstone"]).as_uri(), wait_until="load")
        page.wait_for_selector(".mhsa-w svg .cell", timeout=checker.wait_ms)
        assert page.locator(".mhsa-book-static").count() == 0  # every widget drawn
        page.wait_for_selector(".mhsa-w .mhsa-title:has-text('Step 7.')")  # the notebook's
        page.locator(".mhsa-w button:has-text('Next')").first.click()
        page.wait_for_selector(".mhsa-w .mhsa-title:has-text('Step 8.')")
        assert not errors, errors
    finally:
        page.close()


#: States of the capstone's explorer drawn and read back: example, heads, mask, length, step.
STATES = [
    ("song", 2, "causal", None, 7),
    ("simple", 4, "padding", 3, 6),
    ("students", 7, "none", None, 5),
    ("trained", 2, "padding", 5, 7),
    ("question", 8, "padding", 1, 8),
]


def _expected(example: str, heads: int, mask: str, length, step: int, layer: int = 1) -> list:
    """``(matrix, hatched)`` of each panel step ``step`` draws, from numpy (the course's
    functions); a mask's panel ``(M, hatched, None)``: no numbers."""
    from mhsa_helpers.widgets.base import REFERENCE
    from mhsa_helpers.widgets.explorer import Explorer

    ex = Explorer(functions=REFERENCE, example=example, n_heads=heads, mask=mask, layer=layer)
    if length is not None:
        ex.change_state(length=length)
    a = ex.compute()
    blocked = np.isneginf(a["M"])  # (T, T)
    none = np.zeros_like(blocked)
    if step == 5:
        return [(Z, none) for Z in a["Z"]]
    if step == 6:
        return [(a["M"], blocked, None), *((ZM, np.isneginf(ZM)) for ZM in a["ZM"])]
    if step == 7:
        return [(A, blocked) for A in a["A"]]
    return [(H, np.zeros(H.shape, bool)) for H in a["heads"]]


def _same_numbers(drawn: list, expected: list, where: str, labels: bool = False) -> None:
    """The panels' cells against the arrays: hatched exactly where blocked, every number shown
    within half a unit of its last decimal, one number format for the whole picture.
    ``labels``: the numbers are read from each cell's label (4 decimals), for a picture whose
    cells may be too small to hold their numbers."""
    assert len(drawn) == len(expected), (where, [p["title"] for p in drawn])
    decimals = set()
    for p, (M, hatched, *neutral) in zip(drawn, expected, strict=True):
        cells = p["cells"]
        assert len(cells) == M.size, (where, p["title"])
        for (text, fill, label), v, h in zip(cells, M.ravel(), hatched.ravel(), strict=True):
            assert ("-blocked)" in fill) == bool(h), (where, p["title"], v, fill)
            if h or neutral:
                assert text is None, (where, p["title"], text)
                continue
            if labels:
                said = re.search(r" = ([^ .]*\d(?:\.\d+)?)(?:\. |$)", label)
                assert said, (where, p["title"], label)
                text = said.group(1)
            assert text is not None, (where, p["title"], v)
            d = len(text.split(".")[1]) if "." in text else 0
            decimals.add(d)
            assert abs(sc.number(text) - v) <= 0.5 * 10**-d + 1e-9, (where, p["title"], text, v)
    assert len(decimals) <= 1, (where, decimals)


def _explorer(page):
    found = page.locator(f"{sc.BOOK.widget}[data-entry='explorer.js']")
    assert found.count(), "no explorer on the page"
    return found.first


def _set(widget, example, heads, mask, length, step) -> None:
    sc.choose(widget, "example", example)
    sc.choose(widget, "heads", heads)
    sc.choose(widget, "mask", mask)
    if length is not None:
        sc.choose(widget, "length", length)
    sc.choose(widget, "step", step)


def test_the_explorer_draws_the_numbers_and_hatching_of_the_arrays(checker, pages):
    """The capstone's explorer, with no kernel, in states of every example (padding at a
    length chosen): each panel's numbers and hatched cells are numpy's."""
    with checker.open(pages["10_capstone"], viewport=WIDE) as (page, report):
        explorer = _explorer(page)
        for state in STATES:
            _set(explorer, *state)
            title = explorer.locator(".mhsa-title").text_content()
            assert f"Step {state[4]}." in title and f"h = {state[1]} head" in title, title
            _same_numbers(sc.panels(explorer), _expected(*state), str(state))
        assert not (report.console_errors or report.page_errors), report.problems()


def test_every_control_of_the_explorer_works_without_a_kernel(checker, pages):
    """Example, layer (the induction model's), heads, mask (padding with its length), query,
    view, Prev / Next, step: each changes what is drawn; pointing at a cell lights its
    query's and key's cells."""
    with checker.open(pages["10_capstone"], viewport=WIDE) as (page, report):
        explorer = _explorer(page)
        picture = explorer.locator(sc.BOOK.picture)
        seen = []

        def changed(what):
            now = picture.evaluate("(s) => s.outerHTML.replace(/mhsa-\\d+-\\w+/g, '')")
            assert not seen or now != seen[-1], f"{what} left the picture as it was"
            seen.append(now)

        changed("nothing")
        for name in EXAMPLES:  # each example, its tokens in the query's options
            if name != "song":
                sc.choose(explorer, "example", name)
                changed(name)
            query = sc.control(explorer, "query")
            options = query.evaluate("(s) => [...s.options].map((o) => o.text)")
            assert len(options) == get_example(name).T, (name, options)
        layers = explorer.locator(".mhsa-layer")
        if name != "induction":
            sc.choose(explorer, "example", "induction")
            changed("induction")
        assert layers.is_visible()  # the model of two layers: its layer control
        sc.choose(explorer, "layer", 2)
        changed("layer 2")
        sc.choose(explorer, "mask", "none")  # its own mask is causal
        changed("no mask")
        sc.choose(explorer, "example", "simple")
        changed("simple")
        assert layers.is_hidden()  # one layer: nothing to choose
        for heads in (1, 2, 8):
            sc.choose(explorer, "heads", heads)
            changed(f"{heads} heads")
        length = explorer.locator(".mhsa-length")
        sc.choose(explorer, "mask", "causal")
        changed("causal")
        assert length.is_hidden()
        sc.choose(explorer, "mask", "padding")
        assert length.is_visible()
        for n in (2, 5):
            sc.choose(explorer, "length", n)
            changed(f"padding length {n}")
        sc.control(explorer, "query").select_option(index=3)
        changed("query")
        explorer.locator(sc.BOOK.prev_button).click()
        changed("Prev")
        assert "Step 6." in explorer.locator(".mhsa-title").text_content()
        explorer.locator(sc.BOOK.next_button).click()
        changed("Next")
        hover = sc.hover_lights_query_and_key(page, explorer)
        assert hover["lit"] and hover["dimmed"] and "query" in hover["tip"], hover
        sc.choose(explorer, "view", "query")
        changed("the query view")
        assert picture.locator("line.mhsa-attend").count() == 8 * get_example("simple").T
        assert sc.control(explorer, "step").is_disabled()
        assert not (report.console_errors or report.page_errors), report.problems()


#: Notebook 19's explorer on the induction model, drawn and read back: layer, mask, length, step.
INDUCTION_STATES = [
    (2, "causal", None, 7),  # as the notebook opens it: the induction stripe
    (1, "causal", None, 7),  # the previous-token stripe
    (2, "none", None, 5),
    (1, "padding", 9, 8),
]


def test_the_induction_explorer_draws_both_layers_as_numpy(checker, pages):
    """Notebook 19's explorer, with no kernel: it opens on layer 2 at step 7 with the causal
    mask the model learned with; its layer control (no example or heads control) switches
    layer, and each panel's numbers and hatching are numpy's; in the query view, a query of
    the second half draws its widest line, in each head of layer 2, to the key after the
    earlier occurrence of its token (query t, key t − L + 1)."""
    from mhsa_helpers.examples import get_example
    from mhsa_helpers.training.induction import PERIOD

    (stem,) = (s for s in TRAINING_PAGES if s.endswith("_induction"))
    with checker.open(pages[stem], viewport=WIDE) as (page, report):
        explorer = _explorer(page)
        title = explorer.locator(".mhsa-title").text_content()
        assert "Step 7." in title and "layer 2 of 2" in title and "mask: causal" in title, title
        want = _expected("induction", 2, "causal", None, 7, 2)
        _same_numbers(sc.panels(explorer), want, "as opened", labels=True)
        for name in ("example", "heads"):
            assert explorer.locator(f".mhsa-{name}").count() == 0, f"a {name} control is shown"
        for layer, mask, length, step in INDUCTION_STATES:
            sc.choose(explorer, "layer", layer)
            sc.choose(explorer, "mask", mask)
            if length is not None:
                sc.choose(explorer, "length", length)
            sc.choose(explorer, "step", step)
            title = explorer.locator(".mhsa-title").text_content()
            assert f"Step {step}." in title and f"layer {layer} of 2" in title, title
            state = ("induction", 2, mask, length, step, layer)
            _same_numbers(sc.panels(explorer), _expected(*state), str(state), labels=True)
        sc.choose(explorer, "layer", 2)
        sc.choose(explorer, "mask", "causal")
        query = PERIOD + 4  # in the second half
        sc.control(explorer, "query").select_option(index=query)
        sc.choose(explorer, "view", "query")
        lines = explorer.locator(f"{sc.BOOK.picture} line.mhsa-attend")
        weights = [float(w or "nan") for w in lines.evaluate_all(
            "(ls) => ls.map((l) => l.getAttribute('data-weight'))")]  # fmt: skip
        T = get_example("induction").T
        assert len(weights) == 2 * T, len(weights)
        for head in range(2):
            row = np.nan_to_num(weights[head * T : (head + 1) * T], nan=-1.0)
            assert int(np.argmax(row)) == query - PERIOD + 1, (head, row)
        assert not (report.console_errors or report.page_errors), report.problems()


def test_own_letters_run_the_trained_model_in_the_page(checker, pages):
    """Notebook 18's box: the weights drawn are numpy's on the letters typed; a bad input gets
    its one-line reason and the picture stays."""
    from mhsa_helpers.widgets.reverse import parse_letters, reverse_on

    with checker.open(pages["18_training"], viewport=WIDE) as (page, report):
        widget = page.locator(f"{sc.BOOK.widget}[data-entry='reverse.js']").first
        text, status = widget.locator(sc.BOOK.text), widget.locator(sc.BOOK.status)
        for typed in ("p o n m l k j i", "A,A,B,B,C,C,D,D", "KNPCIJBA"):
            text.fill(typed)
            text.press("Enter")
            letters = parse_letters(typed)
            weights, output, _ = reverse_on(letters)
            said = status.text_content()
            assert said.startswith(f"{''.join(letters)} \u2192 output {' '.join(output)}"), said
            expected = [(w, np.zeros(w.shape, bool)) for w in weights]
            _same_numbers(sc.panels(widget), expected, typed)
        before = sc.panels(widget)
        text.fill("abcdefgz")
        text.press("Enter")
        said = status.text_content()
        assert "'Z' is not one of the letters A\u2013P (position 8" in said, said
        assert "still shows your last good input, KNPCIJBA" in said
        assert sc.panels(widget) == before
        assert not (report.console_errors or report.page_errors), report.problems()


def test_the_sliding_window_draws_every_window_as_numpy(checker, pages):
    """Notebook 16's widget: at each window, the mask's hatching and the weights are numpy's."""
    from mhsa_helpers import reference as ref

    e = get_example("song")
    Q, K, V = ref.project_qkv(e.X, e.W_q, e.W_k, e.W_v)  # (T, d_model) each
    with checker.open(pages["16_sliding_window"], viewport=WIDE) as (page, report):
        widget = page.locator(f"{sc.BOOK.widget}[data-entry='panels.js']").first
        for window in range(1, e.T + 1):
            sc.choose(widget, "window", window)
            M = ref.sliding_window_mask(e.T, window)  # (T, T)
            _, A = ref.attention_head(Q, K, V, M)  # (T, T)
            blocked = np.isneginf(M)
            _same_numbers(sc.panels(widget), [(M, blocked, None), (A, blocked)], f"window {window}")
        assert not (report.console_errors or report.page_errors), report.problems()


@pytest.mark.parametrize("stem", PANELS_PAGES)
def test_an_extensions_slider_changes_its_picture(checker, pages, stem):
    """Each extension's widget (every state computed at build time): moving its slider changes
    the picture, in the page."""
    with checker.open(pages[stem]) as (page, report):
        widget = _widget(page, sc.BOOK.slider)
        slider = widget.locator(sc.BOOK.slider).first
        moved = sc.control_changes_picture(page, widget, lambda w: sc.nudge(slider))
        assert moved["changed"], f"the slider ({moved['how']}) left the picture as it was"
        assert not (report.console_errors or report.page_errors), report.problems()


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_widgets_fit_the_screen_and_scroll_sideways_where_they_must(checker, pages, screen):
    """At 1400 x 790 and on a 390 x 844 phone: the page never scrolls sideways, the controls
    wrap inside the screen, every number is at least 11 px, and the picture's box scrolls
    where the picture is wider, its sign shown then only. The explorer is also set to its
    widest picture (8 heads side by side), which a phone must scroll."""
    problems = []
    for stem in ("10_capstone", "16_sliding_window", *TRAINING_PAGES):
        with checker.open(pages[stem], viewport=screen) as (page, report):
            found = sc.widgets(page)
            for i in range(found.count()):
                problems += _misfits(f"{stem} #{i}", sc.fit(found.nth(i)))
            if stem == "10_capstone":
                explorer = _explorer(page)
                _set(explorer, "simple", 8, "causal", None, 5)
                got = sc.fit(explorer)
                problems += _misfits(f"{stem}, 8 heads", got)
                if screen == PHONE:
                    assert got["scrolls"] and got["sign"], got  # too wide for a phone
            assert not (report.console_errors or report.page_errors), report.problems()
    assert not problems, "\n".join(problems)


def _misfits(where: str, got: dict) -> list[str]:
    """What of ``got`` (:func:`tests.support.site_check.fit`) does not fit, one line each."""
    view, out = got["view"], []
    if got["page"] > view:
        out.append(f"{where}: the page scrolls sideways ({got['page']} > {view} px)")
    off = [c for c in got["controls"] if c[0] < 0 or c[1] > view]
    out += [f"{where}: a control at {c} px is off the screen" for c in off]
    if got["widget"][1] > view:
        out.append(f"{where}: the widget ends at {got['widget'][1]} px")
    if got["numbers"] and got["smallest"] < 11 - 1e-6:
        out.append(f"{where}: numbers {got['smallest']:.1f} px")
    if got["scrolls"] != got["sign"]:
        out.append(f"{where}: box scrolls {got['scrolls']}, sign shown {got['sign']}")
    if got["scrolls"] != (got["picture"] > got["box"] + 1):
        out.append(f"{where}: picture {got['picture']} px in a box of {got['box']} px")
    return out


def test_screenshots_for_a_human(checker, pages):
    """test-output/site/: the softmax page, and the explorer, "try your own letters" and the
    search for "causal mask" at 1400 x 790 and 390 x 844, pixel ratio 2."""
    OUT.mkdir(parents=True, exist_ok=True)
    with checker.open(pages["07_softmax"]) as (page, _):
        page.screenshot(path=str(OUT / "07_softmax.png"))
        page.screenshot(path=str(OUT / "07_softmax_full.png"), full_page=True)
    shots = []
    for (w, h), (stem, entry) in itertools.product(
        SCREENS,
        [("10_capstone", "explorer.js"), ("18_training", "reverse.js")]
        + [(stem, "explorer.js") for stem in TRAINING_PAGES if stem != "18_training"],
    ):
        with checker.open(pages[stem], viewport=(w, h), scale=2) as (page, _):
            widget = page.locator(f"{sc.BOOK.widget}[data-entry='{entry}']").first
            widget.evaluate("(el) => el.scrollIntoView({block: 'start'})")
            page.evaluate("() => window.scrollBy(0, -70)")  # below the page's own header
            name = OUT / f"{stem}_{entry.split('.')[0]}_{w}x{h}.png"
            page.screenshot(path=str(name), animations="disabled")
            shots.append(name)
    for w, h in SCREENS:
        with checker.open("search.html?q=causal%20mask", viewport=(w, h), scale=2) as (page, _):
            sc.hits(page, checker.wait_ms)
            name = OUT / f"search_causal_mask_{w}x{h}.png"
            page.screenshot(path=str(name), animations="disabled")
            shots.append(name)
    assert all(p.stat().st_size for p in [OUT / "07_softmax.png", *shots])


# ---------------------------------------------------------------------------- helpers


def _widget(page, control: str):
    """The page's first widget holding ``control``; fails if none."""
    found = sc.widgets(page, control)
    n = found.count()
    assert n, f"no {sc.BOOK.widget} with {control!r} (found {sc.widgets(page).count()} widgets)"
    return found.first


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def _has_math(notebook: Path) -> bool:
    return any(
        c["cell_type"] == "markdown" and MATH_SOURCE.search(_source(c)) for c in _cells(notebook)
    )


def _norm(text: str) -> str:
    return " ".join(text.split())


def _solution_lines() -> set[str]:
    """Lines between the solution and hidden-test markers, stripped, long enough to mean
    something, and not in the student notebooks' text (where a docstring or the prose has
    them already: ``d_k = d_model // n_heads``)."""
    public = "\n".join(_norm(_source(c)) for nb in STUDENT.glob("*.ipynb") for c in _cells(nb))
    lines = set()
    for nb in SOLUTIONS.glob("*.ipynb"):
        for c in _cells(nb):
            inside = False
            for line in _source(c).splitlines():
                marker = MARKERS.match(line)
                if marker:
                    inside = marker.group(1) == "BEGIN"
                elif inside and len(line.strip()) >= TRIVIAL and _norm(line) not in public:
                    lines.add(line.strip())
    return lines


#: The site's files a solution could be read in: pages, scripts (the search index), sources.
TEXT_FILES = {".html", ".js", ".json", ".txt", ".ipynb", ".md", ".py", ".svg", ".xml"}


def _site_texts(site: Path) -> dict[str, str]:
    """Each text file of the site, whitespace collapsed: its text as shown (tags gone,
    entities and highlighting undone) and its source unescaped, one after the other."""
    out = {}
    for p in site.rglob("*"):
        if p.suffix not in TEXT_FILES or not p.is_file():
            continue
        raw = p.read_text(encoding="utf-8", errors="replace")
        shown = sc.page_text(p) if p.suffix in (".html", ".svg", ".xml") else ""
        out[p.relative_to(site).as_posix()] = _norm(shown) + "\n" + _norm(html.unescape(raw))
    return out


class _Anchors(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def _hrefs(page: Path) -> list[str]:
    return _hrefs_in(page.read_text(encoding="utf-8"))


def _hrefs_in(html_text: str) -> list[str]:
    parser = _Anchors()
    parser.feed(html_text)
    return parser.hrefs


class _LinkTexts(HTMLParser):
    """Each link's text in the page's article (not the contents sidebar), by its target."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts: dict[str, str] = {}
        self._article = 0
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self._article += 1
        elif tag == "a" and self._article:
            self._href, self._text = dict(attrs).get("href"), []

    def handle_endtag(self, tag):
        if tag == "article":
            self._article -= 1
        elif tag == "a" and self._href:
            self.texts.setdefault(self._href.split("#")[0], " ".join("".join(self._text).split()))
            self._href = None

    def handle_data(self, data):
        if self._href:
            self._text.append(data)


def _link_texts(page: Path) -> dict[str, str]:
    parser = _LinkTexts()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.texts
