"""The class report of a seeded class of 200 students over the whole course: exact and fast.

Grading 200 students for real takes the grade command about 200 × 4 s of
worker time (benchmarks/bench_student.py), so this benchmark does not: it
builds what a grade run records through the same code as the grader from the
judging on. For every exercise of the course it takes the instructor's
answer, the released stub (not attempted) and up to four catalogued learner
mistakes (tests/support/mistakes.py, fresh_mistakes.py), and has the real
checks judge each answer once, visible and hidden tests
(:func:`mhsa_helpers.checks.judgement`, as :func:`autograders.integrity.verify`
does, here in-process instead of in the sandbox). 200 students are seeded:
each notebook submitted or not, each exercise one of those answers; every
student's verdicts go through :func:`autograders.integrity.exercise_record` and
:class:`autograders.results.RunLog` in two grade runs (the second regrades 20
students with other answers, as a resubmission would), and their scores into
a real nbgrader gradebook (SQLite, some submissions late). Then the report is
written as the grade command writes it (:func:`autograders.report.write`),
timed (wall and CPU), in this process and in a fresh one (imports included),
and its counts are compared with the seeds: per exercise, each outcome and
each slip's students, exactly.

    .venv/bin/python benchmarks/bench_report.py [--students 200] [--shots docs/screenshots]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import nbgrader_course as nc

KEY = b"the benchmark's hidden-test key"
STUB = "def {name}{signature}:\n    raise NotImplementedError\n"


def answers_by_exercise(per_exercise: int = 4) -> dict:
    """``{exercise: {answer key: (sentence-slip pairs, outcome, slip)}}``, each judged once."""
    from autograders.integrity import exercise_record
    from mhsa_helpers.checks import CHECKS, hidden_seed, judgement
    from mhsa_helpers.exercises import EXERCISES
    from tests.support.answers import load, solution
    from tests.support.fresh_mistakes import FRESH
    from tests.support.mistakes import MISTAKES

    found = defaultdict(dict)
    for key, (_, name, source, _) in sorted({**MISTAKES, **FRESH}.items()):
        if len(found[name]) < per_exercise:
            found[name][key] = source
    out = {}
    for e in EXERCISES:
        fns = {"solution": solution(e.name), "stub": load(STUB.format(**vars(e)), e.name)}
        fns.update({k: load(src, e.name) for k, src in found[e.name].items()})
        judged = {}
        for key, fn in fns.items():
            seed = hidden_seed(KEY, e.name)
            check = CHECKS[e.name]
            visible = judgement(e.name, None, check.outcomes_here(fn, check.calls(None)))
            hidden_out = check.outcomes_here(fn, check.calls(seed), hidden=True)
            hidden = judgement(e.name, seed, hidden_out, hidden=True)
            judged[key] = exercise_record(e.name, visible, hidden)
        out[e.name] = judged
    return out


def seed_class(n: int, judged: dict, rng: random.Random) -> dict:
    """``{student: {notebook: {grade_id: answer key}}}``: each notebook submitted or not."""
    from mhsa_helpers.exercises import EXERCISES

    plan = {}
    for i in range(n):
        mine = defaultdict(dict)
        skipped = {nb for nb in {e.notebook for e in EXERCISES} if rng.random() < 0.05}
        for e in EXERCISES:
            if e.notebook in skipped:
                continue
            keys = sorted(judged[e.name])
            r = rng.random()
            if r < 0.5:
                key = "solution"
            elif r < 0.6:
                key = "stub"
            else:
                key = rng.choice([k for k in keys if k not in ("solution", "stub")] or ["stub"])
            mine[e.notebook][e.grade_id] = key
        plan[f"st{i:03d}"] = dict(mine)
    return plan


def expected(plan: dict, judged: dict) -> dict:
    """From the seeds alone: ``{exercise: {"counts": …, "slips": {id: [students]}}}``."""
    from mhsa_helpers.exercises import EXERCISES

    out = {}
    for e in EXERCISES:
        counts = Counter({"passed": 0, "failed": 0, "hidden": 0, "not attempted": 0})
        slips = defaultdict(list)
        for s in sorted(plan):
            key = plan[s].get(e.notebook, {}).get(e.grade_id)
            if key is None:
                counts["not attempted"] += 1
                continue
            rec = judged[e.name][key]
            counts[rec["outcome"]] += 1
            test = {"failed": rec["visible"], "hidden": rec["hidden"]}.get(rec["outcome"])
            if test and test["slip"] not in ("unnamed", "grading error"):
                slips[test["slip"]].append(s)
        out[e.name] = {"counts": dict(counts), "slips": dict(slips)}
    return out


def record(course: Path, plans: list[dict], judged: dict) -> None:
    """Each plan as one grade run: every student's line through :class:`RunLog`."""
    from autograders.grade import _notebooks
    from autograders.results import RunLog
    from mhsa_helpers.exercises import EXERCISES

    by_grade_id = {e.grade_id: e.name for e in EXERCISES}
    for plan in plans:
        log = RunLog(course, nc.ASSIGNMENT, _notebooks(None, nc.ASSIGNMENT))
        for s, mine in plan.items():
            exercises = {
                stem: {gid: judged[by_grade_id[gid]][key] for gid, key in graded.items()}
                for stem, graded in mine.items()
            }
            notes = []
            if s.endswith("7"):
                notes.append("07_softmax: softmax: a call ran over its time budget (3.1 s)")
            log.student(s, True, notes, exercises)
        log.run([], {})
        log.close()


