"""The exchange's layout: folders no student can rename, replace or delete but their own.

nbgrader's exchange is a folder every student writes into. Stock nbgrader
makes its root ``0777`` without the sticky bit, so any student could rename
the instructor's course folder and put their own in its place (classmates
then fetch an altered assignment and submit where that student reads and
deletes, and collect finds nothing). Here the exchange is laid out so that
each account can only rename or delete what it owns, and the course's
release and collect steps refuse an exchange where that is not so.

The layout, and why each mode (the least nbgrader 0.9's fetch, submit,
list and fetch_feedback need as a student):

``EXCHANGE`` (:data:`ROOT_MODE`, ``1777``)
    Every nbgrader command checks that it can write into the root; the
    sticky bit makes that safe: an entry (the course's folder) can be
    renamed or deleted by its owner only. Owned by root or the instructor.
``EXCHANGE/mhsa`` (:data:`COURSE_MODE`, ``0755``)
    The instructor's; students read and traverse it, nobody else writes,
    so ``outbound``, ``inbound`` and ``feedback`` cannot be swapped or
    squatted.
``EXCHANGE/mhsa/outbound`` (:data:`OUTBOUND_MODE`, ``0755``)
    Released assignments: students list and read them (fetch, list).
``EXCHANGE/mhsa/inbound`` (:data:`INBOUND_MODE`, ``3733``)
    Students create their submission folders (write, traverse) but cannot
    list the others' (no read); setgid gives submissions the instructor's
    group, as nbgrader does; the sticky bit, which nbgrader leaves out,
    stops a student renaming or deleting another's submission folder.
``EXCHANGE/mhsa/feedback`` (:data:`FEEDBACK_MODE`, ``0711``)
    Students read their own feedback file, whose name they compute from
    their submission's secret (traverse only); nobody lists the others'.

:func:`init_exchange` makes that layout (``python -m autograders
init-exchange EXCHANGE``); :func:`problems` names every way it is broken.
nbgrader's release, release_feedback and collect are replaced (in
``autograders/nbgrader_config.py``) by :class:`SafeReleaseAssignment`,
:class:`SafeReleaseFeedback` and :class:`SafeCollect`, which refuse an
exchange with problems before touching it. Release makes a missing root
or course folder as :func:`init_exchange` does, instead of refusing:
nothing is there yet to rearrange, and whoever makes the course folder
first owns it. nbgrader's "group shared" exchange is not supported: the
check wants nothing writable by the instructor's group either.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback

from autograders.collect import CourseCollect

__all__ = [
    "COURSE_ID",
    "COURSE_MODE",
    "FEEDBACK_MODE",
    "INBOUND_MODE",
    "OUTBOUND_MODE",
    "RELEASED_MODE",
    "ROOT_MODE",
    "SafeCollect",
    "SafeReleaseAssignment",
    "SafeReleaseFeedback",
    "UnsafeExchange",
    "init_exchange",
    "main",
    "problems",
]

#: The course's id in the exchange (``c.CourseDirectory.course_id``).
COURSE_ID = "mhsa"
#: The exchange root: everyone writes, the sticky bit keeps each entry its owner's.
ROOT_MODE = 0o1777
#: The course folder: the instructor's, read by students.
COURSE_MODE = 0o755
#: Released assignments: read by students.
OUTBOUND_MODE = 0o755
#: Submissions: students create, cannot list; setgid (nbgrader's) and sticky (ours).
INBOUND_MODE = 0o3733
#: Feedback: students read a file whose name they know, list nothing.
FEEDBACK_MODE = 0o711
#: A released feedback page: its student reads it (by a name only they can compute).
RELEASED_MODE = 0o644
#: The course folder's children and their modes.
CHILDREN = {"outbound": OUTBOUND_MODE, "inbound": INBOUND_MODE, "feedback": FEEDBACK_MODE}

_OPEN = stat.S_IWGRP | stat.S_IWOTH  # written to by an account that is not the owner


class UnsafeExchange(Exception):
    """An exchange where one account could rearrange another's folders; ``.problems`` says how."""

    def __init__(self, found: list[str]):
        self.problems = list(found)
        super().__init__("the exchange is not safe:\n" + "\n".join(f"* {p}" for p in found))


def _q(path) -> str:
    return shlex.quote(str(path))


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def _who(uid: int) -> str:
    """``account 'name' (uid N)``, or ``uid N`` for an account without a name."""
    import pwd

    try:
        return f"account {pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _you(uid: int) -> str:
    """``you ('name')``, or ``you (uid N)``: the running account."""
    import pwd

    try:
        return f"you ({pwd.getpwuid(uid).pw_name!r})"
    except KeyError:
        return f"you (uid {uid})"


