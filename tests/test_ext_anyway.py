"""The extensions' widgets offer the explorer's "draw my failing functions anyway" box.

Shown only while the learner's function fails its check (``failing``; panels.js hides it
otherwise, unless ticked); ticked (``anyway``), that function is drawn in every state and the
status line says so; a passing, absent or unwritten function is never drawn failing, and a
stub is said "not written yet", the explorer's words.
"""

from pathlib import Path

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers.examples import get_example
from mhsa_helpers.execution.saved import run_answers_here
from mhsa_helpers.widgets.cross import CrossWidget
from mhsa_helpers.widgets.explorer import NOT_WRITTEN
from mhsa_helpers.widgets.gqa import GQAWidget
from mhsa_helpers.widgets.kv_cache import DecodeWidget
from mhsa_helpers.widgets.rope import RopeWidget
from mhsa_helpers.widgets.sliding_window import SlidingWindowWidget
from mhsa_helpers.widgets.tiled import TiledWidget
from tests.support.extensions import load, panels, picture
from tests.support.marks import right_answer
from tests.support.pictures import shown as cells_shown
from tests.support.widget_answers import NOT_RESCALED, PREPENDING


def pic(widget) -> list:
    """What the widget's picture shows, cell by cell (to compare two drawings)."""
    return cells_shown(picture(widget))


SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions" / "mhsa"


# Each one wrong in a way a learner might be: its check fails, yet it runs and returns the
# contract's shapes, so that, drawn anyway, it draws something else than the course's.
GQA_MODULO = """
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    group = n_heads // n_kv_heads
    d_k = X.shape[-1] // n_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    # forgets to repeat each K/V head for its group: tiles them, so query head i reads i % n_kv
    Kh = np.concatenate([mh.split_heads(X @ W_k, n_kv_heads)] * group, axis=-3)
    Vh = np.concatenate([mh.split_heads(X @ W_v, n_kv_heads)] * group, axis=-3)
    Z = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    return mh.merge_heads(A @ Vh) @ W_o, A
"""
CROSS_NO_MASK = """
def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C @ W_v, n_heads)
    A = mh.softmax(Qh @ Kh.swapaxes(-1, -2) / np.sqrt(Qh.shape[-1]))  # forgets the mask
    return mh.merge_heads(A @ Vh) @ W_o, A
"""
ROPE_UNROTATED = """
def rotary_embedding(X, positions=None, base=10000.0):
    return np.array(X, dtype=float)  # forgets to rotate
"""
WINDOW_ONE_TOO_MANY = """
def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError(f"window must be at least 1, but got {window}.")
    i, j = np.indices((seq_len, seq_len))
    return np.where((j <= i) & (j >= i - window), 0.0, -np.inf)
"""
STUBS = {
    "grouped_query_attention": "def grouped_query_attention(*args, **kwargs):\n"
    "    raise NotImplementedError()\n",
    "sliding_window_mask": "def sliding_window_mask(seq_len, window):\n"
    "    raise NotImplementedError()\n",
}

# (widget class, keyword arguments, function name, wrong source, solution notebook)
#: The widgets whose every state is computed at once (panels.PanelsWidget).
PANELS = {
    "gqa": (GQAWidget, {}, "grouped_query_attention", GQA_MODULO, "12_gqa"),
    "cross": (CrossWidget, {"length": 3}, "cross_attention", CROSS_NO_MASK, "15_cross"),
    "rope": (RopeWidget, {"offset": 5}, "rotary_embedding", ROPE_UNROTATED, "11_rope"),
    "window": (
        SlidingWindowWidget,
        {"window": 2},
        "sliding_window_mask",
        WINDOW_ONE_TOO_MANY,
        "16_sliding_window",
    ),
    "kv cache": (DecodeWidget, {"tokens": 4}, "decode_step", PREPENDING, "13_kv_cache"),
    "tiled": (TiledWidget, {"block": 3}, "tiled_attention", NOT_RESCALED, "14_tiled"),
}

SONG, SIMPLE, QUESTION = (get_example(n) for n in ("song", "simple", "question"))


def gqa_call(kv: int) -> tuple:
    """Notebook 12's figure's call at ``kv`` K/V heads, as its cell writes it."""
    rng = np.random.default_rng(1)
    W_k4, W_v4 = mh.init_weights(8, 8, rng), mh.init_weights(8, 8, rng)
    cols, q = kv * 2, QUESTION
    return (q.X, 3 * q.W_q, 3 * W_k4[:, :cols], W_v4[:, :cols], q.W_o, 4, kv, mh.causal_mask(q.T))


def cross_call(length: int) -> tuple:
    """Notebook 15's figure's call with C's first ``length`` positions real."""
    q = QUESTION
    mask = mh.padding_mask(length, q.T)
    return (SIMPLE.X, q.X, 2 * q.W_q, 2 * q.W_k, q.W_v, q.W_o, 2, mask)


