"""decode_step's check: each typical mistake, written as a learner would, gets its own hint.

Correct but unusual answers (float32, einsum, one head at a time, lists
instead of tuples) pass the visible and the hidden checks; the contract's
strict rules (inputs untouched, no warnings, a ValueError) fail when broken.
"""

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers import checks
from mhsa_helpers.checks.failures import CheckFailed
from tests.oracles import CATALOGUED
from tests.test_checks import load, single_precision

NAME = "decode_step"

DECODE = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    if x.shape[-1] % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {{x.shape[-1]}} and {{n_heads}}.")
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    {before}
    if cache is None:
        K, V = k, v
    else:
        K, V = {grow}
    mask = {mask}
    Z = q @ np.swapaxes(K, -1, -2) / np.sqrt({scale})
    A = mh.softmax(Z if mask is None else Z + mask)
    y = mh.merge_heads(A @ V)[..., 0, :]{proj}
    return y, {cache}
"""
RIGHT = {
    "before": "",
    "grow": "np.concatenate([cache[0], k], axis=-2), np.concatenate([cache[1], v], axis=-2)",
    "mask": "None",
    "scale": "q.shape[-1]",
    "proj": " @ W_o",
    "cache": "(K, V)",
}


def decode(**changes) -> str:
    return DECODE.format(**{**RIGHT, **changes})


UNSPLIT_CACHE = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    if x.shape[-1] % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {x.shape[-1]} and {n_heads}.")
    row = x[..., None, :]
    k_row, v_row = row @ W_k, row @ W_v  # (..., 1, d_model): cached before splitting
    K_all = k_row if cache is None else np.concatenate([cache[0], k_row], axis=-2)
    V_all = v_row if cache is None else np.concatenate([cache[1], v_row], axis=-2)
    q = mh.split_heads(row @ W_q, n_heads)
    out, _ = mh.attention_head(q, mh.split_heads(K_all, n_heads), mh.split_heads(V_all, n_heads))
    return mh.merge_heads(out)[..., 0, :] @ W_o, (K_all, V_all)
"""

