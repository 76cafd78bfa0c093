"""Issue 45: a grading cluster's members are guarded, and the grade command's own is private.

In-process: the guard's TLS listener (:mod:`autograders.guard`) against raw
connections on loopback, what it calls exposed (a folder another account
can write), how the summary names refused connections, and the run folder
of the grade command's own cluster (:mod:`autograders.private_cluster`).
The clusters themselves, real processes and other accounts, are in
``tests/test_cluster_security.py``.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
import ssl
import stat
import tempfile
from pathlib import Path

import pytest

from autograders import guard
from autograders.private_cluster import PID_FILE, PrivateFolderError, check_private, run_folder
from autograders.watch import summary_lines
from tests.support.accounts import need_root


# --------------------------------------------------------------------------
# exposed: what another account could write or replace
# --------------------------------------------------------------------------
def test_a_private_folder_is_not_exposed(tmp_path):
    private = tmp_path / "mine"
    private.mkdir(mode=0o700)
    assert guard._exposure(private) is None


def test_a_folder_in_a_folder_others_can_write_is_exposed(tmp_path):
    open_to_all = tmp_path / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)  # no sticky bit: anyone can rename what is in it
    (open_to_all / "mine").mkdir(mode=0o700)
    why = guard._exposure(open_to_all / "mine")
    assert why is not None and str(open_to_all) in why and "mode 0777" in why, why


def test_our_folder_in_a_sticky_folder_like_tmp_is_not_exposed_but_a_missing_one_is(tmp_path):
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    (sticky / "ours").mkdir(mode=0o700)
    assert guard._exposure(sticky / "ours") is None
    why = guard._exposure(sticky / "dask-scratch-space")  # any account can make it first
    assert why is not None and "mode 1777" in why, why


def test_a_folder_of_another_account_in_a_sticky_folder_is_exposed(tmp_path):
    need_root()
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    theirs = sticky / "dask-scratch-space"
    theirs.mkdir(mode=0o755)
    nobody = pwd.getpwnam("nobody")
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    why = guard._exposure(theirs)
    assert why is not None and f"uid {nobody.pw_uid}" in why, why


def test_a_member_without_a_private_temporary_directory_is_exposed(tmp_path):
    import dask

    with dask.config.set({"temporary-directory": None}):
        (found,) = [e for e in guard.exposures() if "temporary-directory" in e]
    assert "is not set" in found and "DASK_TEMPORARY_DIRECTORY" in found, found
    shared = tmp_path / "scratch"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    with dask.config.set({"temporary-directory": str(shared)}):
        (found,) = [e for e in guard.exposures() if "temporary-directory" in e]
    assert "with mode 0755" in found and f"mkdir -p -m 700 {shared}" in found, found
    shared.chmod(0o700)
    with dask.config.set({"temporary-directory": str(shared)}):
        assert [e for e in guard.exposures() if "temporary-directory" in e] == []


# --------------------------------------------------------------------------
# the guarded TLS listener, against raw connections on loopback
# --------------------------------------------------------------------------
def _closed_by_peer(sock: socket.socket, seconds: float = 60) -> bool:
    """True once the listener has closed ``sock``, False if it is still open after ``seconds``."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


async def _with_listener(body):
    """Run ``body(address, security)`` beside a guarded TLS listener on 127.0.0.1."""
    from distributed.comm import listen
    from distributed.security import Security

    security = Security.temporary()

    async def handle(comm):
        message = await comm.read()
        await comm.write({"echo": message})
        await comm.close()

    listener = await listen("tls://127.0.0.1:0", handle, **security.get_listen_args("scheduler"))
    assert isinstance(listener, guard.GuardedTLSListener), type(listener)
    try:
        return await body(listener.contact_address, security)
    finally:
        listener.stop()


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def test_idle_connections_cannot_shut_out_the_cluster_and_are_each_named():
    """More idle connections than the limit: the oldest are closed, a member still gets in."""
    from distributed.comm import connect

    before = guard.refusals()["all"]
    extra = 3

    async def body(address, security):
        idle = []
        for _ in range(guard.PER_ADDRESS + extra):
            idle.append(socket.create_connection(("127.0.0.1", _port(address))))
            await asyncio.sleep(0.05)  # accepted one after another: the oldest is known
        comm = await connect(address, **security.get_connection_args("client"))
        await comm.write("hello")
        answer = await comm.read()
        await comm.close()
        closed = [await asyncio.to_thread(_closed_by_peer, s, 30) for s in idle[:extra]]
        for s in idle:
            s.close()
        return answer, closed

    answer, closed = asyncio.run(_with_listener(body))
    assert answer == {"echo": "hello"}
    assert closed == [True] * extra
    reasons = [r[3] for r in guard.refusals()["kept"]][-(guard.refusals()["all"] - before) :]
    dropped = [r for r in reasons if f"more than {guard.PER_ADDRESS} connections" in r]
    assert len(dropped) >= extra, reasons


