"""What the class-scale grader checks around nbgrader: broken, tampered and hostile submissions.

* :func:`restore`: every edit of graded, answer and locked cells or of their
  nbgrader metadata undone (deleted, retyped, edited, duplicated, moved,
  grade id or points changed, extra graded cells, foreign kernelspecs), by
  rebuilding the notebook as released with the student's answers in it,
  and named.
* :func:`verify`: every exercise judged: the answer cells run in a child
  process (sandboxed by the grade command) that returns values, and the
  checks judge them in this one. These verdicts are the points.
"""

from __future__ import annotations

import copy
import re
import uuid
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


#: The fields of a cell's nbgrader metadata that decide how it is graded.
_GRADING_FIELDS = ("grade", "solution", "locked", "points", "task")
_HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)
_SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION.*?### END SOLUTION[ \t]*$", re.S | re.M)


def released(cell) -> str:
    """The text of a test or locked source cell as the student got it (hidden tests out)."""
    return _HIDDEN.sub("", cell.source).strip()


def unanswered(cell, stub: str) -> str:
    """An answer cell of the source as released: its solution replaced by ``stub``."""
    return _SOLUTION.sub(lambda m: "\n".join(m[1] + ln for ln in stub.splitlines()), cell.source)


def _kind(cell) -> str:
    meta = _nbg(cell)
    return "test cell" if meta.get("grade") else "answer cell" if meta.get("solution") else "cell"


def _canonical(src_cell, got, stub: str) -> object:
    """The source cell as released, holding the student's answer if it is an answer cell."""
    cell = copy.deepcopy(src_cell)
    if _nbg(src_cell).get("solution"):
        cell.source = got.source if got is not None else unanswered(src_cell, stub)
    return cell


def _matches(src, sub) -> dict:
    """``{grade id: index of the student's cell}``: by grade id first, then by cell id."""
    ids = [_nbg(c)["grade_id"] for c in src.cells if _nbg(c).get("grade_id")]
    found = {}
    for i, cell in enumerate(sub.cells):
        gid = _nbg(cell).get("grade_id")
        if gid in ids and gid not in found:
            found[gid] = i
    taken = set(found.values())
    by_id = {c.get("id"): i for i, c in enumerate(sub.cells) if c.get("id")}
    for cell in src.cells:
        gid = _nbg(cell).get("grade_id")
        i = by_id.get(cell.get("id"))
        if gid and gid not in found and i is not None and i not in taken:
            found[gid] = i
            taken.add(i)
    return found


def _edits(stem: str, gid: str, src_cell, got) -> list:
    """What the student changed in the cell ``gid`` (nothing for an honest cell)."""
    kind, notes = _kind(src_cell), []
    if got.cell_type != src_cell.cell_type:
        notes.append(f"{stem}: {kind} {gid} turned into {got.cell_type} (restored)")
    elif kind != "answer cell" and got.source.strip() != released(src_cell):
        notes.append(f"{stem}: {kind} {gid} edited (restored)")
    meta = _nbg(got)
    if meta.get("grade_id") != gid:
        notes.append(f"{stem}: {kind} {gid} had its grade id changed (restored)")
    changed = [f for f in _GRADING_FIELDS if f in meta and meta.get(f) != _nbg(src_cell).get(f)]
    if changed or (not meta and got.cell_type == src_cell.cell_type):
        what = ", ".join(changed) if changed else "all of it removed"
        notes.append(f"{stem}: {kind} {gid}: nbgrader metadata changed ({what}) (restored)")
    return notes


