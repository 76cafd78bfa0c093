"""Serial `nbgrader autograde` against `python -m autograders grade`.

Builds synthetic submissions of every notebook (a third correct, a third
partial, a third untouched) and grades them with serial `nbgrader autograde`
(which runs every notebook in a kernel; a few students, it is slow) and with
the grade command on 1 and 2 workers, sandboxed, and on 2 workers without
the sandbox (a larger class: its fixed start-up cost is then small), all in
the same run. Prints the times per submission-notebook, the speed-up over
serial (goal >= 1.8x on 2 cores), whether the grades of the students both
graded are identical, the scaling from 1 to 2 workers (goal >= 90%) for the
whole class and in the steady state (each command also grades the first
half of the class alone; the difference is the second half's time, without
start-up or warm-up), the sandbox's cost per student, and the overhead of
going through Dask per task: the same grading task (one student's whole
submission, as data) called directly and through the grade command's own
one-worker cluster, one task after another, alternately, medians (goal: <= 5% of the grading
time).
Run: python benchmarks/bench_grading.py [--students 40] [--serial-students 6]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from jupyter_client.manager import start_new_kernel

from tests.support import nbgrader_course as nc
from tests.support.mistakes import MISTAKES


def synthetic_class(course: Path, n: int) -> int:
    nc.generate(course)  # the release, its gradebook private
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


def _result_of_size(size: int) -> dict:
    return {"feedback": {"page.html": b"x" * size}}


def dask_overhead(tmp: Path, tasks: int = 9) -> tuple[float, float, float, int]:
    """Seconds per grading task called directly, through the grade command's own cluster
    of one worker, and for a task that does nothing but return a result of the same size; that size.

    The task is one honest student's whole grading (all notebooks, sandboxed:
    judging, nbgrader's records and the feedback), as the grade command sends it.
    """
    from autograders.grade import dask_client
    from autograders.handoff import course_data
    from autograders.roster import load_config
    from autograders.task import files_of, grade_submission

    course = nc.make_course(tmp / "overhead")
    nc.generate(course)  # the release, its gradebook private
    nc.submit(
        course,
        "ada",
        {p.stem: nc.student_notebook(p.stem, "solution") for p in nc.SOLUTIONS.glob("*.ipynb")},
    )
    data = course_data(load_config(course, None), course, nc.ASSIGNMENT)
    files, _ = files_of(course / "submitted" / "ada" / nc.ASSIGNMENT)
    grade_submission(data, "ada", files)  # warm: imports, sandbox, the seeded gradebook
    size = len(pickle.dumps(grade_submission(data, "ada", files)))
    direct, through, empty = [], [], []
    with dask_client(1) as client:
        shared = client.scatter([data], broadcast=True)[0]
        client.submit(grade_submission, shared, "ada", files, pure=False).result()  # warm
        for _ in range(tasks):  # alternately, so that a slower moment of the machine hits both
            t0 = time.perf_counter()
            grade_submission(data, "ada", files)
            direct.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            client.submit(grade_submission, shared, "ada", files, pure=False).result()
            through.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            client.submit(_result_of_size, size, pure=False).result()
            empty.append(time.perf_counter() - t0)
    return statistics.median(direct), statistics.median(through), statistics.median(empty), size


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=40, help="class size for the grade command")
    p.add_argument(
        "--serial-students",
        type=int,
        default=6,
        help="class size for serial nbgrader autograde (the same first students)",
    )
    p.add_argument("--only-overhead", action="store_true", help="measure Dask's overhead only")
    a = p.parse_args()
    if a.only_overhead:
        with tempfile.TemporaryDirectory() as tmp:
            print_overhead(*dask_overhead(Path(tmp)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        serial = nc.make_course(tmp / "serial")
        n_serial = synthetic_class(serial, a.serial_students)
        t0 = time.perf_counter()
        nc.nbgrader(serial, "autograde", nc.ASSIGNMENT, "--force")
        per_nb_serial = (time.perf_counter() - t0) / n_serial
        reference = nc.grades(serial)
        runs = {
            "autograders grade --workers 1": ("--workers", "1"),
            "autograders grade --workers 2": ("--workers", "2"),
            "autograders grade --workers 2 --no-sandbox": ("--workers", "2", "--no-sandbox"),
        }
        times, halves = {}, {}
        for k, (name, args) in enumerate(runs.items()):
            t, grades = timed_grade(tmp, f"run{k}", a.students, *args)
            graded = {key[0] for key in reference}
            same = {key: v for key, v in grades.items() if key[0] in graded}
            times[name] = (t, same == reference)
            halves[name], _ = timed_grade(tmp, f"half{k}", a.students // 2, *args)
        startup, _ = timed_grade(tmp, "one", 1, "--workers", "1")
    n_nb = a.students * (n_serial // a.serial_students)
    floor = kernel_floor()
    with tempfile.TemporaryDirectory() as tmp:
        direct, through, empty, size = dask_overhead(Path(tmp))
    print(
        f"nbgrader autograde: {a.serial_students} students; grade command: {a.students} students"
        f" x {n_serial // a.serial_students} notebooks = {n_nb} submission-notebooks"
    )
    print("| grader | total s | per nb s | speed-up vs serial | grades = serial |")
    print("|---|---|---|---|---|")
    t_serial = per_nb_serial * n_serial
    print(f"| nbgrader autograde (serial) | {t_serial:.1f} | {per_nb_serial:.3f} | 1.00 | - |")
    for name, (t, same) in times.items():
        print(f"| {name} | {t:.1f} | {t / n_nb:.3f} | {per_nb_serial * n_nb / t:.2f} | {same} |")
    one, two = "autograders grade --workers 1", "autograders grade --workers 2"
    t1, t2 = times[one][0], times[two][0]
    bare = times["autograders grade --workers 2 --no-sandbox"][0]
    print(f"scaling efficiency 1 -> 2 workers, whole class: {t1 / (2 * t2):.0%}")
    extra = a.students - a.students // 2  # the second half of the class: fixed costs cancel
    s1, s2 = ((times[n][0] - halves[n]) / extra for n in (one, two))
    print(
        f"steady state (the last {extra} students: time of the class minus time of the first"
        f" {a.students // 2}): {s1:.2f} s per student with 1 worker, {s2:.2f} s with 2;"
        f" scaling efficiency {s1 / (2 * s2):.0%}"
    )
    print(f"sandbox cost: {(t2 - bare) / (a.students):.3f} s per student ({t2 / bare - 1:+.0%})")
    print(
        f"fixed cost: a class of one student takes {startup:.1f} s with 1 worker, of which"
        f" its grading task {direct:.1f} s (the rest: start-up, cluster, worker warm-up)"
    )
    print(f"floor: one bare kernel start {floor:.2f} s")
    print_overhead(direct, through, empty, size)


def print_overhead(direct: float, through: float, empty: float, size: int) -> None:
    print(
        f"one student's grading task: {direct:.2f} s directly, {through:.2f} s through Dask "
        f"(overhead {through - direct:+.3f} s, {through / direct - 1:+.1%}); Dask's own part, "
        f"a task that only returns a result of the same size ({size / 2**20:.1f} MiB): "
        f"{empty * 1000:.0f} ms ({empty / direct:.1%})"
    )


if __name__ == "__main__":
    main()
