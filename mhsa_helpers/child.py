"""The child process that runs a learner's answers: values out, never verdicts.

This file imports nothing from the course, so that it can run as a plain
script inside a sandbox that contains neither the course's package, nor its
reference implementation, nor its checks: ``python child.py`` reads requests
on standard input and writes replies on standard output, nothing else (what
the answers print goes to ``/dev/null``).

The parent drives it one call at a time (:func:`mhsa_helpers.run.run_answers`).
Every message is a frame (:func:`write_frame`): its size, one kind byte, a
pickle. The parent sends

* ``L`` once: the limits, ``{"timeout": s, "memory": bytes or None}``;
* ``N`` per notebook: ``(stem, answer sources, mh source, forbidden names)``.
  The child forks the notebook's process (:func:`_notebook`), which runs the
  answer cells in a namespace with ``np`` and ``mh`` (a module holding only
  the course functions the notebook may use; asking it for a forbidden one
  raises an error that says so) and replies ``("ready", events)``;
* ``C`` per call: ``(function name, args, kwargs, options)``, forwarded to the
  notebook's process, which replies ``("outcome", raw outcome)``
  (:func:`call_one`);
* ``F`` per memory-measured call: the same, run in a **fresh** fork that runs
  the answer cells again and only then reads this one call: it has seen no
  other input. Before it reads the call it can no longer start a process
  (:func:`_no_new_processes`) and its address space may grow by
  :data:`APART_HEADROOM` only, a bound no answer code can lift, whatever it
  does to ``tracemalloc``. The parent sends these after the notebook's
  ``E``; in the sandbox (``"contained"`` in the limits) every other process
  is killed and ``/tmp`` emptied first, and again once the fresh process has
  run the cells, so nothing computed earlier can stand in for the call;
* ``E`` at the end of a notebook: the process replies ``("events", events)``
  and is killed with everything it started;
* ``B`` before any of these (the grader's): the seconds the next request may
  take, by this process's clock (:meth:`_Process.limit`), within the
  notebook's own time limit. A process over it is killed, and the reply
  says so (``"slow": True``): the parent decides what that costs.

In the sandbox this program is the PID namespace's first process: nothing
the answers start can signal it, and it is not dumpable, so nothing can
read its pipes through ``/proc``. It kills every other process and empties
``/tmp`` (the sandbox's only writable place) before each notebook, so that
nothing one notebook leaves reaches another, and stops a notebook whose
processes together hold more than the memory limit.

Each reply is an ``R`` frame (the answer process's own pickle, which the
parent reads with :class:`SafeUnpickler`) or an ``S`` frame (this process's
word: ``{"error": why, "events": [...]}`` when a notebook's process timed
out, crashed or ended; ``{"error": why, "slow": True}`` when it ran out of
time during a request that had a ``B`` budget). A notebook's process never
holds another call's inputs: it is forked before any call is read, and each
call's inputs are dropped when the call returns; it holds no channel but its
own two pipes.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
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
#: The events a notebook's process may report (the parent drops any other words of it).
NUMPY_PATCHED = "numpy monkeypatched (no effect: the checks run elsewhere)"
MEMORY_EVENT = "memory limit reached"
NOTEBOOK_EVENTS = frozenset({NUMPY_PATCHED, MEMORY_EVENT})
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
    """``x`` with every array and random generator in it (also inside tuples and lists) copied."""
    import copy

    import numpy as np

    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, np.random.Generator):
        return copy.deepcopy(x)  # in the state it was given: a second call draws the same
    if type(x) in (tuple, list):
        return type(x)(_copy(v) for v in x)
    if type(x) is dict:
        return {k: _copy(v) for k, v in x.items()}
    return x


def _same(first, second) -> bool:
    """Whether two plain results (:func:`plain`) agree, to the last bits for floats."""
    import numpy as np

    if isinstance(first, np.ndarray) or isinstance(second, np.ndarray):
        a, b = np.asarray(first), np.asarray(second)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            with np.errstate(all="ignore"):
                return bool(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))
        return bool(np.array_equal(a, b))
    if type(first) in (tuple, list):
        return (
            type(first) is type(second)
            and len(first) == len(second)
            and all(_same(a, b) for a, b in zip(first, second, strict=True))
        )
    if isinstance(first, float) and isinstance(second, float) and first != first:
        return second != second  # NaN both times
    try:
        return bool(first == second)
    except Exception:  # an odd value that cannot be compared: the judge sees it anyway
        return True


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
    """``(value, peak or None)`` of one call, around ``guard``.

    The peak, when ``memory``, is ``(traced bytes, None)``: what answer
    code can tell about its own memory it can also forge, so the resident
    growth that bounds it is measured from outside, by the child
    (:func:`_measured`).
    """
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
            peak = trace["peak"]()[1]  # the resident growth: the child's to measure
        return value, peak
    finally:
        if trace:
            trace["stop"]()


#: Address space a measured call may add, its inputs included (the contract's bound is
#: 32 MiB of traced memory; this one holds whatever the call does to ``tracemalloc``).
APART_HEADROOM = 80 << 20


#: The flags of a generator's code (a resumed generator is a step of a loop, not a call).
_GENERATOR = 0x20 | 0x200  # CO_GENERATOR, CO_ASYNC_GENERATOR


class CallBound(Exception):
    """Raised into a counted call once it has made more Python function calls than its bound."""


class _Counted:
    """Around one call: counts the Python function calls it makes; past ``bound`` it stops it.

    Every function call counts (the answer's own functions, the course's
    ``mh`` functions, numpy's functions written in Python, comprehensions),
    whoever makes it, but a step of an iteration (a generator resumed, the
    next index of ``np.ndindex``): a backward pass makes a fixed number of
    them whatever the input's size (a loop over every entry, none per
    entry), central differences at least two per entry of the input.
    Past the bound the call is stopped (:class:`CallBound` is raised in
    it) and :attr:`error` says so, even if the answer catches the
    exception. Threads the call starts count too (``threading.setprofile``).
    ``inner`` (a guard such as the in-kernel reference watch) is entered
    first and still sees every event.
    """

    def __init__(self, inner, bound: int):
        self.inner, self.bound, self.count = inner, bound, 0
        self.over, self.changed, self.previous, self.hook = False, False, None, None
        self.threads = None
        import numpy as np

        self.steps = {np.ndindex.__next__.__code__}  # iteration, not a call of a function

    @property
    def error(self) -> str | None:
        """What the guarded call did wrong: the inner guard's word first, then the count's."""
        inner = getattr(self.inner, "error", None)
        if inner:
            return inner
        if self.over:
            return (
                f"made more than {self.bound} Python function calls (its own, the course's and "
                "numpy's) in one call, and the check stopped it"
            )
        if self.changed:
            return "changed the interpreter's profiler during the check."
        return None

    def _profile(self, frame, event, arg):
        code = frame.f_code
        if event == "call" and not code.co_flags & _GENERATOR and code not in self.steps:
            self.count += 1
            if self.count > self.bound and not self.over:
                self.over = True
                raise CallBound("too many function calls for a backward pass")
        if self.previous is not None:
            self.previous(frame, event, arg)

    def __enter__(self):
        if self.inner is not None:
            self.inner.__enter__()
        import threading

        self.previous, self.hook = sys.getprofile(), self._profile  # one bound method, kept
        self.threads = threading.getprofile()
        threading.setprofile(self.hook)  # the threads the call starts are counted too
        sys.setprofile(self.hook)

    def __exit__(self, *exc):
        import threading

        if sys.getprofile() is not self.hook and not self.over:
            self.changed = True
        sys.setprofile(self.previous)
        threading.setprofile(self.threads)
        if self.inner is not None:
            self.inner.__exit__(*exc)


def _out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` says the address space ran out (ENOMEM, from ``mmap`` for one)."""
    import errno

    return isinstance(exc, OSError) and exc.errno == errno.ENOMEM


