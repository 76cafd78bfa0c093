"""The course notebooks with real nbgrader, real kernels, in a temporary course directory."""

from __future__ import annotations

import filecmp

import nbformat
import pytest
from nbclient import NotebookClient

from tests import nbgrader_course as nc
from tests.mistakes import MISTAKES, WARNING_BUT_CORRECT

STEMS = sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb"))


def test_eleven_notebooks_in_course_order():
    assert STEMS[0] == "00_start_here" and STEMS[-1] == "10_capstone"
    assert len(STEMS) == 11
    assert sorted(p.stem for p in nc.STUDENT.glob("*.ipynb")) == STEMS


@pytest.mark.parametrize("stem", STEMS)
def test_solution_executes_top_to_bottom(stem, tmp_path):
    """Every instructor notebook runs without an error or anything on stderr."""
    nb = nbformat.read(str(nc.SOLUTIONS / f"{stem}.ipynb"), as_version=4)
    # run beside copies of the *solutions* (the start-here and capstone
    # notebooks read the other notebooks of their folder)
    for p in nc.SOLUTIONS.glob("*.ipynb"):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", (stem, out.get("evalue"))
            assert out.get("name") != "stderr", (stem, out.get("text"))


def test_sources_are_stored_without_outputs():
    for directory in (nc.SOLUTIONS, nc.STUDENT):
        for p in directory.glob("*.ipynb"):
            nb = nbformat.read(str(p), as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "code":
                    assert cell.outputs == [] and cell.execution_count is None, p.name


def test_every_step_has_graded_answer_and_hidden_tests():
    for stem in STEMS[1:]:
        nb = nbformat.read(str(nc.SOLUTIONS / f"{stem}.ipynb"), as_version=4)
        meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
        answers = [c for c, m in zip(nb.cells, meta, strict=True) if m.get("solution")]
        tests = [c for c, m in zip(nb.cells, meta, strict=True) if m.get("grade")]
        assert answers and tests, stem
        for a in answers:
            assert a.source.index('"""') < a.source.index("### BEGIN SOLUTION"), stem
        for t in tests:
            assert t.source.startswith('"""Check that'), (stem, t.source[:40])
        assert any("### BEGIN HIDDEN TESTS" in t.source for t in tests), stem
        setup = [c for c, m in zip(nb.cells, meta, strict=True) if m.get("grade_id") == "setup"]
        assert setup and setup[0].metadata.nbgrader["locked"], stem


def test_student_versions_are_what_nbgrader_generates(tmp_path):
    course = nc.make_course(tmp_path)
    nc.nbgrader(course, "generate_assignment", nc.ASSIGNMENT, "--force")
    generated = course / "notebooks" / nc.ASSIGNMENT
    names = sorted(p.name for p in generated.glob("*.ipynb"))
    assert names == sorted(p.name for p in nc.STUDENT.glob("*.ipynb"))
    _, mismatch, errors = filecmp.cmpfiles(generated, nc.STUDENT, names, shallow=False)
    assert not mismatch and not errors, f"regenerate notebooks/: {mismatch or errors}"
    for name in names:
        text = (nc.STUDENT / name).read_text()
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
        assert "_hidden(" not in text


# --------------------------------------------------------------------------
# autograding: one nbgrader run over a small class
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = nc.make_course(tmp_path_factory.mktemp("course"))
    nc.nbgrader(course, "generate_assignment", nc.ASSIGNMENT, "--force")
    nc.submit(course, "untouched", {s: nc.student_notebook(s) for s in STEMS})
    nc.submit(course, "perfect", {s: nc.student_notebook(s, "solution") for s in STEMS})
    for mistake, (stem, name, source, _) in MISTAKES.items():
        nc.submit(course, f"m_{mistake}", {stem: nc.student_notebook(stem, {name: source})})
    stem, name, source = WARNING_BUT_CORRECT
    nc.submit(course, "warnings", {stem: nc.student_notebook(stem, {name: source})})
    nc.nbgrader(course, "autograde", nc.ASSIGNMENT, "--force")
    return course, nc.scores(course)


def test_untouched_student_versions_score_zero(graded):
    _, s = graded
    for stem in STEMS:
        score, max_score = s["untouched"][stem]
        assert score == 0, stem
        if stem != "00_start_here":
            assert max_score > 0, stem


def test_solutions_score_full_marks(graded):
    _, s = graded
    for stem in STEMS:
        score, max_score = s["perfect"][stem]
        assert score == max_score, (stem, score, max_score)
    assert sum(m for m in s["_max"].values()) >= 30


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_marks_and_gets_its_hint(graded, mistake):
    course, s = graded
    stem, _, _, hint = MISTAKES[mistake]
    score, max_score = s[f"m_{mistake}"][stem]
    assert score < max_score, (mistake, score, max_score)
    assert hint in nc.cell_outputs_text(course, f"m_{mistake}", stem), mistake


def test_correct_answer_with_numpy_warnings_gets_full_marks(graded):
    _, s = graded
    stem = WARNING_BUT_CORRECT[0]
    score, max_score = s["warnings"][stem]
    assert score == max_score, (score, max_score)
