"""Time the start-here progress report: the cell, and the whole notebook.

* the cell: ``progress()`` over all 13 exercises of the course, on a finished
  course (the solutions) and on an untouched one (the student versions),
  median and max of several runs (goal: <= 3 s on 2 cores);
* the notebook: ``00_start_here`` executed top to bottom in a fresh kernel
  beside the solutions, against the floor (a kernel start and
  ``import numpy, matplotlib.pyplot``).

Run: python benchmarks/bench_progress.py [--repeats N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from mhsa_helpers.progress import progress

ROOT = Path(__file__).resolve().parents[1]


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), max(times)


def execute(nb, cwd) -> None:
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    client.execute()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    print("| what | median s | max s |\n|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for label, folder in (("finished", "solutions"), ("untouched", "notebooks")):
            course = Path(tmp) / label
            shutil.copytree(ROOT / folder / "mhsa", course)
            rows = progress(course)
            passing = sum(status == "pass" for *_, status in rows)
            med, worst = timed(lambda c=course: progress(c), a.repeats)
            what = f"progress cell, {label} course ({passing}/{len(rows)} pass)"
            print(f"| {what} | {med:.2f} | {worst:.2f} |")
        course = Path(tmp) / "finished"
        start_here = nbformat.read(str(course / "00_start_here.ipynb"), as_version=4)
        floor = new_notebook(cells=[new_code_cell("import numpy, matplotlib.pyplot")])
        med, worst = timed(lambda: execute(nbformat.from_dict(start_here), course), a.repeats)
        print(f"| whole 00_start_here notebook | {med:.2f} | {worst:.2f} |")
        med, worst = timed(lambda: execute(nbformat.from_dict(floor), course), a.repeats)
        print(f"| floor: kernel start + imports | {med:.2f} | {worst:.2f} |")


if __name__ == "__main__":
    main()
