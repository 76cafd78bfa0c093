"""One student's grading, notebook by notebook: is any notebook's grading out of line?

An honest student (the instructor's answers) submits one notebook at a time; the
grading task the grade command's worker runs (:func:`autograders.task.grade_submission`,
sandboxed, warm) is timed for each, ``runs`` times, and the median wall and CPU
seconds (this process and its children: the sandbox) are printed per notebook with
the machine's load before and after, so that a new notebook (19_induction) can be
compared with the others measured in the same run. Tests never depend on these times.

    .venv/bin/python benchmarks/bench_per_notebook.py [runs]
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import nbgrader_course as nc


def cpu() -> float:
    """CPU seconds of this process and of its children so far."""
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(runs: int = 3) -> None:
    from autograders import task
    from autograders.handoff import course_data
    from autograders.roster import load_config

    stems = sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb"))
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        course = nc.make_course(Path(tmp) / "course")
        nc.generate(course)
        config = load_config(course, None)
        data = course_data(config, course, nc.ASSIGNMENT)
        for k, stem in enumerate(stems):
            student = f"s{k:02d}"
            nc.submit(course, student, {stem: nc.student_notebook(stem, "solution")})
            files, _ = task.files_of(course / "submitted" / student / nc.ASSIGNMENT)
            task.grade_submission(data, student, files)  # warm
            walls, cpus = [], []
            for _ in range(runs):
                w0, c0 = time.perf_counter(), cpu()
                task.grade_submission(data, student, files)
                walls.append(time.perf_counter() - w0)
                cpus.append(cpu() - c0)
            rows.append((stem, statistics.median(walls), statistics.median(cpus)))
    load_after = os.getloadavg()[0]
    print(f"one honest student, one notebook at a time, {runs} runs each, medians")
    print(f"load {load_before:.1f} before, {load_after:.1f} after, {os.cpu_count()} cores")
    print("| notebook | wall s | CPU s |")
    print("|---|---|---|")
    for stem, wall, used in rows:
        print(f"| {stem} | {wall:.2f} | {used:.2f} |")
    walls = [w for _, w, _ in rows]
    print(f"median over notebooks {statistics.median(walls):.2f} s wall, max {max(walls):.2f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
