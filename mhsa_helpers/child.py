"""The child process that runs a learner's answers: values out, never verdicts.

This file imports nothing from the course, so that it can run as a plain
script inside a sandbox that contains neither the course's package, nor its
reference implementation, nor its checks: ``python child.py`` reads a
request on standard input, writes the results on standard output and
nothing else (what the answers print goes to ``/dev/null``).

The request is a pickled ``{"timeout": s, "memory": bytes or None}``
followed by one pickled job per notebook: ``(stem, answer sources,
mh source, forbidden names, [(key, name, calls)])``. Each job runs in a fork
of its own, with the time and memory limits, in a namespace with ``np`` and
``mh``: a module holding only the course functions the notebook may use
(``mh source``); asking it for a forbidden one raises an error that says so.
Jobs are read one at a time, so a notebook's process never holds what later
notebooks may use.

The result of each job is ``{"error": str or None, "events": [str],
"outcomes": {key: [(kind, value)]}}`` where kind is ``"value"`` (plain data:
arrays, numbers, strings, tuples, lists, ``{"opaque": type name}``) or
``"error"`` (a sentence about the learner's function).
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import pickle
import select
import signal
import struct
import sys
import time
import types
import warnings

REFERENCE_CALL = "instead of implementing it"
#: Characters of a learner's exception message kept in a result.
MESSAGE_LIMIT = 300
#: Numbers in one returned array sent back at most (every check's answer is far smaller).
ARRAY_LIMIT = 1 << 22


def clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters (a learner's message can be any size)."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + " … (cut)"


def plain(value):
    """``value`` reduced to arrays, numbers, strings, tuples and lists (safe to send back)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            return {"opaque": "ndarray of Python objects"}
        if value.size > ARRAY_LIMIT:
            return {"opaque": f"array of {value.size} numbers (far too large)"}
        return np.array(value, copy=True, subok=False)
    if isinstance(value, bool | int | float | complex | str | np.generic) or value is None:
        return value
    if type(value) in (tuple, list):
        return type(value)(plain(v) for v in value)
    return {"opaque": clip(type(value).__name__, 80)}


def _copy(x):
    """``x`` with every array in it (also inside tuples and lists) copied."""
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.copy()
    if type(x) in (tuple, list):
        return type(x)(_copy(v) for v in x)
    if type(x) is dict:
        return {k: _copy(v) for k, v in x.items()}
    return x


def _changed(kept, given) -> bool:
    """Whether ``given`` (what the function received) differs from the copy ``kept``."""
    import numpy as np

    if isinstance(kept, np.ndarray):
        return not (
            isinstance(given, np.ndarray)
            and given.shape == kept.shape
            and np.array_equal(given, kept, equal_nan=kept.dtype.kind in "fc")
        )
    if type(kept) in (tuple, list):
        return len(kept) != len(given) or any(
            _changed(k, g) for k, g in zip(kept, given, strict=False)
        )
    if type(kept) is dict:
        return any(_changed(kept[k], given.get(k)) for k in kept)
    return False


#: tracemalloc's functions as they were before any answer ran (an answer cannot swap them).
_TRACE = {}


def _tracing():
    if not _TRACE:
        import tracemalloc

        _TRACE.update(
            start=tracemalloc.start,
            peak=tracemalloc.get_traced_memory,
            stop=tracemalloc.stop,
            on=tracemalloc.is_tracing,
        )
    return _TRACE


def _invoke(fn, args, kwargs, guard, memory: bool):
    """``(value, peak traced bytes or None)`` of one call, around ``guard``."""
    trace = _tracing() if memory else None
    if trace:
        trace["start"]()
    try:
        if guard is None:
            value = fn(*args, **kwargs)
        else:
            with guard:
                value = fn(*args, **kwargs)
        peak = None
        if trace:
            if not trace["on"]():
                raise RuntimeError("memory tracing was stopped during the call")
            peak = trace["peak"]()[1]
        return value, peak
    finally:
        if trace:
            trace["stop"]()


#: Address space a measured call may add (the contract's bound is 32 MiB of traced memory).
APART_HEADROOM = 96 << 20


def _measured_apart(fn, args, kwargs):
    """One memory-measured call in a fork of its own: ``(value, peak, inputs changed)``.

    The fork may not grow its address space by more than :data:`APART_HEADROOM`,
    a bound the answer cannot lift or fool (unlike tracemalloc, which runs in
    its own process): a full (4096, 4096) matrix ends in MemoryError. The
    fork's answer is read with :class:`SafeUnpickler`; an exception comes back
    as the nearest built-in exception with its message.
    """
    import builtins
    import resource

    kept = _copy((args, kwargs))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            with open("/proc/self/statm") as f:
                size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            limit = size + APART_HEADROOM
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            try:
                value, peak = _invoke(fn, args, kwargs, None, True)
                message = ("value", plain(value), int(peak), _changed(kept, (args, kwargs)))
            except BaseException as exc:  # sent back, raised there again
                mro = [c.__name__ for c in type(exc).__mro__]
                message = ("raised", mro, clip(exc))
            data = pickle.dumps(message)
            with os.fdopen(write_end, "wb") as f:
                f.write(data)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read(64 << 20)
    os.waitpid(pid, 0)
    try:
        message = safe_loads(data)
    except Exception:
        raise RuntimeError("the measured call ended without an answer") from None
    if message[0] == "value":
        _, value, peak, changed = message
        return value, peak, changed
    _, mro, text = message
    for cls_name in mro:  # the nearest built-in class, so that `raises` still matches
        cls = getattr(builtins, str(cls_name), None)
        if isinstance(cls, type) and issubclass(cls, BaseException) and cls is not BaseException:
            if issubclass(cls, Exception):
                raise cls(text)
    raise RuntimeError(text)


