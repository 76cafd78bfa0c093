"""Run a learner's answer cells in a child process; return values, never verdicts.

The parent (the progress report, the grader) drives the child program
(:mod:`.child`, which imports nothing else of the course) one request at a
time (:func:`run_in_child`): a notebook's answer cells and the source of the
course functions it may use through ``mh``, then each call's inputs, only
when that call runs. The reference and the checks never enter the child,
and no process of the child ever holds the inputs of a call it has not been
given (a memory-measured call runs in a fresh process that has seen no
other). The child returns what the learner's functions gave, as plain data
(:class:`.outcomes.Outcome`); the checks judge it against the reference in
the parent (:func:`mhsa_helpers.checks.judge`). This module knows nothing of
the checks: it runs the requests it is handed (:class:`Job`).

Nothing the answers do to modules, numpy or the interpreter reaches a
verdict, and the grader can run the child in a sandbox that holds nothing
else (:mod:`autograders.sandbox`).
"""

from __future__ import annotations

import inspect
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path

from .. import reference
from ..budget import CELLS_ALLOWANCE, FACTOR, Budget
from ..exercises import exercise, forbidden, names
from .channel import TOO_LARGE, Channel, ChildFailed, too_large
from .child.wire import NOTEBOOK_EVENTS, REFERENCE_CALL
from .outcomes import Outcome, clean_text, outcomes_of

__all__ = [
    "CHILD",
    "CHILD_PARTS",
    "SPENT",
    "Job",
    "NotebookResult",
    "mh_source",
    "run_in_child",
]

#: The child program: this folder, which Python runs as ``python <folder>`` (its
#: ``__main__.py`` starts the package ``child``).
CHILD = Path(__file__).resolve().parent
#: What of :data:`CHILD` the child program is made of: all a sandbox gives it of the course.
CHILD_PARTS = ("__main__.py", "child")


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


def _events_of(outcomes: dict) -> list:
    """What the grader reports of the calls' outcomes (memory, calls to the reference)."""
    events = []
    for result in outcomes.values():
        for o in result if isinstance(result, list) else []:
            if o.code == "raised:MemoryError":
                events.append("memory limit reached")
            if o.code == "reference" or (o.error and REFERENCE_CALL in o.error):
                events.append("called the reference implementation")
    return events


def _strings(value) -> list:
    return [clean_text(v) for v in list(value)[:20]] if isinstance(value, list | tuple) else []


def _told(value) -> list:
    """The events a notebook's process reports that it may report (:data:`NOTEBOOK_EVENTS`).

    Its code can say anything: only the vocabulary's words are kept, so no
    answer writes a note to the instructor.
    """
    return [e for e in _strings(value) if e in NOTEBOOK_EVENTS]


def _failure(text) -> str:
    """Why a notebook's cells failed, as its process says it: in the child's own words only."""
    text = clean_text(text)
    return text if text.startswith("the answer cells raise ") else "the answer cells failed"


def _died(reply) -> NotebookResult:
    """The result of a notebook whose process the child reports dead (``S`` reply)."""
    reply = reply if isinstance(reply, dict) else {}
    return NotebookResult(
        error=clean_text(reply.get("error", "its process ended")),
        events=_strings(reply.get("events")),
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

    def __init__(self, channel: Channel, budget: Budget | None, stem: str):
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


def _run_job(channel: Channel, job: Job, budget: Budget | None = None) -> NotebookResult:
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
        return too_large(name)
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


def run_in_child(
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
        ``wrapper(CHILD) -> argv`` to run the child program (:data:`CHILD`,
        made of :data:`CHILD_PARTS`) in, for example, a sandbox; by default
        it runs as ``python <CHILD>``.
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
            channel = Channel(argv, (2 * timeout + 5) * len(pending) + calls + 60, timeout + 30)
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
