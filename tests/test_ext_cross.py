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
from mhsa_helpers.execution.saved import answer_namespace

NAME = "cross_attention"

#: A correct answer, which the wrong ones below change in one place each.
RIGHT = """
def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {n_heads} and {d_model}.")
    d_k = d_model // n_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C @ W_v, n_heads)
    Z = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + (np.expand_dims(mask, -3) if 2 < np.ndim(mask) <= max(X.ndim, C.ndim) else mask)
    A = mh.softmax(Z)
    return mh.merge_heads(A @ Vh) @ W_o, A
"""


def load(source: str):
    """The function an answer cell defines, in the namespace the notebook gives it."""
    namespace = answer_namespace()
    exec(source, namespace)
    return namespace[NAME]


def wrong(*changes: str) -> str:
    source = RIGHT
    for old, new in zip(changes[::2], changes[1::2], strict=True):
        assert old in source, old
        source = source.replace(old, new)
    return source


MISTAKES = {
    "keys and values from X": (
        wrong("C @ W_k", "X @ W_k", "C @ W_v", "X @ W_v"),
        "the keys and values come from X",
    ),
    "queries from C": (
        wrong("X @ W_q", "C @ W_q", "C @ W_k", "X @ W_k", "C @ W_v", "X @ W_v"),
        "the queries come from C",
    ),
    "values from X": (wrong("C @ W_v", "X @ W_v"), "the values come from X"),
    "keys from X": (wrong("C @ W_k", "X @ W_k"), "the keys come from X"),
    "mask ignored": (wrong("if mask is not None:", "if False:"), "the mask is ignored"),
    "scaled by sqrt(d_model)": (wrong("np.sqrt(d_k)", "np.sqrt(d_model)"), "√d_model"),
    "W_O missing": (wrong("mh.merge_heads(A @ Vh) @ W_o", "mh.merge_heads(A @ Vh)"), "W_O"),
    "not scaled": (wrong(" / np.sqrt(d_k)", ""), "not scaled"),
    "softmax over the queries": (wrong("mh.softmax(Z)", "mh.softmax(Z, axis=-2)"), "wrong axis"),
}


def test_the_right_answer_passes(capsys):
    fn = load(RIGHT)
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_fails_with_its_own_hint(mistake):
    source, hint = MISTAKES[mistake]
    with pytest.raises(AssertionError) as info:
        checks.check(NAME, load(source))
    message = str(info.value)
    assert hint in message, message
    others = [h for _, h in MISTAKES.values() if h != hint and h in message]
    assert not others, message


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_fails_the_hidden_check(mistake):
    with pytest.raises(AssertionError):
        checks.check_hidden(NAME, load(MISTAKES[mistake][0]))


