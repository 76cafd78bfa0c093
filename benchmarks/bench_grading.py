"""Serial `nbgrader autograde` against `python -m autograders grade --workers N`.

Builds N synthetic submissions of every notebook (a third correct, a third
partial, a third untouched), grades them both ways in the same run, and
prints both times, the speed-up (goal >= 1.8x on 2 cores) and the time per
submission-notebook against the floor: starting a bare kernel.
Run: python benchmarks/bench_grading.py [--students 50] [--workers 2]
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=50)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        serial = nc.make_course(Path(tmp) / "serial")
        parallel = nc.make_course(Path(tmp) / "parallel")
        n_nb = synthetic_class(serial, a.students)
        synthetic_class(parallel, a.students)
        t0 = time.perf_counter()
        nc.nbgrader(serial, "autograde", nc.ASSIGNMENT, "--force")
        t_serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        nc.grade(parallel, "--workers", str(a.workers))
        t_par = time.perf_counter() - t0
        same = nc.grades(serial) == nc.grades(parallel)
    floor = kernel_floor()
    print(f"{a.students} students x {n_nb // a.students} notebooks = {n_nb} submission-notebooks")
    print(f"{'grader':<38} {'total (s)':>10} {'per nb (s)':>11}")
    print(f"{'nbgrader autograde (serial)':<38} {t_serial:>10.1f} {t_serial / n_nb:>11.2f}")
    name = f"autograders grade --workers {a.workers}"
    print(f"{name:<38} {t_par:>10.1f} {t_par / n_nb:>11.2f}")
    print(f"{'floor: one bare kernel start':<38} {'':>10} {floor:>11.2f}")
    print(f"speed-up {t_serial / t_par:.2f}x · grades identical: {same}")


if __name__ == "__main__":
    main()