LOOP = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    {guard}
    d_k = d_model // n_heads
    outs, Ks, Vs = [], [], []
    for i in range(n_heads):  # one head at a time
        cols = slice(i * d_k, (i + 1) * d_k)
        q = x @ W_q[:, cols]
        k = (x @ W_k[:, cols])[..., None, :]
        v = (x @ W_v[:, cols])[..., None, :]
        if cache is not None:
            k = np.concatenate([cache[0][..., i, :, :], k], axis=-2)
            v = np.concatenate([cache[1][..., i, :, :], v], axis=-2)
        z = np.einsum("...d,...td->...t", q, k) / np.sqrt(d_k)
        w = np.exp(z - z.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        outs.append(np.einsum("...t,...td->...d", w, v))
        Ks.append(k)
        Vs.append(v)
    heads = np.concatenate(outs, axis=-1)  # (..., n_heads * d_k)
    return heads @ W_o[: n_heads * d_k], [np.stack(Ks, axis=-3), np.stack(Vs, axis=-3)]
"""
GUARD = (
    "if d_model % n_heads:\n"
    '        raise ValueError(f"{n_heads} heads do not divide d_model = {d_model}.")'
)

EINSUM = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model.")
    d_k = d_model // n_heads
    split = lambda M: M.reshape(*M.shape[:-1], n_heads, 1, d_k)  # (..., h, 1, d_k)
    q, k, v = split(x @ W_q), split(x @ W_k), split(x @ W_v)
    if cache is not None:
        k = np.concatenate((cache[0], k), axis=-2)
        v = np.concatenate((cache[1], v), axis=-2)
    z = np.einsum("...hqd,...hkd->...hqk", q, k) / np.sqrt(d_k)
    w = np.exp(z - z.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    heads = np.einsum("...hqk,...hkd->...hqd", w, v)[..., 0, :]  # (..., h, d_k)
    return heads.reshape(*heads.shape[:-2], d_model) @ W_o, [k, v]
"""


def fails(source: str, hidden: bool = False) -> str:
    fn = load(source, NAME)
    with pytest.raises(CheckFailed) as info:
        (checks.check_hidden if hidden else checks.check)(NAME, fn)
    return str(info.value)


def test_the_check_is_catalogued():
    assert NAME in CATALOGUED


def test_the_course_solution_and_the_reference_pass(capsys):
    fn = load(decode(), NAME)
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


MISTAKES = {
    "prepended": (
        decode(
            grow="np.concatenate([k, cache[0]], axis=-2), np.concatenate([v, cache[1]], axis=-2)"
        ),
        "put in front of the cache",
    ),
    "not grown": (decode(grow="k, v"), "the cache does not grow"),
    "first row of a causal mask": (
        decode(mask="mh.causal_mask(K.shape[-2])[:1]"),
        "attends only to the first position",
    ),
    "mask blocks itself": (
        decode(mask="np.where(np.arange(K.shape[-2]) < K.shape[-2] - 1, 0.0, -np.inf)"),
        "does not attend to itself",
    ),
    "sqrt d_model": (decode(scale="x.shape[-1]"), "divided by √d_model = √4"),
    "not scaled": (decode(scale="1.0"), "the scores are not scaled"),
    "no W_O": (decode(proj=""), "W_O is missing"),
    "(V, K)": (decode(cache="(V, K)"), "returned as (V', K')"),
    "unsplit cache": (UNSPLIT_CACHE, "before splitting into heads"),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_is_named_by_its_own_hint(mistake):
    source, hint = MISTAKES[mistake]
    message = fails(source)
    assert hint in message, message
    others = [h for m, (_, h) in MISTAKES.items() if m != mistake and h != hint]
    assert not any(h in message for h in others), message
    fails(source, hidden=True)


def test_the_cache_is_compared_after_every_step():
    """Right outputs, but the cache of step 3 on loses a position: named at that step."""
    source = decode(
        grow="np.concatenate([cache[0], k], axis=-2)[..., -3:, :], "
        "np.concatenate([cache[1], v], axis=-2)[..., -3:, :]"
    )
    message = fails(source)
    assert "after step 3" in message and "shape" in message, message


def test_a_cache_overwritten_in_place_fails():
    source = decode(
        before="if cache is not None:\n        cache[0][...] = cache[0] * 1.0 + 0.5"
        "  # 'refreshes' the cache in place"
    )
    message = fails(source)
    assert "modified the cache passed in" in message, message


def test_an_input_token_modified_in_place_fails():
    message = fails(decode(before="x *= 1.0\n    x += 1e-3"))
    assert "modified an input in place" in message, message


def test_a_runtime_warning_fails():
    """Its own softmax, without the max shift's guard: -inf - -inf on the first step."""
    source = decode(mask="np.where(np.arange(K.shape[-2]) < K.shape[-2] - 1, 0.0, -np.inf)")
    source = source.replace(
        "A = mh.softmax(Z if mask is None else Z + mask)",
        "Z = Z + mask\n    A = np.exp(Z - Z.max(axis=-1, keepdims=True))\n"
        "    A = A / A.sum(axis=-1, keepdims=True)",
    )
    message = fails(source)
    assert "warning counts as an error" in message, message


def test_no_value_error_for_heads_that_do_not_divide_d_model_fails():
    message = fails(LOOP.format(guard=""))
    assert "should raise ValueError" in message and "n_heads = 3" in message, message


def test_a_value_error_without_a_sentence_fails():
    message = fails(decode().replace('raise ValueError(f"', 'raise ValueError()  # "'))
    assert "without a message" in message, message


@pytest.mark.parametrize(
    "source",
    [LOOP.format(guard=GUARD), EINSUM, decode(cache="[K, V]]").replace("return y,", "return [y,")],
    ids=["one head at a time, lists", "einsum", "a list of lists"],
)
def test_correct_variants_pass(source, capsys):
    fn = load(source, NAME)
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


def test_a_single_precision_answer_passes(capsys):
    fn = single_precision(load(EINSUM, NAME))
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


def test_a_learner_feeding_its_own_caches_gets_the_causal_rows():
    """What the notebook's worked check does: the learner's caches fed back, step after step."""
    fn = load(EINSUM, NAME)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2, 7, 6))
    Ws = [rng.normal(size=(6, 6)) for _ in range(4)]
    full, _ = mh.multi_head_self_attention(X, *Ws, 3, mh.causal_mask(7))
    cache = None
    for t in range(7):
        y, cache = fn(X[:, t], cache, *Ws, 3)
        np.testing.assert_allclose(y, full[:, t], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cache[0], mh.split_heads(X @ Ws[1], 3), rtol=1e-12)


def test_a_pair_of_other_kinds_is_refused_with_a_sentence():
    source = decode(cache="{'K': K, 'V': V}")
    message = fails(source)
    assert "pair (K', V')" in message, message
