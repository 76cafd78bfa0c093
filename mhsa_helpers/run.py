"""Run a learner's answer cells in a child process; return values, never verdicts.

The parent (the progress report, the grader) sends the child
(:mod:`mhsa_helpers.child`, a script that imports nothing of the course)
each notebook's answer cells, the inputs of its checks, and the source of
the course functions that notebook may use through ``mh``: the reference
and the checks never enter the child. The child returns what the learner's
functions gave; the parent judges it against the reference (:func:`judge`).
Nothing the answers do to modules, numpy or the interpreter reaches a
verdict, and the grader can run the child in a sandbox that holds nothing
else (:mod:`autograders.sandbox`).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import secrets
import subprocess
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

from . import child, reference
from .checks.core import Opaque, Outcome
from .exercises import exercise, forbidden, names

__all__ = ["CHILD", "Job", "NotebookResult", "judge", "mh_source", "run_answers"]

#: The child program, run as a plain script.
CHILD = Path(child.__file__)


@dataclass
class Job:
    """One notebook's answer cells and the checks to run on them.

    Attributes
    ----------
    stem : str
        The notebook, e.g. ``"07_softmax"``.
    sources : list of str
        Its answer cells, in order.
    tests : list of (str, int or None)
        ``(exercise, seed)``: the visible calls (seed None) or hidden ones.
    """

    stem: str
    sources: list
    tests: list


@dataclass
class NotebookResult:
    """What the child reports for one notebook.

    ``error`` says why nothing could be run (the answer cells raised, the
    notebook timed out, ran out of memory or ended its process); otherwise
    ``outcomes[(exercise, seed)]`` holds the outcome of every call, or the
    string ``"not defined"``. ``events`` name what the grader reports
    (time limit, memory, calls to the reference …); ``unverifiable`` is set
    when the child itself could not run (nothing the answers did).
    """

    error: str | None = None
    outcomes: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    unverifiable: bool = False


# --------------------------------------------------------------------------
# what a notebook may use: the source of its allowed functions, nothing else
# --------------------------------------------------------------------------
def _needed(names_: set) -> list:
    """``names_`` and the module-level functions of the reference they call, in file order."""
    seen, todo = set(), list(names_)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        codes = [getattr(reference, name).__code__]
        while codes:  # the function's own code and the code nested in it (comprehensions …)
            code = codes.pop()
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            todo += [
                n
                for n in code.co_names
                if isinstance(getattr(reference, n, None), types.FunctionType)
            ]
    order = list(vars(reference))
    return sorted(seen, key=order.index)


def mh_source(allowed) -> str:
    """Python source of a module with the reference functions ``allowed`` and their helpers."""
    parts = ["import numbers\n\nimport numpy as np\n"]
    parts += [inspect.getsource(getattr(reference, n)) for n in _needed(set(allowed))]
    return "\n\n".join(parts)


def _mh_of(stem: str, tests: list) -> tuple[str, frozenset]:
    """The ``mh`` of a notebook: what its exercises may use, and what they may not."""
    allowed = set(names())
    blocked = set()
    for name, _ in tests:
        allowed &= set(exercise(name).may_use)
        blocked |= forbidden(name)
    return mh_source(allowed), frozenset(blocked)


# --------------------------------------------------------------------------
# parent side
# --------------------------------------------------------------------------
#: Bytes of results read from the child at the most (a legit result is far below 1 MB a notebook).
RESULT_LIMIT = 64 << 20
#: Containers, numbers and strings one decoded outcome may hold at the most.
NODE_LIMIT = 10_000


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


def outcomes_of(raw) -> list[Outcome]:
    """The child's ``(kind, value)`` pairs as :class:`Outcome` objects, checked."""
    budget = [NODE_LIMIT]
    out = []
    for kind, value in list(raw)[:64]:
        if kind == "value":
            out.append(Outcome(value=_decode(value, budget)))
        elif kind == "measured" and isinstance(value, tuple) and len(value) == 2:
            peak = value[1] if isinstance(value[1], int) and not isinstance(value[1], bool) else -1
            out.append(Outcome(value=_decode(value[0], budget), peak=peak))
        elif kind == "raised":
            out.append(Outcome(raised=_text(value)))
        else:
            out.append(Outcome(error=_text(value)))
    return out


