"""Where one student's grading goes: the phases of one grading task, and through the cluster.

One honest student with every notebook (the instructor's answers), graded
as the grade command's worker grades it (:func:`autograders.task.grade_submission`,
sandboxed), warm, several times: the wall time of the whole task and of its
phases (the answers judged in the sandbox, nbgrader's ``Autograde``
recording the verdicts, ``GenerateFeedback`` rendering the pages, the
rest: staging the notebooks, the private gradebook, reading the results
back), medians; then the same task through the grade command's own cluster
of one worker (the data there and back), and what the coordinator does
with the result (:func:`autograders.handoff.record`: the course's gradebook,
the files).

    .venv/bin/python benchmarks/bench_student.py [runs]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import nbgrader_course as nc

STUDENT = "ada"


def timed(spent: dict, name: str, fn):
    """``fn``, adding its wall time to ``spent[name]`` on each call."""

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0

    return wrapper


def main(runs: int = 5) -> None:
    from nbgrader.converters import Autograde, GenerateFeedback

    from autograders import integrity, task
    from autograders.grade import dask_client
    from autograders.handoff import course_data, record
    from autograders.roster import load_config

    with tempfile.TemporaryDirectory() as tmp:
        course = nc.make_course(Path(tmp) / "course")
        nc.generate(course)  # the release, its gradebook private
        stems = sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb"))
        nc.submit(course, STUDENT, {s: nc.student_notebook(s, "solution") for s in stems})
        config = load_config(course, None)
        data = course_data(config, course, nc.ASSIGNMENT)
        files, _ = task.files_of(course / "submitted" / STUDENT / nc.ASSIGNMENT)
        task.grade_submission(data, STUDENT, files)  # warm: imports, the seeded gradebook

        verify, run = integrity.verify, task._run
        phases = []
        for _ in range(runs):
            spent: dict = {}
            integrity.verify = timed(spent, "answers judged in the sandbox", verify)

            def by_converter(converter, *args, _spent=spent):
                name = {Autograde: "nbgrader Autograde", GenerateFeedback: "GenerateFeedback"}
                return timed(_spent, name.get(converter, converter.__name__), run)(converter, *args)

            task._run = by_converter
            t0 = time.perf_counter()
            result = task.grade_submission(data, STUDENT, files)
            spent["whole task"] = time.perf_counter() - t0
            phases.append(spent)
        integrity.verify, task._run = verify, run

        through, recorded = [], []
        modes = {"autograded": 0o400, "feedback": 0o600}
        with dask_client(1) as client:
            shared = client.scatter([data], broadcast=True)[0]
            client.submit(task.grade_submission, shared, STUDENT, files, pure=False).result()
            for _ in range(runs):
                t0 = time.perf_counter()
                result = client.submit(
                    task.grade_submission, shared, STUDENT, files, pure=False
                ).result()
                through.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                record(config, course, nc.ASSIGNMENT, STUDENT, result, modes)
                recorded.append(time.perf_counter() - t0)

    names = ["answers judged in the sandbox", "nbgrader Autograde", "GenerateFeedback"]
    median = {n: statistics.median(p[n] for p in phases) for n in [*names, "whole task"]}
    whole = median["whole task"]
    print(f"one honest student, {len(stems)} notebooks, {runs} runs, medians (wall time)")
    print("| phase | s | share |")
    print("|---|---|---|")
    for n in names:
        print(f"| {n} | {median[n]:.2f} | {median[n] / whole:.0%} |")
    rest = whole - sum(median[n] for n in names)
    rows = [
        ("the rest of the task (staging, gradebook, results)", rest, f"{rest / whole:.0%}"),
        ("**the task, called directly**", whole, "100%"),
        ("the task through the grade command's cluster (1 worker)", statistics.median(through), ""),
        ("recording it in the course (gradebook, files)", statistics.median(recorded), ""),
    ]
    for name, seconds, share in rows:
        print(f"| {name} | {seconds:.2f} | {share} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
