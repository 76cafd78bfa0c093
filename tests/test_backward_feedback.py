"""Issue 33: the backward pass's slips are named as the forward's are.

Each wrong function is a learner's whole answer, written as a learner writes
it (not built from the catalogue), run by the notebook's check; its sentence
must name the slip, in the learner's terms.
"""

import pytest

from mhsa_helpers import checks
from tests.support.answers import load

#: One head's backward, right but for the line each mistake replaces (``{name}`` slots).
HEAD = """
def attention_head_backward(Q, K, V, dOut, mask=None):
    d_k = Q.shape[-1]
    Z = Q @ np.swapaxes(K, -1, -2) / {recompute}
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    dA = {dA}
    dZ = {dZ}
    dV = {dV}
    dQ = {dQ}
    dK = np.swapaxes(dZ, -1, -2) @ Q / np.sqrt(d_k)
    return tuple(_sum_to(g, M.shape) for g, M in zip(({returned}), (Q, K, V)))


def _sum_to(g, shape):  # a gradient summed back over the axes its input was broadcast along
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))  # the axes the input lacks
    ones = tuple(k for k, n in enumerate(shape) if n == 1 and g.shape[k] != 1)
    return g.sum(axis=ones, keepdims=True)  # and its axes of size 1
"""
RIGHT_HEAD = {
    "recompute": "np.sqrt(d_k)",
    "dA": "dOut @ np.swapaxes(V, -1, -2)",
    "dZ": "A * (dA - np.sum(dA * A, axis=-1, keepdims=True))",
    "dV": "np.swapaxes(A, -1, -2) @ dOut",
    "dQ": "dZ @ K / np.sqrt(d_k)",
    "returned": "dQ, dK, dV",
}

#: The softmax's backward, right but for its one line.
SOFTMAX = """
def softmax_backward(A, dA, axis=-1):
    return {dZ}
"""

#: The layer's backward, right but for the slots (after the learner's right head backward).
LAYER = (
    HEAD.format(**RIGHT_HEAD).replace("{", "{{").replace("}", "}}")
    + """
def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    heads_axis = mask is not None and 2 < np.ndim(mask) <= np.ndim(X)  # else it has one
    M = np.expand_dims(mask, -3) if heads_axis else mask
    heads, _ = mh.attention_head(Qh, Kh, Vh, M)
    merged = mh.merge_heads(heads)
    dMerged = {dMerged}
    dH = {dH}
    dQh, dKh, dVh = attention_head_backward(Qh, Kh, Vh, dH, M)  # the learner's, above
    dQ, dK, dV = (mh.merge_heads(G) for G in (dQh, dKh, dVh))
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T

    def total(A, B):
        return {total}

    dW_q, dW_k, dW_v, dW_o = total(X, dQ), total(X, dK), total(X, dV), total(merged, dOut)
    return {returned}
"""
)
RIGHT_LAYER = {
    "dMerged": "dOut @ W_o.T",
    "dH": "mh.split_heads(dMerged, n_heads)",
    "total": "A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])",
    "returned": "dX, (dW_q, dW_k, dW_v, dW_o)",
}