def _over_bound(name: str) -> str:
    """What a memory-measured call that ran out of its address space is told."""
    return (
        f"{name} went far over the memory bound (a (T_q, T_k) matrix?); keep only one block "
        "of scores, (T_q, block_size), at a time."
    )


def _raised(exc: BaseException) -> str:
    """The class name of ``exc`` if it is a built-in exception, else its nearest built-in base."""
    import builtins

    for cls in type(exc).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return cls.__name__
    return "Exception"


def call_one(name: str, fn, call, guard=None) -> tuple:
    """Call ``fn`` (the learner's ``name``) once on ``call = (args, kwargs[, options])``.

    Returns the raw outcome: ``("value", plain value)``, ``("measured",
    (plain value, peak bytes))``, ``("raised", "Name: message")`` (an
    exception the call was asked to raise) or ``("error", sentence, code)``
    where ``code`` names what went wrong in a fixed vocabulary
    (``not-implemented``, ``memory``, ``modified``, ``reference``,
    ``warning``, ``calls``, ``raised:<built-in exception name>``), so that a judge can
    say it without quoting the learner.

    Inputs are copied (arrays inside tuples too). By default numpy warnings
    are silenced; ``options`` may ask for the contract: ``strict`` (warnings
    are errors, a modified input is an error, and the function is called a
    second time on the same inputs, which must give the same answer: code
    ``unstable`` otherwise), ``raises`` (the name of
    the exception the call must raise) and ``memory`` (report the call's peak
    of traced allocations) and ``calls`` (the Python function calls the call
    may make: past it, it is stopped and the outcome's code is ``calls``,
    see :class:`_Counted`). ``guard``, if given, is a context manager
    wrapped around the call whose ``error`` attribute, if set after the
    call, is reported instead of the value (the in-kernel check uses it to
    catch calls to the reference).
    """
    import numpy as np

    args, kwargs = call[0], call[1]
    options = call[2] if len(call) > 2 else {}
    strict = options.get("strict", False)
    bound = options.get("calls")
    counted = _Counted(guard, int(bound)) if bound else None
    args, kwargs = _copy(list(args)), _copy(dict(kwargs))
    kept = _copy((args, kwargs)) if strict else None
    # strict: overflow, invalid value and divide by zero warn (and fail); underflow
    # never does, as exp of a very negative score is 0 in correct code too
    errstate = {"all": "warn", "under": "ignore"} if strict else {"all": "ignore"}
    with warnings.catch_warnings(), np.errstate(**errstate):
        warnings.simplefilter("error" if strict else "ignore")
        try:
            value, peak = _invoke(fn, args, kwargs, counted or guard, options.get("memory"))
        except CallBound:
            return _stopped(name, guard, counted)
        except NotImplementedError:
            message = (
                f"{name} is not implemented yet: replace `raise NotImplementedError()` "
                "with your code."
            )
            return ("error", message, "not-implemented")
        except MemoryError:
            if not options.get("memory"):
                raise
            return ("error", _over_bound(name), "memory")
        except Exception as exc:  # the learner's error, reported with its message
            if counted is not None and counted.over:  # the bound's exception, caught and replaced
                return _stopped(name, guard, counted)
            failed = _failed(name, exc, args, kwargs, options)
            if failed[-1] == "warning":  # and what it gives when the warning is let pass
                failed += _quietly(fn, kept, guard)
            return failed
        if guard is not None and guard.error:
            return ("error", f"{name} {guard.error}", "reference")
        if counted is not None and counted.error:  # over its bound, or the profiler changed
            return _stopped(name, guard, counted)
        if strict and _changed(kept, (args, kwargs)):
            message = f"{name} modified an input in place; leave the inputs as they were."
            return ("error", message, "modified")
        if strict and not options.get("memory"):
            unstable = _again(name, fn, kept, guard, value)
            if unstable is not None:
                return unstable
    if peak is not None:
        return ("measured", (plain(value), int(peak)))
    return ("value", plain(value))


