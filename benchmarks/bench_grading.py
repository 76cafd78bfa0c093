"""Serial `nbgrader autograde` against `python -m autograders grade`.

Builds N synthetic submissions of every notebook (a third correct, a third
partial, a third untouched) and grades them with serial `nbgrader autograde`
(which runs every notebook in a kernel) and with the grade command on 1 and
2 workers, sandboxed, and on 2 workers without the sandbox, all in the same
run. Prints the times, the speed-up over serial (goal >= 1.8x on 2 cores),
whether the grades are identical, the scaling from 1 to 2 workers and the
sandbox's cost per student, and the overhead of going through Dask per task:
the same judging task (one student's notebooks as bytes) called directly and
through a one-worker LocalCluster (goal: <= 5% of the grading time).
Run: python benchmarks/bench_grading.py [--students 50]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from jupyter_client.manager import start_new_kernel

from tests import nbgrader_course as nc
from tests.mistakes import MISTAKES


def synthetic_class(course: Path, n: int) -> int:
    nc.nbgrader(course, "generate_assignment", nc.ASSIGNMENT, "--force")
    stems = sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb"))
    _, name, source, _ = MISTAKES["softmax_wrong_axis"]
    for i in range(n):
        kind = ("correct", "partial", "untouched")[i % 3]
        if kind == "untouched":
            nbs = {s: nc.student_notebook(s) for s in stems}
        else:
            nbs = {s: nc.student_notebook(s, "solution") for s in stems}
            if kind == "partial":
                nbs["07_softmax"] = nc.student_notebook("07_softmax", {name: source})
        nc.submit(course, f"s{i:03d}_{kind}", nbs)
    return n * len(stems)


def kernel_floor(repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        km, kc = start_new_kernel(kernel_name="python3")
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def timed_grade(tmp: Path, label: str, students: int, *args: str):
    course = nc.make_course(tmp / label)
    synthetic_class(course, students)
    t0 = time.perf_counter()
    nc.grade(course, *args)
    return time.perf_counter() - t0, nc.grades(course)


def dask_overhead(tasks: int = 6) -> tuple[float, float]:
    """Seconds per judging task called directly, and through a one-worker LocalCluster."""
    from autograders.grade import dask_client
    from autograders.task import judge_submission, notebooks_of

    source = notebooks_of(nc.SOLUTIONS)
    judge_submission(source, source)  # warm: imports, sandbox
    t0 = time.perf_counter()
    for _ in range(tasks):
        judge_submission(source, source)
    direct = (time.perf_counter() - t0) / tasks
    with dask_client(1) as client:
        src = client.scatter([source], broadcast=True)[0]
        client.submit(judge_submission, src, source, pure=False).result()  # warm the worker
        t0 = time.perf_counter()
        for _ in range(tasks):
            client.submit(judge_submission, src, source, pure=False).result()
        through = (time.perf_counter() - t0) / tasks
    return direct, through


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=50)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        serial = nc.make_course(tmp / "serial")
        n_nb = synthetic_class(serial, a.students)
        t0 = time.perf_counter()
        nc.nbgrader(serial, "autograde", nc.ASSIGNMENT, "--force")
        t_serial = time.perf_counter() - t0
        reference = nc.grades(serial)
        runs = {
            "autograders grade --workers 1": ("--workers", "1"),
            "autograders grade --workers 2": ("--workers", "2"),
            "autograders grade --workers 2 --no-sandbox": ("--workers", "2", "--no-sandbox"),
        }
        times = {}
        for k, (name, args) in enumerate(runs.items()):
            times[name], grades = timed_grade(tmp, f"run{k}", a.students, *args)
            times[name] = (times[name], grades == reference)
    floor = kernel_floor()
    direct, through = dask_overhead()
    print(f"{a.students} students x {n_nb // a.students} notebooks = {n_nb} submission-notebooks")
    print("| grader | total s | per nb s | speed-up vs serial | grades = serial |")
    print("|---|---|---|---|---|")
    print(f"| nbgrader autograde (serial) | {t_serial:.1f} | {t_serial / n_nb:.3f} | 1.00 | - |")
    for name, (t, same) in times.items():
        print(f"| {name} | {t:.1f} | {t / n_nb:.3f} | {t_serial / t:.2f} | {same} |")
    t1, t2 = times["autograders grade --workers 1"][0], times["autograders grade --workers 2"][0]
    bare = times["autograders grade --workers 2 --no-sandbox"][0]
    print(f"scaling efficiency 1 -> 2 workers: {t1 / (2 * t2):.0%}")
    print(f"sandbox cost: {(t2 - bare) / (a.students):.3f} s per student ({t2 / bare - 1:+.0%})")
    print(f"floor: one bare kernel start {floor:.2f} s")
    print(
        f"one student's judging task: {direct:.2f} s directly, {through:.2f} s through Dask "
        f"(overhead {through - direct:+.3f} s, {through / direct - 1:+.1%})"
    )


if __name__ == "__main__":
    main()
