"""The course's collect step: every student collected, whatever one submission holds.

``nbgrader collect`` (with the course's configuration) runs
:class:`CourseCollect` instead of nbgrader's own collect. Every student can
write into the exchange's ``inbound/``, so everything there is hostile until
checked, and one bad entry must never stop the others:

* **One's own account first.** Where a student's own account (the login
  name equal to the id) submitted, only its submissions are collected for
  that id; a submission under the id from another account is refused and
  named, so no one replaces a classmate's work by submitting in their name.
  Where no submission of an id comes from an account of that name (a class
  sharing one account), the newest is collected and the grade command
  names the account for review (:mod:`autograders.identity`).
* **One id per account.** An account's submissions are collected under
  one student id only: its login name if it submitted under it, else the
  id of its first submission to arrive; the other ids are not collected
  and are named (one line per account), so no account fills the course
  folder and the gradebook with made-up students. A class that shares one
  account (JupyterHub's ``jovyan``, a lab's common login) says so with
  ``c.CourseCollect.shared_account = True``. The instructor's own account
  and root are not limited.
* **Ids at the door.** A folder is taken only when its name is
  ``STUDENT+ASSIGNMENT+STAMP+RANDOM`` (what ``nbgrader submit`` makes) and
  ``STUDENT`` is a safe id (:mod:`autograders.ids`). Any other entry of the
  assignment is refused and named, its name escaped.
* **Times the student cannot set.** When a submission reached the exchange
  is read from the file system: the latest status-change time (``ctime``)
  of the folder and of everything in it. No account can set a ``ctime``
  (renaming, rewriting ``timestamp.txt`` or ``touch`` only make it later),
  so a late submission cannot be made on time. The student's own stamps
  (``timestamp.txt``, the folder's name) are kept for the record, for
  nbgrader's feedback (which keys a student's feedback to them) and for
  review: where they disagree with the arrival by more than
  :data:`TOLERANCE`, the grade summary names it. Of a student's
  submissions, the one that arrived last is collected.
* **The arrival is what was copied.** The folders are listed first and
  copied after, and a student owns their folder in between: the arrival
  recorded is the latest ``ctime`` of the listing and of everything the
  copy read, each from the ``fstat`` of the descriptor it was read
  through, taken after reading. Work swapped in after the listing arrives
  when it was made, and a folder replaced, or an entry changed, between
  the listing and the copy is recorded and named for review.
* **Collection that never stops.** Each submission is copied on its own,
  without following a symbolic link (one could point at the solutions),
  reading only regular files (a pipe would block the copy) that the folder's
  owner owns (a hard link to another's file is not theirs), within
  nbgrader's size limits (``CourseDirectory.max_file_size`` per file,
  ``max_dir_size`` in all, counted as nbgrader counts them, by apparent
  size: a sparse file counts in full, and stays sparse in the copy) and
  :data:`MAX_ENTRIES` entries. An oversized, unreadable or malformed
  submission is skipped and named; the others are collected. The copy is
  made beside the old one and swapped in.

What was refused is written to :data:`REFUSED` at the course root, where the
grade command reads it for its summary and the CSV export for its status
column. The record of who submitted and when (:data:`RECORD`) is written in
each collected folder after the student's files, so no student can forge it.

Before anything else, collect refuses a course directory that another account
can reach (:func:`autograders.private.check`), and what it writes there is
private (:func:`autograders.private.private_umask`).
"""

from __future__ import annotations

import contextlib
import datetime
import fnmatch
import json
import os
import shutil
import stat
from pathlib import Path

from nbgrader.exchange.default.collect import ExchangeCollect
from traitlets import Bool

from autograders.ids import ID_RULE, is_safe, shown
from autograders.private import CourseNotPrivate, check, private_umask

__all__ = [
    "MAX_ENTRIES",
    "RECORD",
    "REFUSED",
    "TOLERANCE",
    "CourseCollect",
    "Refused",
    "account_of",
    "arrival_of",
    "refused",
]

