"""Saved notebooks' answers: read them, and run them in this process.

:func:`answer_sources` reads a saved notebook's answer cells;
:func:`run_answers_here` runs them in this process (the notebook's kernel,
the progress report's) and returns the namespace they fill;
:func:`learner_functions` gathers the learner's functions of every saved
notebook. An answer cell runs in the kernel with what the notebook's setup cell
defines: ``np`` and ``mh`` (the course's package, whose earlier steps an
answer may call). Everything that runs answers outside the notebook — the
progress report, the capstone, the explorer, the grader — starts from
:func:`answer_namespace`, so code that follows a notebook's advice works
everywhere.
"""

from __future__ import annotations

import json
import linecache
import time
from pathlib import Path

from ..budget import duration, kernel_cells_s
from ..exercises import NOTEBOOKS, of_notebook
from .child.contract import Interrupted, TimeLimit, interrupts_said

__all__ = [
    "SAVE_KEYS",
    "CellsRanLong",
    "answer_namespace",
    "answer_sources",
    "learner_functions",
    "run_answers_here",
    "saved_ago",
    "saved_hint",
]

#: The keys that save a notebook in JupyterLab.
SAVE_KEYS = "Ctrl+S / \u2318S"


def saved_ago(path, now: float | None = None) -> str:
    """When ``path`` was last saved, from its modification time: "saved 12 minutes ago".

    Parameters
    ----------
    path : str or Path
        A saved notebook.
    now : float, optional
        The present, in seconds since the epoch (``time.time()`` by default).

    Returns
    -------
    str
        "saved just now" under a minute, then minutes, hours or days (rounded down).
    """
    seconds = max(0.0, (time.time() if now is None else now) - Path(path).stat().st_mtime)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"saved {n} {unit}{'s' if n > 1 else ''} ago"
    return "saved just now"


def saved_hint(name: str, directory=".", now: float | None = None) -> str:
    """Where the learner's ``name`` was read from, for a message that may mean "not saved".

    Functions are read from saved notebooks: one written in an open tab but
    not saved is not seen, and looks unwritten. Returns a sentence naming the
    saved file and when it was saved, and what to do if it is not the
    latest; or that the notebook is not found next to this one.
    """
    from ..exercises import exercise

    stem = exercise(name).notebook
    path = Path(directory) / f"{stem}.ipynb"
    if not path.exists():
        return f"{stem}.ipynb not found next to this notebook: open {stem}.ipynb and save it."
    return (
        f"It is read from your saved {stem}.ipynb ({saved_ago(path, now)}): if you have "
        f"written it, save {stem} ({SAVE_KEYS}) and run this cell again."
    )


def answer_namespace() -> dict:
    """A fresh namespace for answer cells: ``np`` and ``mh``, as the setup cell gives them."""
    import numpy as np

    import mhsa_helpers as mh

    return {"np": np, "mh": mh, "__name__": "__main__"}


def answer_sources(path) -> list[str]:
    """The sources of a notebook's answer cells (nbgrader ``solution`` cells), in order.

    Read as plain JSON (nbformat's import alone takes most of a second).
    """
    cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c.get("cell_type") == "code"
        and c.get("metadata", {}).get("nbgrader", {}).get("solution")
    ]


class CellsRanLong(TimeoutError):
    """A saved notebook's answer cell stopped by its time limit (:func:`run_answers_here`).

    Its message is the sentence: which cell of which notebook, how long, and what to do.
    """

    def __init__(self, stem: str, cell: int, seconds: float):
        self.stem, self.cell, self.seconds = stem, cell, seconds
        super().__init__(
            f"Answer cell {cell} of your saved {stem}.ipynb ran for more than "
            f"{duration(seconds)}: an endless loop? An answer cell only defines functions: "
            f"check the loop's condition, save {stem} ({SAVE_KEYS}) and run this cell again."
        )


def _cell_file(stem: str, cell: int, source: str) -> str:
    """The file name an answer cell runs under, its lines in :mod:`linecache` for tracebacks.

    Not the notebook's path: a traceback would quote that file's lines,
    which are the notebook's JSON.
    """
    name = f"<{stem}.ipynb, answer cell {cell}>"
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    return name


def run_answers_here(path, seconds: float | None = None) -> dict:
    """Run a saved notebook's answer cells in this process; return the namespace they fill.

    Used by the capstone to take the learner's own functions from earlier
    notebooks (save them first). The cells may run ``seconds`` together
    (:func:`~mhsa_helpers.budget.kernel_cells_s` by default: they only
    define functions); past it they are stopped (:class:`CellsRanLong`), and
    the learner's interrupt is one line.

    Raises
    ------
    CellsRanLong
        The cells ran past their time.
    Exception
        Whatever the cells raise.
    """
    stem = Path(path).stem
    namespace = answer_namespace()
    limit, cell = TimeLimit(kernel_cells_s() if seconds is None else seconds), 0
    try:
        with limit:
            for cell, source in enumerate(answer_sources(path), 1):
                exec(compile(source, _cell_file(stem, cell, source), "exec"), namespace)
    except KeyboardInterrupt:
        raise Interrupted(
            f"Answer cell {cell} of your saved {stem}.ipynb was interrupted after "
            f"{duration(limit.elapsed)}: an endless loop? An answer cell only defines functions."
        ) from None
    except BaseException:
        if limit.fired:  # TimedOut, or what the cell raised once it caught it
            raise CellsRanLong(stem, cell, limit.seconds) from None
        raise
    if limit.fired:
        raise CellsRanLong(stem, cell, limit.seconds)
    return namespace


def learner_functions(directory=".") -> dict:
    """Every function the learner wrote, in any notebook of the course, by name.

    A notebook whose answer cells do not run (they raise, or run past
    their time: :class:`CellsRanLong`) is skipped (its step's functions
    then come from the reference wherever they are used; the progress
    report says why).
    """
    functions = {}
    with interrupts_said("Reading your saved notebooks was interrupted: run this cell again."):
        for nb in NOTEBOOKS:
            wanted = [e.name for e in of_notebook(nb.stem)]
            path = Path(directory) / f"{nb.stem}.ipynb"
            if not wanted or not path.exists():
                continue
            try:
                namespace = run_answers_here(path)
            except Exception:  # reported by the progress report; here the reference stands in
                continue
            functions.update({n: namespace[n] for n in wanted if callable(namespace.get(n))})
    return functions
