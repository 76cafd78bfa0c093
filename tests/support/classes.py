"""Classes of students to grade: submissions built from the solutions and one-slip answers."""

from __future__ import annotations

import atexit
import copy
import shutil
import tempfile
from pathlib import Path

from tests.support import nbgrader_course as nc
from tests.support.mistakes import MISTAKES

#: An answer that never returns.
LOOP = "def softmax(Z, axis=-1):\n    while True:\n        pass\n"


# --------------------------------------------------------------------------
# parallel grading = serial nbgrader autograde; resuming after a kill
# --------------------------------------------------------------------------
# Three notebooks per student keep these tests fast; the hostile class and
# tests/test_course.py grade every notebook.
SOME = ["01_input", "07_softmax", "09_multi_head"]


def honest_class(course, stuck=False):
    """Four students; with ``stuck``, the second one's softmax loops, and so do its 09 cells.

    Stuck, that student holds its worker for a call's time budget in 07 and
    a notebook's cells' budget in 09 (about 15 s however fast the machine)
    and scores 0 on both, in nbgrader's serial autograde too (the loop comes
    before 09's definitions, so its kernel never defines them either).
    """
    nc.generate(course)
    stem, name, source, _ = MISTAKES["softmax_wrong_axis"]
    if stuck:
        source = LOOP
    nc.submit(course, "perfect", {s: nc.student_notebook(s, "solution") for s in SOME})
    nc.submit(course, "untouched", {s: nc.student_notebook(s) for s in SOME})
    partial = {s: nc.student_notebook(s, "solution") for s in SOME}
    partial[stem] = nc.student_notebook(stem, {name: source})
    if stuck:
        (cell,) = nc.answer_cells(partial["09_multi_head"]).values()
        cell.source = "while True:\n    pass\n" + cell.source
    nc.submit(course, "partial", partial)
    nc.submit(course, "half", {s: copy.deepcopy(partial[s]) for s in SOME[:2]})


#: The time limit of the stuck class's course: its loops end by the grader's budgets first.
STUCK_LIMIT = "c.Execute.timeout = 20\n"

_STUCK_REFERENCE: list[dict] = []


def stuck_class_reference() -> dict:
    """The stuck class (:func:`honest_class` with ``stuck``) graded by stock ``nbgrader autograde``.

    ``{(student, notebook, grade_id): score}`` in a course configured with
    :data:`STUCK_LIMIT`, graded once per test process (serially: a few
    minutes) and shared by every test that compares the grade command with it.
    """
    if not _STUCK_REFERENCE:
        folder = Path(tempfile.mkdtemp(prefix="mhsa-stuck-reference-"))
        atexit.register(shutil.rmtree, folder, True)
        course = nc.make_course(folder / "reference", STUCK_LIMIT)
        honest_class(course, stuck=True)
        nc.nbgrader(course, "autograde", nc.ASSIGNMENT, "--force")
        _STUCK_REFERENCE.append(nc.grades(course))
    return _STUCK_REFERENCE[0]
