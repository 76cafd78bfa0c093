"""The six extension widgets in real JupyterLab: one screen, one height, masked cells hatched.

Each of notebooks 11 to 16 (the solutions) is run in Chromium with the viewport of a
1400x900 browser window (1400x790, pixel ratio 2) and JupyterLab's left side panel open, as
a learner with the file browser open sees it. Each widget is drawn in the page
(``front/panels.js``: every state computed once by the kernel, a control shows its state
without the kernel). Its top is scrolled into view and every control is driven through
several values (the sliders with the arrow keys, the buttons clicked); after each change
the widget lies wholly inside the notebook's visible area, its height within 10 % of the
first and its picture where it was, and where a mask applies the cells it blocks are
hatched with no number (cells "not yet" computed, in notebooks 13 and 14, are dotted,
never hatched). Screenshots of each widget: ``test-output/browser/ext_<name>.png``.

Notebook 18's "Try your own input" box (``front/reverse.js``: the model runs in the page)
is typed into: a bad input's one-line reason, then a good input's output, at one height.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mhsa_helpers.plot_style import BLOCKED_LABEL
from tests.support import lab_harness as lab

pytestmark = pytest.mark.slow  # JupyterLab in Chromium

OUT = lab.ROOT / "test-output" / "browser"
T = 6  # tokens of every example these widgets draw
STEADY = 1.10  # the largest ratio of two heights of one widget

GEOMETRY = """(w) => {
    const r = w.getBoundingClientRect();
    const s = w.querySelector('.mhsa-box svg').getBoundingClientRect();
    return {height: r.height, svg_top: s.top - r.top};
}"""

CELLS = """([svg, words]) => {
    const out = {blocked: 0, notyet: 0, wrong: [], numbers: []};
    for (const cell of svg.querySelectorAll('g.cell')) {
        const fill = cell.querySelector('rect').getAttribute('fill') || '';
        const label = cell.getAttribute('aria-label') || '';
        const masked = label.includes(words);
        if (fill.endsWith('-notyet)')) out.notyet += 1;
        if (!fill.endsWith('-blocked)')) {
            if (masked) out.wrong.push('not hatched: ' + label);
            continue;
        }
        out.blocked += 1;
        if (!masked) out.wrong.push('hatched: ' + label);
        if (cell.querySelector('text')) out.numbers.push(label);
    }
    out.legend = svg.textContent.includes(words);
    return out;
}"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    if not Path(lab.CHROMIUM).exists():
        pytest.fail(f"{lab.CHROMIUM} is missing: .ci/run installs Debian's chromium")
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("lab")
    with (
        lab.jupyterlab(tmp, lab.ROOT / "solutions" / "mhsa") as base,
        lab.chromium_page(pixel_ratio=2, viewport=lab.LAPTOP) as page,
    ):
        page.base = base
        yield page


