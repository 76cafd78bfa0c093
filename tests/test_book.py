"""The static edition's pages (book/pages.py): the learner's sources, the reference's outputs.

These run without a kernel, on the committed notebooks with outputs put in
by hand; tests/test_site.py builds the whole site and reads it in Chromium.
"""

from __future__ import annotations

import os
import zipfile

import nbformat
import pytest

from book.build import index
from book.embed import html
from book.pages import (
    ARCHIVE,
    BINDER,
    DOWNLOADS,
    REFERENCE_TAG,
    SOLUTIONS,
    STUDENT,
    WIDGET,
    PageFailed,
    archive,
    page,
    plain,
    rows_for_sphinx,
    title,
)
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
    # display equations' row breaks are written \cr for Sphinx (rows_for_sphinx)
    assert [c.source.replace("\\cr ", "\\\\") for c in cells] == [c.source for c in student.cells]
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
    colab = "https://colab.research.google.com/github/mhsa-course/mhsa-course/blob/main/notebooks"
    assert f'href="{colab}/mhsa/07_softmax.ipynb"' in links.source
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
    assert shown.metadata["html_theme.sidebar_secondary.remove"] is True  # room for it
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


def test_a_tagged_equation_with_rows_reaches_mathjax_without_a_split():
    """Sphinx wraps an equation holding \\\\ in ``split``, where MathJax refuses ``\\tag``."""
    cell = "text \\\\ kept $$M = \\begin{cases} 0 \\\\ 1 \\end{cases} \\tag{6.1}$$ and $a$"
    assert rows_for_sphinx(cell) == (
        "text \\\\ kept $$M = \\begin{cases} 0 \\cr  1 \\end{cases} \\tag{6.1}$$ and $a$"
    )


def test_the_front_page_lists_the_notebooks_by_title_and_links_the_archive():
    text = index(STEMS)
    assert "1. [Step 5 — The score matrix Z](pages/05_scores.ipynb)" in text
    last = "After the backward pass — Training a tiny transformer"
    assert f"1. [{last}](pages/18_training.ipynb)" in text
    listed = [line for line in text.splitlines() if line.startswith("1. [")]
    assert [line.rsplit("(pages/", 1)[1] for line in listed] == [f"{s}.ipynb)" for s in STEMS]
    assert all("$" not in line and "_" not in line.split("](")[0] for line in listed), listed
    assert f'<a href="{DOWNLOADS}/{ARCHIVE}" download>' in text


def test_a_title_is_plain_text():
    assert title("05_scores") == "Step 5 — The score matrix Z"
    marked = "The $\\operatorname{softmax}(z)_i$ of **x** and `f`"
    assert plain(marked) == "The softmax(z)i of x and f"


def test_the_archive_holds_every_student_notebook_and_is_the_same_file_every_time(tmp_path):
    copies = tmp_path / "copies"
    copies.mkdir()
    for stem in STEMS:
        (copies / f"{stem}.ipynb").write_bytes((STUDENT / f"{stem}.ipynb").read_bytes())
    first = archive(sorted(copies.iterdir()), tmp_path / "first.zip")
    for k, path in enumerate(copies.iterdir()):  # other times, another order
        os.utime(path, (1e9 + k, 1.5e9 + k))
    second = archive(sorted(copies.iterdir(), reverse=True), tmp_path / "second.zip")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as z:
        assert z.namelist() == [f"mhsa/{s}.ipynb" for s in sorted(STEMS)]
        for stem in STEMS:
            assert z.read(f"mhsa/{stem}.ipynb") == (STUDENT / f"{stem}.ipynb").read_bytes()
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}