def test_a_connection_that_never_shakes_hands_is_closed_and_named(monkeypatch):
    monkeypatch.setattr(guard, "HANDSHAKE_SECONDS", 0.5)

    async def body(address, security):
        idle = socket.create_connection(("127.0.0.1", _port(address)))
        closed = await asyncio.to_thread(_closed_by_peer, idle, 60)
        idle.close()
        return closed

    assert asyncio.run(_with_listener(body)) is True
    (listener, remote, reason) = guard.refusals()["kept"][-1][1:]
    assert reason == "no TLS handshake within 0.5 s", reason
    assert remote.startswith("tls://127.0.0.1:") and listener.startswith("tls://127.0.0.1:")


def test_a_peer_without_the_clusters_certificate_is_refused_and_named():
    async def body(address, security):
        def hello():
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            raw = socket.create_connection(("127.0.0.1", _port(address)))
            try:
                with ctx.wrap_socket(raw) as tls:
                    tls.sendall(b"x")
                    return tls.recv(1)
            except (ssl.SSLError, OSError) as exc:
                return exc

        got = await asyncio.to_thread(hello)
        while guard.refusals()["all"] == before:  # the listener's side of the failure
            await asyncio.sleep(0.01)
        return got

    before = guard.refusals()["all"]
    got = asyncio.run(_with_listener(body))
    assert not (isinstance(got, bytes) and got), got  # nothing read from the cluster
    reason = guard.refusals()["kept"][-1][3]
    assert reason.startswith("TLS handshake failed: "), reason


def test_the_summary_names_each_host_and_reason_escaped():
    found = [
        ("tls://10.0.0.1:8786", "tls://10.0.0.9:5000", "no TLS handshake within 10 s", 3),
        ("tls://10.0.0.2:9000", "tls://10.0.0.9:5001", "no TLS handshake within 10 s", 2),
        ("tls://10.0.0.1:8786", "tls://evil\x1b[2J:1", "closed before its TLS handshake", 1),
    ]
    lines = summary_lines(found)
    assert len(lines) == 2, lines
    assert lines[0].startswith(
        "5 connection(s) from '10.0.0.9' to the grading cluster refused "
        "(no TLS handshake within 10 s), to port(s) 8786, 9000"
    ), lines
    assert "\x1b" not in lines[1] and "'evil\\x1b[2J'" in lines[1], lines


# --------------------------------------------------------------------------
# the grade command's own cluster: its run folder
# --------------------------------------------------------------------------
def test_the_run_folder_is_new_private_and_refused_when_not(tmp_path):
    parent = tmp_path / "t"  # pytest's own folder names are too long for a socket's path
    parent.symlink_to(tempfile.mkdtemp(dir="/tmp", prefix="rf-"))
    try:
        _run_folder_checks(Path(os.readlink(parent)))
    finally:
        shutil.rmtree(os.readlink(parent))


def _run_folder_checks(parent: Path):
    folder = run_folder(str(parent))
    assert folder.parent == parent, folder  # where it was asked for
    info = folder.lstat()
    assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o700, os.geteuid())
    assert check_private(folder) == folder
    assert run_folder(str(parent)) != folder  # never the same name twice
    folder.chmod(0o755)
    with pytest.raises(PrivateFolderError, match=r"expected a folder of uid \d+ with mode 0700"):
        check_private(folder)
    link = parent / "link"
    link.symlink_to(folder)
    folder.chmod(0o700)
    with pytest.raises(PrivateFolderError, match="found not a folder"):
        check_private(link)


def test_a_run_folder_a_killed_run_left_is_removed_by_the_next_and_no_other(tmp_path):
    """Its process gone: removed. A live run's, another account's, one naming no process: kept."""
    import subprocess
    import sys

    need_root()
    parent = tmp_path / "t"
    parent.symlink_to(tempfile.mkdtemp(dir="/tmp", prefix="rf-"))
    parent = Path(os.readlink(tmp_path / "t"))
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        left = run_folder(str(parent))
        (left / PID_FILE).write_text(f"{dead.pid}\n")  # as a run killed before its cleanup
        (left / "scratch").mkdir()
        live = run_folder(str(parent))  # this process's: alive
        theirs = parent / "mhsa-grading-theirs"
        theirs.mkdir(mode=0o700)
        (theirs / PID_FILE).write_text(f"{dead.pid}\n")
        nobody = pwd.getpwnam("nobody")
        os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
        unnamed = parent / "mhsa-grading-unnamed"
        unnamed.mkdir(mode=0o700)
        new = run_folder(str(parent))
        assert not left.exists()
        assert live.exists() and theirs.exists() and unnamed.exists() and new.exists()
    finally:
        shutil.rmtree(parent)