#: The record of owners and times in a collected submission folder (left out of grading).
RECORD = ".mhsa-owners.json"
#: What the last collect refused, per assignment, at the course root.
REFUSED = "collect-refused.json"
#: Files and folders one submission may hold.
MAX_ENTRIES = 2000
#: Folders one submission may nest.
MAX_DEPTH = 8
#: A student's own stamp may differ from the arrival time by this much before it is named.
TOLERANCE = datetime.timedelta(minutes=5)
#: nbgrader's time stamp format (``Exchange.timestamp_format``), in UTC.
STAMP = "%Y-%m-%d %H:%M:%S.%f UTC"


class Refused(Exception):
    """A submission folder that is not collected; the message says why."""


def account_of(path: str | None = None, uid: int | None = None) -> str | None:
    """The login name of the account ``uid``, or owning ``path``; None if it has none."""
    import pwd

    try:
        return pwd.getpwuid(os.lstat(path).st_uid if uid is None else uid).pw_name
    except (KeyError, OSError, TypeError):
        return None


def _stamp(when: datetime.datetime) -> str:
    return when.astimezone(datetime.UTC).strftime(STAMP)


def _parse_stamp(text) -> datetime.datetime | None:
    """A student's time stamp as a UTC time, or None if it is not one."""
    from nbgrader.utils import parse_utc

    try:
        when = parse_utc(str(text).strip()[:64])
    except Exception:  # a student's text: anything
        return None
    if when is None:
        return None
    return when.replace(tzinfo=datetime.UTC) if when.tzinfo is None else when


