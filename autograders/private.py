"""The course directory is the instructor's alone: the check collect and grade make first.

A course directory holds what no student may read or change: the solutions,
the hidden tests' key, the gradebook, every student's submission, the
autograded notebooks, the feedback pages and the exported grades. On a
machine where students have accounts of their own, a folder made with the
usual umask (``0755``, files ``0644``) lets every one of them read all of it.

So ``python -m autograders init-course`` makes the course directory ``0700``
and everything it writes in it private; the course's collect step and the
grade command run with the umask :data:`UMASK` (:func:`private_umask`), so
what they make is private too, and the course's configuration has nbgrader's
converters write autograded notebooks ``0400`` and feedback pages ``0600``
(the course's ``release_feedback`` gives each student's copy in the exchange
``0644``, as stock nbgrader does).

Before touching anything, collect and grade call :func:`check` (through
:func:`private`): it refuses, naming each path, the mode found, the mode
expected and the command that fixes it, a course directory whose folder, or
any of what it holds of the class (the gradebook and :data:`HOLDS`;
``solutions/`` and ``submitted/`` with everything in them), another account
can read, write or enter (any permission for group or others, an access
control list included, whose mask shows in the group's bits) or that belongs
to another account. The course directory's own mode is what keeps every other
account out of everything in it; the modes inside are a second wall, should
it ever be opened (say, to share it with a teaching assistant). Not
checked: the student version of the assignment (``notebooks/``,
``generate_assignment``'s, released to every student anyway), the grading
lock, and what is inside ``autograded/`` and ``feedback/``, where stock
nbgrader commands run from your shell (``nbgrader autograde``,
``generate_feedback``, the Formgrader) make folders with your shell's umask:
those folders lie inside private ones.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
from pathlib import Path

from autograders.ids import printable

__all__ = [
    "HOLDS",
    "UMASK",
    "CourseNotPrivate",
    "check",
    "close",
    "private",
    "private_umask",
    "problems",
]

#: The umask of collect and the grade command: what they make is their owner's alone.
UMASK = 0o077
#: What a course directory holds of the class besides its gradebook, by name: ``(what it
#: is, what each thing in it is)``, the second None where only the entry itself is
#: checked. The records of collect (``collect-refused.json``) and of the grade command
#: (``grading-failures.json``, ``grading-results/``, :mod:`autograders.results`;
#: ``class-report/``, :mod:`autograders.report`) name students; the key's name is
#: :data:`autograders.secret.KEY_FILE`. Kept in step with those modules by a test.
HOLDS = {
    "nbgrader_config.py": ("the course's configuration", None),
    ".mhsa-hidden-key": ("the hidden tests' key", None),
    "solutions": ("the solutions", "a solution"),
    "submitted": ("the submissions", "a submission"),
    "autograded": ("the autograded notebooks", None),
    "feedback": ("the feedback pages", None),
    "grades.csv": ("the exported grades", None),
    "collect-refused.json": ("collect's record of refused submissions", None),
    "grading-failures.json": ("the grade command's record of failures", None),
    "grading-results": ("the grade runs' results", "a grade run's results"),
    "class-report": ("the class reports", "a class report"),
}
#: What one refusal lists at most; the rest is counted.
SHOWN = 12
#: Files SQLite keeps beside a database while it writes (they get the database's mode).
_SQLITE_SIDES = ("", "-journal", "-wal", "-shm")


class CourseNotPrivate(Exception):
    """A course directory that another account can reach; ``.problems`` says where, and how."""

    def __init__(self, course: Path, found: list[str], fixes: list[str]):
        self.problems = list(found)
        listed = [f"* {p}" for p in found[:SHOWN]]
        if len(found) > SHOWN:
            listed.append(f"* … and {len(found) - SHOWN} more")
        super().__init__(
            f"the course directory {printable(str(course))} is not yours alone: other "
            "accounts can reach what it holds of the class.\n" + "\n".join([*listed, *fixes])
        )


def _name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group(gid: int) -> str:
    import grp

    try:
        return f"group {grp.getgrgid(gid).gr_name!r}"
    except KeyError:
        return f"group {gid}"


def _verbs(bits: int, folder: bool) -> str:
    """``read and write``: what the three permission bits ``bits`` (``rwx``) allow."""
    words = ("list", "change", "enter") if folder else ("read", "write", "run")
    found = [w for w, b in zip(words, (4, 2, 1), strict=True) if bits & b]
    return " and ".join([", ".join(found[:-1]), found[-1]] if len(found) > 1 else found)


def _open_to(st: os.stat_result) -> str:
    """Who else can do what with a file or folder, in words (its mode has group or other bits)."""
    folder = stat.S_ISDIR(st.st_mode)
    mode = stat.S_IMODE(st.st_mode)
    whom = []
    if mode & 0o007:
        whom.append(f"every account can {_verbs(mode & 0o007, folder)} it")
    if mode & 0o070 and (mode >> 3) & 0o007 != mode & 0o007:
        whom.append(f"accounts of {_group(st.st_gid)} can {_verbs((mode >> 3) & 0o007, folder)} it")
    return "; ".join(whom)


def _gradebooks(course: Path, db_url: str | None) -> dict[Path, str]:
    """The SQLite files of the course's gradebook, and of ``db_url`` if it names another."""
    found = {course / "gradebook.db": "the gradebook"}
    if db_url and db_url.startswith("sqlite:///"):
        found[Path(os.path.abspath(db_url[len("sqlite:///") :]))] = "the gradebook"
    return {
        Path(f"{path}{side}"): f"SQLite's file beside {what}" if side else what
        for path, what in found.items()
        for side in _SQLITE_SIDES
    }


