"""One student at the coordinator's end: what goes to a worker, and what comes back.

The grade command (:mod:`autograders.grade`) sends every worker the course
as data (:func:`course_data`, once) and each task one student's submission
as data (:func:`submission_files`); a worker grades it
(:func:`autograders.task.grade_submission`) and returns data, which
:func:`record` writes here: the grades into the course's gradebook by
nbgrader's own preprocessors (:func:`autograders.gradebook.store`), the
autograded notebooks and feedback pages into ``autograded/`` and
``feedback/`` (each folder swapped in whole, :func:`write_folder`), and
last the student's marker. A student whose grading failed gets feedback
pages saying why (:func:`failure_feedback`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from autograders.roster import MARKER, submission_stamp

__all__ = [
    "MAX_FILE",
    "course_data",
    "failure_feedback",
    "record",
    "submission_files",
    "submission_folder",
    "write_folder",
]

MAX_FILE = 32 * 2**20  # a submitted file larger than this is not sent to a worker


def course_data(config, course: Path, assignment: str) -> dict:
    """What every worker needs of the course, as data.

    See :func:`autograders.task.grade_submission`.
    """
    from nbgrader.coursedir import CourseDirectory

    from autograders.gradebook import describe
    from autograders.secret import read_key
    from autograders.task import files_of

    dirs = CourseDirectory(config=config)
    source = Path(dirs.format_path(dirs.source_directory, ".", assignment))
    return {
        "config": config,
        "assignment": assignment,
        "description": describe(dirs.db_url, dirs.course_id, assignment),
        "source": files_of(source, ignore=dirs.ignore)[0],
        "key": read_key(course),
    }


def submission_folder(config, assignment: str, student: str) -> Path:
    """Where the student's submission of ``assignment`` is."""
    from nbgrader.coursedir import CourseDirectory

    dirs = CourseDirectory(config=config)
    return Path(dirs.format_path(dirs.submitted_directory, student, assignment))


def submission_files(config, assignment: str, student: str) -> tuple[dict, dict]:
    """The student's submission as data for a worker: ``({name: bytes}, {name: reason})``.

    The regular files of the submission folder, not its sub-folders; links,
    files over :data:`MAX_FILE` and notebooks over the course's limits of
    cells or bytes (:func:`autograders.limits.over_limit`: its size is
    checked before it is read) are left out, with the reason
    (:func:`autograders.task.files_of`). A notebook left out scores 0 and
    is named; the others are graded.
    """
    from autograders.limits import over_limit
    from autograders.task import files_of

    def notebook_limit(name: str, size: int) -> str | None:
        return over_limit(size) if name.endswith(".ipynb") else None

    folder = submission_folder(config, assignment, student)
    files, left_out = files_of(folder, recursive=False, max_bytes=MAX_FILE, limit=notebook_limit)
    for name in [n for n in files if n.endswith(".ipynb")]:
        why = over_limit(len(files[name]), files[name])
        if why:
            left_out[name] = why
            del files[name]
    return files, left_out


def write_folder(dest: Path, files: dict, mode: int) -> None:
    """Replace the folder ``dest`` by ``files`` (``{relative/path: bytes}``), each with ``mode``.

    The new folder is written beside the old one and swapped in, so a
    killed grader leaves the old folder or the new one, never a mixture.
    """
    from autograders.task import write_files

    new = dest.with_name(dest.name + ".mhsa-new")
    if new.exists():
        shutil.rmtree(new)
    write_files(new, files, mode)
    if dest.exists():
        shutil.rmtree(dest)
    new.rename(dest)


def record(config, course: Path, assignment: str, student: str, result: dict, modes: dict):
    """Write one student's result here; return (student, ok, notes).

    ``result`` is what :func:`autograders.task.grade_submission` returned:
    its autograded notebooks are recorded in the course's gradebook by
    nbgrader's own preprocessors, lateness from the submission's arrival
    (:func:`autograders.gradebook.store`); they and the feedback pages are
    written into ``autograded/`` and ``feedback/``, and last the marker
    that says the student is done. A notebook that was not graded (over
    the course's limits, say) is named in the CSV's ``grading`` column
    (:func:`autograders.export.record_partial`) and gets a feedback page
    saying why.
    """
    from nbgrader.coursedir import CourseDirectory

    from autograders.collect import arrival_of
    from autograders.export import record_partial
    from autograders.gradebook import store
    from autograders.identity import identity_notes

    dirs = CourseDirectory(config=config)
    submission = submission_folder(config, assignment, student)
    arrival, stamp_notes = arrival_of(submission)
    store(
        config,
        assignment,
        student,
        arrival or dirs.get_existing_timestamp(str(submission)),
        result["autograded"],
        result["submitted"],
    )
    autograded = Path(dirs.format_path(dirs.autograded_directory, student, assignment))
    feedback = Path(dirs.format_path(dirs.feedback_directory, student, assignment))
    notes = identity_notes(submission, student) + stamp_notes + result["notes"]
    not_graded = result.get("not_graded") or {}
    record_partial(course, student, list(not_graded.values()) or None)
    if not result["ok"]:
        if autograded.exists():
            shutil.rmtree(autograded)  # an earlier grading's notebooks would mislead
        return student, False, notes
    write_folder(autograded, result["autograded"], modes["autograded"])
    if result["feedback"]:
        pages = {**_not_graded_pages(not_graded), **result["feedback"]}
        write_folder(feedback, pages, modes["feedback"])
    (autograded / MARKER).write_text(submission_stamp(course, student, assignment))
    return student, True, notes


def _not_graded_pages(not_graded: dict) -> dict:
    """``{stem.html: page}``: a feedback page for each notebook that was not graded, saying why."""
    import html

    return {
        f"{Path(name).stem}.html": (
            f"<html><body><h1>{html.escape(Path(name).stem)}: this notebook was not graded</h1>"
            f"<p>{html.escape(note)}.</p></body></html>\n"
        ).encode()
        for name, note in not_graded.items()
        if "/" not in name
    }


def failure_feedback(course: Path, student: str, assignment: str, reasons: list) -> None:
    """Feedback pages saying that grading failed, one per submitted notebook.

    Written where ``nbgrader release_feedback`` looks (with the submission's
    timestamp and secret), so the student learns why there is no grade.
    """
    import html

    submitted = course / "submitted" / student / assignment
    feedback = course / "feedback" / student / assignment
    if not submitted.is_dir():
        return
    feedback.mkdir(parents=True, exist_ok=True)
    for name in ("timestamp.txt", "submission_secret.txt"):
        if (submitted / name).exists():
            shutil.copy(submitted / name, feedback / name)
    items = "".join(f"<li>{html.escape(r)}</li>" for r in reasons or ["grading failed"])
    for nb in sorted(submitted.glob("*.ipynb")):
        (feedback / f"{nb.stem}.html").write_text(
            f"<html><body><h1>{html.escape(nb.stem)}: this submission could not be graded</h1>"
            f"<p>Your instructor has been told. What went wrong:</p><ul>{items}</ul>"
            "</body></html>\n"
        )
