"""The static edition's pages (book/pages.py): the learner's sources, the reference's outputs.

These run without a kernel, on the committed notebooks with outputs put in
by hand; tests/test_site.py builds the whole site and reads it in Chromium.
"""

from __future__ import annotations

import nbformat
import pytest

from book.embed import html
from book.fonts import fonts_used, page_css
from book.pages import (
    BINDER,
    DOWNLOADS,
    REFERENCE_TAG,
    SOLUTIONS,
    STUDENT,
    WIDGET,
    PageFailed,
    page,
)
from book.titles import plain
from mhsa_helpers.exercises import NOTEBOOKS, of_notebook

STEMS = [nb.stem for nb in NOTEBOOKS]


def ran(stem: str):
    """The instructor version with a made-up output in every code cell: its cell id."""
    nb = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=cell.id)]
    return nb


@pytest.mark.parametrize("stem", STEMS)
def test_a_page_shows_the_students_sources_with_the_runs_outputs(stem):
    shown = page(stem, ran(stem), {})
    student = nbformat.read(STUDENT / f"{stem}.ipynb", as_version=4)
    cells = [c for c in shown.cells if not c.id.startswith("book-")]
    assert [c.source for c in cells] == [c.source for c in student.cells]
    for cell in cells:
        if cell.cell_type == "code":
            assert [o.text for o in cell.outputs] == [cell.id]
    text = nbformat.writes(shown)
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text


def test_the_links_under_the_title_name_the_notebook_binder_and_the_exercises():
    shown = page("07_softmax", ran("07_softmax"), {})
    links = shown.cells[1]
    assert links.cell_type == "markdown" and shown.cells[0].source.startswith("# Step 7")
    assert f'href="../{DOWNLOADS}/07_softmax.ipynb" download' in links.source
    assert f'href="{BINDER}07_softmax.ipynb"' in links.source
    for e in of_notebook("07_softmax"):
        assert f"<code>{e.name}</code>" in links.source


def widget_output(model: str):
    return nbformat.v4.new_output(
        "display_data",
        data={WIDGET: {"model_id": model, "version_major": 2}, "text/plain": "Explorer(…)"},
    )


def test_a_widget_is_shown_embedded_and_an_unknown_one_stops_the_build():
    nb = ran("07_softmax")
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [widget_output("m1")]
    embedded = {"entry": "panels.js", "traits": {"values": {"window": 3}}}
    shown = page("07_softmax", nb, {"m1": embedded})
    cell = next(c for c in shown.cells if c.id == code.id)
    assert [o.data for o in cell.outputs] == [{"text/html": html(embedded)}]
    assert REFERENCE_TAG not in cell.metadata.get("tags", [])  # it says itself what drew it
    with pytest.raises(PageFailed, match="07_softmax: a widget \\(m1\\) was neither embedded"):
        page("07_softmax", nb, {})


def test_a_progress_bar_is_shown_as_it_ended():
    nb = ran("18_training")
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [widget_output("box")]
    models = {
        "box": ("HBoxModel", {"children": ["IPY_MODEL_a", "IPY_MODEL_b", "IPY_MODEL_c"]}),
        "a": ("HTMLModel", {"value": "training: 100%"}),
        "b": ("FloatProgressModel", {"value": 600.0, "max": 600.0}),
        "c": ("HTMLModel", {"value": " 600/600 [00:01&lt;00:00]"}),
    }
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {
            "state": {k: {"model_name": n, "state": s} for k, (n, s) in models.items()}
        }
    }
    shown = page("18_training", nb, {})
    html = next(c for c in shown.cells if c.id == code.id).outputs[0].data["text/html"]
    assert 'training: 100% <progress value="600.0" max="600.0"></progress>' in html
    assert "600/600" in html and "widgets" not in shown.metadata


def test_a_page_refuses_versions_whose_cells_differ():
    nb = ran("07_softmax")
    nb.cells.pop()
    with pytest.raises(PageFailed, match="07_softmax: the student and instructor versions"):
        page("07_softmax", nb, {})


def test_an_output_that_speaks_of_your_code_is_marked_as_the_references():
    nb = ran("17_backward")
    codes = [c for c in nb.cells if c.cell_type == "code"]
    said = {
        codes[0].id: nbformat.v4.new_output("stream", name="stdout", text="\u2713 softmax: ok"),
        codes[1].id: nbformat.v4.new_output(
            "display_data", data={"text/html": "Computed with <b>your</b> <code>f</code>."}
        ),
        codes[2].id: nbformat.v4.new_output("stream", name="stdout", text="error 1e-9"),
    }
    for cell in codes[:3]:
        cell.outputs = [said[cell.id]]
    shown = {c.id: c for c in page("17_backward", nb, {}).cells}
    tagged = [REFERENCE_TAG in shown[c.id].metadata.get("tags", []) for c in codes[:3]]
    assert tagged == [True, True, False]


@pytest.mark.parametrize(
    ("tex", "shown"),
    [
        ("Step 5 — The score matrix $Z$", "Step 5 — The score matrix Z"),
        (r"dividing by $\sqrt{d_k}$", "dividing by √d_k"),
        (r"$R' = \operatorname{softmax}(R/\sqrt{7})$", "R' = softmax(R/√7)"),
        (r"$Z = QK^T/\sqrt{d_k}$", "Z = QKᵀ/√d_k"),
        (r"$\frac{QK^\top}{\sqrt{d_k}}$", "QKᵀ/√d_k"),
        (r"$\frac{a + b}{c}$", "(a + b)/c"),
        (r"$\sqrt{a + b}$", "√(a + b)"),
        (r"A $T_q \times T_k$ attention matrix", "A T_q × T_k attention matrix"),
        (r"tokens $0 \dots t$", "tokens 0 … t"),
        (r"$Y = A \cdot V$", "Y = A · V"),
        (r"$x^{2}$ and $e^{x_i}$", "x² and e^(x_i)"),
        ("no math at all", "no math at all"),
    ],
)
def test_a_title_is_shown_as_plain_text(tex, shown):
    assert plain(tex) == shown
    assert "$" not in plain(tex) and "\\" not in plain(tex)


def test_a_pages_math_style_sheet_names_only_the_fonts_its_formulas_use():
    def face(family):
        return f'@font-face {{\n  font-family: {family};\n  src: url("f/{family}.woff");\n}}\n'

    css = "mjx-c { display: block; }\n\n" + "".join(
        face(f) for f in ("MJXZERO", "MJXTEX", "MJXTEX-I", "MJXTEX-B", "MJXTEX-S1", "MJXTEX-S4")
    )
    html = '<mjx-c class="mjx-c1D44D TEX-I"></mjx-c><mjx-c class="mjx-c3D"></mjx-c>'
    assert fonts_used(html) == {"MJXZERO", "MJXTEX", "MJXTEX-I"}
    kept = page_css(css, fonts_used(html))
    assert "mjx-c { display: block; }" in kept
    assert [f for f in ("MJXZERO", "MJXTEX", "MJXTEX-I") if f"f/{f}.woff" in kept] == [
        "MJXZERO",
        "MJXTEX",
        "MJXTEX-I",
    ]
    assert "MJXTEX-B" not in kept and "MJXTEX-S1" not in kept
    stretched = fonts_used(html + "<mjx-stretchy-v><mjx-c></mjx-c></mjx-stretchy-v>")
    assert {"MJXTEX-S1", "MJXTEX-S4", "MJXTEX-A"} <= stretched