def _containers(path: Path) -> list[str]:
    """Every folder that holds a component of ``path``, symbolic links followed as the kernel does.

    Whoever may rename an entry of one of them can swap what ``path`` reaches.
    """
    parts = list(Path(os.path.abspath(path)).parts[1:])
    current, found, hops = "/", [], 0
    while parts:
        name = parts.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        found.append(current)
        nxt = os.path.join(current, name)
        if os.path.islink(nxt) and hops < 40:
            hops += 1
            target = Path(os.readlink(nxt))
            if target.is_absolute():
                current = "/"
            parts = [*target.parts[1 if target.is_absolute() else 0 :], *parts]
        else:
            current = nxt
    return list(dict.fromkeys(found))


def _ancestor_problems(root: Path, me: int) -> list[str]:
    """The folders above the exchange root that another account could rearrange."""
    out = []
    for folder in _containers(root):
        try:
            st = os.stat(folder)
        except OSError:
            continue  # the root's own check names what cannot be reached
        if st.st_uid not in (0, me):
            out.append(
                f"{folder} (above the exchange root) belongs to {_who(st.st_uid)}, expected root "
                f"or you: that account can move the exchange. Fix: put the exchange under folders "
                f"that belong to root (for instance /srv/nbgrader/exchange)."
            )
        elif st.st_mode & _OPEN and not st.st_mode & stat.S_ISVTX:
            out.append(
                f"{folder} (above the exchange root) is writable by other accounts without the "
                f"sticky bit (mode {_mode(st)}): any of them can rename the exchange and put "
                f"their own in its place. Fix: chmod +t {_q(folder)} (or chmod go-w), as its owner."
            )
    return out


def problems(root, course_id: str = COURSE_ID) -> list[str]:
    """Every way one account could rename or replace another's folders in the exchange.

    Checks, for the account running it (the instructor): the folders above
    the root, the root (owned by root or the instructor; writable by others
    only with the sticky bit), the course folder and its ``outbound``,
    ``inbound`` and ``feedback`` (owned by the instructor, not symbolic
    links, not writable by others; ``inbound`` only with the sticky bit;
    ``inbound`` and ``feedback`` not listable by others). A folder that
    does not exist yet is no problem: there is nothing in it to rearrange.

    Parameters
    ----------
    root : str or Path
        The exchange root (``Exchange.root``).
    course_id : str
        The course's folder in it.

    Returns
    -------
    list of str
        One sentence per problem: the path, what was expected, what was
        found and the command that fixes it; empty when the exchange is safe.
    """
    root, me, out = Path(os.path.abspath(root)), os.geteuid(), []
    init = f"python -m autograders init-exchange {_q(root)}"
    out += _ancestor_problems(root, me)
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return out
    except OSError as exc:
        return [*out, f"{root}: the exchange root cannot be looked at ({exc.strerror})."]
    if stat.S_ISLNK(st.st_mode):
        return [
            *out,
            f"{root} is a symbolic link (to {os.readlink(root)}), expected the exchange root's "
            f"own folder. Fix: use the folder it points to as the exchange root, or replace the "
            f"link by a folder: rm {_q(root)} && {init}.",
        ]
    if not stat.S_ISDIR(st.st_mode):
        return [*out, f"{root} is not a folder, expected the exchange root."]
    if st.st_uid not in (0, me):
        out.append(
            f"{root} (the exchange root) belongs to {_who(st.st_uid)}, expected root or "
            f"{_you(me)}: its owner can rename anything in it. Fix: as root, make a new root "
            f"(mkdir -m 1777 NEW, then python -m autograders init-exchange NEW) and use it."
        )
    elif st.st_mode & _OPEN and not st.st_mode & stat.S_ISVTX:
        out.append(
            f"{root} (the exchange root) is writable by other accounts without the sticky bit "
            f"(mode {_mode(st)}, expected {ROOT_MODE:04o}): any student can rename the course "
            f"folder and put their own in its place. Fix: chmod {ROOT_MODE:o} {_q(root)} (as its "
            f"owner), then check that {_q(root / course_id)} is yours."
        )
    course = root / course_id
    out += _folder_problems(course, "the course folder", COURSE_MODE, me, init)
    if _is_own_folder(course, me):
        for name, mode in CHILDREN.items():
            out += _folder_problems(course / name, f"the course's {name}", mode, me, init)
    return out


