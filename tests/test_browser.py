"""The explorer in real JupyterLab, driven by Debian's Chromium through Playwright.

Every control is driven at least once on a hi-dpi page (pixel ratio 2); the
screenshots (``test-output/browser/``) are of the picture as a learner sees it.
Latency figures are written out for the closing note, never asserted.
"""

from __future__ import annotations

import io
import json
import shutil
import statistics
from pathlib import Path

import nbformat
import numpy as np
import PIL.Image
import pytest

from mhsa_helpers.examples import EXAMPLES, get_example
from mhsa_helpers.widgets import svg
from tests.support import lab_harness as lab

pytestmark = pytest.mark.slow  # JupyterLab in Chromium

OUT = lab.ROOT / "test-output" / "browser"
WRONG = "explorer_wrong_softmax.ipynb"
WRONG_SOFTMAX = '''import numpy as np
from mhsa_helpers.widgets.explorer import Explorer

def softmax(Z, axis=-1):
    """A learner's softmax over the columns (its check says so)."""
    E = np.exp(Z - Z.max(axis=-2, keepdims=True))
    return E / E.sum(axis=-2, keepdims=True)

Explorer(functions=globals(), step=7)'''
#: Two notebooks showing the same explorer state, as 06_masking and the capstone can.
TWINS = ("twin_a.ipynb", "twin_b.ipynb")
TWIN = """from mhsa_helpers.widgets.explorer import Explorer

Explorer(step=6, mask="causal")"""


@pytest.fixture(scope="module")
def lab_root(tmp_path_factory):
    """The solutions (complete learner functions) and a notebook with a wrong softmax."""
    root = tmp_path_factory.mktemp("notebooks") / "mhsa"
    shutil.copytree(lab.ROOT / "solutions" / "mhsa", root)
    for name, source in ((WRONG, WRONG_SOFTMAX), *((twin, TWIN) for twin in TWINS)):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(nb, str(root / name))
    return root


@pytest.fixture(scope="module")
def page(tmp_path_factory, lab_root):
    """JupyterLab in a laptop's window (1400 x 900, side panel open), pixel ratio 2."""
    if not Path(lab.CHROMIUM).exists():
        pytest.fail(f"{lab.CHROMIUM} is missing: .ci/run installs Debian's chromium")
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("lab")
    with (
        lab.jupyterlab(tmp, lab_root) as base,
        lab.chromium_page(pixel_ratio=2, viewport=lab.LAPTOP) as page,
    ):
        page.base = base
        yield page


def shot(figure, name: str) -> PIL.Image.Image:
    data = figure.locator("svg").screenshot(path=str(OUT / name))
    return PIL.Image.open(io.BytesIO(data))


def wait_status(page, text: str, index: int = -1) -> None:
    page.wait_for_function(
        "([text, i, current]) => {"
        " const all = document.querySelectorAll(current + ' .mhsa-status');"
        " const s = all[i < 0 ? all.length + i : i];"
        " return s !== undefined && s.closest('.widget-vbox').textContent.includes(text); }",
        arg=[text, index, lab.CURRENT],
        timeout=60_000,
    )


def unclipped(page, box, label="") -> None:
    """Nothing of the status, title or notes is cut, scrolled or ellipsed."""
    cut = page.evaluate(
        """(box) => [...box.querySelectorAll('.mhsa-status, .mhsa-title, .mhsa-notes')]
            .map((el) => [el.className, el.closest('.widget-html') || el])
            .filter(([, w]) => w.scrollHeight > w.clientHeight + 1
                || w.scrollWidth > w.clientWidth + 1)
            .map(([name]) => name)
            .concat([...box.querySelectorAll('*')]
                .filter((el) => getComputedStyle(el).textOverflow === 'ellipsis'
                    && el.scrollWidth > el.clientWidth + 1)
                .map((el) => 'ellipsis: ' + el.className))""",
        box.element_handle(),
    )
    assert cut == [], (label, cut)


