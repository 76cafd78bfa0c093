"""What one stalling student costs a class's grading: the same class with and without them.

Grades a class of N students (the instructor's answers in every notebook)
with ``python -m autograders grade`` twice on the same machine: all honest,
then the same class with one student whose answers stall. Prints both wall
times, the difference, and the bound it should stay within: one student's
time budget for grading (:class:`mhsa_helpers.budget.Budget`: the pool of a
complete submission, from the reference's time of its calls on this
machine; as the summary says it when the staller spent it, else as timed
here), plus the noise of two runs. Also says whether the summary names the staller and whether the
honest students' grades are the same in both runs.

The staller's attacks (``--attack``):

* ``every`` (the default): in every notebook, the first call of the first
  exercise sleeps 55 s, just under what the old per-notebook cap allowed
  (the 60 s cell limit), and then answers right;
* ``three``: the issue's attack, 50 s in three notebooks (07, 08, 09);
* ``under``: every exercise of every notebook sleeps 2 s each time it is
  called, so that each call (the contract calls a function twice) stays
  just under its own budget: only the student's pool stops it.

Run: .venv/bin/python benchmarks/bench_stall.py [--students 4] [--workers 2] [--attack every]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mhsa_helpers.exercises import exercise, of_notebook  # noqa: E402
from tests.support import nbgrader_course as nc  # noqa: E402

STEMS = sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb"))
STALLER = "staller"


def stalling(name: str, seconds: float, every: bool = False) -> str:
    """Source that wraps the answer ``name`` so that its first call (or ``every``) sleeps."""
    return f"""
import time as _time
_answer_{name}, _slept_{name} = {name}, []


def {name}(*args, **kwargs):
    if {every} or not _slept_{name}:
        _slept_{name}.append(True)
        _time.sleep({seconds})
    return _answer_{name}(*args, **kwargs)
"""


def stalls(attack: str) -> dict:
    """``{notebook: seconds}``: where the staller sleeps, and how long each time."""
    if attack == "three":
        return {"07_softmax": 50, "08_head_output": 50, "09_multi_head": 50}
    return {stem: 2 if attack == "under" else 55 for stem in STEMS if of_notebook(stem)}


def submission(stall: dict, every: bool = False) -> dict:
    """Every notebook with the instructor's answers; in ``stall``'s, the first one stalls.

    With ``every``, every exercise of those notebooks sleeps at each call.
    """
    out = {s: nc.student_notebook(s, "solution") for s in STEMS}
    for stem, seconds in stall.items():
        for e in of_notebook(stem)[: None if every else 1]:
            cell = nc.answer_cells(out[stem])[exercise(e.name).answer_id]
            cell.source += "\n" + stalling(e.name, seconds, every)
    return out


def timed_class(
    tmp: Path, label: str, students: int, workers: int, stall: dict | None, every: bool = False
):
    """Seconds to grade the class, its grades and the summary."""
    course = nc.make_course(tmp / label)
    nc.generate(course)  # the release, its gradebook private
    honest = submission({})
    for i in range(students - (1 if stall else 0)):
        nc.submit(course, f"honest{i}", honest)
    if stall:
        nc.submit(course, STALLER, submission(stall, every))
    start = time.perf_counter()
    proc = nc.grade(course, "--workers", str(workers))
    return time.perf_counter() - start, nc.grades(course), proc.stdout


def pool_s() -> float:
    """One complete submission's pool of time on this machine (as verify computes it)."""
    try:
        from mhsa_helpers.budget import Budget
    except ImportError:  # the code before time budgets: no bound
        return float("nan")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_child import jobs

    return Budget.of_jobs(jobs()).pool_s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=4, help="class size, the staller included")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--attack", choices=("every", "three", "under"), default="every")
    a = p.parse_args()
    stall = stalls(a.attack)
    with tempfile.TemporaryDirectory() as tmp:
        honest_s, honest_grades, _ = timed_class(Path(tmp), "honest", a.students, a.workers, None)
        stall_s, stall_grades, summary = timed_class(
            Path(tmp), "stall", a.students, a.workers, stall, a.attack == "under"
        )
    told = re.search(r"used up \((\d+) s\)", summary)  # the pool the grader computed, if spent
    pool = float(told[1]) if told else pool_s()
    named = re.findall(rf"^! {STALLER}: .*$", summary, re.M)
    others = {k: v for k, v in stall_grades.items() if k[0] != STALLER}
    same = others == {k: v for k, v in honest_grades.items() if k[0] in {o[0] for o in others}}
    full = sum(v for k, v in honest_grades.items() if k[0] == "honest0")
    kept = sum(v for k, v in stall_grades.items() if k[0] == STALLER)
    print(
        f"class of {a.students} students, {a.workers} workers; staller: attack {a.attack!r} "
        f"({len(stall)} notebooks, {sum(stall.values())} s of sleep"
        f"{' at every call' if a.attack == 'under' else ''})"
    )
    print("| class | wall s |")
    print("|---|---|")
    print(f"| all honest | {honest_s:.1f} |")
    print(f"| one staller | {stall_s:.1f} |")
    print(
        f"difference: {stall_s - honest_s:+.1f} s; bound: one student's pool, {pool:.1f} s "
        f"({'as the grader computed it' if told else 'as timed here'})"
    )
    print(f"honest students' grades unchanged: {same}; staller's points: {kept:g} of {full:g}")
    print("staller named in the summary:", (named[0][:300] + " …") if named else "no")


if __name__ == "__main__":
    main()
