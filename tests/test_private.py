"""The course directory is the instructor's alone (issue 45, item 2).

A student with an account of their own read the instructor's solutions, the
gradebook, a classmate's submission and the grades, all made with the usual
umask (``0755`` folders, ``0644`` files). ``init-course`` now makes the course
directory ``0700`` and everything in it private, whatever the umask; collect
and the grade command refuse, before touching anything, a course directory
another account can reach, naming the path, the mode found, the mode expected
and the command that fixes it (:mod:`autograders.private`). A real second
account fails to read a course made by ``init-course``: see
``tests/test_instructor.py``, which also checks that the README's real collect
and grade leave nothing open.
"""

from __future__ import annotations

import grp
import os
import pwd
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from autograders import private
from autograders.course import init_course
from autograders.private import CourseNotPrivate, check, problems
from tests.support import accounts
from tests.support import nbgrader_course as nc

#: A course's files and folders as the grade command and collect leave them, relative to it.
CLASS = {
    "submitted/alice/mhsa/07_softmax.ipynb": "{}",
    "submitted/alice/mhsa/timestamp.txt": "2026-01-05 10:00:00.000000 UTC",
    "autograded/alice/mhsa/07_softmax.ipynb": "{}",
    "feedback/alice/mhsa/07_softmax.html": "<html></html>",
    "grades.csv": "assignment,student_id\r\n",
    "collect-refused.json": "{}",
    "grading-failures.json": "{}",
}


@pytest.fixture
def repository(tmp_path) -> Path:
    """A repository with one instructor notebook: all ``init_course`` copies."""
    repo = tmp_path / "repo"
    (repo / "solutions" / "mhsa").mkdir(parents=True)
    shutil.copy(nc.SOLUTIONS / "07_softmax.ipynb", repo / "solutions" / "mhsa")
    return repo


def _made_with_umask(umask: int, path: Path, text: str) -> None:
    old = os.umask(umask)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    finally:
        os.umask(old)


@pytest.fixture
def course(tmp_path, repository) -> Path:
    """A course made by ``init_course`` under the umask 000, with a graded class in it, private."""
    old = os.umask(0)
    try:
        course = init_course(tmp_path / "class", repository).parent
    finally:
        os.umask(old)
    for rel, text in CLASS.items():
        _made_with_umask(private.UMASK, course / rel, text)
    return course


def _entries(course: Path) -> dict[str, int]:
    """``{relative path: mode}`` of the course directory and everything in it."""
    found = {".": stat.S_IMODE(os.lstat(course).st_mode)}
    for folder, dirs, files in os.walk(course):
        for name in dirs + files:
            path = Path(folder, name)
            found[str(path.relative_to(course))] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


def test_init_course_makes_everything_private_whatever_the_umask(course):
    modes = _entries(course)
    assert modes["."] == 0o700
    assert {rel for rel in modes} >= {
        "nbgrader_config.py",
        ".mhsa-hidden-key",
        "gradebook.db",
        "solutions/mhsa/07_softmax.ipynb",
        "submitted",
        "autograded",
        "feedback",
    }
    assert {rel: oct(m) for rel, m in modes.items() if m & 0o077} == {}
    assert problems(course) == ([], [])
    check(course)  # nothing raised


def test_init_course_gives_an_existing_folder_of_yours_0700_and_says_so(tmp_path, capsys):
    from autograders.course import main

    folder = tmp_path / "class"
    folder.mkdir()
    folder.chmod(0o755)
    assert main([str(folder)]) == 0
    assert f"{folder} was mode 0755; now 0700" in capsys.readouterr().out
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert problems(folder) == ([], [])


def test_init_course_refuses_a_folder_of_another_account(tmp_path, repository):
    accounts.need_root()
    folder = tmp_path / "class"
    folder.mkdir()
    os.chown(folder, pwd.getpwnam("nobody").pw_uid, -1)
    with pytest.raises(SystemExit, match="belongs to another account"):
        init_course(folder, repository)
    assert list(folder.iterdir()) == []


KINDS = [
    ".",
    "nbgrader_config.py",
    ".mhsa-hidden-key",
    "gradebook.db",
    "solutions",
    "solutions/mhsa/07_softmax.ipynb",
    "submitted",
    "submitted/alice",
    "submitted/alice/mhsa/07_softmax.ipynb",
    "autograded",
    "feedback",
    "grades.csv",
    "collect-refused.json",
    "grading-failures.json",
]
#: A permission for group or others, and the word the refusal uses for it (file, folder).
BITS = {
    0o040: ("group", "read", "list"),
    0o020: ("group", "write", "change"),
    0o004: ("every account", "read", "list"),
    0o002: ("every account", "write", "change"),
}


