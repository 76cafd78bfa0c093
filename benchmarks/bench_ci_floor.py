"""The least a clean-clone CI run can cost on this machine and keep the suite's assurance.

Each part below is work the suite cannot skip without proving less; each is
measured once, one after another, on this machine:

1. the CI's own environment: ``python3 -m venv`` and ``pip install -r
   requirements-dev.txt`` (what the README's test command does before any test);
2. the learner's environment: a fresh copy installed with the README's first
   command (what tests/test_binder.py and tests/test_student_lab.py stand on);
3. every notebook run once by a ``python3`` kernel, the solutions and the
   untouched student versions, two kernels at a time (tests/test_course.py);
4. ``nbgrader generate_assignment`` once (every grading test copies its output);
5. one student who submits every notebook, graded by the grade command on two
   workers (the smallest class that runs every notebook through nbgrader's
   autograde in the sandbox).

Their sum is a floor: the suite also grades hostile, stalled and tampered
classes, starts Dask clusters, PostgreSQL and JupyterLab in Chromium, and
sweeps the checks. pip's cache is left as it is (warm here, so part 1 and 2
are at their fastest).

Run: python benchmarks/bench_ci_floor.py [--skip-install]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograders.private import close  # noqa: E402
from tests.support import nbgrader_course as nc  # noqa: E402
from tests.support.environments import build_readme_env  # noqa: E402
from tests.support.kernels import execute_notebooks  # noqa: E402


def timed(label: str, fn) -> float:
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    print(f"{label:<62} {seconds:7.0f} s", flush=True)
    return seconds


def ci_environment(tmp: Path) -> None:
    venv = tmp / "ci-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [venv / "bin" / "pip", "install", "-q", "-r", ROOT / "requirements-dev.txt"],
        check=True,
        capture_output=True,
    )


def every_notebook() -> None:
    stems = sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb"))
    jobs = [(("solution", s), nc.SOLUTIONS / f"{s}.ipynb", nc.SOLUTIONS) for s in stems]
    jobs += [(("fresh", s), nc.STUDENT / f"{s}.ipynb", nc.STUDENT) for s in stems]
    failed = [key for key, (_, error) in execute_notebooks(jobs).items() if error]
    assert not failed, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-install", action="store_true", help="leave out parts 1 and 2 (the installs)"
    )
    args = parser.parse_args()
    total = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.skip_install:
            total += timed(
                "1. CI environment (pip install -r requirements-dev.txt)",
                lambda: ci_environment(tmp),
            )
            total += timed(
                "2. learner's environment (the README's first command)",
                lambda: build_readme_env(tmp / "readme"),
            )
        total += timed(
            "3. every notebook once, solutions and untouched (2 kernels)", every_notebook
        )
        course = nc.make_course(tmp / "course")
        total += timed(
            "4. nbgrader generate_assignment",
            lambda: nc.nbgrader(course, "generate_assignment", nc.ASSIGNMENT, "--force"),
        )
        close(course / "gradebook.db")  # made with this shell's umask: the grade command refuses
        stems = sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb"))
        nc.submit(course, "perfect", {s: nc.student_notebook(s, "solution") for s in stems})
        total += timed(
            "5. one student, every notebook, the grade command (2 workers)",
            lambda: nc.grade(course, "--workers", "2"),
        )
    print(f"{'floor (sum)':<62} {total:7.0f} s = {total / 60:.1f} min")


if __name__ == "__main__":
    main()