def _is_own_folder(path: Path, me: int) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == me


def _folder_problems(path: Path, what: str, mode: int, me: int, init: str) -> list[str]:
    """What is wrong with one folder of the course (``mode`` the one it should have)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"{path} ({what}) cannot be looked at ({exc.strerror})."]
    aside = f"mv {_q(path)} {_q(str(path) + '.suspect')}"
    if stat.S_ISLNK(st.st_mode):
        return [
            f"{path} ({what}) is a symbolic link to {os.readlink(path)}, expected a folder of "
            f"yours. Fix: {aside}, look at what it points to, then {init}."
        ]
    if not stat.S_ISDIR(st.st_mode):
        return [f"{path} ({what}) is not a folder, expected a folder of yours. Fix: {aside}."]
    if st.st_uid != me:
        return [
            f"{path} ({what}) belongs to {_who(st.st_uid)}, expected {_you(me)}: that "
            f"account may have put it there, and can change it. Fix: {aside} (as the owner of "
            f"its folder), look at what is in it, then {init}."
        ]
    found, fix = [], f"Fix: chmod {mode:o} {_q(path)}"
    sticky = mode & stat.S_ISVTX
    if st.st_mode & _OPEN and not (sticky and st.st_mode & stat.S_ISVTX):
        found.append(
            f"{path} ({what}) is writable by other accounts"
            + (" without the sticky bit" if sticky else "")
            + f" (mode {_mode(st)}, expected {mode:04o}): any of them can rename or replace "
            f"what is in it. {fix}."
        )
    if not mode & stat.S_IROTH and st.st_mode & (stat.S_IRGRP | stat.S_IROTH):
        found.append(
            f"{path} ({what}) can be listed by other accounts (mode {_mode(st)}, expected "
            f"{mode:04o}): nbgrader makes each student's folders in it open to everyone, "
            f"so a student who sees their names can empty them. {fix}."
        )
    return found


def init_exchange(root, course_id: str = COURSE_ID) -> list[str]:
    """Make the exchange's root and course folders with the modes of this module, or fix them.

    Makes what is missing; gives the modes of the module's docstring to
    the root (when it belongs to the running account) and to the course's
    folders (which belong to it). Idempotent. Never changes a folder of
    another account or follows a symbolic link.

    Parameters
    ----------
    root : str or Path
        The exchange root (``Exchange.root``); its parents are made if missing.
    course_id : str
        The course's folder in it.

    Returns
    -------
    list of str
        What was made or changed, one line each.

    Raises
    ------
    ValueError
        When ``course_id`` is not a plain folder name.
    UnsafeExchange
        When, afterwards, :func:`problems` still finds some (a folder of
        another account, a symbolic link), or the root cannot be written by
        students (it belongs to root without mode 1777).
    """
    if not _is_plain_name(course_id):
        raise ValueError(f"the course id must be a folder name, got {course_id!r}")
    root, me, done = Path(os.path.abspath(root)), os.geteuid(), []
    if not os.path.lexists(root):
        root.parent.mkdir(parents=True, exist_ok=True)
        _mkdir(root, done)
    if _is_own_folder(root, me):
        _chmod(root, ROOT_MODE, done)
    course = root / course_id
    if _is_own_folder(root, me) or _is_root_usable(root):
        if not os.path.lexists(course):
            _mkdir(course, done)
        if _is_own_folder(course, me):
            _chmod(course, COURSE_MODE, done)
            for name, mode in CHILDREN.items():
                if not os.path.lexists(course / name):
                    _mkdir(course / name, done)
                if _is_own_folder(course / name, me):
                    _chmod(course / name, mode, done)
    found = problems(root, course_id)
    if not found and not _is_root_usable(root):
        st = os.lstat(root)
        found = [
            f"{root} (the exchange root) cannot be written by students (mode {_mode(st)}, "
            f"owned by {_who(st.st_uid)}), expected {ROOT_MODE:04o}: nbgrader needs it for "
            f"every command. Fix: chmod {ROOT_MODE:o} {_q(root)}, as root."
        ]
    if found:
        raise UnsafeExchange(found)
    return done


def _is_plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and os.sep not in name and "\0" not in name


def _is_root_usable(root: Path) -> bool:
    """Whether every account can write into ``root``, with the sticky bit."""
    try:
        st = os.lstat(root)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) & ROOT_MODE == ROOT_MODE


def _mkdir(path: Path, done: list) -> None:
    """Make one folder, private until its mode is set; one made meanwhile by another is kept."""
    try:
        os.mkdir(path, 0o700)
        done.append(f"made {path}")
    except FileExistsError:
        pass  # someone was first: problems() names it if it is not ours


def _chmod(path: Path, mode: int, done: list) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        old = stat.S_IMODE(os.fstat(fd).st_mode)
        if old != mode:
            os.fchmod(fd, mode)
            if done and done[-1] == f"made {path}":
                done[-1] = f"made {path} (mode {mode:04o})"
            else:
                done.append(f"{path}: mode {old:04o} -> {mode:04o}")
    finally:
        os.close(fd)


def _refuse_if_unsafe(exchange, when: str) -> None:
    """``exchange.fail`` (nbgrader's refusal) with every problem of its exchange, if any."""
    course_id = exchange.coursedir.course_id
    if not _is_plain_name(course_id):
        exchange.fail(f"The course id must be a folder name, got {course_id!r}.")
    found = problems(exchange.root, course_id)
    if found:
        exchange.fail(
            f"Refusing to {when}: in the exchange, one account could rename or replace "
            "another's folders.\n" + "\n".join(f"* {p}" for p in found)
        )


class SafeReleaseAssignment(ExchangeReleaseAssignment):
    """nbgrader's release_assignment on a safe exchange only; it makes a missing one safe.

    Refuses, before copying anything, an exchange with :func:`problems`;
    makes or completes the layout with :func:`init_exchange` (where nbgrader
    would make the root ``0777`` and ``inbound`` without the sticky bit),
    and gives the modes back after nbgrader's release.
    """

    def ensure_root(self):
        """Nothing: :meth:`start` checked and laid out the exchange (nbgrader's made it 0777)."""

    def start(self):
        """Check the exchange, lay it out, release, then restore the layout's modes and check."""
        _refuse_if_unsafe(self, "release")
        self._layout()
        super().start()
        self._layout()

    def _layout(self) -> None:
        try:
            for line in init_exchange(self.root, self.coursedir.course_id):
                self.log.info("Exchange: %s", line)
        except UnsafeExchange as exc:
            self.fail(f"Refusing to release: {exc}")
        except OSError as exc:
            self.fail(f"Could not lay out the exchange {self.root} ({exc})")


class SafeReleaseFeedback(ExchangeReleaseFeedback):
    """nbgrader's release_feedback, refused on an exchange with :func:`problems`.

    The feedback pages are private in the course directory
    (:mod:`autograders.private`); nbgrader's copy keeps their mode, so each
    released page is given :data:`RELEASED_MODE`, which stock nbgrader's
    ``644`` pages had: its student reads it by its name, which only they can
    compute (the folder cannot be listed).
    """

    def start(self):
        """Check the exchange, release the feedback, make it readable, check again."""
        _refuse_if_unsafe(self, "release feedback")
        super().start()
        self._readable()
        _refuse_if_unsafe(self, "leave the feedback released")

    def _readable(self) -> None:
        """Give every released page of ours :data:`RELEASED_MODE` (never following a link)."""
        folder = os.path.join(self.root, self.coursedir.course_id, "feedback")
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        top = os.open(folder, flags | os.O_DIRECTORY)
        try:
            for name in os.listdir(top):
                try:
                    fd = os.open(name, flags | os.O_NONBLOCK, dir_fd=top)
                except OSError:  # a link, or gone
                    continue
                try:
                    st = os.fstat(fd)
                    if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                        os.fchmod(fd, RELEASED_MODE)
                finally:
                    os.close(fd)
        finally:
            os.close(top)


class SafeCollect(CourseCollect):
    """The course's collect, refused on an exchange with :func:`problems`."""

    def start(self):
        """Check the exchange, then collect."""
        _refuse_if_unsafe(self, "collect")
        super().start()


def main(argv: list[str]) -> int:
    """``python -m autograders init-exchange EXCHANGE``: make or fix the exchange; exit code."""
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m autograders init-exchange EXCHANGE", file=sys.stderr)
        return 2
    try:
        done = init_exchange(argv[0])
    except UnsafeExchange as exc:
        print(f"init-exchange: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"init-exchange: could not lay out {argv[0]}: {exc}", file=sys.stderr)
        return 1
    for line in done:
        print(line)
    print(f"{os.path.abspath(argv[0])}: a safe exchange for course {COURSE_ID!r}")
    return 0