def _stopped(name: str, guard, counted: _Counted) -> tuple:
    """The raw outcome of a counted call a guard objects to: the reference first, then the count."""
    if guard is not None and guard.error:
        return ("error", f"{name} {guard.error}", "reference")
    if counted.over:
        return ("error", f"{name} {counted.error}", "calls")
    return ("error", f"{name} {counted.error}", "reference")  # the profiler was changed


def _failed(name: str, exc: Exception, args, kwargs, options: dict) -> tuple:
    """The raw outcome of a call that raised ``exc`` (asked for, or the learner's error)."""
    raises = options.get("raises")
    if options.get("memory") and _out_of_memory(exc):  # mmap refused by the bound
        return ("error", _over_bound(name), "memory")
    if raises and raises in [c.__name__ for c in type(exc).__mro__]:
        own = _raised_by_a_raise(exc, options.get("own", False))
        return ("raised", f"{raises}: {clip(exc)}", own)
    shown = ", ".join(_describe(a) for a in args)
    shown += "".join(f", {k}={_describe(v)}" for k, v in kwargs.items())
    message = f"{name}({clip(shown)}) raised {type(exc).__name__}: {clip(exc)}"
    code = f"raised:{_raised(exc)}"
    if isinstance(exc, Warning):
        message += " (in these checks a warning counts as an error)"
        code = "warning"
    elif options.get("memory") and isinstance(exc, PermissionError):
        message += " (a memory-measured call may not start a process)"
    return ("error", message, code)


