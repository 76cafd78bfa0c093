"""Class-scale grading with real nbgrader: hostile submissions, parallel = serial, resuming."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time

import nbformat
import pytest

from tests import nbgrader_course as nc
from tests.mistakes import HOSTILE, MISTAKES

pytestmark = pytest.mark.slow  # real nbgrader and grading kernels

STEMS = sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb"))
SOFTMAX = "07_softmax"
WRONG = "def softmax(Z, axis=-1):\n    return np.zeros_like(Z)\n"
RIGHT = nc.answer_cells(nbformat.read(str(nc.SOLUTIONS / f"{SOFTMAX}.ipynb"), 4))[
    "softmax_answer"
].source


def softmax_nb(answer=WRONG):
    return nc.student_notebook(SOFTMAX, {"softmax": answer})


def softmax_test_cell(nb):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))


def edited():
    nb = softmax_nb()
    softmax_test_cell(nb).source = "assert True"
    return nb


def deleted():
    nb = softmax_nb()
    nb.cells.remove(softmax_test_cell(nb))
    return nb


def recreated():
    nb = softmax_nb()
    cell = softmax_test_cell(nb)
    cell.metadata = {}
    cell.source = "pass"
    return nb


def retyped():
    nb = softmax_nb()
    cell = softmax_test_cell(nb)
    cell.cell_type = "markdown"
    for key in ("outputs", "execution_count"):
        cell.pop(key, None)
    return nb


def foreign_kernel():
    nb = softmax_nb(RIGHT)
    nb.metadata["kernelspec"] = {"name": "julia-1.9", "display_name": "Julia", "language": "julia"}
    return nb


PATCH_CHECKS = (
    "from mhsa_helpers import checks as _c\n"
    "_c.check = lambda *a, **k: None\n"
    "_c.check_hidden = lambda *a, **k: None\n" + WRONG
)
LOOP = "def softmax(Z, axis=-1):\n    while True:\n        pass\n"
# Address space reserved in 1 GiB blocks without touching it: the kernel's 3 GiB
# limit is reached in microseconds, long before any time limit however busy the
# machine is (a bomb that touches its pages raced the 8 s cell limit on a loaded
# CI machine).
BOMB = (
    "def softmax(Z, axis=-1):\n    hog = []\n    while True:\n        hog.append(np.empty(2**27))\n"
)
FLOOD = (
    "def softmax(Z, axis=-1):\n    for i in range(200_000):\n"
    "        print('flood', i)\n    return np.zeros_like(Z)\n"
)
STDERR = "import sys\n\n" + RIGHT.replace(
    "### BEGIN SOLUTION", "### BEGIN SOLUTION\n    print('debug', file=sys.stderr)"
)

# student -> (notebooks, the note the summary must give, does the softmax test keep points?)
HOSTILE_CLASS = {
    "h_assert_true": (lambda: {SOFTMAX: edited()}, "edited (restored)", False),
    "h_deleted": (lambda: {SOFTMAX: deleted()}, "deleted (restored)", False),
    "h_recreated": (lambda: {SOFTMAX: recreated()}, "deleted (restored)", False),
    "h_retyped": (lambda: {SOFTMAX: retyped()}, "turned into markdown", False),
    "h_patch_allclose": (
        lambda: {SOFTMAX: softmax_nb(HOSTILE["patches_allclose"][2])},
        "numpy monkeypatched",
        False,
    ),
    "h_patch_testing": (
        lambda: {SOFTMAX: softmax_nb(HOSTILE["patches_testing"][2])},
        "numpy monkeypatched",
        False,
    ),
    "h_patch_checks": (
        lambda: {SOFTMAX: softmax_nb(PATCH_CHECKS)},
        "fails in a clean process",
        False,
    ),
    "h_calls_reference": (
        lambda: {SOFTMAX: softmax_nb(HOSTILE["calls_reference"][2])},
        "called the reference implementation",
        False,
    ),
    "h_endless_loop": (lambda: {SOFTMAX: softmax_nb(LOOP)}, "time limit", False),
    "h_memory_bomb": (lambda: {SOFTMAX: softmax_nb(BOMB)}, "memory limit reached", False),
    "h_output_flood": (lambda: {SOFTMAX: softmax_nb(FLOOD)}, "output flood cut", False),
    "h_stderr": (lambda: {SOFTMAX: softmax_nb(STDERR)}, "wrote to stderr", False),
    "h_corrupt_json": (
        lambda: {SOFTMAX: "{not json", "01_input": nc.student_notebook("01_input", "solution")},
        "unreadable notebook(s), scored 0: 07_softmax",
        False,
    ),
    "h_missing": (
        lambda: {"01_input": nc.student_notebook("01_input", "solution")},
        "missing notebook(s)",
        False,
    ),
    "h_kernelspec": (lambda: {SOFTMAX: foreign_kernel()}, "replaced by the grading kernel", True),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    course = nc.make_course(tmp_path_factory.mktemp("hostile"), "c.Execute.timeout = 8\n")
    nc.nbgrader(course, "generate_assignment", nc.ASSIGNMENT, "--force")
    nc.submit(course, "perfect", {s: nc.student_notebook(s, "solution") for s in STEMS})
    for student, (make, _, _) in HOSTILE_CLASS.items():
        nc.submit(course, student, make())
    proc = nc.grade(course, "--workers", "2")
    return course, nc.grades(course), proc.stdout


def test_an_honest_student_in_a_hostile_class_gets_full_marks(hostile):
    course, grades, _ = hostile
    mine = {k: v for k, v in grades.items() if k[0] == "perfect"}
    assert mine and all(v > 0 for v in mine.values())
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        sub = gb.find_submission(nc.ASSIGNMENT, "perfect")
        assert sub.score == sub.max_score > 0


@pytest.mark.parametrize("student", sorted(HOSTILE_CLASS))
def test_hostile_submission_gets_no_credit_and_is_named(hostile, student):
    _, grades, summary = hostile
    _, note, keeps_points = HOSTILE_CLASS[student]
    line = next((ln for ln in summary.splitlines() if ln.startswith(f"! {student}:")), "")
    assert note in line, f"summary line for {student}: {line!r}"
    score = grades.get((student, SOFTMAX, "softmax_rows_sum_to_one"), 0)
    if keeps_points:
        assert score > 0, student
    else:
        assert score == 0, (student, score)


def test_corrupt_notebook_costs_only_that_notebook(hostile):
    _, grades, _ = hostile
    first = {k: v for k, v in grades.items() if k[:2] == ("h_corrupt_json", "01_input")}
    assert first and all(v > 0 for v in first.values())


def test_feedback_hides_hidden_tests_and_shows_hints(hostile):
    course, _, _ = hostile
    nc.nbgrader(course, "generate_feedback", nc.ASSIGNMENT, "--student", "h_patch_allclose")
    html = course / "feedback" / "h_patch_allclose" / nc.ASSIGNMENT / f"{SOFTMAX}.html"
    text = html.read_text()
    assert "check_hidden" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "hidden tests: not shown" in text
    assert "has been replaced" in text


# --------------------------------------------------------------------------
# parallel grading = serial nbgrader autograde; resuming after a kill
# --------------------------------------------------------------------------
# Three notebooks per student keep these tests fast; the hostile class and
# tests/test_course.py grade every notebook.
SOME = ["01_input", "07_softmax", "09_multi_head"]


def honest_class(course, stuck=False):
    """Four students; with ``stuck``, the second one's softmax loops until the time limit."""
    nc.nbgrader(course, "generate_assignment", nc.ASSIGNMENT, "--force")
    stem, name, source, _ = MISTAKES["softmax_wrong_axis"]
    if stuck:
        source = LOOP
    nc.submit(course, "perfect", {s: nc.student_notebook(s, "solution") for s in SOME})
    nc.submit(course, "untouched", {s: nc.student_notebook(s) for s in SOME})
    partial = {s: nc.student_notebook(s, "solution") for s in SOME}
    partial[stem] = nc.student_notebook(stem, {name: source})
    nc.submit(course, "partial", partial)
    nc.submit(course, "half", {s: copy.deepcopy(partial[s]) for s in SOME[:2]})