class Driven:
    """One extension widget in the page: drive its controls, check it after each change."""

    def __init__(self, page, notebook: str):
        self.page = page
        self.notebook = notebook
        lab.open_and_run_all(page, page.base, notebook, reset=True)  # one notebook at a time
        lab.open_side_panel(page)
        page.wait_for_function(  # drawn (JupyterLab renders cells in view only)
            "(current) => { const s = document.querySelector(current + ' .mhsa-w svg');"
            " if (!s) return false; s.closest('.jp-Cell').scrollIntoView(); return true; }",
            arg=lab.CURRENT,
            timeout=120_000,
        )
        self.box = page.locator(f"{lab.CURRENT} .mhsa-w").first
        self.box.wait_for(state="visible", timeout=60_000)
        page.evaluate("(el) => el.scrollIntoView({block: 'start'})", self.box.element_handle())
        self.figure = self.box.locator(".mhsa-box")
        self.sliders = self.box.locator(".mhsa-controls input[type=range]")
        self.buttons = self.box.locator(".mhsa-controls button")
        self.driven: set[str] = set()
        self.first = None
        self.changes = 0
        self.check()

    # ---- the controls -----------------------------------------------------------------------
    def slider(self, index: int, key: str) -> None:
        """Press ``key`` (ArrowLeft, ArrowRight) on the ``index``-th slider."""
        handle = self.sliders.nth(index)
        self.change(lambda: (handle.focus(), self.page.keyboard.press(key)))
        self.driven.add(f"slider {index}")

    def click(self, name: str) -> None:
        """Click the button labelled ``name``."""
        self.change(self.box.get_by_role("button", name=name).click)
        self.driven.add(f"button {name}")

    def value(self, index: int) -> int:
        """The ``index``-th slider's value, as shown."""
        return int(self.box.locator(".mhsa-controls output").nth(index).inner_text())

    def change(self, act) -> None:
        """``act``, then wait until its new picture is in the page (each change draws one)."""
        self.figure.evaluate("(b) => { b.querySelector('svg').dataset.old = '1'; }")
        act()
        self.page.wait_for_function(
            "(b) => !b.querySelector('svg').dataset.old", arg=self.figure.element_handle()
        )
        self.changes += 1
        self.check()

    # ---- what must hold after every change ------------------------------------------------
    def check(self) -> None:
        self.page.evaluate("(el) => el.scrollIntoView({block: 'start'})", self.box.element_handle())
        where = lab.placement(self.page, self.box)
        g = self.page.evaluate(GEOMETRY, self.box.element_handle())
        if self.first is None:
            self.first = g
        said = f"after change {self.changes}: {where} {g}"
        assert lab.fits(where), said  # the whole widget inside the notebook's visible area
        # the picture stays nearly where it was (a status line of two lines moves it down)
        assert abs(g["svg_top"] - self.first["svg_top"]) <= (STEADY - 1) * g["height"], said
        assert g["height"] <= STEADY * self.first["height"], said
        assert self.first["height"] <= STEADY * g["height"], said

    def cells(self) -> dict:
        """Hatched (blocked) and dotted (not yet) cells of the picture, and what is wrong."""
        svg = self.figure.locator("svg").element_handle()
        out = self.page.evaluate(CELLS, [svg, BLOCKED_LABEL])
        assert out["wrong"] == [] and out["numbers"] == [], out  # blocked: hatched, no number
        return out

    def done(self, name: str) -> None:
        """Every control was driven; a screenshot of the widget (pixel ratio 2)."""
        controls = {f"slider {i}" for i in range(self.sliders.count())}
        controls |= {f"button {b.inner_text().strip()}" for b in self.buttons.all()}
        # the "draw my failing functions anyway" box is hidden while no function fails
        others = self.box.locator(".mhsa-controls select, .mhsa-controls .mhsa-toggle")
        assert others.count() == 0  # only sliders and buttons here, all driven
        assert controls == self.driven, controls ^ self.driven
        self.box.screenshot(path=str(OUT / f"ext_{name}.png"))


def no_mask(w: Driven) -> None:
    cells = w.cells()
    assert cells["blocked"] == 0 and not cells["legend"], cells


def test_rope(page):
    w = Driven(page, "11_rope.ipynb")
    for key in ("ArrowRight", "ArrowRight", "ArrowRight", "ArrowLeft"):
        w.slider(0, key)
        no_mask(w)
    assert w.value(0) == 2
    w.done("rope")