def _result(raw, job: Job, nonce: str) -> NotebookResult:
    """One notebook's result from the child, trusted only as far as it checks out."""
    if not isinstance(raw, dict) or raw.get("nonce") != nonce:
        return NotebookResult(error="its results were tampered with (not from its own process)")
    events = [_text(e) for e in list(raw.get("events") or [])[:20]]
    if raw.get("error") is not None:
        return NotebookResult(error=_text(raw["error"]), events=events)
    outcomes, given = {}, raw.get("outcomes") or {}
    for key in job.tests:
        value = given.get(tuple(key)) if isinstance(given, dict) else None
        try:
            outcomes[tuple(key)] = "not defined" if value == "not defined" else outcomes_of(value)
        except Exception:  # malformed or oversized: that check fails, nothing else
            outcomes[tuple(key)] = [Outcome(error=f"{key[0]}: its result could not be read.")]
    return NotebookResult(outcomes=outcomes, events=events)


def _communicate(argv, request: bytes, env: dict, timeout: float) -> bytes:
    """Run the child; send ``request``; return at most RESULT_LIMIT bytes of its output."""
    import threading

    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )

    def feed():
        with contextlib.suppress(OSError):
            proc.stdin.write(request)
            proc.stdin.close()

    threading.Thread(target=feed, daemon=True).start()
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    chunks, size = [], 0
    try:
        while chunk := proc.stdout.read(1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > RESULT_LIMIT:
                proc.kill()
                break
    finally:
        killer.cancel()
        proc.stdout.close()
        proc.wait()
    return b"".join(chunks)


def run_answers(
    jobs: list[Job], timeout: float = 30.0, memory: int | None = None, wrapper=None
) -> dict:
    """Run every job in one child process; return ``{stem: NotebookResult}``.

    Parameters
    ----------
    jobs : list of Job
        In course order (a notebook's process then never holds what a
        later notebook may use).
    timeout : float
        Seconds each notebook may take (its answer cells and its calls).
    memory : int, optional
        Address-space limit in bytes for each notebook's process.
    wrapper : callable, optional
        ``wrapper(child_path) -> argv`` to run the child in, for example, a
        sandbox; by default the child runs as ``python child.py``.

    Each job carries a random nonce that its result must echo: a notebook's
    code cannot stand in for another notebook's results. What comes back is
    read within a byte limit and decoded within a size limit.
    """
    from .checks import CHECKS

    request = io.BytesIO()
    child.write_message(request, {"timeout": timeout, "memory": memory})
    nonces = {}
    for job in jobs:
        source, blocked = _mh_of(job.stem, job.tests)
        tests = [
            ((name, seed), name, CHECKS[name].requests(CHECKS[name].calls(seed)))
            for name, seed in job.tests
        ]
        nonces[job.stem] = secrets.token_hex(16)
        message = (job.stem, job.sources, source, sorted(blocked), tests, nonces[job.stem])
        child.write_message(request, message)
    argv = wrapper(CHILD) if wrapper else [sys.executable, str(CHILD)]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MPLBACKEND="agg")
    results = {}
    why = "the checks could not run (the child process ended early)"
    try:
        stream = io.BytesIO(
            _communicate(argv, request.getvalue(), env, (timeout + 5) * len(jobs) + 60)
        )
        for job in jobs:
            header = stream.read(8)
            if len(header) < 8:
                break
            try:
                raw = child.safe_loads(stream.read(int.from_bytes(header, "little")))
            except Exception:  # garbage: this notebook fails, the next ones are read on
                raw = None
            results[job.stem] = _result(raw, job, nonces[job.stem])
    except Exception as exc:  # the child itself failed: the notebooks without a result say so
        why = f"the checks could not run ({type(exc).__name__})"
    for job in jobs:
        results.setdefault(job.stem, NotebookResult(error=why, unverifiable=True))
    return results


def judge(name: str, seed: int | None, outcomes) -> str | None:
    """None if the outcomes of exercise ``name`` pass its check, else the check's sentence."""
    from .checks import CHECKS, CheckFailed

    if outcomes == "not defined":
        return f"{name} is not defined: run its cell, and keep its name."
    check = CHECKS[name]
    try:
        check.verdict(check.calls(seed), outcomes)
    except CheckFailed as exc:
        return str(exc)
    return None
