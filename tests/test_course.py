"""The course notebooks: built from their sources, run by real kernels, graded by nbgrader."""

from __future__ import annotations

import filecmp
import subprocess
import sys

import nbformat
import pytest

from mhsa_helpers.exercises import EXERCISES, NOTEBOOKS, of_notebook
from tests.support import nbgrader_course as nc
from tests.support.fresh_mistakes import FRESH, THROUGH_KERNELS
from tests.support.kernels import execute_notebooks
from tests.support.mistakes import MISTAKES, WARNING_BUT_CORRECT

STEMS = [nb.stem for nb in NOTEBOOKS]


def test_the_notebooks_are_the_registrys():
    assert sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb")) == sorted(STEMS)
    assert sorted(p.stem for p in nc.STUDENT.glob("*.ipynb")) == sorted(STEMS)
    assert sorted(p.stem for p in (nc.ROOT / "course").glob("[0-9]*.py")) == sorted(STEMS)


@pytest.mark.slow
def test_build_reproduces_the_committed_notebooks(tmp_path):
    """``python course/build.py`` is a no-op on the repository: nobody edited its output."""
    subprocess.run(
        [sys.executable, "course/build.py", "--root", str(tmp_path)],
        cwd=nc.ROOT,
        env=nc.env(),
        check=True,
        capture_output=True,
    )
    for built, committed in (
        (tmp_path / "solutions", nc.SOLUTIONS.parent),
        (tmp_path / "notebooks", nc.STUDENT.parent),
    ):
        names = sorted(p.name for p in (built / nc.ASSIGNMENT).glob("*.ipynb"))
        assert names == sorted(f"{stem}.ipynb" for stem in STEMS)
        _, mismatch, errors = filecmp.cmpfiles(
            built / nc.ASSIGNMENT, committed / nc.ASSIGNMENT, names, shallow=False
        )
        assert not mismatch and not errors, f"run `python course/build.py`: {mismatch or errors}"
    for name in names:
        text = (nc.STUDENT / name).read_text()
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
        assert "check_hidden(" not in text


@pytest.fixture(scope="module")
def executed() -> dict:
    """Every solution notebook and every untouched student notebook, run by ``python3`` kernels.

    Two kernels at a time (the machine's two cores); each notebook beside
    copies of its own folder (the start-here and capstone notebooks read the
    other notebooks of their folder). ``{(kind, stem): (notebook, error)}``.
    """
    jobs = [(("solution", s), nc.SOLUTIONS / f"{s}.ipynb", nc.SOLUTIONS) for s in STEMS]
    jobs += [(("fresh", s), nc.STUDENT / f"{s}.ipynb", nc.STUDENT) for s in STEMS]
    return execute_notebooks(jobs, at_once=2)


@pytest.mark.slow
@pytest.mark.parametrize("stem", STEMS)
def test_solution_executes_top_to_bottom(stem, executed):
    """Every instructor notebook runs without an error or anything on stderr, and no cell
    ends by showing the repr of a plot object (``<Axes: …>``, ``<Figure size …>``)."""
    nb, error = executed[("solution", stem)]
    assert error is None, (stem, error)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", (stem, out.get("evalue"))
            assert out.get("name") != "stderr", (stem, out.get("text"))
            data = out.get("data", {})
            if any(kind.startswith("image/") for kind in data):
                continue  # a figure: its text/plain "<Figure size …>" is not what is shown
            shown = data.get("text/plain", "")
            assert not shown.startswith(("<Axes", "<Figure", "<matplotlib")), (stem, shown)