def _quietly(fn, kept, guard) -> tuple:
    """``(plain value,)`` of ``fn`` on a fresh copy of the inputs ``kept``, warnings let pass.

    ``()`` if it raises: the value behind a warning lets the judge name the
    mistake that warns (an overflow, a mask added after the softmax).
    """
    import numpy as np

    args, kwargs = _copy(kept)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return (plain(_invoke(fn, args, kwargs, guard, False)[0]),)
        except Exception:
            return ()


#: Modules whose ``raise`` is not the learner's own check: the course's functions (``mh`` in
#: this process, ``mhsa_helpers`` in a kernel) and numpy's Python code.
_NOT_OWN = ("mh", "mhsa_helpers", "numpy")


def _raised_by_a_raise(exc: BaseException, own: bool = False) -> bool | None:
    """Whether ``exc`` came from a ``raise`` statement of Python code (a check of its own).

    Read from the bytecode of the innermost frame: the instruction that
    raised is a ``raise`` (``RAISE_VARARGS``), or numpy's or Python's error
    on the way (a call or an operator: a failed broadcast, ``range()`` with a
    step of 0). None when it cannot be told. With ``own`` (the call asked
    for a check of the function's own, ``options["own"]``), a ``raise``
    counts only outside :data:`_NOT_OWN`: not one of a course function it
    calls (``mh.attention_head`` refusing shapes), nor of numpy's Python code.
    """
    import dis

    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    code = tb.tb_frame.f_code.co_code
    if not 0 <= tb.tb_lasti < len(code):
        return None
    if dis.opname[code[tb.tb_lasti]] not in ("RAISE_VARARGS", "RERAISE"):
        return False
    module = str(tb.tb_frame.f_globals.get("__name__", ""))
    return not own or module.split(".", 1)[0] not in _NOT_OWN


def _again(name: str, fn, kept, guard, first) -> tuple | None:
    """None if ``fn`` gives ``first`` again on a fresh copy of the inputs ``kept``, else why not.

    Not for a call given a random generator: the check of such a function
    judges its draws itself (the same generator, the same weights).
    """
    import numpy as np

    if any(isinstance(a, np.random.Generator) for a in [*kept[0], *kept[1].values()]):
        return None
    args, kwargs = _copy(kept)
    try:
        again, _ = _invoke(fn, args, kwargs, guard, False)
    except Exception as exc:
        message = (
            f"{name} raised {type(exc).__name__} when called a second time with the same "
            f"inputs: {clip(exc)}"
        )
        return ("error", message, "unstable")
    if _same(plain(first), plain(again)):
        return None
    message = (
        f"{name} gave a different answer when called a second time with the same inputs: "
        "keep nothing between calls (a global that changes, a default argument that is "
        "modified, a cache)."
    )
    return ("error", message, "unstable")


