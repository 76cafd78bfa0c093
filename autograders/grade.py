"""Grade a whole class: the judge outside, each submission sandboxed, nbgrader's records.

``python -m autograders grade ASSIGNMENT [--workers N | --scheduler tls://HOST:PORT
--tls-ca-file CA --tls-cert CERT --tls-key KEY]`` (run in the course directory)
grades every submission under ``submitted/*/ASSIGNMENT``. The command is the
coordinator; the judging runs on Dask: a LocalCluster of N single-threaded
worker processes by default, or an existing cluster. Only the grade command
reaches its workers: every connection of the cluster is Dask's TLS, both ends
showing a certificate (:mod:`autograders.cluster`): for the LocalCluster,
credentials made in memory for this command; for a cluster, the certificates
``python -m autograders cluster-certs`` makes (a ``tcp://`` address is
refused). For one student:

1. here, the coordinator reads the submission folder's files and sends them,
   as data, with the course (configuration, the assignment as the gradebook
   holds it, the source files; sent once to every worker);
2. on a Dask worker, :func:`autograders.task.grade_submission` stages the
   notebooks, runs the answer cells in a bubblewrap sandbox
   (:mod:`autograders.sandbox`) that returns values only, has the checks
   judge them, and has stock nbgrader record the verdicts and render the
   feedback against a private gradebook, all in a private temporary folder:
   workers share no folder with the coordinator or each other;
3. here, the scores are merged into the course's gradebook
   (:func:`autograders.gradebook.store`, SQLite or PostgreSQL with ``--db``)
   and the autograded notebooks and feedback pages written (:func:`record`).

A worker killed mid-task: Dask runs the task again elsewhere; the grade is
written once, here. A task whose workers keep dying (Dask's
``allowed-failures``) marks that student "grading failed", with the reason,
and the rest are graded. It is resumable: a student counts as done once a marker
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
MAX_FILE = 32 * 2**20  # a submitted file larger than this is not sent to a worker
LOCK = ".mhsa-grading.lock"  # held by the grade command that is grading the course


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


# --------------------------------------------------------------------------
# one student, here: what goes to a worker and what comes back
# --------------------------------------------------------------------------
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
    the scores go into the course's gradebook (:func:`autograders.gradebook.store`),
    the autograded notebooks and feedback pages into ``autograded/`` and
    ``feedback/``, and last the marker that says the student is done.
    """
    from nbgrader.coursedir import CourseDirectory

    from autograders.collect import arrival_of
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
        result["scores"],
        result["submitted"],
    )
    autograded = Path(dirs.format_path(dirs.autograded_directory, student, assignment))
    feedback = Path(dirs.format_path(dirs.feedback_directory, student, assignment))
    notes = identity_notes(submission, student) + stamp_notes + result["notes"]
    if not result["ok"]:
        if autograded.exists():
            shutil.rmtree(autograded)  # an earlier grading's notebooks would mislead
        return student, False, notes
    write_folder(autograded, result["autograded"], modes["autograded"])
    if result["feedback"]:
        write_folder(feedback, result["feedback"], modes["feedback"])
    (autograded / MARKER).write_text(submission_stamp(course, student, assignment))
    return student, True, notes


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


# --------------------------------------------------------------------------
# the class
# --------------------------------------------------------------------------
def grade_class(
    course: Path,
    assignment: str,
    workers: int,
    force: bool = False,
    db: str | None = None,
    out=sys.stderr,
    sandboxed: bool = True,
    scheduler: str | None = None,
    tls: tuple = (None, None, None),
) -> dict:
    """Grade every submission of ``assignment``; return the summary as a dict.

    Each student is one Dask task (:func:`autograders.task.grade_submission`)
    on a LocalCluster of ``workers`` processes, or on the cluster at
    ``scheduler`` (``tls://`` only, with ``tls``: the CA file, certificate
    and key of :func:`autograders.cluster.cluster_security`); the task gets
    the course and the submission as data and
    returns the grades and files as data. One task per worker thread is in
    flight, so a class of thousands never sits in memory at once.
    Everything else — reading submissions, the gradebook, ``autograded/``,
    ``feedback/`` — happens here. Refuses
    (:class:`autograders.sandbox.SandboxUnavailable`) when the sandbox cannot
    be made, unless ``sandboxed`` is False, (:class:`GradingBusy`) while
    another grade command grades the same course, and
    (:class:`autograders.cluster.InsecureCluster`) a cluster without TLS.
    """
    from autograders.cluster import cluster_security

    security = cluster_security(scheduler, *tls) if scheduler else None
    course = course.resolve()
    with exclusive(course):
        return _grade(course, assignment, workers, force, db, out, sandboxed, scheduler, security)


