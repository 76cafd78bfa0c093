"""The static edition's pages (book/pages.py) and its build (book/build.py).

The pages' tests run without a kernel, on the committed notebooks with outputs put in
by hand, as do the command line's; the slow ones build partial sites with the site
environment (the README's site command's), twice, and compare them byte for byte;
tests/test_site.py builds the whole site and reads it in Chromium.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from contextlib import ExitStack
from pathlib import Path

import nbformat
import pytest

import book.build
from book.embed import html
from book.fonts import fonts_used, page_css
from book.pages import (
    ARCHIVE,
    BINDER,
    DOWNLOADS,
    REFERENCE_TAG,
    SOCKET_PATH,
    SOLUTIONS,
    STUDENT,
    WIDGET,
    PageFailed,
    archive,
    merged_streams,
    page,
    plain,
    rows_for_sphinx,
    socket_folder,
    title,
    unclocked,
)
from book.titles import plain as plain_title
from mhsa_helpers.exercises import NOTEBOOKS, of_notebook

STEMS = [nb.stem for nb in NOTEBOOKS]
ROOT = Path(__file__).resolve().parents[1]


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
    assert "00:01" not in html and "[" not in html  # the bar's clock, which no build repeats


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
    assert plain_title(tex) == shown
    assert "$" not in plain_title(tex) and "\\" not in plain_title(tex)


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


def test_a_tagged_equation_with_rows_reaches_mathjax_without_a_split():
    """Sphinx wraps an equation holding \\\\ in ``split``, where MathJax refuses ``\\tag``."""
    cell = "text \\\\ kept $$M = \\begin{cases} 0 \\\\ 1 \\end{cases} \\tag{6.1}$$ and $a$"
    assert rows_for_sphinx(cell) == (
        "text \\\\ kept $$M = \\begin{cases} 0 \\cr  1 \\end{cases} \\tag{6.1}$$ and $a$"
    )


def test_the_front_page_lists_the_notebooks_by_title_and_links_the_archive():
    text = book.build.index(STEMS)
    assert "1. [Step 5 — The score matrix Z](pages/05_scores.ipynb)" in text
    last = "After the backward pass — Training a tiny transformer"
    assert f"1. [{last}](pages/18_training.ipynb)" in text
    listed = [line for line in text.splitlines() if line.startswith("1. [")]
    assert [line.rsplit("(pages/", 1)[1] for line in listed] == [f"{s}.ipynb)" for s in STEMS]
    assert all("$" not in line and "\\" not in line.split("](")[0] for line in listed), listed
    assert f'<a href="{DOWNLOADS}/{ARCHIVE}" download>' in text


def test_a_title_is_plain_text():
    assert title("05_scores") == "Step 5 — The score matrix Z"
    marked = "The $\\operatorname{softmax}(z)_i$ of **x** and `f`"
    assert plain(marked) == "The softmax(z)_i of x and f"  # as the sidebar shows it


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


def test_consecutive_prints_are_one_output_whatever_the_kernels_timing():
    def out(name, text):
        return nbformat.v4.new_output("stream", name=name, text=text)

    shown = nbformat.v4.new_output("display_data", data={"text/plain": "x"})
    outputs = [out("stdout", "a\n"), out("stdout", "b\n"), shown, out("stdout", "c\n")]
    outputs += [out("stderr", "d\n"), out("stderr", "e\n"), out("stdout", "f\n")]
    merged = merged_streams(outputs)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in merged] == [
        ("stream", "stdout", "a\nb\n"),
        ("display_data", None, None),
        ("stream", "stdout", "c\n"),
        ("stream", "stderr", "d\ne\n"),
        ("stream", "stdout", "f\n"),
    ]


@pytest.mark.parametrize(
    ("printed", "shown"),
    [
        (
            "held-out accuracy 100.00% after 600 steps (3.6 s); 99% first reached after "
            "75 steps (0.48 s)\n",
            "held-out accuracy 100.00% after 600 steps; 99% first reached after 75 steps\n",
        ),
        (
            " 600/600 [00:03&lt;00:00, 219.71step/s, loss 0.0000 · held-out accuracy 100.0%]",
            " 600/600 [loss 0.0000 · held-out accuracy 100.0%]",
        ),
        (
            "training:  40%|████  | 240/600 [01:02:03<?, ?step/s]\n",
            "training:  40%|████  | 240/600\n",
        ),
        ("a (3 s) wait, 12.5 s in all, d_k (8)\n", "a wait, 12.5 s in all, d_k (8)\n"),
        (  # as tqdm's widget writes it: figure spaces
            "\u2007600/600\u2007[00:02&lt;00:00,\u2007105.65step/s,\u2007loss\u20070.0000]",
            "\u2007600/600\u2007[loss\u20070.0000]",
        ),
        ("\u2007600/600\u2007[00:02&lt;00:00]", "\u2007600/600"),
    ],
)
def test_a_runs_clock_readings_are_left_out_of_the_page(printed, shown):
    """The seconds a run took and tqdm's clock differ from build to build; nothing else goes."""
    assert unclocked(printed) == shown
    out = nbformat.v4.new_output("stream", name="stdout", text=printed)
    assert [o.text for o in merged_streams([out])] == [shown]


