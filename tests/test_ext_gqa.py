"""The check of grouped_query_attention: real learner functions, right and wrong.

Each wrong function makes one mistake and must fail with that mistake's
hint; each correct one, however unusual (float32, einsum, loops, a list for
the pair), must pass the visible and the hidden check. The contract's own
clauses (inputs unchanged, warnings are errors, ValueError) each fail a
function that breaks them and nothing else.
"""

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers.examples import get_example
from mhsa_helpers.plot_style import HEAD_COLOURS
from mhsa_helpers.widgets.gqa import GQAWidget
from tests.support.ext_gqa import MISTAKES, NAME, RIGHT, VARIANTS, wrong
from tests.support.extensions import figure_calls, load, panels


def test_a_float32_result_for_float32_inputs_is_judged_with_the_float32_tolerance():
    """The visible check has a float32 call; the float32 variant returns float32 there."""
    fn = load(VARIANTS["float32"], NAME)
    calls = checks.CHECKS[NAME].visible()
    (call,) = [c for c in calls if c.args[0].dtype == np.float32]
    out, A = fn(*call.args)
    assert out.dtype == np.float32 and A.dtype == np.float32
    checks.CHECKS[NAME].judge(call, (out, A))


def test_an_integer_result_fails():
    source = wrong(
        "return mh.merge_heads(A @ Vh) @ W_o, A",
        "return mh.merge_heads(A @ Vh) @ W_o, (A > 0).astype(int)",
    )
    with pytest.raises(AssertionError, match="floating array"):
        checks.check(NAME, load(source, NAME))


# --------------------------------------------------------------------------
# the live widget: the learner's function only where its check passes
# --------------------------------------------------------------------------
QUESTION = get_example("question")


def test_the_widget_draws_the_figure_right_above_it_and_says_so():
    """Notebook 12's figure cell, run as it is: at 4, 2 and 1 K/V heads, its weights, titles
    and mask are the widget's; the notes name that setting."""
    w = GQAWidget()
    drawn = figure_calls("12_gqa", q=QUESTION)
    assert [A.shape[0] for A, _ in drawn] == [4, 4, 4]
    for kv, (A, kw) in zip((4, 2, 1), drawn, strict=True):
        shown = panels(w, kv=kv)
        assert [p["title"] for p in shown] == kw["titles"]
        for p, a in zip(shown, A, strict=True):
            np.testing.assert_allclose(p["M"], a, atol=1e-12)
            assert p["blocked"] == np.isneginf(kw["mask"]).tolist()  # the causal mask, hatched
        notes = " ".join(w.current()["notes"])
        assert "figure" in notes and "causal mask" in notes and "default_rng(1)" in notes


def test_the_widget_slider_regroups_the_heads():
    w = GQAWidget()
    assert [o[1] for o in w.controls[0]["options"]] == [1, 2, 4]
    for kv in (1, 2, 4):
        group = 4 // kv
        for i, p in enumerate(panels(w, kv=kv)):  # each panel names the K/V head it reads
            assert p["title"] == f"q head {i + 1} · kv {i // group + 1}"
            assert p["colour"] == HEAD_COLOURS[i // group]
            assert p["links"] == ["q", "k"]  # a cell lights its query row in every head
            assert f"K/V head {i // group + 1}" in p["meaning"]
        assert w.current()["picture"]["fixed"] == [0, 1]


def test_the_widget_draws_a_passing_answer_and_replaces_a_failing_one():
    w = GQAWidget(functions={NAME: load(RIGHT, NAME)})
    assert "<b>your</b> <code>grouped_query_attention" in w.current()["status"]
    assert not w.failing
    w = GQAWidget(functions={NAME: load(MISTAKES["W_O missing"][0], NAME)}, n_kv_heads=1)
    assert w.failing and "its check fails: see below" in w.current()["status"]
    notes = " ".join(w.current()["notes"])
    assert "check of your" in notes and "W_O" in notes