#: What each widget draws in its first state with a function ``fn``: its panels' matrices, in
#: order (the first ones at least), computed here from the call the widget promises.
DRAWN = {
    "gqa": lambda fn: list(fn(*gqa_call(2))[1]),
    "cross": lambda fn: list(fn(*cross_call(3))[1]),
    "rope": lambda fn: [fn(SONG.X, 5 + np.arange(SONG.T), 100.0)],
    "window": lambda fn: [fn(SONG.T, 2)],
}


def matrices(w) -> list:
    """Every matrix of every state of ``w``."""
    return [np.array(p["M"], dtype=float) for s in w.states for p in s["picture"]["panels"]]


def same(a, b) -> bool:
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("case", PANELS)
def test_a_failing_function_is_told_and_drawn_only_when_ticked(case):
    cls, kwargs, name, source, _ = PANELS[case]
    course, mine = cls(**kwargs), load(source, name)
    w = cls(functions={name: mine}, **kwargs)
    assert w.failing and not w.anyway  # the box is shown, not ticked
    status = w.current()["status"]
    assert f"course's <code>{name}</code> instead of yours" in status
    assert "Why not yours: the check of your" in " ".join(w.current()["notes"])
    assert same(matrices(w), matrices(course))  # the course's function drew every state
    drawn = DRAWN.get(case)  # the numbers: here, or in the widget's own tests (13, 14)
    for p, expected in zip(panels(w), drawn(getattr(mh, name)) if drawn else (), strict=False):
        np.testing.assert_allclose(p["M"], expected, atol=1e-12)
    w.anyway = True
    assert w.failing  # still there to untick
    status = w.current()["status"]
    assert f"Drawn with your failing <code>{name}</code>" in status
    assert "instead of yours" not in status
    for p, expected in zip(panels(w), drawn(mine) if drawn else (), strict=False):
        np.testing.assert_allclose(p["M"], expected, atol=1e-12)  # the learner's drew it
    assert not same(matrices(w), matrices(course))
    w.anyway = False
    assert same(matrices(w), matrices(course)) and "instead of yours" in w.current()["status"]


@pytest.mark.parametrize("case", [right_answer(c[2], k, id=k) for k, c in PANELS.items()])
def test_a_passing_or_absent_function_is_never_called_failing(case):
    cls, kwargs, name, _, notebook = PANELS[case]
    solved = run_answers_here(SOLUTIONS / f"{notebook}.ipynb")[name]
    for functions in ({}, {name: solved}):
        w = cls(functions=functions, **kwargs)
        assert not w.failing, functions
        assert all("failing" not in s["status"] for s in w.states)
    assert "<b>your</b>" in w.current()["status"]


@pytest.mark.parametrize("case", ["gqa", "window"])
def test_an_unwritten_function_is_said_not_written_yet_and_never_drawn(case):
    cls, kwargs, name, _, _ = PANELS[case]
    w = cls(functions={name: load(STUBS[name], name)}, **kwargs)
    course = matrices(cls(**kwargs))
    for anyway in (False, True):  # ticked or not: a stub is never drawn
        w.anyway = anyway
        assert not w.failing and same(matrices(w), course)
        assert (
            f"Drawn with the course's <code>{name}</code>: yours is {NOT_WRITTEN}."
            in (w.current()["status"])
        )
        assert "check" not in w.current()["status"]  # not "its check fails"


def test_a_failing_function_that_raises_when_drawn_anyway_falls_back_and_says_so():
    def breaks(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
        if n_kv_heads == 2:  # the widget's setting, not the check's
            raise IndexError("head 3 of 2")
        return np.zeros(X.shape), np.zeros((n_heads, X.shape[0], X.shape[0]))

    w = GQAWidget(functions={"grouped_query_attention": breaks}, n_kv_heads=2)
    assert w.failing
    w.anyway = True
    for p, a in zip(panels(w), mh.grouped_query_attention(*gqa_call(2))[1], strict=True):
        np.testing.assert_allclose(p["M"], a, atol=1e-12)
    assert "instead of yours (see below)" in w.current()["status"]
    assert (
        "Why not yours: your failing <code>grouped_query_attention</code> raised IndexError: "
        "head 3 of 2 here." in " ".join(w.current()["notes"])
    )
    assert np.all(panels(w, kv=1)[0]["M"] == 0)  # where it runs, its zeros are drawn


def test_a_failing_function_of_the_wrong_shape_drawn_anyway_falls_back_and_says_so():
    def short(seq_len, window):
        return np.zeros((seq_len - 1, seq_len))

    w = SlidingWindowWidget(functions={"sliding_window_mask": short})
    w.anyway = True
    assert same(matrices(w), matrices(SlidingWindowWidget()))
    assert "instead of yours (see below)" in w.current()["status"]
    assert "returned a different shape than the reference" in " ".join(w.current()["notes"])
