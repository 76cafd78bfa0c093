"""Time the test loops and count what they check.

Two figures the README states: the quick loop (``pytest -n auto -m "not
slow"``, pytest-xdist's workers on every core; also timed in one process)
and the whole suite, each as wall time and CPU time (the CPU time of pytest
and every process it starts: a loaded machine changes the first, hardly the
second), with the machine's load (1-minute average) before and after. Beside them,
what the suite checks, counted two ways so that a
change that speeds the loop can show it lost nothing:

* test items collected (each parametrization one item);
* assertions written in ``tests/`` (``assert`` statements and
  ``pytest.raises`` / ``pytest.warns`` blocks, in test and support modules).

Run: python benchmarks/bench_test_loop.py [--whole] [--quick-only] [--count-only] [--tree PATH]
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def count_assertions(tests: Path) -> int:
    """``assert`` statements and ``pytest.raises``/``pytest.warns`` calls under ``tests``."""
    total = 0
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assert):
                total += 1
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("raises", "warns")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "pytest"
            ):
                total += 1
    return total


def collected(tree: Path, *marker: str) -> int:
    """The number of test items ``pytest --collect-only`` finds in ``tree``."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *marker],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    last = [line for line in out.splitlines() if "collected" in line][-1]
    return int(last.split()[0].split("/")[0])


def whole_suite_args(tree: Path) -> tuple[str, ...]:
    """pytest's arguments in the README's test command (the line after its marker)."""
    lines = (tree / "README.md").read_text().splitlines()
    command = lines[lines.index("<!-- test-command -->") + 2]
    return tuple(command.split("-m pytest", 1)[1].split())


def timed(tree: Path, *args: str) -> tuple[float, float, str]:
    """Wall and CPU seconds (pytest and its children) of ``pytest args`` in ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    return wall, cpu, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--whole", action="store_true", help="also time the whole suite")
    parser.add_argument("--count-only", action="store_true", help="only count, time nothing")
    parser.add_argument(
        "--quick-only", action="store_true", help="time the quick loop on every core only"
    )
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    args = parser.parse_args()
    tree = args.tree.resolve()
    print(f"checkout: {tree}")
    print(f"assertions written in tests/: {count_assertions(tree / 'tests')}")
    print(f"test items: {collected(tree)} (quick loop: {collected(tree, '-m', 'not slow')})")
    if args.count_only:
        return
    runs = [
        ("quick loop (-n auto, the README's)", ("-n", "auto", "-m", "not slow")),
        *([] if args.quick_only else [("quick loop, one process", ("-m", "not slow"))]),
    ] + (
        [("whole suite (the README's test command)", whole_suite_args(tree))] if args.whole else []
    )
    for label, extra in runs:
        before = os.getloadavg()[0]
        wall, cpu, summary = timed(tree, *extra)
        load = f"load {before:.1f} before, {os.getloadavg()[0]:.1f} after, {os.cpu_count()} cores"
        print(f"{label}: {wall:.0f} s wall, {cpu:.0f} s CPU ({load}): {summary}")


if __name__ == "__main__":
    main()
