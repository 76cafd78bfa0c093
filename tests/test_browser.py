"""The explorer in real JupyterLab, driven by Debian's Chromium through Playwright.

A laptop's window (1400 x 790 CSS px, pixel ratio 2, JupyterLab's side panel open), the
controls driven as a learner drives them (clicks, choices, arrow keys on the sliders).
After each change the numbers and hatching drawn are compared with the layer computed
here with numpy (tests/support/pictures.py), the whole widget lies inside the notebook's
visible area, and its height stays within 10 % while the learner steps through one data
state. Nothing is timed here (benchmarks/bench_browser.py times it); the page makes no
request off the machine (JupyterLab on loopback, Chromium without background networking).
Screenshots: ``test-output/browser/``.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import matplotlib
import nbformat
import numpy as np
import PIL.Image
import pytest

from mhsa_helpers.examples import EXAMPLES, get_example
from mhsa_helpers.plot_style import SEQUENTIAL
from mhsa_helpers.widgets.explorer import SUITED_MASK
from tests.support import lab_harness as lab
from tests.support.pictures import drawn_wrong, layer

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
STEADY = 1.10  # the largest ratio of two heights of the widget within one data state


@pytest.fixture(scope="module")
def lab_root(tmp_path_factory):
    """The solutions (complete learner functions), the learner's notebooks as shipped (stubs)
    in ``stub/``, a notebook with a wrong softmax and two twins."""
    root = tmp_path_factory.mktemp("notebooks") / "mhsa"
    shutil.copytree(lab.ROOT / "solutions" / "mhsa", root)
    shutil.copytree(lab.ROOT / "notebooks" / "mhsa", root / "stub")
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
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        yield page
        away = [u for u in requests if not u.startswith((base, "data:", "blob:"))]
        assert away == [], away[:5]  # nothing asked of another machine


def fresh(page, notebook: str, side: bool = True) -> lab.Explorer:
    """``notebook`` alone in JupyterLab (its workspace reset: none of before reopened, one
    area whatever a test before split), run; its first explorer, scrolled to the top."""
    lab.open_and_run_all(page, page.base, notebook, reset=True)
    if side:
        lab.open_side_panel(page)
    ex = lab.Explorer(page, 0)
    ex.top()
    return ex


def on_screen(ex: lab.Explorer, what: str) -> float:
    """The whole widget inside the notebook's visible area, its words uncut, its controls
    inside it; its height."""
    ex.top()
    where = lab.placement(ex.page, ex.w)
    assert lab.fits(where), (what, where)
    cut = ex.page.evaluate(
        """(w) => { const r = w.getBoundingClientRect(); const out = [];
        for (const el of w.querySelectorAll('.mhsa-status, .mhsa-title, .mhsa-notes'))
            if (el.scrollHeight > el.clientHeight + 1 || el.scrollWidth > el.clientWidth + 1)
                out.push(el.className);
        for (const el of w.querySelectorAll('.mhsa-controls > *')) {
            const b = el.getBoundingClientRect();
            if (b.width && (b.left < r.left - 0.5 || b.right > r.right + 0.5))
                out.push(el.className);
        }
        const c = w.querySelector('.mhsa-controls');
        if (c.scrollHeight > c.clientHeight + 1) out.push('controls overflow');
        return out; }""",
        ex.w.element_handle(),
    )
    assert cut == [], (what, cut)
    return where["height"]


def checked(ex: lab.Explorer, a: dict, what: str, numbers: bool = False) -> dict:
    """What the explorer shows now, equal to the arrays ``a`` (numbers and hatching)."""
    shown = ex.read()
    wrong = drawn_wrong(shown, a, numbers)
    assert wrong == [], (what, len(wrong), wrong[:6])
    return shown


def state_tour(ex, e, heads: int, mask: str, length: int, numbers: bool = True) -> list[float]:
    """Steps 9 to 1 and the query's view of one data state: each drawn as computed here and on
    screen; the widget's heights. ``numbers``: every cell of a coloured panel shows its number
    where the picture's matrices are square or narrow (steps 1 and 5 to 9; the trained
    example's 16 columns: steps 5, 7 and 8), the readable cells a learner reads."""
    a = layer(e, heads, mask, length)
    heights = []
    ex.step_to(9)
    for k in range(9, 0, -1):
        if k < 9:
            ex.prev.click()
        what = f"{e.name}, h={heads}, {mask}, step {k}"
        shown = checked(
            ex,
            a,
            what,
            numbers and k in ((5, 7, 8) if e.name == "trained" else (1, 5, 6, 7, 8, 9)),
        )
        assert shown["step"] == k and shown["heads"] == heads and shown["mask"] == mask
        heights.append(on_screen(ex, what))
    ex.button("view", "query").click()
    checked(ex, a, f"{e.name}, h={heads}, {mask}, the query's view")
    heights.append(on_screen(ex, f"{e.name}, h={heads}, {mask}, the query's view"))
    ex.button("view", "matrices").click()
    assert max(heights) <= STEADY * min(heights), (e.name, heads, mask, heights)
    return heights


