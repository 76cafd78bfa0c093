"""Time budgets: each call's, from the reference's own time; each student's; the kernel's.

The grader (:func:`autograders.integrity.verify`) gives every request it
sends the child a budget in seconds, which the child applies by its clock
(the ``B`` request of :mod:`mhsa_helpers.execution.child.main`), and counts the time it
waits for each reply by its own clock, outside the sandbox, against the
student's pool (:class:`Budget`). Nothing an answer does can forge either.

* A call may take :data:`FACTOR` times what the reference takes on the same
  inputs (timed here, in the grader's process, on the same machine under
  the same load) plus :data:`CALL_ALLOWANCE` for the process boundary
  (pickling, copying the inputs, the contract's second call). A
  memory-measured call runs the answer cells again first: it gets
  :data:`CELLS_ALLOWANCE` more.
* A notebook's answer cells (they only define functions) may take
  :data:`CELLS_ALLOWANCE`.
* All of one student's requests together may take the pool:
  :data:`STUDENT_ALLOWANCE` plus :data:`FACTOR` times the reference's time
  of all the student's calls. Once it is spent, no request is sent.

The constants leave an honest answer, even a Python loop 20 to 50 times
slower than numpy, a wide margin on a slow, loaded machine (see the
README and ``benchmarks/bench_stall.py``); an answer that waits or loops
without end is over any of them.

In the notebook's kernel the same rule bounds every call the course makes
of a learner's function (a check's call, a widget's, the capstone's):
:func:`kernel_call_s` seconds, the reference timed on the same call, and
:data:`CELLS_ALLOWANCE` for a saved notebook's answer cells
(:func:`kernel_cells_s`). A call past it is stopped
(:class:`~mhsa_helpers.execution.child.contract.TimeLimit`) and the learner
is told one sentence (:func:`ran_long`): which function, how long, where
the reference takes how long, "an endless loop?", and what to do.
:data:`SECONDS_VARIABLE` sets every such limit at once (the tests' small one).
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from . import reference
from .execution.child.contract import Interrupted, TimeLimit, copy_inputs

__all__ = [
    "CALL_ALLOWANCE",
    "CELLS_ALLOWANCE",
    "FACTOR",
    "SECONDS_VARIABLE",
    "STUDENT_ALLOWANCE",
    "Budget",
    "RanLong",
    "duration",
    "kernel_call_s",
    "kernel_cells_s",
    "limited",
    "ran_long",
    "reference_seconds",
    "reference_seconds_here",
    "said_input",
]

#: How many times the reference's own time a call may take.
FACTOR = 50
#: Seconds every call may take on top: the process boundary and the contract's checks.
CALL_ALLOWANCE = 5.0
#: Seconds a notebook's answer cells may take (each time they run).
CELLS_ALLOWANCE = 10.0
#: Seconds of a student's pool on top of :data:`FACTOR` times the reference's total.
STUDENT_ALLOWANCE = 60.0


def reference_seconds(name: str, args, kwargs) -> float:
    """Seconds the course's reference ``name`` takes on copies of ``args`` and ``kwargs``.

    A call meant to raise is timed until it raises; a name the reference
    does not have takes 0 s (the call gets the allowance only).
    """
    fn = getattr(reference, name, None)
    if not callable(fn):
        return 0.0
    args_copy, kwargs_copy = copy_inputs(list(args)), copy_inputs(dict(kwargs))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        try:
            fn(*args_copy, **kwargs_copy)
        except Exception:  # the calls that must raise: timed all the same
            pass
        return time.perf_counter() - start


#: ``{(notebook, test key, call index): seconds}`` of the reference, as timed in this process.
_TIMED: dict = {}


class Budget:
    """One student's time for grading: each request's budget, and the pool they share.

    Parameters
    ----------
    reference_s : dict
        ``{(notebook, test key, call index): seconds}``: the reference's
        time of each call (:func:`reference_seconds`).

    Attributes
    ----------
    pool_s : float
        Seconds all of the student's requests may take together.
    spent_s : float
        Seconds waited for the student's replies so far (:meth:`spend`).
    """

    def __init__(self, reference_s: dict):
        self.reference_s = dict(reference_s)
        self.pool_s = STUDENT_ALLOWANCE + FACTOR * sum(self.reference_s.values())
        self.spent_s = 0.0

    @classmethod
    def of_jobs(cls, jobs) -> Budget:
        """The budget of ``jobs`` (:class:`~mhsa_helpers.execution.in_child.Job`): each call timed.

        Each call is timed once per process (:data:`_TIMED`): a test key
        holds the exercise and the seed of its inputs, so every student of a
        course has the same calls (a memory-measured call's inputs are drawn
        afresh, of the same shapes), and the next students a worker grades
        cost no timing.
        """
        reference_s = {}
        for job in jobs:
            for key, name, requests in job.tests:
                for i, (args, kwargs, _) in enumerate(requests):
                    if (job.stem, key, i) not in _TIMED:
                        _TIMED[job.stem, key, i] = reference_seconds(name, args, kwargs)
                    reference_s[job.stem, key, i] = _TIMED[job.stem, key, i]
        return cls(reference_s)

    def call_s(self, stem: str, key, index: int) -> float:
        """Seconds the call ``index`` of test ``key`` of notebook ``stem`` may take."""
        return CALL_ALLOWANCE + FACTOR * self.reference_s.get((stem, key, index), 0.0)

    def left_s(self) -> float:
        """Seconds of the pool not spent yet (0 or less: spent)."""
        return self.pool_s - self.spent_s

    def spend(self, seconds: float) -> None:
        """Count ``seconds`` waited for a reply against the pool."""
        self.spent_s += max(0.0, seconds)


# --------------------------------------------------------------------------
# the kernel's limits: a learner's code run by the course in the notebook
# --------------------------------------------------------------------------
#: The environment variable that, when set, is every in-kernel limit in seconds (for tests:
#: a small one stops a loop without end at once; nothing else reads it).
SECONDS_VARIABLE = "MHSA_KERNEL_SECONDS"


def _fixed_s() -> float | None:
    """The limit :data:`SECONDS_VARIABLE` sets, if it is set to a positive number."""
    try:
        seconds = float(os.environ.get(SECONDS_VARIABLE, ""))
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def kernel_call_s(reference_s: float, memory: bool = False) -> float:
    """Seconds a call of a learner's function may run in the kernel, as in grading.

    :data:`CALL_ALLOWANCE` plus :data:`FACTOR` times the reference's time on
    the same call (``reference_s``, timed in the same kernel), and
    :data:`CELLS_ALLOWANCE` more for a memory-measured call (traced
    allocations run slower), as the grader gives them; or
    :data:`SECONDS_VARIABLE` where set.
    """
    fixed = _fixed_s()
    if fixed is not None:
        return fixed
    return CALL_ALLOWANCE + FACTOR * reference_s + (CELLS_ALLOWANCE if memory else 0.0)


def kernel_cells_s() -> float:
    """Seconds a saved notebook's answer cells may run in the kernel (they only define
    functions): :data:`CELLS_ALLOWANCE`, or :data:`SECONDS_VARIABLE` where set."""
    fixed = _fixed_s()
    return CELLS_ALLOWANCE if fixed is None else fixed


def duration(seconds: float) -> str:
    """A time as a sentence says it, two significant digits: "5 s", "1.5 s", "0.1 ms", "40 µs"."""
    seconds = float(f"{max(seconds, 1e-6):.2g}")
    for unit, size, least in (("s", 1.0, 1.0), ("ms", 1e-3, 1e-4)):
        if seconds >= least:
            return f"{float(f'{seconds / size:.2g}'):g} {unit}"
    return f"{float(f'{seconds / 1e-6:.2g}'):g} \u00b5s"


def ran_long(
    what: str,
    seconds: float,
    then: str,
    on: str = "",
    reference_s: float | None = None,
    interrupted: bool = False,
) -> str:
    """The sentence of a learner's code stopped by its time limit (or by the learner).

    Parameters
    ----------
    what : str
        Whose code: "softmax", "Your multi_head_self_attention, as saved in …".
    seconds : float
        The limit it ran past, or the time it ran before it was interrupted.
    then : str
        What to do, as a sentence: "Check the loop's condition, then run the cell again."
    on : str, optional
        The input, in the learner's terms: " on Z of shape (6, 6)".
    reference_s : float, optional
        The reference's time on the same input.
    interrupted : bool
        The learner interrupted it (the kernel's stop button).

    Returns
    -------
    str
        E.g. "softmax ran for more than 5 s on Z of shape (6, 6), where the
        reference takes 0.1 ms: an endless loop? Check the loop's condition,
        then run the cell again."
    """
    ran = (
        f"was interrupted after {duration(seconds)}"
        if interrupted
        else f"ran for more than {duration(seconds)}"
    )
    where = "" if reference_s is None else f", where the reference takes {duration(reference_s)}"
    return f"{what} {ran}{on}{where}: an endless loop? {then}"


def _shapes(x):
    """What a call's time depends on: arrays by shape and type, plain values by value."""
    if isinstance(x, np.ndarray):
        return ("array", x.shape, x.dtype.str)
    if isinstance(x, tuple | list):
        return (type(x).__name__, *(_shapes(v) for v in x))
    if isinstance(x, dict):
        return ("dict", *((k, _shapes(v)) for k, v in sorted(x.items(), key=lambda kv: kv[0])))
    if isinstance(x, bool | int | float | str | np.generic) or x is None:
        return (type(x).__name__, x)
    return (type(x).__name__,)


#: ``{(exercise, shapes of the inputs): seconds}`` of the reference, timed in this kernel.
_HERE: dict = {}


def reference_seconds_here(name: str, args, kwargs) -> float:
    """:func:`reference_seconds`, timed once per exercise and inputs' shapes in this process.

    A check's inputs are the same on every run, and a hidden test's of the
    same shapes take the same time: the reference runs once for each.
    """
    key = (name, _shapes(list(args)), _shapes(dict(kwargs)))
    if key not in _HERE:
        _HERE[key] = reference_seconds(name, args, kwargs)
    return _HERE[key]


def said_input(name: str, args, kwargs) -> str:
    """A call's inputs as the sentence says them: " on Z of shape (6, 6)".

    The first array argument by its parameter's name and shape, and the
    arguments that are plain numbers by name and value (" on X of shape
    (6, 4) with n_heads = 2"); "" if there is none.
    """
    from .exercises import exercise

    try:
        params = exercise(name).parameter_names
    except (KeyError, ValueError):
        params = ()
    given = list(zip(params, args, strict=False)) + list(dict(kwargs).items())
    arrays = [f"{p} of shape {a.shape}" for p, a in given if isinstance(a, np.ndarray)][:1]
    numbers = [
        f"{p} = {a.item() if isinstance(a, np.generic) else a!r}"
        for p, a in given
        if isinstance(a, int | float | np.integer | np.floating) and not isinstance(a, bool)
    ]
    said = " on " + arrays[0] if arrays else ""
    if numbers:
        said += " with " + ", ".join(numbers)
    return said


#: What to do, said after "an endless loop?" when the code is in the notebook open here.
CHECK_LOOP = "Check the loop's condition, then run the cell again."
#: The same, where the sentence is relayed by a cell that says itself what to do next.
CHECK_LOOP_RELAYED = "Check the loop's condition."


class RanLong(TimeoutError):
    """A learner's function stopped by its time limit in the kernel (:func:`limited`).

    An ``Exception``: where the course catches what a learner's function
    raises, it catches this too, and says it with :meth:`said`.

    Parameters
    ----------
    seconds : float
        The limit it ran past.
    reference_s : float or None
        The reference's time on the same call.
    """

    def __init__(self, seconds: float, reference_s: float | None = None):
        super().__init__(f"ran for more than {duration(seconds)}")
        self.seconds, self.reference_s = seconds, reference_s

    def said(self, what: str, then: str, on: str = "") -> str:
        """:func:`ran_long` of this stop: ``what`` ran for more than … ``on``, then ``then``."""
        return ran_long(what, self.seconds, then, on, self.reference_s)


def limited(run, reference_s: float | None, interrupted):
    """``run()`` within its time limit in the kernel: its value, or :class:`RanLong`.

    Parameters
    ----------
    run : callable
        Calls the learner's function (no arguments).
    reference_s : float or None
        The reference's time on the same call (None: the allowance alone).
    interrupted : callable
        ``interrupted(seconds)``: the sentence of the learner's interrupt
        after ``seconds`` (:func:`ran_long` with ``interrupted=True``),
        raised as one line (:class:`~mhsa_helpers.execution.child.contract.Interrupted`).

    Raises
    ------
    RanLong
        Past :func:`kernel_call_s` seconds (even if the code caught the stop).
    """
    limit = TimeLimit(kernel_call_s(reference_s or 0.0))
    try:
        with limit:
            value = run()
    except KeyboardInterrupt:
        raise Interrupted(interrupted(limit.elapsed)) from None
    except BaseException:
        if limit.fired:  # TimedOut, or what the code raised once it caught it
            raise RanLong(limit.seconds, reference_s) from None
        raise
    if limit.fired:
        raise RanLong(limit.seconds, reference_s)
    return value
