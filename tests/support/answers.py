"""Answers as a notebook runs them: an answer cell's source, a solution, a float32 twin."""

import linecache

import numpy as np

from mhsa_helpers.execution.saved import answer_namespace, run_answers_here
from mhsa_helpers.exercises import EXERCISES
from tests.support.nbgrader_course import SOLUTIONS


def load(source, name):
    """The function ``name`` defined by an answer cell, run as the notebook runs it.

    Its source is registered with ``linecache`` under a cell's name, as
    IPython registers every cell it runs.
    """
    namespace = answer_namespace()
    cell = f"<answer cell {name}>"
    linecache.cache[cell] = (len(source), None, source.splitlines(True), cell)
    exec(compile(source, cell, "exec"), namespace)
    return namespace[name]


def solution(name):
    """The instructor's answer for exercise ``name``, from its solution notebook."""
    (e,) = [e for e in EXERCISES if e.name == name]
    return run_answers_here(SOLUTIONS / f"{e.notebook}.ipynb")[name]


def cast(value):
    """``value`` with its float arrays (also inside tuples) in single precision."""
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return value.astype(np.float32)
    if isinstance(value, tuple):
        return tuple(cast(v) for v in value)
    return value


def single_precision(fn):
    """``fn`` computed in float32: float arrays in are cast, float arrays out are float32."""

    def fn32(*args, **kwargs):
        return cast(fn(*(cast(a) for a in args), **kwargs))

    return fn32
