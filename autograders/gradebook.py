"""Grades in and out of nbgrader's gradebook, for graders that share nothing but data.

A Dask worker runs stock nbgrader autograding against a private SQLite
gradebook that holds only the assignment; the coordinator alone writes the
course's gradebook (SQLite or PostgreSQL).

* :func:`describe`: the assignment as the gradebook holds it (notebooks,
  graded, answer, task and source cells), as plain data that travels with
  the task.
* :func:`seed`: a private gradebook holding that assignment.
* :func:`auto_scores`: what autograding wrote for one student (points per
  graded cell, automatic comments), read back from the private gradebook:
  the worker's report.
* :func:`store`: the notebooks the worker autograded, recorded in the
  course's gradebook by nbgrader's own ``SaveAutoGrades`` and the
  configured ``AssignLatePenalties`` (its ``LateSubmissionPlugin``), run
  here as ``nbgrader autograde`` runs them; a missing notebook scores 0,
  as ``Autograde`` gives it. No private nbgrader name is used.
"""

from __future__ import annotations

import contextlib
import warnings

__all__ = ["auto_scores", "describe", "quiet_autoflush", "seed", "store"]


@contextlib.contextmanager
def quiet_autoflush():
    """Silence the SQLAlchemy warning nbgrader's ``add_submission`` trips (autoflush), only it."""
    from sqlalchemy.exc import SAWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*autoflush.*", category=SAWarning)
        yield


def describe(db_url: str, course_id: str, assignment: str) -> dict:
    """The assignment in the gradebook at ``db_url`` as plain data (see :func:`seed`)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id) as gb:
        a = gb.find_assignment(assignment)
        return {
            "name": a.name,
            "duedate": a.duedate,
            "notebooks": [
                {
                    "name": nb.name,
                    "kernelspec": nb.kernelspec,
                    "grade_cells": [
                        {"name": c.name, "max_score": c.max_score, "cell_type": c.cell_type}
                        for c in nb.grade_cells
                    ],
                    "solution_cells": [{"name": c.name} for c in nb.solution_cells],
                    "task_cells": [
                        {"name": c.name, "max_score": c.max_score, "cell_type": c.cell_type}
                        for c in nb.task_cells
                    ],
                    "source_cells": [
                        {
                            "name": c.name,
                            "cell_type": c.cell_type,
                            "locked": c.locked,
                            "source": c.source,
                            "checksum": c.checksum,
                        }
                        for c in nb.source_cells
                    ],
                }
                for nb in sorted(a.notebooks, key=lambda nb: nb.name)
            ],
        }


def seed(db_url: str, course_id: str, description: dict) -> None:
    """Write the assignment :func:`describe` returned into a new gradebook, in one commit."""
    from nbgrader import api
    from sqlalchemy import create_engine

    # The tables first: nbgrader would stamp a new gradebook by running the
    # `alembic` command, which a worker's PATH need not have. This gradebook
    # lives for one task and is never migrated.
    engine = create_engine(db_url)
    api.Base.metadata.create_all(bind=engine)
    engine.dispose()
    with api.Gradebook(db_url, course_id) as gb:
        assignment = api.Assignment(
            name=description["name"], duedate=description["duedate"], course_id=course_id
        )
        gb.db.add(assignment)
        for d in description["notebooks"]:
            nb = api.Notebook(name=d["name"], kernelspec=d["kernelspec"], assignment=assignment)
            gb.db.add(nb)
            for c in d["grade_cells"]:
                gb.db.add(api.GradeCell(notebook=nb, **c))
            for c in d["solution_cells"]:
                gb.db.add(api.SolutionCell(notebook=nb, **c))
            for c in d["task_cells"]:
                gb.db.add(api.TaskCell(notebook=nb, **c))
            for c in d["source_cells"]:
                gb.db.add(api.SourceCell(notebook=nb, **c))
        gb.db.commit()


def auto_scores(db_url: str, course_id: str, assignment: str, student: str) -> dict:
    """``{notebook: {"grades": {cell: auto_score}, "comments": {cell: auto_comment}}}``.

    Only the notebooks autograding reached are listed.
    """
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, course_id) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return {}
        return {
            nb.name: {
                "grades": {g.name: g.auto_score for g in nb.grades},
                "comments": {c.name: c.auto_comment for c in nb.comments},
            }
            for nb in submission.notebooks
            if any(g.auto_score is not None for g in nb.grades)
            or any(c.auto_comment is not None for c in nb.comments)
        }


def store(
    config, assignment: str, student: str, timestamp, autograded: dict, submitted: list
) -> None:
    """Record one student's automatic grades in the course's gradebook, by nbgrader's own code.

    What ``nbgrader autograde`` does after running a notebook, done here on
    the notebook a worker autograded: nbgrader's ``SaveAutoGrades`` turns
    its graded cells' outputs into points and automatic comments (a
    grader's manual score is kept and the cell flagged for review), then the
    configured ``AssignLatePenalties`` (with its ``LateSubmissionPlugin``)
    sets the notebook's late penalty from the submission's lateness. Both
    are nbgrader's public preprocessors, run with the resources its
    ``Autograde`` gives them. As they do there, each commits as it goes;
    the grade command writes a student's marker only after this, so a
    coordinator killed halfway regrades that student.

    Parameters
    ----------
    config : traitlets.config.Config
        The course's nbgrader configuration (gradebook URL, course id, late
        submission plugin).
    assignment, student : str
        Whose grades these are.
    timestamp : str or None
        The submission's time stamp (its arrival, or ``timestamp.txt``).
    autograded : dict of str to bytes
        The notebooks autograding wrote for the student, by file name
        (``autograded`` of :func:`autograders.task.grade_submission`).
    submitted : list of str
        The notebooks autograding read; every other notebook of the
        assignment scores 0, as ``Autograde`` gives a missing notebook.
    """
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades

    coursedir = CourseDirectory(config=config)
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        gb.update_or_create_student(student)
        extra = {"timestamp": timestamp} if timestamp else {}
        with quiet_autoflush():
            submission = gb.update_or_create_submission(assignment, student, **extra)
        notebooks = sorted(nb.name for nb in submission.notebooks)
        for nb in submission.notebooks:
            if nb.name not in submitted:  # Autograde.init_assignment's zero for a missing one
                for grade in nb.grades:
                    grade.auto_score, grade.needs_manual_grade = 0, False
        gb.db.commit()
    log = _quiet_log()
    steps = [step(config=config, log=log) for step in (SaveAutoGrades, AssignLatePenalties)]
    for name in notebooks:
        if name not in submitted:
            continue
        data = autograded.get(f"{name}.ipynb")
        nb = nbformat.reads(data.decode(), as_version=4) if data else nbformat.v4.new_notebook()
        resources = {
            "nbgrader": {
                "notebook": name,
                "assignment": assignment,
                "student": student,
                "db_url": coursedir.db_url,
            }
        }
        for step in steps if data else steps[1:]:  # no notebook back: no grades to save
            with quiet_autoflush():
                nb, resources = step.preprocess(nb, resources)


def _quiet_log():
    """A logger that keeps nbgrader's per-notebook lines (lateness, penalty) off the terminal."""
    import logging

    log = logging.getLogger("autograders.gradebook.store")
    log.propagate = False
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    return log
