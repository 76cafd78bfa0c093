"""The check of cross_attention: real learner functions, right and wrong.

Each wrong function makes one mistake and must fail with that mistake's
hint; each correct one, however unusual (float32, einsum, loops, a list for
the pair), must pass the visible and the hidden check. The contract's own
clauses (inputs unchanged, warnings are errors, ValueError) each fail a
function that breaks them.
"""

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers.examples import get_example
from mhsa_helpers.widgets.cross import CrossWidget
from tests.support.ext_cross import MISTAKES, NAME, RIGHT, weights_by_hand, wrong
from tests.support.extensions import figure_calls, load, panels


def test_self_attention_is_cross_attention_of_x_with_itself():
    """The visible check asks cross_attention(X, X) = the course's multi_head_self_attention."""
    calls = checks.CHECKS[NAME].visible()
    selfs = [c for c in calls if c.raises is None and np.array_equal(c.args[0], c.args[1])]
    assert len(selfs) >= 2 and any(len(c.args) == 8 for c in selfs)


def test_a_result_of_the_wrong_shape_fails():
    source = wrong(
        "return mh.merge_heads(A @ Vh) @ W_o, A",
        "return mh.merge_heads(A @ Vh) @ W_o, A[..., 0, :, :]",
    )
    with pytest.raises(AssertionError, match="the head axis is missing, it holds only head 1"):
        checks.check(NAME, load(source, NAME))


# --------------------------------------------------------------------------
# the live widget: the learner's function only where its check passes
# --------------------------------------------------------------------------
SIMPLE, QUESTION = get_example("simple"), get_example("question")


def test_the_widget_draws_a_passing_answer_and_replaces_a_failing_one():
    w = CrossWidget(functions={NAME: load(RIGHT, NAME)})
    assert "<b>your</b> <code>cross_attention" in w.current()["status"] and not w.failing
    w = CrossWidget(functions={NAME: load(MISTAKES["queries from C"][0], NAME)}, length=2)
    assert w.failing and "its check fails: see below" in w.current()["status"]
    notes = " ".join(w.current()["notes"])
    assert "check of your" in notes and "queries come from C" in notes


def test_the_widget_hides_the_padded_memory():
    w = CrossWidget()
    X, C, W_q, W_k = SIMPLE.X, QUESTION.X, 2 * QUESTION.W_q, 2 * QUESTION.W_k
    for n in range(1, QUESTION.T + 1):
        shown = panels(w, length=n)
        expected = weights_by_hand(X, C, W_q, W_k, 2, n)
        for p, a in zip(shown, expected, strict=True):
            np.testing.assert_allclose(p["M"], a, atol=1e-12)
            assert p["blocked"] == [[j >= n for j in range(QUESTION.T)]] * SIMPLE.T
        assert f"first {n} of 6" in w.current()["picture"]["label"]
        assert f"C's length {n} of 6" in " ".join(w.current()["notes"])


def test_the_widget_is_the_figure_above_it():
    """Notebook 15's figure cell, run as it is: its two memory lengths are the widget's."""
    w = CrossWidget()
    (full, _), (two, _) = figure_calls("15_cross", x=SIMPLE, c=QUESTION)
    for n, A in ((6, full), (2, two)):
        for p, a in zip(panels(w, length=n), A, strict=True):
            np.testing.assert_allclose(p["M"], a, atol=1e-12)


def test_a_cell_lights_its_query_row_and_key_column_in_every_head():
    for p in panels(CrossWidget()):
        assert p["links"] == ["q", "k"] and p["kinds"] == ["X's query", "C's key"]
        assert p["rows"] == SIMPLE.tokens and p["cols"] == QUESTION.tokens
        assert "share of C's token's value" in p["meaning"]