CASES = [
    (
        "softmax_backward",
        SOFTMAX.format(dZ="A * (dA + np.sum(dA * A, axis=axis, keepdims=True))"),
        "the row-sum term is added",
    ),
    (
        "softmax_backward",
        SOFTMAX.format(dZ="A * (dA - np.mean(dA * A, axis=axis, keepdims=True))"),
        "is a mean over the row",
    ),
    (
        "attention_head_backward",
        HEAD.format(**{**RIGHT_HEAD, "dQ": "dZ @ K * np.sqrt(d_k)"}).replace(
            "@ Q / np.sqrt(d_k)", "@ Q * np.sqrt(d_k)"
        ),
        "multiplied by √d_k",
    ),
    ("attention_head_backward", HEAD.format(**{**RIGHT_HEAD, "dZ": "dA"}), "skipped (dZ = dA)"),
    (
        "attention_head_backward",
        HEAD.format(**RIGHT_HEAD).replace("@ Q / np.sqrt(d_k)", "@ K / np.sqrt(d_k)"),
        "dK = dZᵀ·K",
    ),
    (
        "multi_head_self_attention_backward",
        LAYER.format(**RIGHT_LAYER).replace(" + dV @ W_v.T", ""),
        "dX misses the path through the values",
    ),
    (
        "multi_head_self_attention_backward",
        LAYER.format(**RIGHT_LAYER).replace("total(merged, dOut)", "total(X, dOut)"),
        "dW_O uses X",
    ),
    (
        "softmax_backward",
        SOFTMAX.format(dZ="A * (dA - np.sum(dA * A))"),
        "summed over every entry at once",
    ),
    (
        "softmax_backward",
        SOFTMAX.format(dZ="A * (dA - np.sum(dA * A, axis=(-2, -1), keepdims=True))"),
        "summed over every entry at once",
    ),
    (
        "softmax_backward",
        SOFTMAX.format(dZ="dA * (A - np.sum(dA * A, axis=axis, keepdims=True))"),
        "dA and A trade places",
    ),
    ("attention_head_backward", HEAD.format(**{**RIGHT_HEAD, "returned": "dK, dQ, dV"}), "swapped"),
    (
        "attention_head_backward",
        HEAD.format(**{**RIGHT_HEAD, "recompute": "1.0"}),
        "recomputed in the backward misses the 1/√d_k",
    ),
    (
        "attention_head_backward",
        HEAD.format(
            **{**RIGHT_HEAD, "dZ": "A * (dA - np.sum(dA * A, axis=-2, keepdims=True))"}
        ).replace("A * (dA", "A * (dA", 1),
        "along the query axis",
    ),
    (
        "attention_head_backward",
        HEAD.format(**{**RIGHT_HEAD, "dQ": "np.swapaxes(dZ, -1, -2) @ K / np.sqrt(d_k)"}),
        "dQ = dZᵀ·K",
    ),
    (
        "attention_head_backward",
        HEAD.format(**{**RIGHT_HEAD, "dA": "np.swapaxes(dOut @ np.swapaxes(V, -1, -2), -1, -2)"}),
        "dA is transposed",
    ),
    (
        "attention_head_backward",
        HEAD.format(**{**RIGHT_HEAD, "dV": "np.swapaxes(A, -1, -2) @ dOut / np.sqrt(d_k)"}),
        "dV is divided by √d_k too",
    ),
    (
        "multi_head_self_attention_backward",
        LAYER.format(**{**RIGHT_LAYER, "returned": "dX, (dW_k, dW_q, dW_v, dW_o)"}),
        "dW_q and dW_k are swapped",
    ),
    (
        "multi_head_self_attention_backward",
        LAYER.format(**{**RIGHT_LAYER, "returned": "dX, (dW_o, dW_q, dW_k, dW_v)"}),
        "right but in another order: you return (dX, dW_o, dW_q, dW_k, dW_v)",
    ),
    (
        "multi_head_self_attention_backward",
        LAYER.format(**{**RIGHT_LAYER, "dMerged": "dOut"}),
        "the way back through the output projection is missing",
    ),
    (
        "multi_head_self_attention_backward",
        LAYER.format(
            **{
                **RIGHT_LAYER,
                "dH": "dMerged.reshape(*dMerged.shape[:-2], n_heads, dMerged.shape[-2], -1)",
            }
        ),
        "split into heads with a bare reshape",
    ),
    (
        "multi_head_self_attention_backward",
        LAYER.format(
            **{
                **RIGHT_LAYER,
                "total": "(np.swapaxes(A, -1, -2) @ B).reshape(-1, A.shape[-1], B.shape[-1])"
                ".mean(axis=0)",
            }
        ),
        "averaged over the batch",
    ),
]


@pytest.mark.parametrize(("name", "source", "hint"), CASES)
def test_a_backward_slip_is_named(name, source, hint):
    with pytest.raises(AssertionError) as info:
        checks.check(name, load(source, name))
    assert hint in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("attention_head_backward", HEAD.format(**RIGHT_HEAD)),
        ("multi_head_self_attention_backward", LAYER.format(**RIGHT_LAYER)),
        ("softmax_backward", SOFTMAX.format(dZ="A * (dA - np.sum(dA * A, axis, keepdims=True))")),
    ],
)
def test_the_templates_pass_when_right(name, source, capsys):
    """Each slip above is its template's one changed line: the template itself passes."""
    checks.check(name, load(source, name))
    assert "\u2713" in capsys.readouterr().out


#: A decoder's backward: causal whatever its mask argument says.
CAUSAL_HEAD = HEAD.format(**RIGHT_HEAD).replace(
    "    if mask is not None:\n        Z = Z + mask\n",
    "    T = Z.shape[-1]\n    Z = Z + np.triu(np.full((T, T), -np.inf), 1)\n"
    "    if mask is not None:\n        Z = Z + mask\n",
)
CAUSAL_LAYER = LAYER.format(**RIGHT_LAYER).replace(
    "    heads_axis = mask is not None",
    "    T = X.shape[-2]\n"
    "    mask = np.triu(np.full((T, T), -np.inf), 1) + (0 if mask is None else mask)\n"
    "    heads_axis = mask is not None",
)


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("attention_head_backward", CAUSAL_HEAD),
        ("multi_head_self_attention_backward", CAUSAL_LAYER),
    ],
)
def test_a_backward_causal_always_is_told_so_by_the_visible_and_the_hidden_check(name, source):
    from mhsa_helpers.checks import hidden_seed, judge
    from mhsa_helpers.checks.core import call_in_notebook

    fn = load(source, name)
    with pytest.raises(AssertionError) as info:
        checks.check(name, fn)
    assert "applies a causal mask of its own" in str(info.value), str(info.value)
    seed = hidden_seed(b"any course key", name)
    said = judge(
        name, seed, call_in_notebook(name, fn, checks.CHECKS[name].calls(seed)), hidden=True
    )
    assert said is not None and "causal" in said, said


def test_a_backward_computed_in_float32_inside_is_told_its_precision():
    """Not "only row 0 of dK differs": every entry agrees to float32's rounding."""
    source = (
        HEAD.format(**RIGHT_HEAD)
        .replace(
            "    d_k = Q.shape[-1]\n",
            "    d_k = Q.shape[-1]\n    dt = Q.dtype\n"
            "    Q, K, V, dOut = (np.asarray(a, np.float32) for a in (Q, K, V, dOut))\n",
        )
        .replace("    return dQ, dK, dV", "    return dQ.astype(dt), dK.astype(dt), dV.astype(dt)")
    )
    with pytest.raises(AssertionError) as info:
        checks.check("attention_head_backward", load(source, "attention_head_backward"))
    assert "only to float32 precision" in str(info.value), str(info.value)