def restore(src, sub, stem: str, kernel: str, stub: str) -> tuple:
    """The submission ``sub`` as the released notebook would be graded; and what was undone.

    Every graded, answer and locked cell of the source ``src`` appears once,
    with the source's nbgrader metadata: test and locked cells as released,
    answer cells with the student's text (the released stub where the
    student deleted it: the answers' ``stub``). The student's other cells stay, in their order,
    without any nbgrader metadata (so a bonus graded cell, a copied cell or
    an invented grade id grades nothing); copies of an answer cell are
    marked as such (:func:`answer_cells` runs them, as the kernel did). A
    deleted cell comes back after the cell before it in the source. Returns
    ``(notebook, notes)``: one line per edit, in the instructor's terms.
    """
    found, notes = _matches(src, sub), []
    anchors = {_nbg(c)["grade_id"]: c for c in src.cells if _nbg(c).get("grade_id")}
    at = {i: gid for gid, i in found.items()}
    cells, placed = [], []
    for i, cell in enumerate(sub.cells):
        if i in at:
            gid = at[i]
            notes += _edits(stem, gid, anchors[gid], cell)
            cells.append(_canonical(anchors[gid], cell, stub))
            placed.append(gid)
            continue
        plain = copy.deepcopy(cell)
        meta = plain.get("metadata", {}).pop("nbgrader", None)
        gid = (meta or {}).get("grade_id")
        if gid in anchors:
            notes.append(f"{stem}: cell {gid} appears twice (the copy is not graded)")
            if _nbg(anchors[gid]).get("solution") and plain.cell_type == "code":
                plain.metadata["mhsa"] = {"copy_of": gid}
        elif meta and (meta.get("grade") or meta.get("solution") or meta.get("task")):
            notes.append(f"{stem}: extra graded cell {gid!r} added (not graded)")
        cells.append(plain)
    if placed != [g for g in anchors if g in placed]:
        notes.append(f"{stem}: graded cells moved (graded as released)")
    order = list(anchors)
    for k, gid in enumerate(order):
        if gid in found:
            continue
        notes.append(f"{stem}: {_kind(anchors[gid])} {gid} deleted (restored)")
        before = [g for g in order[:k] if g in placed]
        where = 0
        if before:
            where = 1 + next(
                j for j, c in enumerate(cells) if _nbg(c).get("grade_id") == before[-1]
            )
        cells.insert(where, _canonical(anchors[gid], None, stub))
        placed.append(gid)
    seen = set()
    for cell in cells:  # cell ids unique: a copy keeps its text, not its id
        if cell.get("id") in seen or not cell.get("id"):
            cell["id"] = uuid.uuid4().hex[:8]
        seen.add(cell["id"])
    nb = copy.deepcopy(sub)
    nb.cells = cells
    name = sub.metadata.get("kernelspec", {}).get("name")
    if name not in (None, "python3", kernel):
        notes.append(f"{stem}: kernelspec {name!r} replaced by the grading kernel")
        nb.metadata["kernelspec"] = copy.deepcopy(src.metadata.get("kernelspec", {}))
    return nb, list(dict.fromkeys(notes))


def answer_cells(nb) -> list[str]:
    """The sources of a notebook's answer cells in order, copies of an answer cell included."""
    return [
        c.source
        for c in nb.cells
        if c.cell_type == "code"
        and (_nbg(c).get("solution") or c.get("metadata", {}).get("mhsa", {}).get("copy_of"))
    ]