def hatched_and_filled(page, figure) -> tuple[int, int]:
    """How many blocked cells show the hatching's dark stripes, and how many colours the
    colour bar shows, as painted (a screenshot: an id resolved in a hidden tab paints none)."""
    image = PIL.Image.open(io.BytesIO(figure.locator("svg").screenshot())).convert("RGB")
    origin = figure.locator("svg").bounding_box()
    ratio = image.size[0] / origin["width"]

    def crop(box):
        x, y, w, h = (v * ratio for v in box)
        return image.crop((int(x) + 2, int(y) + 2, int(x + w) - 2, int(y + h) - 2))

    boxes = page.evaluate(
        """(svg) => { const o = svg.getBoundingClientRect();
            const rel = (r) => { const b = r.getBoundingClientRect();
                return [b.x - o.x, b.y - o.y, b.width, b.height]; };
            return {cells: [...svg.querySelectorAll('g.cell.off > rect')].map(rel),
                    bar: rel(svg.querySelector('.mhsa-colourbar'))}; }""",
        figure.locator("svg").element_handle(),
    )

    def pixels(box):
        return np.asarray(crop(box)).reshape(-1, 3).astype(int)

    striped = sum(  # the dark stripes (#303030)
        1 for box in boxes["cells"] if (pixels(box).sum(axis=1) < 3 * 0x50).any()
    )
    return striped, len({tuple(p) for p in pixels(boxes["bar"])})


def opacity(page, figure, selector: str, expected: float) -> None:
    """Wait until the cells matching ``selector`` in ``figure`` have this opacity (10 s at most)."""
    page.wait_for_function(
        "([fig, sel, want]) => { const cells = fig.querySelectorAll(sel);"
        " return cells.length > 0 && [...cells].every("
        "  c => Math.abs(parseFloat(getComputedStyle(c).opacity) - want) < 0.02); }",
        arg=[figure.element_handle(), selector, expected],
        timeout=10_000,
    )


def test_every_control_of_the_capstone_explorer(page):
    """A laptop's window: controls, status and picture on one screen whatever is chosen."""
    lab.open_and_run_all(page, page.base, "10_capstone.ipynb")
    lab.open_side_panel(page)
    figure, _, button = lab.explorer_parts(page, 0)
    box = lab.explorer_box(page, 0)
    figure.wait_for(state="visible", timeout=60_000)
    wait_status(page, "h = 2", 0)
    lab.scroll_to_top(page, box)
    first = lab.placement(page, box)
    assert lab.fits(first), first  # the whole explorer is on screen
    times, shots, rows = [], {}, set()
    controls = box.locator(".widget-hbox").first

    def do(label, act, expect=None):
        times.append((label, lab.time_update(page, figure, act)))
        if expect:
            wait_status(page, expect, 0)
        page.wait_for_function(  # every update of this change has reached the page
            "() => window.jupyterapp.shell.currentWidget.sessionContext"
            ".session.kernel.status === 'idle'",
            timeout=60_000,
        )
        b = figure.locator("svg").bounding_box()
        assert round(b["width"]) == svg.WIDTH and round(b["height"]) <= svg.HEIGHT, (label, b)
        where = lab.placement(page, box)
        assert lab.fits(where), (label, where)  # the control, its effect and the notes: one screen
        rows.add(round(controls.bounding_box()["y"]))  # the controls never move
        unclipped(page, box, label)

    step = box.locator(".widget-slider", has=page.locator("label", has_text="step"))
    length = box.locator(".widget-slider", has=page.locator("label", has_text="length"))
    example = lab.dropdown(box, "example")
    query = lab.dropdown(box, "query")
    title = {name: get_example(name).title for name in EXAMPLES}
    assert not length.is_visible()  # the padding length only with the padding mask
    do("heads 4", button("heads", "4").click, "h = 4")
    do("heads 1", button("heads", "1").click, "h = 1")
    do("heads 2", button("heads", "2").click, "h = 2")
    for mask in ("causal", "padding", "none"):
        do(f"mask {mask}", button("mask", mask).click, f"mask: {mask}")
    do("mask padding", button("mask", "padding").click, "mask: padding")
    assert length.is_visible()
    handle = length.locator(".noUi-handle")
    do("length -1", lambda: (handle.focus(), page.keyboard.press("ArrowLeft")), "length 3")
    do("query 'ideas'", lambda: query.select_option(label="ideas"), "query: 'ideas'")
    do("view query", button("view", "query").click, "The query's view")
    shots["query"] = shot(figure, "query_view.png")
    do("view matrices", button("view", "matrices").click)
    for k in range(7, 1, -1):  # Prev from step 7 to step 1
        do(
            f"prev to {k - 1}",
            box.get_by_role("button", name="\u25c0 Prev").click,
            f"Step {k - 1}.",
        )
    for k in range(2, 10):
        do(f"next to {k}", box.get_by_role("button", name="Next \u25b6").click, f"Step {k}.")
    shots["step 9"] = shot(figure, "song_step9.png")
    step_handle = step.locator(".noUi-handle")
    do("step slider", lambda: (step_handle.focus(), page.keyboard.press("ArrowLeft")), "Step 8.")
    for name in ("students", "simple", "question", "trained", "song"):
        do(f"example {name}", lambda name=name: example.select_option(label=title[name]))
    do("students", lambda: example.select_option(label=title["students"]), "h = 7")
    do("heads 1", button("heads", "1").click, "h = 1")
    do("heads 7", button("heads", "7").click, "h = 7")
    do("step 7", lambda: (step_handle.focus(), page.keyboard.press("ArrowLeft")), "Step 7.")
    shots["students 7 heads"] = shot(figure, "students_7_heads_step7.png")
    do("mask causal", button("mask", "causal").click, "mask: causal")
    do("prev to 6", box.get_by_role("button", name="\u25c0 Prev").click, "Step 6.")
    shots["students mask"] = shot(figure, "students_7_heads_causal_step6.png")
    do("simple", lambda: example.select_option(label=title["simple"]), "Step 6.")
    do("heads 8", button("heads", "8").click, "h = 8")
    do("view query", button("view", "query").click, "The query's view")
    shots["simple 8 heads query"] = shot(figure, "simple_8_heads_query_view.png")
    do("view matrices", button("view", "matrices").click)
    do("trained", lambda: example.select_option(label=title["trained"]), "h = 2")
    do("step 5", lambda: (step_handle.focus(), page.keyboard.press("ArrowLeft")), "Step 5.")
    do("next to 6", box.get_by_role("button", name="Next \u25b6").click, "Step 6.")
    do("next to 7", box.get_by_role("button", name="Next \u25b6").click, "Step 7.")
    shots["trained step 7"] = shot(figure, "trained_step7.png")
    page.screenshot(path=str(OUT / "explorer_laptop_window.png"))  # the whole window

    assert len(rows) == 1, rows  # the controls stay where they are, whatever is chosen
    for name, image in shots.items():  # drawn for the pixel ratio (2 px per CSS px)
        width, height = image.size  # the element's box may start between two pixels
        assert abs(width - 2 * svg.WIDTH) <= 2 and height <= 2 * svg.HEIGHT + 2, (name, image.size)
        assert len(set(image.convert("RGB").getdata())) > 50, name  # a picture, not blank
    (OUT / "latency.json").write_text(json.dumps(times, indent=1))
    ms = sorted(t for _, t in times)
    print(
        f"\nbrowser, {len(ms)} updates: median {statistics.median(ms):.0f} ms, "
        f"p95 {ms[int(0.95 * (len(ms) - 1))]:.0f} ms, max {ms[-1]:.0f} ms"
    )


