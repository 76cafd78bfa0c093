"""Grade a whole class: the judge outside, each submission sandboxed, nbgrader's records.

``python -m autograders grade ASSIGNMENT [--workers N | --scheduler tcp://HOST:PORT]``
(run in the course directory) grades every submission under
``submitted/*/ASSIGNMENT``. The command is the coordinator; the judging runs
on Dask: a LocalCluster of N single-threaded worker processes by default, or
an existing cluster. For one student:

1. here, the readable notebooks are staged, duplicated graded cells named
   (:func:`prepare`);
2. on a Dask worker, the answer cells run in a bubblewrap sandbox
   (:mod:`autograders.sandbox`) that returns values only, and the checks
   judge them (:func:`autograders.task.judge_submission`: notebooks in as
   bytes, verdicts out; the worker needs no shared folder);
3. here, nbgrader's own ``Autograde`` converter records those verdicts — with
   :class:`autograders.verdicts.WriteVerdicts` where ``Execute`` would run the
   notebook — in the gradebook and ``autograded/``, for stock feedback
   (:func:`record`).

A worker killed mid-task: Dask runs the task again elsewhere; the grade is
written once, here. It is resumable: a student counts as done once a marker
file, written after nbgrader has finished with them, matches their
submission's timestamp. Killed and run again, it regrades only the students
without a marker (the gradebook keeps one row per student, notebook and
cell, so a regrade replaces, never duplicates). ``--force`` regrades everyone.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import statistics
import sys
import time
import uuid
from pathlib import Path

MARKER = ".mhsa-graded"
STAGED = ".mhsa-staged"  # submissions as nbgrader reads them: readable, no duplicate ids


# --------------------------------------------------------------------------
# course directory
# --------------------------------------------------------------------------
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


def students_of(course: Path, assignment: str) -> list:
    """Every student with a submission of ``assignment``, sorted."""
    return sorted(
        p.parent.name for p in (course / "submitted").glob(f"*/{assignment}") if p.is_dir()
    )


# --------------------------------------------------------------------------
# one student, inside a worker
# --------------------------------------------------------------------------
class _Errors(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        msg = record.getMessage().strip()
        if msg and "Kernel is running over TCP" not in msg:
            self.messages.append(msg.splitlines()[-1][:300])


def stage(submission: Path, staged: Path) -> tuple[list, list]:
    """Copy the gradable part of a submission to ``staged``; return (unreadable, duplicates).

    Unreadable notebooks and symbolic links are left out (only they score 0). A graded or
    answer cell that appears twice (an honest copy-paste, too) keeps its
    nbgrader identity in its first place only; nbgrader would otherwise stop
    on the duplicate id.
    """
    import nbformat

    from autograders import integrity

    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    bad, duplicates = [], []
    for path in sorted(submission.iterdir()):
        if path.is_symlink():  # it could point at the solutions or at another student
            bad.append(path.name)
            duplicates.append(f"{path.name} is a symbolic link (left out)")
            continue
        if path.suffix != ".ipynb":
            if path.is_file():
                shutil.copy(path, staged / path.name)  # timestamp.txt and the like
            continue
        nb = integrity.read(path)
        if nb is None:
            bad.append(path.name)
            continue
        seen = set()
        for cell in nb.cells:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if gid is None:
                continue
            if gid in seen:
                duplicates.append(f"{path.stem}: cell {gid} appears twice (the copy is not graded)")
                del cell.metadata["nbgrader"]
            seen.add(gid)
        nbformat.write(nb, str(staged / path.name))
    return bad, duplicates


def prepare(config, assignment: str, student: str) -> tuple[Path, Path, dict, list]:
    """Stage one submission here; ``(source, submission, staged notebooks as bytes, notes)``."""
    from nbgrader.coursedir import CourseDirectory

    from autograders import integrity
    from autograders.kernel import KERNEL_NAME
    from autograders.task import notebooks_of

    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = assignment
    coursedir.student_id = student
    source = Path(coursedir.format_path(coursedir.source_directory, ".", assignment))
    submission = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
    staged = Path(coursedir.format_path(STAGED, student, assignment))
    bad, notes = stage(submission, staged)
    if bad:
        notes.append("unreadable notebook(s), scored 0: " + ", ".join(bad))
    notes += integrity.tampering(source, submission, KERNEL_NAME)
    return source, submission, notebooks_of(staged), notes


def record(config, course: Path, assignment: str, student: str, judged: dict, notes: list):
    """Record one student's verdicts with nbgrader, here; return (student, ok, notes).

    ``judged`` is what :func:`autograders.task.judge_submission` returned for
    the staged submission. Stock nbgrader autograding records the verdicts:
    the gradebook entries, the autograded notebooks and, later, the
    feedback, without running the submission in a kernel.
    """
    from nbgrader.converters import Autograde
    from nbgrader.converters.base import NbGraderException
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = assignment
    coursedir.student_id = student
    source = Path(coursedir.format_path(coursedir.source_directory, ".", assignment))
    submission = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
    notes = list(notes)
    for result in judged.values():
        notes += result["notes"]
    config = Config(config)
    config.WriteVerdicts.verdicts = {
        stem: {gid: list(v) for gid, v in r["grades"].items()} for stem, r in judged.items()
    }
    config.Autograde.autograde_preprocessors = autograde_steps()
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = assignment
    coursedir.student_id = student
    coursedir.submitted_directory = STAGED
    converter = Autograde(coursedir=coursedir, config=config)
    converter.force = True  # a student without a marker may have a partial folder
    errors = _Errors()
    converter.log.addHandler(errors)
    ok = True
    try:
        converter.start()
    except NbGraderException:
        ok = False
    except Exception as exc:  # reported in the summary; the other students go on
        ok = False
        errors.messages.append(f"{type(exc).__name__}: {exc}")
    finally:
        converter.log.removeHandler(errors)
    if not ok:
        notes += errors.messages
    missing = missing_notebooks(source, submission)
    if missing:
        notes.append("missing notebook(s): " + ", ".join(missing))
    autograded = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment))
    if ok and autograded.exists():
        (autograded / MARKER).write_text(submission_stamp(course, student, assignment))
    elif ok:
        ok = False
        notes.append("nbgrader wrote no autograded folder")
    return student, ok, list(dict.fromkeys(notes))


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


def autograde_steps() -> list:
    """nbgrader's autograde pipeline with the parent's verdicts where Execute would run."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    from autograders.verdicts import WriteVerdicts

    steps = Autograde().autograde_preprocessors
    return [WriteVerdicts if issubclass(step, Execute) else step for step in steps]