def problems(course, db_url: str | None = None) -> tuple[list[str], list[str]]:
    """Where another account can reach the course directory ``course``, and the fixing commands.

    Looks at, without following a symbolic link: the course directory
    itself (its real path), each entry of :data:`HOLDS` (with everything in
    ``solutions/`` and ``submitted/``) and the SQLite gradebook (the course's, and the file
    ``db_url`` names if it is another ``sqlite:///`` one). Each must belong
    to the running account and give no permission to group or others; an
    entry that is a symbolic link is refused too (what it points to is not
    checked). A course directory or an entry that does not exist is no
    problem: there is nothing in it to read.

    Parameters
    ----------
    course : str or Path
        The course directory.
    db_url : str, optional
        The gradebook's URL, if not the course's own ``gradebook.db``.

    Returns
    -------
    found : list of str
        One sentence per path: the path (escaped: a submission's file names
        are the student's), what it is, the mode or owner found, what was
        expected and who else can do what; the course directory and its
        entries first, then what is inside ``solutions/`` and ``submitted/``.
    fixes : list of str
        The commands that fix them all (``chmod -R go-rwx DIR``; for an
        entry of another account, ``chown``), empty when ``found`` is.
    """
    course, me = Path(os.path.realpath(course)), os.geteuid()
    try:
        top = os.lstat(course)
    except FileNotFoundError:
        return [], []
    found, inner, owners, modes = [], [], False, False  # inner: in solutions/, submitted/

    def look(path: Path, what: str, st: os.stat_result, into: list | None = None) -> None:
        nonlocal owners, modes
        shown, into = printable(str(path)), found if into is None else into
        if st.st_uid != me:
            owners = True
            into.append(
                f"{shown} ({what}) belongs to account {_name(st.st_uid)!r}, expected you "
                f"({_name(me)!r}): its owner can read and change it whatever its mode."
            )
        elif stat.S_IMODE(st.st_mode) & 0o077:
            modes = True
            mode = stat.S_IMODE(st.st_mode)
            into.append(
                f"{shown} ({what}): mode {mode:04o}, expected {mode & ~0o077:04o}: {_open_to(st)}."
            )

    def entry(path: Path, what: str, inside: str | None) -> None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            found.append(f"{printable(str(path))} ({what}) cannot be looked at ({exc.strerror}).")
            return
        if stat.S_ISLNK(st.st_mode):
            found.append(
                f"{printable(str(path))} ({what}) is a symbolic link (to "
                f"{printable(os.readlink(path))}), expected the {what.removeprefix('the ')} "
                "itself: what it points to may be anyone's. Fix: put the file or folder itself "
                "in its place."
            )
            return
        look(path, what, st)
        if inside and stat.S_ISDIR(st.st_mode):
            for folder, dirs, files in os.walk(path, onerror=lambda exc: None):
                for name in sorted(dirs) + sorted(files):
                    sub = Path(folder, name)
                    try:
                        sub_st = os.lstat(sub)
                    except OSError:
                        continue
                    if not stat.S_ISLNK(sub_st.st_mode):  # a link is followed by nothing here
                        look(sub, inside, sub_st, inner)

    look(course, "the course directory", top)
    for name, (what, inside) in HOLDS.items():
        entry(course / name, what, inside)
    for path, what in _gradebooks(course, db_url).items():
        entry(path, what, None)
    fixes = []
    if owners:
        fixes.append(
            f"Fix: look at what the other account put there; then, as root, make it yours: "
            f"chown -R {shlex.quote(_name(me))} {shlex.quote(str(course))}"
        )
    if modes or owners:
        fixes.append(f"Fix: chmod -R go-rwx {shlex.quote(str(course))}")
    return found + inner, fixes


def check(course, db_url: str | None = None) -> None:
    """Raise :class:`CourseNotPrivate` (each problem, the fix) unless ``course`` is private.

    See :func:`problems` for what is looked at.
    """
    found, fixes = problems(course, db_url)
    if found:
        raise CourseNotPrivate(Path(os.path.abspath(course)), found, fixes)


@contextlib.contextmanager
def private_umask():
    """Run the block with the umask :data:`UMASK` (new files and folders: their owner's alone).

    The umask is the process's: the one before is given back after the block.
    """
    old = os.umask(UMASK)
    try:
        yield
    finally:
        os.umask(old)


@contextlib.contextmanager
def private(course, db_url: str | None = None):
    """:func:`check` the course directory, then run the block with :func:`private_umask`.

    What collect and the grade command wrap their work in, before they touch anything.
    """
    check(course, db_url)
    with private_umask():
        yield


def close(path) -> None:
    """Take group's and others' permissions from ``path`` and all in it (``chmod -R go-rwx``).

    Symbolic links are neither changed nor followed.
    """
    path = Path(path)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return
    os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
    if stat.S_ISDIR(st.st_mode):
        for folder, dirs, files in os.walk(path):
            for name in dirs + files:
                sub = os.path.join(folder, name)
                sub_st = os.lstat(sub)
                if not stat.S_ISLNK(sub_st.st_mode):
                    os.chmod(sub, stat.S_IMODE(sub_st.st_mode) & ~0o077)
