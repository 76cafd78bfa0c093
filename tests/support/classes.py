"""Classes of students to grade: submissions built from the solutions and one-slip answers."""

from __future__ import annotations

import copy

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
