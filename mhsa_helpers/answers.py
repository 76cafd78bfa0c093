"""The learner's answers: read from saved notebooks, run with the notebook's namespace.

An answer cell runs in the kernel with what the notebook's setup cell
defines: ``np`` and ``mh`` (the course's package, whose earlier steps an
answer may call). Everything that runs answers outside the notebook — the
progress report, the capstone, the explorer, the grader — starts from
:func:`answer_namespace`, so code that follows a notebook's advice works
everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

from .exercises import NOTEBOOKS, of_notebook

__all__ = ["answer_namespace", "answer_sources", "learner_functions", "load_answers"]


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


def load_answers(path) -> dict:
    """Run a saved notebook's answer cells here and return the namespace they fill.

    Used by the capstone to take the learner's own functions from earlier
    notebooks (save them first).
    """
    namespace = answer_namespace()
    for source in answer_sources(path):
        exec(compile(source, str(path), "exec"), namespace)
    return namespace


def learner_functions(directory=".") -> dict:
    """Every function the learner wrote, in any notebook of the course, by name.

    A notebook whose answer cells do not run is skipped (its step's
    functions then come from the reference wherever they are used; the
    progress report says why).
    """
    functions = {}
    for nb in NOTEBOOKS:
        wanted = [e.name for e in of_notebook(nb.stem)]
        path = Path(directory) / f"{nb.stem}.ipynb"
        if not wanted or not path.exists():
            continue
        try:
            namespace = load_answers(path)
        except Exception:  # reported by the progress report; here the reference stands in
            continue
        functions.update({n: namespace[n] for n in wanted if callable(namespace.get(n))})
    return functions
