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
    if not Path(lab.CHROMIUM).exists():
        pytest.fail(f"{lab.CHROMIUM} is missing: .ci/run installs Debian's chromium")
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("lab")
    with lab.jupyterlab(tmp, lab_root) as base, lab.chromium_page(pixel_ratio=2) as page:
        page.base = base
        yield page


def shot(figure, name: str) -> PIL.Image.Image:
    figure.scroll_into_view_if_needed()
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


def test_every_control_of_the_capstone_explorer(page):
    lab.open_and_run_all(page, page.base, "10_capstone.ipynb")
    figure, _, button = lab.explorer_parts(page, 0)
    box = lab.explorer_box(page, 0)
    figure.wait_for(state="visible", timeout=60_000)
    wait_status(page, "h = 2", 0)
    times, sizes, shots = [], set(), {}

    def do(label, act, expect=None):
        times.append((label, lab.time_update(page, figure, act)))
        if expect:
            wait_status(page, expect, 0)
        b = figure.locator("svg").bounding_box()
        sizes.add((round(b["width"]), round(b["height"])))

    step = box.locator(".widget-slider", has=page.locator("label", has_text="step"))
    length = box.locator(".widget-slider", has=page.locator("label", has_text="length"))
    example = box.locator(".widget-dropdown select")
    do("heads 4", button("heads", "4").click, "h = 4")
    do("heads 1", button("heads", "1").click, "h = 1")
    do("heads 2", button("heads", "2").click, "h = 2")
    for mask in ("causal", "padding", "none"):
        do(f"mask {mask}", button("mask", mask).click, f"mask: {mask}")
    do("mask padding", button("mask", "padding").click, "mask: padding")
    handle = length.locator(".noUi-handle")
    do("length -1", lambda: (handle.focus(), page.keyboard.press("ArrowLeft")), "length 3")
    do("query 'ideas'", button("query", "ideas").click, "query: 'ideas'")
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
    for name in ("students", "simple", "question", "song"):
        do(f"example {name}", lambda name=name: example.select_option(name))
    do("students", lambda: example.select_option("students"), "Six students")  # h = 7
    do("heads 1", button("heads", "1").click, "h = 1")
    do("heads 7", button("heads", "7").click, "h = 7")
    do("step 7", lambda: (step_handle.focus(), page.keyboard.press("ArrowLeft")), "Step 7.")
    shots["students 7 heads"] = shot(figure, "students_7_heads_step7.png")
    do("mask causal", button("mask", "causal").click, "mask: causal")
    do("prev to 6", box.get_by_role("button", name="\u25c0 Prev").click, "Step 6.")
    shots["students mask"] = shot(figure, "students_7_heads_causal_step6.png")

    # one size whatever the controls; drawn for the pixel ratio (2 px per CSS px)
    assert sizes == {(svg.WIDTH, svg.HEIGHT)}, sizes
    for name, image in shots.items():
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


def test_a_failing_function_is_named_and_can_be_drawn_anyway(page):
    page.evaluate(
        "() => window.jupyterapp && window.jupyterapp.commands.execute('application:close-all')"
    )
    lab.open_and_run_all(page, page.base, WRONG)
    figure, status, _ = lab.explorer_parts(page, 0)
    figure.wait_for(state="visible", timeout=60_000)
    wait_status(page, "whose check fails", 0)
    text = status.locator("xpath=..").text_content()
    assert "The reference instead of your softmax" in text and "each column sums to 1" in text
    before = shot(figure, "wrong_softmax_reference.png")
    box = lab.explorer_box(page, -1)
    anyway = box.locator(".widget-checkbox input")
    lab.time_update(page, figure, anyway.check)
    wait_status(page, "Drawn with your failing softmax", -1)
    after = shot(figure, "wrong_softmax_drawn_anyway.png")
    assert before.tobytes() != after.tobytes()