def missing_notebooks(source: Path, submission: Path) -> list:
    """Notebooks of the assignment that the submission lacks."""
    expected = {p.name for p in source.glob("*.ipynb")}
    got = {p.name for p in submission.glob("*.ipynb")}
    return sorted(expected - got)


# --------------------------------------------------------------------------
# the class
# --------------------------------------------------------------------------
def progress_bar(done: int, total: int, failed: int, started: float) -> str:
    """One line of progress: bar, students done, failures, rate and time left."""
    width = 30
    filled = int(width * done / total) if total else width
    rate = (time.monotonic() - started) / done if done else 0.0
    eta = rate * (total - done)
    return (
        f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} students"
        f" · {failed} failed · {rate:.1f} s/student · eta {eta:.0f} s "
    )


def grade_class(
    course: Path,
    assignment: str,
    workers: int,
    force: bool = False,
    db: str | None = None,
    out=sys.stderr,
    sandboxed: bool = True,
    scheduler: str | None = None,
) -> dict:
    """Grade every submission of ``assignment``; return the summary as a dict.

    The answers are judged by Dask tasks (:func:`autograders.task.judge_submission`)
    on a LocalCluster of ``workers`` processes, or on the cluster at
    ``scheduler``; each task gets the notebooks as bytes. Everything else —
    reading submissions, the gradebook, ``autograded/``, feedback — happens
    here. Refuses (:class:`autograders.sandbox.SandboxUnavailable`) when the
    sandbox cannot be made, unless ``sandboxed`` is False.
    """
    from distributed import as_completed

    from autograders import sandbox
    from autograders.export import record_failure
    from autograders.task import judge_submission, notebooks_of

    course = course.resolve()
    if sandboxed:
        sandbox.check()
    config = load_config(course, db)
    everyone = students_of(course, assignment)
    todo = [s for s in everyone if force or not is_done(course, s, assignment)]
    skipped = len(everyone) - len(todo)
    ensure_gradebook(config, course, assignment, everyone)
    started = time.monotonic()
    outcomes = {}
    failed = 0

    def done(student, ok, reasons):
        nonlocal failed
        outcomes[student] = (ok, reasons)
        record_failure(course, student, None if ok else reasons)  # the CSV's grading column
        if not ok:
            failure_feedback(course, student, assignment, reasons)
        failed += not ok
        print(progress_bar(len(outcomes), len(todo), failed, started), end="", file=out, flush=True)

    if todo:
        with dask_client(workers, scheduler) as client:
            source, pending = None, {}
            for student in todo:  # the coordinator alone reads the submissions
                source_dir, _, staged, notes = prepare(config, assignment, student)
                if source is None:  # sent once to every worker
                    source = client.scatter([notebooks_of(source_dir)], broadcast=True)[0]
                future = client.submit(
                    judge_submission,
                    source,
                    staged,
                    config.Execute.timeout or 60,
                    sandboxed,
                    key=f"judge-{student}-{uuid.uuid4().hex}",
                    pure=False,
                )
                pending[future] = (student, notes)
            for future in as_completed(list(pending)):
                student, notes = pending.pop(future)
                try:
                    judged = future.result()
                except Exception as exc:  # the task crashed every worker it ran on
                    done(student, False, [*notes, f"grading failed: {type(exc).__name__}: {exc}"])
                    continue
                done(*record(config, course, assignment, student, judged, notes))
    if todo:
        print(file=out)
    return summarize(
        config, course, assignment, everyone, outcomes, skipped, time.monotonic() - started
    )


