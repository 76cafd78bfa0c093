"""Issue 45: the course's collect, in process: arrival is what was copied, one id per account.

Collect lists ``inbound/`` first and copies after; a student owns their
folder in between. These tests make the change at that exact point (after
``init_src``, before ``copy_files``: where a student's inotify watcher
strikes on a real machine) and check that the arrival recorded is at
least the latest change of what was copied, and that the change is named.
They also hold one account to one student id (unless the course says the
class shares an account) and check that sizes count a sparse file in full.
``tests/test_collect_hostile.py`` plays the same attacks as real accounts
through ``nbgrader submit`` and ``nbgrader collect``.
"""

from __future__ import annotations

import datetime
import os
import pwd
from pathlib import Path

import pytest
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograders.collect import RECORD, CourseCollect, arrival_of, refused
from autograders.roster import refused_at_collect
from tests.support import accounts


def _now() -> str:
    """Now, as ``nbgrader submit`` stamps a submission (its folder name, ``timestamp.txt``)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def _collector(tmp: Path, **options) -> CourseCollect:
    """The course's collect for the exchange ``tmp/exchange`` and the course ``tmp/course``."""
    config = Config()
    config.CourseDirectory.root = str(tmp / "course")
    config.CourseDirectory.course_id = "mhsa"
    config.CourseDirectory.assignment_id = "mhsa"
    for name, value in options.items():
        owner = "CourseCollect" if name == "shared_account" else "CourseDirectory"
        config[owner][name] = value
    config.Exchange.root = str(tmp / "exchange")
    (tmp / "exchange" / "mhsa" / "inbound").mkdir(parents=True, exist_ok=True)
    (tmp / "course").mkdir(exist_ok=True)
    collect = CourseCollect(coursedir=CourseDirectory(config=config), config=config)
    collect._duedate = lambda: None  # no gradebook here: no due date
    return collect


def _submission(tmp: Path, student: str, files: dict, account: str | None = None, n=0) -> Path:
    """A folder in ``inbound/`` as ``nbgrader submit`` makes it, owned by ``account``."""
    stamp = _now()
    folder = tmp / "exchange" / "mhsa" / "inbound" / f"{student}+mhsa+{stamp}+r{n}"
    folder.mkdir(parents=True)
    for name, data in {"timestamp.txt": stamp.encode(), **files}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    if account is not None:
        uid = pwd.getpwnam(account).pw_uid
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, uid, -1)
    return folder


def _listed_then_copied(collect: CourseCollect, change) -> None:
    """Collect, with ``change()`` made between the listing and the copy."""
    collect.init_src()
    change()
    collect.init_dest()
    collect.copy_files()


def _clock_past(ns: int, where: Path) -> None:
    """Wait until the file system's clock has moved past ``ns`` (it ticks every few ms)."""
    probe = where / ".clock"
    while True:
        probe.write_bytes(b"")
        if os.stat(probe).st_ctime_ns > ns:
            probe.unlink()
            return


def _ns(stamp: str) -> int:
    """A collect record's time stamp, in ns since the epoch (exact)."""
    when = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f UTC").replace(
        tzinfo=datetime.UTC
    )
    return (
        (when - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC))
        // datetime.timedelta(microseconds=1)
        * 1000
    )


def _latest_ctime(folder: Path) -> int:
    return max(os.lstat(p).st_ctime_ns for p in [folder, *folder.rglob("*")])


def _submitted(tmp: Path, student: str) -> Path:
    return tmp / "course" / "submitted" / student / "mhsa"


# --- arrival is what was copied -----------------------------------------------------------


def test_a_folder_left_alone_arrives_when_it_was_listed_and_nothing_is_named(tmp_path):
    folder = _submission(tmp_path, "ada", {"01_input.ipynb": b"stub"})
    latest = _latest_ctime(folder)
    _listed_then_copied(_collector(tmp_path), lambda: None)
    arrival, notes = arrival_of(_submitted(tmp_path, "ada"))
    assert latest <= _ns(arrival) < latest + 1000  # the latest ctime, up to the microsecond
    assert notes == []


