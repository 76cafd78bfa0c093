"""The capstone reads the layer from the SAVED 09_multi_head.ipynb and says so plainly."""

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from mhsa_helpers.capstone import compare_saved_layer, show_saved_layer
from mhsa_helpers.execution.saved import saved_ago

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "notebooks" / "mhsa" / "09_multi_head.ipynb"  # `raise NotImplementedError()`
SOLUTION = ROOT / "solutions" / "mhsa" / "09_multi_head.ipynb"
NOW = 1_800_000_000.0  # a fixed present: no dependence on the clock


def saved(tmp_path, source: Path, minutes_ago: float, answer: str | None = None) -> Path:
    """``source`` copied as tmp_path/09_multi_head.ipynb, saved ``minutes_ago`` before NOW.

    ``answer`` replaces the source of its (only) answer cell.
    """
    path = tmp_path / "09_multi_head.ipynb"
    shutil.copy(source, path)
    if answer is not None:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = [
            c
            for c in nb["cells"]
            if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("solution")
        ]
        assert len(cells) == 1
        cells[0]["source"] = answer
        path.write_text(json.dumps(nb), encoding="utf-8")
    os.utime(path, (NOW - 60 * minutes_ago, NOW - 60 * minutes_ago))
    return path


def test_an_unimplemented_layer_says_saved_or_not_and_when(tmp_path):
    saved(tmp_path, STUDENT, 12.5)
    rows, sentence = compare_saved_layer(tmp_path, now=NOW)
    assert rows == []
    assert sentence.startswith(
        "Your saved 09_multi_head.ipynb (saved 12 minutes ago) still has "
        "`raise NotImplementedError()` in multi_head_self_attention."
    )
    assert "If you have written it, save 09_multi_head (Ctrl+S / \u2318S)" in sentence
    assert "run this cell again" in sentence
    assert "is not implemented yet" not in sentence


def test_a_missing_notebook_is_named_with_what_to_do(tmp_path):
    rows, sentence = compare_saved_layer(tmp_path, now=NOW)
    assert rows == []
    assert sentence.startswith("09_multi_head.ipynb not found next to this notebook:")
    assert "open 09_multi_head.ipynb and save it" in sentence


def test_answer_cells_that_raise_on_load_are_named_and_sent_to_the_progress_report(tmp_path):
    saved(tmp_path, STUDENT, 3, answer="import numpy as np\nW = np.zeros((2, 3)) @ np.zeros(2)\n")
    rows, sentence = compare_saved_layer(tmp_path, now=NOW)
    assert rows == []
    assert "(saved 3 minutes ago) does not run: its answer cells raise ValueError" in sentence
    assert "matmul" in sentence  # numpy's own message
    assert "progress report" in sentence


def test_a_layer_that_raises_on_the_examples_names_the_error_and_the_example(tmp_path):
    wrong = (
        "def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):\n"
        "    Q = X @ W_q\n"
        "    return Q.reshape(n_heads, X.shape[0], -1).T @ W_o, Q  # a reshape that fails\n"
    )
    saved(tmp_path, STUDENT, 60 * 26, answer=wrong)
    rows, sentence = compare_saved_layer(tmp_path, now=NOW)
    assert rows == []
    assert "(saved 1 day ago), raised ValueError on the song example, h=1, no mask" in sentence
    assert "not implemented" not in sentence


def test_a_notebook_without_the_function_says_so(tmp_path):
    saved(tmp_path, STUDENT, 0.2, answer="def multi_head_attention(*args):\n    pass\n")
    rows, sentence = compare_saved_layer(tmp_path, now=NOW)
    assert rows == [] and "(saved just now) defines no function multi_head_self_attention" in (
        sentence
    )


