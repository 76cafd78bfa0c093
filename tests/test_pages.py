"""Feedback pages and the formgrader's view show a student's notebook as text or sanitized HTML.

In process, with the exporters nbgrader itself makes from the course's
configuration: ``GenerateFeedback``'s (the grade command's workers and
``nbgrader generate_feedback``) and the formgrader's (a Jupyter server started
in a course directory). Chromium opens the real pages in tests/test_grading.py
(``test_feedback_pages_and_the_formgrader_run_no_student_script``).
"""

from __future__ import annotations

import base64
from collections import Counter

import nbformat
import pytest
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograders import pages
from autograders.course import init_course
from tests.support import hostile_pages as hp
from tests.support import nbgrader_course as nc

STEM = "07_softmax"


@pytest.fixture(scope="module")
def feedback():
    """The exporter of ``GenerateFeedback``, configured as the repository's nbgrader_config.py."""
    return hp.feedback_exporter(nc.course_config())


@pytest.fixture(scope="module")
def formgrader(tmp_path_factory):
    """The formgrader's exporter, in a Jupyter server started in a course made by init-course."""
    tmp = tmp_path_factory.mktemp("formgrader")
    course = tmp / "class"
    init_course(course)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(course)  # the formgrader reads nbgrader_config.py where the server starts
        mp.setenv("JUPYTER_CONFIG_DIR", str(tmp / "no-user-config"))
        return hp.formgrader_exporter(course)


def assert_sanitizing(exporter):
    assert exporter.sanitize_html
    filters = exporter.environment.filters
    assert filters["clean_html"] is pages.clean_html
    assert isinstance(filters["markdown2html"], pages.SafeMarkdown)
    steps = [p for p in exporter._preprocessors if isinstance(p, pages.ShowAsData)]
    assert len(steps) == 1 and steps[0].enabled


def test_the_feedback_exporter_sanitizes(feedback):
    assert isinstance(feedback, HTMLExporter)
    assert feedback.template_name == "feedback"  # nbgrader's own page, as before
    assert_sanitizing(feedback)


def test_the_formgrader_exporter_of_a_course_directory_sanitizes(formgrader):
    assert formgrader.template_name == "formgrade"
    assert_sanitizing(formgrader)


def test_a_formgrader_started_outside_the_course_sanitizes(tmp_path, monkeypatch):
    """The environment's nbgrader_config.py (jupyter-config/, installed with the course) suffices.

    The formgrader makes its exporter once, from what it reads when the server
    starts: here a folder with no nbgrader_config.py of its own.
    """
    installed = nc.ROOT / "jupyter-config" / "etc" / "jupyter"
    assert (installed / "nbgrader_config.py").is_file()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "no-user-config"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(installed))
    assert_sanitizing(hp.formgrader_exporter(tmp_path))


def honest_notebook():
    return nc.student_notebook(STEM, "solution")


@pytest.mark.parametrize("which", ["feedback", "formgrader"])
def test_hostile_cells_add_nothing_that_runs(which, request):
    """Every script, handler, frame and script URL of the page is the template's own."""
    exporter = request.getfixturevalue(which)
    honest = hp.render(exporter, honest_notebook())
    hostile = hp.render(exporter, hp.hostile_notebook(honest_notebook()))
    assert hp.active_parts(hostile) == hp.active_parts(honest)
    assert hp.MARK not in " ".join(hp.active_parts(hostile))
    # and what the student wrote is there, as text
    from bs4 import BeautifulSoup

    text = BeautifulSoup(hostile, "html.parser").get_text()
    assert hp.script("md-script") in text
    assert hp.script("out-stream") in text


def test_stock_nbgrader_pages_would_run_the_same_cells():
    """The unconfigured exporter (nbgrader's default) passes the payloads on: the test can fail."""
    from traitlets.config import Config

    config = nc.course_config()
    config.HTMLExporter = Config()
    stock = hp.feedback_exporter(config)
    page = hp.render(stock, hp.hostile_notebook(honest_notebook()))
    assert hp.MARK in " ".join(hp.active_parts(page))


