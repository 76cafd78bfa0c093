"""Grading one submission as a pure function: files in, grades and files out.

:func:`grade_submission` is what a Dask worker runs for one student. It gets
the course (nbgrader configuration, the assignment as the gradebook holds
it, the source files) and the student's submitted files, all as data, and
returns the verdicts' reasons, the automatic scores, the autograded
notebooks and the feedback pages, all as data. It reads and writes nothing
but a private temporary folder, so it runs on any machine that has the
course package installed; the coordinator alone reads the submission
folders and writes the gradebook, ``autograded/`` and ``feedback/``.

Inside, for one student:

1. the readable notebooks are staged, each rebuilt as released with the
   student's answers, every edit of graded cells undone and named
   (:func:`stage`, :func:`autograders.integrity.restore`);
2. the answer cells run in a bubblewrap sandbox (:mod:`autograders.sandbox`)
   that returns values only, and the checks judge them
   (:func:`autograders.integrity.verify`);
3. stock nbgrader ``Autograde`` records those verdicts — with
   :class:`autograders.verdicts.WriteVerdicts` where ``Execute`` would run the
   notebook — against a private gradebook seeded with the assignment
   (:mod:`autograders.gradebook`), and stock ``GenerateFeedback`` renders
   the feedback from it.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import hashlib
import logging
import pickle
import shutil
import tempfile
from pathlib import Path

__all__ = [
    "NBGRADER_FILES",
    "files_of",
    "grade_submission",
    "left_out_note",
    "stage",
    "write_files",
]

#: The files of a submission besides its notebooks that nbgrader reads (lateness;
#: ``release_feedback``'s names for the pages): the only others that are graded.
NBGRADER_FILES = frozenset({"timestamp.txt", "submission_secret.txt"})


def files_of(
    folder: Path, ignore=(), recursive=True, max_bytes: int | None = None, limit=None
) -> tuple[dict[str, bytes], dict[str, str]]:
    """The regular files in ``folder`` as ``{relative/path: bytes}``, and those left out.

    Files and folders whose name matches a pattern of ``ignore`` (nbgrader's
    ``CourseDirectory.ignore``) are skipped, and sub-folders unless
    ``recursive``. Left out, with the reason (``{name: reason}``): symbolic
    links, never followed (one could point at the solutions or at another
    student), files for which ``limit(name, size)`` gives a reason (checked
    before the file is read, on its apparent size) and files larger than
    ``max_bytes``.
    """
    folder = Path(folder)
    files, left_out = {}, {}
    for path in sorted(folder.rglob("*") if recursive else folder.iterdir()):
        rel = path.relative_to(folder)
        if any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in ignore):
            continue
        if any(p.is_symlink() for p in [path, *path.parents] if folder in p.parents):
            left_out[rel.as_posix()] = "a symbolic link"
        elif not path.is_file():
            continue
        elif limit is not None and (why := limit(rel.as_posix(), path.stat().st_size)):
            left_out[rel.as_posix()] = why
        elif max_bytes is not None and path.stat().st_size > max_bytes:
            left_out[rel.as_posix()] = f"larger than {max_bytes / 2**20:g} MiB"
        else:
            files[rel.as_posix()] = path.read_bytes()
    return files, left_out


def write_files(folder: Path, files: dict[str, bytes], mode: int | None = None) -> None:
    """Write ``files`` (``{relative/path: bytes}``, as :func:`files_of` reads them) in ``folder``.

    Every name must stay inside the folder (a ValueError otherwise); with
    ``mode``, each file gets those permissions.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        rel = Path(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"file names must be relative paths inside the folder, got {name!r}.")
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
        if mode is not None:
            (folder / rel).chmod(mode)