def call_each(name: str, fn, calls, around=None, isolate: bool = False) -> list:
    """Call ``fn`` on each ``(args, kwargs[, options])``; stop at the first error.

    Inputs are copied (arrays inside tuples too). By default numpy warnings
    are silenced; ``options`` may ask for the extensions' contract:
    ``strict`` (warnings are errors, and a modified input is an error),
    ``raises`` (the name of the exception the call must raise: reported as
    ``("raised", "Name: message")``) and ``memory`` (report the call's
    peak of traced allocations: ``("measured", (value, peak bytes))``).
    With ``isolate`` (the grader's child), a measured call runs in a fork of
    its own under an address-space bound (:func:`_measured_apart`).
    ``around(call)``, if given, returns a context manager wrapped around each
    call whose ``error`` attribute, if set after the call, is reported
    instead of the value (the in-kernel check uses it to catch calls to the
    reference).
    """
    import numpy as np

    outcomes = []
    for call in calls:
        args, kwargs = call[0], call[1]
        options = call[2] if len(call) > 2 else {}
        strict, raises = options.get("strict", False), options.get("raises")
        args, kwargs = _copy(list(args)), _copy(dict(kwargs))
        kept = _copy((args, kwargs)) if strict else None
        guard = around() if around else None
        peak = None
        # strict: overflow, invalid value and divide by zero warn (and fail); underflow
        # never does, as exp of a very negative score is 0 in correct code too
        errstate = {"all": "warn", "under": "ignore"} if strict else {"all": "ignore"}
        with warnings.catch_warnings(), np.errstate(**errstate):
            warnings.simplefilter("error" if strict else "ignore")
            try:
                if options.get("memory") and isolate:
                    value, peak, changed = _measured_apart(fn, args, kwargs)
                    if changed:
                        args = None  # reported below as a modified input
                else:
                    value, peak = _invoke(fn, args, kwargs, guard, options.get("memory"))
            except NotImplementedError:
                message = (
                    f"{name} is not implemented yet: replace `raise NotImplementedError()` "
                    "with your code."
                )
                outcomes.append(("error", message))
                break
            except MemoryError:
                if not options.get("memory"):
                    raise
                message = (
                    f"{name} went far over the memory bound (a (T_q, T_k) matrix?); keep only "
                    "one block of scores, (T_q, block_size), at a time."
                )
                outcomes.append(("error", message))
                break
            except Exception as exc:  # the learner's error, reported with its message
                if raises and raises in [c.__name__ for c in type(exc).__mro__]:
                    outcomes.append(("raised", f"{raises}: {clip(exc)}"))
                    continue
                shown = ", ".join(_describe(a) for a in args)
                shown += "".join(f", {k}={_describe(v)}" for k, v in kwargs.items())
                message = f"{name}({clip(shown)}) raised {type(exc).__name__}: {clip(exc)}"
                if isinstance(exc, Warning):
                    message += " (in these checks a warning counts as an error)"
                outcomes.append(("error", message))
                break
        if guard is not None and guard.error:
            outcomes.append(("error", f"{name} {guard.error}"))
            break
        if strict and (args is None or _changed(kept, (args, kwargs))):
            outcomes.append(
                ("error", f"{name} modified an input in place; leave the inputs as they were.")
            )
            break
        if peak is not None:
            outcomes.append(("measured", (plain(value), int(peak))))
        else:
            outcomes.append(("value", plain(value)))
    return outcomes


def _describe(a) -> str:
    import numpy as np

    if isinstance(a, np.ndarray):
        return f"array of shape {a.shape}"
    if isinstance(a, np.random.Generator):
        return "rng"
    return repr(a)


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


