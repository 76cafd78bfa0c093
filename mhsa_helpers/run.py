"""Run a learner's answer cells in a child process; return values, never verdicts.

The parent (the progress report, the grader) drives the child
(:mod:`mhsa_helpers.child`, a script that imports nothing of the course) one
request at a time: a notebook's answer cells and the source of the course
functions it may use through ``mh``, then each call's inputs, only when that
call runs. The reference and the checks never enter the child, and no
process of the child ever holds the inputs of a call it has not been given
(a memory-measured call runs in a fresh process that has seen no other).
The child returns what the learner's functions gave, as plain data
(:class:`Outcome`); the checks judge it against the reference in the parent
(:func:`mhsa_helpers.checks.judge`). This module knows nothing of the
checks: it runs the requests it is handed (:class:`Job`).

Nothing the answers do to modules, numpy or the interpreter reaches a
verdict, and the grader can run the child in a sandbox that holds nothing
else (:mod:`autograders.sandbox`).
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import os
import select
import struct
import subprocess
import sys
import threading
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import child, reference
from .budget import CELLS_ALLOWANCE, FACTOR, Budget
from .exercises import exercise, forbidden, names

__all__ = [
    "CHILD",
    "ERROR_CODES",
    "SPENT",
    "Job",
    "NotebookResult",
    "Opaque",
    "Outcome",
    "mh_source",
    "outcomes_of",
    "run_answers",
]

#: The child program, run as a plain script.
CHILD = Path(child.__file__)


@dataclass(frozen=True)
class Opaque:
    """Stands for a returned object that is neither a numeric array, a number nor a tuple."""

    type_name: str


#: What went wrong in a call, in the child's fixed vocabulary (``raised:<built-in name>`` too).
ERROR_CODES = frozenset(
    {
        "not-implemented",
        "memory",
        "modified",
        "unstable",
        "reference",
        "warning",
        "calls",
        "exit",
        "crashed",
        "garbled",
        "slow",
        "spent",
    }
)


@dataclass(frozen=True)
class Outcome:
    """What one call of the learner's function gave: a value, or an error sentence.

    A call that warned (``code`` "warning") may carry the value it gives
    when the warning is let pass, so that the judge can name the mistake.
    """

    value: Any = None
    error: str | None = None
    #: "Name: message" of the exception a call asked to raise, raised as asked.
    raised: str | None = None
    #: Whether that exception came from a ``raise`` of the learner's (None: unknown).
    raised_here: bool | None = None
    #: Peak bytes of traced allocations during the call, where measured.
    peak: int | None = None
    #: For a call run in a fresh process: the growth of that process's resident memory
    #: from its fork to its peak, in bytes, as the kernel recorded it (-1: unknown).
    resident: int | None = None
    #: What went wrong, when ``error`` is set: one of :data:`ERROR_CODES` or
    #: ``raised:<built-in exception name>``; None if the child's word was not one of them.
    code: str | None = None


@dataclass
class Job:
    """One notebook's answer cells and the calls to run on them.

    Attributes
    ----------
    stem : str
        The notebook, e.g. ``"07_softmax"``.
    sources : list of str
        Its answer cells, in order.
    tests : list of (key, str, list)
        ``(key, exercise, requests)``: the calls to make of the learner's
        function ``exercise``, each ``(args, kwargs, options)``
        (:meth:`mhsa_helpers.checks.Check.requests`); the result is filed
        under ``key``.
    """

    stem: str
    sources: list
    tests: list


@dataclass
class NotebookResult:
    """What the child reports for one notebook.

    ``error`` says why nothing could be run (the answer cells raised, the
    notebook timed out, ran out of memory or ended its process); otherwise
    ``outcomes[key]`` holds the outcome of every call made, or the string
    ``"not defined"``. ``events`` name what the grader reports (time limit,
    memory, calls to the reference …); ``unverifiable`` is set when the
    child itself could not run (nothing the answers did).
    """

    error: str | None = None
    outcomes: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    unverifiable: bool = False


# --------------------------------------------------------------------------
# what a notebook may use: the source of its allowed functions, nothing else
# --------------------------------------------------------------------------
def _needed(names_: set) -> list:
    """The reference functions ``names_`` and the module-level functions they call, in source order.

    A called name is looked up where the calling function is defined, so the
    helpers of every module of the reference package are found; all of them
    go into one module, where no two may share a name.
    """
    found, todo = {}, [getattr(reference, name) for name in names_]
    while todo:
        fn = todo.pop()
        if fn.__name__ in found:
            if found[fn.__name__] is not fn:
                raise ValueError(f"two reference functions are named {fn.__name__}: one mh each.")
            continue
        found[fn.__name__] = fn
        codes = [fn.__code__]
        while codes:  # the function's own code and the code nested in it (comprehensions …)
            code = codes.pop()
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            todo += [
                f
                for n in code.co_names
                if isinstance(f := fn.__globals__.get(n), types.FunctionType)
            ]
    return sorted(found.values(), key=lambda f: (f.__module__, f.__code__.co_firstlineno))


def mh_source(allowed) -> str:
    """Python source of a module with the reference functions ``allowed`` and their helpers."""
    parts = ["import numbers\n\nimport numpy as np\n"]
    parts += [inspect.getsource(fn) for fn in _needed(set(allowed))]
    return "\n\n".join(parts)


def _mh_of(exercises) -> tuple[str, frozenset]:
    """The ``mh`` of a notebook: what its exercises may use, and what they may not."""
    allowed = set(names())
    blocked = set()
    for name in exercises:
        allowed &= set(exercise(name).may_use)
        blocked |= forbidden(name)
    return mh_source(allowed), frozenset(blocked)


# --------------------------------------------------------------------------
# reading what the child sends: untrusted, checked
# --------------------------------------------------------------------------
#: Bytes read from the child for one notebook at the most (a legit result is far below 1 MB).
RESULT_LIMIT = 64 << 20
#: Stands for a reply read but not kept: it would have passed the notebook's :data:`RESULT_LIMIT`.
TOO_LARGE = ("too large",)
#: Containers, numbers and strings the outcomes of one test may hold at the most.
NODE_LIMIT = 10_000
#: What arrays of other kinds than numbers and booleans are called in a message.
_ARRAY_KINDS = {"M": "dates", "m": "time spans", "U": "strings", "S": "bytes", "V": "records"}


def _text(value) -> str:
    """A string from the child, one line, no control characters, clipped."""
    text = "".join(c if c.isprintable() else " " for c in str(value))
    return child.clip(text)


def _decode(value, budget: list, depth: int = 0):
    """The child's plain value, checked: bounded size and depth, numeric arrays only."""
    import numpy as np

    budget[0] -= 1
    if budget[0] < 0 or depth > 8:
        raise ValueError("a result too deep or too large")
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject or value.size > child.ARRAY_LIMIT:
            return Opaque("an array that cannot be checked")
        if value.dtype.kind not in "biufc":
            return Opaque(f"an array of {_ARRAY_KINDS.get(value.dtype.kind, 'other things')}")
        return value
    if isinstance(value, dict):
        return Opaque(_text(value.get("opaque", "dict")))
    if isinstance(value, str):
        return _text(value)
    if type(value) in (tuple, list):
        return type(value)(_decode(v, budget, depth + 1) for v in value)
    if isinstance(value, bool | int | float | complex | np.generic) or value is None:
        return value
    return Opaque(_text(type(value).__name__))