def test_every_setting_fits_steadily_and_draws_the_arrays(page):
    """Every example, mask, number of heads and layer: the layer as numpy computes it, on
    screen."""
    ex = fresh(page, "10_capstone.ipynb")
    for name in EXAMPLES:
        e = get_example(name)
        heads = e.head_choices[min(1, len(e.head_choices) - 1)]  # the example's first
        if name != "song":
            ex.select("example").select_option(name)
        now = SUITED_MASK.get(name, "none")  # a trained example: the mask it learned with
        ex.shows(e, heads, now)
        for mask in ("none", "causal", *(("padding",) if name == "song" else ())):
            if mask != now:
                ex.button("mask", mask).click()
                ex.shows(e, heads, mask)
                now = mask
            # 16 columns and 16 tokens (induction): numbers where the cells leave room
            state_tour(ex, e, heads, mask, e.T - 2, numbers=e.d_model < 16 or e.T < 16)
        for k in e.layer_choices[1:]:  # another layer of the model: step 7 of each mask
            ex.button("layer", str(k)).click()
            at = get_example(name, k)
            for mask in ("causal", "none"):
                ex.button("mask", mask).click()
                ex.shows(at, heads, mask)
                ex.step_to(7)
                checked(ex, layer(at, heads, mask, at.T - 2), f"{name} layer {k}, {mask}")
                on_screen(ex, f"{name} layer {k}, {mask}, step 7")
                if mask == "causal":  # the induction stripe
                    page.screenshot(path=str(OUT / f"{name}_layer{k}_step7.png"))
            ex.button("layer", "1").click()
            ex.shows(e, heads, mask)
        for h in e.head_choices:  # every number of heads: step 7, the widest every step
            if h == heads:
                continue
            ex.button("heads", str(h)).click()
            ex.shows(e, h, mask)
            if h == max(e.head_choices):  # the most panels: numbers where the cells allow
                state_tour(ex, e, h, mask, e.T - 2, numbers=False)
            ex.step_to(7)
            checked(ex, layer(e, h, mask, e.T - 2), f"{name}, h={h}", numbers=True)
            on_screen(ex, f"{name}, h={h}, {mask}, step 7")
        if name == "song":  # the padding's length, with the arrow keys
            ex.press("length", "ArrowLeft")
            ex.shows(e, h, "padding (length 3 of 6)")
            checked(ex, layer(e, h, "padding", 3), "song, length 3", numbers=True)
            on_screen(ex, "song, length 3")
        if name == "students":  # the case: seven heads, causal, step 7
            ex.button("heads", "7").click()
            ex.shows(e, 7, mask)
            on_screen(ex, "students, 7 heads, causal, step 7")
            page.screenshot(path=str(OUT / "students_7_heads_causal_step7.png"))
        ex.button("mask", "none").click()
        ex.button("heads", str(heads)).click()
        ex.shows(e, heads, "none")
    ex.select("example").select_option("trained")
    ex.shows(get_example("trained"), 2, "none")
    for k in (8, 9):  # the trained example: readable cells
        ex.step_to(k)
        on_screen(ex, f"trained, step {k}")
        page.screenshot(path=str(OUT / f"trained_step{k}.png"))