@pytest.mark.parametrize("bit", list(BITS), ids=[f"{b:03o}" for b in BITS])
@pytest.mark.parametrize("rel", KINDS)
def test_each_kind_of_path_open_to_group_or_others_is_refused_with_its_fix(course, rel, bit):
    path = course / rel
    before = stat.S_IMODE(path.stat().st_mode)
    path.chmod(before | bit)
    whom, file_verb, folder_verb = BITS[bit]
    if whom == "group":
        whom = f"accounts of group {grp.getgrgid(path.stat().st_gid).gr_name!r}"
    verb = folder_verb if path.is_dir() else file_verb
    with pytest.raises(CourseNotPrivate) as refused:
        check(course)
    message = str(refused.value)
    (line,) = [ln for ln in message.splitlines() if ln.startswith(f"* {path.resolve()} (")]
    assert f"mode {before | bit:04o}, expected {before:04o}" in line, line
    assert f"{whom} can {verb} it" in line, line
    assert message.splitlines()[-1] == f"Fix: chmod -R go-rwx {course}", message
    assert len(refused.value.problems) == 1, message


def test_the_fix_the_refusal_names_makes_the_course_private(course):
    """A course as an older ``init-course`` left it (umask 022): the named command fixes it."""
    for rel in _entries(course):
        path = course / rel
        path.chmod(stat.S_IMODE(path.stat().st_mode) | (0o055 if path.is_dir() else 0o044))
    assert stat.S_IMODE(course.stat().st_mode) == 0o755
    with pytest.raises(CourseNotPrivate) as refused:
        check(course)
    message = str(refused.value)
    assert f"* {course} (the course directory): mode 0755, expected 0700" in message
    assert f"… and {len(refused.value.problems) - private.SHOWN} more" in message
    (fix,) = [ln.removeprefix("Fix: ") for ln in message.splitlines() if ln.startswith("Fix: ")]
    subprocess.run(["bash", "-c", fix], check=True)
    assert problems(course) == ([], [])


def test_an_entry_of_another_account_is_refused_with_the_chown_fix(course):
    accounts.need_root()
    submission = course / "submitted" / "alice" / "mhsa" / "07_softmax.ipynb"
    os.chown(submission, pwd.getpwnam("nobody").pw_uid, -1)  # mode stays 0600
    found, fixes = problems(course)
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert found == [
        f"{submission} (a submission) belongs to account 'nobody', expected you ({me!r}): "
        "its owner can read and change it whatever its mode."
    ]
    assert f"chown -R {me} {shlex.quote(str(course))}" in fixes[0]


def test_a_named_entry_that_is_a_link_is_refused_and_a_link_in_a_submission_is_not_followed(
    course, tmp_path
):
    outside = tmp_path / "outside.txt"
    outside.write_text("anyone's")
    outside.chmod(0o666)
    (course / "submitted" / "alice" / "mhsa" / "link.ipynb").symlink_to(outside)
    assert problems(course) == ([], [])  # a link in a submission: nothing reads through it
    (course / "grades.csv").unlink()
    (course / "grades.csv").symlink_to(outside)
    (line,) = problems(course)[0]
    assert line.startswith(f"{course / 'grades.csv'} (the exported grades) is a symbolic link")


def test_another_gradebook_file_named_by_the_db_url_is_checked(course, tmp_path):
    other = tmp_path / "elsewhere" / "gradebook.db"
    _made_with_umask(0o022, other, "")
    assert problems(course)[0] == []
    (line,) = problems(course, f"sqlite:///{other}")[0]
    assert line.startswith(f"{other} (the gradebook): mode 0644, expected 0600"), line
    journal = course / "gradebook.db-journal"
    _made_with_umask(0o022, journal, "")
    (line,) = problems(course)[0]
    assert line.startswith(f"{journal} (SQLite's file beside the gradebook): mode 0644"), line


def test_a_students_file_name_is_shown_escaped(course):
    name = "x\n* forged line\x1b[2J.ipynb"
    _made_with_umask(0o022, course / "submitted" / "alice" / "mhsa" / name, "{}")
    with pytest.raises(CourseNotPrivate) as refused:
        check(course)
    message = str(refused.value)
    assert "\x1b" not in message and "\n* forged line" not in message
    assert "x\\n* forged line\\x1b[2J.ipynb (a submission): mode 0644" in message


