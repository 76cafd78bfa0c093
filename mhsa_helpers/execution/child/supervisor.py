"""Supervising a notebook's processes: starting, limiting, watching and killing them.

:func:`start_notebook` forks a notebook's process with its limits (address
space, alarm, the seccomp filter of :mod:`.seccomp`) and nothing of the
child but its two pipes; :class:`NotebookProcess` is that process as the
main loop sees it (its deadlines, the memory and tasks its processes hold
together, why it ended). In the sandbox, :func:`sweep` kills every other
process and empties ``/tmp`` between notebooks.

Imports nothing of the course: it runs inside the child's sandbox.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import struct
import sys
import time

from .notebook import serve_notebook
from .seccomp import refuse_outside_memory
from .wire import MEMORY_EVENT, REPLY_LIMIT, pack_frame


def start_notebook(setup: bytes, limits: dict, fresh: bool) -> tuple[int, int, int]:
    """Fork a notebook's process; ``(pid, fd to send it requests, fd to read its replies)``.

    The process keeps nothing of this one but its two pipes: not the
    parent's channels (no forged replies, no later requests). It leads a
    process group of its own, so that whatever it starts dies with it.
    """
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the notebook's own process
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            low, high = sorted((requests_r, replies_w))
            os.closerange(3, low)
            os.closerange(low + 1, high)
            os.closerange(high + 1, 1 << 16)
            sys.stdout = sys.stderr = open(os.devnull, "w")  # the old objects' fds are closed
            os.setpgid(0, 0)
            with contextlib.suppress(OSError):  # where seccomp works: no memory outside limits
                refuse_outside_memory()
            if limits["memory"]:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (limits["memory"], limits["memory"]))
            signal.alarm(max(1, round(limits["timeout"])))
            serve_notebook(setup, requests_r, replies_w, fresh)
        finally:
            os._exit(0)
    os.close(requests_r)
    os.close(replies_w)
    return pid, requests_w, replies_r


#: Seconds between two looks at the memory a notebook's processes hold together.
WATCH_EVERY = 0.2


#: Processes and threads a notebook may run at once, all together.
TASK_LIMIT = 256


def _held() -> tuple[int, int]:
    """Bytes resident in, and threads of, every process this one sees but itself (the sandbox's)."""
    page, me, total, tasks = os.sysconf("SC_PAGE_SIZE"), os.getpid(), 0, 0
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry}/statm") as f:
                    total += int(f.read().split()[1]) * page
                tasks += len(os.listdir(f"/proc/{entry}/task"))
    return total, tasks