def test_the_learners_stubs_fit_too(page):
    """The capstone with the notebooks as shipped (nothing written): the longest words."""
    ex = fresh(page, "stub/10_capstone.ipynb")
    e = get_example("song")
    ex.shows(e, 2, "none")
    assert "not" in ex.notes.inner_text() + ex.status.inner_text()
    state_tour(ex, e, 2, "none", 4)
    e = get_example("students")
    ex.select("example").select_option("students")
    ex.button("heads", "7").click()
    ex.button("mask", "causal").click()
    ex.shows(e, 7, "causal")
    state_tour(ex, e, 7, "causal", 4)
    ex.step_to(7)
    page.screenshot(path=str(OUT / "stubs_students_7_heads_causal_step7.png"))


def painted(page, ex: lab.Explorer) -> tuple[int, int, list[int]]:
    """Blocked cells, how many of them show the hatching's dark stripes, and how many colours
    each colour bar shows, as painted: screenshots of the picture's box, scrolled sideways
    across the picture where it is wider (a hatching or gradient whose definition a hidden
    view holds paints nothing)."""
    box = ex.figure
    width, full = box.evaluate("(b) => [b.clientWidth, b.scrollWidth]")
    cells, bars = {}, {}
    for at in sorted({*range(0, max(0, full - width), max(1, width - 80)), max(0, full - width)}):
        if True:
            box.evaluate("(b, x) => { b.scrollLeft = x; }", at)
            image = PIL.Image.open(io.BytesIO(box.screenshot())).convert("RGB")
            ratio = image.size[0] / box.bounding_box()["width"]
            seen = page.evaluate(
                """(b) => { const o = b.getBoundingClientRect();
                const rel = (r) => { const c = r.getBoundingClientRect();
                    return [c.x - o.x, c.y - o.y, c.width, c.height]; };
                return {cells: [...b.querySelectorAll('g.cell > rect')]
                    .map((r, i) => [i, r.getAttribute('fill').endsWith('-blocked)'), rel(r)])
                    .filter(([, blocked]) => blocked),
                    bars: [...b.querySelectorAll('.mhsa-colourbar')].map((r, i) => [i, 1, rel(r)])};
                }""",
                box.element_handle(),
            )
            for kind, found in (("cells", cells), ("bars", bars)):
                for i, _, (x, y, w, h) in seen[kind]:
                    if x < 0 or x + w > width:
                        continue  # scrolled out of the box: seen from another place
                    crop = image.crop(
                        tuple(int(v * ratio) for v in (x + 2, y + 2, x + w - 2, y + h - 2))
                    )
                    found[i] = np.asarray(crop).reshape(-1, 3).astype(int)
    n = page.evaluate(
        "(b) => [...b.querySelectorAll('g.cell > rect')]"
        ".filter((r) => r.getAttribute('fill').endsWith('-blocked)')).length",
        box.element_handle(),
    )
    assert len(cells) == n and len(bars) == ex.svg.locator(".mhsa-colourbar").count()
    dark = sum(1 for p in cells.values() if (p.sum(axis=1) < 3 * 0x50).any())
    box.evaluate("(b) => { b.scrollLeft = 0; }")
    return n, dark, [len({tuple(p) for p in bar}) for bar in bars.values()]