def test_the_names_checked_are_the_modules_own():
    from autograders.collect import REFUSED
    from autograders.export import FAILURES
    from autograders.report import REPORT
    from autograders.results import RESULTS
    from autograders.secret import KEY_FILE

    names = {REFUSED, FAILURES, KEY_FILE, "grades.csv", "solutions", "submitted", RESULTS, REPORT}
    assert names <= set(private.HOLDS)
    assert private.HOLDS[RESULTS][1] and private.HOLDS[REPORT][1]  # each file inside checked


def test_private_umask_makes_new_files_private_and_gives_the_umask_back(tmp_path):
    old = os.umask(0o022)
    try:
        with private.private_umask():
            (tmp_path / "made").write_text("x")
            (tmp_path / "folder").mkdir()
        assert os.umask(0o022) == 0o022
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "made").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "folder").stat().st_mode) == 0o700


def test_the_grade_command_refuses_an_open_course_before_touching_it(course, capsys):
    from autograders.grade import LOCK, main

    course.chmod(0o755)
    before = _entries(course)
    assert main(["mhsa", "--course-dir", str(course), "--no-sandbox"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"not grading: the course directory {course} is not yours alone"), err
    assert f"Fix: chmod -R go-rwx {course}" in err
    assert _entries(course) == before and not (course / LOCK).exists()


def test_collect_refuses_an_open_course_before_touching_it(course, tmp_path, monkeypatch):
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeError

    from autograders.collect import CourseCollect

    inbound = tmp_path / "exchange" / "mhsa" / "inbound"
    submission = inbound / "bob+mhsa+2026-01-05 10:00:00.000000 UTC"
    submission.mkdir(parents=True)
    (submission / "07_softmax.ipynb").write_text("{}")
    (course / "gradebook.db").chmod(0o644)
    # nbgrader makes the empty gradebook's tables with alembic, from this environment
    monkeypatch.setenv("PATH", nc.env()["PATH"])

    def collect():
        dirs = CourseDirectory(root=str(course), course_id="mhsa", assignment_id="mhsa")
        CourseCollect(
            coursedir=dirs, authenticator=Authenticator(), root=str(tmp_path / "exchange")
        ).start()

    with pytest.raises(ExchangeError) as refused:
        collect()
    message = str(refused.value)
    assert message.startswith(f"Refusing to collect: the course directory {course} is not")
    assert f"* {course / 'gradebook.db'} (the gradebook): mode 0644, expected 0600" in message
    assert f"Fix: chmod -R go-rwx {course}" in message
    assert not (course / "submitted" / "bob").exists()
    (course / "gradebook.db").chmod(0o600)  # fixed: the same collect takes bob's submission
    old = os.umask(0o022)
    try:
        collect()
    finally:
        os.umask(old)
    collected = course / "submitted" / "bob" / "mhsa" / "07_softmax.ipynb"
    assert collected.is_file()
    assert {rel: oct(m) for rel, m in _entries(course).items() if m & 0o077} == {}


@pytest.mark.slow  # real nbgrader and grade commands (about 5 s, nothing graded)
def test_a_course_of_an_older_init_course_is_refused_by_the_readmes_commands(tmp_path):
    """An older ``init-course`` made ``0755`` folders and ``0644`` files: named, not broken."""
    course = init_course(tmp_path / "class").parent  # the course's own configuration
    for rel in _entries(course):  # as the umask 022 left them
        path = course / rel
        path.chmod(stat.S_IMODE(path.stat().st_mode) | (0o055 if path.is_dir() else 0o044))
    before = _entries(course)
    exchange = [f"--Exchange.root={tmp_path / 'exchange'}", "--CourseDirectory.course_id=mhsa"]
    collect = nc.nbgrader(course, "collect", "mhsa", *exchange, check=False)
    grade = nc.grade(course, check=False)
    out = collect.stdout + collect.stderr
    assert collect.returncode != 0, out
    assert f"Refusing to collect: the course directory {course} is not yours alone" in out
    assert f"{course} (the course directory): mode 0755, expected 0700" in out
    assert f"Fix: chmod -R go-rwx {course}" in out
    assert grade.returncode == 2, grade.stdout + grade.stderr
    assert grade.stderr.startswith(f"not grading: the course directory {course} is not yours")
    assert f"Fix: chmod -R go-rwx {course}" in grade.stderr
    assert _entries(course) == before  # neither touched it
