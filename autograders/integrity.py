"""What the class-scale grader checks around nbgrader: broken, tampered and hostile submissions.

* :func:`readable_copy`: corrupt notebooks are left out of a shadow copy of the
  submission, so one unreadable notebook costs only that notebook.
* :func:`tampering`: test cells deleted, edited or turned into another cell type,
  and foreign kernelspecs, found by comparing the submission with the source
  (nbgrader then puts the test cells back and forces the grading kernel).
* :func:`events`: what happened while grading, read from the autograded
  notebooks: endless loops stopped, memory exhausted, output cut, stderr,
  monkeypatching or calls to the reference caught by the checks.
* :func:`verify`: every exercise run again in a fresh Python process where the
  submission's answer cells cannot reach the checks; a test cell that passed
  in the kernel but fails there loses its points.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
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


_RUNNER = r"""
import contextlib, io, json, os, sys, types
import numpy as np
from autograders import checks as _checks
# Taken before any submitted code runs: the answer cells cannot reach this object.
checks = types.SimpleNamespace(**{n: getattr(_checks, n) for n in _checks.__all__})


def run(answers, tests):
    ns = {"np": np, "__name__": "__main__"}
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            for src in answers:
                exec(compile(src, "<answer>", "exec"), ns)
    except BaseException as exc:
        return {gid: ["unverifiable", f"answer cells fail here: {type(exc).__name__}"]
                for gid, _ in tests}
    results = {}
    for gid, src in tests:
        ns["checks"] = checks
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                exec(compile(src, "<test>", "exec"), ns)
            results[gid] = ["pass", ""]
        except AssertionError as exc:
            results[gid] = ["fail", str(exc)[:200]]
        except BaseException as exc:
            results[gid] = ["unverifiable", f"{type(exc).__name__}: {str(exc)[:120]}"]
    return results


out = {}
for stem, answers, tests in json.loads(sys.stdin.read()):
    r, w = os.pipe()
    pid = os.fork()  # a fresh copy per notebook: one notebook's code cannot touch another's
    if pid == 0:
        os.close(r)
        import resource, signal
        limit = int(os.environ.get("MHSA_GRADER_MEMORY", 3 * 2**30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        signal.alarm(30)  # an endless loop dies here; the parent reports it unverifiable
        data = json.dumps(run(answers, tests)).encode()
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    out[stem] = json.loads(data) if data else {
        gid: ["unverifiable", "the clean re-run died"] for gid, _ in tests}
sys.__stdout__.write("\n" + json.dumps(out) + "\n")
"""


def verify(source: Path, submission: Path, timeout: float = 300.0) -> dict:
    """{notebook: {grade_id: (status, message)}} from a clean re-run of every exercise."""
    jobs = []
    for src_path in sorted(source.glob("*.ipynb")):
        sub = read(submission / src_path.name)
        src = read(src_path)
        if sub is None or src is None:
            continue
        tests = [
            (_nbg(c)["grade_id"], c.source)
            for c in src.cells
            if _nbg(c).get("grade") and c.cell_type == "code"
        ]
        answers = [c.source for c in sub.cells if _nbg(c).get("solution") and c.cell_type == "code"]
        if tests:
            jobs.append((src_path.stem, answers, tests))
    if not jobs:
        return {}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _RUNNER],
            input=json.dumps(jobs),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        res = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        res = {
            stem: {gid: ["unverifiable", "the clean re-run did not finish"] for gid, _ in tests}
            for stem, _, tests in jobs
        }
    return {stem: {gid: tuple(v) for gid, v in r.items()} for stem, r in res.items()}
