"""A course directory apart from the repository: ``python -m autograders init-course DIR``.

Submissions, the gradebook, autograded notebooks, feedback and exported
grades then live in ``DIR``, never among the course's code. ``DIR`` gets an
``nbgrader_config.py`` that loads the course's configuration with ``DIR`` as
the root, a copy of the instructor notebooks (``solutions/mhsa``) and the
hidden tests' secret key (:mod:`autograders.secret`).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from autograders.secret import make_key

__all__ = ["init_course"]

REPOSITORY = Path(__file__).resolve().parents[1]
ASSIGNMENT = "mhsa"


def init_course(directory: Path, repository: Path = REPOSITORY) -> Path:
    """Make ``directory`` a course directory for the assignment; return its config file."""
    directory = directory.resolve()
    solutions = repository / "solutions" / ASSIGNMENT
    if not solutions.is_dir():
        raise SystemExit(
            f"no instructor notebooks at {solutions}: run this from the course's repository"
        )
    if directory == repository or repository in directory.parents:
        raise SystemExit(
            f"the course directory must lie outside the repository ({repository}), so that "
            "submissions never mix with the code."
        )
    if (directory / "nbgrader_config.py").exists():
        raise SystemExit(f"{directory} is a course directory already (it has nbgrader_config.py).")
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copytree(solutions, directory / "solutions" / ASSIGNMENT)
    config = directory / "nbgrader_config.py"
    course_config = repository / "autograders" / "nbgrader_config.py"
    config.write_text(
        "# Made by `python -m autograders init-course`: the course's configuration, rooted here.\n"
        f"load_subconfig({str(course_config)!r})  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(directory)!r}  # noqa: F821\n"
    )
    make_key(directory)
    return config


def main(argv: list[str]) -> int:
    """``python -m autograders init-course DIR``."""
    if len(argv) != 1:
        print("usage: python -m autograders init-course DIR", file=sys.stderr)
        return 2
    config = init_course(Path(argv[0]))
    print(f"course directory ready: {config.parent} (run nbgrader there)")
    return 0
