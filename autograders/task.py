"""Grading one submission as a pure function: notebooks in, verdicts out.

:func:`judge_submission` takes the course's source notebooks and one
student's submitted notebooks as bytes and returns, per notebook, the
verdict of every graded cell and the notes the grader reports. It reads and
writes nothing but a private temporary folder, so it can run on any machine
that has the course package installed (a Dask worker, for instance); the
coordinator alone reads the submission folders and writes the gradebook.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["judge_submission", "notebooks_of"]


def notebooks_of(folder: Path) -> dict[str, bytes]:
    """The ``.ipynb`` files in ``folder`` as ``{name: bytes}`` (symbolic links left out)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(Path(folder).glob("*.ipynb"))
        if p.is_file() and not p.is_symlink()
    }


def judge_submission(
    source: dict[str, bytes],
    submission: dict[str, bytes],
    timeout: float = 60.0,
    sandboxed: bool = True,
) -> dict:
    """Judge one submission: ``{stem: {"grades": {grade_id: [passed, message]}, "notes": [str]}}``.

    Parameters
    ----------
    source : dict of str to bytes
        The course's source (instructor) notebooks, by file name.
    submission : dict of str to bytes
        The student's notebooks, by file name (unreadable ones simply fail).
    timeout : float
        Seconds each notebook's answers may take.
    sandboxed : bool
        Run the answers in the grader's sandbox (:mod:`autograders.sandbox`).
    """
    from autograders import integrity, sandbox

    for name in (*source, *submission):
        if Path(name).name != name or not name.endswith(".ipynb"):
            raise ValueError(f"notebook names must be plain file names, but got {name!r}.")
    with tempfile.TemporaryDirectory(prefix="mhsa-task-") as tmp:
        src, sub = Path(tmp) / "source", Path(tmp) / "submission"
        for folder, files in ((src, source), (sub, submission)):
            folder.mkdir()
            for name, data in files.items():
                (folder / name).write_bytes(data)
        judged = integrity.verify(
            src, sub, timeout=timeout, wrapper=sandbox.wrap if sandboxed else None
        )
    return {
        stem: {
            "grades": {gid: [bool(v[0]), str(v[1])] for gid, v in r["grades"].items()},
            "notes": [str(n) for n in r["notes"]],
        }
        for stem, r in judged.items()
    }