def test_the_solved_notebook_gives_every_comparison_with_tiny_differences(tmp_path, capsys):
    saved(tmp_path, SOLUTION, 2)
    rows, sentence = compare_saved_layer(tmp_path, now=NOW)
    assert sentence == (
        "Your multi_head_self_attention, as saved in 09_multi_head.ipynb (saved 2 minutes ago):"
    )
    examples = {name for name, *_ in rows}
    assert {"song", "students"} <= examples
    assert {mask for *_, mask, _ in rows} == {"no mask", "causal"}
    assert all(diff < 1e-12 for *_, diff in rows)
    show_saved_layer(tmp_path)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Your multi_head_self_attention, as saved") and len(out) == 1 + len(
        rows
    )
    assert "max |yours - reference| =" in out[1]


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (5, "saved just now"),
        (60, "saved 1 minute ago"),
        (119, "saved 1 minute ago"),
        (3 * 3600 + 5, "saved 3 hours ago"),
        (2 * 86400, "saved 2 days ago"),
        (-30, "saved just now"),  # a clock behind the file's: not "in the future"
    ],
)
def test_saved_ago_rounds_down_to_one_unit(tmp_path, seconds, said):
    path = tmp_path / "x.ipynb"
    path.write_text("{}")
    os.utime(path, (NOW - seconds, NOW - seconds))
    assert saved_ago(path, now=NOW) == said


def test_saved_ago_uses_the_clock_by_default(tmp_path):
    path = tmp_path / "x.ipynb"
    path.write_text("{}")
    os.utime(path, (time.time() - 3 * 86400, time.time() - 3 * 86400))
    assert saved_ago(path) == "saved 3 days ago"


def test_training_says_an_unwritten_layer_is_read_from_the_saved_notebook(tmp_path):
    from mhsa_helpers.execution.saved import learner_functions
    from mhsa_helpers.training import layer

    path = saved(tmp_path, STUDENT, 0)
    then = time.time() - 7 * 60 - 30  # layer_functions reads the clock: 30 s to spare
    os.utime(path, (then, then))
    functions = learner_functions(tmp_path)
    assert "multi_head_self_attention" in functions  # the stub, as saved
    _, _, said = layer.layer_functions(functions, directory=tmp_path)
    first, second = said.split("<br>")
    assert "not implemented yet" in first
    assert "read from your saved 09_multi_head.ipynb (saved 7 minutes ago)" in first
    assert "save 09_multi_head (Ctrl+S / \u2318S)" in first
    assert "17_backward.ipynb not found next to this notebook" in second  # not in tmp_path


def test_training_adds_nothing_for_a_solved_layer(tmp_path):
    from mhsa_helpers.execution.saved import learner_functions
    from mhsa_helpers.training import layer

    saved(tmp_path, SOLUTION, 7)
    _, _, said = layer.layer_functions(learner_functions(tmp_path), directory=tmp_path)
    first = said.split("<br>")[0]
    assert "<b>your</b>" in first and "saved" not in first


@pytest.mark.slow  # a real child process
def test_the_progress_report_points_at_the_first_unwritten_function_as_saved(tmp_path, capsys):
    from mhsa_helpers.progress import save_hint, show_progress

    for stem in ("08_head_output", "09_multi_head"):
        shutil.copy(SOLUTION.parent / f"{stem}.ipynb", tmp_path / f"{stem}.ipynb")
    saved(tmp_path, STUDENT, 4)  # 09 as saved: the stub
    rows = [
        ("08_head_output", "attention_head", "pass"),
        ("09_multi_head", "multi_head_self_attention", "not implemented yet: replace …"),
    ]
    hint = save_hint(rows, tmp_path, now=NOW)
    assert hint.startswith(
        "The report reads your saved notebooks: multi_head_self_attention in "
        "09_multi_head.ipynb (saved 4 minutes ago) still has `raise NotImplementedError()`."
    )
    assert save_hint([("08_head_output", "attention_head", "pass")], tmp_path) is None
    show_progress(tmp_path)
    out = capsys.readouterr().out
    assert "The report reads your saved notebooks: multi_head_self_attention in" in out