def test_blocked_weights_are_hatched_and_a_cell_lights_its_query_and_key(page):
    """Step 7 with the causal mask: blocked cells hatched with no number; hover links cells."""
    lab.open_and_run_all(page, page.base, "10_capstone.ipynb")
    figure, _, button = lab.explorer_parts(page, 0)
    box = lab.explorer_box(page, 0)
    figure.wait_for(state="visible", timeout=60_000)
    lab.scroll_to_top(page, box)
    lab.time_update(page, figure, button("mask", "causal").click)  # a fresh explorer: mask none
    wait_status(page, "mask: causal", 0)
    cells = page.evaluate(
        """(fig) => [...fig.querySelectorAll('g.cell')].map(g => ({
            fill: g.querySelector('rect').getAttribute('fill'),
            numbers: [...g.querySelectorAll('text')].length,
            tip: fig.querySelector('.tip.' + [...g.classList].find(c => /^c\\d+$/.test(c)))
                .textContent}))""",
        figure.element_handle(),
    )
    blocked = [c for c in cells if c["fill"].startswith("url(#blocked")]
    assert len(blocked) == 2 * 15 and all(c["numbers"] == 0 for c in blocked)  # 2 heads
    assert all("blocked by the mask" in c["tip"] for c in blocked)
    assert all(c["numbers"] == 1 for c in cells if not c["fill"].startswith("url("))
    assert "blocked by the mask (score" in figure.text_content()  # the legend
    striped, colours = hatched_and_filled(page, figure)
    assert striped == 2 * 15 and colours > 20, (striped, colours)

    # head 1: query 'for', key 'new'; the pointer meets the cell's transparent target
    target = figure.locator("rect.hit.q3.k1").first
    target.hover()
    key = target.evaluate("(g) => [...g.classList].find((c) => /^c\\d+$/.test(c))")
    tip = figure.locator(f".tip.{key}")
    tip.wait_for(state="visible", timeout=10_000)
    text = tip.text_content()
    assert "query 'for', key 'new'" in text and "share of the key" in text  # value, meaning
    cell, box, picture = (
        loc.bounding_box() for loc in (target, tip, figure.locator("svg"))
    )  # beside the cell pointed at, never over it, never out of the picture
    assert (
        box["x"] >= picture["x"] - 0.5
        and box["x"] + box["width"] <= picture["x"] + picture["width"] + 0.5
    )
    assert box["y"] >= picture["y"] - 0.5
    assert box["y"] + box["height"] <= picture["y"] + picture["height"] + 0.5
    gap = min(abs(box["y"] + box["height"] - cell["y"]), abs(box["y"] - cell["y"] - cell["height"]))
    assert gap <= 10, (cell, box)
    assert box["x"] <= cell["x"] + cell["width"] and box["x"] + box["width"] >= cell["x"]
    opacity(page, figure, "g.cell.q3", 1.0)  # the query's row, in every head
    opacity(page, figure, "g.cell.k1", 1.0)  # the key's column, in every head
    opacity(page, figure, "g.cell.q0.k0", 0.35)  # the rest dimmed
    figure.locator("svg").screenshot(path=str(OUT / "hover_links.png"))
    page.mouse.move(2, 2)
    opacity(page, figure, "g.cell.q0.k0", 1.0)
    assert not tip.is_visible()
    figure.locator("rect.hit.q0.k0").first.focus()  # keyboard: Tab reaches the query's row
    opacity(page, figure, "g.cell.q0", 1.0)
    opacity(page, figure, "g.cell.q1.k1", 0.35)