def _code(value) -> str | None:
    """An error code from the child, if it is one of the vocabulary's."""
    if not isinstance(value, str):
        return None
    if value in ERROR_CODES:
        return value
    kind, _, name = value.partition(":")
    cls = getattr(builtins, name, None)
    if kind == "raised" and isinstance(cls, type) and issubclass(cls, BaseException):
        return value
    return None


def _count(value) -> int | None:
    """A count of bytes from the child: an int, None if absent, -1 if malformed."""
    if value is None:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def outcomes_of(raw) -> list[Outcome]:
    """The child's raw outcomes (:func:`mhsa_helpers.child.call_one`) as :class:`Outcome` objects.

    Checked: a malformed entry becomes an error outcome, and the whole is
    decoded within :data:`NODE_LIMIT` (a ValueError beyond it).
    """
    budget = [NODE_LIMIT]
    out = []
    for entry in list(raw)[:64]:
        kind, value = (entry[0], entry[1]) if isinstance(entry, tuple) and entry else (None, None)
        if kind == "value":
            out.append(Outcome(value=_decode(value, budget)))
        elif kind == "measured" and isinstance(value, tuple) and len(value) in (2, 3):
            peak, resident = (_count(v) for v in (*value[1:], None)[:2])
            out.append(Outcome(value=_decode(value[0], budget), peak=peak, resident=resident))
        elif kind == "raised":
            own = entry[2] if len(entry) > 2 and isinstance(entry[2], bool) else None
            out.append(Outcome(raised=_text(value), raised_here=own))
        else:
            code = _code(entry[2]) if isinstance(entry, tuple) and len(entry) > 2 else None
            behind = _decode(entry[3], budget) if code == "warning" and len(entry) > 3 else None
            out.append(Outcome(value=behind, error=_text(value), code=code))
    return out