def gradebook(course: Path, plan: dict, judged: dict) -> None:
    """Every student's scores in the course's SQLite gradebook; one in ten submitted late."""
    from nbgrader.api import (
        Grade,
        Gradebook,
        GradeCell,
        SubmittedAssignment,
        SubmittedNotebook,
    )

    from mhsa_helpers.exercises import EXERCISES

    points = {e.grade_id: (e.name, e.points) for e in EXERCISES}
    due = datetime.datetime(2026, 11, 1, 12, 0)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment(nc.ASSIGNMENT, duedate=due)
        for k, (s, mine) in enumerate(sorted(plan.items())):
            gb.update_or_create_student(s)
            late = datetime.timedelta(hours=3) if k % 10 == 3 else -datetime.timedelta(hours=1)
            sub = gb.add_submission(nc.ASSIGNMENT, s, timestamp=due + late)
            keys = {gid: key for graded in mine.values() for gid, key in graded.items()}
            grades = (
                gb.db.query(Grade, GradeCell.name)
                .join(GradeCell, Grade.cell_id == GradeCell.id)
                .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                .filter(SubmittedNotebook.assignment_id == sub.id)
            )
            for grade, gid in grades:
                name, worth = points.get(gid, (None, 0))
                key = keys.get(gid)
                passed = key is not None and judged[name][key]["outcome"] == "passed"
                grade.auto_score = float(worth) if passed else 0.0
            gb.db.commit()
        assert gb.db.query(SubmittedAssignment).count() == len(plan)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--students", type=int, default=200)
    p.add_argument("--shots", type=Path, help="write screenshots of the page (1400×900) here")
    a = p.parse_args()
    rng = random.Random(2026)
    t0 = time.perf_counter()
    judged = answers_by_exercise()
    n_answers = sum(map(len, judged.values()))
    print(f"judged {n_answers} distinct answers of 22 exercises: {time.perf_counter() - t0:.0f} s")
    first = seed_class(a.students, judged, rng)
    again = sorted(rng.sample(sorted(first), 20))
    second = seed_class(len(again), judged, rng)
    second = {s: plan for s, plan in zip(again, second.values(), strict=True)}
    latest = {**first, **second}
    with tempfile.TemporaryDirectory() as tmp:
        course = nc.make_course(Path(tmp) / "course")
        nc.generate(course)
        t0 = time.perf_counter()
        record(course, [first, second], judged)
        gradebook(course, latest, judged)
        print(f"recorded 2 runs and the gradebook: {time.perf_counter() - t0:.0f} s")
        from autograders.private import private
        from autograders.report import write

        load = os.getloadavg()
        cpu0, t0 = time.process_time(), time.perf_counter()
        with private(course):
            report, page = write(course, nc.ASSIGNMENT)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        code = (
            "import sys; sys.path.insert(0, sys.argv[2]); from pathlib import Path; "
            "from autograders.private import private; from autograders.report import write\n"
            "with private(sys.argv[1]): write(Path(sys.argv[1]), 'mhsa')"
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t1 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code, str(course), str(nc.ROOT)], check=True, env=nc.env()
        )
        cold_wall = time.perf_counter() - t1
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cold_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        want = expected(latest, judged)
        got = {
            e["exercise"]: {
                "counts": e["counts"],
                "slips": {s["id"]: sorted(s["students"]) for s in e["slips"]},
            }
            for e in report["exercises"]
        }
        exact = got == want
        again_report = json.loads((page.parent / "report.json").read_text())
        print(
            f"students: {report['students']} · exercises: {len(report['exercises'])} · "
            f"named failures: {sum(s['count'] for e in report['exercises'] for s in e['slips'])} · "
            f"distinct slips: {len({s['id'] for e in report['exercises'] for s in e['slips']})}"
        )
        print(f"counts equal the seeds, per exercise and per slip: {exact}")
        print(
            f"report written after grading, warm (this process): {wall:.2f} s wall, {cpu:.2f} s CPU"
        )
        print(
            f"report command in a fresh process (imports included): {cold_wall:.2f} s wall, "
            f"{cold_cpu:.2f} s CPU"
        )
        print(
            f"machine: {os.cpu_count()} cores, load average before {load[0]:.2f} "
            f"{load[1]:.2f} {load[2]:.2f}"
        )
        print("top three:", [(t["id"], t["count"]) for t in report["top"]])
        print(f"page: {page.stat().st_size / 1e3:.0f} kB; json {again_report['students']} students")
        if a.shots:
            shots(page, a.shots)
        if not exact:
            for name in want:
                if got.get(name) != want[name]:
                    print("differs:", name, got.get(name), want[name])
            raise SystemExit(1)


def shots(page: Path, folder: Path) -> None:
    """Screenshots of the page, 1400×900: its top, the picture of the class, an exercise."""
    from playwright.sync_api import sync_playwright

    from tests.support.lab_harness import CHROMIUM, CHROMIUM_ARGS

    folder.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        view = browser.new_page(viewport={"width": 1400, "height": 900})
        view.goto(page.as_uri())
        view.screenshot(path=str(folder / "class-report-top.png"))
        for name, selector in (("glance", "#glance"), ("exercise", "#softmax")):
            view.evaluate(f"document.querySelector('{selector}').scrollIntoView()")
            view.screenshot(path=str(folder / f"class-report-{name}.png"))
        browser.close()


if __name__ == "__main__":
    main()
