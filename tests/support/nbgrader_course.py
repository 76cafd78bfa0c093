"""Build a throw-away nbgrader course directory from this repository, for tests.

The course's own configuration (autograders/nbgrader_config.py) is loaded,
with only the root moved to the temporary directory, so the tests grade
with exactly the settings an instructor gets.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from autograders.private import close
from autograders.secret import make_key

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = "mhsa"
SOLUTIONS = ROOT / "solutions" / ASSIGNMENT
STUDENT = ROOT / "notebooks" / ASSIGNMENT


def env() -> dict:
    """The environment for nbgrader: this interpreter's bin first (nbgrader runs alembic)."""
    e = dict(os.environ)
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e.get("PATH", "")
    e.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return e


def make_course(tmp: Path, extra: str = "") -> Path:
    """A course directory whose config is the repository's, rooted at ``tmp``.

    ``extra`` is appended to the configuration (a test's shorter time limit).
    Private, as ``init-course`` makes one: collect and the grade command
    refuse any other (:mod:`autograders.private`).
    """
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "nbgrader_config.py").write_text(
        f"load_subconfig({str(ROOT / 'autograders' / 'nbgrader_config.py')!r})\n"
        f"c.CourseDirectory.root = {str(tmp)!r}\n" + extra
    )
    install_kernel()
    shutil.copytree(SOLUTIONS, tmp / "solutions" / ASSIGNMENT)
    make_key(tmp)  # as init-course does: the hidden tests' secret
    close(tmp)
    return tmp


#: A course generated once per test process, whose release and gradebook :func:`generate` copies.
_GENERATED: list[Path] = []


def generate(course: Path) -> None:
    """``nbgrader generate_assignment`` for ``course``: run once per test process, then copied.

    What it makes, the release notebooks (``notebooks/``) and the gradebook's
    records of the assignment (``gradebook.db``, no path in it), depends only on
    the solutions and the configuration, which every course of the tests shares
    (a test's ``extra`` configuration is for autograding). The first call
    generates in a course of its own (about 15 s); every call copies from it
    (a few milliseconds).
    """
    if not _GENERATED:
        template = Path(tempfile.mkdtemp(prefix="mhsa-generated-"))
        atexit.register(shutil.rmtree, template, True)
        make_course(template)
        nbgrader(template, "generate_assignment", ASSIGNMENT, "--force")
        _GENERATED.append(template)
    shutil.copytree(_GENERATED[0] / "notebooks", course / "notebooks", dirs_exist_ok=True)
    shutil.copy2(_GENERATED[0] / "gradebook.db", course / "gradebook.db")
    close(course / "gradebook.db")


def install_kernel() -> None:
    """The grading kernel the course's configuration forces, in this environment.

    Under a lock: another test process (``pytest -n``) may be installing it too.
    Once it is there, installing again leaves it as it is (autograders/kernel.py).
    """
    with open(Path(tempfile.gettempdir()) / "mhsa-kernel-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(
            [sys.executable, "-m", "autograders", "install-kernel"],
            check=True,
            capture_output=True,
            env=env(),
        )


def _python(course: Path, module: str, *args: str, check: bool) -> subprocess.CompletedProcess:
    """``python -m module args…`` in ``course``; with ``check``, fail with its output."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=course,
        env=env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{module} {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def grade(course: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``python -m autograders grade mhsa …`` in ``course``."""
    return _python(course, "autograders", "grade", ASSIGNMENT, *args, check=check)


def grades(course: Path, db: str | None = None) -> dict:
    """{(student, notebook, grade_id): score} for every graded cell worth points.

    00's progress report is a graded cell worth none (Validate's test of 00): it is left out.
    """
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(db or f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in gb.students:
            try:
                sub = gb.find_submission(ASSIGNMENT, student.id)
            except Exception:  # this student has no submission in this course
                continue
            for nb in sub.notebooks:
                for g in nb.grades:
                    if g.max_score:
                        out[(student.id, nb.name, g.name)] = g.score
    return out


def nbgrader(course: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``nbgrader args…`` in ``course``."""
    return _python(course, "nbgrader", *args, check=check)


def answer_cells(nb) -> dict:
    """grade_id -> cell, for the autograded-answer cells of a notebook."""
    return {
        c.metadata.nbgrader["grade_id"]: c
        for c in nb.cells
        if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    }


def student_notebook(stem: str, answers: dict | None = None):
    """The student version of ``stem`` with some answer cells' sources replaced.

    ``answers`` maps a function name to source; ``"solution"`` takes the
    instructor's answer for every cell.
    """
    nb = nbformat.read(str(STUDENT / f"{stem}.ipynb"), as_version=4)
    sol = answer_cells(nbformat.read(str(SOLUTIONS / f"{stem}.ipynb"), as_version=4))
    for grade_id, cell in answer_cells(nb).items():
        name = grade_id.removesuffix("_answer")
        if answers == "solution":
            cell.source = sol[grade_id].source
        elif answers and name in answers:
            cell.source = answers[name]
    return nb


def submit(course: Path, student: str, notebooks: dict) -> None:
    """Place notebooks ``{stem: nb}`` as ``student``'s submission (private, as collect does)."""
    d = course / "submitted" / student / ASSIGNMENT
    d.mkdir(parents=True, exist_ok=True)
    for stem, nb in notebooks.items():
        if isinstance(nb, str | bytes):
            (d / f"{stem}.ipynb").write_text(nb if isinstance(nb, str) else nb.decode())
        else:
            nbformat.write(nb, str(d / f"{stem}.ipynb"))
    close(course / "submitted")


def scores(course: Path) -> dict:
    """{student: {notebook: (score, max_score)}} from the gradebook."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        assignment = gb.find_assignment(ASSIGNMENT)
        for student in gb.students:
            try:
                sub = gb.find_submission(ASSIGNMENT, student.id)
            except Exception:  # never submitted: not in this test's scope
                continue
            out[student.id] = {nb.name: (nb.score, nb.max_score) for nb in sub.notebooks}
        out["_max"] = {nb.name: nb.max_score for nb in assignment.notebooks}
    return out


def cell_outputs_text(course: Path, student: str, stem: str) -> str:
    nb = nbformat.read(str(course / "autograded" / student / ASSIGNMENT / f"{stem}.ipynb"), 4)
    parts = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            parts.append(o.get("text", "") or "\n".join(o.get("traceback", [])))
            parts.append(o.get("evalue", ""))
    return "\n".join(parts)


def course_config():
    """The repository's nbgrader configuration.

    What nbgrader (and its Validate handler, run in the repository root) loads.
    """
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
