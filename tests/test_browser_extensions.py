"""The six extension widgets in real JupyterLab: one screen, one height, masked cells hatched.

Each of notebooks 11 to 16 (the solutions) is run in Chromium with the
viewport of a 1400x900 browser window (1400x790, pixel ratio 2) and
JupyterLab's left side panel open, as a learner with the file browser open
sees it. Its widget's top is scrolled into view and every control is driven
through several values; after each change the widget lies wholly inside the
viewport and the notebook's visible area, its picture is ``svg.WIDTH`` wide
and at most ``svg.HEIGHT`` tall, and
where a mask applies the cells it blocks are hatched with no number (cells
"not yet" computed, in notebooks 13 and 14, are dotted, never hatched).
Screenshots of each widget: ``test-output/browser/ext_<name>.png``.

Notebook 18's "Try your own input" box is typed into: a bad input's one-line
reason, then a good input's output, at one height.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mhsa_helpers.widgets import svg
from tests.support import lab_harness as lab

pytestmark = pytest.mark.slow  # JupyterLab in Chromium

OUT = lab.ROOT / "test-output" / "browser"
T = 6  # tokens of every example these widgets draw
MAX_WIDTH = 940  # CSS px: controls, status, picture and notes side by side on one screen

GEOMETRY = """(el) => {
    const r = el.getBoundingClientRect();
    const panel = document.querySelector(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer').getBoundingClientRect();
    const s = el.querySelector('svg.mhsa-figure').getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height,
            width: r.width, panel: [panel.top, panel.bottom, panel.left, panel.right],
            view: [window.innerWidth, window.innerHeight], svg: [s.width, s.height],
            svg_top: s.top - r.top};
}"""

CELLS = """(svg) => {
    const texts = [...svg.querySelectorAll('text:not(.tip)')].map(
        (t) => [parseFloat(t.getAttribute('x')), parseFloat(t.getAttribute('y')), t.textContent]);
    const out = {blocked: 0, notyet: 0, wrong: [], numbers: []};
    for (const r of svg.querySelectorAll('rect')) {
        const fill = r.getAttribute('fill') || '';
        const cell = r.parentNode.classList.contains('cell') ? r.parentNode : null;
        const key = cell ? [...cell.classList].find((c) => /^c\\d+$/.test(c)) : null;
        const tip = cell ? svg.querySelector('.tip.' + key) : r.querySelector('title');
        const title = (tip || {}).textContent || '';
        const masked = title.includes('blocked by the mask') || title.endsWith('\\u2212\\u221e');
        if (fill.startsWith('url(#notyet-') && title) out.notyet += 1;
        if (!fill.startsWith('url(#blocked-')) {
            if (masked) out.wrong.push('not hatched: ' + title);
            continue;
        }
        if (!title) continue;  // the legend's swatch
        out.blocked += 1;
        if (!masked) out.wrong.push('hatched: ' + title);
        const [x, y, w, h] = ['x', 'y', 'width', 'height'].map((a) => +r.getAttribute(a));
        for (const [tx, ty, s] of texts) {
            if (tx > x && tx < x + w && ty > y && ty < y + h) out.numbers.push(title + ': ' + s);
        }
    }
    out.legend = svg.textContent.includes('blocked by the mask (score');
    return out;
}"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    if not Path(lab.CHROMIUM).exists():
        pytest.fail(f"{lab.CHROMIUM} is missing: .ci/run installs Debian's chromium")
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("lab")
    with pytest.MonkeyPatch.context() as mp:  # the kernels import this checkout's mhsa_helpers
        mp.setenv(
            "PYTHONPATH",
            os.pathsep.join(filter(None, [str(lab.ROOT), os.environ.get("PYTHONPATH")])),
        )
        with (
            lab.jupyterlab(tmp, lab.ROOT / "solutions" / "mhsa") as base,
            lab.chromium_browser() as b,
        ):
            page = b.new_page(
                viewport={"width": lab.LAPTOP[0], "height": lab.LAPTOP[1]}, device_scale_factor=2
            )
            page.base = base
            yield page


#: ``(notebook, ms)`` of every change, click to picture, written out after each widget.
TIMES: list[tuple[str, float]] = []