class NotebookProcess:
    """One notebook's process as the child's main loop sees it: its pipes and its deadlines.

    Its own deadline (the notebook's time limit, from its fork) holds for
    its whole life; a request may have a nearer one (:meth:`limit`).
    """

    def __init__(self, setup: bytes, limits: dict, fresh: bool = False):
        self.timeout = limits["timeout"]
        self.deadline = time.monotonic() + self.timeout + 2
        self.until, self.budgeted = self.deadline, False
        self.pid, self.requests, self.replies = start_notebook(setup, limits, fresh)
        self.dead, self.late, self.garbled, self.hog = None, False, False, ""
        self.status, self.maxrss = None, 0
        # in the sandbox every process but this one is the notebook's: they share the limits
        self.watch = bool(limits.get("contained"))
        self.memory = limits["memory"]
        os.set_blocking(self.requests, False)  # a process that stops reading cannot block us

    def limit(self, seconds: float | None) -> None:
        """Give the next request ``seconds`` from now (None: the notebook's deadline only)."""
        self.budgeted = seconds is not None
        until = time.monotonic() + seconds if self.budgeted else self.deadline
        self.until = min(self.deadline, until)

    def ask(self, kind: bytes, payload: bytes | None):
        """Send one request (``payload`` None: none, just read) and return the reply frame.

        ``("R", bytes)``: the process's reply, untouched; ``("S", dict)``: it
        timed out, crashed or ended, and is dead from now on.
        """
        if self.dead is not None:
            return b"S", self.dead
        if payload is not None:
            self._send(pack_frame(kind, payload))
        data = self._read() if not self.late else None
        if data is not None:
            return b"R", data
        self.dead = self._why()
        return b"S", self.dead

    def _send(self, data: bytes) -> None:
        """Write ``data`` to the process before the deadline (late: it stops reading)."""
        view = memoryview(data)
        while view:
            left = self.until - time.monotonic()
            if left <= 0 or not select.select([], [self.requests], [], left)[1]:
                self.late = True
                return
            try:
                view = view[os.write(self.requests, view) :]
            except BlockingIOError:
                continue
            except OSError:  # it has closed its end: the reply says why
                return

    def _read(self) -> bytes | None:
        """One reply frame's payload, or None (late, closed, oversized or garbled)."""
        header = self._exactly(9)
        if header is None:
            return None
        size = struct.unpack("<Q", header[:8])[0] - 1
        if header[8:9] != b"R" or not 0 <= size <= REPLY_LIMIT:
            self.garbled = True
            return None
        return self._exactly(size)

    def _exactly(self, size: int) -> bytes | None:
        chunks, look = [], time.monotonic() + WATCH_EVERY
        while size > 0:
            now = time.monotonic()
            if now >= self.until:
                self.late = True
                return None
            if self.watch and now >= look:  # by the clock, however the reply trickles in
                look = now + WATCH_EVERY
                if self._over() is not None:
                    return None
            until = min(self.until, look) if self.watch else self.until
            if not select.select([self.replies], [], [], max(0.0, until - now))[0]:
                continue
            chunk = os.read(self.replies, min(size, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _over(self) -> str | None:
        """Which shared limit the notebook's processes are over ("memory", "tasks"), if any."""
        held, tasks = _held()
        if self.memory and held > self.memory:
            self.hog = "memory"
        elif tasks > TASK_LIMIT:
            self.hog = "tasks"
        return self.hog or None

    def _why(self) -> dict:
        """Kill the process and its group; why it ended, as the parent reports it."""
        status = self.end()
        alarm = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM
        timed_out = getattr(self, "late", False) or alarm
        if timed_out and self.budgeted:  # whichever deadline came first: the parent's budget
            return {"error": "it ran over its time budget", "slow": True}
        if timed_out:
            return {
                "error": f"timed out after {self.timeout:.0f} s (an endless loop?)",
                "events": ["a cell ran past the time limit (endless loop?)"],
            }
        if self.hog == "memory":
            return {
                "error": f"its processes held more than {self.memory / 2**30:.1f} GiB of memory "
                "together",
                "events": [MEMORY_EVENT],
            }
        if self.hog == "tasks":
            return {"error": f"it started more than {TASK_LIMIT} processes and threads together"}
        if self.garbled:
            return {"error": "the answer cells garbled their results"}
        if os.WIFSIGNALED(status):
            return {"error": "the answer cells crashed (killed by a signal)"}  # never which
        return {"error": "the answer cells ended their process before the checks ran"}

    def end(self) -> int:
        """Kill the process's group (daemons it left, too); its wait status.

        Also keeps the process's peak of resident memory, as the kernel
        recorded it when the process ended (:attr:`maxrss`, bytes; 0 if
        unknown): nothing the process did can lower it.
        """
        for target in (-self.pid, self.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target, signal.SIGKILL)
        for fd in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.requests = self.replies = -1
        if self.status is None:
            try:
                _, self.status, usage = os.wait4(self.pid, 0)
                self.maxrss = usage.ru_maxrss * 1024
            except ChildProcessError:
                self.status = 0
        return self.status


def _ancestors() -> set:
    """This process and every process above it."""
    chain, pid = set(), os.getpid()
    while pid > 0 and pid not in chain:
        chain.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return chain


def sweep(limits: dict, spare: int | None = None) -> None:
    """Kill every process this one can see but itself, its ancestors and ``spare``; empty /tmp.

    Only with ``limits["contained"]``: the child then runs in a PID
    namespace of its own (the grader's sandbox), where the processes it sees
    are those the answers started, detached ones (``setsid``) included, and
    ``/tmp`` is the sandbox's own, its only writable place.
    """
    if not limits.get("contained"):
        return
    keep = _ancestors() | {spare}
    try:
        _kill_others(keep)
    finally:
        _empty(TMP)


#: The sandbox's only writable folder, emptied between notebooks.
TMP = "/tmp"


def _empty(folder: str) -> None:
    """Remove everything in ``folder`` (entries an answer made unreadable too)."""
    import shutil

    def unlock(function, path, _exc):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            function(path)

    with contextlib.suppress(OSError):
        os.chmod(folder, 0o1777)
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=unlock)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _kill_others(keep: set) -> None:
    for _ in range(3):
        others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]
        for pid in others:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in others:  # each reaped by its pid: a spared process's end is not taken
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        if not others:
            return


def resident_bytes() -> int:
    """This process's resident memory (``VmRSS``), in bytes (0 if unknown)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0