def test_two_notebooks_at_the_same_state_both_draw_hatching_and_the_colour_bar(page):
    """The same explorer state in two tabs: each tab's picture paints its own hatching and
    colour bar (ids shared between tabs would paint nothing in the tab shown second)."""
    page.evaluate(
        "() => window.jupyterapp && window.jupyterapp.commands.execute('application:close-all')"
    )
    lab.open_and_run_all(page, page.base, TWINS[0])
    wait_status(page, "Drawn with", 0)
    page.evaluate(  # the second in another tab of the same page, as a learner opens it
        """async (name) => {
            const app = window.jupyterapp;
            const w = await app.commands.execute('docmanager:open', {path: name});
            await w.context.ready;
            await w.sessionContext.ready;
            await app.commands.execute('notebook:run-all-cells');
        }""",
        TWINS[1],
    )
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext"
        ".session.kernel.status === 'idle'",
        timeout=120_000,
    )
    wait_status(page, "Drawn with", 0)
    for name in (*TWINS, *TWINS):  # each tab in front in turn, twice
        page.evaluate(
            "(name) => window.jupyterapp.commands.execute('docmanager:open', {path: name})", name
        )
        page.wait_for_function(
            "([current, name]) => { const p = document.querySelector(current);"
            " const w = window.jupyterapp.shell.currentWidget;"
            " return p && p.querySelector('svg.mhsa-figure') && w && w.context"
            " && w.context.path === name; }",
            arg=[lab.CURRENT, name],
            timeout=60_000,
        )
        figure, _, _ = lab.explorer_parts(page, 0)
        lab.scroll_to_top(page, lab.explorer_box(page, 0))
        page.wait_for_timeout(300)  # painted
        striped, colours = hatched_and_filled(page, figure)
        figure.locator("svg").screenshot(path=str(OUT / f"twin_{name}.png"))
        assert striped == 3 * 15 and colours > 20, (name, striped, colours)


def test_a_failing_function_is_named_and_can_be_drawn_anyway(page):
    page.evaluate(
        "() => window.jupyterapp && window.jupyterapp.commands.execute('application:close-all')"
    )
    lab.open_and_run_all(page, page.base, WRONG)
    figure, _, _ = lab.explorer_parts(page, 0)
    figure.wait_for(state="visible", timeout=60_000)
    wait_status(page, "instead of yours", 0)
    box = lab.explorer_box(page, -1)
    lab.scroll_to_top(page, box)
    text = box.text_content()
    assert "the course's softmax instead of yours" in text  # the status line
    reason = box.locator(".mhsa-notes > span").first  # the notes' first line: why
    assert "Why not your softmax: its check fails" in reason.text_content()
    assert "each column sums to 1" in reason.text_content()
    assert lab.fits(lab.placement(page, reason))  # on screen, no scrolling
    assert lab.fits(lab.placement(page, box))
    unclipped(page, box)
    before = shot(figure, "wrong_softmax_reference.png")
    anyway = box.locator(".widget-checkbox input")
    lab.time_update(page, figure, anyway.check)
    wait_status(page, "your failing softmax, as asked", -1)
    after = shot(figure, "wrong_softmax_drawn_anyway.png")
    assert before.tobytes() != after.tobytes()
