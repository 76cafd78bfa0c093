"""Issue 45: a notebook over the course's limits of cells or bytes is not graded, and is named.

A notebook with 40,000 added cells took 163 s and 1.28 GB to render as a
feedback page. The grade command now sends no notebook over
:data:`~autograders.limits.MAX_CELLS` cells or
:data:`~autograders.limits.MAX_NOTEBOOK_BYTES` bytes to a worker: it scores
0, is named with the limit (summary, CSV) and the others are graded. These
tests are in process; ``tests/test_grading.py``'s hostile class grades one
such notebook with real nbgrader.
"""

from __future__ import annotations

import json

import nbformat
from traitlets.config import Config

from autograders.export import partly_graded, record_partial
from autograders.handoff import submission_files
from autograders.limits import MAX_CELLS, MAX_NOTEBOOK_BYTES, cells_in, over_limit
from autograders.task import left_out_note
from tests.support import nbgrader_course as nc


def _notebook(cells: int) -> bytes:
    """The released 01_input with one-line code cells added up to ``cells`` cells."""
    nb = json.loads(nbformat.writes(nc.student_notebook("01_input")))
    line = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    nb["cells"] += [
        {**line, "id": f"added-{i}", "source": f"x = {i}"} for i in range(cells - len(nb["cells"]))
    ]
    return json.dumps(nb, indent=1).encode()


def test_the_limits_are_generous_multiples_of_the_course_notebooks():
    sizes = [p.stat().st_size for p in nc.SOLUTIONS.glob("*.ipynb")]
    counts = [cells_in(p.read_bytes()) for p in nc.SOLUTIONS.glob("*.ipynb")]
    assert len(counts) == len(sizes) > 10
    assert MAX_CELLS >= 20 * max(counts), (MAX_CELLS, max(counts))
    assert MAX_NOTEBOOK_BYTES >= 100 * max(sizes), (MAX_NOTEBOOK_BYTES, max(sizes))


def test_cells_are_counted_in_every_format_nbformat_reads():
    assert cells_in(_notebook(MAX_CELLS)) == MAX_CELLS
    v3 = {"nbformat": 3, "worksheets": [{"cells": [{}] * 3}, {"cells": [{}] * 4}, "junk"]}
    assert cells_in(json.dumps(v3).encode()) == 7
    for not_a_notebook in (b"{not json", b"[1, 2]", b'"cells"', b"[" * 100_000):
        assert cells_in(not_a_notebook) is None


def test_a_notebook_is_over_the_limit_one_cell_or_one_byte_past_it():
    at_cells = _notebook(MAX_CELLS)
    assert over_limit(len(at_cells), at_cells) is None
    past = _notebook(MAX_CELLS + 1)
    assert over_limit(len(past), past) == (
        f"a notebook over the course's limit of {MAX_CELLS} cells (it has {MAX_CELLS + 1})"
    )
    assert over_limit(MAX_NOTEBOOK_BYTES) is None
    assert over_limit(MAX_NOTEBOOK_BYTES + 1) == (
        f"a notebook over the course's limit of {MAX_NOTEBOOK_BYTES / 1e6:g} MB (it has 10.0 MB)"
    )


def test_the_hand_off_sends_no_notebook_over_the_limits_and_says_why(tmp_path):
    folder = tmp_path / "submitted" / "ada" / "mhsa"
    folder.mkdir(parents=True)
    honest = nbformat.writes(nc.student_notebook("07_softmax", "solution")).encode()
    (folder / "07_softmax.ipynb").write_bytes(honest)
    (folder / "01_input.ipynb").write_bytes(_notebook(40_000))
    with open(folder / "09_multi_head.ipynb", "wb") as f:  # sparse: its size counts in full
        f.truncate(MAX_NOTEBOOK_BYTES + 1)
    (folder / "04_heads.ipynb").write_bytes(_notebook(MAX_CELLS))  # at the limit: graded
    (folder / "timestamp.txt").write_text("2026-01-05 10:00:00.000000 UTC")
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    files, left_out = submission_files(config, "mhsa", "ada")
    limit_mb = f"{MAX_NOTEBOOK_BYTES / 1e6:g}"
    assert set(files) == {"07_softmax.ipynb", "04_heads.ipynb", "timestamp.txt"}
    assert files["07_softmax.ipynb"] == honest
    over = "a notebook over the course's limit of"
    assert left_out == {
        "01_input.ipynb": f"{over} {MAX_CELLS} cells (it has 40000)",
        "09_multi_head.ipynb": f"{over} {limit_mb} MB (it has 10.0 MB)",
    }
    assert left_out_note("01_input.ipynb", left_out["01_input.ipynb"]) == (
        f"01_input.ipynb is a notebook over the course's limit of {MAX_CELLS} cells "
        "(it has 40000): not graded, scored 0"
    )


def test_the_csv_record_of_notebooks_left_out_is_kept_and_cleared(tmp_path):
    record_partial(tmp_path, "ada", ["01_input.ipynb is a notebook over …"])
    record_partial(tmp_path, "bea", ["x"])
    record_partial(tmp_path, "bea", None)
    assert partly_graded(tmp_path) == {"ada": ["01_input.ipynb is a notebook over …"]}
