"""Run a learner's answer cells in a child process; return values, never verdicts.

The parent (the progress report, the grader) sends the child the answer
cells of each notebook and the checks to run; the child runs each notebook
in a fork of its own (one notebook's code cannot touch another's), with a
time limit and optionally a memory limit, calls the learner's functions on
every check's inputs and sends back only what they returned
(:class:`~mhsa_helpers.checks.core.Outcome`). The parent judges those
outcomes against the reference (:func:`judge`): nothing the answers do to
modules, numpy or the interpreter reaches the verdict.

``python -m mhsa_helpers.run`` is the child's entry point.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from typing import ClassVar

__all__ = ["Job", "NotebookResult", "judge", "run_answers"]


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
    string ``"not defined"``. ``unverifiable`` is set when the child itself
    could not run (nothing the answers did).
    """

    error: str | None = None
    outcomes: dict = field(default_factory=dict)
    unverifiable: bool = False


# --------------------------------------------------------------------------
# parent side
# --------------------------------------------------------------------------
class _SafeUnpickler(pickle.Unpickler):
    """Loads arrays, numbers, strings and outcomes, and nothing else."""

    ALLOWED: ClassVar[set] = {
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("builtins", "complex"),
        ("mhsa_helpers.checks.core", "Outcome"),
        ("mhsa_helpers.checks.core", "Opaque"),
        ("mhsa_helpers.run", "NotebookResult"),
    }

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refused to load {module}.{name}")
        return super().find_class(module, name)


def run_answers(jobs: list[Job], timeout: float = 30.0, memory: int | None = None) -> dict:
    """Run every job in one child process; return ``{stem: NotebookResult}``.

    Parameters
    ----------
    jobs : list of Job
    timeout : float
        Seconds each notebook may take (its answer cells and its calls).
    memory : int, optional
        Address-space limit in bytes for each notebook's process.
    """
    request = {
        "jobs": [[j.stem, j.sources, j.tests] for j in jobs],
        "timeout": timeout,
        "memory": memory,
    }
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MPLBACKEND="agg")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mhsa_helpers.run"],
            input=json.dumps(request).encode(),
            capture_output=True,
            timeout=timeout * len(jobs) + 60,
            env=env,
        )
        results = _SafeUnpickler(io.BytesIO(proc.stdout)).load()
    except Exception as exc:  # the child itself failed: every notebook says so
        why = f"the checks could not run ({type(exc).__name__})"
        return {j.stem: NotebookResult(error=why, unverifiable=True) for j in jobs}
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


# --------------------------------------------------------------------------
# child side
# --------------------------------------------------------------------------
def _run_job(stem: str, sources: list, tests: list) -> NotebookResult:
    from .answers import answer_namespace
    from .checks import CHECKS
    from .checks.core import Outcome, run_calls

    namespace = answer_namespace()
    try:
        for source in sources:
            exec(compile(source, f"<{stem} answer>", "exec"), namespace)
    except BaseException as exc:
        return NotebookResult(error=f"the answer cells raise {type(exc).__name__}: {exc}")
    result = NotebookResult()
    for name, seed in tests:
        fn = namespace.get(name)
        if not callable(fn):
            result.outcomes[(name, seed)] = "not defined"
            continue
        try:
            outcomes = run_calls(name, fn, CHECKS[name].calls(seed))
        except BaseException as exc:
            outcomes = [Outcome(error=f"{name} raised {type(exc).__name__}: {exc}")]
        result.outcomes[(name, seed)] = outcomes
    return result


def _forked(job: list, timeout: float, memory: int | None) -> NotebookResult:
    """Run one job in a fork with the limits; its death is reported, never fatal here."""
    stem, sources, tests = job
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the notebook's own process
        os.close(read_end)
        try:
            if memory:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            signal.alarm(max(1, round(timeout)))
            data = pickle.dumps(_run_job(stem, sources, [tuple(t) for t in tests]))
            with os.fdopen(write_end, "wb") as f:
                f.write(data)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if data:
        try:
            return pickle.loads(data)
        except Exception:
            return NotebookResult(error="the answer cells garbled their results")
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
        return NotebookResult(error=f"timed out after {timeout:.0f} s (an endless loop?)")
    if os.WIFSIGNALED(status):
        return NotebookResult(error=f"the answer cells crashed (signal {os.WTERMSIG(status)})")
    return NotebookResult(error="the answer cells ended their process before the checks ran")


def main() -> None:
    """Child: read the request on stdin, write the pickled results on stdout."""
    request = json.loads(sys.stdin.buffer.read())
    out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # what the answers print goes nowhere, not into the results
    os.dup2(devnull, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")

    import numpy  # noqa: F401 - imported once here, inherited by every fork

    from . import checks  # noqa: F401

    timeout, memory = request["timeout"], request["memory"]
    results = {job[0]: _forked(job, timeout, memory) for job in request["jobs"]}
    out.write(pickle.dumps(results))
    out.close()


if __name__ == "__main__":
    # Through the package, so that what is pickled names mhsa_helpers.run, not __main__.
    from mhsa_helpers.run import main as _main

    _main()