VARIANTS = {
    "float32": RIGHT.replace("np.sqrt(d_k)", "np.float32(np.sqrt(d_k))").replace(
        "    d_model = X.shape[-1]\n",
        "    X, C, W_q, W_k, W_v, W_o = (np.asarray(a, np.float32) for a in "
        "(X, C, W_q, W_k, W_v, W_o))\n"
        "    mask = None if mask is None else np.asarray(mask, np.float32)\n"
        "    d_model = X.shape[-1]\n",
    ),
    "einsum, own softmax": """
def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads != 0:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}.")
    d_k = d_model // n_heads
    *lead, T_q, _ = X.shape
    T_k = C.shape[-2]
    Q = (X @ W_q).reshape(*lead, T_q, n_heads, d_k)
    K = (C @ W_k).reshape(*lead, T_k, n_heads, d_k)
    V = (C @ W_v).reshape(*lead, T_k, n_heads, d_k)
    Z = np.einsum("...qhd,...khd->...hqk", Q, K) / np.sqrt(d_k)
    if mask is not None:
        m = np.asarray(mask)
        Z = Z + (m[..., None, :, :] if 2 < m.ndim <= max(X.ndim, C.ndim) else m)
    top = Z.max(axis=-1, keepdims=True)
    E = np.exp(Z - np.where(np.isfinite(top), top, 0.0))
    s = E.sum(axis=-1, keepdims=True)
    A = np.divide(E, s, out=np.zeros_like(E), where=s > 0)
    out = np.einsum("...hqk,...khd->...qhd", A, V).reshape(*lead, T_q, d_model)
    return out @ W_o, A
""",
    "loop over heads, a list for the pair": """
def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model.")
    d_k = d_model // n_heads
    outs, weights = [], []
    for i in range(n_heads):
        cols = slice(i * d_k, (i + 1) * d_k)
        m = mask
        if m is not None and np.ndim(m) > max(X.ndim, C.ndim):  # a head axis: this head's
            m = m[..., min(i, m.shape[-3] - 1), :, :]
        o, a = mh.attention_head(X @ W_q[:, cols], C @ W_k[:, cols], C @ W_v[:, cols], m)
        outs.append(o)
        weights.append(a)
    return [np.concatenate(outs, axis=-1) @ W_o, np.stack(weights, axis=-3)]
""",
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_correct_unusual_answers_pass(variant, capsys):
    fn = load(VARIANTS[variant])
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


def test_self_attention_is_cross_attention_of_x_with_itself():
    """The visible check asks cross_attention(X, X) = the course's multi_head_self_attention."""
    calls = checks.CHECKS[NAME].visible()
    selfs = [c for c in calls if c.raises is None and np.array_equal(c.args[0], c.args[1])]
    assert len(selfs) >= 2 and any(len(c.args) == 8 for c in selfs)


def test_modifying_an_input_fails():
    source = wrong(
        "    Qh = mh.split_heads(X @ W_q, n_heads)\n",
        "    W_q /= np.sqrt(d_k)\n    Qh = mh.split_heads(X @ W_q, n_heads)\n",
        " / np.sqrt(d_k)\n    if mask",
        "\n    if mask",
    )
    with pytest.raises(AssertionError, match="modified an input in place"):
        checks.check(NAME, load(source))


def test_a_runtime_warning_fails():
    """A naive softmax warns where C is all masked, even if it mends the NaN afterwards."""
    source = wrong(
        "    A = mh.softmax(Z)\n",
        "    E = np.exp(Z - Z.max(axis=-1, keepdims=True))\n"
        "    A = np.nan_to_num(E / E.sum(axis=-1, keepdims=True))\n",
    )
    with pytest.raises(AssertionError, match="warning counts as an error"):
        checks.check(NAME, load(source))


def test_without_the_value_error_fails():
    """Heads of d_model // n_heads columns, sliced one by one: no error of its own."""
    source = VARIANTS["loop over heads, a list for the pair"].replace(
        '    if d_model % n_heads:\n        raise ValueError("n_heads must divide d_model.")\n',
        "",
    )
    source = source.replace(
        "np.concatenate(outs, axis=-1) @ W_o",
        "np.concatenate(outs, axis=-1) @ W_o[: n_heads * d_k]",
    )
    with pytest.raises(AssertionError, match="should raise ValueError for n_heads = 4"):
        checks.check(NAME, load(source))


def test_a_result_of_the_wrong_shape_fails():
    source = wrong(
        "return mh.merge_heads(A @ Vh) @ W_o, A",
        "return mh.merge_heads(A @ Vh) @ W_o, A[..., 0, :, :]",
    )
    with pytest.raises(AssertionError, match="the head axis is missing, it holds only head 1"):
        checks.check(NAME, load(source))


# --------------------------------------------------------------------------
# the live widget: the learner's function only where its check passes
# --------------------------------------------------------------------------
def test_the_widget_draws_a_passing_answer_and_replaces_a_failing_one():
    from mhsa_helpers.widgets.cross import CrossWidget

    functions = {NAME: load(RIGHT)}
    w = CrossWidget(functions=functions)
    assert "your</b> <code>cross_attention" in w.status_w.value
    functions[NAME] = load(MISTAKES["queries from C"][0])
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
