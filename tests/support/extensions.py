"""What the extensions' tests share: an answer cell run as the notebook runs it, a check's
sentence, a widget's picture, and each extension's check as the shared tests exercise it
(:class:`Extension`: a right answer, its slips, unusual right answers, contract breaches)."""

from __future__ import annotations

import contextlib
import io
import linecache
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mhsa_helpers import checks
from mhsa_helpers.checks.failures import CheckFailed
from mhsa_helpers.execution.saved import answer_namespace
from tests.support.pictures import without_ids


def load(source: str, name: str):
    """The function ``name`` defined by an answer cell, run as the notebook runs it.

    Parameters
    ----------
    source : str
        The answer cell's source.
    name : str
        The function it defines.

    Returns
    -------
    callable
        The function, defined in the namespace a notebook gives its answer cells; its
        source is registered with ``linecache`` under a cell's name, as IPython
        registers every cell it runs.
    """
    namespace = answer_namespace()
    cell = f"<answer cell {name}>"
    linecache.cache[cell] = (len(source), None, source.splitlines(True), cell)
    exec(compile(source, cell, "exec"), namespace)
    return namespace[name]


def verdict(name: str, fn, hidden: bool = False) -> str | None:
    """The sentence with which the visible (or the hidden) check of ``name`` fails ``fn``.

    Parameters
    ----------
    name : str
        The exercise.
    fn : callable
        The learner's function.
    hidden : bool, default=False
        Run the hidden check instead of the visible one.

    Returns
    -------
    str or None
        The failure's sentence; None where ``fn`` passes.
    """
    try:
        (checks.check_hidden if hidden else checks.check)(name, fn)
    except CheckFailed as exc:
        return str(exc)
    return None


def fails(name: str, source: str, hidden: bool = False) -> str:
    """The sentence with which the visible (or the hidden) check of ``name`` fails an answer.

    Parameters
    ----------
    name : str
        The exercise.
    source : str
        The answer cell's source, which defines ``name``.
    hidden : bool, default=False
        Run the hidden check instead of the visible one.

    Returns
    -------
    str
        The failure's sentence (the test fails where the check passes).
    """
    said = verdict(name, load(source, name), hidden)
    assert said is not None, f"the {'hidden' if hidden else 'visible'} check of {name} passes"
    return said


def picture(widget) -> str:
    """The widget's picture, its drawing's own ids left out (to compare two drawings)."""
    return without_ids(widget.figure.value)


def panels(widget, **values) -> list[dict]:
    """The panels a :class:`~mhsa_helpers.widgets.panels.PanelsWidget` shows for ``values``
    (its controls moved as the page moves them), each matrix ``M`` a float array again.

    Parameters
    ----------
    widget : PanelsWidget
        The widget.
    **values
        Controls to move first (the others keep their values).

    Returns
    -------
    list of dict
        The state's panels as sent to the page, ``M`` decoded (NaN, ±∞ included).
    """
    if values:
        widget.values = {**widget.values, **values}
    return [
        {**p, "M": np.array(p["M"], dtype=float)} for p in widget.current()["picture"]["panels"]
    ]


def figure_calls(notebook: str, **names) -> list[tuple]:
    """Every ``heads_figure`` call of the course's notebook's cell that draws with it.

    Parameters
    ----------
    notebook : str
        The notebook's source in ``course/`` (``"12_gqa"``).
    **names
        The names its setup cell defines that the cell uses (``q``, ``x``, ``c``).

    Returns
    -------
    list of (ndarray, dict)
        The weights each call draws and its keywords, in order: what the figure shows.
    """
    import mhsa_helpers as mh

    text = (Path(__file__).resolve().parents[2] / "course" / f"{notebook}.py").read_text()
    (cell,) = [c for c in text.split("\n# %%") if "heads_figure(A" in c and "[markdown]" not in c]
    calls = []
    namespace = {"np": np, "mh": mh, **names}
    namespace["heads_figure"] = lambda A, *args, **kw: calls.append((np.asarray(A), kw))
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(cell.split("\n", 1)[1], f"course/{notebook}.py", "exec"), namespace)
    return calls


@dataclass(frozen=True)
class Extension:
    """One extension's check as the shared tests (``tests/test_ext_checks.py``) exercise it.

    Attributes
    ----------
    name : str
        The exercise.
    right : str
        A right answer's source: it passes the visible and the hidden check.
    mistakes : dict of str to (str, str)
        Slips by name: a source making that one slip, and a piece of the hint the
        visible check must give it (and no other slip's); the hidden check fails it too.
    variants : dict of str to str
        Right answers written unusually (float32, einsum, loops, lists), by name: each
        passes the visible and the hidden check.
    breaches : dict of str to (str, tuple of str)
        Answers that break one clause of the contract (an input changed in place, a
        warning, no ValueError), by clause: the source and the words the visible check's
        sentence must hold.
    """

    name: str
    right: str
    mistakes: dict = field(default_factory=dict)
    variants: dict = field(default_factory=dict)
    breaches: dict = field(default_factory=dict)


def changed(source: str, *changes: str) -> str:
    """``source`` with each ``old`` replaced by its ``new``: ``changed(s, old, new, old, new…)``.

    Parameters
    ----------
    source : str
        An answer cell's source.
    *changes : str
        Pairs ``old, new``; every ``old`` must be in the source by the time it is replaced.

    Returns
    -------
    str
        The changed source.
    """
    for old, new in zip(changes[::2], changes[1::2], strict=True):
        if old not in source:
            raise ValueError(f"expected {old!r} in the answer, but it is not there.")
        source = source.replace(old, new)
    return source
