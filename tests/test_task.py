"""Grading one submission as a pure function: data in, data out (the unit a Dask worker runs)."""

import shutil

import nbformat
import pytest

from autograders.handoff import course_data
from autograders.roster import load_config
from autograders.task import files_of, grade_submission
from tests.support import nbgrader_course as nc

pytestmark = pytest.mark.slow  # real answers in real child processes, real nbgrader

SOME = ["01_input", "07_softmax"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The course as data, taken from a course folder that is then deleted."""
    folder = nc.make_course(tmp_path_factory.mktemp("task"))
    nc.generate(folder)
    data = course_data(load_config(folder, None), folder, nc.ASSIGNMENT)
    shutil.rmtree(folder)  # a worker has no course folder: everything travels as data
    return data


def submission(answers):
    return {
        f"{stem}.ipynb": nbformat.writes(nc.student_notebook(stem, answers)).encode()
        for stem in SOME
    }


def test_the_solutions_score_full_marks_with_notebooks_and_feedback(course):
    got = grade_submission(course, "ada", submission("solution"), sandboxed=False)
    assert got["ok"], got["notes"]
    assert got["submitted"] == SOME
    for stem, got_nb in got["scores"].items():
        grades = got_nb["grades"]
        if stem in SOME:
            assert grades and all(v is not None and v > 0 for v in grades.values()), stem
        else:  # nbgrader's zero for a missing notebook
            assert all(v == 0 for v in grades.values()), stem
    assert {f"{s}.ipynb" for s in SOME} <= set(got["autograded"])
    assert {f"{s}.html" for s in SOME} <= set(got["feedback"])
    page = got["feedback"]["07_softmax.html"].decode()
    assert "BEGIN HIDDEN TESTS" not in page and "hidden tests: not shown" in page
    others = {p for p in course["source"] if p.endswith(".ipynb")} - set(got["autograded"])
    assert any("missing notebook(s): " in n for n in got["notes"]) == bool(others)


def test_untouched_notebooks_score_zero_and_say_why(course):
    got = grade_submission(course, "bea", submission(None), sandboxed=False)
    assert got["ok"], got["notes"]
    for stem in SOME:
        assert all(v == 0 for v in got["scores"][stem]["grades"].values()), stem
    page = got["feedback"]["07_softmax.html"].decode()
    assert "NotImplementedError" in page or "not graded" in page


def test_a_symbolic_link_and_a_broken_notebook_score_zero_and_are_named(course):
    files = submission("solution")
    files["07_softmax.ipynb"] = b"{not json"
    left_out = {"09_multi_head.ipynb": "a symbolic link"}
    got = grade_submission(course, "cy", files, left_out, sandboxed=False)
    assert got["submitted"] == ["01_input"]
    assert "09_multi_head.ipynb is a symbolic link: not graded, scored 0" in got["notes"]
    assert "unreadable notebook(s), scored 0: 07_softmax.ipynb" in got["notes"]  # not the link
    assert got["not_graded"] == {"09_multi_head.ipynb": got["notes"][0]}
    for stem in ("07_softmax", "09_multi_head"):
        assert all(v == 0 for v in got["scores"][stem]["grades"].values()), stem


def test_names_must_stay_inside_the_folder(course):
    with pytest.raises(ValueError, match="relative paths inside the folder"):
        grade_submission(course, "dee", {"../x.ipynb": b"{}"}, sandboxed=False)


def test_files_of_leaves_links_and_huge_files_out_and_reads_no_sub_folder_unless_asked(tmp_path):
    (tmp_path / "a.ipynb").write_text("{}")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("b")
    (tmp_path / "link.ipynb").symlink_to(tmp_path / "a.ipynb")
    (tmp_path / "huge.ipynb").write_bytes(b" " * (2**20 + 1))
    files, left_out = files_of(tmp_path, recursive=False, max_bytes=2**20)
    assert files == {"a.ipynb": b"{}"}
    assert left_out == {"link.ipynb": "a symbolic link", "huge.ipynb": "larger than 1 MiB"}
    assert set(files_of(tmp_path)[0]) == {"a.ipynb", "huge.ipynb", "sub/b.txt"}
    assert files_of(tmp_path, ignore=["sub", "huge*"])[0] == {"a.ipynb": b"{}"}
