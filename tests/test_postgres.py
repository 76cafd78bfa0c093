"""The gradebook on PostgreSQL (Debian's server, on loopback), with several graders at once."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from autograders.report import REPORT
from tests.support import nbgrader_course as nc
from tests.support.lab_harness import free_port
from tests.support.mistakes import MISTAKES

pytestmark = pytest.mark.slow  # a PostgreSQL server, real nbgrader

SOME = ["01_input", "07_softmax"]


def pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        pytest.fail("PostgreSQL is not installed: .ci/run installs Debian's postgresql")
    return found[-1]


def as_postgres(cmd: list) -> list:
    """PostgreSQL refuses to run as root: run it as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@pytest.fixture(scope="module")
def postgres():
    # Directly under /tmp: pytest's own temporary folders are private to root,
    # and the server runs as the postgres user.
    data = Path(tempfile.mkdtemp(prefix="mhsa-pg-"))
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        as_postgres([pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "grader"]),
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        as_postgres(
            [
                pg_bin("postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                "-k",
                str(data),
                "-c",
                "listen_addresses=127.0.0.1",
            ]
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while (
            subprocess.run(
                [pg_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(port)], capture_output=True
            ).returncode
            != 0
        ):
            assert time.monotonic() < deadline, "PostgreSQL did not start"
            time.sleep(0.3)
        subprocess.run(
            [pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "grader", "gradebook"],
            check=True,
        )
        yield f"postgresql://grader@127.0.0.1:{port}/gradebook"
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)


def small_class(course: Path, db: str | None) -> None:
    """Five students, two notebooks each; the assignment generated into ``db`` (else copied)."""
    if db:
        nc.nbgrader(course, "generate_assignment", nc.ASSIGNMENT, "--force", "--db", db)
    else:
        nc.generate(course)
    _, name, source, _ = MISTAKES["softmax_wrong_axis"]
    for i in range(5):
        nbs = {s: nc.student_notebook(s, "solution") for s in SOME}
        if i % 2:
            nbs["07_softmax"] = nc.student_notebook("07_softmax", {name: source})
        nc.submit(course, f"student{i}", nbs)


def test_postgres_gradebook_with_three_graders_at_once(postgres, tmp_path):
    """Check that three graders writing to PostgreSQL at once leave the gradebook one grader
    leaves in SQLite (which equals stock ``nbgrader autograde``'s: tests/test_grading.py)."""
    course = nc.make_course(tmp_path / "pg")
    small_class(course, postgres)
    out = nc.grade(course, "--workers", "3", "--db", postgres).stdout
    assert "students: 5" in out and "failed: 0" in out
    assert not (course / "gradebook.db").exists(), "grades went to SQLite, not PostgreSQL"
    reference = nc.make_course(tmp_path / "sqlite")
    small_class(reference, None)
    nc.grade(reference, "--workers", "1")
    pg = nc.grades(course, postgres)
    assert len(pg) >= 10 and pg == nc.grades(reference)
    # the class report reads either gradebook alike: the same numbers, the seeded slip counted
    reports = [
        json.loads((c / REPORT / nc.ASSIGNMENT / "report.json").read_text())
        for c in (course, reference)
    ]
    for r in reports:
        r.pop("generated")
    assert reports[0] == reports[1]
    (softmax,) = [e for e in reports[0]["exercises"] if e["exercise"] == "softmax"]
    assert softmax["counts"] == {"passed": 3, "failed": 2, "hidden": 0, "not attempted": 0}
    assert [(s["id"], s["students"]) for s in softmax["slips"]] == [
        ("step07_softmax:columns", ["student1", "student3"])
    ]
    full = sum(e["points"] for e in reports[0]["exercises"] if e["notebook"] in SOME)
    assert reports[0]["totals"]["student0"] == full
