"""The parent's end of the pipe to the child: starting it, one request and one reply at a time.

:class:`Channel` starts the child program (without the grader's key in its
environment), writes requests as frames (:mod:`.child.wire`) and reads each
reply within a deadline and a byte limit, unpickled safely; a child that
stops answering raises :class:`ChildFailed`.
"""

from __future__ import annotations

import contextlib
import os
import select
import struct
import subprocess
import threading
import time
from typing import Any

from .child.wire import REPLY_LIMIT, safe_loads, write_frame

__all__ = ["CHILD_GRACE", "RESULT_LIMIT", "TOO_LARGE", "Channel", "ChildFailed", "too_large"]


#: Bytes read from the child for one notebook at the most (a legit result is far below 1 MB).
RESULT_LIMIT = 64 << 20
#: Stands for a reply read but not kept: it would have passed the notebook's :data:`RESULT_LIMIT`.
TOO_LARGE = ("too large",)


def too_large(name: str) -> tuple:
    """The raw outcome of a call of ``name`` whose reply was :data:`TOO_LARGE`."""
    limit = f"{RESULT_LIMIT >> 20} MiB"
    return ("error", f"{name}: its results are too large to check (over {limit}).", "garbled")


class ChildFailed(RuntimeError):
    """The child itself stopped answering (nothing a notebook's answers can cause)."""


#: Seconds the child may reply after a request's budget (to kill and sweep) before it counts
#: as failed itself.
CHILD_GRACE = 30.0


class Channel:
    """The child process, and one request/reply exchange with it at a time."""

    def __init__(self, argv: list, budget: float, reply_wait: float):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MHSA_")}  # the key
        env.update(OPENBLAS_NUM_THREADS="1", MPLBACKEND="agg")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self.killer = threading.Timer(budget, self.proc.kill)  # the whole run's last resort
        self.killer.start()
        self.reply_wait, self.read = reply_wait, 0

    def close(self) -> None:
        """Stop the child and its timer."""
        self.killer.cancel()
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        self.proc.kill()
        self.proc.stdout.close()
        self.proc.wait()

    def send(self, kind: bytes, obj) -> None:
        """One request."""
        try:
            write_frame(self.proc.stdin, kind, obj)
            self.proc.stdin.flush()
        except OSError as exc:
            raise ChildFailed(type(exc).__name__) from None

    def ask(self, kind: bytes, obj, seconds: float | None = None) -> tuple[bytes, Any]:
        """One request and its reply: ``(b"R" or b"S", the unpickled reply or None if garbled)``.

        With ``seconds``, the child gives the request that long (a ``B``
        request first) and is waited for that long and :data:`CHILD_GRACE`.
        """
        wait = self.reply_wait
        if seconds is not None:
            self.send(b"B", float(seconds))
            wait = min(wait, seconds + CHILD_GRACE)
        self.send(kind, obj)
        header = self._exactly(9, wait)
        size = struct.unpack("<Q", header[:8])[0] - 1
        if header[8:9] not in (b"R", b"S") or not 0 <= size <= REPLY_LIMIT:
            raise ChildFailed("an oversized or malformed reply")
        if size > RESULT_LIMIT - self.read:  # over the notebook's limit: read, never kept
            kept = self.read
            while size > 0:
                size -= len(self._exactly(min(size, 1 << 20), wait))
            self.read = kept
            return header[8:9], TOO_LARGE
        data = self._exactly(size, wait)
        try:
            return header[8:9], safe_loads(data)
        except Exception:  # garbage from a notebook's process: that notebook's doing
            return header[8:9], None

    def _exactly(self, size: int, wait: float) -> bytes:
        fd, chunks, deadline = self.proc.stdout.fileno(), [], time.monotonic() + wait
        while size > 0:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise ChildFailed("no reply in time")
            chunk = os.read(fd, min(size, 1 << 20))
            if not chunk:
                raise ChildFailed("it ended early")
            chunks.append(chunk)
            size -= len(chunk)
            self.read += len(chunk)
        return b"".join(chunks)
