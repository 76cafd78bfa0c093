"""``nbgrader export`` with one more column: whether grading succeeded.

nbgrader's CSV gives a student whose grading failed the same 0 as one who
did not submit. The grade command records every failure, with its reasons,
in ``grading-failures.json`` at the course root; this exporter (set by the
course's configuration) adds a ``grading`` column: ``ok``, ``not submitted``
or ``FAILED: <reasons>``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from nbgrader.plugins.export import CsvExportPlugin

__all__ = ["FAILURES", "GradesCsv", "failures", "record_failure"]

FAILURES = "grading-failures.json"


def failures(course: Path) -> dict:
    """``{student: [reason, …]}`` of the students whose last grading failed."""
    path = course / FAILURES
    return json.loads(path.read_text()) if path.exists() else {}


def record_failure(course: Path, student: str, reasons: list | None) -> None:
    """Record that grading ``student`` failed (``reasons``) or, with None, succeeded."""
    found = failures(course)
    if reasons is None:
        found.pop(student, None)
    else:
        found[student] = list(reasons) or ["grading failed"]
    tmp = course / (FAILURES + ".tmp")
    tmp.write_text(json.dumps(found, indent=1, sort_keys=True))
    tmp.replace(course / FAILURES)  # atomic: a killed grader leaves the old file or the new


def _submitted(gradebook, assignment: str, student: str) -> bool:
    from nbgrader.api import MissingEntry

    try:
        gradebook.find_submission(assignment, student)
    except MissingEntry:
        return False
    return True


class GradesCsv(CsvExportPlugin):
    """nbgrader's CSV export plus a ``grading`` column."""

    def export(self, gradebook) -> None:
        """Write nbgrader's CSV, then add whether each student's grading succeeded."""
        super().export(gradebook)
        dest = Path(self.to or "grades.csv")
        course = Path(self.parent.coursedir.root) if self.parent is not None else Path(".")
        failed = failures(course)
        with open(dest, newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            if row["student_id"] in failed:
                row["grading"] = "FAILED: " + "; ".join(failed[row["student_id"]])
            elif not _submitted(gradebook, row["assignment"], row["student_id"]):
                row["grading"] = "not submitted"
            else:
                row["grading"] = "ok"
        fields = [*(rows[0].keys() if rows else []), *([] if rows else ["grading"])]
        with open(dest, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
