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
from tests.support.ext_gqa import MISTAKES, NAME, RIGHT, VARIANTS, wrong
from tests.support.extensions import load


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
def test_the_widget_draws_a_passing_answer_and_replaces_a_failing_one():
    from mhsa_helpers.widgets.gqa import GQAWidget

    functions = {NAME: load(RIGHT, NAME)}
    w = GQAWidget(functions=functions)
    assert "your</b> <code>grouped_query_attention" in w.status_w.value
    functions[NAME] = load(MISTAKES["W_O missing"][0], NAME)
    w.kv_w.value = 1
    assert "its check fails: see below" in w.status_w.value
    assert "check of your" in w.notes_w.value and "W_O" in w.notes_w.value


def test_the_widget_slider_regroups_the_heads():
    from mhsa_helpers.widgets.gqa import GQAWidget

    w = GQAWidget()
    pictures = {}
    for kv in w.kv_w.options:
        w.kv_w.value = kv
        pictures[kv] = w.figure.value
        group = w.n_heads // kv
        for i in range(w.n_heads):  # each panel names the K/V head its query head reads
            assert f"query head {i + 1} · K/V {i // group + 1}<" in pictures[kv], (kv, i)
    assert len(set(pictures.values())) == len(pictures)  # each grouping, its own picture