def test_gqa(page):
    """The figure's causal mask above it, on each of the 4 query heads, whatever K/V heads."""
    w = Driven(page, "12_gqa.ipynb")
    masked(w, 4 * T * (T - 1) // 2)
    for key, kv in (("ArrowRight", 4), ("ArrowLeft", 2), ("ArrowLeft", 1), ("ArrowRight", 2)):
        w.slider(0, key)
        assert w.value(0) == kv
        masked(w, 4 * T * (T - 1) // 2)
    w.done("gqa")


def decoding(w: Driven) -> None:
    cells = w.cells()
    assert cells["blocked"] == 0 and not cells["legend"], cells  # no mask: nothing hatched
    assert (cells["notyet"] > 0) == (w.value(0) < T), cells  # rows not decoded yet: dotted


def test_kv_cache(page):
    w = Driven(page, "13_kv_cache.ipynb")
    decoding(w)
    for act in ("ArrowRight", "ArrowRight", "Next token", "Next token", "Next token", "Reset"):
        if act.startswith("Arrow"):
            w.slider(0, act)
        else:
            w.click(act)
        decoding(w)
    w.slider(0, "ArrowRight")
    w.slider(0, "ArrowRight")
    decoding(w)
    w.done("kv_cache")


def reading(w: Driven) -> None:
    cells = w.cells()
    assert cells["blocked"] == 0 and not cells["legend"], cells  # no mask: nothing hatched
    n_blocks = -(-T // w.value(0))
    assert (cells["notyet"] > 0) == (w.value(1) < n_blocks), cells  # keys not read: dotted


def test_tiled(page):
    w = Driven(page, "14_tiled.ipynb")
    # block size, block: (0, key) moves the block size, (1, key) the block
    for index, key in (
        (1, "ArrowRight"),
        (1, "ArrowRight"),  # block 3 of 3
        (0, "ArrowRight"),  # block size 3: block 2 of 2
        (0, "ArrowRight"),  # block size 4: a shorter last block
        (0, "ArrowLeft"),
        (0, "ArrowLeft"),
        (0, "ArrowLeft"),  # block size 1: six blocks
        (1, "ArrowRight"),
        (1, "ArrowLeft"),
    ):
        w.slider(index, key)
        reading(w)
    w.done("tiled")


def masked(w: Driven, expected: int) -> None:
    """``expected`` cells hatched, each blocked by the mask, with no number on it."""
    cells = w.cells()
    assert cells["blocked"] == expected, (cells, expected)
    assert cells["legend"] == (expected > 0), cells


def test_cross(page):
    w = Driven(page, "15_cross.ipynb")
    heads = 2
    masked(w, heads * T * (T - w.value(0)))
    for key in ("ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowRight", "ArrowLeft", "ArrowLeft"):
        w.slider(0, key)
        masked(w, heads * T * (T - w.value(0)))  # the padding of C: every query, every head
    assert w.value(0) == 2
    w.slider(0, "ArrowRight")
    w.slider(0, "ArrowRight")
    masked(w, heads * T * (T - 4))
    text = w.figure.locator("svg").text_content()
    assert "queries" in text and "memory C" in text  # which axis is which
    w.done("cross")


def sliding(w: Driven) -> None:
    window = w.value(0)
    seen = sum(min(i + 1, window) for i in range(T))
    masked(w, 2 * (T * T - seen))  # the mask's −∞ and the weights it blocks


def test_sliding_window(page):
    w = Driven(page, "16_sliding_window.ipynb")
    sliding(w)
    for key in ("ArrowLeft", "ArrowLeft", "ArrowRight", "ArrowRight", "ArrowRight", "ArrowRight"):
        w.slider(0, key)
        sliding(w)
    for _ in range(2):
        w.slider(0, "ArrowLeft")
    sliding(w)
    assert w.value(0) == 3
    w.done("sliding_window")


def test_try_your_own_input(page):
    """Notebook 18's text box: a bad input's one-line reason, a good one's output, one height."""
    from playwright.sync_api import expect

    lab.open_and_run_all(page, page.base, "18_training.ipynb", timeout_ms=600_000, reset=True)
    page.evaluate("""async () => {  // JupyterLab renders the cells in view only
        const nb = window.jupyterapp.shell.currentWidget.content;
        const i = nb.widgets.findIndex(
            (c) => c.model.sharedModel.getSource().startsWith('TryReversal()'));
        nb.activeCellIndex = i;
        await nb.scrollToItem(i + 1, 'start');
    }""")
    box = page.locator(f"{lab.CURRENT} .mhsa-w", has=page.locator("input[type=text]")).first
    box.wait_for(state="visible", timeout=120_000)
    page.evaluate("(el) => el.scrollIntoView({block: 'start'})", box.element_handle())
    text, status = box.locator("input[type=text]"), box.locator(".mhsa-status")
    picture = box.locator("svg.mhsa-figure")
    expect(status).to_contain_text("KNPCIJBA \u2192 output A B J I C P N K", timeout=60_000)
    first = box.bounding_box()
    assert lab.fits(lab.placement(page, box)), first

    lines = """(el) => { const r = document.createRange(); r.selectNodeContents(el);
        return new Set([...r.getClientRects()].map((b) => Math.round(b.bottom))).size; }"""

    def read(typed: str) -> None:
        text.fill(typed)
        text.press("Enter")

    read("abcdefgz")
    expect(status).to_contain_text("'Z'")
    expect(status).to_contain_text("still shows your last good input, KNPCIJBA")
    assert status.evaluate(lines) <= 2  # the reason, short
    assert "KNPCIJBA" in picture.get_attribute("aria-label")
    read("p, o, n, m, l, k, j, i")
    expect(status).to_contain_text("PONMLKJI \u2192 output I J K L M N O P")
    expect(status).to_contain_text("8 of 8 letters right")
    assert "PONMLKJI" in picture.get_attribute("aria-label")
    after = box.bounding_box()
    assert abs(after["height"] - first["height"]) <= 0.1 * first["height"], (first, after)
    assert lab.fits(lab.placement(page, box))
    box.screenshot(path=str(OUT / "ext_reverse.png"))
