"""The child's entry point and main loop: values out, never verdicts.

``python mhsa_helpers/execution`` (or the same folder inside the sandbox)
runs :func:`main`, which reads requests on standard input and writes replies
on standard output, nothing else (what the answers print goes to
``/dev/null``).

The parent drives it one call at a time
(:func:`mhsa_helpers.execution.in_child.run_in_child`). Every message is a
frame (:mod:`.wire`): its size, one kind byte, a pickle. The parent sends

* ``L`` once: the limits, ``{"timeout": s, "memory": bytes or None}``;
* ``N`` per notebook: ``(stem, answer sources, mh source, forbidden names)``.
  The child forks the notebook's process (:func:`.notebook.serve_notebook`),
  which runs the answer cells in a namespace with ``np`` and ``mh`` (a module
  holding only the course functions the notebook may use; asking it for a
  forbidden one raises an error that says so) and replies ``("ready", events)``;
* ``C`` per call: ``(function name, args, kwargs, options)``, forwarded to the
  notebook's process, which replies ``("outcome", raw outcome)``
  (:func:`.contract.call_one`);
* ``F`` per memory-measured call: the same, run in a **fresh** fork that runs
  the answer cells again and only then reads this one call: it has seen no
  other input. Before it reads the call it can no longer start a process
  (:func:`.seccomp.seal`) and its address space may grow by
  :data:`.notebook.APART_HEADROOM` only, a bound no answer code can lift,
  whatever it does to ``tracemalloc``. The parent sends these after the
  notebook's ``E``; in the sandbox (``"contained"`` in the limits) every
  other process is killed and ``/tmp`` emptied first, and again once the
  fresh process has run the cells, so nothing computed earlier can stand in
  for the call;
* ``E`` at the end of a notebook: the process replies ``("events", events)``
  and is killed with everything it started;
* ``B`` before any of these (the grader's): the seconds the next request may
  take, by this process's clock (:meth:`.supervisor.NotebookProcess.limit`),
  within the notebook's own time limit. A process over it is killed, and the
  reply says so (``"slow": True``): the parent decides what that costs.

In the sandbox this program is the PID namespace's first process: nothing
the answers start can signal it, and it is not dumpable, so nothing can
read its pipes through ``/proc``. It kills every other process and empties
``/tmp`` (the sandbox's only writable place) before each notebook, so that
nothing one notebook leaves reaches another, and stops a notebook whose
processes together hold more than the memory limit (:mod:`.supervisor`).

Each reply is an ``R`` frame (the answer process's own pickle, which the
parent reads with :class:`.wire.SafeUnpickler`) or an ``S`` frame (this
process's word: ``{"error": why, "events": [...]}`` when a notebook's
process timed out, crashed or ended; ``{"error": why, "slow": True}`` when
it ran out of time during a request that had a ``B`` budget). A notebook's
process never holds another call's inputs: it is forked before any call is
read, and each call's inputs are dropped when the call returns; it holds no
channel but its own two pipes.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import pickle
import signal
import struct
import sys

from .contract import tracing
from .supervisor import NotebookProcess, resident_bytes, sweep
from .wire import SafeUnpickler, pack_frame, read_exact, read_frame, skip, write_all


def main() -> None:
    """Serve the parent's requests on stdin, one at a time; reply on stdout."""
    stdin = os.dup(0)  # read unbuffered (see read_frame); forks get /dev/null instead
    out = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # what the answers print goes nowhere, not into the replies
    os.dup2(devnull, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    with contextlib.suppress(OSError, AttributeError):  # no debugger may attach to this process
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    # as a namespace's first process it gets only the signals it handles: it handles none
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import numpy  # noqa: F401 - imported once here, inherited by every fork

    tracing()  # tracemalloc's own functions, taken before any answer runs
    limits = pickle.loads(read_frame(stdin)[1])  # from the parent, which is trusted
    _serve_parent(stdin, out, limits)


def _serve_parent(stdin: int, out: int, limits: dict) -> None:
    """The main loop: start notebook processes and relay calls to them, one at a time.

    A request's payload is read only after the process that may see it
    exists: a notebook's process is forked before any of its calls is read,
    and a fresh process before the one call it runs, so no process holds
    inputs it was not given (this loop keeps none once relayed).
    """
    setup, process, seconds = None, None, None
    while True:
        header = read_exact(stdin, 9)
        if len(header) < 9:
            break
        kind, size = header[8:9], struct.unpack("<Q", header[:8])[0] - 1
        if kind == b"B":  # the next request's budget, from the parent (trusted): no reply
            seconds = float(pickle.loads(read_exact(stdin, size)))
            continue
        if kind == b"N":
            if process is not None:
                process.end()
            sweep(limits)
            setup = read_exact(stdin, size)
            process = NotebookProcess(setup, limits)
            process.limit(seconds)
            reply = process.ask(b"N", None)
        elif kind in (b"C", b"E") and process is not None:
            process.limit(seconds)
            reply = process.ask(kind, read_exact(stdin, size))
            if kind == b"E":
                process.end()
                process = None
        elif kind == b"F" and setup is not None:
            sweep(limits)  # no helper of earlier processes is left to compute for it
            base = resident_bytes()  # what the fresh process holds when it begins
            fresh = NotebookProcess(setup, limits, fresh=True)  # forked before the call is read
            fresh.limit(seconds)  # its cells and its call together
            reply = fresh.ask(b"N", None)  # its cells have run ("ready"), or why not
            if reply[0] == b"R" and _ready(reply[1]):
                sweep(limits, spare=fresh.pid)  # nor any its cells started
                reply = fresh.ask(b"C", read_exact(stdin, size))
                fresh.end()
                reply = _measured(reply, fresh.maxrss, base)
            else:
                skip(stdin, size)
            fresh.end()
        else:
            skip(stdin, size)
            reply = (b"S", {"error": "the child received a request out of order"})
        write_all(
            out, pack_frame(reply[0], reply[1] if reply[0] == b"R" else pickle.dumps(reply[1]))
        )
        del reply
        seconds = None  # a budget holds for one request only


def _measured(reply: tuple, maxrss: int, base: int) -> tuple:
    """A fresh process's reply to its measured call, with its resident growth put in.

    Taken here, from outside the process, where no answer code can forge
    it: the peak of resident memory the kernel recorded for the process when
    it ended (``maxrss``), over what this process held when it forked it
    (``base``). It counts whatever the cells hold or touched and whatever
    the call added, traced or not; -1 if the kernel said nothing.
    """
    if reply[0] != b"R":
        return reply
    try:
        kind, raw = SafeUnpickler(io.BytesIO(reply[1])).load()
        if kind != "outcome" or raw[0] != "measured":
            return reply
        value, traced = raw[1][0], raw[1][1]
        grown = max(0, maxrss - base) if maxrss else -1
        return b"R", pickle.dumps(("outcome", ("measured", (value, traced, grown))))
    except Exception:  # garbled: the parent says so
        return reply


def _ready(reply: bytes) -> bool:
    """Whether a notebook process's reply says its cells ran (``("ready", events)``)."""
    try:
        return SafeUnpickler(io.BytesIO(reply)).load()[0] == "ready"
    except Exception:  # a garbled reply: not ready
        return False
