"""Every edit of graded cells or their nbgrader metadata is undone and named, never fatal.

The red team turned a test cell into markdown (keeping its metadata), deleted
one, added a graded cell of its own and duplicated a grade id: nbgrader's
Autograde raised ``KeyError: 'grade_id'`` and correct answers scored 0. Here
each edit, alone and all together, on a student whose answers are right:
nbgrader records the grade, the notebook keeps its full marks, the note
names the edit.
"""

import copy

import nbformat
import pytest

from autograders import integrity
from autograders.handoff import course_data
from autograders.roster import load_config
from autograders.task import grade_submission
from tests.support import nbgrader_course as nc

pytestmark = pytest.mark.slow  # real answers in real child processes, real nbgrader

SOFTMAX, HEADS = "07_softmax", "04_heads"
TEST_ID = "softmax_rows_sum_to_one"


def _cells(nb, **meta):
    return [
        c
        for c in nb.cells
        if all(c.get("metadata", {}).get("nbgrader", {}).get(k) == v for k, v in meta.items())
    ]


def _retype(cell, to="markdown"):
    cell.cell_type = to
    for key in ("outputs", "execution_count"):
        cell.pop(key, None)


def retyped(nb):
    _retype(_cells(nb, grade=True)[0])


def deleted(nb):
    nb.cells.remove(_cells(nb, grade=True)[0])


def duplicated(nb):
    for cell in _cells(nb, grade_id=TEST_ID) + _cells(nb, solution=True):
        twin = copy.deepcopy(cell)
        twin.id += "-copy"
        nb.cells.append(twin)


def moved(nb):
    test = _cells(nb, grade=True)[0]
    nb.cells.remove(test)
    nb.cells.insert(0, test)


def grade_id_changed(nb):
    _cells(nb, grade=True)[0].metadata.nbgrader["grade_id"] = "my_own_id"


def points_changed(nb):
    _cells(nb, grade=True)[0].metadata.nbgrader["points"] = 100


def bonus(nb):
    for k, meta in enumerate(
        [
            {"grade": True, "grade_id": "bonus", "points": 50, "locked": False, "solution": False},
            {"grade": True, "grade_id": "bad", "points": -5, "locked": False, "solution": False},
            {"grade": False, "grade_id": "ans", "solution": True, "locked": False},
        ]
    ):
        cell = nbformat.v4.new_code_cell("assert True")
        cell.metadata["nbgrader"] = {**meta, "schema_version": 3, "task": False}
        cell.id = f"bonus-{k}"
        nb.cells.append(cell)


def metadata_removed(nb):
    del _cells(nb, grade=True)[0].metadata["nbgrader"]


def unlocked(nb):
    _cells(nb, grade=True)[0].metadata.nbgrader["locked"] = False


def fake_hidden(nb):
    _cells(nb, grade=True)[
        0
    ].source += "\n### BEGIN HIDDEN TESTS\nimport sys\nsys.exit(0)\n### END HIDDEN TESTS"


def answer_retyped(nb):
    _retype(_cells(nb, solution=True)[0], "raw")


def foreign_kernel(nb):
    nb.metadata["kernelspec"] = {"name": "julia-1.9", "display_name": "Julia", "language": "julia"}


#: edit -> what the note must say
EDITS = {
    retyped: "turned into markdown (restored)",
    deleted: "deleted (restored)",
    duplicated: "appears twice (the copy is not graded)",
    moved: "graded cells moved (graded as released)",
    grade_id_changed: "had its grade id changed (restored)",
    points_changed: "nbgrader metadata changed (points) (restored)",
    bonus: "extra graded cell 'bonus' added (not graded)",
    metadata_removed: "nbgrader metadata changed (all of it removed) (restored)",
    unlocked: "nbgrader metadata changed (locked) (restored)",
    fake_hidden: f"test cell {TEST_ID} edited (restored)",
    answer_retyped: "answer cell softmax_answer turned into raw (restored)",
    foreign_kernel: "kernelspec 'julia-1.9' replaced by the grading kernel",
}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    folder = nc.make_course(tmp_path_factory.mktemp("tamper"))
    nc.generate(folder)
    return course_data(load_config(folder, None), folder, nc.ASSIGNMENT)


