"""The capstone's comparison of the learner's whole layer with the reference.

The layer is taken from the learner's *saved* ``09_multi_head.ipynb``: the
kernel cannot see a tab's unsaved changes, so every sentence that could
mean "not saved yet" says so, with when the file was last saved.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from . import reference as ref
from .budget import RanLong, limited, ran_long
from .examples import EXAMPLES, get_example
from .execution.child.contract import interrupts_said
from .execution.saved import SAVE_KEYS, CellsRanLong, run_answers_here, saved_ago

__all__ = ["compare_layer", "compare_saved_layer", "show_saved_layer"]

#: The notebook and the function the capstone takes from it.
NOTEBOOK, NAME = "09_multi_head", "multi_head_self_attention"
#: What to do with a layer that runs without end.
_AGAIN = f"Check the loop's condition in {NOTEBOOK}, save it ({SAVE_KEYS}) and run this cell again."


def compare_layer(fn) -> list[tuple[str, int, str, float]]:
    """Run a learner's ``multi_head_self_attention`` on every worked example.

    Returns
    -------
    rows : list of (example, n_heads, mask, max |fn - reference|)
        Every number of heads the example allows, with and without the
        causal mask.

    Raises
    ------
    mhsa_helpers.budget.RanLong
        ``fn`` ran past its time limit on an example (a note names which).
    Exception
        Whatever ``fn`` raises, with a note naming the example it raised on.
    """
    rows = []
    for name in EXAMPLES:
        e = get_example(name)
        for h in e.head_choices:
            for label, mask in (("no mask", None), ("causal", ref.causal_mask(e.T))):
                on = f"on the {name} example, h={h}, {label}"
                start = time.perf_counter()
                ref_out, ref_A = ref.multi_head_self_attention(e.X, *e.weights, h, mask)
                reference_s = time.perf_counter() - start
                try:
                    out, A = _within_time(fn, (e.X, *e.weights, h, mask), on, reference_s)
                except Exception as exc:
                    exc.add_note(on)
                    raise
                diff = max(np.abs(out - ref_out).max(), np.abs(A - ref_A).max())
                rows.append((name, h, label, float(diff)))
    return rows


def _within_time(fn, args: tuple, on: str, reference_s: float):
    """``fn(*args)`` within its time limit (:func:`~mhsa_helpers.budget.limited`)."""

    def interrupted(seconds: float) -> str:
        return ran_long(f"Your {NAME}", seconds, _AGAIN, f" {on}", reference_s, interrupted=True)

    return limited(lambda: fn(*args), reference_s, interrupted)


def compare_saved_layer(directory=".", now: float | None = None) -> tuple[list, str]:
    """Compare the layer saved in ``09_multi_head.ipynb`` with the reference, or say why not.

    Parameters
    ----------
    directory : str or Path
        Where the notebooks are (the capstone's own directory by default).
    now : float, optional
        The present, in seconds since the epoch, for "saved … ago".

    Returns
    -------
    rows : list of (example, n_heads, mask, max |yours - reference|)
        As :func:`compare_layer`; empty when the layer could not be compared.
    sentence : str
        What was compared (the file and when it was saved) or, with no rows,
        why not and what to do: the file is missing; its answer cells
        raise; the function is still ``raise NotImplementedError()`` as
        saved (written but not saved is as likely, and said); it raises
        on an example; or it runs past its time limit (its cells, or the
        layer on an example: "an endless loop?").
    """
    with interrupts_said(f"The comparison of your {NAME} was interrupted: run this cell again."):
        return _compare_saved_layer(Path(directory) / f"{NOTEBOOK}.ipynb", now)


def _compare_saved_layer(path: Path, now: float | None) -> tuple[list, str]:
    """:func:`compare_saved_layer` of the notebook at ``path``."""
    again = f"save {NOTEBOOK} ({SAVE_KEYS}) and run this cell again."
    if not path.exists():
        return [], (
            f"{NOTEBOOK}.ipynb not found next to this notebook: open {NOTEBOOK}.ipynb and save "
            "it (the capstone reads the saved file), then run this cell again."
        )
    saved = f"{saved_ago(path, now)}"
    try:
        fn = run_answers_here(path).get(NAME)
    except CellsRanLong as exc:
        return [], f"{exc}"
    except Exception as exc:  # the learner's cells
        return [], (
            f"Your saved {NOTEBOOK}.ipynb ({saved}) does not run: its answer cells raise "
            f"{type(exc).__name__}: {exc}. The progress report (00_start_here) shows it too. "
            f"Fix it in {NOTEBOOK}, then {again}"
        )
    if not callable(fn):
        return [], (
            f"Your saved {NOTEBOOK}.ipynb ({saved}) defines no function {NAME}. "
            f"If you have written it, {again}"
        )
    try:
        rows = compare_layer(fn)
    except NotImplementedError:
        return [], (
            f"Your saved {NOTEBOOK}.ipynb ({saved}) still has `raise NotImplementedError()` in "
            f"{NAME}. If you have written it, {again}"
        )
    except RanLong as exc:
        where = "; ".join(getattr(exc, "__notes__", []))
        return [], exc.said(
            f"Your {NAME}, as saved in {NOTEBOOK}.ipynb ({saved}),", _AGAIN, f" {where}"
        )
    except Exception as exc:  # the learner's function
        where = "; ".join(getattr(exc, "__notes__", []))
        return [], (
            f"Your {NAME}, as saved in {NOTEBOOK}.ipynb ({saved}), raised "
            f"{type(exc).__name__} {where}: {exc}. Its check in {NOTEBOOK} names the likely "
            f"mistake; once it passes, {again}"
        )
    return rows, f"Your {NAME}, as saved in {NOTEBOOK}.ipynb ({saved}):"


def show_saved_layer(directory=".") -> None:
    """Print :func:`compare_saved_layer`: the sentence, then one line per comparison."""
    rows, sentence = compare_saved_layer(directory)
    print(sentence)
    for name, h, mask, diff in rows:
        print(f"{name:>9}, h={h}, {mask:>7}: max |yours - reference| = {diff:.1e}")
