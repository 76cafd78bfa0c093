"""A course directory apart from the repository: ``python -m autograders init-course DIR``.

Submissions, the gradebook, autograded notebooks, feedback and exported
grades then live in ``DIR``, never among the course's code. ``DIR`` gets an
``nbgrader_config.py`` that loads the course's configuration with ``DIR`` as
the root, a copy of the instructor notebooks (``solutions/mhsa``) and the
hidden tests' secret key (:mod:`autograders.secret`).

``DIR`` is the instructor's alone (:mod:`autograders.private`): made ``0700``
(a folder of yours that exists already is given ``0700`` too, and the command
says so; another account's is refused), with everything written in it
private whatever the umask: the solutions' copy, the configuration, the key,
an empty gradebook (so that ``nbgrader generate_assignment``, run from a
shell with the usual umask, does not make one every account can read) and the
folders ``submitted/``, ``autograded/`` and ``feedback/``.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

from autograders.private import close, private_umask
from autograders.secret import make_key

__all__ = ["init_course"]

REPOSITORY = Path(__file__).resolve().parents[1]
ASSIGNMENT = "mhsa"


#: The folders of the class's work that ``init-course`` makes, private, before nbgrader would.
FOLDERS = ("submitted", "autograded", "feedback")


def init_course(directory: Path, repository: Path = REPOSITORY) -> Path:
    """Make ``directory`` a course directory for the assignment; return its config file.

    The directory is made ``0700``, or given that mode if it is a folder of
    the running account already; every file and folder written in it is
    private (no permission for group or others), whatever the umask.
    SystemExit, saying why, for a directory inside the repository, a course
    directory already, or a path that is not a folder of the running account.
    """
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
    directory.parent.mkdir(parents=True, exist_ok=True)  # the folders above: as usual
    _private_folder(directory)
    with private_umask():
        shutil.copytree(solutions, directory / "solutions" / ASSIGNMENT)
        close(directory / "solutions")  # copytree copies the repository's modes (0644)
        config = directory / "nbgrader_config.py"
        course_config = repository / "autograders" / "nbgrader_config.py"
        _write_private(
            config,
            "# Made by `python -m autograders init-course`: the course's configuration, rooted "
            "here.\n"
            f"load_subconfig({str(course_config)!r})  # noqa: F821\n"
            f"c.CourseDirectory.root = {str(directory)!r}  # noqa: F821\n",
        )
        make_key(directory)
        for name in FOLDERS:
            (directory / name).mkdir(mode=0o700, exist_ok=True)
            close(directory / name)
        if not (directory / "gradebook.db").exists():
            _write_private(directory / "gradebook.db", "")  # an empty file is an empty database
    return config


def _private_folder(directory: Path) -> None:
    """Make ``directory`` (mode ``0700``), or give a folder of the running account that mode."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        st = os.stat(directory)
        if not stat.S_ISDIR(st.st_mode):
            raise SystemExit(
                f"{directory} is not a folder; choose another course directory."
            ) from None
        if st.st_uid != os.geteuid():
            raise SystemExit(
                f"{directory} belongs to another account (uid {st.st_uid}): a course directory "
                "must be yours alone; choose another one."
            ) from None
    os.chmod(directory, 0o700)  # whatever the umask, and for a folder that was there already


def _write_private(path: Path, text: str) -> None:
    """Write a new file readable and writable by its owner only (``0600``)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def main(argv: list[str]) -> int:
    """``python -m autograders init-course DIR``."""
    if len(argv) != 1:
        print("usage: python -m autograders init-course DIR", file=sys.stderr)
        return 2
    try:
        before = stat.S_IMODE(os.stat(argv[0]).st_mode)
    except OSError:
        before = None
    config = init_course(Path(argv[0]))
    print(f"course directory ready: {config.parent} (run nbgrader there)")
    if before is not None and before != 0o700:
        print(f"{config.parent} was mode {before:04o}; now 0700: yours alone.")
    return 0