# --------------------------------------------------------------------------
# talking to the child: one request, one reply
# --------------------------------------------------------------------------
class ChildFailed(RuntimeError):
    """The child itself stopped answering (nothing a notebook's answers can cause)."""


#: Seconds the child may reply after a request's budget (to kill and sweep) before it counts
#: as failed itself.
CHILD_GRACE = 30.0


class _Channel:
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
            child.write_frame(self.proc.stdin, kind, obj)
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
        if header[8:9] not in (b"R", b"S") or not 0 <= size <= child.REPLY_LIMIT:
            raise ChildFailed("an oversized or malformed reply")
        if size > RESULT_LIMIT - self.read:  # over the notebook's limit: read, never kept
            kept = self.read
            while size > 0:
                size -= len(self._exactly(min(size, 1 << 20), wait))
            self.read = kept
            return header[8:9], TOO_LARGE
        data = self._exactly(size, wait)
        try:
            return header[8:9], child.safe_loads(data)
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


def _events_of(outcomes: dict) -> list:
    """What the grader reports of the calls' outcomes (memory, calls to the reference)."""
    events = []
    for result in outcomes.values():
        for o in result if isinstance(result, list) else []:
            if o.code == "raised:MemoryError":
                events.append("memory limit reached")
            if o.code == "reference" or (o.error and child.REFERENCE_CALL in o.error):
                events.append("called the reference implementation")
    return events


def _strings(value) -> list:
    return [_text(v) for v in list(value)[:20]] if isinstance(value, list | tuple) else []


def _told(value) -> list:
    """The events a notebook's process reports that it may report (:data:`child.NOTEBOOK_EVENTS`).

    Its code can say anything: only the vocabulary's words are kept, so no
    answer writes a note to the instructor.
    """
    return [e for e in _strings(value) if e in child.NOTEBOOK_EVENTS]


def _failure(text) -> str:
    """Why a notebook's cells failed, as its process says it: in the child's own words only."""
    text = _text(text)
    return text if text.startswith("the answer cells raise ") else "the answer cells failed"


def _died(reply) -> NotebookResult:
    """The result of a notebook whose process the child reports dead (``S`` reply)."""
    reply = reply if isinstance(reply, dict) else {}
    return NotebookResult(
        error=_text(reply.get("error", "its process ended")), events=_strings(reply.get("events"))
    )


#: What a student whose pool of time is spent is told (with the pool's seconds).
SPENT = "the time budget for grading all the notebooks was used up"
#: Stands, in a test's list of outcomes, for a measured call still to be made.
_LATER = object()


class _Timed:
    """One notebook's requests to the child, each within its budget and the student's pool.

    Without a :class:`~mhsa_helpers.budget.Budget` (the progress report)
    the requests have the notebook's time limit only, as before.
    ``why`` says why the last request gave no reply: ``"slow"`` (it ran
    over its budget) or ``"spent"`` (the pool ran out before or during it).
    """

    def __init__(self, channel: _Channel, budget: Budget | None, stem: str):
        self.channel, self.budget, self.stem = channel, budget, stem
        self.slow, self.events, self.why = set(), [], None

    def call_s(self, key, index: int, cells: bool = False) -> float | None:
        """The budget of a call (with ``cells``: run in a fresh process, the cells first)."""
        if self.budget is None:
            return None
        return self.budget.call_s(self.stem, key, index) + (CELLS_ALLOWANCE if cells else 0.0)

    def ask(self, kind: bytes, obj, seconds: float | None) -> tuple:
        """``(b"R" or b"S", reply)``, or ``(None, None)`` when over a budget (:attr:`why`)."""
        self.why = None
        if self.budget is None:
            return self.channel.ask(kind, obj)
        left = self.budget.left_s()
        if left <= 0:
            self.why = "spent"
            return None, None
        given = min(seconds, left)
        start = time.monotonic()
        try:
            kind, reply = self.channel.ask(kind, obj, given)
        finally:
            self.budget.spend(time.monotonic() - start)
        if kind == b"S" and isinstance(reply, dict) and reply.get("slow") is True:
            self.why = "slow" if given >= seconds else "spent"
            return None, None
        return kind, reply

    def start(self, setup: tuple) -> list | NotebookResult:
        """Run the answer cells in a new process: the events it reports, or why it cannot run."""
        kind, reply = self.ask(b"N", setup, CELLS_ALLOWANCE if self.budget else None)
        if self.why == "slow":
            error = f"the answer cells took longer than their time budget ({CELLS_ALLOWANCE:.0f} s)"
            return NotebookResult(error=error)
        if self.why == "spent":
            return NotebookResult(error=self.pool())
        if kind == b"S":
            return _died(reply)
        if not (isinstance(reply, tuple) and reply and reply[0] in ("ready", "failed")):
            return NotebookResult(error="the answer cells garbled their results")
        if reply[0] == "failed":
            return NotebookResult(error=_failure(reply[1]), events=_told(reply[2:3] and reply[2]))
        return _told(reply[1])

    def pool(self) -> str:
        """What the learner is told of the spent pool."""
        return f"{SPENT} ({self.budget.pool_s:.0f} s) by answers that ran long"

    def over(self, name: str, seconds: float | None) -> tuple:
        """The raw outcome of a call of ``name`` that found no time (:attr:`why`)."""
        if self.why == "spent":
            self.events.append(f"{SPENT} ({self.budget.pool_s:.0f} s): not graded from {name} on")
            return ("error", f"{name} was not checked: {self.pool()}.", "spent")
        if name not in self.slow:
            self.events.append(f"{name}: a call ran over its time budget ({seconds:.1f} s)")
        self.slow.add(name)
        return (
            "error",
            f"{name} took longer than its time budget ({seconds:.1f} s: {FACTOR}× the "
            "reference's time on the same inputs, and a few seconds more): look for an endless "
            "loop or a wait.",
            "slow",
        )