@contextlib.contextmanager
def exclusive(course: Path):
    """Hold the course's grading lock for the block; refuse if another grade command holds it.

    Two grade commands on one course would race on ``autograded/`` and the
    gradebook. The lock is an ``flock`` on a file in the course directory:
    the system releases it when its holder ends, killed or not.
    """
    import fcntl
    import socket

    with open(course / LOCK, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise GradingBusy(
                f"another grade command is grading this course ({holder}); "
                "wait for it to finish, or stop it first."
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class GradingBusy(RuntimeError):
    """Another grade command holds the course's grading lock."""


def _grade(course, assignment, workers, force, db, out, sandboxed, scheduler, security) -> dict:
    """:func:`grade_class`'s work, with the course's grading lock held."""
    from distributed import wait
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from tqdm.auto import tqdm

    from autograders import sandbox
    from autograders.export import record_failure
    from autograders.secret import read_key
    from autograders.task import files_of, grade_submission
    from autograders.watch import cluster_refusals, summary_lines, watch_cluster

    if sandboxed:
        sandbox.check()
    read_key(course)  # before any work: a course directory without its key says so
    config = load_config(course, db)
    everyone, unsafe = students_of(course, assignment)
    at_door = refused_at_collect(course, assignment, unsafe)
    todo = [s for s in everyone if force or not is_done(course, s, assignment)]
    skipped = len(everyone) - len(todo)
    # a student refused at collect gets a gradebook row, so the CSV names them
    ensure_gradebook(config, course, assignment, sorted({*everyone, *at_door["students"]}))
    started = time.monotonic()
    outcomes, intruders = {}, []
    failed = 0
    # students graded, failures, rate and time left; nothing shown when nothing is to do
    bar = tqdm(total=len(todo), desc="grading", unit="student", file=out, disable=not todo)

    def done(student, ok, reasons):
        nonlocal failed
        outcomes[student] = (ok, reasons)
        record_failure(course, student, None if ok else reasons)  # the CSV's grading column
        if not ok:
            failure_feedback(course, student, assignment, reasons)
        failed += not ok
        bar.set_postfix_str(f"{failed} failed", refresh=False)
        bar.update(1)

    if todo:
        coursedir = CourseDirectory(config=config)
        modes = {  # file permissions as nbgrader's own converters would set them
            name: int(str(kind(coursedir=coursedir, config=config).permissions), 8)
            for name, kind in (("autograded", Autograde), ("feedback", GenerateFeedback))
        }
        with dask_client(workers, scheduler, security) as client:
            watch_cluster(client)  # every connection refused for want of credentials is named
            shared = client.scatter([course_data(config, course, assignment)], broadcast=True)[0]
            queue, pending = list(reversed(todo)), {}

            def top_up():  # one task per worker thread: the submissions are read as needed
                while queue and len(pending) < in_flight(client):
                    student = queue.pop()
                    folder = submission_folder(config, assignment, student)
                    files, left_out = files_of(folder, recursive=False, max_bytes=MAX_FILE)
                    future = client.submit(
                        grade_submission,
                        shared,
                        student,
                        files,
                        left_out,
                        sandboxed,
                        key=f"grade-{student}-{uuid.uuid4().hex}",
                        pure=False,
                    )
                    pending[future] = student

            top_up()
            while pending:
                try:  # the timeout notices workers that joined (a cluster that grows)
                    finished = wait(list(pending), timeout=2, return_when="FIRST_COMPLETED").done
                except TimeoutError:
                    finished = set()
                finished = [(future, pending.pop(future)) for future in finished]
                top_up()  # before recording: the workers stay busy meanwhile
                for future, student in finished:
                    try:
                        result = future.result()
                    except Exception as exc:  # every worker that ran the task died
                        done(student, False, [f"grading failed: {type(exc).__name__}: {exc}"])
                        continue
                    try:
                        done(*record(config, course, assignment, student, result, modes))
                    except Exception as exc:
                        done(student, False, [*result["notes"], f"recording failed: {exc}"])
            intruders = summary_lines(cluster_refusals(client))
    bar.close()
    summary = summarize(
        config, course, assignment, everyone, outcomes, skipped, time.monotonic() - started
    )
    summary["refused"] = at_door["lines"] + intruders
    for student, reasons in at_door["students"].items():
        if student not in outcomes:  # nothing of theirs was graded now: the CSV says why
            record_failure(course, student, None if student in everyone else reasons)
        summary["failures"].setdefault(student, [])
        summary["failures"][student] = reasons + summary["failures"][student]
    return summary


def refused_at_collect(course: Path, assignment: str, unsafe: list) -> dict:
    """The submissions refused at the door, for the summary and the CSV.

    ``{"students": {safe id: [reason, …]}, "lines": [str, …]}``: what the
    course's collect refused (:data:`autograders.collect.REFUSED`) under a
    safe id is told about that student; a refused folder without a safe id,
    and a folder of ``submitted/`` whose name is not a safe id (``unsafe``),
    is a line of its own, the name escaped.
    """
    from autograders.collect import refused
    from autograders.ids import ID_RULE, shown

    students, lines = {}, []
    for entry in refused(course, assignment):
        reason = f"a submission was not collected: {entry.get('reason')}"
        if entry.get("student"):
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


def in_flight(client) -> int:
    """How many tasks to keep submitted: one per worker thread, at least one.

    One each, so a worker that dies takes down no task but the one it was
    running, and a class of thousands is never read into memory at once.
    """
    workers = client.scheduler_info(n_workers=-1)["workers"].values()
    return max(1, sum(w.get("nthreads", 1) for w in workers))


@contextlib.contextmanager
def dask_client(workers: int, scheduler: str | None = None, security=None):
    """A Dask client: on ``scheduler`` (an address) if given, else on a LocalCluster here.

    Parameters
    ----------
    workers : int
        Single-threaded worker processes of the LocalCluster; it ends with
        the command.
    scheduler : str, optional
        The address of a running cluster's scheduler, reached with ``security``
        (:func:`autograders.cluster.cluster_security`).
    security : distributed.security.Security, optional
        The client's credentials for ``scheduler``.

    Yields
    ------
    distributed.Client
        A client of a cluster that refuses every peer without its
        credentials: the LocalCluster's scheduler, nannies and workers
        listen on ``tls://`` loopback addresses only, with credentials made
        in memory for it (:func:`autograders.cluster.local_security`). The
        HTTP servers Dask starts beside the scheduler and each worker (plain
        HTTP: dashboard, task and worker pages, metrics) serve nothing.
    """
    import dask
    from distributed import Client, LocalCluster

    from autograders.cluster import NO_HTTP, local_security

    if scheduler:
        if security is None:  # never a cluster without credentials: this refuses
            from autograders.cluster import cluster_security

            security = cluster_security(scheduler, None, None, None)
        with Client(scheduler, security=security) as client:
            yield client
        return
    security = local_security()
    with (
        dask.config.set(NO_HTTP),  # the nannies hand it on to the worker processes
        LocalCluster(
            n_workers=max(1, workers),
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            protocol="tls://",
            security=security,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster, security=security) as client,
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
    """Print the summary: counts, score distribution, and every student with a note.

    Every line is printed escaped (:func:`autograders.ids.printable`): no text a
    student chose (an id, a file name, a stamp) puts a line break, a
    control character or a terminal escape on the instructor's terminal.
    """
    from autograders.ids import printable

    target = out or sys.stdout

    class _Escaped:  # what print() writes, escaped; only its own line end passes as it is
        def write(self, text: str) -> None:
            target.write(text if text == "\n" else printable(text, backslashes=False))

    out = _Escaped()
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
    for line in summary.get("refused", []):
        print(f"! refused: {line}", file=out)
    for student, reasons in sorted(summary["failures"].items()):
        print(f"! {student}: " + "; ".join(reasons or ["failed"]), file=out)


def main(argv=None) -> int:
    """``python -m autograders grade``: parse the arguments, grade, print the summary."""
    from autograders.cluster import FILES

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
        help="grade on the Dask cluster at this address (tls://HOST:PORT) instead",
    )
    for option, name in FILES.items():
        p.add_argument(f"--{option}", help=f"with --scheduler: the cluster's {name}")
    p.add_argument("--force", action="store_true", help="regrade students already graded")
    p.add_argument("--db", help="gradebook URL (default: the course's, SQLite)")
    p.add_argument("--course-dir", default=".", type=Path)
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the answers without bubblewrap (only for trusted submissions)",
    )
    a = p.parse_args(argv)
    from autograders.cluster import InsecureCluster
    from autograders.sandbox import SandboxUnavailable
    from autograders.secret import MissingKey

    try:
        summary = grade_class(
            a.course_dir,
            a.assignment,
            a.workers,
            a.force,
            a.db,
            sandboxed=not a.no_sandbox,
            scheduler=a.scheduler,
            tls=(a.tls_ca_file, a.tls_cert, a.tls_key),
        )
    except (SandboxUnavailable, GradingBusy, MissingKey, InsecureCluster) as exc:
        print(f"not grading: {exc}", file=sys.stderr)
        return 2
    summary["sandboxed"] = not a.no_sandbox
    print_summary(summary)
    return 0