def test_the_kernels_sockets_go_where_their_paths_fit(tmp_path):
    """In the build's folder where a socket's path fits in a Unix socket address, else in a
    private folder of /tmp, removed with the build's."""
    short = Path(tempfile.mkdtemp(prefix="s", dir="/tmp"))
    long = tmp_path / ("x" * SOCKET_PATH)
    long.mkdir()
    try:
        with ExitStack() as stack:
            assert socket_folder(short, stack) == short / "k"
            elsewhere = socket_folder(long, stack)
            assert elsewhere.parent == Path("/tmp") and elsewhere.stat().st_mode & 0o777 == 0o700
            assert (short / "k").stat().st_mode & 0o777 == 0o700
        assert not elsewhere.exists()
    finally:
        shutil.rmtree(short)


# ---------------------------------------------------------------------------- the build


def _readme_site_command() -> str:
    lines = (ROOT / "README.md").read_text().splitlines()
    return lines[lines.index("<!-- site-command -->") + 2].strip()


def test_without_the_site_environment_the_build_names_the_readmes_site_command():
    """A Python with no packages at all (``-S``: no site-packages) is told what to run."""
    r = subprocess.run(
        [sys.executable, "-I", "-S", "book/build.py", "--only", "07_softmax"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert "site environment" in r.stderr and _readme_site_command() in r.stderr, r.stderr
    assert "sphinx==" in r.stderr, r.stderr  # what it lacks


def test_the_packages_missing_are_named_with_the_version_wanted(tmp_path):
    from importlib.metadata import version

    have = version("nbformat")
    (tmp_path / "base.txt").write_text(f"nbformat=={have}  # present\n-e .\n")
    (tmp_path / "site.txt").write_text(
        "# the site\n-r base.txt\npytest==0.0.1\nno-such-package-mhsa==1.0\n-r more.txt\n"
    )
    (tmp_path / "more.txt").write_text("no-such-package-mhsa-either[extra]==2.0\n")
    missing = book.build.missing_packages(tmp_path / "site.txt")
    assert missing == [  # the file's own, then what it includes
        f"pytest==0.0.1 ({version('pytest')} installed)",
        "no-such-package-mhsa==1.0",
        "no-such-package-mhsa-either[extra]==2.0",
    ]


def test_a_notebook_built_by_another_python_is_the_same_notebook(tmp_path):
    """course/build.py writes the Python it runs on into ``language_info``: that alone is no
    edit of the course; any other difference is."""
    committed = SOLUTIONS / "05_scores.ipynb"
    nb = nbformat.read(committed, as_version=4)
    nb.metadata.language_info.version = "3.11.99"
    other = tmp_path / "other.ipynb"
    nbformat.write(nb, other)
    assert other.read_bytes() != committed.read_bytes()
    assert book.build.same_notebook(committed, other)
    nb.cells[0].source += " An edit."
    nbformat.write(nb, other)
    assert not book.build.same_notebook(committed, other)


def _pins(path: Path) -> dict[str, str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return dict(line.split("==") for line in lines if "==" in line)


def test_the_site_environment_pins_what_it_shares_with_the_developers_as_they_do():
    """The build runs course/build.py (jupytext) as the developers' environment does."""
    site, dev = _pins(ROOT / "requirements-site.txt"), _pins(ROOT / "requirements-dev.txt")
    assert "jupytext" in site
    assert {k: (v, dev[k]) for k, v in site.items() if k in dev and dev[k] != v} == {}


@pytest.fixture
def no_build(monkeypatch):
    """book.build.main with the build itself replaced by a note of where it would write."""
    calls = []
    monkeypatch.setattr(book.build, "build", lambda out, stems, at_once: calls.append((out, stems)))
    return calls


def test_only_writes_a_partial_site_elsewhere_and_says_so(no_build, capsys):
    assert book.build.main(["--only", "07_softmax", "05_scores"]) == 0
    assert no_build == [(ROOT / "build" / "site-partial", ["05_scores", "07_softmax"])]
    said = capsys.readouterr().out
    assert f"partial site (2 of {len(STEMS)} pages)" in said and "build/site-partial/" in said, said


def test_only_refuses_to_write_over_the_full_site(no_build, capsys):
    with pytest.raises(SystemExit) as stop:
        book.build.main(["--only", "07_softmax", "--out", str(ROOT / "build" / "site")])
    assert stop.value.code == 2 and no_build == []
    assert "build/site/ is the full one" in capsys.readouterr().err


def test_the_build_refuses_to_replace_a_folder_that_is_not_a_site(no_build, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit):
        book.build.main(["--out", str(tmp_path)])
    assert no_build == [] and (tmp_path / "notes.txt").read_text() == "mine"
    assert "not a site" in capsys.readouterr().err
    (tmp_path / "notes.txt").unlink()  # an empty folder, or an earlier site, will do
    assert book.build.main(["--out", str(tmp_path)]) == 0
    (tmp_path / "index.html").write_text("<p>an earlier build</p>")
    (tmp_path / "_static").mkdir()
    assert book.build.main(["--out", str(tmp_path)]) == 0
    assert [out for out, _ in no_build] == [tmp_path, tmp_path]


# ---------------------------------------------------------------------------- building (slow)

#: Pages whose builds once differed from run to run, built twice: a check's lines printed in
#: several messages (17), the training's seconds and progress bar (18, with its widgets).
TWICE = ("17_backward", "18_training")
#: What a build leaves of the kernels' warning that they talk over TCP unencrypted.
TCP_WARNING = "without encryption"


@pytest.fixture(scope="module")
def site_python() -> Path:
    """The site environment's Python, made as tests/test_site.py makes it."""
    from tests.test_site import site_command, site_environment, split_command

    setup, _ = split_command(site_command((ROOT / "README.md").read_text()))
    return site_environment(setup) / "bin" / "python"


def _build(python: Path, root: Path, args: list[str], tmp: Path, ok: bool = True) -> str:
    """``book/build.py args`` run in the repository ``root`` with ``tmp`` as its temporary
    folder (TMPDIR); what it printed."""
    tmp.mkdir()
    r = subprocess.run(
        [str(python), "book/build.py", *args],
        cwd=root,
        env=dict(os.environ, TMPDIR=str(tmp)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1200,
    )
    if ok:
        assert r.returncode == 0, (
            f"book/build.py {args} failed ({r.returncode}):\n{r.stdout[-6000:]}"
        )
    else:
        assert r.returncode != 0, f"book/build.py {args} did not fail:\n{r.stdout[-6000:]}"
    return r.stdout


def _copy_repository(dest: Path) -> Path:
    """What a build reads of the repository, copied to ``dest`` (another checkout)."""
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("book", "course", "mhsa_helpers", "solutions", "notebooks", "autograders"):
        shutil.copytree(ROOT / name, dest / name, ignore=skip)
    for path in [*ROOT.glob("requirements*.txt"), *ROOT.glob("*.py"), ROOT / "README.md"]:
        shutil.copy2(path, dest / path.name)
    for name in ("pyproject.toml", "LICENSE"):  # LICENSE: the footer names it (book/conf.py)
        shutil.copy2(ROOT / name, dest / name)
    return dest


def _files(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}


def _first_difference(a: bytes, b: bytes) -> str:
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return f"at byte {at}: {a[max(0, at - 80) : at + 80]!r} / {b[max(0, at - 80) : at + 80]!r}"


@pytest.mark.slow
def test_two_builds_of_one_commit_are_byte_for_byte_the_same(site_python, tmp_path):
    """A partial site built twice, here and in a copy of the repository (another checkout),
    is the same file for file, byte for byte. Each build says when each notebook has run,
    no kernel warns that it talks over TCP, the partial site goes to build/site-partial/ and
    nothing else stays: not in build/, not in the temporary folder."""
    stems = list(TWICE)
    said_a = _build(
        site_python, ROOT, ["--only", *stems, "--out", str(tmp_path / "a")], tmp_path / "tmp-a"
    )
    copy = _copy_repository(tmp_path / "copy")
    said_b = _build(site_python, copy, ["--only", *stems], tmp_path / "tmp-b")

    a, b = _files(tmp_path / "a"), _files(copy / "build" / "site-partial")
    assert all(f"pages/{stem}.html" in a for stem in stems), sorted(a)
    assert sorted(a) == sorted(b), sorted(set(a) ^ set(b))
    differ = {name: _first_difference(a[name], b[name]) for name in a if a[name] != b[name]}
    assert not differ, f"{len(differ)} of {len(a)} files differ: {differ}"

    assert sorted(p.name for p in (copy / "build").iterdir()) == ["site-partial"]
    for said, tmp in ((said_a, tmp_path / "tmp-a"), (said_b, tmp_path / "tmp-b")):
        assert list(tmp.iterdir()) == [], "the build left its scratch behind"
        assert TCP_WARNING not in said, said
        for stem in stems:
            lines = re.findall(rf"^  {stem} +\d+\.\d s$", said, re.M)
            assert len(lines) == 1, f"{stem}: {lines} in\n{said}"


@pytest.mark.slow
def test_an_edited_course_source_reaches_its_page_and_the_full_site_is_left_alone(
    site_python, tmp_path
):
    """In another checkout: a sentence added to course/05_scores.py (not built with
    course/build.py) shows on the page ``--only 05_scores`` builds, the notebooks rebuilt
    are named; the full site build/site/ is not touched, earlier builds' scratch is
    removed. Then a source course/build.py refuses stops the build, saying so, and the
    scratch is removed all the same."""
    copy = _copy_repository(tmp_path / "copy")
    for old in ("book", "jupyter_execute"):  # what builds left in build/ before
        (copy / "build" / old / "x").mkdir(parents=True)
    full = copy / "build" / "site"
    (full / "_static").mkdir(parents=True)
    (full / "index.html").write_text("<p>the full site, built earlier</p>")
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in full.rglob("*") if p.is_file()}

    source = copy / "course" / "05_scores.py"
    text = source.read_text()
    sentence = "A sentence test_book added to the course source, to see it reach the page."
    edited = re.sub(r"^(# # .*\n)", rf"\1#\n# {sentence}\n", text, count=1, flags=re.M)
    assert edited != text
    source.write_text(edited)
    said = _build(site_python, copy, ["--only", "05_scores"], tmp_path / "tmp-a")
    page = (copy / "build" / "site-partial" / "pages" / "05_scores.html").read_text()
    assert sentence in page
    for kind in ("solutions", "notebooks"):
        assert sentence in (copy / kind / "mhsa" / "05_scores.ipynb").read_text()
        assert f"{kind}/mhsa/05_scores.ipynb" in said, said
    assert "rebuilt" in said and "solutions/mhsa/07_softmax.ipynb" not in said, said
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in full.rglob("*") if p.is_file()}
    assert after == before, "the partial build touched the full site"
    assert sorted(p.name for p in (copy / "build").iterdir()) == ["site", "site-partial"]
    assert list((tmp_path / "tmp-a").iterdir()) == []

    broken = re.sub(
        r"^def attention_scores\(.*\):$", "def attention_scores(Q):", edited, flags=re.M
    )
    assert broken != edited
    source.write_text(broken)
    said = _build(site_python, copy, ["--only", "05_scores"], tmp_path / "tmp-b", ok=False)
    assert "course/build.py could not build the notebooks" in said and "attention_scores" in said
    assert sentence in (copy / "build" / "site-partial" / "pages" / "05_scores.html").read_text()
    assert list((tmp_path / "tmp-b").iterdir()) == []
