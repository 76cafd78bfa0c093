"""The grade command on a separate Dask cluster: a scheduler and two workers on loopback.

Each worker runs in a temporary directory of its own, apart from the course
directory: the tasks carry the notebooks as bytes. Grades equal serial
``nbgrader autograde``; a worker killed mid-run costs nothing.
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


def _start(args, cwd: Path, log: Path) -> subprocess.Popen:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [DASK, *args],
        cwd=cwd,
        env=nc.env(),
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


@contextlib.contextmanager
def cluster(tmp: Path):
    """A ``dask scheduler`` and two single-threaded ``dask worker`` processes: (address, procs)."""
    info = tmp / "scheduler.json"
    procs = [
        _start(
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(info),
            ],
            tmp / "scheduler",
            tmp / "scheduler.log",
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
                ],
                tmp / f"worker{k}",
                tmp / f"worker{k}.log",
            )
            for k in (1, 2)
        ]
        procs += workers
        from distributed import Client

        with Client(address, timeout=120) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, workers
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_on_a_separate_cluster_grades_equal_serial_and_survive_a_killed_worker(tmp_path):
    limit = "c.Execute.timeout = 20\n"
    reference = nc.make_course(tmp_path / "reference", limit)
    honest_class(reference, stuck=True)
    nc.nbgrader(reference, "autograde", nc.ASSIGNMENT, "--force")
    course = nc.make_course(tmp_path / "course", limit)
    honest_class(course, stuck=True)  # one student's softmax loops until the 20 s limit
    with cluster(tmp_path / "dask") as (address, _):
        proc = subprocess.Popen(
            [sys.executable, "-m", "autograders", "grade", nc.ASSIGNMENT, "--scheduler", address],
            cwd=course,
            env=nc.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        markers = lambda: sorted(course.glob("autograded/*/mhsa/.mhsa-graded"))  # noqa: E731
        # kill the worker judging the stuck student (its loop runs to the 20 s limit)
        # while it does: Dask must run that task again on the other worker
        from distributed import Client

        deadline = time.monotonic() + 600
        with Client(address, timeout=60) as client:
            victim = None
            while victim is None and time.monotonic() < deadline and proc.poll() is None:
                for worker, keys in client.processing().items():
                    if any(str(k).startswith("judge-partial-") for k in keys):
                        victim = worker
                time.sleep(0.1)
            assert victim is not None, "the stuck student's task was never seen running"
            pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, out + err
    assert "students: 4" in out and "failed: 0" in out, out
    assert len(markers()) == 4
    assert nc.grades(course) == nc.grades(reference)
