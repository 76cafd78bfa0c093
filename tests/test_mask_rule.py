"""One mask rule for every layer (issue 33, deliverable 4).

A layer's mask is told apart by the input's axes: with at most as many axes as
``X`` (batch axes + ``(T, T)``) it has no head axis and gets one; with one
axis more, its axis -3 is the head axis (size 1 or ``n_heads``); with more,
it fits neither and is refused. The reference follows it forward and
backward in every layer; the checks pass both forms, and a learner's layer
written only for masks without a head axis is told so.
"""

import math

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers import reference as ref
from mhsa_helpers.checks.masks import HEAD_AXIS_TWICE, NO_HEAD_AXIS, per_head_mask
from mhsa_helpers.execution.saved import answer_namespace, answer_sources
from mhsa_helpers.exercises import exercise
from mhsa_helpers.reference.inputs import heads_mask
from tests.support.nbgrader_course import SOLUTIONS

T, D, H = 5, 6, 2


def _weights(rng, d=D, kv_cols=D) -> tuple:
    """``W_q, W_k, W_v, W_o``; W_k and W_v with ``kv_cols`` columns."""
    shapes = ((d, d), (d, kv_cols), (d, kv_cols), (d, d))
    return tuple(rng.normal(size=s) / math.sqrt(d) for s in shapes)


def _per_sequence(B: int = 2) -> np.ndarray:
    """A different causal-and-padding mask per sequence: shape (B, T, T)."""
    return ref.causal_mask(T) + ref.padding_mask(np.arange(T, T - B, -1), T)  # (B, T, T)


def _like(M, X) -> np.ndarray:
    """``M`` (B, T, d_model) cut to ``X``'s batch: its first sequences, or the first alone."""
    return M[: len(X)] if X.ndim == 3 else M[0]  # (B', T, d_model) or (T, d_model)