def _run_job(channel: _Channel, job: Job, budget: Budget | None = None) -> NotebookResult:
    """One notebook: its cells, its calls one at a time, its events, then its measured calls.

    The memory-measured calls run last, each in a fresh process, once the
    notebook's own process and everything it started are gone; the outcomes
    are then put back in call order, cut after the first error, as if made
    in order. With a ``budget``, a call over its own loses that call (and
    the exercise's later calls): the notebook's process is started again,
    its cells run anew, for the next exercise; once the student's pool is
    spent no call is made.
    """
    source, blocked = _mh_of([name for _, name, _ in job.tests])
    setup = (job.stem, list(job.sources), source, sorted(blocked))
    timed = _Timed(channel, budget, job.stem)
    started = timed.start(setup)
    if isinstance(started, NotebookResult):
        return started
    events, raw, alive, stopped = list(started), {}, True, None
    for key, name, requests in job.tests:
        raw[key] = []
        if stopped is not None:  # the process could not start again: why, for every call left
            raw[key] = [("error", f"{name} was not checked: {stopped.error}", stopped.code)]
            continue
        if name in timed.slow:  # its visible calls ran over: the hidden ones are not made
            why = "not run on the hidden inputs: it ran over its time budget on the visible ones"
            raw[key] = [("error", f"{name} was {why}.", "slow")]
            continue
        for index, (args, kwargs, options) in enumerate(requests):
            if options.get("memory"):
                raw[key].append(_LATER)
                continue
            if not alive:  # a call ran over: its process is gone, the cells run in a new one
                started = timed.start(setup)
                if isinstance(started, NotebookResult):
                    stopped = _Stop(started.error, timed.why or "crashed")
                    raw[key] = [("error", f"{name} was not checked: {stopped.error}", stopped.code)]
                    break
                events, alive = events + started, True
            seconds = timed.call_s(key, index)
            kind, reply = timed.ask(b"C", (name, args, kwargs, options), seconds)
            if kind is None:
                raw[key].append(timed.over(name, seconds))
                alive = False  # killed, or left for the next notebook's start to end
                if timed.why == "spent":
                    stopped = _Stop(timed.pool(), "spent")
                break
            if kind == b"S":
                return _died(reply)
            if reply == ("undefined",):
                raw[key] = "not defined"
                break
            raw[key].append(_call_outcome(name, reply))
            if raw[key][-1][0] == "error":
                break
    if alive and stopped is None:
        kind, reply = timed.ask(b"E", None, CELLS_ALLOWANCE if budget else None)
        if kind == b"R" and isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "events":
            events += _told(reply[1])
    outcomes = {}
    for key, name, requests in job.tests:
        made = []
        for index, (entry, (args, kwargs, options)) in enumerate(
            zip(raw[key], requests, strict=False)
        ):
            if raw[key] == "not defined":
                break
            if entry is _LATER:
                seconds = timed.call_s(key, index, cells=True)
                kind, reply = timed.ask(b"F", (name, args, kwargs, options), seconds)
                if kind is None:
                    entry = timed.over(name, seconds)
                else:
                    entry = _call_outcome(name, reply) if kind == b"R" else _fresh_died(name, reply)
            made.append(entry)
            if entry[0] == "error":
                break
        try:
            outcomes[key] = "not defined" if raw[key] == "not defined" else outcomes_of(made)
        except Exception:  # malformed or oversized: that check fails, nothing else
            error = f"{name}: its result could not be read."
            outcomes[key] = [Outcome(error=error, code="garbled")]
    events = list(dict.fromkeys(events + timed.events + _events_of(outcomes)))
    return NotebookResult(outcomes=outcomes, events=events)


