"""The README's instructor and student commands, run exactly as written."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.support import accounts
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


@pytest.fixture(scope="module")
def readme_class(tmp_path_factory):
    """The README's instructor and student commands, run as written: two students graded.

    The course directory and the exchange lie in a folder every account can
    traverse (:func:`accounts.shared_folder`), as a home folder ``0755`` is:
    only their own modes keep other accounts out.
    """
    tmp_path = tmp_path_factory.mktemp("readme")
    repo = tmp_path / "repo"
    for part in ("solutions", "autograders", "mhsa_helpers", "nbgrader_config.py", "README.md"):
        src = nc.ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, repo / part)
    (repo / ".venv").symlink_to(sys.prefix)  # the README's environment: this one
    with accounts.shared_folder("mhsa-readme-") as shared:
        env = nc.env()
        env["EXCHANGE"] = str(shared / "exchange")
        env["COURSE"] = str(shared / "class")
        env["HOME"] = str(tmp_path / "home")
        (shared / "exchange").mkdir()
        run(block("instructor-release"), repo, env)
        course = shared / "class"
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
        yield {"repo": repo, "course": course, "exchange": shared / "exchange", "shared": shared}


def test_instructor_and_student_commands_as_written(readme_class):
    course, repo = readme_class["course"], readme_class["repo"]
    with open(course / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    assert set(rows) >= {"alice", "bob"}
    assert float(rows["alice"]["raw_score"]) > float(rows["bob"]["raw_score"]) == 0.0
    fb = course / "feedback" / "alice" / "mhsa" / "07_softmax.html"
    assert fb.exists() and "BEGIN HIDDEN TESTS" not in fb.read_text()
    released = list(readme_class["exchange"].glob("mhsa/feedback/*.html"))
    assert released, "release_feedback put nothing in the exchange"
    # nothing of the class in the repository copy
    for name in ("submitted", "autograded", "feedback", "gradebook.db", "grades.csv"):
        assert not (repo / name).exists(), name


def test_the_readmes_commands_leave_nothing_of_the_class_open_to_other_accounts(readme_class):
    """init-course, collect, grade, release_feedback and export, run from a umask-022 shell.

    Everything in the course directory is the instructor's alone, but the
    student version that ``generate_assignment`` writes (``notebooks/``,
    released to every student anyway); each released feedback page stays
    readable by its student (``0644``, in a folder nobody lists).
    """
    from autograders.collect import RECORD, REFUSED
    from autograders.export import FAILURES
    from autograders.grade import LOCK
    from autograders.roster import MARKER

    course, me = readme_class["course"], os.geteuid()
    assert os.umask(os.umask(0o022)) == 0o022  # what the commands above inherited
    assert stat.S_IMODE(course.stat().st_mode) == 0o700
    seen, open_ = 0, {}
    for folder, dirs, files in os.walk(course):
        for name in dirs + files:
            path = Path(folder, name)
            rel = path.relative_to(course)
            if rel.parts[0] == "notebooks":
                continue
            st = os.lstat(path)
            seen += 1
            if st.st_uid != me or stat.S_IMODE(st.st_mode) & 0o077:
                open_[str(rel)] = (oct(stat.S_IMODE(st.st_mode)), st.st_uid)
    assert open_ == {}
    made = {  # by collect, the grade command (its lock, marker and records) and the export
        "submitted/alice/mhsa/07_softmax.ipynb", f"submitted/alice/mhsa/{RECORD}", REFUSED,
        "autograded/bob/mhsa/07_softmax.ipynb", f"autograded/bob/mhsa/{MARKER}", LOCK,
        "feedback/alice/mhsa/07_softmax.html", FAILURES, "grades.csv", "gradebook.db",
    }  # fmt: skip
    assert [rel for rel in sorted(made) if not (course / rel).is_file()] == [] and seen > 30
    released = list(readme_class["exchange"].glob("mhsa/feedback/*.html"))
    assert {stat.S_IMODE(p.stat().st_mode) for p in released} == {0o644}


def test_another_account_cannot_read_the_class_of_a_course_made_by_init_course(readme_class):
    """``nobody`` tries the solutions, the key, the gradebook, a submission, the grades…"""
    accounts.need_root()
    course, exchange = readme_class["course"], readme_class["exchange"]
    targets = [
        course / "solutions" / "mhsa" / "07_softmax.ipynb",
        course / ".mhsa-hidden-key",
        course / "gradebook.db",
        course / "submitted" / "alice" / "mhsa" / "07_softmax.ipynb",
        course / "autograded" / "alice" / "mhsa" / "07_softmax.ipynb",
        course / "feedback" / "bob" / "mhsa" / "07_softmax.html",
        course / "grades.csv",
    ]
    released = sorted(exchange.glob("mhsa/feedback/*.html"))[0]  # read by name, as a student does
    probe = (
        "import json, os, sys\n"
        "out = {}\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        out[path] = len(open(path, 'rb').read(1)) and 'read'\n"
        "    except OSError as exc:\n"
        "        out[path] = type(exc).__name__\n"
        "try:\n"
        f"    out['list'] = os.listdir({str(course)!r}) and 'listed'\n"
        "except OSError as exc:\n"
        "    out['list'] = type(exc).__name__\n"
        "print(json.dumps(out))\n"
    )
    home = accounts.home_of("nobody", readme_class["shared"])
    proc = accounts.run_as("nobody", [sys.executable, "-c", probe, *targets, released], home)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got == {
        **{str(p): "PermissionError" for p in targets},
        "list": "PermissionError",
        str(released): "read",
    }


def test_init_course_refuses_the_repository_itself(tmp_path):
    from autograders.course import init_course

    with pytest.raises(SystemExit, match="outside the repository"):
        init_course(nc.ROOT / "class")
    config = init_course(tmp_path / "class")
    assert f"c.CourseDirectory.root = {str(tmp_path / 'class')!r}" in config.read_text()
    with pytest.raises(SystemExit, match="already"):
        init_course(tmp_path / "class")
