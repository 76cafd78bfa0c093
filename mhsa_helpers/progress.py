"""A learner's progress across all exercises, without any nbgrader server.

The answer cells of every saved notebook run in one child process (a fork
per notebook, :mod:`mhsa_helpers.execution.in_child`); the visible check of each exercise
judges what they returned here.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .checks import job, judge
from .execution.in_child import run_in_child
from .execution.saved import SAVE_KEYS, answer_sources, saved_ago
from .exercises import NOTEBOOKS, of_notebook

__all__ = ["progress", "save_hint", "show_progress"]


def progress(directory=".", timeout: float = 30.0) -> list[tuple[str, str, str]]:
    """Rows ``(notebook, function, status)`` for every exercise; status "pass" or why not."""
    directory = Path(directory)
    rows, jobs = [], []
    for nb in NOTEBOOKS:
        exercises = of_notebook(nb.stem)
        path = directory / f"{nb.stem}.ipynb"
        if exercises and path.exists():
            jobs.append(job(nb.stem, answer_sources(path), [(e.name, None) for e in exercises]))
    results = run_in_child(jobs, timeout=timeout)
    for nb in NOTEBOOKS:
        for e in of_notebook(nb.stem):
            result = results.get(nb.stem)
            if result is None:
                status = "notebook not found"
            elif result.error:
                status = result.error
            else:
                status = judge(e.name, None, result.outcomes[(e.name, None)]) or "pass"
            rows.append((nb.stem, e.name, status))
    return rows


def show_progress(directory=".") -> None:
    """Print the progress table: one line per exercise, a tick where it passes.

    The last line says how many pass; while some do not, it goes to stderr,
    which nbgrader's Validate reads as a failing test (00's only test).
    """
    rows = progress(directory)
    done = sum(status == "pass" for *_, status in rows)
    stem_w = max((len(stem) for stem, *_ in rows), default=0)
    name_w = max((len(name) for _, name, _ in rows), default=0)
    for stem, name, status in rows:
        mark = "\u2713" if status == "pass" else "\u2717"
        detail = "" if status == "pass" else f"  \u2014 {_without_name(status, name)}"
        print(f"{mark} {stem:<{stem_w}}  {name:<{name_w}}{detail}")
    if done == len(rows):
        print(f"\n\u2713 All {len(rows)} exercises pass.")
        return
    hint = save_hint(rows, directory)
    if hint:
        print(f"\n{hint}")
    sys.stdout.flush()  # the table before the last line, in one output area's order
    left = len(rows) - done
    print(f"\u2717 {done} of {len(rows)} exercises pass; {left} to go.", file=sys.stderr)


def save_hint(rows, directory=".", now: float | None = None) -> str | None:
    """A line for the first exercise "not implemented yet": it may be written but not saved.

    The report reads saved notebooks; the first unwritten function in course
    order is most likely the one being written. Returns None when every
    function is at least written (or its notebook is not found).
    """
    for stem, name, status in rows:
        path = Path(directory) / f"{stem}.ipynb"
        if status.startswith("not implemented yet") or f"{name} is not implemented yet" in status:
            if path.exists():
                return (
                    f"The report reads your saved notebooks: {name} in {stem}.ipynb "
                    f"({saved_ago(path, now)}) still has `raise NotImplementedError()`. If you "
                    f"have written it, save {stem} ({SAVE_KEYS}) and run this cell again."
                )
    return None


def _without_name(status: str, name: str) -> str:
    """A check's sentence without the function's name in front (the row already names it).

    "not implemented yet" stands alone: the notebook's own test cell says what to do.
    """
    for prefix in (f"{name}: ", f"{name} is ", f"{name} "):
        if status.startswith(prefix):
            status = status.removeprefix(prefix)
            break
    return "not implemented yet" if status.startswith("not implemented yet") else status