def verify(source: Path, submission: Path, key: bytes, timeout: float = 30.0, wrapper=None) -> dict:
    """Judge every graded exercise of a submission; the answers run in a child process.

    Returns ``{notebook: {"grades": {grade_id: (passed, message)}, "notes": [str],
    "exercises": {grade_id: record}}}`` for every notebook of ``source`` that
    has graded cells and a readable
    counterpart in ``submission``. The answer cells run in a child (in the
    sandbox ``wrapper`` makes, if given) with the namespace the notebook
    gives them; the visible check of each exercise, and the hidden one on
    inputs drawn from the course's secret ``key``, judge the returned values
    here. A hidden test's message names the property that failed, never
    its inputs. An exercise the judge cannot decide scores 0 and is named
    in the notes as a grading error to review; it costs nothing else.
    Each exercise's record (:func:`exercise_record`) keeps, beside each
    test's sentence, the id of the slip it named, for the class report.

    Every request has a time budget tied to the reference's own time on
    its inputs, and the student a pool of them all
    (:mod:`mhsa_helpers.budget`): a call over its budget fails that
    exercise, a spent pool fails what is left, and both are named in the
    notes.
    """
    from autograders.kernel import MEMORY_LIMIT
    from mhsa_helpers.budget import Budget
    from mhsa_helpers.checks import CHECKS, GRADING_ERROR, hidden_seed, job, judgement
    from mhsa_helpers.execution.in_child import run_in_child
    from mhsa_helpers.exercises import by_grade_id

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
    results = run_in_child(
        jobs,
        timeout=timeout,
        memory=MEMORY_LIMIT,
        wrapper=wrapper,
        contained=wrapper is not None,
        budget=Budget.of_jobs(jobs),
    )
    out = {}
    for stem, exercises in graded.items():
        result = results[stem]
        notes = [f"{stem}: {e}" for e in dict.fromkeys(result.events)]
        if result.error:
            notes.append(f"{stem}: {result.error}")
        grades, records = {}, {}
        for e in exercises:
            if result.error:
                grades[e.grade_id] = (False, f"{e.name}: not graded: {result.error}")
                records[e.grade_id] = exercise_record(e.name, (grades[e.grade_id][1], UNNAMED))
                continue
            seed = seeds[e.name]
            visible = judgement(e.name, None, result.outcomes[(e.name, None)])
            hidden = judgement(e.name, seed, result.outcomes[(e.name, seed)], hidden=True)
            if visible[0] is None and hidden[0] is None:
                grades[e.grade_id] = (True, f"{e.name}: {CHECKS[e.name].passed}")
            else:
                grades[e.grade_id] = (False, visible[0] or f"{hidden[0]} (hidden tests)")
            records[e.grade_id] = exercise_record(e.name, visible, hidden)
            if GRADING_ERROR in grades[e.grade_id][1]:
                notes.append(f"{stem}: {e.name}: grading error, to review by hand")
        out[stem] = {"grades": grades, "notes": notes, "exercises": records}
    return out


#: The outcomes of an exercise in a grade run's results (:func:`exercise_record`).
OUTCOMES = ("passed", "failed", "hidden", "not attempted")
#: The slip id of a failure no check could name (:data:`mhsa_helpers.checks.slips.UNNAMED`).
UNNAMED = "unnamed"


def exercise_record(exercise: str, visible: tuple, hidden: tuple = (None, None)) -> dict:
    """What a grade run keeps of one exercise: its outcome, each test's sentence and slip.

    Parameters
    ----------
    exercise : str
        The exercise's name (the registry's).
    visible, hidden : tuple
        ``(sentence, slip)`` of each test (:func:`mhsa_helpers.checks.judgement`):
        ``(None, None)`` where it passed.

    Returns
    -------
    dict
        ``{"exercise", "outcome", "visible", "hidden"}``: the outcome one of
        :data:`OUTCOMES` (``"not attempted"``: the function is not written,
        its stub left or its name gone; ``"hidden"``: only the hidden test
        failed); each test ``None`` where it passed, else ``{"sentence",
        "slip"}`` (a hidden test's sentence is the one its feedback shows).
    """

    def said(test):
        sentence, slip = test
        return None if sentence is None else {"sentence": sentence, "slip": slip or UNNAMED}

    if visible[1] == "not attempted":
        outcome = "not attempted"
    elif visible[0] is not None:
        outcome = "failed"
    elif hidden[0] is not None:
        outcome = "hidden"
    else:
        outcome = "passed"
    return {
        "exercise": exercise,
        "outcome": outcome,
        "visible": said(visible),
        "hidden": said(hidden) if outcome != "not attempted" else None,
    }