def _submission(edits, stem=SOFTMAX) -> dict:
    nb = nc.student_notebook(stem, "solution")
    for edit in edits:
        edit(nb)
    heads = nc.student_notebook(HEADS, "solution")
    return {
        f"{stem}.ipynb": nbformat.writes(nb).encode(),
        f"{HEADS}.ipynb": nbformat.writes(heads).encode(),
    }


def _grade(course, edits):
    got = grade_submission(course, "eve", _submission(edits), sandboxed=False)
    assert got["ok"], got["notes"]
    return got


def _full(got, stem) -> bool:
    return all(v is not None and v > 0 for v in got["scores"][stem]["grades"].values())


@pytest.mark.parametrize("edit", list(EDITS), ids=[e.__name__ for e in EDITS])
def test_each_edit_is_undone_and_named(course, edit):
    """The notebook is graded as released: full marks for the right answer, the edit named."""
    got = _grade(course, [edit])
    assert _full(got, SOFTMAX) and _full(got, HEADS), got["scores"]
    assert any(EDITS[edit] in n for n in got["notes"]), got["notes"]
    assert not [n for n in got["notes"] if n.startswith(HEADS)], got["notes"]


def test_all_edits_together(course):
    """All at once: full marks; edits of different cells each named (on the same test cell,
    a later edit may hide an earlier one)."""
    got = _grade(course, [e for e in EDITS if e not in (deleted, metadata_removed)])
    assert _full(got, SOFTMAX) and _full(got, HEADS), got["scores"]
    for edit in (retyped, duplicated, bonus, answer_retyped, foreign_kernel):
        assert any(EDITS[edit] in n for n in got["notes"]), (EDITS[edit], got["notes"])
    got = _grade(course, [deleted, bonus, answer_retyped, foreign_kernel])
    assert _full(got, SOFTMAX), got["scores"]


def test_an_honest_submission_has_no_notes(course):
    got = _grade(course, [])
    assert _full(got, SOFTMAX) and _full(got, HEADS)
    assert [n for n in got["notes"] if "missing notebook" not in n] == []


def test_a_deleted_answer_cell_is_graded_as_unanswered(course):
    """Its released stub comes back (never the instructor's solution), and scores 0."""
    nb = nc.student_notebook(SOFTMAX, "solution")
    nb.cells.remove(_cells(nb, solution=True)[0])
    src = nbformat.read(str(nc.SOLUTIONS / f"{SOFTMAX}.ipynb"), 4)
    stub = "# YOUR CODE HERE\nraise NotImplementedError()"
    rebuilt, notes = integrity.restore(src, nb, SOFTMAX, "mhsa-grader", stub)
    answer = _cells(rebuilt, solution=True)[0].source
    assert "raise NotImplementedError()" in answer and "BEGIN SOLUTION" not in answer
    assert notes == [f"{SOFTMAX}: answer cell softmax_answer deleted (restored)"]


def test_a_copied_answer_cell_counts_like_in_the_kernel(course):
    """An honest student who fixed their answer in a copy below keeps the points."""
    nb = nc.student_notebook(SOFTMAX, {"softmax": "def softmax(Z, axis=-1):\n    return Z\n"})
    fixed = copy.deepcopy(_cells(nb, solution=True)[0])
    fixed.id += "-fixed"
    fixed.source = nc.answer_cells(nc.student_notebook(SOFTMAX, "solution"))[
        "softmax_answer"
    ].source
    nb.cells.insert(nb.cells.index(_cells(nb, grade=True)[0]), fixed)
    got = grade_submission(
        course, "fay", {f"{SOFTMAX}.ipynb": nbformat.writes(nb).encode()}, sandboxed=False
    )
    assert got["ok"] and _full(got, SOFTMAX), (got["scores"], got["notes"])
