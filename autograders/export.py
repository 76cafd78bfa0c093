"""``nbgrader export``: the gradebook as a CSV no student can forge, with whether grading succeeded.

nbgrader's own CSV joins fields with commas and writes them unquoted, so a
student id holding a comma or a line break forges columns and rows. This
exporter (set by the course's configuration) writes the same columns from
the gradebook with a real CSV writer instead, plus a ``grading`` column:

* one row per student and assignment, fixed columns, every field quoted
  as CSV needs (commas, quotes, line breaks), numbers written by us;
* a text cell that a spreadsheet would read as a formula (starting with
  ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading
  ``'``, so it is shown, never run;
* ``grading``: ``ok``, ``not submitted``, ``FAILED: <reasons>`` or
  ``PARTLY GRADED: <reasons>``, the reasons from ``grading-failures.json``
  and ``grading-partial.json``, which the grade command writes at the
  course root (a failed grading and no submission both score 0 in
  nbgrader's columns; a notebook the grader did not take, one over the
  course's limit of cells or bytes say, scores 0 and the others count);
* a student whose row cannot be made still gets one, saying so in
  ``grading``, and the file is written whole or not at all (a temporary
  file renamed into place): one student never costs the class its export.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from nbgrader.plugins.export import CsvExportPlugin

__all__ = [
    "COLUMNS",
    "FAILURES",
    "PARTIAL",
    "GradesCsv",
    "failures",
    "neutral",
    "partly_graded",
    "record_failure",
    "record_partial",
]

FAILURES = "grading-failures.json"
#: Students graded but for some notebooks (left out: over a limit, a link …), and why.
PARTIAL = "grading-partial.json"

#: The CSV's columns: nbgrader's, then whether grading succeeded.
COLUMNS = (
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
    "grading",
)


def _read(path: Path) -> dict:
    try:
        found = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _write(path: Path, student: str, reasons: list | None, default: str) -> None:
    found = _read(path)
    if reasons is None:
        found.pop(student, None)
    else:
        found[student] = list(reasons) or [default]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(found, indent=1, sort_keys=True))
    tmp.replace(path)  # atomic: a killed grader leaves the old file or the new


def failures(course: Path) -> dict:
    """``{student: [reason, …]}`` of the students whose last grading failed."""
    return _read(course / FAILURES)


def record_failure(course: Path, student: str, reasons: list | None) -> None:
    """Record that grading ``student`` failed (``reasons``) or, with None, succeeded."""
    _write(course / FAILURES, student, reasons, "grading failed")


def partly_graded(course: Path) -> dict:
    """``{student: [reason, …]}`` of the students whose last grading left notebooks out."""
    return _read(course / PARTIAL)


def record_partial(course: Path, student: str, reasons: list | None) -> None:
    """Record the notebooks of ``student`` that were not graded (``reasons``), or none (None)."""
    _write(course / PARTIAL, student, reasons, "a notebook was not graded")


def neutral(value) -> str:
    """A cell's text: numbers as they are, other text never read as a spreadsheet formula.

    Parameters
    ----------
    value : object
        None (an empty cell), a number, a date or text.

    Returns
    -------
    str
        ``""`` for None; ``str(value)`` for a number; text starting with
        ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
        leading ``'`` (OWASP's advice against CSV injection).
    """
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        text = str(value)
        return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
    return str(value)


def _row(gradebook, assignment, student, failed: dict, partial: dict | None = None) -> dict:
    from nbgrader.api import MissingEntry

    row = {
        "assignment": assignment.name,
        "duedate": assignment.duedate,
        "student_id": student.id,
        "last_name": student.last_name,
        "first_name": student.first_name,
        "email": student.email,
        "max_score": assignment.max_score,
    }
    try:
        submission = gradebook.find_submission(assignment.name, student.id)
    except MissingEntry:
        row.update(timestamp=None, raw_score=0.0, late_submission_penalty=0.0, score=0.0)
        submitted = False
    else:
        penalty = submission.late_submission_penalty
        row.update(
            timestamp=submission.timestamp,
            raw_score=submission.score,
            late_submission_penalty=penalty,
            score=max(0.0, submission.score - penalty),
        )
        submitted = True
    partial = partial or {}
    if student.id in failed:
        row["grading"] = "FAILED: " + _reasons(failed[student.id])
    elif submitted and student.id in partial:
        row["grading"] = "PARTLY GRADED: " + _reasons(partial[student.id])
    else:
        row["grading"] = "ok" if submitted else "not submitted"
    return row


def _private(path, flags):
    """Open ``path`` as :func:`open` would, a new file readable by its owner only (``0600``)."""
    return os.open(path, flags, 0o600)


def _reasons(reasons) -> str:
    return "; ".join(map(str, reasons if isinstance(reasons, list) else [reasons]))


class GradesCsv(CsvExportPlugin):
    """nbgrader's CSV columns plus ``grading``, written with a real CSV writer."""

    def export(self, gradebook) -> None:
        """Write one row per student and assignment to ``--to`` (``grades.csv`` by default)."""
        dest = Path(self.to or "grades.csv")
        course = Path(self.parent.coursedir.root) if self.parent is not None else Path(".")
        failed, partial = failures(course), partly_graded(course)
        students = {str(s) for s in self.student}
        assignments = {str(a) for a in self.assignment}
        rows = []
        for assignment in gradebook.assignments:
            if assignments and assignment.name not in assignments:
                continue
            for student in gradebook.students:
                if students and student.id not in students:
                    continue
                try:
                    rows.append(_row(gradebook, assignment, student, failed, partial))
                except Exception as exc:  # this student's row says so; the others are written
                    self.log.error("export: student %r: %s", student.id, exc)
                    rows.append(
                        {
                            "assignment": assignment.name,
                            "student_id": student.id,
                            "grading": f"FAILED: the export could not read this row ({exc})",
                        }
                    )
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", newline="", encoding="utf-8", opener=_private) as f:
                os.fchmod(f.fileno(), 0o600)  # a temporary file left by another export, too
                writer = csv.writer(f, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
                writer.writerow(COLUMNS)
                for row in rows:
                    writer.writerow([neutral(row.get(column)) for column in COLUMNS])
            tmp.replace(dest)
        finally:
            tmp.unlink(missing_ok=True)
        self.log.info("Exported %d rows to %s", len(rows), dest)