def call_each(name: str, fn, calls, around=None) -> list:
    """:func:`call_one` on each call in turn, here; stop after the first error.

    ``around()``, if given, makes a fresh guard for each call (see
    :func:`call_one`).
    """
    outcomes = []
    for call in calls:
        outcomes.append(call_one(name, fn, call, around() if around else None))
        if outcomes[-1][0] == "error":
            break
    return outcomes


def _describe(a) -> str:
    import numpy as np

    if isinstance(a, np.ndarray):
        return f"array of shape {a.shape}"
    if isinstance(a, np.random.Generator):
        return "rng"
    if isinstance(a, tuple | list):  # a cache (K, V): its arrays by shape, never by repr
        inner = ", ".join(_describe(x) for x in a)
        return f"({inner})" if isinstance(a, tuple) else f"[{inner}]"
    if isinstance(a, np.generic):
        return repr(a.item())
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


#: Bytes of one reply of a notebook's process at the most (the parent reads no more either).
REPLY_LIMIT = 64 << 20


def _frame(kind: bytes, payload: bytes) -> bytes:
    return struct.pack("<Q", len(payload) + 1) + kind + payload


def write_frame(stream, kind: bytes, obj) -> None:
    """One frame on ``stream``: size, the kind byte, ``obj`` pickled (what :func:`main` reads)."""
    stream.write(_frame(kind, pickle.dumps(obj)))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _reply(fd: int, message) -> None:
    """Send ``message`` (pickled) as one ``R`` frame on ``fd``."""
    _write_all(fd, _frame(b"R", pickle.dumps(message)))


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


def _read_frame(fd: int) -> tuple[bytes, bytes] | None:
    """The next frame on ``fd`` as ``(kind, payload)``, unbuffered; None at the end."""
    header = _read_exact(fd, 9)
    if len(header) < 9:
        return None
    (size,) = struct.unpack("<Q", header[:8])
    return header[8:9], _read_exact(fd, size - 1)


def _skip(fd: int, size: int) -> None:
    """Read and drop ``size`` bytes of ``fd``."""
    while size > 0:
        size -= len(_read_exact(fd, min(size, 1 << 20))) or size


def main() -> None:
    """Serve the parent's requests on stdin, one at a time; reply on stdout."""
    stdin = os.dup(0)  # read unbuffered (see _read_frame); forks get /dev/null instead
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

    _tracing()  # tracemalloc's own functions, taken before any answer runs
    limits = pickle.loads(_read_frame(stdin)[1])  # from the parent, which is trusted
    _serve_parent(stdin, out, limits)


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


def _sweep(limits: dict, spare: int | None = None) -> None:
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


def _serve_parent(stdin: int, out: int, limits: dict) -> None:
    """The main loop: start notebook processes and relay calls to them, one at a time.

    A request's payload is read only after the process that may see it
    exists: a notebook's process is forked before any of its calls is read,
    and a fresh process before the one call it runs, so no process holds
    inputs it was not given (this loop keeps none once relayed).
    """
    setup, process, seconds = None, None, None
    while True:
        header = _read_exact(stdin, 9)
        if len(header) < 9:
            break
        kind, size = header[8:9], struct.unpack("<Q", header[:8])[0] - 1
        if kind == b"B":  # the next request's budget, from the parent (trusted): no reply
            seconds = float(pickle.loads(_read_exact(stdin, size)))
            continue
        if kind == b"N":
            if process is not None:
                process.end()
            _sweep(limits)
            setup = _read_exact(stdin, size)
            process = _Process(setup, limits)
            process.limit(seconds)
            reply = process.ask(b"N", None)
        elif kind in (b"C", b"E") and process is not None:
            process.limit(seconds)
            reply = process.ask(kind, _read_exact(stdin, size))
            if kind == b"E":
                process.end()
                process = None
        elif kind == b"F" and setup is not None:
            _sweep(limits)  # no helper of earlier processes is left to compute for it
            base = _resident()  # what the fresh process holds when it begins
            fresh = _Process(setup, limits, fresh=True)  # forked before the call is read
            fresh.limit(seconds)  # its cells and its call together
            reply = fresh.ask(b"N", None)  # its cells have run ("ready"), or why not
            if reply[0] == b"R" and _ready(reply[1]):
                _sweep(limits, spare=fresh.pid)  # nor any its cells started
                reply = fresh.ask(b"C", _read_exact(stdin, size))
                fresh.end()
                reply = _measured(reply, fresh.maxrss, base)
            else:
                _skip(stdin, size)
            fresh.end()
        else:
            _skip(stdin, size)
            reply = (b"S", {"error": "the child received a request out of order"})
        _write_all(out, _frame(reply[0], reply[1] if reply[0] == b"R" else pickle.dumps(reply[1])))
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
        code = f"raised:{_raised(exc)}" if isinstance(exc, Exception) else "exit"
        return ("outcome", ("error", f"{name} raised {type(exc).__name__}: {clip(exc)}", code))