def test_an_honest_feedback_page_is_nbgraders_own_but_for_the_ids(feedback):
    """The check sentences, a pass and a failure with <, &, quotes and √, and the whole page."""
    from traitlets.config import Config

    config = nc.course_config()
    config.HTMLExporter = Config()
    stock = hp.feedback_exporter(config)
    nb = honest_notebook()
    (test,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    passed = "✓ softmax: rows sum to 1 (where j > i & 'masked': √d_k)\n"
    failed = 'softmax: "A" differs from <the reference> & 1/√d_k · Kᵀ'
    test.outputs = [  # a pass and a failure, as WriteVerdicts writes each
        new_output("stream", name="stdout", text=passed),
        new_output("error", ename="CheckFailed", evalue=failed, traceback=[failed]),
    ]
    want = hp.render(stock, nb)
    got = hp.render(feedback, nb)
    assert got.replace(pages.ID_PREFIX, "") == want
    from bs4 import BeautifulSoup

    text = BeautifulSoup(got, "html.parser").get_text()
    assert passed.strip() in text and f"CheckFailed: {failed}" in text  # as written, once


def test_the_course_markdown_renders_as_before_but_for_the_ids(feedback):
    """Every markdown cell of the course: what nbconvert renders, ids prefixed, nothing else."""
    safe = feedback.environment.filters["markdown2html"]
    stock = HTMLExporter(template_name="classic")
    cells = 0
    for path in sorted(nc.SOLUTIONS.glob("*.ipynb")):
        for cell in nbformat.read(str(path), 4).cells:
            if cell.cell_type != "markdown":
                continue
            context = {"cell": cell, "resources": {}}
            want = stock.markdown2html(context, cell.source)
            got = safe(context, cell.source)
            assert got.replace(pages.ID_PREFIX, "") == want, (path.name, cell.source[:80])
            cells += 1
    assert cells > 50


def test_clean_html_keeps_what_markdown_makes_and_shows_the_rest_as_text():
    clean = pages.clean_html
    assert clean("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert clean('<a href="javascript:alert(1)">x</a>') == "<a>x</a>"
    assert clean('<a href="jav&#x09;ascript:alert(1)">x</a>') == "<a>x</a>"
    assert clean('<a href="https://numpy.org">np</a>') == '<a href="https://numpy.org">np</a>'
    assert clean('<a href="data:text/html,x">d</a>') == "<a>d</a>"
    assert clean('<img src="x" onerror="alert(1)">') == '<img src="x">'
    png = "data:image/png;base64,iVBORw0KGgo="
    assert clean(f'<img src="{png}" alt="a">') == f'<img src="{png}" alt="a">'
    assert clean('<img src="data:text/html;base64,PHA+">') == "<img>"
    cell = '<table><tr><td style="text-align: right; position: fixed">1</td></tr></table>'
    assert clean(cell) == (
        '<table><tbody><tr><td style="text-align: right;">1</td></tr></tbody></table>'
    )
    assert clean("<p>a &lt; b &amp; c</p>") == "<p>a &lt; b &amp; c</p>"
    assert clean('<svg onload="alert(1)"></svg>').startswith("&lt;svg")
    assert clean('<h2 id="x">X<a href="#x">¶</a></h2>') == (
        '<h2 id="user-content-x">X<a href="#user-content-x">¶</a></h2>'
    )
    assert clean(clean('<h2 id="x"></h2>')) == clean('<h2 id="x"></h2>')
    # the formgrader's script acts on these classes: a student's element has none of them
    assert clean('<div class="nbgrader_cell"><span class="tabbable">x</span></div>') == (
        "<div><span>x</span></div>"
    )
    code = '<div class="highlight hl-python"><pre><span class="k">def</span></pre></div>'
    assert clean(code) == code


def test_show_as_data_keeps_what_a_page_shows_and_drops_the_rest():
    width = "1 onerror=alert(1)"
    cell = new_code_cell(
        "x",
        execution_count=3,
        outputs=[
            new_output("display_data", data={"application/javascript": "alert(1)"}),
            new_output(
                "display_data",
                data={"application/vnd.jupyter.widget-view+json": {"model_id": "m"}},
            ),
            new_output(
                "display_data",
                data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
                metadata={"image/png": {"width": width, "height": 20}, "filenames": {"a": "b"}},
            ),
            new_output("stream", name="stdout", text="✓ softmax: rows sum to 1\n"),
            new_output("error", ename="CheckFailed", evalue="softmax: no", traceback=["no"]),
        ],
    )
    marked = new_markdown_cell("mine")
    marked.metadata["nbgrader"] = {"grade_id": '<img src=x onerror="alert(1)">', "solution": True}
    nb = new_notebook(cells=[cell, marked], metadata={"widgets": hp.widget_state()})
    nb, _ = pages.ShowAsData().preprocess(nb, {})
    outs = nb.cells[0].outputs
    assert [o.output_type for o in outs] == ["display_data", "stream", "error"]
    assert outs[0].data == {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}
    assert outs[0].metadata == {"image/png": {"height": 20}}
    assert outs[1].text == "✓ softmax: rows sum to 1\n"
    assert (outs[2].ename, outs[2].evalue, outs[2].traceback) == (
        "CheckFailed",
        "softmax: no",
        ["no"],
    )
    assert nb.cells[0].execution_count == 3
    assert (
        nb.cells[1].metadata.nbgrader.grade_id == "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"
    )
    assert "widgets" not in nb.metadata
    nbformat.validate(nb)


def test_an_attached_image_is_shown_and_an_attached_page_is_not(feedback):
    svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode()
    cell = new_markdown_cell("![a](attachment:a.svg) ![b](attachment:b.html)")
    cell["attachments"] = {"a.svg": {"image/svg+xml": svg}, "b.html": {"text/html": svg}}
    safe = feedback.environment.filters["markdown2html"]
    got = safe({"cell": cell, "resources": {}}, cell.source)
    srcs = Counter(part.split('"')[0] for part in got.split('src="')[1:])
    assert srcs == Counter(
        {"data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnLz4=": 1}
    )


@pytest.mark.parametrize("which", ["feedback", "formgrader"])
def test_mathjax_is_loaded_with_its_safe_extension(which, request):
    """MathJax typesets a student's TeX too: its Safe extension keeps ``\\href{javascript:…}`` out.

    The URL is nbconvert's (its ``mathjax()`` macro, which nbgrader's templates call
    without one): an nbconvert that dropped ``Safe`` would fail here.
    """
    from urllib.parse import parse_qs, urlsplit

    from bs4 import BeautifulSoup

    page = hp.render(request.getfixturevalue(which), honest_notebook())
    scripts = BeautifulSoup(page, "html.parser").find_all("script", src=True)
    mathjax = [s["src"] for s in scripts if "mathjax" in s["src"].lower()]
    assert len(mathjax) == 1, mathjax
    config = parse_qs(urlsplit(mathjax[0]).query)["config"][0].split(",")
    assert "Safe" in config, mathjax[0]
