"""The grade command on a separate Dask cluster: a scheduler and two workers on loopback.

The cluster is set up as the README says: TLS with the certificates
``python -m autograders cluster-certs`` makes, on every ``dask`` command and
the grade command.

Each worker runs in a temporary directory of its own, apart from the course
directory: the tasks carry the course and the submission as data. Grades
equal serial ``nbgrader autograde``; a worker killed mid-run costs nothing
(Dask runs the task again on the other); a task whose worker dies every
time it runs (here, Dask allowing no failure) marks that student only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import nbgrader_course as nc
from tests.test_grading import honest_class

pytestmark = pytest.mark.slow  # real Dask processes, real grading

DASK = str(Path(sys.executable).parent / "dask")


#: As the README says: Dask's HTTP servers (plain HTTP, outside TLS) serve no pages.
NO_HTTP = {
    "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES": "[]",
    "DASK_DISTRIBUTED__WORKER__HTTP__ROUTES": "[]",
}


def _start(args, cwd: Path, log: Path, env: dict | None = None) -> subprocess.Popen:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [DASK, *args],
        cwd=cwd,
        env={**nc.env(), **NO_HTTP, **(env or {})},
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def certificates(folder: Path) -> list:
    """Make the cluster's certificates with ``cluster-certs``; the TLS options that name them."""
    subprocess.run(
        [sys.executable, "-m", "autograders", "cluster-certs", str(folder)],
        check=True,
        capture_output=True,
        env=nc.env(),
    )
    return [
        "--tls-ca-file",
        str(folder / "ca.pem"),
        "--tls-cert",
        str(folder / "cluster.pem"),
        "--tls-key",
        str(folder / "cluster-key.pem"),
    ]


def security(tls: list):
    """A client's Security from the TLS options :func:`certificates` returns."""
    from distributed.security import Security

    ca, cert, key = tls[1::2]
    return Security(
        require_encryption=True, tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key
    )


@contextlib.contextmanager
def cluster(tmp: Path, allowed_failures: int = 3):
    """A TLS ``dask scheduler`` and two single-threaded ``dask worker`` processes.

    Yields (address, worker processes, TLS options, scheduler process). ``allowed_failures``:
    how many workers may die running one task before Dask gives up on it
    (3 is Dask's default).
    """
    info = tmp / "scheduler.json"
    tmp.mkdir(parents=True, exist_ok=True)
    tls = certificates(tmp / "certs")
    procs = [
        _start(
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--protocol",
                "tls",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(info),
                *tls,
            ],
            tmp / "scheduler",
            tmp / "scheduler.log",
            {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(allowed_failures)},
        )
    ]
    try:
        deadline = time.monotonic() + 120
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        workers = [
            _start(
                [
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--nworkers",
                    "1",
                    "--no-nanny",
                    "--local-directory",
                    str(tmp / f"worker{k}" / "space"),
                    "--no-dashboard",
                    *tls,
                ],
                tmp / f"worker{k}",
                tmp / f"worker{k}.log",
            )
            for k in (1, 2)
        ]
        procs += workers
        from distributed import Client

        assert address.startswith("tls://"), address
        with Client(address, timeout=120, security=security(tls)) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, workers, tls, procs[0]
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def grade_killing_the_stuck_students_worker(tmp_path, allowed_failures):
    """Grade the honest class on the cluster; kill the worker grading the stuck student.

    The stuck student's softmax loops until its time budget, so its task
    outlasts the others: the kill lands while it runs alone on its worker
    (a worker's queued tasks would die with it). Returns the command's
    output and the course.
    """
    course = nc.make_course(tmp_path / "course", LIMIT)
    honest_class(course, stuck=True)
    with cluster(tmp_path / "dask", allowed_failures) as (address, _, tls, _):
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "autograders", "grade", nc.ASSIGNMENT),
                *("--scheduler", address, *tls),
            ],
            cwd=course,
            env=nc.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        from distributed import Client

        deadline = time.monotonic() + 600
        with Client(address, timeout=60, security=security(tls)) as client:
            victim = None
            # Dask counts a death against every task assigned to the dead worker, queued ones
            # too: kill only a worker whose one task is the stuck student's, so it is running
            # and nobody else's grading dies with it
            while victim is None and time.monotonic() < deadline and proc.poll() is None:
                for worker, keys in client.processing().items():
                    if len(keys) == 1 and str(keys[0]).startswith("grade-partial-"):
                        victim = worker
                time.sleep(0.1)
            assert victim is not None, "the stuck student's task was never seen running alone"
            pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, out + err
    return out, course


LIMIT = "c.Execute.timeout = 20\n"
markers = lambda course: sorted(course.glob("autograded/*/mhsa/.mhsa-graded"))  # noqa: E731


def test_on_a_separate_cluster_grades_equal_serial_and_survive_a_killed_worker(tmp_path):
    reference = nc.make_course(tmp_path / "reference", LIMIT)
    honest_class(reference, stuck=True)
    nc.nbgrader(reference, "autograde", nc.ASSIGNMENT, "--force")
    out, course = grade_killing_the_stuck_students_worker(tmp_path, allowed_failures=3)
    assert "students: 4" in out and "failed: 0" in out, out
    assert len(markers(course)) == 4
    assert nc.grades(course) == nc.grades(reference)
    for student in ("perfect", "partial"):  # written here from what the workers returned
        assert (course / "feedback" / student / nc.ASSIGNMENT / "07_softmax.html").exists()


def test_a_task_whose_worker_always_dies_marks_that_student_and_the_rest_are_graded(tmp_path):
    out, course = grade_killing_the_stuck_students_worker(tmp_path, allowed_failures=0)
    assert "students: 4" in out and "failed: 1" in out, out
    line = next(ln for ln in out.splitlines() if ln.startswith("! partial:"))
    assert "grading failed: KilledWorker" in line, line
    assert [m.parent.parent.name for m in markers(course)] == ["half", "perfect", "untouched"]
    nc.nbgrader(course, "export", "--to", "grades.csv")
    text = (course / "grades.csv").read_text()
    assert "FAILED: grading failed: KilledWorker" in text
