"""Judging one correct submission through the child, one call at a time (issue 22's protocol).

Every notebook's answer cells of the instructor's solutions run in the child
(in the sandbox when bubblewrap is there), with the visible and the hidden
calls of every exercise: the time per notebook and in all, the number of
calls, and the time per call. Medians of several runs.

    .venv/bin/python benchmarks/bench_child.py [runs]
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mhsa_helpers.checks import hidden_seed, job, judge  # noqa: E402
from mhsa_helpers.execution.in_child import run_in_child  # noqa: E402
from mhsa_helpers.execution.saved import answer_sources  # noqa: E402
from mhsa_helpers.exercises import NOTEBOOKS, of_notebook  # noqa: E402

KEY = b"benchmark key"


def jobs() -> list:
    out = []
    for nb in NOTEBOOKS:
        exercises = of_notebook(nb.stem)
        if exercises:
            sources = answer_sources(ROOT / "solutions" / "mhsa" / f"{nb.stem}.ipynb")
            tests = [(e.name, s) for e in exercises for s in (None, hidden_seed(KEY, e.name))]
            out.append(job(nb.stem, sources, tests))
    return out


def main(runs: int = 5) -> None:
    wrapper = None
    if shutil.which("bwrap"):
        from autograders import sandbox

        wrapper = sandbox.wrap
    work = jobs()
    calls = sum(len(r) for j in work for _, _, r in j.tests)
    measured = sum(o.get("memory", False) for j in work for _, _, r in j.tests for *_, o in r)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        results = run_in_child(work, wrapper=wrapper, contained=wrapper is not None)
        times.append(time.perf_counter() - start)
        failed = [
            (stem, key)
            for stem, r in results.items()
            for key, outcomes in r.outcomes.items()
            if judge(key[0], key[1], outcomes) is not None
        ]
        assert not failed, failed
    total = statistics.median(times)
    print(f"sandbox: {'bubblewrap' if wrapper else 'none'}; runs: {runs}")
    print("| notebooks | calls | of them measured (fresh process) | total s | ms per call |")
    print("|---|---|---|---|---|")
    print(f"| {len(work)} | {calls} | {measured} | {total:.2f} | {1000 * total / calls:.1f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