#: Per machine: seccomp's audit architecture and the system calls' numbers (None: it has none).
_SYSCALLS = {
    "x86_64": {
        "arch": 0xC000003E,
        "seccomp": 317,
        "mmap": 9,
        "clone": 56,
        "fork": 57,
        "vfork": 58,
        "clone3": 435,
        "open": 2,
        "creat": 85,
        "openat": 257,
        "openat2": 437,
        "memfd_create": 319,
        "memfd_secret": 447,
        "shmget": 29,
        "msgget": 68,
        "semget": 64,
        "mq_open": 240,
        "add_key": 248,
        "request_key": 249,
        "keyctl": 250,
    },
    "aarch64": {
        "arch": 0xC00000B7,
        "seccomp": 277,
        "mmap": 222,
        "clone": 220,
        "fork": None,
        "vfork": None,
        "clone3": 435,
        "open": None,
        "creat": None,
        "openat": 56,
        "openat2": 437,
        "memfd_create": 279,
        "memfd_secret": 447,
        "shmget": 194,
        "msgget": 186,
        "semget": 190,
        "mq_open": 180,
        "add_key": 217,
        "request_key": 218,
        "keyctl": 219,
    },
}
#: Memory and channels outside every limit: anonymous files, System V and POSIX IPC, keys.
#: Refused to every notebook's process (they outlive a process, or escape its address space).
_OUTSIDE = ("memfd_create", "memfd_secret", "shmget", "msgget", "semget", "mq_open")
_OUTSIDE += ("add_key", "request_key", "keyctl")
#: Opening flags that write or create: O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND.
_WRITING = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000
_EPERM, _ENOSYS, _ALLOW = 0x00050001, 0x00050026, 0x7FFF0000


