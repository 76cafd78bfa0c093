"""Grade a whole class: the judge outside, each submission sandboxed, nbgrader's records.

``python -m autograders grade ASSIGNMENT [--workers N | --scheduler tls://HOST:PORT
--tls-ca-file CA --tls-cert CERT --tls-key KEY]`` (run in the course directory)
grades every submission under ``submitted/*/ASSIGNMENT``. The command is the
coordinator; the judging runs on Dask: a cluster of N single-threaded worker
processes made here by default, or an existing cluster. Only the grade
command reaches its workers: the cluster made here talks over Unix sockets in
a fresh folder only this account can open, where its scratch and temporary
files go too (:mod:`autograders.private_cluster`); every connection of an
existing cluster is Dask's TLS, both ends showing a certificate of the
cluster's own authority (:mod:`autograders.cluster`; a ``tcp://`` address is
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
3. here, nbgrader's own ``SaveAutoGrades`` and ``AssignLatePenalties``
   record the autograded notebooks in the course's gradebook
   (:func:`autograders.gradebook.store`, SQLite or PostgreSQL with ``--db``),
   and the autograded notebooks and feedback pages are written
   (:func:`autograders.handoff.record`).

Who is graded (and who is done) is :mod:`autograders.roster`; the hand-off
to and from a worker :mod:`autograders.handoff`; what the instructor is
told :mod:`autograders.summary`. This module is the coordinator: the lock,
the Dask client, the queue of tasks and the command line. See
``docs/grading.md`` for how this path relates to ``nbgrader autograde``.

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
import os
import sys
import time
import uuid
from pathlib import Path

__all__ = ["GradingBusy", "dask_client", "exclusive", "grade_class", "in_flight", "main"]

LOCK = ".mhsa-grading.lock"  # held by the grade command that is grading the course


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
    on a private cluster of ``workers`` processes made here, or on the cluster at
    ``scheduler`` (``tls://`` only, with ``tls``: the CA file, certificate
    and key of :func:`autograders.cluster.cluster_security`); the task gets
    the course and the submission as data and
    returns the grades and files as data. One task per worker thread is in
    flight, so a class of thousands never sits in memory at once.
    Everything else — reading submissions, the gradebook, ``autograded/``,
    ``feedback/`` — happens here. Refuses
    (:class:`autograders.sandbox.SandboxUnavailable`) when the sandbox cannot
    be made, unless ``sandboxed`` is False, (:class:`GradingBusy`) while
    another grade command grades the same course,
    (:class:`autograders.cluster.InsecureCluster`) a cluster without TLS or
    with a member that is not guarded or is exposed
    (:func:`autograders.watch.check_cluster`), and
    (:class:`autograders.private.CourseNotPrivate`) a course directory that
    another account can reach, before touching it; what it writes there is private.
    """
    from autograders.cluster import cluster_security
    from autograders.private import private

    security = cluster_security(scheduler, *tls) if scheduler else None
    course = course.resolve()
    with private(course, db), exclusive(course):  # refuses a course others reach; umask 077
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
    from autograders.handoff import (
        course_data,
        failure_feedback,
        record,
        submission_files,
    )
    from autograders.report import top_lines, write
    from autograders.results import RunLog
    from autograders.roster import (
        ensure_gradebook,
        is_done,
        load_config,
        refused_at_collect,
        students_of,
    )
    from autograders.secret import read_key
    from autograders.summary import summarize
    from autograders.task import grade_submission
    from autograders.watch import check_cluster, cluster_refusals, summary_lines

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
    log = RunLog(course, assignment, _notebooks(config, assignment))
    failed = 0
    bar = None  # students graded, failures, rate and time left: once grading begins

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
            # a cluster of several machines: every member guarded and private, or no grading;
            # the connections it refuses meanwhile are named (the one made here has no port)
            token = check_cluster(client) if scheduler else None
            bar = tqdm(total=len(todo), desc="grading", unit="student", file=out)
            shared = client.scatter([course_data(config, course, assignment)], broadcast=True)[0]
            queue, pending = list(reversed(todo)), {}

            def top_up():  # one task per worker thread: the submissions are read as needed
                while queue and len(pending) < in_flight(client):
                    student = queue.pop()
                    files, left_out = submission_files(config, assignment, student)
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
                        reasons = [f"grading failed: {type(exc).__name__}: {exc}"]
                        done(student, False, reasons)
                        log.student(student, False, reasons, None)
                        continue
                    try:
                        done(*record(config, course, assignment, student, result, modes))
                    except Exception as exc:
                        done(student, False, [*result["notes"], f"recording failed: {exc}"])
                    log.student(student, *outcomes[student], result.get("exercises"))
            intruders = summary_lines(cluster_refusals(client, token)) if scheduler else []
    if bar is not None:
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
    log.run(at_door["lines"], at_door["students"])  # submissions; not the cluster's refusals
    log.close()
    try:  # the grades are recorded whatever happens to the report
        report, page = write(course, assignment, db, config)
    except Exception as exc:
        summary["slips"] = [f"! class report not written: {type(exc).__name__}: {exc}"]
        return summary
    summary["report"] = str(page)
    summary["slips"] = top_lines(report, page)
    return summary


