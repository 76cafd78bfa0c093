"""The grade command on a separate Dask cluster: a scheduler and two workers on loopback.

The cluster is set up as the README says: TLS with the certificates
``python -m autograders cluster-certs`` makes, on every ``dask`` command and
the grade command, each member guarded (``--preload autograders.guard``)
with its scratch in a private folder; another account's probe during the
run is named in the summary.

Each worker runs in a temporary directory of its own, apart from the course
directory: the tasks carry the course and the submission as data. Grades
equal serial ``nbgrader autograde``; a worker killed mid-run costs nothing
(Dask runs the task again on the other); a task whose worker dies every
time it runs (here, Dask allowing no failure) marks that student only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from autograders.report import REPORT
from tests.support import nbgrader_course as nc
from tests.support.accounts import home_of, need_root, run_as, shared_folder
from tests.support.classes import STUCK_LIMIT, honest_class, stuck_class_reference
from tests.support.dask_cluster import cluster, security

pytestmark = pytest.mark.slow  # real Dask processes, real grading


def grade_killing_the_stuck_students_worker(tmp_path, allowed_failures, probe=False):
    """Grade the honest class on the cluster; kill the worker grading the stuck student.

    The stuck student's softmax loops until its time budget, so its task
    outlasts the others: the kill lands while it runs alone on its worker
    (a worker's queued tasks would die with it). With ``probe``, first
    ``nobody`` opens 8 connections to the scheduler's port and closes each
    at once (a student's probe, issue 45). Returns the command's output and
    the course.
    """
    course = nc.make_course(tmp_path / "course", STUCK_LIMIT)
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
            if probe:  # during the run: the grade command has checked the cluster
                host, port = address.split("://")[1].rsplit(":", 1)
                with shared_folder() as shared:
                    knock = [sys.executable, "-c", PROBE.format(host=host, port=port)]
                    done = run_as("nobody", knock, home_of("nobody", shared))
                assert done.returncode == 0 and done.stdout.strip() == "8", done
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, out + err
    return out, course


#: A student's probe: 8 connections to the scheduler's port, each closed at once.
PROBE = (
    "import socket\n"
    "for _ in range(8):\n"
    "    socket.create_connection(({host!r}, {port})).close()\n"
    "print(8)\n"
)

markers = lambda course: sorted(course.glob("autograded/*/mhsa/.mhsa-graded"))  # noqa: E731


def test_on_a_separate_cluster_grades_equal_serial_and_survive_a_killed_worker(tmp_path):
    """And a probe of the cluster by another account meanwhile is named, every connection."""
    need_root()
    out, course = grade_killing_the_stuck_students_worker(tmp_path, allowed_failures=3, probe=True)
    assert "students: 4" in out and "failed: 0" in out, out
    refused = [ln for ln in out.splitlines() if ln.startswith("! refused: ")]
    assert refused and all(" to the grading cluster refused (" in ln for ln in refused), out
    assert sum(int(ln.split()[2]) for ln in refused if "from '127.0.0.1'" in ln) == 8, refused
    assert len(markers(course)) == 4
    assert nc.grades(course) == stuck_class_reference()
    for student in ("perfect", "partial"):  # written here from what the workers returned
        assert (course / "feedback" / student / nc.ASSIGNMENT / "07_softmax.html").exists()
    # the class report, from what the workers returned: the stuck softmax named as too slow
    report = json.loads((course / REPORT / nc.ASSIGNMENT / "report.json").read_text())
    (softmax,) = [e for e in report["exercises"] if e["exercise"] == "softmax"]
    assert softmax["counts"] == {"passed": 1, "failed": 2, "hidden": 0, "not attempted": 1}
    assert [(s["id"], s["students"]) for s in softmax["slips"]] == [
        ("contract:slow", ["half", "partial"])
    ]
    assert report["submissions"] and all(s["kind"] != "refused" for s in report["submissions"])


def test_a_task_whose_worker_always_dies_marks_that_student_and_the_rest_are_graded(tmp_path):
    out, course = grade_killing_the_stuck_students_worker(tmp_path, allowed_failures=0)
    assert "students: 4" in out and "failed: 1" in out, out
    line = next(ln for ln in out.splitlines() if ln.startswith("! partial:"))
    assert "grading failed: KilledWorker" in line, line
    assert [m.parent.parent.name for m in markers(course)] == ["half", "perfect", "untouched"]
    nc.nbgrader(course, "export", "--to", "grades.csv")
    text = (course / "grades.csv").read_text()
    assert "FAILED: grading failed: KilledWorker" in text
