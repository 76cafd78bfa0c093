"""The body of one notebook's process: run the answer cells, then serve calls one at a time.

The cells run in a namespace with ``np`` and ``mh`` (:func:`restricted_mh`: a
module holding only the course functions the notebook may use); each call
request is answered by :func:`.contract.call_one`, and the process reports
what it saw done to numpy (:data:`.wire.NOTEBOOK_EVENTS`). Forked and limited
by :mod:`.supervisor`.

Imports nothing of the course: it runs inside the child's sandbox.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import types

from .contract import call_one, clip, raised_name
from .seccomp import seal
from .wire import MEMORY_EVENT, NUMPY_PATCHED, REFERENCE_CALL, read_frame, send_reply

#: Address space a measured call may add, its inputs included (the contract's bound is
#: 32 MiB of traced memory; this one holds whatever the call does to ``tracemalloc``).
APART_HEADROOM = 80 << 20


def restricted_mh(source: str, forbidden) -> types.ModuleType:
    """A module ``mh`` from ``source``; a forbidden name raises an error that says why."""
    mh = types.ModuleType("mh", "The course's functions that this notebook may use.")
    exec(compile(source, "<mh>", "exec"), mh.__dict__)
    blocked = frozenset(forbidden)

    def __getattr__(attr):
        if attr in blocked:
            raise AttributeError(
                f"mh.{attr} is this exercise's own or a later step: the answer calls the "
                f"course's reference {REFERENCE_CALL}; write the computation yourself."
            )
        raise AttributeError(
            f"mh.{attr} is not one of the course's functions this notebook may use "
            f"({REFERENCE_CALL} is not allowed)."
        )

    mh.__getattr__ = __getattr__
    return mh


NUMPY_WATCHED = ("allclose", "isclose", "array_equal", "asarray", "testing.assert_allclose")


def _lookup(module, path: str):
    for part in path.split("."):
        module = getattr(module, part, None)
    return module


def _numpy_patched(np, genuine: dict) -> bool:
    return any(_lookup(np, n) is not f for n, f in genuine.items())


def _run_cells(stem: str, sources, mh_source: str, forbidden) -> tuple[dict, str | None]:
    """Run the answer cells in a fresh namespace: ``(namespace, why they failed or None)``."""
    import numpy as np

    namespace = {"np": np, "mh": restricted_mh(mh_source, forbidden), "__name__": "__main__"}
    try:
        for source in sources:
            exec(compile(source, f"<{stem} answer>", "exec"), namespace)
    except BaseException as exc:  # any failure of the cells is the result
        return namespace, f"the answer cells raise {type(exc).__name__}: {clip(exc)}"
    return namespace, None


def _events(np, genuine: dict) -> list:
    """What the grader reports of a notebook's process so far."""
    if _numpy_patched(np, genuine):
        return [NUMPY_PATCHED]
    return []


def _serve(namespace: dict, request: bytes) -> tuple:
    """The reply to one call's pickled request; none of its inputs outlives this frame."""
    name, args, kwargs, options = pickle.loads(request)  # from the parent, which is trusted
    fn = namespace.get(name)
    if not callable(fn):
        return ("undefined",)
    try:
        return ("outcome", call_one(name, fn, (args, kwargs, options)))
    except BaseException as exc:  # MemoryError, SystemExit and the like, raised by the answer
        code = f"raised:{raised_name(exc)}" if isinstance(exc, Exception) else "exit"
        return ("outcome", ("error", f"{name} raised {type(exc).__name__}: {clip(exc)}", code))


def _keep_only(*fds: int) -> None:
    """Close every file descriptor of this process but 0, 1, 2 and ``fds``."""
    for entry in os.listdir("/proc/self/fd"):
        fd = int(entry)
        if fd > 2 and fd not in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _bound_address_space() -> None:
    """Let this process grow by :data:`APART_HEADROOM` at most from now on."""
    import resource

    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = size + APART_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def serve_notebook(setup: bytes, requests: int, replies: int, fresh: bool) -> None:
    """The body of a notebook's process: run the cells, then serve calls one at a time.

    It reads requests on the pipe ``requests`` only after the cells have run,
    one at a time, and answers on ``replies``. With ``fresh`` it serves
    exactly one memory-measured call: once the cells have run it can start no
    process and its address space can grow by :data:`APART_HEADROOM` only.
    """
    import numpy as np

    genuine = {n: _lookup(np, n) for n in NUMPY_WATCHED}
    namespace, failed = _run_cells(*pickle.loads(setup))
    del setup
    if failed is not None:
        events = [MEMORY_EVENT] if "MemoryError" in failed else []
        send_reply(replies, ("failed", failed, events))
        return
    gc.freeze()  # what exists now holds no input: each call's collection skips it
    if fresh:  # no helper computes for the call, no memory beyond the bound holds its work
        _keep_only(requests, replies)  # no file the cells opened
        with contextlib.suppress(OSError):  # a kernel without seccomp: the bound still holds
            seal()  # no process, no file to write
        _bound_address_space()
    send_reply(replies, ("ready", _events(np, genuine)))
    while (frame := read_frame(requests)) is not None:
        if frame[0] == b"E":
            send_reply(replies, ("events", _events(np, genuine)))
            return
        reply = _serve(namespace, frame[1])
        del frame
        gc.collect()  # what the call left in cycles is gone before the next one is read
        send_reply(replies, reply)
        del reply
        if fresh:
            return
