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
from tests.support.ext_cross import MISTAKES, NAME, RIGHT, wrong
from tests.support.extensions import load


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
def test_the_widget_draws_a_passing_answer_and_replaces_a_failing_one():
    from mhsa_helpers.widgets.cross import CrossWidget

    functions = {NAME: load(RIGHT, NAME)}
    w = CrossWidget(functions=functions)
    assert "your</b> <code>cross_attention" in w.status_w.value
    functions[NAME] = load(MISTAKES["queries from C"][0], NAME)
    w.length_w.value = 2
    assert "its check fails: see below" in w.status_w.value
    assert "check of your" in w.notes_w.value and "queries come from C" in w.notes_w.value


def test_the_widget_hides_the_padded_memory():
    from mhsa_helpers.widgets.cross import CrossWidget

    w = CrossWidget()
    for n in range(1, w.c.T + 1):
        w.length_w.value = n
        _, A = w.compute()[0]
        assert np.all(A[..., n:] == 0) and np.allclose(A[..., :n].sum(-1), 1)
        assert f"first {n} of" in w.figure.value