def _refuse(rules: list) -> None:
    """Install a seccomp filter, for every thread of this process and all it starts.

    ``rules`` holds ``(system call, errno action, condition)``; the
    condition is None (always), ``("set", arg, mask)`` (refused when the
    low word of argument ``arg`` has a bit of ``mask``) or ``("clear", arg,
    mask)`` (refused when it has none). A system call of another
    architecture's numbering (the 32-bit entry points, x32) is refused too.
    Raises OSError where the machine or the kernel cannot.
    """
    numbers = _SYSCALLS.get(os.uname().machine)
    if numbers is None:
        raise OSError(f"no seccomp numbers for {os.uname().machine}")
    load, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    program = [
        (load, 0, 0, 4),  # the architecture
        (jeq, 1, 0, numbers["arch"]),
        (ret, 0, 0, _EPERM),
        (load, 0, 0, 0),  # the system call's number
        (jge, 0, 1, 0x40000000),  # x32's numbering
        (ret, 0, 0, _EPERM),
    ]
    for call, action, condition in rules:
        number = numbers[call]
        if number is None:
            continue
        if condition is None:
            program += [(load, 0, 0, 0), (jeq, 0, 1, number), (ret, 0, 0, action)]
            continue
        kind, arg, mask = condition
        program += [
            (load, 0, 0, 0),
            (jeq, 0, 3, number),
            (load, 0, 0, 16 + 8 * arg),  # the argument's low word (little-endian)
            (jset, 0, 1, mask) if kind == "set" else (jset, 1, 0, mask),
            (ret, 0, 0, action),
        ]
    program.append((ret, 0, 0, _ALLOW))

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte)]
        _fields_ += [("k", ctypes.c_uint)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*f) for f in program])
    libc = ctypes.CDLL(None, use_errno=True)
    prog = Program(len(program), filters)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "no_new_privs refused")
    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC: every thread, prog)
    if libc.syscall(numbers["seccomp"], 1, 1, ctypes.byref(prog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter refused")


def _no_outside_memory() -> None:
    """Refuse :data:`_OUTSIDE`, and shared mappings, to this process and all it starts.

    Pages of a shared mapping outlive what resident memory counts of the
    process (``madvise`` drops them from it, the data stays).
    """
    rules = [(call, _EPERM, None) for call in _OUTSIDE]
    _refuse([*rules, ("mmap", _EPERM, ("set", 3, 0x01))])  # MAP_SHARED (and _VALIDATE)


def _sealed() -> None:
    """Refuse this process (and its threads) any new process and any file opened to write.

    ``fork``, ``vfork`` and a ``clone`` without ``CLONE_THREAD`` fail with
    EPERM, ``clone3`` and ``openat2`` with ENOSYS (the C library falls back
    to ``clone`` and ``openat``), ``open``, ``openat`` and ``creat`` with a
    writing flag with EPERM. Threads may still be made: they share this
    process's memory, which is measured.
    """
    thread, writing = 0x00010000, _WRITING
    _refuse(
        [
            ("clone3", _ENOSYS, None),
            ("openat2", _ENOSYS, None),
            ("fork", _EPERM, None),
            ("vfork", _EPERM, None),
            ("creat", _EPERM, None),
            ("clone", _EPERM, ("clear", 0, thread)),
            ("open", _EPERM, ("set", 1, writing)),
            ("openat", _EPERM, ("set", 2, writing)),
        ]
    )


def _keep_only(*fds: int) -> None:
    """Close every file descriptor of this process but 0, 1, 2 and ``fds``."""
    for entry in os.listdir("/proc/self/fd"):
        fd = int(entry)
        if fd > 2 and fd not in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _resident() -> int:
    """This process's resident memory (``VmRSS``), in bytes (0 if unknown)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _bound_address_space() -> None:
    """Let this process grow by :data:`APART_HEADROOM` at most from now on."""
    import resource

    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = size + APART_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _notebook(setup: bytes, requests: int, replies: int, fresh: bool) -> None:
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
        _reply(replies, ("failed", failed, events))
        return
    gc.freeze()  # what exists now holds no input: each call's collection skips it
    if fresh:  # no helper computes for the call, no memory beyond the bound holds its work
        _keep_only(requests, replies)  # no file the cells opened
        with contextlib.suppress(OSError):  # a kernel without seccomp: the bound still holds
            _sealed()  # no process, no file to write
        _bound_address_space()
    _reply(replies, ("ready", _events(np, genuine)))
    while (frame := _read_frame(requests)) is not None:
        if frame[0] == b"E":
            _reply(replies, ("events", _events(np, genuine)))
            return
        reply = _serve(namespace, frame[1])
        del frame
        gc.collect()  # what the call left in cycles is gone before the next one is read
        _reply(replies, reply)
        del reply
        if fresh:
            return


def _start(setup: bytes, limits: dict, fresh: bool) -> tuple[int, int, int]:
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
                _no_outside_memory()
            if limits["memory"]:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (limits["memory"], limits["memory"]))
            signal.alarm(max(1, round(limits["timeout"])))
            _notebook(setup, requests_r, replies_w, fresh)
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


class _Process:
    """One notebook's process as the child's main loop sees it: its pipes and its deadlines.

    Its own deadline (the notebook's time limit, from its fork) holds for
    its whole life; a request may have a nearer one (:meth:`limit`).
    """

    def __init__(self, setup: bytes, limits: dict, fresh: bool = False):
        self.timeout = limits["timeout"]
        self.deadline = time.monotonic() + self.timeout + 2
        self.until, self.budgeted = self.deadline, False
        self.pid, self.requests, self.replies = _start(setup, limits, fresh)
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
            self._send(_frame(kind, payload))
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


if __name__ == "__main__":
    main()
