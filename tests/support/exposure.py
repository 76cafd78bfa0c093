"""What a grade run exposes to another account: its sockets, files, module paths and processes.

Root (the instructor, in the tests) sees every process of a grade run and
what it holds; the probe (``exposure_probe/sitecustomize.py``, put on
``PYTHONPATH`` by :func:`probe_env`) makes every Python process of the run
report the ``sys.path`` its imports searched and the files, folders and
sockets it made. Another account (``nobody``) then tries, for real, to read,
list, write into and connect to each of them (:data:`ATTEMPTS`, run by
:func:`attempts_as`); a module path counts as exposed by the rule of
:func:`exposed`: the owner's account, root and the folders above decide.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path

from tests.support.accounts import run_as

PROBE = Path(__file__).parent / "exposure_probe"


def probe_env(report: Path, token: str) -> dict:
    """The environment that makes a run's Python processes report to ``report``, with ``token``."""
    return {"PYTHONPATH": str(PROBE), "MHSA_PROBE_DIR": str(report), "MHSA_EXPOSURE_TOKEN": token}


def reports(report: Path) -> dict:
    """``{"sys.path": {entry…}, "write": {path…}, "mkdir": …, "bind": …, "process": [pid…]}``."""
    found = {"sys.path": set(), "write": set(), "mkdir": set(), "bind": set(), "process": []}
    for file in report.glob("*.jsonl"):
        for line in file.read_text().splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if entry["kind"] == "sys.path":
                    found["sys.path"].update(entry["value"])
                elif entry["kind"] == "process":
                    found["process"].append(entry["value"]["pid"])
                else:
                    found[entry["kind"]].add(entry["value"])
    return found


def process_tree(pid: int) -> list:
    """``pid`` and every process it started, as pids."""
    import psutil

    with contextlib.suppress(psutil.NoSuchProcess):
        return [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
    return []


def _inodes(pids: list) -> set:
    found = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        found.add(link[len("socket:[") : -1])
    return found


def sockets(pids: list) -> dict:
    """What the processes ``pids`` hold that others could connect to, by the kernel's tables.

    Returns
    -------
    dict
        ``{"tcp listening": [port…], "udp bound": [port…], "unix listening": [path…]}``;
        an abstract Unix socket (any account of the network namespace can
        connect to it) is listed with its ``@`` name.
    """
    inodes = _inodes(pids)
    out = {"tcp listening": [], "udp bound": [], "unix listening": []}
    for table, key in (("tcp", "tcp listening"), ("tcp6", "tcp listening")):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                out[key].append(int(fields[1].rsplit(":", 1)[1], 16))
    for table in ("udp", "udp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                out["udp bound"].append(int(fields[1].rsplit(":", 1)[1], 16))
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        listening = int(fields[3], 16) & 0x10000  # __SO_ACCEPTCON
        if fields[6] in inodes and listening:
            out["unix listening"].append(fields[7] if len(fields) > 7 else "(unnamed)")
    return out


def exposed(path: Path, owner: int) -> str | None:
    """Why another account than ``owner`` and root could change what ``path`` holds, or None.

    The rule for a module path: ``path`` and every folder above it belong to
    ``owner`` or root, and none can be written by group or others, except a
    folder with the sticky bit (as ``/tmp``) over something of ``owner``'s
    or root's: others cannot rename or replace that. A missing path is
    exposed where others can create it.
    """
    path = Path(os.path.abspath(path))
    chain = [path, *path.parents]
    mine = (0, owner)
    for i, p in enumerate(chain):
        try:
            info = os.lstat(p)
        except FileNotFoundError:
            continue
        mode = stat.S_IMODE(info.st_mode)
        if info.st_uid not in mine or mode & 0o022:
            try:
                below_ours = i > 0 and os.lstat(chain[i - 1]).st_uid in mine
            except FileNotFoundError:
                below_ours = False
            if not (info.st_mode & stat.S_ISVTX and below_ours):
                return f"{p} (uid {info.st_uid}, mode {mode:04o}) can be changed by others"
    return None


#: Run by another account: try to read, list, write and connect to each path; what worked.
ATTEMPTS = r"""
import json, os, socket, sys
done = {}
for path in json.loads(open(sys.argv[1]).read()):
    worked = []
    def attempt(name, fn):
        try:
            fn()
            worked.append(name)
        except Exception:
            pass
    if os.path.isdir(path):
        attempt("list", lambda: os.listdir(path))
        def create():
            mark = os.path.join(path, ".nobody-was-here")
            os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            os.unlink(mark)
        attempt("create in", create)
    else:
        attempt("read", lambda: open(path, "rb").read(1))
        attempt("append", lambda: open(path, "ab").close())
        def connect():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(5)
                s.connect(path)
        attempt("connect", connect)
    if worked:
        done[path] = worked
print(json.dumps(done))
"""


def attempts_as(account: str, paths: list, shared: Path) -> dict:
    """``{path: [what worked]}`` when ``account`` tries :data:`ATTEMPTS` on ``paths``.

    ``shared`` is a :func:`tests.support.accounts.shared_folder`: the account's
    home and the list of paths go there.
    """
    import sys

    from tests.support.accounts import home_of

    listing = shared / "paths.json"
    listing.write_text(json.dumps(sorted(map(str, paths))))
    listing.chmod(0o644)
    proc = run_as(account, [sys.executable, "-c", ATTEMPTS, listing], home_of(account, shared))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def holding(token: str) -> list:
    """Pids of live processes whose environment holds ``token`` (this process excepted)."""
    found = []
    needle = f"MHSA_EXPOSURE_TOKEN={token}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(int(pid))
    return found


__all__ = [
    "PROBE",
    "attempts_as",
    "exposed",
    "holding",
    "probe_env",
    "process_tree",
    "reports",
    "sockets",
]
