"""The README's instructor commands, run exactly as written on a copy of the repository."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests import nbgrader_course as nc

pytestmark = pytest.mark.slow  # the whole nbgrader workflow

README = nc.ROOT / "README.md"


def instructor_commands() -> list:
    text = README.read_text()
    block = text.split("<!-- instructor-commands -->", 1)[1]
    body = re.search(r"```bash\n(.*?)```", block, re.S).group(1)
    return [ln for ln in body.splitlines() if ln.strip()]


def run(cmd: str, cwd: Path, env: dict) -> None:
    proc = subprocess.run(
        ["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200
    )
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


def student(cmd: str, home: Path, env: dict) -> None:
    run(cmd + ' --Exchange.root="$EXCHANGE" --CourseDirectory.course_id=mhsa', home, env)


def test_instructor_commands_as_written(tmp_path):
    repo = tmp_path / "repo"
    for part in ("solutions", "autograders", "nbgrader_config.py", "README.md"):
        src = nc.ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, repo / part)
    (repo / ".venv").symlink_to(sys.prefix)  # the README's environment: this one
    env = nc.env()
    env["EXCHANGE"] = str(tmp_path / "exchange")
    (tmp_path / "exchange").mkdir()
    commands = instructor_commands()
    split = next(i for i, c in enumerate(commands) if c.startswith("#"))
    for cmd in commands[:split]:
        run(cmd, repo, env)
    assert sorted(p.name for p in (repo / "notebooks" / "mhsa").glob("*.ipynb")) == sorted(
        p.name for p in nc.STUDENT.glob("*.ipynb")
    )
    # two students fetch, answer (one right, one wrong) and submit
    for name, answers in (("alice", "solution"), ("bob", None)):
        home = tmp_path / name
        home.mkdir()
        student("nbgrader fetch_assignment mhsa", home, env)
        nb_path = home / "mhsa" / "07_softmax.ipynb"
        nb = nc.student_notebook("07_softmax", answers)
        nbformat.write(nb, str(nb_path))
        for other in (home / "mhsa").glob("*.ipynb"):
            if other.name not in ("07_softmax.ipynb", "01_input.ipynb"):
                other.unlink()  # a small class: two notebooks each
        student(f"nbgrader submit mhsa --student={name}", home, env)
    for cmd in commands[split + 1 :]:
        run(cmd, repo, env)
    with open(repo / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    assert set(rows) >= {"alice", "bob"}
    assert float(rows["alice"]["raw_score"]) > float(rows["bob"]["raw_score"]) == 0.0
    fb = repo / "feedback" / "alice" / "mhsa" / "07_softmax.html"
    assert fb.exists() and "BEGIN HIDDEN TESTS" not in fb.read_text()
    released = list((tmp_path / "exchange").glob("mhsa/feedback/*.html"))
    assert released, "release_feedback put nothing in the exchange"
