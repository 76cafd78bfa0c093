"""The static web edition as a reader meets it: built once with the README's site command, with
no network, then opened in headless Chromium with every off-machine request aborted.

Each property is checked once, over every page: the pages are there in course order, load
cleanly offline (no console error, no failed or off-machine request, no broken image, math
typeset), publish no solution, link the student notebook and Binder, search works, the sizes
stay small, and the pre-drawn widgets respond. Screenshots for a human:
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
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mhsa_helpers.exercises import NOTEBOOKS as COURSE
from tests.support import site_check as sc

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "notebooks" / "mhsa"
SOLUTIONS = ROOT / "solutions" / "mhsa"
NOTEBOOKS = [nb.stem for nb in COURSE]  # the registry's course order: 00 … 18
OUT = ROOT / "test-output" / "site"
BINDER = "https://mybinder.org/v2/gh/mhsa-course/mhsa-course/HEAD?urlpath=lab/tree/notebooks/mhsa/"
#: Pages with the explorer (pre-drawn: a step control, cells to point at) and with a slider.
EXPLORER_PAGES = ("10_capstone", "18_training")
SLIDER_PAGES = ("11_rope", "12_gqa", "13_kv_cache", "14_tiled", "15_cross", "16_sliding_window")
#: Limits: one page with every site file it loads; the whole site.
PAGE_LIMIT, SITE_LIMIT = 6_000_000, 80_000_000
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
    if setup:
        venv = re.search(r"-m\s+venv\s+(\S+)", setup)
        stamp = ROOT / (venv.group(1) if venv else ".site-venv") / ".mhsa-setup-stamp"
        want = _setup_stamp(setup)
        if not stamp.is_file() or stamp.read_text() != want:
            stamp.unlink(missing_ok=True)
            _run(["bash", "-c", setup], f"the site's setup ({setup})", timeout=1800)
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(want)
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


def test_every_exercise_page_links_its_notebook_and_binder(site, pages):
    """Each exercise's page offers its student notebook (a file of the site, byte for byte the
    repository's) and a Binder launch of it."""
    wrong = []
    for stem in _exercises():
        page = site / pages[stem]
        hrefs = _hrefs(page)
        notebook = (STUDENT / f"{stem}.ipynb").read_bytes()
        files = [sc.local_file(site, page, h) for h in hrefs if ".ipynb" in h.split("?")[0]]
        if not any(f and f.is_file() and f.read_bytes() == notebook for f in files):
            wrong.append(f"{stem}: no link to a copy of notebooks/mhsa/{stem}.ipynb ({files})")
        if BINDER + f"{stem}.ipynb" not in hrefs:
            wrong.append(f"{stem}: no Binder link {BINDER}{stem}.ipynb")
    assert not wrong, "\n".join(wrong)


def test_search_works_offline(checker):
    """search.html?q=softmax lists pages, with no network."""
    report, results = checker.search("softmax")
    assert results, f"no results; {report.problems()}"
    assert not (report.blocked or report.failed or report.page_errors), report.problems()


def test_pages_and_site_are_small(site, reports):
    """No page over 6 MB with the site's files it loads; the whole site at most 80 MB."""
    heavy = {}
    for rel, report in reports.items():
        files = sc.page_files(site, site / rel, tuple(report.loaded))
        total = sum(files.values())
        if total > PAGE_LIMIT:
            top = sorted(files.items(), key=lambda kv: -kv[1])[:5]
            heavy[rel] = [total, [(p.relative_to(site).as_posix(), n) for p, n in top]]
    assert not heavy, heavy
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())
    assert size <= SITE_LIMIT, f"the site is {size / 1e6:.1f} MB"


@pytest.mark.parametrize("stem", EXPLORER_PAGES)
def test_the_explorer_steps_and_lights_a_cells_query_and_key(checker, pages, stem):
    """The pre-drawn explorer: its step control changes the picture; pointing at an attention
    cell keeps its query and key lit and dims the rest, as the live widget does."""
    with checker.open(pages[stem]) as (page, report):
        explorer = _widget(page, f"{sc.FROZEN.next_button}, {sc.FROZEN.step_input}")
        stepped = sc.control_changes_picture(page, explorer, lambda w: sc.step_once(page, w))
        assert stepped["changed"], f"{stepped['how']} left the picture as it was"
        hover = sc.hover_lights_query_and_key(page, explorer)
        assert hover["pixels"] and hover["lit"] and hover["dimmed"], hover
        assert not (report.console_errors or report.page_errors), report.problems()


@pytest.mark.parametrize("stem", SLIDER_PAGES)
def test_an_extensions_slider_changes_its_picture(checker, pages, stem):
    """Each extension's pre-drawn widget: moving its slider changes the picture."""
    with checker.open(pages[stem]) as (page, report):
        widget = _widget(page, sc.FROZEN.slider)
        slider = widget.locator(f"{sc.FROZEN.slider} >> visible=true").first
        moved = sc.control_changes_picture(page, widget, lambda w: sc.nudge(slider))
        assert moved["changed"], f"the slider ({moved['how']}) left the picture as it was"
        assert not (report.console_errors or report.page_errors), report.problems()


def test_screenshots_for_a_human(checker, pages):
    """test-output/site/: the softmax page (its top, and whole) and the capstone's explorer."""
    OUT.mkdir(parents=True, exist_ok=True)
    with checker.open(pages["07_softmax"]) as (page, _):
        page.screenshot(path=str(OUT / "07_softmax.png"))
        page.screenshot(path=str(OUT / "07_softmax_full.png"), full_page=True)
    with checker.open(pages["10_capstone"]) as (page, _):
        explorer = _widget(page, f"{sc.FROZEN.next_button}, {sc.FROZEN.step_input}")
        explorer.scroll_into_view_if_needed()
        explorer.screenshot(path=str(OUT / "10_capstone_explorer.png"), animations="disabled")
    assert all((OUT / n).stat().st_size for n in ("07_softmax.png", "10_capstone_explorer.png"))


# ---------------------------------------------------------------------------- helpers


def _widget(page, control: str):
    """The page's first pre-drawn widget holding ``control``; fails if none."""
    found = sc.widgets(page, control)
    n = found.count()
    assert n, f"no {sc.FROZEN.widget} with {control!r} (found {sc.widgets(page).count()} widgets)"
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


def _exercises() -> list[str]:
    """The notebooks with an exercise: a solution in their instructor's version."""
    return [
        stem
        for stem in NOTEBOOKS
        if any("BEGIN SOLUTION" in _source(c) for c in _cells(SOLUTIONS / f"{stem}.ipynb"))
    ]


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
    parser = _Anchors()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.hrefs