class Driven:
    """One extension widget in the page: drive its controls, check it after each change."""

    def __init__(self, page, notebook: str):
        self.page = page
        self.notebook = notebook
        page.evaluate(  # one notebook at a time (none before the first)
            "() => window.jupyterapp && window.jupyterapp.commands.execute('application:close-all')"
        )
        lab.open_and_run_all(page, page.base, notebook)
        page.evaluate("() => window.jupyterapp.shell.expandLeft()")
        page.wait_for_function(  # drawn (JupyterLab renders cells in view only)
            "(current) => { const s = document.querySelector(current + ' svg.mhsa-figure');"
            " if (!s) return false; s.closest('.jp-Cell').scrollIntoView(); return true; }",
            arg=lab.CURRENT,
            timeout=120_000,
        )
        self.box = page.locator(f"{lab.CURRENT} .widget-vbox", has=page.locator(".mhsa-status"))
        self.box = self.box.first
        self.box.wait_for(state="visible", timeout=60_000)
        page.wait_for_timeout(300)  # the side panel's width settles
        page.evaluate("(el) => el.scrollIntoView({block: 'start'})", self.box.element_handle())
        self.figure = self.box.locator(".widget-html", has=page.locator("svg.mhsa-figure")).first
        self.sliders = self.box.locator(".widget-slider")
        self.buttons = self.box.locator("button")
        self.driven: set[str] = set()
        self.first = None
        self.changes = 0
        self.check()

    # ---- the controls -----------------------------------------------------------------------
    def slider(self, index: int, key: str) -> None:
        """Press ``key`` (ArrowLeft, ArrowRight) on the ``index``-th slider's handle."""
        handle = self.sliders.nth(index).locator(".noUi-handle")
        self.change(lambda: (handle.focus(), self.page.keyboard.press(key)))
        self.driven.add(f"slider {index}")

    def click(self, name: str) -> None:
        """Click the button labelled ``name``."""
        self.change(self.box.get_by_role("button", name=name).click)
        self.driven.add(f"button {name}")

    def value(self, index: int) -> int:
        """The ``index``-th slider's value, as shown."""
        return int(self.sliders.nth(index).locator(".widget-readout").inner_text())

    def change(self, act) -> None:
        ms = lab.time_update(self.page, self.figure, act)  # until the new picture shows
        TIMES.append((self.notebook, ms))  # for benchmarks/bench_browser.py, never asserted
        self.page.wait_for_function(  # every update of this change has reached the page
            "() => window.jupyterapp.shell.currentWidget.sessionContext"
            ".session.kernel.status === 'idle'",
            timeout=60_000,
        )
        self.changes += 1
        self.check()

    # ---- what must hold after every change ------------------------------------------------
    def check(self) -> None:
        g = self.page.evaluate(GEOMETRY, self.box.element_handle())
        if self.first is None:
            self.first, self.first_svg = g["height"], g["svg_top"]
            assert g["width"] <= MAX_WIDTH, g
        where = f"after change {self.changes}: {g}"
        # the picture stays where it is (its height follows the notes' room and the legend)
        assert abs(g["svg_top"] - self.first_svg) <= 1, where
        top, bottom, left, right = g["panel"]
        width, height = g["view"]
        assert g["top"] >= max(top, 0) - 0.5 and g["bottom"] <= min(bottom, height) + 0.5, where
        assert g["left"] >= max(left, 0) - 0.5 and g["right"] <= min(right, width) + 0.5, where
        assert round(g["svg"][0]) == svg.WIDTH and round(g["svg"][1]) <= svg.HEIGHT, where

    def cells(self) -> dict:
        """Hatched (blocked) and dotted (not yet) cells of the picture, and what is wrong."""
        out = self.page.evaluate(CELLS, self.figure.locator("svg").element_handle())
        assert out["wrong"] == [] and out["numbers"] == [], out  # blocked: hatched, no number
        return out

    def done(self, name: str) -> None:
        """Every control was driven; a screenshot of the widget (pixel ratio 2)."""
        controls = {f"slider {i}" for i in range(self.sliders.count())}
        controls |= {f"button {b.inner_text().strip()}" for b in self.buttons.all()}
        # the "draw my failing functions anyway" box is hidden while no function fails
        others = self.box.locator(
            "select, .widget-toggle-buttons, .widget-checkbox:visible, textarea"
        )
        assert others.count() == 0  # only sliders and buttons here, all driven
        assert controls == self.driven, controls ^ self.driven
        self.box.screenshot(path=str(OUT / f"ext_{name}.png"))
        (OUT / "latency_extensions.json").write_text(json.dumps(TIMES, indent=1))


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
    w = Driven(page, "12_gqa.ipynb")
    for key, kv in (("ArrowRight", 4), ("ArrowLeft", 2), ("ArrowLeft", 1), ("ArrowRight", 2)):
        w.slider(0, key)
        assert w.value(0) == kv
        no_mask(w)
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

    page.evaluate(
        "() => window.jupyterapp && window.jupyterapp.commands.execute('application:close-all')"
    )
    lab.open_and_run_all(page, page.base, "18_training.ipynb", timeout_ms=600_000)
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
    expect(status).to_contain_text("KNPCIJBA → output A B J I C P N K", timeout=60_000)
    first = box.bounding_box()
    panel = page.locator(f"{lab.CURRENT} .jp-WindowedPanel-outer").first.bounding_box()
    assert panel["x"] <= first["x"] and first["x"] + first["width"] <= panel["x"] + panel["width"]

    lines = """(el) => { const r = document.createRange(); r.selectNodeContents(el);
        return new Set([...r.getClientRects()].map((b) => Math.round(b.bottom))).size; }"""

    def read(typed: str) -> None:
        text.fill(typed)
        text.press("Enter")  # continuous_update=False: the kernel hears of it now

    read("abcdefgz")
    expect(status).to_contain_text("'Z' is not one of the letters A–P (position 8")
    expect(status).to_contain_text("still shows your last good input, KNPCIJBA")
    assert status.evaluate(lines) == 1  # the reason on one line
    assert "KNPCIJBA" in picture.get_attribute("aria-label")
    read("p, o, n, m, l, k, j, i")
    expect(status).to_contain_text("PONMLKJI → output I J K L M N O P")
    expect(status).to_contain_text("8 of 8 letters right")
    svg_text = picture.text_content()
    assert "head 1: attention weights" in svg_text and "head 2: attention weights" in svg_text
    assert "PONMLKJI" in picture.get_attribute("aria-label")
    assert status.evaluate(lines) == 1  # the output on one line
    after = box.bounding_box()
    assert abs(after["height"] - first["height"]) <= 1, (first, after)
    size = picture.bounding_box()
    assert size["width"] <= after["width"] + 1, (size, after)  # no scrolling on a wide screen
    box.screenshot(path=str(OUT / "ext_reverse.png"))
