"""The class the grade command grades: who submitted, who is done, who was refused.

* :func:`load_config`: the course's nbgrader configuration, as ``nbgrader
  autograde`` would load it in the course directory.
* :func:`students_of`: every student with a submission, and the folders
  whose name is not a safe student id (refused).
* :func:`is_done`: a student counts as graded once the marker written after
  nbgrader has finished with them (:data:`MARKER`) matches their
  submission's ``timestamp.txt``; this is what makes the grade command
  resumable.
* :func:`refused_at_collect`: what the course's collect refused, for the
  summary and the CSV.
* :func:`ensure_gradebook`: the assignment checked and the students created
  in the course's gradebook before any grading starts.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "MARKER",
    "ensure_gradebook",
    "is_done",
    "load_config",
    "marker_path",
    "refused_at_collect",
    "students_of",
    "submission_stamp",
]

MARKER = ".mhsa-graded"


def load_config(course: Path, db: str | None):
    """The course's nbgrader configuration, as ``nbgrader autograde`` would load it there."""
    from nbgrader.apps.autogradeapp import AutogradeApp

    cwd = os.getcwd()
    os.chdir(course)
    try:
        app = AutogradeApp()
        app.load_config_file()
        config = app.config
    finally:
        os.chdir(cwd)
    config.CourseDirectory.root = str(course)
    if db:
        config.CourseDirectory.db_url = db
    return config


def submission_stamp(course: Path, student: str, assignment: str) -> str:
    """The submission's ``timestamp.txt``, which a marker must match."""
    stamp = course / "submitted" / student / assignment / "timestamp.txt"
    return stamp.read_text().strip() if stamp.exists() else "no timestamp"


def marker_path(course: Path, student: str, assignment: str) -> Path:
    """Where the marker of a graded student is written."""
    return course / "autograded" / student / assignment / MARKER


def is_done(course: Path, student: str, assignment: str) -> bool:
    """True if the student was graded for the submission that is there now."""
    m = marker_path(course, student, assignment)
    return m.exists() and m.read_text() == submission_stamp(course, student, assignment)


def students_of(course: Path, assignment: str) -> tuple[list, list]:
    """Every student with a submission of ``assignment``, sorted; and the folders refused.

    A folder of ``submitted/`` whose name is not a safe student id
    (:func:`autograders.ids.is_safe`; one a stock collect let in, say) is
    refused: it reaches neither a worker, the gradebook nor the CSV. The
    second list holds those names, as found.
    """
    from autograders.ids import is_safe

    found = sorted(
        p.parent.name
        for p in (course / "submitted").glob(f"*/{assignment}")
        if p.is_dir() and not p.parent.is_symlink()
    )
    return [s for s in found if is_safe(s)], [s for s in found if not is_safe(s)]


def refused_at_collect(course: Path, assignment: str, unsafe: list) -> dict:
    """The submissions refused at the door, for the summary and the CSV.

    ``{"students": {safe id: [reason, …]}, "lines": [str, …]}``: what the
    course's collect refused (:data:`autograders.collect.REFUSED`) under a
    safe id is told about that student; a refused folder without a safe id,
    an account's submissions under more student ids than one, and a folder
    of ``submitted/`` whose name is not a safe id (``unsafe``), is a line of
    its own, the name escaped.
    """
    from autograders.collect import refused
    from autograders.ids import ID_RULE, shown

    students, lines = {}, []
    for entry in refused(course, assignment):
        reason = f"a submission was not collected: {entry.get('reason')}"
        if entry.get("account"):  # an account's extra student ids, which are no students
            lines.append(f"account {entry['account']} {entry.get('reason')}")
        elif entry.get("student"):
            students.setdefault(entry["student"], []).append(reason)
        else:
            folder, why = entry.get("folder"), entry.get("reason")
            lines.append(f"exchange folder {folder} not collected: {why}")
    for name in unsafe:
        lines.append(
            f"submitted/{shown(name)} not graded: its student id is not one the course "
            f"accepts ({ID_RULE})"
        )
    return {"students": students, "lines": lines}


def ensure_gradebook(config, course, assignment, students):
    """Create the assignment and students in the gradebook before workers write to it.

    Done once, in the parent, so that parallel workers never race to create them.
    """
    from nbgrader.api import Gradebook
    from nbgrader.coursedir import CourseDirectory

    db = CourseDirectory(config=config).db_url
    with Gradebook(db) as gb:
        try:
            gb.find_assignment(assignment)
        except Exception:
            raise SystemExit(
                f"assignment {assignment!r} is not in the gradebook {db}: run "
                f"`nbgrader generate_assignment {assignment}` first."
            ) from None
        for s in students:
            gb.update_or_create_student(s)