@dataclass(frozen=True)
class _Stop:
    """Why a notebook's calls stopped for good (its cells ran over, or the pool is spent)."""

    error: str
    code: str


def _call_outcome(name: str, reply) -> tuple:
    """The raw outcome in a notebook process's reply to a call (checked later)."""
    if reply is TOO_LARGE:
        limit = f"{RESULT_LIMIT >> 20} MiB"
        return ("error", f"{name}: its results are too large to check (over {limit}).", "garbled")
    if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "outcome":
        if isinstance(reply[1], tuple) and reply[1]:
            return reply[1]
    if reply == ("undefined",):
        return ("error", f"{name} is not defined in the answer cells.", "garbled")
    return ("error", f"{name}: its result could not be read.", "garbled")


def _fresh_died(name: str, reply) -> tuple:
    """The outcome of a measured call whose fresh process timed out, crashed or ended."""
    why = reply.get("error") if isinstance(reply, dict) else None
    return ("error", f"{name}: {why or 'its process ended'}", "crashed")


def run_answers(
    jobs: list[Job],
    timeout: float = 30.0,
    memory: int | None = None,
    wrapper=None,
    contained: bool = False,
    budget: Budget | None = None,
) -> dict:
    """Run every job in one child process, a call at a time; return ``{stem: NotebookResult}``.

    Parameters
    ----------
    jobs : list of Job
        In course order (a notebook's process never holds what a later
        notebook may use).
    timeout : float
        Seconds each notebook may take (its answer cells and its calls; a
        memory-measured call, which runs the cells again in a fresh process,
        as long again).
    memory : int, optional
        Address-space limit in bytes for each notebook's process.
    wrapper : callable, optional
        ``wrapper(child_path) -> argv`` to run the child in, for example, a
        sandbox; by default the child runs as ``python child.py``.
    contained : bool
        The wrapper gives the child a PID namespace of its own (the grader's
        sandbox): before each notebook and each measured call it kills every
        other process it sees, so nothing an answer started earlier lives on.
    budget : Budget, optional
        The student's time (the grader's, :class:`mhsa_helpers.budget.Budget`):
        each request gets its own budget within ``timeout``; a call over it
        fails (code ``"slow"``) and the notebook goes on in a new process
        with the next exercise; once the pool is spent, no request is sent
        and what is left fails (code ``"spent"``). Every such call is named
        in the notebook's events.

    A notebook's process receives each call's inputs only when it runs that
    call, and replies on a pipe of its own: its code can neither read
    another notebook's inputs nor stand in for its results. What comes
    back is read within a byte limit and decoded within a size limit.
    """
    argv = wrapper(CHILD) if wrapper else [sys.executable, str(CHILD)]
    limits = {"timeout": timeout, "memory": memory, "contained": contained}
    results, pending = {}, list(jobs)
    while pending:  # one child while it lasts; a notebook it fails on costs that notebook only
        started, channel = False, None
        calls = sum(len(requests) for job in pending for _, _, requests in job.tests)
        try:
            channel = _Channel(argv, (2 * timeout + 5) * len(pending) + calls + 60, timeout + 30)
            channel.send(b"L", limits)
            while pending:
                started, channel.read = True, 0  # each notebook reads within its own limit
                results[pending[0].stem] = _run_job(channel, pending[0], budget)
                pending.pop(0)
        except Exception as exc:  # the child itself failed: this notebook (or all) says so
            reason = exc if isinstance(exc, ChildFailed) else type(exc).__name__
            failed = NotebookResult(error=f"the checks could not run ({reason})", unverifiable=True)
            for job in pending[: 1 if started else len(pending)]:
                results[job.stem] = failed
            pending = pending[1:] if started else []
        finally:
            if channel is not None:
                channel.close()
    return results