def stage(
    submission: Path, staged: Path, source: Path, kernel: str, stub: str, left_out=None
) -> tuple[list, list]:
    """Copy the gradable part of a submission to ``staged``; return (unreadable, notes).

    Unreadable notebooks and those ``left_out`` (``{name: reason}``, not
    sent: a link, a notebook over the course's limits) score 0, each named
    in the notes. Each notebook is rebuilt as released, from the ``source``
    folder, with the student's answers (:func:`autograders.integrity.restore`):
    every edit of graded cells or their metadata is undone and named, so
    nbgrader always grades the cells it released (in the ``kernel``; a
    deleted answer gets ``stub``, nbgrader's ``ClearSolutions.code_stub``).
    Of the other files only nbgrader's own (:data:`NBGRADER_FILES`) are
    staged; every other is named and left out: nbgrader copies a submission's
    files into its feedback folder, and ``release_feedback`` hands out every
    page there, so a student's own ``.html`` would be released as feedback.
    """
    import nbformat

    from autograders import integrity

    staged.mkdir(parents=True, exist_ok=True)
    bad, notes = [], [left_out_note(name, why) for name, why in (left_out or {}).items()]
    for path in sorted(submission.iterdir()):
        if path.is_symlink() or not path.is_file():  # none arrive; and none is followed
            continue
        if path.suffix != ".ipynb":
            if path.name in NBGRADER_FILES:
                shutil.copy(path, staged / path.name)
            elif not path.name.startswith("."):  # the course's own records (collect's)
                notes.append(f"{path.name} is not a notebook (left out of grading and feedback)")
            continue
        nb = integrity.read(path)
        if nb is None:
            bad.append(path.name)
            continue
        src = integrity.read(source / path.name)
        if src is not None:  # a notebook the assignment does not have is graded as nothing
            nb, found = integrity.restore(src, nb, path.stem, kernel, stub)
            notes += found
        nbformat.write(nb, str(staged / path.name))
    return sorted(bad), notes


def left_out_note(name: str, why: str) -> str:
    """What the instructor is told about a file that was not sent to grading, and why."""
    if name.endswith(".ipynb"):
        return f"{name} is {why}: not graded, scored 0"
    return f"{name} is {why} (left out)"


def autograde_steps() -> list:
    """nbgrader's autograde pipeline with the judge's verdicts where Execute would run."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    from autograders.verdicts import WriteVerdicts

    steps = Autograde().autograde_preprocessors
    return [WriteVerdicts if issubclass(step, Execute) else step for step in steps]


class _Errors(logging.Handler):
    """Collects nbgrader's warnings and errors, one short line each."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        msg = record.getMessage().strip()
        if msg and "Kernel is running over TCP" not in msg:
            self.messages.append(msg.splitlines()[-1][:300])


@functools.cache
def _seeded_gradebooks() -> tempfile.TemporaryDirectory:
    """This process's folder of gradebooks holding an assignment (removed at exit)."""
    return tempfile.TemporaryDirectory(prefix="mhsa-gradebooks-")


def _private_gradebook(course_id: str, description: dict, dest: Path) -> str:
    """A copy of a gradebook holding only the assignment, at ``dest``; its URL.

    The assignment is written once per process and copied for every student.
    """
    from autograders import gradebook

    digest = hashlib.sha256(pickle.dumps((course_id, description))).hexdigest()
    seeded = Path(_seeded_gradebooks().name) / f"{digest}.db"
    if not seeded.exists():
        gradebook.seed(f"sqlite:///{seeded}", course_id, description)
    shutil.copy(seeded, dest)
    return f"sqlite:///{dest}"


def _run(converter_class, config, assignment: str, student: str) -> list:
    """Run an nbgrader converter for one student; the errors it reported ([] if none)."""
    from nbgrader.converters.base import NbGraderException
    from nbgrader.coursedir import CourseDirectory

    from autograders.gradebook import quiet_autoflush

    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = assignment
    coursedir.student_id = student
    converter = converter_class(coursedir=coursedir, config=config)
    converter.force = True
    log = logging.getLogger(f"mhsa-grade.{converter_class.__name__}")
    log.propagate, log.level = False, logging.WARNING
    errors = _Errors()
    log.addHandler(errors)
    converter.log = log
    try:
        with quiet_autoflush():
            converter.start()
    except NbGraderException:
        return errors.messages or [f"nbgrader {converter_class.__name__} failed"]
    except Exception as exc:  # reported with the student; the other students go on
        return [*errors.messages, f"{type(exc).__name__}: {exc}"]
    finally:
        log.removeHandler(errors)
    return []