def test_hatching_colours_tooltips_links_and_the_keyboard(page):
    """Step 7, causal mask: blocked cells hatched, colours of the colour-blind-safe map, a
    tooltip in its own box beside the cell pointed at, linked cells lit, Tab through every
    cell with its words read aloud, drawn for the pixel ratio."""
    ex = fresh(page, TWINS[0])
    e = get_example("song")
    ex.shows(e, 2, "causal")
    ex.next.click()
    a = layer(e, 2, "causal", 4)
    shown = checked(ex, a, "step 7", numbers=True)
    blocked, dark, bars = painted(page, ex)
    assert blocked == 2 * 15 and dark == blocked and bars and min(bars) > 20, (dark, bars)
    lut = [
        matplotlib.colors.to_hex(c) for c in matplotlib.colormaps[SEQUENTIAL](np.linspace(0, 1, 64))
    ]
    for i, cells in enumerate(shown["panels"]):  # weights on 0..1: the map's colour of each
        for (r, c), (fill, *_) in zip(np.ndindex(6, 6), cells, strict=True):
            if c <= r:
                assert fill == lut[round(a["A"][i][r, c] * 63)], (i, r, c, fill)
    ratio = page.evaluate("() => window.devicePixelRatio")
    image = PIL.Image.open(io.BytesIO(ex.svg.screenshot(path=str(OUT / "step7_causal.png"))))
    size = ex.svg.bounding_box()
    assert ratio == 2 and abs(image.size[0] - 2 * size["width"]) <= 2, (ratio, image.size, size)

    # the pointer on head 1's cell (query 'for', key 'new'): its readout beside it
    cell = ex.svg.locator("g.panel").nth(0).locator("g.cell").nth(3 * 6 + 1)
    box = cell.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tip = ex.w.locator(".mhsa-tip")
    tip.wait_for(state="visible", timeout=10_000)
    text = tip.inner_text()
    assert "query 'for', key 'new'" in text and f"{a['A'][0][3, 1]:.4f}" in text, text
    assert "share" in text  # what the number means
    t = tip.bounding_box()
    assert t["y"] + t["height"] <= box["y"] + 0.5 or t["y"] >= box["y"] + box["height"] - 0.5
    assert min(abs(t["y"] + t["height"] - box["y"]), abs(t["y"] - box["y"] - box["height"])) <= 10
    assert t["x"] <= box["x"] + box["width"] and t["x"] + t["width"] >= box["x"]  # beside it
    look = tip.evaluate(
        "(t) => { const s = getComputedStyle(t);"
        " return [s.backgroundColor, s.borderTopWidth, t.getAttribute('aria-hidden')]; }"
    )
    assert look == ["rgb(255, 255, 255)", "1px", "true"], look  # its own box; the cell speaks
    lit = page.evaluate(
        "(svg) => [...svg.querySelectorAll('g.panel')].map((g) =>"
        " [...g.querySelectorAll('g.cell')].map((c) => c.classList.contains('lit')))",
        ex.svg.element_handle(),
    )
    for head in lit:  # the query's row and the key's column, in every head
        assert head == [r == 3 or c == 1 for r, c in np.ndindex(6, 6)]
    assert "dim" in ex.svg.get_attribute("class")
    ex.svg.screenshot(path=str(OUT / "hover_links.png"))
    page.mouse.move(2, 2)
    tip.wait_for(state="hidden", timeout=10_000)

    # the keyboard: Tab from the first cell reaches every cell in turn, its words shown
    cells = ex.svg.locator("g.cell")
    n = cells.count()
    cells.first.focus()
    seen = []
    for k in range(n):
        if k:
            page.keyboard.press("Tab")
        seen.append(
            page.evaluate(
                "(svg) => [...svg.querySelectorAll('g.cell')].indexOf(document.activeElement)",
                ex.svg.element_handle(),
            )
        )
        if k == 7:
            label = page.evaluate("() => document.activeElement.getAttribute('aria-label')")
            assert tip.is_visible() and tip.inner_text().split("\n")[0] in label
    assert seen == list(range(n)), seen


def test_two_notebooks_side_by_side_fit_and_paint(page):
    """Two notebooks at one state, side by side (each about half the width): each widget
    inside its own half at every step, each painting its hatching and colour bar."""
    fresh(page, TWINS[0])
    page.evaluate(
        """async (name) => {
            const app = window.jupyterapp;
            const w = await app.commands.execute('docmanager:open',
                {path: name, options: {mode: 'split-right'}});
            await w.context.ready;
            await w.sessionContext.ready;
            await app.commands.execute('notebook:run-all-cells');
        }""",
        TWINS[1],
    )
    ids = page.evaluate(
        "() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden)')]"
        ".map((p) => p.id)"
    )
    assert len(ids) == 2, ids
    views = [lab.Explorer(page, 0, panel=f"[id='{i}']") for i in ids]
    e = get_example("song")
    for ex in views:
        ex.shows(e, 2, "causal")
        assert ex.w.bounding_box()["width"] < 700  # half the window
    for ex in views:
        heights = []
        for k in range(6, 10):
            if k > 6:
                ex.next.click()
            checked(ex, layer(e, 2, "causal", 4), f"half width, step {k}")
            heights.append(on_screen(ex, f"half width, step {k}"))
        assert max(heights) <= STEADY * min(heights), heights
    for ex in views:
        ex.step_to(7)
        ex.top()
    page.screenshot(path=str(OUT / "two_notebooks_side_by_side.png"))
    for ex in views:
        ex.top()
        blocked, dark, bars = painted(page, ex)
        assert blocked == 2 * 15 and dark == blocked and min(bars) > 20, (blocked, dark, bars)


