"""Who submitted: a submission from another account than its student id is named for review.

The red team ran ``nbgrader submit --student victim1`` from another account:
collect only warned, and the impostor's stubs were graded as victim1's. The
course's collect step now records the account behind every submission in
the exchange, and the grade command names the mismatch; a submission in the
name of a student whose own account submitted is not collected at all. The tests run as
root; the exchange folders are given to other (system) accounts with
``chown``, as the operating system records a real submission.
"""

from __future__ import annotations

import os
import pwd
import shutil

import pytest

from autograders.collect import RECORD
from autograders.identity import identity_notes
from tests.support import nbgrader_course as nc

pytestmark = pytest.mark.slow  # real nbgrader submit, collect and grade

EXCHANGE = ("--Exchange.root={}", "--CourseDirectory.course_id=mhsa")
#: The one notebook each submission holds: who submitted it is what these tests are about.
STEM = "01_input"


def _exchange_args(exchange) -> list:
    return [EXCHANGE[0].format(exchange), EXCHANGE[1]]


def _submit(tmp, exchange, student: str, account: str) -> None:
    """``nbgrader submit --student student``, the exchange folder then owned by ``account``."""
    home = tmp / f"{student}-{account}"
    home.mkdir()
    (home / nc.ASSIGNMENT).mkdir()
    shutil.copy(nc.STUDENT / f"{STEM}.ipynb", home / nc.ASSIGNMENT)
    before = set((exchange / "mhsa" / "inbound").iterdir())
    nc._python(
        home,
        "nbgrader",
        "submit",
        nc.ASSIGNMENT,
        f"--student={student}",
        *_exchange_args(exchange),
        check=True,
    )
    (new,) = set((exchange / "mhsa" / "inbound").iterdir()) - before
    uid = pwd.getpwnam(account).pw_uid
    for root, dirs, files in os.walk(new):
        for name in [*dirs, *files]:
            os.chown(os.path.join(root, name), uid, -1)
    os.chown(new, uid, -1)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("giving the exchange folders to other accounts needs root")
    tmp = tmp_path_factory.mktemp("identity")
    course = nc.make_course(tmp / "course", "c.Execute.timeout = 20\n")
    exchange = tmp / "exchange"
    exchange.mkdir()
    nc.generate(course)
    nc.nbgrader(course, "release_assignment", nc.ASSIGNMENT, "--force", *_exchange_args(exchange))
    _submit(tmp, exchange, "daemon", "daemon")  # honest: the account is the student
    _submit(tmp, exchange, "sys", "nobody")  # another account, in sys's name
    _submit(tmp, exchange, "bin", "bin")  # bin submits ...
    _submit(tmp, exchange, "bin", "nobody")  # ... and another account submits in bin's name
    nc.nbgrader(course, "collect", nc.ASSIGNMENT, *_exchange_args(exchange))
    proc = nc.grade(course, "--workers", "1")
    return course, proc.stdout


def _line(summary: str, student: str) -> str:
    return next((ln for ln in summary.splitlines() if ln.startswith(f"! {student}:")), "")


def test_an_honest_submission_says_nothing(graded):
    course, summary = graded
    assert "account" not in _line(summary, "daemon"), summary
    assert identity_notes(course / "submitted" / "daemon" / nc.ASSIGNMENT, "daemon") == []


def test_a_submission_from_another_account_is_named(graded):
    _, summary = graded
    assert "submitted from account 'nobody', not 'sys': review it" in _line(summary, "sys")


def test_a_later_submission_from_another_account_does_not_replace_the_students_own(graded):
    course, summary = graded
    line = _line(summary, "bin")
    assert "it came from account 'nobody', while bin submitted from their own account" in line
    assert "submitted from account" not in line, summary  # what was collected is bin's own
    record = (course / "submitted" / "bin" / nc.ASSIGNMENT / RECORD).read_text()
    assert '"account": "bin"' in record and '"nobody"' not in record
    assert (course / "autograded" / "bin" / nc.ASSIGNMENT).is_dir()


def test_a_forged_record_in_the_submission_is_overwritten(tmp_path):
    """The record is written after the student's files are copied: theirs cannot stand."""
    from nbgrader.coursedir import CourseDirectory

    from autograders.collect import CourseCollect

    src = tmp_path / "inbound" / "eve+mhsa+2026-11-25 10:00:00.000000 UTC+abc"
    src.mkdir(parents=True)
    (src / RECORD).write_text('{"collected": {"account": "eve"}, "all": []}')
    (src / "timestamp.txt").write_text("2026-11-25 10:00:00.000000 UTC")
    collect = CourseCollect(coursedir=CourseDirectory(assignment_id="mhsa"))
    dest = tmp_path / "submitted" / "eve" / "mhsa"
    collect.do_copy(str(src), str(dest))
    account = pwd.getpwuid(os.getuid()).pw_name
    notes = identity_notes(dest, "eve")
    assert notes == [f"submitted from account {account!r}, not 'eve': review it"]
