"""Grading's time budgets: each call's, from the reference's own time, and each student's.

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
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from . import reference
from .execution.child.contract import copy_inputs

__all__ = [
    "CALL_ALLOWANCE",
    "CELLS_ALLOWANCE",
    "FACTOR",
    "STUDENT_ALLOWANCE",
    "Budget",
    "reference_seconds",
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
