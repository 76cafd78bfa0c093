"""An exchange no student can rearrange (issue 31), played as two accounts.

A student renamed the instructor's course folder in stock nbgrader's
exchange (root ``0777``, no sticky bit) and put their own in its place.
``python -m autograders init-exchange`` lays the exchange out so that each
account can rename or delete only what it owns, and the course's release,
release_feedback and collect refuse an exchange where that is not so. The
suite runs as root, the instructor; students are the system accounts
``nobody`` and ``daemon`` (:mod:`tests.support.accounts`), running real nbgrader.
"""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from autograders.exchange import (
    COURSE_MODE,
    FEEDBACK_MODE,
    INBOUND_MODE,
    OUTBOUND_MODE,
    ROOT_MODE,
    UnsafeExchange,
    init_exchange,
    problems,
)
from tests.support import accounts
from tests.support import nbgrader_course as nc

STAMP = "2026-01-05 10:00:00.000000 UTC"
STOCK_RELEASE = (
    "--ExchangeFactory.release_assignment="
    "nbgrader.exchange.default.release_assignment.ExchangeReleaseAssignment"
)

#: As a student: try each operation, say whether the system denied it.
ATTEMPTS = """
import json, os, sys
out = {}
for i, (op, *args) in enumerate(json.loads(sys.argv[1])):
    what = f"{i}: {op} {args[0]}"
    try:
        if op == "write":
            with open(args[0], "w") as f:
                f.write(args[1])
        else:
            getattr(os, op)(*args)
        out[what] = "done"
    except PermissionError:
        out[what] = "denied"
    except OSError as exc:
        out[what] = f"failed otherwise: {exc}"
print(json.dumps(out))
"""


def _modes(exchange: Path) -> dict:
    """{path: (mode, owner uid)} of the root and the course's folders."""
    course = exchange / "mhsa"
    paths = [exchange, course, *(course / n for n in ("outbound", "inbound", "feedback"))]
    return {str(p): (stat.S_IMODE(os.lstat(p).st_mode), os.lstat(p).st_uid) for p in paths}


EXPECTED = {
    "": ROOT_MODE,
    "mhsa": COURSE_MODE,
    "mhsa/outbound": OUTBOUND_MODE,
    "mhsa/inbound": INBOUND_MODE,
    "mhsa/feedback": FEEDBACK_MODE,
}


# --- problems() and init_exchange() on folders made here (quick) --------------------------


def test_init_exchange_makes_the_layout_and_a_second_run_changes_nothing(tmp_path):
    exchange = tmp_path / "srv" / "exchange"
    made = init_exchange(exchange)
    assert f"made {exchange} (mode 1777)" in made
    for rel, mode in EXPECTED.items():
        st = os.lstat(exchange / rel)
        assert (stat.S_IMODE(st.st_mode), st.st_uid) == (mode, os.geteuid()), rel
    assert problems(exchange) == []
    assert init_exchange(exchange) == []


def test_init_exchange_fixes_the_modes_of_the_instructors_own_folders(tmp_path):
    exchange = tmp_path / "exchange"
    init_exchange(exchange)
    exchange.chmod(0o777)  # stock nbgrader's root
    (exchange / "mhsa" / "inbound").chmod(0o2733)  # stock nbgrader's inbound
    assert len(problems(exchange)) == 2
    init_exchange(exchange)
    assert problems(exchange) == []
    assert stat.S_IMODE(os.lstat(exchange / "mhsa" / "inbound").st_mode) == INBOUND_MODE


@pytest.mark.parametrize("course_id", ["", ".", "..", "a/b"])
def test_a_course_id_that_is_not_a_folder_name_is_refused(tmp_path, course_id):
    with pytest.raises(ValueError, match="the course id must be a folder name"):
        init_exchange(tmp_path / "exchange", course_id)
    assert not (tmp_path / "exchange").exists()


def _mode(rel: str, mode: int):
    return lambda exchange: (exchange / rel).chmod(mode)


def _link_course(exchange: Path) -> None:
    (exchange / "mhsa").rename(exchange / "elsewhere")
    (exchange / "mhsa").symlink_to(exchange / "elsewhere")