def grade_submission(
    course: dict,
    student: str,
    submission: dict[str, bytes],
    left_out: dict | None = None,
    sandboxed: bool = True,
) -> dict:
    """Grade one student's submission; everything in and out is data.

    Parameters
    ----------
    course : dict
        ``{"config": Config, "assignment": str, "description": dict,
        "source": {path: bytes}, "key": bytes}``: the course's nbgrader
        configuration, the assignment's name and its description
        (:func:`autograders.gradebook.describe`), the files of its source
        folder and the course's secret key of the hidden tests
        (:mod:`autograders.secret`).
    student : str
        The student's id.
    submission : dict of str to bytes
        The files of the student's submission folder, by name.
    left_out : dict of str to str
        Files of the submission folder that were not sent, and why
        (:func:`files_of`).
    sandboxed : bool
        Run the answers in the grader's sandbox (:mod:`autograders.sandbox`).

    Returns
    -------
    dict
        ``ok`` (nbgrader recorded the grades), ``notes`` (what the
        instructor is told), ``submitted`` (the notebooks graded),
        ``scores`` (:func:`autograders.gradebook.auto_scores`, what
        nbgrader recorded here: a report), and ``autograded`` and
        ``feedback``: the files nbgrader wrote for the student, as
        ``{name: bytes}``; the coordinator records the grades from
        ``autograded`` (:func:`autograders.gradebook.store`);
        ``not_graded``: ``{name: note}`` of the notebooks of ``left_out``
        (scored 0), for the CSV's ``grading`` column and their feedback;
        ``exercises``: ``{notebook: {grade_id: record}}``, each judged
        exercise's outcome with its tests' sentences and the ids of the slips
        they named (:func:`autograders.integrity.exercise_record`), for the
        class report.
    """
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import ClearSolutions

    from autograders import gradebook, integrity, sandbox
    from autograders.kernel import KERNEL_NAME

    assignment = course["assignment"]
    with tempfile.TemporaryDirectory(prefix="mhsa-task-") as tmp:
        config = copy.deepcopy(course["config"])
        config.CourseDirectory.root = tmp
        config.CourseDirectory.db_url = _private_gradebook(
            CourseDirectory(config=config).course_id,
            course["description"],
            Path(tmp) / "gradebook.db",
        )
        dirs = CourseDirectory(config=config)
        source = Path(dirs.format_path(dirs.source_directory, ".", assignment))
        raw = Path(tmp) / ".received" / student
        staged = Path(dirs.format_path(dirs.submitted_directory, student, assignment))
        write_files(source, course["source"])
        write_files(raw, submission)
        stub = ClearSolutions(config=config).code_stub["python"]
        bad, notes = stage(raw, staged, source, KERNEL_NAME, stub, left_out)
        if bad:
            notes.append("unreadable notebook(s), scored 0: " + ", ".join(bad))
        timeout = config.Execute.timeout or 60
        wrapper = sandbox.wrap if sandboxed else None
        judged = integrity.verify(source, staged, course["key"], timeout=timeout, wrapper=wrapper)
        for result in judged.values():
            notes += result["notes"]
        config.WriteVerdicts.verdicts = {
            stem: {gid: [bool(v[0]), str(v[1])] for gid, v in r["grades"].items()}
            for stem, r in judged.items()
        }
        config.Autograde.autograde_preprocessors = autograde_steps()
        errors = _run(Autograde, config, assignment, student)
        autograded = Path(dirs.format_path(dirs.autograded_directory, student, assignment))
        feedback = Path(dirs.format_path(dirs.feedback_directory, student, assignment))
        ok = not errors and autograded.is_dir()
        if not errors and not ok:
            errors = ["nbgrader wrote no autograded folder"]
        if ok:
            errors = [f"feedback: {e}" for e in _run(GenerateFeedback, config, assignment, student)]
        notes += errors
        expected = {p for p in course["source"] if "/" not in p and p.endswith(".ipynb")}
        missing = sorted(expected - set(submission) - set(left_out or {}))
        if missing:
            notes.append("missing notebook(s): " + ", ".join(missing))
        return {
            "ok": ok,
            "notes": list(dict.fromkeys(notes)),
            "submitted": sorted(p.stem for p in staged.glob("*.ipynb")),
            "scores": gradebook.auto_scores(dirs.db_url, dirs.course_id, assignment, student),
            "autograded": files_of(autograded)[0] if ok else {},
            "feedback": files_of(feedback)[0] if ok and feedback.is_dir() else {},
            "exercises": {stem: r["exercises"] for stem, r in judged.items()},
            "not_graded": {
                name: left_out_note(name, why)
                for name, why in (left_out or {}).items()
                if name.endswith(".ipynb")
            },
        }
