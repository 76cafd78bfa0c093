"""The bounds on one submitted notebook: how many cells and how many bytes the grader takes.

Everything a student adds to a notebook is kept through grading (restored
cells, the autograded notebook, the feedback page), so without a bound
one notebook costs whatever its author likes: 40,000 added one-line cells
(6.4 MB) took 163 s and 1.28 GB to render as a feedback page, against
about 3 s for an honest submission. The grade command therefore sends a
worker no notebook over :data:`MAX_CELLS` cells or :data:`MAX_NOTEBOOK_BYTES`
bytes (:func:`autograders.handoff.submission_files`): that notebook scores
0, is named in the summary and the CSV's ``grading`` column with the limit,
and the student's other notebooks are graded.

The limits are generous multiples of what honest notebooks measure. The
course's own notebooks (``solutions/mhsa``) have at most 30 cells
(``18_training``) and 23 KB without outputs (``17_backward``); run, with
every figure and widget saved, the largest is 1.14 MB (``12_gqa``; 9.5 MB
for all nineteen). A notebook may hold 1000 cells (33 times the most) and
10 MB (about 9 times the largest run one); a feedback page of 1000 cells
renders in about 1.5 s. Sizes are apparent sizes (``st_size``, what a copy
occupies), so a sparse file counts in full.
"""

from __future__ import annotations

import json

__all__ = ["MAX_CELLS", "MAX_NOTEBOOK_BYTES", "cells_in", "over_limit"]

#: Cells one submitted notebook may hold (the course's notebooks have at most 30).
MAX_CELLS = 1000
#: Bytes one submitted notebook may hold, as its size says (the course's run ones: at most 1.14 MB).
MAX_NOTEBOOK_BYTES = 10_000_000


def cells_in(data: bytes) -> int | None:
    """How many cells the notebook ``data`` holds, in every format nbformat reads; None if not JSON.

    Parameters
    ----------
    data : bytes
        A notebook file's contents, as a student wrote them.

    Returns
    -------
    int or None
        The cells of the notebook (``cells``) and of its worksheets (the
        version 3 format, which nbformat upgrades to one list of them all);
        None for a file that is not a JSON object (the grader says it is
        unreadable).
    """
    try:
        nb = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(nb, dict):
        return None
    lists = [nb.get("cells")]
    worksheets = nb.get("worksheets")
    if isinstance(worksheets, list):
        lists += [ws.get("cells") for ws in worksheets if isinstance(ws, dict)]
    return sum(len(cells) for cells in lists if isinstance(cells, list))


def over_limit(size: int, data: bytes | None = None) -> str | None:
    """Why a notebook of ``size`` bytes (contents ``data``, if read) is not graded; None if it is.

    Parameters
    ----------
    size : int
        The notebook file's apparent size (``st_size``); checked before it
        is read.
    data : bytes, optional
        Its contents, to count its cells (:func:`cells_in`; only when it
        holds more objects than :data:`MAX_CELLS`, each cell being one).

    Returns
    -------
    str or None
        ``"a notebook over the course's limit of 1000 cells (it has 40001)"``
        or ``"… of 10 MB (it has 12.5 MB)"``; None within both limits.
    """
    if size > MAX_NOTEBOOK_BYTES:
        return (
            f"a notebook over the course's limit of {MAX_NOTEBOOK_BYTES / 1e6:g} MB "
            f"(it has {size / 1e6:.1f} MB)"
        )
    if data is None or data.count(b"{") <= MAX_CELLS:  # every cell is a JSON object: one "{"
        return None
    cells = cells_in(data)
    if cells is not None and cells > MAX_CELLS:
        return f"a notebook over the course's limit of {MAX_CELLS} cells (it has {cells})"
    return None
