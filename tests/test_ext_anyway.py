"""The extensions' widgets offer the explorer's "draw my failing functions anyway" box.

Shown only while the learner's function fails its check; ticked, it draws
that function (the picture changes, the status line says so); a passing,
absent or unwritten function keeps it hidden.
"""

from pathlib import Path

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers.execution.saved import run_answers_here
from mhsa_helpers.widgets.anyway import LABEL
from mhsa_helpers.widgets.cross import CrossWidget
from mhsa_helpers.widgets.gqa import GQAWidget
from mhsa_helpers.widgets.rope import RopeWidget
from mhsa_helpers.widgets.sliding_window import SlidingWindowWidget
from tests.support.extensions import load, picture
from tests.support.marks import right_answer
from tests.support.pictures import shown as cells_shown


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
CASES = {
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
}


def shown(w) -> bool:
    return w.anyway_w.layout.display != "none"


@pytest.mark.parametrize("case", CASES)
def test_a_failing_function_shows_the_box_and_ticking_it_draws_that_function(case):
    cls, kwargs, name, source, _ = CASES[case]
    course = cls(**kwargs)
    w = cls(functions={name: load(source, name)}, **kwargs)
    assert w.anyway_w.description == LABEL
    assert w.anyway_w in w.widget.children[-3].children  # beside the status line
    assert shown(w) and not w.anyway_w.value
    assert "instead of yours" in w.status_w.value
    assert pic(w) == pic(course)  # the course's function drew it
    w.anyway_w.value = True
    said = w.status_w.value + w.notes_w.value
    assert f"your failing <code>{name}</code>" in said
    assert "instead of yours" not in w.status_w.value
    assert "Drawn with your failing" in w.status_w.value
    assert pic(w) != pic(course)  # the learner's function drew it
    assert shown(w)  # still there to untick
    w.anyway_w.value = False
    assert pic(w) == pic(course) and "instead of yours" in w.status_w.value


@pytest.mark.parametrize("case", [right_answer(c[2], k, id=k) for k, c in CASES.items()])
def test_a_passing_or_absent_function_keeps_the_box_hidden(case):
    cls, kwargs, name, _, notebook = CASES[case]
    solved = run_answers_here(SOLUTIONS / f"{notebook}.ipynb")[name]
    for functions in ({}, {name: solved}):
        w = cls(functions=functions, **kwargs)
        assert not shown(w), functions
        assert "failing" not in w.status_w.value


@pytest.mark.parametrize("name", STUBS)
def test_an_unwritten_function_keeps_the_box_hidden(name):
    cls = GQAWidget if name == "grouped_query_attention" else SlidingWindowWidget
    w = cls(functions={name: load(STUBS[name], name)})
    assert not shown(w) and "not implemented yet" in w.notes_w.value


def test_the_gqa_box_draws_the_tiled_grouping_the_check_refuses():
    """Ticked, query head 2 of 4 (K/V head 1 of 2 in the course) reads K/V head 2."""
    mine = load(GQA_MODULO, "grouped_query_attention")
    w = GQAWidget(functions={"grouped_query_attention": mine}, n_kv_heads=2)
    args = w.arguments()
    _, course = mh.grouped_query_attention(*args)
    _, wrong = mine(*args)
    assert not np.allclose(course[1], wrong[1])  # the two differ on head 2
    drawn = pic(w)
    w.anyway_w.value = True
    assert pic(w) != drawn
    assert w.compute()[0][1][1] == pytest.approx(wrong[1])


def test_a_failing_function_that_raises_when_drawn_anyway_falls_back_and_says_so():
    def breaks(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
        if n_kv_heads == 2:  # the widget's setting, not the check's
            raise IndexError("head 3 of 2")
        return np.zeros(X.shape), np.zeros((n_heads, X.shape[0], X.shape[0]))

    w = GQAWidget(functions={"grouped_query_attention": breaks}, n_kv_heads=2)
    reference = pic(w)
    assert shown(w)
    w.anyway_w.value = True
    assert pic(w) == reference
    assert "instead of your failing one (it raised IndexError" in w.status_w.value
    assert "drawn anyway, raised IndexError here: head 3 of 2" in w.notes_w.value


def test_a_failing_function_of_the_wrong_shape_drawn_anyway_falls_back_and_says_so():
    def short(seq_len, window):
        return np.zeros((seq_len - 1, seq_len))

    w = SlidingWindowWidget(functions={"sliding_window_mask": short})
    reference = pic(SlidingWindowWidget())
    w.anyway_w.value = True
    assert pic(w) == reference
    assert "returned a different shape than the reference" in w.status_w.value
