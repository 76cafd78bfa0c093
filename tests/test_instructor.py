"""The README's instructor and student commands, run exactly as written."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.support import nbgrader_course as nc

pytestmark = pytest.mark.slow  # the whole nbgrader workflow

README = nc.ROOT / "README.md"


def block(marker: str) -> str:
    """The bash block after ``<!-- marker -->`` in the README."""
    text = README.read_text().split(f"<!-- {marker} -->", 1)[1]
    return re.search(r"```bash\n(.*?)```", text, re.S).group(1)


def run(script: str, cwd: Path, env: dict) -> None:
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, f"{script}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


def test_instructor_and_student_commands_as_written(tmp_path):
    repo = tmp_path / "repo"
    for part in ("solutions", "autograders", "mhsa_helpers", "nbgrader_config.py", "README.md"):
        src = nc.ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, repo / part)
    (repo / ".venv").symlink_to(sys.prefix)  # the README's environment: this one
    env = nc.env()
    env["EXCHANGE"] = str(tmp_path / "exchange")
    env["COURSE"] = str(tmp_path / "class")
    env["HOME"] = str(tmp_path / "home")
    (tmp_path / "exchange").mkdir()
    run(block("instructor-release"), repo, env)
    course = tmp_path / "class"
    assert (course / "nbgrader_config.py").exists()
    assert sorted(p.name for p in (course / "notebooks" / "mhsa").glob("*.ipynb")) == sorted(
        p.name for p in nc.STUDENT.glob("*.ipynb")
    )
    # two students fetch, answer (one right, one wrong) and submit, as the README says
    fetch, submit = block("student-commands").split("# ...", 1)
    submit = submit.split("\n", 1)[1]
    for name, answers in (("alice", "solution"), ("bob", None)):
        home = tmp_path / name
        home.mkdir()
        student_env = dict(env, HOME=str(home))
        # Each student is an OS account of their own in a class; here, all are root,
        # so each one's own nbgrader configuration says who they are.
        (home / ".jupyter").mkdir()
        (home / ".jupyter" / "nbgrader_config.py").write_text(
            f"c.CourseDirectory.student_id = {name!r}\n"
        )
        run(fetch, home, student_env)
        nb = nc.student_notebook("07_softmax", answers)
        nbformat.write(nb, str(home / "mhsa" / "07_softmax.ipynb"))
        for other in (home / "mhsa").glob("*.ipynb"):
            if other.name not in ("07_softmax.ipynb", "01_input.ipynb"):
                other.unlink()  # a small class: two notebooks each
        run(submit, home, student_env)
    run(block("instructor-grade"), repo, env)
    with open(course / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    assert set(rows) >= {"alice", "bob"}
    assert float(rows["alice"]["raw_score"]) > float(rows["bob"]["raw_score"]) == 0.0
    fb = course / "feedback" / "alice" / "mhsa" / "07_softmax.html"
    assert fb.exists() and "BEGIN HIDDEN TESTS" not in fb.read_text()
    released = list((tmp_path / "exchange").glob("mhsa/feedback/*.html"))
    assert released, "release_feedback put nothing in the exchange"
    # nothing of the class in the repository copy
    for name in ("submitted", "autograded", "feedback", "gradebook.db", "grades.csv"):
        assert not (repo / name).exists(), name


def test_init_course_refuses_the_repository_itself(tmp_path):
    from autograders.course import init_course

    with pytest.raises(SystemExit, match="outside the repository"):
        init_course(nc.ROOT / "class")
    config = init_course(tmp_path / "class")
    assert f"c.CourseDirectory.root = {str(tmp_path / 'class')!r}" in config.read_text()
    with pytest.raises(SystemExit, match="already"):
        init_course(tmp_path / "class")