def _when(ns: int) -> datetime.datetime:
    """The time ``ns`` nanoseconds after the epoch, rounded up to the microsecond."""
    return _EPOCH + datetime.timedelta(microseconds=-(-ns // 1000))


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What says an entry is the one that was listed: its device, inode, change time and size."""
    return st.st_dev, st.st_ino, st.st_ctime_ns, st.st_size


def _scan(folder: str, max_bytes: int) -> tuple[datetime.datetime, int, dict]:
    """``(arrival, owner uid, listed)`` of a submission folder; :class:`Refused` if not taken.

    The arrival is the latest ``ctime`` of the folder and of everything in
    it, read without following a link; ``listed`` is ``{relative path:
    (device, inode, ctime, size)}`` of the folder (``""``) and of everything in
    it, for :func:`_changes` to compare with what the copy reads. Sizes are
    apparent sizes (``st_size``, what a copy occupies): a sparse file counts
    in full.
    """
    try:
        top = os.lstat(folder)
    except OSError as exc:
        raise Refused(f"it cannot be read ({exc.strerror})") from None
    listed, entries, total = {"": _identity(top)}, 0, 0
    latest = top.st_ctime_ns
    stack = [(folder, "", 0)]
    while stack:
        path, rel, depth = stack.pop()
        try:
            names = os.listdir(path)
        except OSError as exc:
            raise Refused(f"it cannot be read ({exc.strerror})") from None
        for name in names:
            entries += 1
            if entries > MAX_ENTRIES:
                raise Refused(f"it holds more than {MAX_ENTRIES} files and folders")
            try:
                st = os.lstat(os.path.join(path, name))
            except OSError as exc:  # removed while it was listed
                raise Refused(f"it changed while it was listed ({exc.strerror})") from None
            listed[f"{rel}{name}"] = _identity(st)
            latest = max(latest, st.st_ctime_ns)
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 >= MAX_DEPTH:
                    raise Refused(f"its folders nest deeper than {MAX_DEPTH}")
                stack.append((os.path.join(path, name), f"{rel}{name}/", depth + 1))
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                if total > max_bytes:
                    raise Refused(f"it is larger than {max_bytes / 1e6:g} MB in all")
    return _when(latest), top.st_uid, listed


class _Copied:
    """What :func:`_copy` copied: what it left out, and each copied entry as its descriptor says."""

    def __init__(self):
        self.left_out: list[str] = []
        #: ``{relative path: (device, inode, ctime, size)}`` of each folder walked and file copied,
        #: from ``fstat`` of the opened descriptor after it was read (the folder itself: ``""``).
        self.seen: dict[str, tuple[int, int, int, int]] = {}

    @property
    def latest(self) -> int:
        """The latest ``ctime`` (ns) of anything copied, the folders walked included."""
        return max(identity[2] for identity in self.seen.values())


def _copy(src: str, dest: Path, owner: int, keep, max_file: int, max_bytes: int) -> _Copied:
    """Copy the submission folder ``src`` to ``dest``; return what was copied and left out.

    Nothing is followed or opened but folders and regular files owned by
    ``owner``, each opened relative to its folder without following a link,
    so a folder swapped for a link during the copy is not followed either.
    Every folder and file is read through its own descriptor, and that
    descriptor's ``fstat``, taken after it was read, says what was copied
    (:attr:`_Copied.seen`): the folder that was walked, the content that was
    read, whatever was renamed or swapped meanwhile. ``keep(name)`` says
    whether a name is copied (nbgrader's ignore and include patterns).
    :class:`Refused` if the whole is over ``max_bytes`` (apparent sizes).
    A sparse file stays sparse in the copy.
    """
    copied = _Copied()
    total = 0
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC

    def walk(fd: int, into: Path, rel: str) -> None:
        nonlocal total
        into.mkdir(parents=True, exist_ok=True)
        for name in sorted(os.listdir(fd)):
            shown_name = f"{rel}{name}"
            if not keep(name):
                continue
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                copied.left_out.append(f"{shown(shown_name)} is a symbolic link (left out)")
            elif stat.S_ISDIR(st.st_mode):
                sub = os.open(name, flags | os.O_DIRECTORY, dir_fd=fd)
                try:
                    walk(sub, into / name, f"{shown_name}/")
                finally:
                    os.close(sub)
            elif not stat.S_ISREG(st.st_mode):
                copied.left_out.append(f"{shown(shown_name)} is not a regular file (left out)")
            elif st.st_uid != owner:
                copied.left_out.append(f"{shown(shown_name)} belongs to another account (left out)")
            elif st.st_size > max_file:
                too_big = f"is larger than {max_file / 1e6:g} MB"
                copied.left_out.append(f"{shown(shown_name)} {too_big} (left out)")
            else:
                if total + st.st_size > max_bytes:
                    raise Refused(f"it is larger than {max_bytes / 1e6:g} MB in all")
                size, after = _copy_file(name, fd, into / name, max_file)
                copied.seen[shown_name] = _identity(after)
                total += size
                if total > max_bytes:
                    raise Refused(f"it is larger than {max_bytes / 1e6:g} MB in all")
        copied.seen[rel.removesuffix("/")] = _identity(os.fstat(fd))  # after its entries

    top = os.open(src, flags | os.O_DIRECTORY)
    try:
        if os.fstat(top).st_uid != owner:  # another account's folder, put in its place
            raise Refused("it was replaced by another account's folder while it was collected")
        walk(top, dest, "")
    finally:
        os.close(top)
    return copied


def _copy_file(name: str, folder_fd: int, dest: Path, max_file: int) -> tuple[int, os.stat_result]:
    """Copy one regular file, read relative to its folder, at most ``max_file`` bytes.

    Returns the bytes copied and the ``fstat`` of the descriptor read,
    taken after the last read: its ``ctime`` is at least the time of every
    write whose bytes were copied. A run of zeros (a sparse file's hole)
    is skipped in the copy, not written.
    """
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since it was looked at
            raise Refused("it changed while it was collected")
        with open(dest, "wb") as out:
            copied = 0
            while chunk := os.read(fd, 1 << 20):
                copied += len(chunk)
                if copied > max_file:
                    raise Refused("it grew while it was collected")
                if chunk.count(0) == len(chunk):
                    out.seek(len(chunk), os.SEEK_CUR)
                else:
                    out.write(chunk)
            out.truncate(copied)
        return copied, os.fstat(fd)
    finally:
        os.close(fd)


def _changes(listed: dict, seen: dict) -> list[str]:
    """What differs between the listing of a submission and what its copy read ([] if nothing).

    ``listed`` and ``seen`` are ``{relative path: (device, inode, ctime, size)}``
    (:func:`_scan`, :class:`_Copied`). A folder's ``ctime`` changes when an
    entry is added, removed or renamed in it, a file's when it is written.
    """
    if listed.get("", (None, None))[:2] != seen.get("", (None, None))[:2]:
        return ["the folder was replaced by another"]
    found = [
        f"{'the folder' if rel == '' else shown(rel, 60)} "
        f"{'changed' if rel in listed else 'appeared'}"
        for rel, identity in sorted(seen.items())
        if listed.get(rel) != identity
    ]
    return found[:5] + ([f"{len(found) - 5} more"] if len(found) > 5 else [])


def refused(course: Path, assignment: str) -> list[dict]:
    """What the last collect of ``assignment`` refused: ``[{"folder", "student", "reason"}]``.

    ``folder`` is escaped for display; ``student`` is the id when it is a
    safe one, else None.
    """
    try:
        found = json.loads((Path(course) / REFUSED).read_text())
        return [dict(r) for r in found.get(assignment, [])]
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def arrival_of(submission: Path) -> tuple[str | None, list[str]]:
    """When a collected submission reached the exchange, and what to review about its stamps.

    Returns
    -------
    arrival : str or None
        The arrival time in nbgrader's stamp format, as the course's collect
        read it from the file system; None for a folder not made by it.
    notes : list of str
        What collect left out of the folder (a link, a pipe, a file too
        large …); what changed in the folder while it was being collected
        (for review: the arrival is then the latest change of what was
        copied); and a sentence for the instructor when the student's own
        stamp (``timestamp.txt``, or the folder's name) disagrees with the
        arrival by more than :data:`TOLERANCE`.
    """
    try:
        record = json.loads((Path(submission) / RECORD).read_text())
        arrival = record["received"]
        claims = record.get("claimed", {})
    except (OSError, ValueError, KeyError, TypeError):
        return None, []
    when = _parse_stamp(arrival)
    if when is None:
        return None, []
    notes = [str(n) for n in record.get("left_out", [])][:20]
    changed = record.get("changed_while_collected")
    if changed and isinstance(changed, list):
        notes.append(
            f"changed while it was being collected: {', '.join(map(str, changed[:6]))}; "
            f"its arrival is the latest change of what was copied ({arrival}): review it"
        )
    for what, text in sorted(claims.items()):
        claimed = _parse_stamp(text)
        if claimed is None:
            notes.append(
                f"its {what} {shown(text, 40)} is not a time; lateness is from its arrival "
                f"({arrival}): review it"
            )
        elif abs(claimed - when) > TOLERANCE:
            notes.append(
                f"its {what} says {_stamp(claimed)} but it reached the exchange at {arrival}; "
                "lateness is from its arrival: review it"
            )
    return arrival, notes


class CourseCollect(ExchangeCollect):
    """nbgrader's collect, hardened: safe ids, arrival times, and no submission stops it."""

    def start(self):
        """Refuse a course directory others can reach; else collect, writing private files."""
        try:
            check(Path(self.coursedir.root).resolve(), self.coursedir.db_url)
        except CourseNotPrivate as exc:
            self.fail(f"Refusing to collect: {exc}")
        with private_umask():
            super().start()

    shared_account = Bool(
        False,
        help=(
            "The class shares one account (JupyterHub's jovyan, a lab's common login): "
            "collect any number of student ids from one account. By default an account's "
            "submissions are collected under one student id only (its login name if it "
            "submitted under it), and the others are named."
        ),
    ).tag(config=True)

    def init_src(self):
        """Find every submission of the assignment in ``inbound/``; refuse and name the bad ones."""
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        self.refusals = []
        self.duedate = self._duedate()
        assignment, wanted = self.coursedir.assignment_id, self.coursedir.student_id
        candidates = {}
        try:
            names = sorted(os.listdir(self.inbound_path))
        except OSError as exc:
            self.fail(f"You cannot read the directory {self.inbound_path} ({exc})")
        for name in names:
            if f"+{assignment}+" not in f"+{name}+":
                continue  # another assignment's
            parts = name.split("+")
            student = parts[0]
            if wanted and wanted != "*" and student != wanted:
                continue
            try:
                record = self._record(os.path.join(self.inbound_path, name), parts)
            except Refused as why:
                self._refuse(name, student, str(why))
                continue
            candidates.setdefault(student, []).append(record)
        for student, records in sorted(candidates.items()):
            own = [r for r in records if account_of(uid=r["owner"]) == student]
            if own:  # the student's own account submitted: no other account stands in for it
                for r in records:
                    if not any(r is o for o in own):
                        self._refuse(
                            r["filename"],
                            student,
                            f"it came from account {shown(account_of(uid=r['owner']))}, "
                            f"while {student} submitted from their own account",
                        )
                candidates[student] = own
        if not self.shared_account:
            self._one_id_per_account(candidates)
        self.src_records = []
        for _, records in sorted(candidates.items()):
            records.sort(key=lambda r: r["timestamp"], reverse=True)
            on_time = [r for r in records if self.duedate is None or r["timestamp"] <= self.duedate]
            self.src_records.append(on_time[0] if self.before_duedate and on_time else records[0])
            self.src_records[-1]["all"] = records

    def _one_id_per_account(self, candidates: dict) -> None:
        """Keep one student id per submitting account in ``candidates``; refuse and name the rest.

        The id kept is the account's login name if it submitted under it,
        else the id of its first submission to arrive. Submissions of the
        instructor's account (and root's), which can write the course's
        folders anyway, are not limited.
        """
        trusted = {0, os.geteuid()}
        accounts: dict[int, dict[str, list]] = {}
        for student, records in candidates.items():
            for r in records:
                if r["owner"] not in trusted:
                    accounts.setdefault(r["owner"], {}).setdefault(student, []).append(r)
        for uid, ids in sorted(accounts.items()):
            if len(ids) < 2:
                continue
            login = account_of(uid=uid)
            kept = (
                login
                if login in ids
                else min(ids, key=lambda s: (min(r["timestamp"] for r in ids[s]), s))
            )
            others = sorted(set(ids) - {kept})
            for student in others:
                candidates[student] = [r for r in candidates[student] if r["owner"] != uid]
                if not candidates[student]:
                    del candidates[student]
            folders = sum(len(ids[s]) for s in others)
            named = ", ".join(shown(s) for s in others[:10])
            named += f" and {len(others) - 10} more" if len(others) > 10 else ""
            why = "its login name" if kept == login else "the first to arrive"
            reason = (
                f"submitted under {len(ids)} student ids, and one account's submissions are "
                f"collected under one id only: {shown(kept)} ({why}); not collected: {named} "
                f"({folders} folder(s)). If your class shares one account, set "
                "c.CourseCollect.shared_account = True in the course's nbgrader_config.py "
                "and collect again"
            )
            account = shown(login if login is not None else f"uid {uid}")
            self.refusals.append({"account": account, "student": None, "reason": reason})
            self.log.error("Not collected: account %s %s", account, reason)

    def _duedate(self):
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                due = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                return None
        return None if due is None else due.replace(tzinfo=datetime.UTC)

    def _record(self, path: str, parts: list) -> dict:
        """The inbound entry ``path`` as a record to collect; :class:`Refused` if it is not one."""
        if len(parts) not in (3, 4) or parts[1] != self.coursedir.assignment_id:
            raise Refused("its name is not STUDENT+ASSIGNMENT+TIME[+RANDOM] (nbgrader submit's)")
        if not is_safe(parts[0]):
            raise Refused(f"its student id is not one the course accepts ({ID_RULE})")
        try:
            st = os.lstat(path)
        except OSError as exc:
            raise Refused(f"it cannot be read ({exc.strerror})") from None
        if not stat.S_ISDIR(st.st_mode):
            raise Refused("it is not a folder")
        received, owner, listed = _scan(path, 1000 * self.coursedir.max_dir_size)
        return {
            "username": parts[0],
            "filename": os.path.basename(path),
            "timestamp": received,
            "owner": owner,
            "claimed_name": parts[2],
            "listed": listed,
        }

    def _refuse(self, name: str, student: str, reason: str) -> None:
        safe = student if is_safe(student) else None
        self.refusals.append({"folder": shown(name, 120), "student": safe, "reason": reason})
        who = f"student {shown(student)}" if safe is None else f"student {student}"
        self.log.error("Not collected: %s (%s): %s", shown(name, 120), who, reason)

    def init_dest(self):
        """Nothing to prepare: each submission's folder is made as it is copied."""

    def copy_files(self):
        """Collect each chosen submission on its own; one that fails is named, the rest go on."""
        if not self.src_records:
            self.log.warning(
                "No submissions of '%s' for course '%s' to collect",
                self.coursedir.assignment_id,
                self.coursedir.course_id,
            )
        for rec in self.src_records:
            try:
                self._collect(rec)
            except Exception as exc:  # one submission's trouble costs that submission only
                reason = str(exc) if isinstance(exc, Refused) else f"{type(exc).__name__}: {exc}"
                self._refuse(rec["filename"], rec["username"], reason)
        self._write_refusals()

    def _collect(self, rec: dict) -> None:
        student, assignment = rec["username"], self.coursedir.assignment_id
        src = os.path.join(self.inbound_path, rec["filename"])
        dirs = self.coursedir
        dest = Path(dirs.format_path(dirs.submitted_directory, student, assignment))
        if dest.is_dir():
            existing, _ = arrival_of(dest)
            newer = existing is None or rec["timestamp"] > _parse_stamp(existing)
            if not (self.update and newer):
                self.log.info(
                    "Submission already collected%s: %s %s",
                    "" if self.update else " (use --update to update)",
                    student,
                    assignment,
                )
                return
        self.log.info("Collecting submission: %s %s", student, assignment)
        self.do_copy(src, str(dest), rec=rec)

    def do_copy(self, src, dest, log=None, rec=None):
        """Copy one submission folder safely, then write :data:`RECORD` into it.

        The copy is made beside ``dest`` and swapped in: a failed copy
        leaves the earlier submission as it was. The arrival recorded is the
        latest ``ctime`` of the listing and of everything copied, as the
        copied descriptors say after they were read (:func:`_copy`), so
        work swapped in after the listing arrives when it was made; what
        changed between the listing and the copy is recorded for review
        (:func:`_changes`).
        """
        dest = Path(dest)
        if rec is None:  # called as nbgrader's do_copy: look at the folder here
            src = src.rstrip("/")
            rec = self._record(src, os.path.basename(src).split("+"))
        new = dest.with_name(dest.name + ".mhsa-collecting")
        if new.exists():
            shutil.rmtree(new)
        try:
            copied = _copy(
                src,
                new,
                rec["owner"],
                self._keep,
                1000 * self.coursedir.max_file_size,
                1000 * self.coursedir.max_dir_size,
            )
            arrival = max(rec["timestamp"], _when(copied.latest))
            changed = _changes(rec.get("listed", {}), copied.seen)
            if changed:
                self.log.warning(
                    "Changed while it was being collected: %s (%s): %s",
                    shown(rec["filename"], 120),
                    rec["username"],
                    ", ".join(changed),
                )
            claimed = {"folder name's time": rec["claimed_name"]}
            with contextlib.suppress(OSError):
                claimed["timestamp.txt"] = (new / "timestamp.txt").read_text(errors="replace")[:64]
            record = {
                "student": rec["username"],
                "collected": {"folder": rec["filename"], "account": account_of(uid=rec["owner"])},
                "all": [
                    {"folder": r["filename"], "account": account_of(uid=r["owner"])}
                    for r in sorted(rec.get("all", [rec]), key=lambda r: r["timestamp"])
                ],
                "received": _stamp(arrival),
                "listed_at": _stamp(rec["timestamp"]),
                "claimed": claimed,
                "left_out": copied.left_out,
                "changed_while_collected": changed,
            }
            (new / RECORD).write_text(json.dumps(record, indent=1))
        except BaseException:
            shutil.rmtree(new, ignore_errors=True)
            raise
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            shutil.rmtree(dest)
        new.rename(dest)

    def _keep(self, name: str) -> bool:
        """Whether nbgrader's ignore and include patterns let ``name`` be copied."""
        if any(fnmatch.fnmatch(name, pat) for pat in self.coursedir.ignore):
            return False
        include = self.coursedir.include
        return not include or any(fnmatch.fnmatch(name, pat) for pat in include)

    def _write_refusals(self) -> None:
        """Record this collect's refusals for the grade command and the export (atomically)."""
        course = Path(self.coursedir.root)
        path = course / REFUSED
        try:
            found = json.loads(path.read_text())
            found = found if isinstance(found, dict) else {}
        except (OSError, ValueError):
            found = {}
        found[self.coursedir.assignment_id] = self.refusals
        tmp = course / (REFUSED + ".tmp")
        tmp.write_text(json.dumps(found, indent=1, sort_keys=True))
        tmp.replace(path)
