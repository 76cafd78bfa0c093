"""The class report: what the class got wrong, slip by slip, after a grade run.

``python -m autograders report ASSIGNMENT [--db URL] [--course-dir DIR]``
writes it from every grade run of the assignment (:mod:`autograders.results`,
merged: the latest result per student and notebook) and the gradebook
(SQLite or PostgreSQL: scores and lateness); the grade command writes it
too, when it has graded. Three files in ``class-report/ASSIGNMENT/`` of the
course directory (:data:`REPORT`), the instructor's alone (folder ``0700``,
files ``0600``):

* ``index.html``: one page, offline (no script, no request: its content
  security policy allows none), figures as inline SVG
  (:mod:`autograders.report_page`);
* ``report.json``: the same numbers (:func:`build`'s dict);
* ``report.csv``: one row per exercise and outcome, and per exercise and slip.

:func:`build` is the counting, pure: for each exercise how many students
passed, failed the visible test, failed only the hidden one or did not
attempt it, its score distribution, and the slips named (the ids of
:mod:`mhsa_helpers.checks.slips`) with the course's sentence, the students
and their share of the class; failures no check could name apart; the three
slips most worth a lecture; the students who may need help; and every
submission to look at (late, over its time budget, not collected, refused,
not graded, or with a note).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import time
from collections import Counter, defaultdict
from pathlib import Path

__all__ = ["REPORT", "build", "exercises_of", "gradebook_data", "main", "rows", "write"]

#: The report's folder in the course directory (one sub-folder per assignment).
REPORT = "class-report"
#: Slip ids that name nothing: counted apart, never ranked.
UNNAMED = ("unnamed", "grading error")
#: Words of a note that say a submission went over its time budget.
OVER_BUDGET = ("time budget", "was used up")


def exercises_of(source: Path | None = None) -> list[dict]:
    """The course's exercises in order, each with its notebook and the section asking for it.

    Parameters
    ----------
    source : Path, optional
        The assignment's source folder (the instructor's notebooks); the
        section is the last heading above each exercise's answer cell there.

    Returns
    -------
    list of dict
        ``{"notebook", "title", "exercise", "grade_id", "points", "section"}``.
    """
    from mhsa_helpers.exercises import EXERCISES, NOTEBOOKS

    titles = {nb.stem: nb.step for nb in NOTEBOOKS}
    headings = _headings(source, {e.notebook for e in EXERCISES}) if source else {}
    return [
        {
            "notebook": e.notebook,
            "title": titles.get(e.notebook, e.notebook),
            "exercise": e.name,
            "grade_id": e.grade_id,
            "points": e.points,
            "section": headings.get(e.answer_id, titles.get(e.notebook, e.notebook)),
        }
        for e in EXERCISES
    ]


def _headings(source: Path, stems: set) -> dict:
    """``{answer cell id: the last markdown heading above it}`` in the notebooks of ``source``."""
    import re

    import nbformat

    found = {}
    for stem in sorted(stems):
        try:
            nb = nbformat.read(str(Path(source) / f"{stem}.ipynb"), as_version=4)
        except Exception:  # no such notebook: its exercises keep the notebook's title
            continue
        heading = None
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                for line in cell.source.splitlines():
                    m = re.match(r"#{1,4}\s+(.*)", line)
                    if m:
                        heading = m[1].strip()
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if grade_id and heading:
                found[grade_id] = heading
    return found


def gradebook_data(db_url: str, assignment: str) -> dict:
    """Scores and lateness of ``assignment`` from nbgrader's gradebook, in three queries.

    Returns
    -------
    dict
        ``{"scores": {student: {grade_id: score}}, "totals": {student: score},
        "max_score": float, "late": {student: seconds late}}``.
    """
    from nbgrader.api import (
        Assignment,
        Grade,
        Gradebook,
        GradeCell,
        Notebook,
        SubmittedAssignment,
        SubmittedNotebook,
    )

    scores, totals, late = defaultdict(dict), defaultdict(float), {}
    with Gradebook(db_url) as gb:
        max_score = gb.find_assignment(assignment).max_score
        graded = (
            gb.db.query(
                SubmittedAssignment.student_id, GradeCell.name, Grade.score, GradeCell.max_score
            )
            .select_from(Grade)
            .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
            .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .join(GradeCell, Grade.cell_id == GradeCell.id)
            .join(Notebook, GradeCell.notebook_id == Notebook.id)
            .filter(Assignment.name == assignment)
        )
        for student, grade_id, score, _ in graded:
            scores[student][grade_id] = float(score or 0.0)
            totals[student] += float(score or 0.0)
        for sub in (
            gb.db.query(SubmittedAssignment)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .filter(Assignment.name == assignment)
        ):
            seconds = sub.total_seconds_late or 0
            if seconds > 0:
                late[sub.student_id] = float(seconds)
    return {"scores": dict(scores), "totals": dict(totals), "max_score": max_score, "late": late}


def _outcome(record: dict | None) -> tuple[str, str | None, str]:
    """``(outcome, slip, sentence)`` of one exercise's record (None: not submitted)."""
    if not record:
        return "not attempted", None, ""
    outcome = record.get("outcome", "failed")
    test = record.get("visible") if outcome == "failed" else record.get("hidden")
    if outcome in ("failed", "hidden"):
        test = test or {}
        return outcome, str(test.get("slip") or "unnamed"), str(test.get("sentence") or "")
    return outcome, None, ""