def run_job(job) -> dict:
    """Run one notebook's answers and calls (inside its own fork)."""
    import numpy as np

    stem, sources, mh_source, forbidden, tests, _nonce = job
    genuine = {n: _lookup(np, n) for n in NUMPY_WATCHED}
    namespace = {"np": np, "mh": restricted_mh(mh_source, forbidden), "__name__": "__main__"}
    result = {"error": None, "events": [], "outcomes": {}}
    try:
        for source in sources:
            exec(compile(source, f"<{stem} answer>", "exec"), namespace)
    except BaseException as exc:  # any failure of the cells is the result
        result["error"] = f"the answer cells raise {type(exc).__name__}: {clip(exc)}"
        if isinstance(exc, MemoryError):
            result["events"].append("memory limit reached")
        return result
    if _numpy_patched(np, genuine):
        result["events"].append("numpy monkeypatched (no effect: the checks run elsewhere)")
    for key, name, calls in tests:
        fn = namespace.get(name)
        if not callable(fn):
            result["outcomes"][key] = "not defined"
            continue
        try:
            outcomes = call_each(name, fn, calls, isolate=True)
        except BaseException as exc:  # SystemExit and the like, raised by the answer
            outcomes = [("error", f"{name} raised {type(exc).__name__}: {clip(exc)}")]
        result["outcomes"][key] = outcomes
        for kind, text in outcomes:
            if kind == "error" and "MemoryError" in text:
                result["events"].append("memory limit reached")
            if kind == "error" and REFERENCE_CALL in text:
                result["events"].append("called the reference implementation")
    return result


class SafeUnpickler(pickle.Unpickler):
    """Loads arrays, numbers, strings, tuples, lists and dicts, and nothing else.

    Whatever an answer's process sends back is read with this: a crafted
    pickle cannot run code in the process that reads it.
    """

    ALLOWED = frozenset(
        {
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "scalar"),
            ("numpy.core.multiarray", "_reconstruct"),
            ("numpy.core.multiarray", "scalar"),
            ("numpy", "ndarray"),
            ("numpy", "dtype"),
            ("builtins", "complex"),
        }
    )

    def find_class(self, module, name):
        """Only the numpy and builtin names of :attr:`ALLOWED`."""
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refused to load {module}.{name}")
        return super().find_class(module, name)


def safe_loads(data: bytes):
    """Unpickle ``data`` with :class:`SafeUnpickler`."""
    return SafeUnpickler(io.BytesIO(data)).load()


def _forked(job, timeout: float, memory: int | None) -> dict:
    """Run one job in a fork with the limits; its death is reported, never fatal here.

    The fork leads a process group of its own; when it is done (or past its
    time, whatever it did to its alarm) the whole group is killed.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the notebook's own process
        os.close(read_end)
        try:
            # Nothing inherited but the result pipe: not the request (later notebooks'
            # jobs), not the channel to the parent (no forged results).
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.closerange(3, write_end)
            os.closerange(write_end + 1, 1 << 16)
            sys.stdout = sys.stderr = open(os.devnull, "w")  # the old objects' fds are closed
            os.setpgid(0, 0)
            if memory:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            signal.alarm(max(1, round(timeout)))
            result = run_job(job)
            result["nonce"] = job[-1]  # the parent's secret for this job: results can't be moved
            data = pickle.dumps(result)
            with os.fdopen(write_end, "wb") as f:
                f.write(data)
        finally:
            os._exit(0)
    os.close(write_end)
    chunks, deadline, late = [], time.monotonic() + timeout + 2, False
    with os.fdopen(read_end, "rb", buffering=0) as f:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([f], [], [], left)[0]:
                late = True
                break
            chunk = f.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    for target in (-pid, pid):  # the notebook's process group: daemons it left, too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if late or (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM):
        return {
            "error": f"timed out after {timeout:.0f} s (an endless loop?)",
            "events": ["a cell ran past the time limit (endless loop?)"],
        }
    if chunks:
        try:
            return safe_loads(b"".join(chunks))
        except Exception:  # garbage on the pipe is the notebook's own doing
            return {"error": "the answer cells garbled their results", "events": []}
    if os.WIFSIGNALED(status):
        return {"error": f"the answer cells crashed (signal {os.WTERMSIG(status)})", "events": []}
    return {"error": "the answer cells ended their process before the checks ran", "events": []}


def _read_exact(fd: int, size: int) -> bytes:
    """Exactly ``size`` bytes from ``fd`` (fewer only at the end): no read-ahead."""
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read(fd: int):
    """The next message on ``fd``, unbuffered: later messages stay in the pipe, unread."""
    header = _read_exact(fd, 8)
    if len(header) < 8:
        return None
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(_read_exact(fd, size))  # from the parent, which is trusted


def write_message(stream, obj) -> None:
    """One length-prefixed pickle on ``stream`` (what :func:`main` reads)."""
    data = pickle.dumps(obj)
    stream.write(struct.pack("<Q", len(data)) + data)


def main() -> None:
    """Read the request on stdin; write each job's result on stdout as it finishes."""
    stdin = os.dup(0)  # read unbuffered (see _read); forks get /dev/null instead
    out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # what the answers print goes nowhere, not into the results
    os.dup2(devnull, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    with contextlib.suppress(OSError, AttributeError):  # no debugger may attach to this process
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    import numpy  # noqa: F401 - imported once here, inherited by every fork

    _tracing()  # tracemalloc's own functions, taken before any answer runs

    limits = _read(stdin)
    while (job := _read(stdin)) is not None:
        result = _forked(job, limits["timeout"], limits["memory"])
        if result.get("nonce") is None:  # made here (timeout, crash): this process vouches
            result["nonce"] = job[-1]
        del job  # the next notebook's process never holds this one's inputs
        write_message(out, result)
        out.flush()


if __name__ == "__main__":
    main()