def test_sources_are_stored_without_outputs():
    for directory in (nc.SOLUTIONS, nc.STUDENT):
        for p in directory.glob("*.ipynb"):
            nb = nbformat.read(str(p), as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "code":
                    assert cell.outputs == [] and cell.execution_count is None, p.name


def test_graded_cells_carry_the_registrys_ids_and_points():
    for stem in STEMS:
        nb = nbformat.read(str(nc.SOLUTIONS / f"{stem}.ipynb"), as_version=4)
        meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
        answers = [m["grade_id"] for m in meta if m.get("solution")]
        tests = [(m["grade_id"], m["points"]) for m in meta if m.get("grade") and m["points"]]
        exercises = of_notebook(stem)
        assert answers == [e.answer_id for e in exercises], stem
        assert tests == [(e.grade_id, e.points) for e in exercises], stem
        free = [(m["grade_id"], m["locked"]) for m in meta if m.get("grade") and not m["points"]]
        assert free == ([("course_progress", True)] if stem == "00_start_here" else []), stem
        for c, m in zip(nb.cells, meta, strict=True):
            if m.get("solution"):
                assert c.source.index('"""') < c.source.index("### BEGIN SOLUTION"), stem
            if m.get("grade") and m["points"]:
                assert c.source.startswith('"""Check that'), (stem, c.source[:40])
                assert "### BEGIN HIDDEN TESTS" in c.source, stem
        setup = [m for m in meta if m.get("grade_id") == "setup"]
        assert len(setup) == 1 and setup[0]["locked"], stem


# --------------------------------------------------------------------------
# autograding: one nbgrader run over a small class
# --------------------------------------------------------------------------
# The catalogue is proved in-process in tests/test_checks.py and tests/test_catalogue.py;
# here every listed mistake goes through the grade command (nbgrader's autograde on Dask
# workers, each notebook in a sandboxed grading kernel), proving that the notebook's test
# cell carries its own hint into the graded notebook.
# the catalogue's, and those written without reading the checks that issue 23 lists
LISTED = MISTAKES | {k: FRESH[k] for k in THROUGH_KERNELS}
DELIVERED = sorted(LISTED)
# A right answer that says which program runs it: the grading kernel, whatever the notebook names.
PROBE_STEM = "07_softmax"
PROBE = "import sys\nprint('run by', sys.argv[0])\n" + (
    nc.answer_cells(nbformat.read(str(nc.SOLUTIONS / f"{PROBE_STEM}.ipynb"), 4))[
        "softmax_answer"
    ].source
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = nc.make_course(tmp_path_factory.mktemp("course"))
    nc.generate(course)
    nc.submit(course, "untouched", {s: nc.student_notebook(s) for s in STEMS})
    nc.submit(course, "perfect", {s: nc.student_notebook(s, "solution") for s in STEMS})
    for mistake in DELIVERED:
        stem, name, source, _ = LISTED[mistake]
        nc.submit(course, f"m_{mistake}", {stem: nc.student_notebook(stem, {name: source})})
    stem, name, source = WARNING_BUT_CORRECT
    nc.submit(course, "warnings", {stem: nc.student_notebook(stem, {name: source})})
    # the class by the grade command (two workers), the probe by stock nbgrader autograde
    nc.grade(course, "--workers", "2")
    nc.submit(course, "probe", {PROBE_STEM: nc.student_notebook(PROBE_STEM, {"softmax": PROBE})})
    nc.nbgrader(course, "autograde", nc.ASSIGNMENT, "--student", "probe", "--force")
    return course, nc.scores(course)


@pytest.mark.slow
def test_untouched_student_versions_score_zero(graded):
    _, s = graded
    for stem in STEMS:
        score, max_score = s["untouched"][stem]
        assert score == 0, stem
        assert (max_score > 0) == bool(of_notebook(stem)), stem  # 00 and 18 have no exercise


@pytest.mark.slow
def test_solutions_score_full_marks(graded):
    _, s = graded
    for stem in STEMS:
        score, max_score = s["perfect"][stem]
        assert score == max_score, (stem, score, max_score)
    assert sum(m for m in s["_max"].values()) >= 30


@pytest.mark.slow
@pytest.mark.parametrize("mistake", DELIVERED)
def test_a_mistake_loses_marks_and_gets_its_hint(graded, mistake):
    course, s = graded
    stem, _, _, hint = LISTED[mistake]
    score, max_score = s[f"m_{mistake}"][stem]
    assert score < max_score, (mistake, score, max_score)
    assert hint in nc.cell_outputs_text(course, f"m_{mistake}", stem), mistake


@pytest.mark.slow
def test_nbgrader_autograde_runs_submissions_in_the_grading_kernel(graded):
    course, s = graded
    text = nc.cell_outputs_text(course, "probe", PROBE_STEM)
    program = text.split("run by ", 1)[1].split()[0]
    assert program.endswith("autograders/kernel.py"), program
    score, max_score = s["probe"][PROBE_STEM]
    assert score == max_score > 0


@pytest.mark.slow
def test_right_values_with_numpy_warnings_lose_the_marks_and_are_told_why(graded):
    course, s = graded
    stem = WARNING_BUT_CORRECT[0]
    score, max_score = s["warnings"][stem]
    assert score < max_score, (score, max_score)
    assert "right values, but numpy warns" in nc.cell_outputs_text(course, "warnings", stem)


@pytest.mark.slow
@pytest.mark.parametrize("stem", STEMS)
def test_run_all_reaches_the_end_of_a_fresh_student_notebook(stem, executed):
    """Run All on an untouched notebook: every cell runs; each check fails in one line."""
    nb, error = executed[("fresh", stem)]
    assert error is None, (stem, error)  # a cell without the raises-exception tag failed
    for cell in nb.cells:
        outputs = cell.get("outputs", [])
        errors = [o for o in outputs if o.output_type == "error"]
        assert not errors, (stem, cell.source[:60], errors)  # no error box on a fresh notebook
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and meta.get("points"):  # "not yet": a ✗ line worth 0 points
            (result,) = [o for o in outputs if o.output_type == "execute_result"]
            assert result.data["text/plain"] == "0", result.data
            assert "\u2717 " in result.data["text/html"], result.data
            assert "not implemented yet" in result.data["text/html"], result.data
        elif meta.get("grade"):  # 00's progress: the last line on stderr, Validate's failure
            said = [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
            assert said and f"0 of {len(EXERCISES)} exercises pass" in said[-1], outputs


@pytest.mark.slow
def test_validate_on_00_agrees_with_the_progress_report(tmp_path):
    """Validate on 00 fails while the report counts exercises to go, and passes when none."""
    import io

    from nbgrader.validator import Validator

    from tests.support.nbgrader_course import course_config

    def validate(folder) -> str:
        out = io.StringIO()
        validator = Validator(config=course_config())
        validator.stream = out
        validator.validate_and_print(str(folder / "00_start_here.ipynb"))
        return out.getvalue()

    untouched, finished = tmp_path / "untouched", tmp_path / "finished"
    for folder, source in ((untouched, nc.STUDENT), (finished, nc.SOLUTIONS)):
        folder.mkdir()
        for p in source.glob("*.ipynb"):
            (folder / p.name).write_bytes(p.read_bytes())
    (finished / "00_start_here.ipynb").write_bytes(
        (nc.STUDENT / "00_start_here.ipynb").read_bytes()
    )
    said = validate(untouched)
    n = len(EXERCISES)
    assert "The following cell failed" in said and f"0 of {n} exercises pass; {n} to go" in said
    said = validate(finished)
    assert "Success! Your notebook passes all the tests." in said, said