def test_late_work_swapped_in_after_the_listing_arrives_when_it_was_made_and_is_named(tmp_path):
    folder = _submission(tmp_path, "ada", {"01_input.ipynb": b"stub"})
    listed = _latest_ctime(folder)

    def swap():  # the student's own folders: the on-time one out, the finished one in
        _clock_past(listed, tmp_path)
        late = tmp_path / "late"
        late.mkdir()
        (late / "01_input.ipynb").write_bytes(b"finished after the listing")
        (late / "timestamp.txt").write_text((folder / "timestamp.txt").read_text())
        folder.rename(tmp_path / "on-time")
        late.rename(folder)

    _listed_then_copied(_collector(tmp_path), swap)
    copied = _submitted(tmp_path, "ada")
    assert (copied / "01_input.ipynb").read_bytes() == b"finished after the listing"
    arrival, notes = arrival_of(copied)
    assert _ns(arrival) >= _latest_ctime(folder) > listed  # what was copied, not what was listed
    (note,) = [n for n in notes if "changed while it was being collected" in n]
    assert "the folder was replaced by another" in note and "review it" in note


def test_a_folder_replaced_by_another_accounts_is_not_collected(tmp_path):
    accounts.need_root()
    folder = _submission(tmp_path, "ada", {"01_input.ipynb": b"stub"}, "daemon")
    nobody = pwd.getpwnam("nobody").pw_uid

    def replace():  # daemon's moved away, and a folder of nobody's under its name
        folder.rename(tmp_path / "moved")
        folder.mkdir()
        (folder / "01_input.ipynb").write_bytes(b"nobody's")
        for path in (folder, folder / "01_input.ipynb"):
            os.chown(path, nobody, -1)

    _listed_then_copied(_collector(tmp_path), replace)
    assert not _submitted(tmp_path, "ada").exists()
    (entry,) = refused(tmp_path / "course", "mhsa")
    assert entry["reason"] == "it was replaced by another account's folder while it was collected"


def test_a_file_rewritten_after_the_listing_moves_the_arrival_and_is_named(tmp_path):
    folder = _submission(tmp_path, "ada", {"01_input.ipynb": b"stub", "sub/notes.txt": b"a"})
    listed = _latest_ctime(folder)

    def rewrite():
        _clock_past(listed, tmp_path)
        (folder / "01_input.ipynb").write_bytes(b"rewritten in place")
        (folder / "sub" / "new.txt").write_bytes(b"added")

    _listed_then_copied(_collector(tmp_path), rewrite)
    arrival, notes = arrival_of(_submitted(tmp_path, "ada"))
    assert _ns(arrival) >= os.stat(folder / "01_input.ipynb").st_ctime_ns > listed
    (note,) = [n for n in notes if "changed while it was being collected" in n]
    for what in ("'01_input.ipynb' changed", "'sub' changed", "'sub/new.txt' appeared"):
        assert what in note, note
    assert "'sub/notes.txt'" not in note and "the folder changed" not in note


def test_the_record_keeps_the_listing_time_beside_the_arrival(tmp_path):
    import json

    folder = _submission(tmp_path, "ada", {"01_input.ipynb": b"stub"})
    listed = _latest_ctime(folder)

    def touch():
        _clock_past(listed, tmp_path)
        os.utime(folder / "01_input.ipynb", (0, 0))  # back-dated: its ctime is now

    _listed_then_copied(_collector(tmp_path), touch)
    record = json.loads((_submitted(tmp_path, "ada") / RECORD).read_text())
    assert _ns(record["listed_at"]) < _ns(record["received"])
    assert record["changed_while_collected"] == ["'01_input.ipynb' changed"]


# --- sizes: a sparse file counts in full ------------------------------------------------


def _sparse(path: Path, size: int, data: bytes = b"x" * 4096) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.truncate(size)


