"""Strict calls in every check, and batched masks: the slips issue 23 saw pass or misnamed.

Each wrong function here is what a learner writes; each must fail its visible
check with a sentence that names the slip, and nothing else.
"""

import pytest

from mhsa_helpers import checks
from mhsa_helpers.checks.masks import NO_HEAD_AXIS
from tests.support.answers import load

IN_PLACE = {
    "softmax": """
def softmax(Z, axis=-1):
    Z -= Z.max(axis=axis, keepdims=True)
    np.exp(Z, out=Z)
    Z /= Z.sum(axis=axis, keepdims=True)
    return np.nan_to_num(Z)
""",
    "attention_scores": """
def attention_scores(Q, K):
    Q *= 1 / np.sqrt(Q.shape[-1])
    return Q @ np.swapaxes(K, -1, -2)
""",
    "attention_head": """
def attention_head(Q, K, V, mask=None):
    Q /= np.sqrt(Q.shape[-1])
    Z = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    return A @ V, A
""",
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_an_input_changed_in_place_is_named(name):
    with pytest.raises(AssertionError, match="modified an input in place"):
        checks.check(name, load(IN_PLACE[name], name))


KEEPS_STATE = """
CALLS = [0]

def attention_scores(Q, K):
    CALLS[0] += 1
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) * (1 + (CALLS[0] % 2 == 0))
"""


def test_a_function_that_keeps_state_between_calls_is_named():
    with pytest.raises(AssertionError, match="different answer when called a second time"):
        checks.check("attention_scores", load(KEEPS_STATE, "attention_scores"))


MHSA_NO_HEAD_AXIS = """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Q, K, V = (mh.split_heads(X @ W, n_heads) for W in (W_q, W_k, W_v))
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    return mh.merge_heads(A @ V) @ W_o, A
"""

MQA_NO_HEAD_AXIS = """
def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Q = mh.split_heads(X @ W_q, n_heads)
    K, V = (X @ W_k)[..., None, :, :], (X @ W_v)[..., None, :, :]
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    return mh.merge_heads(A @ V) @ W_o, A
"""

GQA_NO_HEAD_AXIS = """
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads must divide d_model and n_kv_heads must divide n_heads, but got "
            f"d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}."
        )
    g = n_heads // n_kv_heads
    Q = mh.split_heads(X @ W_q, n_heads)
    K = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), g, axis=-3)
    V = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), g, axis=-3)
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    return mh.merge_heads(A @ V) @ W_o, A
"""


@pytest.mark.parametrize(
    "name, source",
    [
        ("multi_head_self_attention", MHSA_NO_HEAD_AXIS),
        ("multi_query_attention", MQA_NO_HEAD_AXIS),
        ("grouped_query_attention", GQA_NO_HEAD_AXIS),
    ],
)
def test_a_batched_mask_without_its_head_axis_is_named(name, source):
    """Passed before (no batched mask), or was told its K/V split is wrong (GQA)."""
    with pytest.raises(AssertionError) as info:
        checks.check(name, load(source, name))
    assert NO_HEAD_AXIS in str(info.value), str(info.value)
    assert "n_kv_heads heads" not in str(info.value)


def test_a_value_error_from_numpy_does_not_meet_the_rule():
    """GQA without its own divisibility check: numpy's error on the way is not the rule's."""
    source = GQA_NO_HEAD_AXIS.replace("if d_model % n_heads or n_heads % n_kv_heads:", "if 0:")
    source = source.replace(
        "Z = Z + mask",
        "Z = Z + np.expand_dims(mask, -3) if 2 < np.ndim(mask) <= X.ndim else Z + mask",
    )
    with pytest.raises(AssertionError) as info:
        checks.check("grouped_query_attention", load(source, "grouped_query_attention"))
    said = str(info.value)
    assert "not from a check of its own" in said or "should raise ValueError" in said, said


def test_tiled_without_its_block_size_check_fails():
    """range()'s error for 0 is not the rule's ValueError, and a negative size must raise."""
    from mhsa_helpers.execution.saved import answer_sources
    from tests.support.nbgrader_course import SOLUTIONS

    source = "\n".join(answer_sources(SOLUTIONS / "14_tiled.ipynb"))
    check = 'raise ValueError(f"block_size must be at least 1, but got {block_size}.")'
    assert check in source
    with pytest.raises(AssertionError) as info:
        checks.check("tiled_attention", load(source.replace(check, "pass"), "tiled_attention"))
    said = str(info.value)
    assert "not from a check of its own" in said or "should raise ValueError" in said, said
