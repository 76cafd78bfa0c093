"""What each grade run found, kept in the course directory for the class report.

Every grade run writes one file, ``grading-results/ASSIGNMENT/run-….jsonl``
(:data:`RESULTS`; the folder ``0700``, the file ``0600``: the instructor's
alone, as everything the course directory holds of the class), one JSON
line per student as the student is recorded, so that a run that is killed
keeps what it did:

* ``{"kind": "student", "student", "at", "ok", "notes", "notebooks"}``: the
  grading's outcome, what the instructor is told, and for each notebook
  graded ``{"exercises": {grade_id: record}}``, each exercise's outcome and
  its tests' sentences beside the ids of the slips they named
  (:func:`autograders.integrity.exercise_record`); the notebooks of the
  assignment the student did not submit are there with no exercises;
* ``{"kind": "run", "at", "refused": [line, …], "at_door": {student: [reason, …]}}``,
  last: the submissions refused before grading.

:func:`load` merges every run of an assignment: the latest result of each
student and notebook, and each student's notes from their latest grading,
so a class graded in several runs (resumed, or regraded with ``--force``)
reads as one.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

__all__ = ["RESULTS", "RunLog", "load"]

#: The folder of the grade runs' results in the course directory.
RESULTS = "grading-results"


class RunLog:
    """One grade run's results file, written line by line (see the module's description).

    Parameters
    ----------
    course : Path
        The course directory.
    assignment : str
        The assignment graded.
    notebooks : list of str
        The stems of the assignment's notebooks that have exercises: each
        student's line names every one (those not submitted without exercises).
    """

    def __init__(self, course: Path, assignment: str, notebooks: list[str]):
        folder = Path(course) / RESULTS / assignment
        for part in (folder.parent, folder):
            part.mkdir(mode=0o700, exist_ok=True)
            os.chmod(part, 0o700)
        self.at = time.time()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(self.at))
        self.path = folder / f"run-{stamp}-{uuid.uuid4().hex[:8]}.jsonl"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._file = os.fdopen(fd, "w", encoding="utf-8")
        self.notebooks = list(notebooks)

    def _write(self, line: dict) -> None:
        self._file.write(json.dumps(line, sort_keys=True) + "\n")
        self._file.flush()

    def student(self, student: str, ok: bool, notes: list, exercises: dict | None) -> None:
        """Record one student's grading.

        Parameters
        ----------
        student : str
            The student's id.
        ok : bool
            Whether nbgrader recorded the grades.
        notes : list of str
            What the instructor is told of this student (the summary's reasons).
        exercises : dict or None
            ``{notebook: {grade_id: record}}`` as the task returned it
            (:func:`autograders.task.grade_submission`); None where grading
            failed before any exercise was judged (nothing is said of the
            notebooks then, and an earlier run's results stand).
        """
        line = {"kind": "student", "student": student, "at": time.time(), "ok": bool(ok)}
        line["notes"] = [str(n) for n in notes]
        if exercises is not None:
            line["notebooks"] = {
                stem: {"exercises": exercises.get(stem, {}), "submitted": stem in exercises}
                for stem in self.notebooks
            }
        self._write(line)

    def run(self, refused: list, at_door: dict) -> None:
        """Record what was refused before grading: lines, and ``{student: [reason, …]}``."""
        self._write(
            {
                "kind": "run",
                "at": time.time(),
                "refused": [str(x) for x in refused],
                "at_door": {str(s): [str(r) for r in rs] for s, rs in at_door.items()},
            }
        )

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def load(course: Path, assignment: str) -> dict:
    """Every grade run of ``assignment`` merged: the latest result per student and notebook.

    Returns
    -------
    dict
        ``{"students": {student: {"ok", "notes", "at", "notebooks": {stem:
        {"exercises", "submitted", "at"}}}}, "refused": [line, …], "at_door":
        {student: [reason, …]}, "runs": int}``: a student's ``ok`` and
        ``notes`` are from their latest grading, each notebook from the latest
        grading that judged it; what was refused is the latest run's. A line
        that cannot be read (a run killed mid-line) is skipped.
    """
    folder = Path(course) / RESULTS / assignment
    lines = []
    runs = sorted(folder.glob("run-*.jsonl")) if folder.is_dir() else []
    for path in runs:
        with open(path, encoding="utf-8") as f:
            for text in f:
                try:
                    line = json.loads(text)
                except ValueError:
                    continue
                if isinstance(line, dict) and isinstance(line.get("at"), int | float):
                    lines.append(line)
    lines.sort(key=lambda line: line["at"])
    students, refused, at_door = {}, [], {}
    for line in lines:
        if line.get("kind") == "run":
            refused, at_door = list(line.get("refused", [])), dict(line.get("at_door", {}))
            continue
        if line.get("kind") != "student" or not isinstance(line.get("student"), str):
            continue
        entry = students.setdefault(line["student"], {"notebooks": {}})
        entry.update(ok=bool(line.get("ok")), notes=list(line.get("notes", [])), at=line["at"])
        for stem, nb in (line.get("notebooks") or {}).items():
            entry["notebooks"][stem] = {**nb, "at": line["at"]}
    return {"students": students, "refused": refused, "at_door": at_door, "runs": len(runs)}
