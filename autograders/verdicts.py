"""The parent's verdicts, written into the graded cells in place of executing the notebook.

The grade command runs stock nbgrader autograding with this preprocessor
where ``Execute`` would be: the student's code is never run in a kernel of
the grader; each test cell gets the output of the parent's judgement of
that exercise (a tick line, or an error with the check's sentence), and
nbgrader's own ``SaveAutoGrades`` turns those outputs into points, the
gradebook entries and, later, the feedback.
"""

from __future__ import annotations

from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Dict

__all__ = ["WriteVerdicts"]


class WriteVerdicts(NbGraderPreprocessor):
    """Set each graded cell's output from ``verdicts[notebook][grade_id] = (passed, message)``."""

    verdicts = Dict(help="{notebook: {grade_id: [passed, message]}}, set per student").tag(
        config=True
    )

    def preprocess(self, nb, resources):
        """Write the verdicts of this notebook (``resources["nbgrader"]["notebook"]``)."""
        self._mine = self.verdicts.get(resources["nbgrader"]["notebook"], {})
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        """A graded code cell gets its verdict as output; every other cell is left as it is."""
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade"):
            return cell, resources
        if not meta.get("points"):  # 00's progress report: no exercise, no points
            cell.outputs = []
            return cell, resources
        passed, message = self._mine.get(
            meta.get("grade_id"), (False, "this exercise could not be graded (no verdict)")
        )
        if passed:
            cell.outputs = [new_output("stream", name="stdout", text=f"\u2713 {message}\n")]
        else:
            cell.outputs = [
                new_output("error", ename="CheckFailed", evalue=message, traceback=[message])
            ]
        return cell, resources