def _late(seconds: float) -> str:
    """A lateness in words: "2 h 5 min", "40 s"."""
    minutes, s = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [f"{v} {u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "min")) if v]
    return " ".join(parts) or f"{s} s"


def build(
    assignment: str,
    results: dict,
    exercises: list[dict],
    gradebook: dict | None = None,
    sentence_of=None,
) -> dict:
    """Count the class's outcomes and slips (pure: data in, data out).

    Parameters
    ----------
    assignment : str
        The assignment's name.
    results : dict
        Every grade run merged (:func:`autograders.results.load`).
    exercises : list of dict
        The course's exercises (:func:`exercises_of`).
    gradebook : dict, optional
        :func:`gradebook_data`; without it, an exercise scores its points if
        it passed, else 0, and nothing is late.
    sentence_of : callable, optional
        The course's sentence for a slip id
        (:func:`mhsa_helpers.checks.slips.sentence_of`); a slip it does not know
        is shown with the sentence a student was told (a visible test's first),
        and so is one whose sentence has holes for numbers.

    Returns
    -------
    dict
        ``assignment``, ``students`` (the class: every student graded),
        ``runs``, ``exercises`` (per exercise: ``counts`` of each outcome,
        ``scores`` ``{score: students}``, ``slips`` ranked by students, each
        ``{"id", "sentence", "count", "share", "students", "hidden"}``,
        ``unnamed``), ``top`` (the three slips most worth a lecture: most
        students across the assignment, then most exercises),
        ``help`` (students who may need help, and why), ``submissions``
        (every one to look at: ``{"student", "kind", "reason"}``), ``totals``
        (each student's score) and ``max_score``.
    """
    sentence_of = sentence_of or (lambda slip: "")
    students = sorted(results.get("students", {}))
    n = len(students)
    gb = gradebook or {}
    per_exercise, across = [], defaultdict(lambda: {"students": set(), "exercises": []})
    outcomes_of = defaultdict(dict)  # student: {exercise: (outcome, slip)}
    told = {}
    for e in exercises:
        counts = Counter({k: 0 for k in ("passed", "failed", "hidden", "not attempted")})
        slips, unnamed, scores = defaultdict(list), [], Counter()
        hidden_only = Counter()
        for s in students:
            nb = results["students"][s].get("notebooks", {}).get(e["notebook"]) or {}
            outcome, slip, sentence = _outcome(nb.get("exercises", {}).get(e["grade_id"]))
            counts[outcome] += 1
            outcomes_of[s][e["exercise"]] = (outcome, slip)
            if s in gb.get("scores", {}):
                score = gb["scores"][s].get(e["grade_id"], 0.0)
            else:
                score = float(e["points"]) if outcome == "passed" else 0.0
            scores[score] += 1
            if slip is None:
                continue
            if slip in UNNAMED:
                unnamed.append(s)
                continue
            slips[slip].append(s)
            hidden_only[slip] += outcome == "hidden"
            said = sentence.split(": ", 1)[-1]
            raw = said.find(f" ({e['exercise']}(")  # a relayed error's own words follow
            said = said[:raw] if raw > 0 else said
            if (
                outcome == "failed"
            ):  # the visible test's sentence, with the worked example's numbers
                told[slip] = told[slip] if told.get(slip, ("", 1))[1] == 0 else (said, 0)
            else:
                told.setdefault(slip, (said, 1))
        ranked = sorted(slips.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        entry = dict(e)
        entry["counts"] = dict(counts)
        entry["scores"] = {f"{k:g}": v for k, v in sorted(scores.items())}
        entry["slips"] = [
            {
                "id": slip,
                "sentence": _sentence(slip, sentence_of, told),
                "count": len(who),
                "share": len(who) / n if n else 0.0,
                "hidden": hidden_only[slip],
                "students": who,
            }
            for slip, who in ranked
        ]
        entry["unnamed"] = {"count": len(unnamed), "students": unnamed}
        per_exercise.append(entry)
        for slip, who in slips.items():
            across[slip]["students"].update(who)
            across[slip]["exercises"].append({**e, "count": len(who)})
    top = sorted(
        across.items(), key=lambda kv: (-len(kv[1]["students"]), -len(kv[1]["exercises"]), kv[0])
    )
    top = [
        {
            "id": slip,
            "sentence": _sentence(slip, sentence_of, told),
            "count": len(v["students"]),
            "share": len(v["students"]) / n if n else 0.0,
            "students": sorted(v["students"]),
            "where": [
                {k: e[k] for k in ("notebook", "title", "exercise", "section", "count")}
                for e in sorted(v["exercises"], key=lambda e: -e["count"])
            ],
        }
        for slip, v in top[:3]
    ]
    return {
        "assignment": assignment,
        "generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "students": n,
        "runs": results.get("runs", 0),
        "exercises": per_exercise,
        "top": top,
        "help": _help(students, outcomes_of, results, len(exercises), sentence_of, told),
        "submissions": _submissions(results, gb),
        "totals": {
            s: gb.get("totals", {}).get(
                s,
                sum(
                    float(e["points"])
                    for e in exercises
                    if outcomes_of[s][e["exercise"]][0] == "passed"
                ),
            )
            for s in students
        },
        "max_score": gb.get("max_score") or float(sum(e["points"] for e in exercises)),
    }


def _sentence(slip: str, sentence_of, told: dict) -> str:
    """The course's sentence for ``slip``: its own where it is whole, else as a student was told.

    A sentence with holes (a function's, an f-string's: "…" where its numbers go)
    reads better as a visible test said it, with a worked example's numbers; a
    hidden test's, without them, only where no visible test said it.
    """
    own = sentence_of(slip)
    if own and "…" not in own:
        return own
    return told.get(slip, (own, 2))[0] or own


def _passed_points(exercises: list, mine: dict) -> float:
    """The points of the exercises a student passed (their score without a gradebook)."""
    return sum(float(e["points"]) for e in exercises if mine[e["exercise"]][0] == "passed")


def _help(students, outcomes_of, results, total, sentence_of, told) -> list:
    """The students who may need help: most exercises not passed, or one slip in several."""
    out = []
    for s in students:
        mine = outcomes_of[s]
        c = Counter(outcome for outcome, _ in mine.values())
        why = []
        if c["passed"] * 2 < total:
            why.append(
                f"passed {c['passed']} of {total} exercises ({c['failed'] + c['hidden']} failed, "
                f"{c['not attempted']} not attempted)"
            )
        repeated = Counter(slip for _, slip in mine.values() if slip and slip not in UNNAMED)
        for slip, k in sorted(repeated.items()):
            if k >= 2:
                said = _sentence(slip, sentence_of, told)
                why.append(f"the same slip in {k} exercises: {said}")
        if not results["students"][s].get("ok", True):
            why.append("grading failed (see the submissions below)")
        if why:
            out.append({"student": s, "passed": c["passed"], "why": why})
    return sorted(out, key=lambda h: (h["passed"], h["student"]))


def _submissions(results: dict, gb: dict) -> list:
    """Every submission to look at: late, over budget, not collected, refused, failed, noted."""
    out = []
    for s, seconds in sorted(gb.get("late", {}).items()):
        if s in results.get("students", {}):
            out.append({"student": s, "kind": "late", "reason": f"late by {_late(seconds)}"})
    for s, entry in sorted(results.get("students", {}).items()):
        for note in entry.get("notes", []):
            if any(w in note for w in OVER_BUDGET):
                kind = "over budget"
            elif "not graded" in note or "unreadable" in note or "missing notebook" in note:
                kind = "not graded"
            elif not entry.get("ok", True):
                kind = "grading failed"
            else:
                kind = "to review"
            out.append({"student": s, "kind": kind, "reason": note})
        if not entry.get("ok", True) and not entry.get("notes"):
            out.append({"student": s, "kind": "grading failed", "reason": "grading failed"})
    for s, reasons in sorted(results.get("at_door", {}).items()):
        for reason in reasons:
            out.append({"student": s, "kind": "not collected", "reason": reason})
    for line in results.get("refused", []):
        out.append({"student": None, "kind": "refused", "reason": line})
    return out


def rows(report: dict) -> list[dict]:
    """The report's numbers as CSV rows: per exercise, each outcome, then each slip."""
    out = []
    for e in report["exercises"]:
        base = {"notebook": e["notebook"], "exercise": e["exercise"], "grade_id": e["grade_id"]}
        for outcome, count in e["counts"].items():
            out.append({**base, "row": "outcome", "slip": outcome, "count": count})
        for slip in e["slips"]:
            out.append(
                {
                    **base,
                    "row": "slip",
                    "slip": slip["id"],
                    "sentence": slip["sentence"],
                    "count": slip["count"],
                    "share": f"{slip['share']:.3f}",
                    "hidden_only": slip["hidden"],
                    "students": " ".join(slip["students"]),
                }
            )
        unnamed = e["unnamed"]
        out.append(
            {
                **base,
                "row": "unnamed",
                "slip": "unnamed",
                "count": unnamed["count"],
                "students": " ".join(unnamed["students"]),
            }
        )
    return out


#: The CSV's columns.
COLUMNS = (
    "notebook",
    "exercise",
    "grade_id",
    "row",
    "slip",
    "sentence",
    "count",
    "share",
    "hidden_only",
    "students",
)


def _csv(report: dict) -> str:
    """The CSV's text: a CSV writer's, every text cell neutral (never a spreadsheet formula)."""
    from autograders.export import neutral

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for row in rows(report):
        w.writerow({k: neutral(row.get(k)) for k in COLUMNS})
    return buf.getvalue()


def _private_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only, replacing it whole."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def write(course: Path, assignment: str, db: str | None = None, config=None) -> tuple[dict, Path]:
    """Build the class report of ``assignment`` and write its three files; return it and the page.

    Reads every grade run (:func:`autograders.results.load`), the gradebook
    (``db``, else the course's configuration's) and the instructor's notebooks
    for the sections; writes ``index.html``, ``report.json`` and ``report.csv``
    in :data:`REPORT`/``assignment`` (folder ``0700``, files ``0600``).
    """
    from nbgrader.coursedir import CourseDirectory

    from autograders.report_page import page
    from autograders.results import load
    from autograders.roster import load_config
    from mhsa_helpers.checks.slips import sentence_of

    course = Path(course).resolve()
    config = config or load_config(course, db)
    dirs = CourseDirectory(config=config)
    source = Path(dirs.format_path(dirs.source_directory, ".", assignment))
    results = load(course, assignment)
    try:
        gradebook = gradebook_data(dirs.db_url, assignment)
    except Exception:  # no gradebook, or no such assignment in it: outcomes give the scores
        gradebook = None
    report = build(assignment, results, exercises_of(source), gradebook, sentence_of)
    folder = course / REPORT / assignment
    for part in (folder.parent, folder):
        part.mkdir(mode=0o700, exist_ok=True)
        os.chmod(part, 0o700)
    _private_write(folder / "report.json", json.dumps(report, indent=1, sort_keys=True))
    _private_write(folder / "report.csv", _csv(report))
    _private_write(folder / "index.html", page(report))
    return report, folder / "index.html"


def top_lines(report: dict, path: Path | None = None) -> list[str]:
    """The grade summary's last lines: the three most common slips, and where the report is."""
    lines = []
    if report["top"]:
        lines.append("most common slips:")
        for k, slip in enumerate(report["top"], 1):
            where = ", ".join(f"{w['notebook']} {w['exercise']}" for w in slip["where"])
            lines.append(
                f"  {k}. {slip['count']} student(s), {slip['share']:.0%} ({where}): "
                f"{slip['sentence']}"
            )
    if path is not None:
        lines.append(f"class report: {path}")
    return lines


def main(argv=None) -> int:
    """``python -m autograders report``: write the class report of an earlier grade run."""
    from autograders.ids import printable
    from autograders.private import CourseNotPrivate, private

    p = argparse.ArgumentParser(prog="python -m autograders report", description=__doc__)
    p.add_argument("assignment")
    p.add_argument("--db", help="gradebook URL (default: the course's, SQLite)")
    p.add_argument("--course-dir", default=".", type=Path)
    a = p.parse_args(argv)
    try:
        with private(a.course_dir, a.db):
            report, path = write(a.course_dir, a.assignment, a.db)
    except CourseNotPrivate as exc:
        print(f"no report: {exc}")
        return 2
    for line in top_lines(report, path):
        print(printable(line))
    return 0