@contextlib.contextmanager
def dask_client(workers: int, scheduler: str | None = None):
    """A Dask client: on ``scheduler`` (an address) if given, else on a LocalCluster here.

    The LocalCluster has ``workers`` single-threaded worker processes; it
    ends with the command.
    """
    from distributed import Client, LocalCluster

    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=max(1, workers),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


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


def summarize(config, course, assignment, students, outcomes, skipped, seconds) -> dict:
    """The class's summary: totals from the gradebook, failures and their reasons."""
    from nbgrader.api import Gradebook
    from nbgrader.coursedir import CourseDirectory

    totals = {}
    with Gradebook(CourseDirectory(config=config).db_url) as gb:
        max_score = gb.find_assignment(assignment).max_score
        for s in students:
            try:
                totals[s] = gb.find_submission(assignment, s).score
            except Exception:
                totals[s] = None
    failures = {s: notes for s, (ok, notes) in outcomes.items() if not ok or notes}
    return dict(
        students=len(students),
        graded=len(outcomes),
        skipped=skipped,
        failed=sum(not ok for ok, _ in outcomes.values()),
        seconds=seconds,
        max_score=max_score,
        totals=totals,
        failures=failures,
    )


def print_summary(summary: dict, out=None) -> None:
    """Print the summary: counts, score distribution, and every student with a note."""
    out = out or sys.stdout
    scores = [v for v in summary["totals"].values() if v is not None]
    print(
        f"students: {summary['students']} · graded now: {summary['graded']} · "
        f"already done: {summary['skipped']} · failed: {summary['failed']} · "
        f"{summary['seconds']:.1f} s",
        file=out,
    )
    if not summary.get("sandboxed", True):
        print("! graded WITHOUT the sandbox (--no-sandbox): submissions ran unconfined", file=out)
    if scores:
        m = summary["max_score"] or 1
        print(
            f"scores out of {summary['max_score']:g}: min {min(scores):g} · median "
            f"{statistics.median(scores):g} · max {max(scores):g}",
            file=out,
        )
        bins = [0] * 5
        for v in scores:
            bins[min(4, int(5 * v / m))] += 1
        for k, count in enumerate(bins):
            lo, hi = 20 * k, 20 * (k + 1)
            print(f"  {lo:>3}-{hi:<3}% {'#' * count} {count}", file=out)
    for student, reasons in sorted(summary["failures"].items()):
        print(f"! {student}: " + "; ".join(reasons or ["failed"]), file=out)


def main(argv=None) -> int:
    """``python -m autograders grade``: parse the arguments, grade, print the summary."""
    p = argparse.ArgumentParser(prog="python -m autograders grade", description=__doc__)
    p.add_argument("assignment")
    p.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes of the LocalCluster (default: one per core)",
    )
    p.add_argument(
        "--scheduler",
        help="grade on the Dask cluster at this address (tcp://HOST:PORT) instead",
    )
    p.add_argument("--force", action="store_true", help="regrade students already graded")
    p.add_argument("--db", help="gradebook URL (default: the course's, SQLite)")
    p.add_argument("--course-dir", default=".", type=Path)
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the answers without bubblewrap (only for trusted submissions)",
    )
    a = p.parse_args(argv)
    from autograders.sandbox import SandboxUnavailable

    try:
        summary = grade_class(
            a.course_dir,
            a.assignment,
            a.workers,
            a.force,
            a.db,
            sandboxed=not a.no_sandbox,
            scheduler=a.scheduler,
        )
    except SandboxUnavailable as exc:
        print(f"not grading: {exc}", file=sys.stderr)
        return 2
    summary["sandboxed"] = not a.no_sandbox
    print_summary(summary)
    return 0
