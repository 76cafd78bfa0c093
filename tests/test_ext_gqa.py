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
from mhsa_helpers.execution.saved import answer_namespace

NAME = "grouped_query_attention"

#: A correct answer, which the wrong ones below change in one place each.
RIGHT = """
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads must divide d_model and n_kv_heads must divide n_heads, "
            f"but got d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}."
        )
    group = n_heads // n_kv_heads
    d_k = d_model // n_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)
    Vh = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)
    Z = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + (np.expand_dims(mask, -3) if 2 < np.ndim(mask) <= X.ndim else mask)
    A = mh.softmax(Z)
    return mh.merge_heads(A @ Vh) @ W_o, A
"""


def load(source: str):
    """The function an answer cell defines, in the namespace the notebook gives it."""
    namespace = answer_namespace()
    exec(source, namespace)
    return namespace[NAME]


def wrong(old: str, new: str) -> str:
    assert old in RIGHT, old
    return RIGHT.replace(old, new)


TILED = "np.concatenate([mh.split_heads(X @ W_k, n_kv_heads)] * group, axis=-3)"
MISTAKES = {
    "head i reads K/V head i % n_kv": (
        wrong("np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)", TILED).replace(
            "np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)",
            TILED.replace("W_k", "W_v"),
        ),
        "i % n_kv_heads",
    ),
    "W_O missing": (wrong("mh.merge_heads(A @ Vh) @ W_o", "mh.merge_heads(A @ Vh)"), "W_O"),
    "scaled by sqrt(d_model)": (wrong("np.sqrt(d_k)", "np.sqrt(d_model)"), "√d_model"),
    "mask ignored": (wrong("if mask is not None:", "if False:"), "the mask is ignored"),
    "K/V split into n_heads heads (not shared)": (
        wrong(
            "np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)",
            "mh.split_heads(X @ W_k, n_heads)",
        ),
        "K and V have n_kv_heads =",
    ),
    "K/V heads not repeated (not shared)": (
        wrong(
            "np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)",
            "mh.split_heads(X @ W_k, n_kv_heads)",
        ).replace(
            "np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)",
            "mh.split_heads(X @ W_v, n_kv_heads)",
        ),
        "K and V have n_kv_heads =",
    ),
    "columns repeated instead of heads": (
        wrong(
            "np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)",
            "mh.split_heads(np.repeat(X @ W_k, group, axis=-1), n_heads)",
        ).replace(
            "np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)",
            "mh.split_heads(np.repeat(X @ W_v, group, axis=-1), n_heads)",
        ),
        "repeated one by one",
    ),
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
    others = [h for m, (_, h) in MISTAKES.items() if h != hint and h in message]
    assert not others, message


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_fails_the_hidden_check(mistake):
    with pytest.raises(AssertionError):
        checks.check_hidden(NAME, load(MISTAKES[mistake][0]))


VARIANTS = {
    "float32": RIGHT.replace("np.sqrt(d_k)", "np.float32(np.sqrt(d_k))").replace(
        "    d_model = X.shape[-1]\n",
        "    X, W_q, W_k, W_v, W_o = (np.asarray(a, np.float32) for a in (X, W_q, W_k, W_v, W_o))\n"
        "    mask = None if mask is None else np.asarray(mask, np.float32)\n"
        "    d_model = X.shape[-1]\n",
    ),
    "einsum, own softmax": """
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads != 0:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}.")
    if n_heads % n_kv_heads != 0:
        raise ValueError(f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}.")
    d_k, g = d_model // n_heads, n_heads // n_kv_heads
    *lead, T, _ = X.shape
    Q = (X @ W_q).reshape(*lead, T, n_kv_heads, g, d_k)
    K = (X @ W_k).reshape(*lead, T, n_kv_heads, d_k)
    V = (X @ W_v).reshape(*lead, T, n_kv_heads, d_k)
    Z = np.einsum("...qjgd,...kjd->...jgqk", Q, K) / np.sqrt(d_k)
    Z = Z.reshape(*lead, n_heads, T, T)
    if mask is not None:
        m = np.asarray(mask)
        Z = Z + (m[..., None, :, :] if 2 < m.ndim <= X.ndim else m)
    top = Z.max(axis=-1, keepdims=True)
    E = np.exp(Z - np.where(np.isfinite(top), top, 0.0))
    s = E.sum(axis=-1, keepdims=True)
    A = np.divide(E, s, out=np.zeros_like(E), where=s > 0)
    out = np.einsum("...jgqk,...kjd->...qjgd", A.reshape(*lead, n_kv_heads, g, T, T), V)
    return out.reshape(*lead, T, d_model) @ W_o, A
""",
    "loop over heads, a list for the pair": """
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError("n_heads must divide d_model, and n_kv_heads must divide n_heads.")
    d_k = d_model // n_heads
    outs, weights = [], []
    for i in range(n_heads):
        j = i // (n_heads // n_kv_heads)
        q = X @ W_q[:, i * d_k:(i + 1) * d_k]
        k = X @ W_k[:, j * d_k:(j + 1) * d_k]
        v = X @ W_v[:, j * d_k:(j + 1) * d_k]
        m = mask
        if m is not None and np.ndim(m) > X.ndim:  # a head axis at -3: this head's mask
            m = m[..., min(i, m.shape[-3] - 1), :, :]
        o, a = mh.attention_head(q, k, v, m)
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


def test_a_float32_result_for_float32_inputs_is_judged_with_the_float32_tolerance():
    """The visible check has a float32 call; the float32 variant returns float32 there."""
    fn = load(VARIANTS["float32"])
    calls = checks.CHECKS[NAME].visible()
    (call,) = [c for c in calls if c.args[0].dtype == np.float32]
    out, A = fn(*call.args)
    assert out.dtype == np.float32 and A.dtype == np.float32
    checks.CHECKS[NAME].judge(call, (out, A))


def test_modifying_an_input_fails():
    source = wrong(
        "    Qh = mh.split_heads(X @ W_q, n_heads)\n",
        "    W_q /= np.sqrt(d_k)\n    Qh = mh.split_heads(X @ W_q, n_heads)\n",
    )
    source = source.replace(" / np.sqrt(d_k)\n    if mask", "\n    if mask")
    with pytest.raises(AssertionError, match="modified an input in place"):
        checks.check(NAME, load(source))


def test_a_runtime_warning_fails():
    """A naive softmax warns on a sequence whose keys are all masked, even if it mends the NaN."""
    source = wrong(
        "    A = mh.softmax(Z)\n",
        "    E = np.exp(Z - Z.max(axis=-1, keepdims=True))\n"
        "    A = np.nan_to_num(E / E.sum(axis=-1, keepdims=True))\n",
    )
    with pytest.raises(AssertionError, match="warning counts as an error"):
        checks.check(NAME, load(source))


def test_without_the_value_error_fails():
    """Query head i reads K/V head i * n_kv // n_heads: the same mapping, but no error when
    n_kv_heads does not divide n_heads."""
    source = VARIANTS["loop over heads, a list for the pair"]
    source = source.replace("n_heads % n_kv_heads", "False").replace(
        "i // (n_heads // n_kv_heads)", "i * n_kv_heads // n_heads"
    )
    with pytest.raises(AssertionError, match="should raise ValueError for n_kv_heads = 3"):
        checks.check(NAME, load(source))


def test_a_value_error_without_a_message_fails():
    head, rest = RIGHT.split("        raise ValueError(\n", 1)
    source = head + "        raise ValueError()\n" + rest.split("        )\n", 1)[1]
    with pytest.raises(AssertionError, match="without a message"):
        checks.check(NAME, load(source))


def test_an_integer_result_fails():
    source = wrong(
        "return mh.merge_heads(A @ Vh) @ W_o, A",
        "return mh.merge_heads(A @ Vh) @ W_o, (A > 0).astype(int)",
    )
    with pytest.raises(AssertionError, match="floating array"):
        checks.check(NAME, load(source))


# --------------------------------------------------------------------------
# the live widget: the learner's function only where its check passes
# --------------------------------------------------------------------------
def test_the_widget_draws_a_passing_answer_and_replaces_a_failing_one():
    from mhsa_helpers.widgets.gqa import GQAWidget

    functions = {NAME: load(RIGHT)}
    w = GQAWidget(functions=functions)
    assert "your</b> <code>grouped_query_attention" in w.status_w.value
    functions[NAME] = load(MISTAKES["W_O missing"][0])
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
