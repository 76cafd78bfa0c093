"""What the class-scale grader checks around nbgrader: broken, tampered and hostile submissions.

* :func:`readable_copy`: corrupt notebooks are left out of a shadow copy of the
  submission, so one unreadable notebook costs only that notebook.
* :func:`tampering`: test cells deleted, edited or turned into another cell type,
  and foreign kernelspecs, found by comparing the submission with the source
  (nbgrader then puts the test cells back and forces the grading kernel).
* :func:`events`: what happened while grading, read from the autograded
  notebooks: endless loops stopped, memory exhausted, output cut, stderr,
  monkeypatching or calls to the reference caught by the checks.
* :func:`verify`: every exercise run again: the answer cells in a child
  process that returns values, judged by the checks in this one; a test cell
  that passed in the kernel but fails there loses its points.
"""

from __future__ import annotations

import shutil
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


def readable_copy(submission: Path, shadow: Path) -> list:
    """Copy ``submission`` to ``shadow`` without its unreadable notebooks; return their names."""
    bad = [p.name for p in sorted(submission.glob("*.ipynb")) if read(p) is None]
    if shadow.exists():
        shutil.rmtree(shadow)
    shutil.copytree(submission, shadow, ignore=lambda _d, names: [n for n in names if n in bad])
    return bad


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


_EVENTS = (
    ("CellTimeoutError", "a cell ran past the time limit (endless loop?)"),
    ("MemoryError", "memory limit reached"),
    ("DeadKernelError", "the kernel died"),
    ("output cut at", "output flood cut"),
    ("... Output truncated ...", "output flood cut"),  # nbgrader's own LimitOutput
    ("has been replaced (monkeypatched)", "numpy monkeypatched"),
    ("instead of implementing it", "called the reference implementation"),
    ("changed the interpreter's profiler", "tampered with the profiler"),
)


def events(autograded: Path) -> list:
    """What happened while grading, read from the outputs of the autograded notebooks."""
    found = []
    for path in sorted(autograded.glob("*.ipynb")):
        nb = read(path)
        if nb is None:
            continue
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                text = " ".join(
                    [out.get("ename", ""), out.get("evalue", ""), str(out.get("text", ""))]
                )
                for needle, what in _EVENTS:
                    if needle in text:
                        found.append(f"{path.stem}: {what}")
                if out.get("name") == "stderr" and _nbg(cell).get("grade"):
                    found.append(
                        f"{path.stem}: wrote to stderr in test cell "
                        f"{_nbg(cell).get('grade_id')} (no credit)"
                    )
    return list(dict.fromkeys(found))


def verify(source: Path, submission: Path, timeout: float = 30.0) -> dict:
    """``{notebook: {grade_id: (status, message)}}`` from a clean re-run of every exercise.

    The submission's answer cells run in a child process (one fork per
    notebook, with the grading kernel's memory limit), with the namespace
    the notebook gives them; the visible and hidden checks of every graded
    exercise judge the returned values here. Status "pass", "fail" (the
    message says why) or "unverifiable" (the re-run itself could not run).
    """
    from autograders.kernel import MEMORY_LIMIT
    from mhsa_helpers.exercises import by_grade_id
    from mhsa_helpers.run import Job, judge, run_answers

    graded, jobs = {}, []
    for src_path in sorted(source.glob("*.ipynb")):
        sub, src = read(submission / src_path.name), read(src_path)
        if sub is None or src is None:
            continue
        exercises = [
            by_grade_id(_nbg(c)["grade_id"])
            for c in src.cells
            if _nbg(c).get("grade") and c.cell_type == "code"
        ]
        exercises = [e for e in exercises if e is not None]
        if not exercises:
            continue
        answers = [c.source for c in sub.cells if _nbg(c).get("solution") and c.cell_type == "code"]
        tests = [(e.name, seed) for e in exercises for seed in (None, e.hidden_seed)]
        graded[src_path.stem] = exercises
        jobs.append(Job(src_path.stem, answers, tests))
    results = run_answers(jobs, timeout=timeout, memory=MEMORY_LIMIT)
    out = {}
    for stem, exercises in graded.items():
        result = results[stem]
        out[stem] = {}
        for e in exercises:
            if result.error is not None:
                status = "unverifiable" if result.unverifiable else "fail"
                out[stem][e.grade_id] = (status, result.error)
                continue
            verdicts = [
                judge(e.name, seed, result.outcomes[(e.name, seed)])
                for seed in (None, e.hidden_seed)
            ]
            failed = next((v for v in verdicts if v is not None), None)
            out[stem][e.grade_id] = ("pass", "") if failed is None else ("fail", failed[:200])
    return out
