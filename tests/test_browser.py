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
import PIL.Image
import pytest

from mhsa_helpers.examples import EXAMPLES, get_example
from mhsa_helpers.widgets import svg
from tests import lab_harness as lab

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


@pytest.fixture(scope="module")
def lab_root(tmp_path_factory):
    """The solutions (complete learner functions) and a notebook with a wrong softmax."""
    root = tmp_path_factory.mktemp("notebooks") / "mhsa"
    shutil.copytree(lab.ROOT / "solutions" / "mhsa", root)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(WRONG_SOFTMAX)])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(root / WRONG))
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
    times, sizes, shots, heights = [], set(), {}, set()

    def do(label, act, expect=None):
        times.append((label, lab.time_update(page, figure, act)))
        if expect:
            wait_status(page, expect, 0)
        b = figure.locator("svg").bounding_box()
        sizes.add((round(b["width"]), round(b["height"])))
        where = lab.placement(page, box)
        heights.add(round(where["height"]))
        assert lab.fits(where), (label, where)  # the control and its effect on one screen

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

    # one height for the widget and one size for its picture, whatever the controls
    assert len(heights) == 1, heights
    assert sizes == {(svg.WIDTH, svg.HEIGHT)}, sizes
    for name, image in shots.items():  # drawn for the pixel ratio (2 px per CSS px)
        width, height = image.size  # the element's box may start between two pixels
        assert abs(width - 2 * svg.WIDTH) <= 2 and abs(height - 2 * svg.HEIGHT) <= 2, (
            name,
            image.size,
        )
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
            numbers: [...g.querySelectorAll('text:not(.tip)')].length,
            tip: g.querySelector('.tip').textContent}))""",
        figure.element_handle(),
    )
    blocked = [c for c in cells if c["fill"].startswith("url(#blocked")]
    assert len(blocked) == 2 * 15 and all(c["numbers"] == 0 for c in blocked)  # 2 heads
    assert all("blocked by the mask" in c["tip"] for c in blocked)
    assert all(c["numbers"] == 1 for c in cells if not c["fill"].startswith("url("))
    assert "blocked by the mask (score" in figure.text_content()  # the legend

    hint = figure.locator("text.mhsa-info")
    assert hint.is_visible()
    target = figure.locator("g.cell.q3.k1").first  # head 1: query 'for', key 'new'
    target.hover()
    tip = target.locator(".tip")
    tip.wait_for(state="visible", timeout=10_000)
    assert "query 'for', key 'new'" in tip.text_content()
    meaning = target.locator("xpath=ancestor::*[@class='panel'][1]").locator(".meaning")
    assert meaning.is_visible() and "share of the key" in meaning.text_content()
    assert not hint.is_visible()  # the tip takes the hint's place
    opacity(page, figure, "g.cell.q3", 1.0)  # the query's row, in every head
    opacity(page, figure, "g.cell.k1", 1.0)  # the key's column, in every head
    opacity(page, figure, "g.cell.q0.k0", 0.35)  # the rest dimmed
    figure.locator("svg").screenshot(path=str(OUT / "hover_links.png"))
    page.mouse.move(2, 2)
    opacity(page, figure, "g.cell.q0.k0", 1.0)
    figure.locator("g.cell.q5.k2").first.focus()  # keyboard: Tab reaches a cell the same way
    opacity(page, figure, "g.cell.q5", 1.0)
    opacity(page, figure, "g.cell.q0.k0", 0.35)


def test_a_failing_function_is_named_and_can_be_drawn_anyway(page):
    page.evaluate(
        "() => window.jupyterapp && window.jupyterapp.commands.execute('application:close-all')"
    )
    lab.open_and_run_all(page, page.base, WRONG)
    figure, _, _ = lab.explorer_parts(page, 0)
    figure.wait_for(state="visible", timeout=60_000)
    wait_status(page, "whose check fails", 0)
    text = lab.explorer_box(page, -1).text_content()
    assert "the reference instead of your softmax" in text  # the status line
    assert "The reference instead of your softmax" in text and "each column sums to 1" in text
    before = shot(figure, "wrong_softmax_reference.png")
    box = lab.explorer_box(page, -1)
    anyway = box.locator(".widget-checkbox input")
    lab.time_update(page, figure, anyway.check)
    wait_status(page, "drawn with your failing softmax", -1)
    after = shot(figure, "wrong_softmax_drawn_anyway.png")
    assert before.tobytes() != after.tobytes()