#: Every layer that takes a mask, called as ``layer(X, mask)`` on fixed weights.
def _layers():
    rng = np.random.default_rng(33)
    W = _weights(rng)
    W_mq = _weights(rng, kv_cols=D // H)  # one shared K/V head of d_k columns
    C = rng.normal(size=(2, T, D))  # the memory read by cross-attention
    dOut = rng.normal(size=(2, T, D))
    return {
        "multi_head_self_attention": lambda X, m: ref.multi_head_self_attention(X, *W, H, m),
        "multi_query_attention": lambda X, m: ref.multi_query_attention(X, *W_mq, H, m),
        "grouped_query_attention": lambda X, m: ref.grouped_query_attention(X, *W, H, H, m),
        "cross_attention": lambda X, m: ref.cross_attention(X, _like(C, X), *W, H, m),
        "multi_head_self_attention_backward": lambda X, m: ref.multi_head_self_attention_backward(
            X, *W, H, _like(dOut, X), m
        ),
    }


def _same(a, b) -> bool:
    """Equal results, however nested (tuples of arrays)."""
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return np.shape(a) == np.shape(b) and np.allclose(a, b, equal_nan=True)


@pytest.mark.parametrize("layer", sorted(_layers()))
def test_a_batched_mask_with_or_without_its_head_axis_gives_the_same_result(layer):
    """(B, T, T) without a head axis = (B, 1, T, T) with one; (B, 1, T) = (B, 1, 1, T)."""
    fn = _layers()[layer]
    X = np.random.default_rng(1).normal(size=(2, T, D))  # (B, T, d_model)
    M = _per_sequence()  # (B, T, T)
    assert _same(fn(X, M), fn(X, M[:, None]))  # (B, 1, T, T): the head axis given
    P = ref.padding_mask(np.array([T, 2]), T)  # (B, 1, T)
    assert _same(fn(X, P), fn(X, P[:, None]))  # (B, 1, 1, T)


@pytest.mark.parametrize("layer", sorted(_layers()))
def test_a_mask_per_head_on_unbatched_input_is_the_batched_explicit_form(layer):
    """(h, T, T) on X (T, d_model) is the head axis, as (1, h, T, T) on X (1, T, d_model)."""
    fn = _layers()[layer]
    X = np.random.default_rng(2).normal(size=(1, T, D))  # (1, T, d_model)
    M = per_head_mask(T, H)  # (h, T, T): head 1 causal, head 2 a window of 2
    plain, batched = fn(X[0], M), fn(X, M[None])
    if isinstance(plain[1], tuple):  # the backward: (dX, (dW_q, dW_k, dW_v, dW_o))
        assert _same(plain[0], batched[0][0]) and _same(plain[1], batched[1])
    else:
        assert _same(plain, (batched[0][0], batched[1][0]))


def test_each_head_reads_its_own_mask():
    """Head i of the layer is attention_head on head i's columns with mask[i]."""
    rng = np.random.default_rng(3)
    W_q, W_k, W_v, W_o = _weights(rng)
    X = rng.normal(size=(T, D))  # (T, d_model)
    M = per_head_mask(T, H)  # (h, T, T)
    _, A = ref.multi_head_self_attention(X, W_q, W_k, W_v, W_o, H, M)  # (h, T, T)
    d_k = D // H
    for i in range(H):
        cols = slice(i * d_k, (i + 1) * d_k)
        _, A_i = ref.attention_head(X @ W_q[:, cols], X @ W_k[:, cols], X @ W_v[:, cols], M[i])
        np.testing.assert_allclose(A[i], A_i)
    assert not np.allclose(A[0], A[1])  # the two heads' masks differ


def test_the_rule_is_one_helper():
    """heads_mask: a head axis added below the input's axes count, kept at one more."""
    assert heads_mask(None, 3, 2) is None
    assert heads_mask(np.zeros((T, T)), 3, 2).shape == (T, T)
    assert heads_mask(np.zeros((2, T, T)), 3, 2).shape == (2, 1, T, T)  # no head axis
    assert heads_mask(np.zeros((2, T, T)), 2, 2).shape == (2, T, T)  # its head axis
    assert heads_mask(np.zeros((2, 1, 1, T)), 3, 4).shape == (2, 1, 1, T)


@pytest.mark.parametrize("layer", sorted(_layers()))
def test_a_mask_whose_axes_fit_neither_form_is_refused_clearly(layer):
    fn = _layers()[layer]
    X = np.random.default_rng(4).normal(size=(T, D))  # (T, d_model): 2 axes
    with pytest.raises(ValueError, match=r"at most 3 axes .* but got a mask of shape \(1, 2, 1"):
        fn(X, np.zeros((1, 2, 1, T, T)))  # two axes more than X
    with pytest.raises(ValueError, match=r"head axis and must have size 1 or n_heads=2, but got"):
        fn(X, np.zeros((3, T, T)))  # one axis more, but 3 heads of mask for 2 heads


# --------------------------------------------------------------------------
# the checks: the instructor's answers pass; a layer written for masks
# without a head axis only is told that the mask has one already
# --------------------------------------------------------------------------
NEW_RULE = ("2 < np.ndim(mask) <= np.ndim(X)", "2 < np.ndim(mask) <= max(np.ndim(X), np.ndim(C))")
#: The layers that take a mask by the layer's rule (their checks say so), and their notebooks.
NOTEBOOKS = {n: exercise(n).notebook for n, c in checks.CHECKS.items() if c.mask_rule}


def _solution(name: str, old_rule: bool = False):
    """The instructor's answer for ``name``.

    With ``old_rule``, as it was before the rule: a head axis added to any mask of 3+ axes.
    """
    namespace, replaced = answer_namespace(), 0
    for source in answer_sources(SOLUTIONS / f"{NOTEBOOKS[name]}.ipynb"):
        if old_rule:
            for rule in NEW_RULE:
                replaced += source.count(rule)
                source = source.replace(rule, "np.ndim(mask) > 2")
        exec(compile(source, f"<answer {name}>", "exec"), namespace)
    assert replaced or not old_rule  # the solution states the rule, and lost it here
    return namespace[name]


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_the_solutions_follow_the_rule_and_pass(name, capsys):
    fn = _solution(name)
    checks.check(name, fn)
    checks.check_hidden(name, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_a_layer_for_masks_without_a_head_axis_only_is_told_the_head_axis_form(name):
    """Passed every check before: now told the mask has its head axis, one axis more than X."""
    with pytest.raises(AssertionError) as info:
        checks.check(name, _solution(name, old_rule=True))
    said = str(info.value)
    assert HEAD_AXIS_TWICE in said, said
    assert NO_HEAD_AXIS not in said
    assert "one axis more than X" in said and "(..., h, T, T)" in said


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_the_visible_check_has_both_forms(name):
    """A mask with a head axis, (h, T, T) on 2-D X and (B, 1, T, T), (B, 1, 1, T) on a batch."""
    forms = set()
    for call in checks.CHECKS[name].calls():
        X, mask = call.args[0], call.args[-1]
        if isinstance(mask, np.ndarray) and mask.ndim > 2:
            head = mask.ndim == X.ndim + 1
            forms.add((X.ndim, head, mask.shape[-3] > 1 if head else None, mask.shape[-2] == 1))
    assert (3, False, None, False) in forms  # (B, T, T): no head axis
    assert (2, True, True, False) in forms  # (h, T, T) on X (T, d_model)
    assert (3, True, False, False) in forms  # (B, 1, T, T)
    assert (3, True, False, True) in forms  # (B, 1, 1, T)


@pytest.mark.slow  # a sweep: many examples per exercise
@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_the_judge_never_raises_on_the_reference_for_200_hidden_seeds(name):
    """Every catalogue entry computes (None where it cannot occur) on every hidden input."""
    from mhsa_helpers.execution.outcomes import Outcome

    check = checks.CHECKS[name]
    for seed in [None, *range(200)]:
        calls = [c for c in check.calls(seed) if c.raises is None and not c.context.get("work")]
        outcomes = [Outcome(value=getattr(ref, name)(*c.args, **c.kwargs)) for c in calls]
        check.verdict(calls, outcomes)