def _notebooks(config, assignment: str) -> list[str]:
    """The stems of the assignment's notebooks that have exercises, in the course's order."""
    from mhsa_helpers.exercises import EXERCISES

    return list(dict.fromkeys(e.notebook for e in EXERCISES))


def in_flight(client) -> int:
    """How many tasks to keep submitted: one per worker thread, at least one.

    One each, so a worker that dies takes down no task but the one it was
    running, and a class of thousands is never read into memory at once.
    """
    workers = client.scheduler_info(n_workers=-1)["workers"].values()
    return max(1, sum(w.get("nthreads", 1) for w in workers))


@contextlib.contextmanager
def dask_client(workers: int, scheduler: str | None = None, security=None):
    """A Dask client: on ``scheduler`` (an address) if given, else on a private cluster here.

    Parameters
    ----------
    workers : int
        Single-threaded worker processes of the cluster made here; it ends
        with the block.
    scheduler : str, optional
        The address of a running cluster's scheduler, reached with ``security``
        (:func:`autograders.cluster.cluster_security`).
    security : distributed.security.Security, optional
        The client's credentials for ``scheduler``.

    Yields
    ------
    distributed.Client
        A client of ``scheduler``'s cluster, which refuses every peer without
        its credentials; or of a cluster made here that no other account can
        reach (:func:`autograders.private_cluster.private_cluster`: Unix
        sockets, scratch and temporary files in a fresh folder of mode 0700,
        removed when the block ends; no port, no HTTP server).
    """
    from distributed import Client

    from autograders.private_cluster import private_cluster

    if scheduler:
        if security is None:  # never a cluster without credentials: this refuses
            from autograders.cluster import cluster_security

            security = cluster_security(scheduler, None, None, None)
        with Client(scheduler, security=security) as client:
            yield client
        return
    with private_cluster(workers) as client:
        yield client


def main(argv=None) -> int:
    """``python -m autograders grade``: parse the arguments, grade, print the summary."""
    from autograders.cluster import FILES

    p = argparse.ArgumentParser(prog="python -m autograders grade", description=__doc__)
    p.add_argument("assignment")
    p.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes of the cluster made here (default: one per core)",
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
    from autograders.private import CourseNotPrivate
    from autograders.sandbox import SandboxUnavailable
    from autograders.secret import MissingKey
    from autograders.summary import print_summary

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
    except (SandboxUnavailable, GradingBusy, MissingKey, InsecureCluster, CourseNotPrivate) as exc:
        print(f"not grading: {exc}", file=sys.stderr)
        return 2
    summary["sandboxed"] = not a.no_sandbox
    print_summary(summary)
    return 0