def test_a_sparse_file_counts_in_full_against_the_size_limits(tmp_path):
    big = _submission(tmp_path, "big", {"01_input.ipynb": b"stub"})
    _sparse(big / "weights.bin", 3_000_000)  # about 4 KB on disk, 3 MB apparent
    assert os.stat(big / "weights.bin").st_blocks * 512 < 100_000
    wide = _submission(tmp_path, "wide", {"01_input.ipynb": b"stub"})
    for name in ("a.bin", "b.bin", "c.bin"):
        _sparse(wide / name, 1_500_000)
    collect = _collector(tmp_path, max_file_size=2000, max_dir_size=4000)  # kB, as nbgrader's
    _listed_then_copied(collect, lambda: None)
    found = {r["student"]: r["reason"] for r in refused(tmp_path / "course", "mhsa")}
    assert found == {"wide": "it is larger than 4 MB in all"}
    _, notes = arrival_of(_submitted(tmp_path, "big"))
    assert "'weights.bin' is larger than 2 MB (left out)" in notes
    assert not (_submitted(tmp_path, "big") / "weights.bin").exists()


def test_a_sparse_file_within_the_limits_is_copied_whole_and_stays_sparse(tmp_path):
    folder = _submission(tmp_path, "ada", {"01_input.ipynb": b"stub"})
    data = os.urandom(5000)
    _sparse(folder / "weights.bin", 30_000_000, data)
    with open(folder / "weights.bin", "r+b") as f:  # data after the hole too
        f.seek(20_000_000)
        f.write(data)
    _listed_then_copied(_collector(tmp_path), lambda: None)
    copied = _submitted(tmp_path, "ada") / "weights.bin"
    assert copied.read_bytes() == (folder / "weights.bin").read_bytes()
    assert os.stat(copied).st_size == 30_000_000
    assert os.stat(copied).st_blocks * 512 < 3_000_000  # not 30 MB of zeros on disk


# --- one student id per account -----------------------------------------------------------


@pytest.fixture
def many_ids(tmp_path):
    """``nobody`` submits as three made-up ids; ``daemon`` as another id, then as itself."""
    accounts.need_root()
    for n, student in enumerate(("mate0", "mate1", "mate2")):
        _submission(tmp_path, student, {"01_input.ipynb": b"stub"}, "nobody", n)
    _submission(tmp_path, "xavier", {"01_input.ipynb": b"stub"}, "daemon", 3)
    _submission(tmp_path, "daemon", {"01_input.ipynb": b"stub"}, "daemon", 4)
    _submission(tmp_path, "ada", {"01_input.ipynb": b"stub"}, None, 5)  # the instructor's
    _submission(tmp_path, "bea", {"01_input.ipynb": b"stub"}, None, 6)
    return tmp_path


def _collected(tmp: Path) -> list:
    return sorted(p.name for p in (tmp / "course" / "submitted").iterdir())


def test_an_account_is_collected_under_one_student_id_and_the_others_are_named(many_ids):
    _listed_then_copied(_collector(many_ids), lambda: None)
    assert _collected(many_ids) == ["ada", "bea", "daemon", "mate0"]
    found = {r.get("account"): r["reason"] for r in refused(many_ids / "course", "mhsa")}
    assert set(found) == {"'nobody'", "'daemon'"}
    assert found["'nobody'"].startswith(
        "submitted under 3 student ids, and one account's submissions are collected under one "
        "id only: 'mate0' (the first to arrive); not collected: 'mate1', 'mate2' (2 folder(s))."
    )
    assert "'daemon' (its login name); not collected: 'xavier' (1 folder(s))" in found["'daemon'"]
    assert "c.CourseCollect.shared_account = True" in found["'daemon'"]
    told = refused_at_collect(many_ids / "course", "mhsa", [])
    assert told["students"] == {}  # no made-up id becomes a student of the gradebook
    line = "account 'nobody' submitted under 3 student ids"
    assert any(ln.startswith(line) for ln in told["lines"]), told["lines"]


def test_a_class_that_shares_an_account_is_collected_whole(many_ids):
    _listed_then_copied(_collector(many_ids, shared_account=True), lambda: None)
    assert _collected(many_ids) == ["ada", "bea", "daemon", "mate0", "mate1", "mate2", "xavier"]
    assert refused(many_ids / "course", "mhsa") == []


def test_the_courses_collect_reads_the_option_under_the_name_the_readme_gives():
    from autograders.exchange import SafeCollect

    config = Config()
    config.CourseCollect.shared_account = True  # as the course's nbgrader_config.py says it
    collect = SafeCollect(coursedir=CourseDirectory(config=config), config=config)
    assert collect.shared_account is True
    assert SafeCollect(coursedir=CourseDirectory()).shared_account is False  # the default
