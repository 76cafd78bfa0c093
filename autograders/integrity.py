"""What the class-scale grader checks around nbgrader: broken, tampered and hostile submissions.

* :func:`tampering`: test cells deleted, edited or turned into another cell type,
  and foreign kernelspecs, found by comparing the submission with the source
  (nbgrader then puts the test cells back and forces the grading kernel).
* :func:`verify`: every exercise judged: the answer cells run in a child
  process (sandboxed by the grade command) that returns values, and the
  checks judge them in this one. These verdicts are the points.
"""

from __future__ import annotations

from pathlib import Path

import nbformat


def _nbg(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def read(path: Path):
    """The notebook at ``path``, or None if it is not a readable notebook."""
    try:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
        return nb
    except Exception:  # any unreadable file is treated the same: left out, and named
        return None


def tampering(source: Path, submission: Path, kernel: str) -> list:
    """Test cells and kernelspecs of the submission that differ from the source."""
    found = []
    for src_path in sorted(source.glob("*.ipynb")):
        sub = read(submission / src_path.name)
        if sub is None:
            continue
        src = read(src_path)
        tests = {_nbg(c)["grade_id"]: c for c in src.cells if _nbg(c).get("grade")}
        seen = {_nbg(c).get("grade_id"): c for c in sub.cells if _nbg(c).get("grade_id")}
        stem = src_path.stem
        for gid, cell in tests.items():
            got = seen.get(gid)
            if got is None:
                found.append(f"{stem}: test cell {gid} deleted (restored)")
            elif got.cell_type != cell.cell_type:
                found.append(f"{stem}: test cell {gid} turned into {got.cell_type} (restored)")
            elif (
                got.source.split("### BEGIN HIDDEN TESTS")[0].strip()
                != cell.source.split("### BEGIN HIDDEN TESTS")[0].strip()
            ):
                found.append(f"{stem}: test cell {gid} edited (restored)")
        name = sub.metadata.get("kernelspec", {}).get("name")
        if name not in (None, "python3", kernel):
            found.append(f"{stem}: kernelspec {name!r} replaced by the grading kernel")
    return found


def answer_cells(nb) -> list[str]:
    """The sources of a notebook's answer cells in order, copies of an answer cell included."""
    return [c.source for c in nb.cells if c.cell_type == "code" and _nbg(c).get("solution")]


def verify(source: Path, submission: Path, key: bytes, timeout: float = 30.0, wrapper=None) -> dict:
    """Judge every graded exercise of a submission; the answers run in a child process.

    Returns ``{notebook: {"grades": {grade_id: (passed, message)}, "notes": [str]}}``
    for every notebook of ``source`` that has graded cells and a readable
    counterpart in ``submission``. The answer cells run in a child (in the
    sandbox ``wrapper`` makes, if given) with the namespace the notebook
    gives them; the visible check of each exercise, and the hidden one on
    inputs drawn from the course's secret ``key``, judge the returned values
    here. A hidden test's message names the property that failed, never
    its inputs. An exercise the judge cannot decide scores 0 and is named
    in the notes as a grading error to review; it costs nothing else.
    """
    from autograders.kernel import MEMORY_LIMIT
    from mhsa_helpers.checks import CHECKS, GRADING_ERROR, hidden_seed, job, judge
    from mhsa_helpers.exercises import by_grade_id
    from mhsa_helpers.run import run_answers

    graded, jobs, seeds = {}, [], {}
    for src_path in sorted(source.glob("*.ipynb")):
        sub, src = read(submission / src_path.name), read(src_path)
        if sub is None or src is None:
            continue
        exercises = [
            by_grade_id(_nbg(c).get("grade_id", "")) for c in src.cells if _nbg(c).get("grade")
        ]
        exercises = [e for e in exercises if e is not None]
        if exercises:
            graded[src_path.stem] = exercises
            seeds.update({e.name: hidden_seed(key, e.name) for e in exercises})
            tests = [(e.name, seed) for e in exercises for seed in (None, seeds[e.name])]
            jobs.append(job(src_path.stem, answer_cells(sub), tests))
    results = run_answers(
        jobs, timeout=timeout, memory=MEMORY_LIMIT, wrapper=wrapper, contained=wrapper is not None
    )
    out = {}
    for stem, exercises in graded.items():
        result = results[stem]
        notes = [f"{stem}: {e}" for e in dict.fromkeys(result.events)]
        if result.error:
            notes.append(f"{stem}: {result.error}")
        grades = {}
        for e in exercises:
            if result.error:
                grades[e.grade_id] = (False, f"{e.name}: not graded: {result.error}")
                continue
            seed = seeds[e.name]
            visible = judge(e.name, None, result.outcomes[(e.name, None)])
            hidden = judge(e.name, seed, result.outcomes[(e.name, seed)], hidden=True)
            if visible is None and hidden is None:
                grades[e.grade_id] = (True, f"{e.name}: {CHECKS[e.name].passed}")
            else:
                grades[e.grade_id] = (False, visible or f"{hidden} (hidden tests)")
            if GRADING_ERROR in grades[e.grade_id][1]:
                notes.append(f"{stem}: {e.name}: grading error, to review by hand")
        out[stem] = {"grades": grades, "notes": notes}
    return out