CASES = {
    "stock root": (
        _mode("", 0o777),
        ["(the exchange root) is writable by other accounts without the sticky bit",
         "mode 0777, expected 1777", "Fix: chmod 1777 {exchange}"],
    ),
    "inbound without sticky": (
        _mode("mhsa/inbound", 0o2733),
        ["{exchange}/mhsa/inbound (the course's inbound) is writable by other accounts "
         "without the sticky bit (mode 2733, expected 3733)",
         "Fix: chmod 3733 {exchange}/mhsa/inbound"],
    ),
    "course folder writable": (
        _mode("mhsa", 0o777),
        ["{exchange}/mhsa (the course folder) is writable by other accounts (mode 0777, "
         "expected 0755)", "Fix: chmod 755 {exchange}/mhsa"],
    ),
    "outbound group-writable": (
        _mode("mhsa/outbound", 0o775),
        ["{exchange}/mhsa/outbound (the course's outbound) is writable by other accounts "
         "(mode 0775, expected 0755)"],
    ),
    "feedback listable": (
        _mode("mhsa/feedback", 0o755),
        ["{exchange}/mhsa/feedback (the course's feedback) can be listed by other accounts "
         "(mode 0755, expected 0711)", "Fix: chmod 711 {exchange}/mhsa/feedback"],
    ),
    "course folder a link": (
        _link_course,
        ["{exchange}/mhsa (the course folder) is a symbolic link to {exchange}/elsewhere",
         "Fix: mv {exchange}/mhsa {exchange}/mhsa.suspect"],
    ),
    "parent open": (
        lambda exchange: exchange.parent.chmod(0o777),
        ["{parent} (above the exchange root) is writable by other accounts without the "
         "sticky bit (mode 0777)", "Fix: chmod +t {parent}"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_way_to_rearrange_is_named_with_its_fix(tmp_path, case):
    exchange = tmp_path / "parent" / "exchange"
    init_exchange(exchange)
    assert problems(exchange) == []
    breaks, sentences = CASES[case]
    breaks(exchange)
    found = problems(exchange)
    assert len(found) == 1, found
    for sentence in sentences:
        assert sentence.format(exchange=exchange, parent=exchange.parent) in found[0]


@pytest.mark.parametrize("rel", ["", "mhsa", "mhsa/inbound"])
def test_a_folder_of_another_account_is_named_and_left_alone(tmp_path, rel):
    accounts.need_root()
    exchange = tmp_path / "exchange"
    init_exchange(exchange)
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chown(exchange / rel, nobody, -1)
    (exchange / rel).chmod(0o777)
    (found,) = problems(exchange)
    assert f"{exchange / rel}".rstrip("/") + " (" in found
    assert "belongs to account 'nobody'" in found
    with pytest.raises(UnsafeExchange, match="belongs to account 'nobody'"):
        init_exchange(exchange)
    assert stat.S_IMODE(os.lstat(exchange / rel).st_mode) == 0o777  # not its to change


# --- real nbgrader, as two accounts (slow) ----------------------------------------------------


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    accounts.need_root()
    course = nc.make_course(tmp_path_factory.mktemp("exchange") / "course")
    nc.generate(course)
    return course


def _args(exchange: Path) -> list:
    return [f"--Exchange.root={exchange}", "--CourseDirectory.course_id=mhsa"]


def _init_exchange(exchange: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograders", "init-exchange", str(exchange)],
        capture_output=True,
        text=True,
        env=nc.env(),
        cwd=nc.ROOT,
    )


def _student(account: str, shared: Path, exchange: Path, *command: str):
    """``nbgrader COMMAND mhsa`` run by ``account`` itself, in its home."""
    home = accounts.home_of(account, shared)
    return accounts.run_as(account, ["nbgrader", *command, nc.ASSIGNMENT, *_args(exchange)], home)


def _attempt(account: str, shared: Path, operations: list) -> dict:
    """Run os.OP(*paths) for each ``(op, *paths)`` as ``account``: {"op path": outcome}."""
    home = accounts.home_of(account, shared)
    plain = [
        [op, *(str(a) if isinstance(a, Path) else a for a in args)] for op, *args in operations
    ]
    argv = [sys.executable, "-c", ATTEMPTS, json.dumps(plain)]
    proc = accounts.run_as(account, argv, home)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _refused(proc: subprocess.CompletedProcess, what: str) -> str:
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert f"Refusing to {what}: in the exchange, one account could rename" in out, out
    return out


@pytest.fixture(scope="module")
def safe_class(course):
    """init-exchange, release, then daemon and nobody each fetch and submit as themselves."""
    with accounts.shared_folder("mhsa-exchange-") as shared:
        exchange = shared / "exchange"
        init = _init_exchange(exchange)
        assert init.returncode == 0, init.stderr
        after_init = _modes(exchange)
        nc.nbgrader(course, "release_assignment", nc.ASSIGNMENT, "--force", *_args(exchange))
        after_release = _modes(exchange)
        students = {}
        for account in ("daemon", "nobody"):
            fetch = _student(account, shared, exchange, "fetch_assignment")
            submit = _student(account, shared, exchange, "submit")
            inbound = exchange / "mhsa" / "inbound"
            mine = [p for p in inbound.iterdir() if p.stat().st_uid == pwd.getpwnam(account).pw_uid]
            students[account] = (fetch, submit, mine)
        (daemons,) = students["daemon"][2]
        course_folder = exchange / "mhsa"
        moves = [("rename", p, exchange / "moved") for p in
                 (course_folder, *(course_folder / n for n in ("inbound", "outbound", "feedback")),
                  daemons)]  # fmt: skip
        moves.append(
            ("rename", daemons, daemons.with_name(daemons.name.replace("daemon", "nobody")))
        )
        moves += [("rmdir", p) for p in (course_folder, course_folder / "inbound", daemons)]
        moves += [("mkdir", course_folder / "feedback2"), ("listdir", course_folder / "inbound")]
        tried = _attempt("nobody", shared, moves)
        collect = nc.nbgrader(course, "collect", nc.ASSIGNMENT, *_args(exchange))
        nc.nbgrader(course, "release_assignment", nc.ASSIGNMENT, "--force", *_args(exchange))
        after_second = _modes(exchange)
        found = problems(exchange)
        yield {
            "exchange": exchange,
            "modes": (after_init, after_release, after_second),
            "students": students,
            "tried": tried,
            "collect": collect,
            "problems": found,
        }


@pytest.mark.slow
def test_init_exchange_and_release_make_the_safe_layout(safe_class):
    after_init, after_release, _ = safe_class["modes"]
    exchange = safe_class["exchange"]
    assert after_init == {str(exchange / rel): (mode, 0) for rel, mode in EXPECTED.items()}
    assert after_release == after_init


@pytest.mark.slow
def test_a_student_cannot_rename_or_delete_the_course_or_another_students_submission(safe_class):
    tried = safe_class["tried"]
    assert list(tried.values()) == ["denied"] * 11, tried


@pytest.mark.slow
def test_each_student_still_fetches_and_submits_as_themselves(safe_class):
    for account, (fetch, submit, mine) in safe_class["students"].items():
        assert fetch.returncode == 0, fetch.stderr
        assert submit.returncode == 0, submit.stderr
        assert len(mine) == 1 and mine[0].name.startswith(f"{account}+mhsa+"), mine


@pytest.mark.slow
def test_the_instructors_collect_collects_both(safe_class, course):
    assert safe_class["collect"].returncode == 0
    for account in ("daemon", "nobody"):
        assert (course / "submitted" / account / "mhsa" / "07_softmax.ipynb").is_file(), account


@pytest.mark.slow
def test_a_second_release_force_keeps_the_exchange_safe(safe_class):
    after_init, _, after_second = safe_class["modes"]
    assert after_second == after_init
    assert safe_class["problems"] == []


@pytest.mark.slow
def test_release_makes_a_missing_exchange_safe(course):
    with accounts.shared_folder("mhsa-exchange-") as shared:
        exchange = shared / "new" / "exchange"
        nc.nbgrader(course, "release_assignment", nc.ASSIGNMENT, "--force", *_args(exchange))
        assert _modes(exchange) == {str(exchange / r): (m, 0) for r, m in EXPECTED.items()}
        assert (exchange / "mhsa" / "outbound" / "mhsa" / "07_softmax.ipynb").is_file()


@pytest.mark.slow
def test_the_issues_attack_on_stock_nbgrader_is_refused(course):
    """Stock release makes root 0777; nobody swaps the course folder; release and collect refuse."""
    with accounts.shared_folder("mhsa-exchange-") as shared:
        exchange = shared / "exchange"
        nc.nbgrader(course, "release_assignment", nc.ASSIGNMENT, "--force", STOCK_RELEASE,
                    *_args(exchange))  # fmt: skip
        assert stat.S_IMODE(exchange.stat().st_mode) == 0o777  # nbgrader's own root
        real, fake = exchange / "mhsa", exchange / "mhsa"
        forged = fake / "inbound" / f"eve+mhsa+{STAMP}+abc"  # what collect would take
        tried = _attempt(
            "nobody",
            shared,
            [("rename", real, exchange / ".hidden"), ("mkdir", fake), ("mkdir", fake / "outbound"),
             ("mkdir", fake / "inbound"), ("mkdir", forged),
             ("write", forged / "timestamp.txt", STAMP), ("chmod", fake, 0o755)],
        )  # fmt: skip
        assert set(tried.values()) == {"done"}, tried  # the danger: the swap works
        assert (exchange / ".hidden" / "outbound" / "mhsa").is_dir()
        assert fake.stat().st_uid == pwd.getpwnam("nobody").pw_uid

        release = nc.nbgrader(
            course, "release_assignment", nc.ASSIGNMENT, "--force", *_args(exchange), check=False
        )
        out = _refused(release, "release")
        assert f"{exchange} (the exchange root) is writable by other accounts without the " in out
        assert f"Fix: chmod 1777 {exchange}" in out
        assert f"{fake} (the course folder) belongs to account 'nobody'" in out
        assert list((fake / "outbound").iterdir()) == []  # nothing released into nobody's
        assert stat.S_IMODE(exchange.stat().st_mode) == 0o777  # nor anything changed

        out = _refused(nc.nbgrader(course, "collect", nc.ASSIGNMENT, *_args(exchange),
                                   check=False), "collect")  # fmt: skip
        assert f"{fake} (the course folder) belongs to account 'nobody'" in out
        assert not (course / "submitted" / "eve").exists()

        feedback = nc.nbgrader(course, "release_feedback", nc.ASSIGNMENT, *_args(exchange),
                               check=False)  # fmt: skip
        _refused(feedback, "release feedback")
        assert not (fake / "feedback").exists()


@pytest.mark.slow
def test_the_sticky_root_alone_leaves_inbound_open_and_collect_refuses(course):
    """The issue's workaround (chmod 1777 on the root): inbound is still nbgrader's 2733."""
    with accounts.shared_folder("mhsa-exchange-") as shared:
        exchange = shared / "exchange"
        exchange.mkdir()
        exchange.chmod(0o1777)
        nc.nbgrader(course, "release_assignment", nc.ASSIGNMENT, "--force", STOCK_RELEASE,
                    *_args(exchange))  # fmt: skip
        inbound = exchange / "mhsa" / "inbound"
        assert stat.S_IMODE(inbound.stat().st_mode) == 0o2733  # nbgrader's own inbound
        submit = _student("daemon", shared, exchange, "fetch_assignment")
        assert submit.returncode == 0, submit.stderr
        submit = _student("daemon", shared, exchange, "submit")
        assert submit.returncode == 0, submit.stderr
        (daemons,) = inbound.iterdir()
        renamed = daemons.with_name(daemons.name.replace("daemon+", "mallory+"))
        tried = _attempt("nobody", shared, [("rename", daemons, renamed)])
        assert list(tried.values()) == ["done"], tried  # the danger: daemon's is now mallory's

        out = _refused(nc.nbgrader(course, "collect", nc.ASSIGNMENT, *_args(exchange),
                                   check=False), "collect")  # fmt: skip
        assert f"{inbound} (the course's inbound) is writable by other accounts without the " in out
        assert f"Fix: chmod 3733 {inbound}" in out
        assert not (course / "submitted" / "mallory").exists()


@pytest.mark.slow
def test_a_course_folder_squatted_by_a_student_is_refused(course):
    with accounts.shared_folder("mhsa-exchange-") as shared:
        exchange = shared / "exchange"
        exchange.mkdir()
        exchange.chmod(0o1777)  # as an administrator makes it, before the instructor's release
        squat = exchange / "mhsa"
        tried = _attempt("nobody", shared, [("mkdir", squat), ("chmod", squat, 0o755)])
        assert set(tried.values()) == {"done"}, tried

        init = _init_exchange(exchange)
        assert init.returncode == 1
        assert f"{squat} (the course folder) belongs to account 'nobody'" in init.stderr
        release = nc.nbgrader(
            course, "release_assignment", nc.ASSIGNMENT, "--force", *_args(exchange), check=False
        )
        out = _refused(release, "release")
        assert f"{squat} (the course folder) belongs to account 'nobody'" in out
        assert f"Fix: mv {squat} {squat}.suspect" in out
        assert list(squat.iterdir()) == []  # nothing released into the squatter's folder