def test_parallel_grades_equal_serial_nbgrader_autograde(tmp_path):
    serial = nc.make_course(tmp_path / "serial")
    parallel = nc.make_course(tmp_path / "parallel")
    honest_class(serial)
    honest_class(parallel)
    nc.nbgrader(serial, "autograde", nc.ASSIGNMENT, "--force")
    out = nc.grade(parallel, "--workers", "2").stdout
    assert "students: 4" in out and "failed: 0" in out
    a, b = nc.grades(serial), nc.grades(parallel)
    assert len(a) >= 10 and a == b
    assert a[("partial", "07_softmax", "softmax_rows_sum_to_one")] == 0
    assert a[("perfect", "07_softmax", "softmax_rows_sum_to_one")] > 0


def test_killed_then_resumed_loses_and_duplicates_nothing(tmp_path):
    """Killed while the second student (one worker, sorted order) is stuck in a loop.

    The first student's marker appears and the second one cannot finish
    before its 20 s cell limit, so the kill lands mid-class however busy the
    machine is.
    """
    limit = "c.Execute.timeout = 20\n"
    course = nc.make_course(tmp_path / "resume", limit)
    honest_class(course, stuck=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "autograders", "grade", nc.ASSIGNMENT, "--workers", "1"],
        cwd=course,
        env=nc.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    markers = lambda: sorted(course.glob("autograded/*/mhsa/.mhsa-graded"))  # noqa: E731
    deadline = time.monotonic() + 600
    while not markers() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_first = markers()
    assert [m.parent.parent.name for m in done_first] == ["half"]
    stamps = {m: m.stat().st_mtime_ns for m in done_first}
    out = nc.grade(course, "--workers", "2").stdout
    assert f"already done: {len(done_first)}" in out
    assert len(markers()) == 4
    for m, t in stamps.items():
        assert m.stat().st_mtime_ns == t, f"{m.parent.parent.name} was graded again"
    reference = nc.make_course(tmp_path / "reference", limit)
    honest_class(reference, stuck=True)
    nc.nbgrader(reference, "autograde", nc.ASSIGNMENT, "--force")
    assert nc.grades(course) == nc.grades(reference)
    again = nc.grade(course, "--workers", "2").stdout
    assert "graded now: 0" in again and "already done: 4" in again