def test_a_second_view_of_a_notebook_paints_while_the_first_is_hidden(page):
    """New View for Notebook as a tab beside the first view (now hidden): the new view paints
    its hatching and colour bar, before and after a change of mask; so does the first."""
    ex = fresh(page, TWINS[0])
    e = get_example("song")
    ex.shows(e, 2, "causal")
    first = page.evaluate("() => window.jupyterapp.shell.currentWidget.id")
    page.evaluate(
        "() => window.jupyterapp.commands.execute('docmanager:clone',"
        " {options: {mode: 'tab-after'}})"
    )
    page.wait_for_function(
        "(first) => window.jupyterapp.shell.currentWidget.id !== first"
        " && document.getElementById(first).classList.contains('lm-mod-hidden')",
        arg=first,
        timeout=30_000,
    )
    second = lab.Explorer(page, 0)
    second.top()
    for mask, n in (("causal", 3 * 15), ("none", 0), ("causal", 3 * 15)):
        if second.read()["mask"] != mask:
            second.button("mask", mask).click()
            second.shows(e, 2, mask)
            second.top()
        checked(second, layer(e, 2, mask, 4), f"second view, {mask}")
        blocked, dark, bars = painted(page, second)
        assert blocked == n and dark == n and min(bars) > 20, (mask, blocked, dark, bars)
    second.svg.screenshot(path=str(OUT / "second_view.png"))
    ids = page.evaluate(
        "() => [...document.querySelectorAll('svg.mhsa-figure [id]')].map((e) => e.id)"
    )
    assert len(ids) > 0 and len(set(ids)) == len(ids)  # two views of one state share no id
    page.evaluate("(id) => window.jupyterapp.shell.activateById(id)", first)
    ex = lab.Explorer(page, 0, panel=f"[id='{first}']:not(.lm-mod-hidden)")
    ex.top()
    page.wait_for_function(  # drawn again for its width, once shown
        "(w) => w.querySelector('.mhsa-box').clientWidth > 0"
        " && w.dataset.drawnFor === String(w.querySelector('.mhsa-box').clientWidth)",
        arg=ex.w.element_handle(),
        timeout=10_000,
    )
    checked(ex, layer(e, 2, "causal", 4), "first view, shown again")
    blocked, dark, bars = painted(page, ex)
    assert blocked == 3 * 15 and dark == blocked and min(bars) > 20, (blocked, dark, bars)


def test_a_failing_function_is_named_and_can_be_drawn_anyway(page):
    """A learner's softmax over the wrong axis: the course's drawn and the reason given; with
    the box ticked, the learner's weights drawn (each column summing to 1)."""
    ex = fresh(page, WRONG)
    e = get_example("song")
    ex.shows(e, 2, "none")
    assert "the course's softmax instead of yours" in ex.status.inner_text()
    notes = ex.notes.inner_text()
    assert "Why not your softmax: its check fails" in notes, notes
    on_screen(ex, "wrong softmax")
    page.screenshot(path=str(OUT / "wrong_softmax.png"))
    checked(ex, layer(e, 2, "none", 4), "the course's softmax", numbers=True)
    ex.w.locator(".mhsa-anyway input").check()
    page.wait_for_function(
        "(w) => w.querySelector('.mhsa-status').textContent.includes('as asked')",
        arg=ex.w.element_handle(),
        timeout=60_000,
    )
    ex.shows(e, 2, "none")

    def columns(ZM):
        E = np.exp(ZM - ZM.max(axis=-2, keepdims=True))
        return E / E.sum(axis=-2, keepdims=True)

    checked(ex, layer(e, 2, "none", 4, softmax=columns), "drawn anyway", numbers=True)
    on_screen(ex, "drawn anyway")
    ex.svg.screenshot(path=str(OUT / "wrong_softmax_drawn_anyway.png"))
