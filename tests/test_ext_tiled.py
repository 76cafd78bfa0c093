"""tiled_attention's check: each typical mistake, written as a learner would, gets its own hint.

Correct but unusual answers (float32, einsum, explicit loops) pass the
visible and the hidden checks; the memory bound at T = 4096 fails a function
that builds a (T, T) array, and the contract's strict rules fail when broken.
"""

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers.checks.comparison import compare
from mhsa_helpers.checks.failures import CheckFailed
from tests.oracles import CATALOGUED
from tests.test_checks import load, single_precision

NAME = "tiled_attention"

TILED = """
def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {{block_size}}.")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full((*lead, T_q, 1), -np.inf)
    l = np.zeros((*lead, T_q, 1))
    O = np.zeros((*lead, T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    {before}
    for s in range({blocks}):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / {scale}
        if causal:
            S = np.where({blocked}, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        shift = np.where(np.isneginf(m_new), 0.0, m_new)
        P = np.exp({exp})
        r = np.exp(m - shift)
        {after}
        l = {l_old} + P.sum(axis=-1, keepdims=True)
        O = {O_old} + P @ V[..., s:e, :]
        m = m_new
    return np.divide(O, l, out=np.zeros_like(O), where=l > 0)
"""
RIGHT = {
    "before": "",
    "blocks": "0, T_k, block_size",
    "scale": "np.sqrt(d_k)",
    "blocked": "np.arange(s, e) > rows",
    "exp": "S - shift",
    "after": "",
    "l_old": "l * r",
    "O_old": "O * r",
}


def tiled(**changes) -> str:
    return TILED.format(**{**RIGHT, **changes})


NO_SHIFT = """
def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    l, O = 0.0, 0.0
    for s in range(0, T_k, block_size):
        S = Q @ np.swapaxes(K[..., s : s + block_size, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, min(s + block_size, T_k)) > np.arange(T_q)[:, None],
                         -np.inf, S)
        P = np.exp(S)  # no running max: the sums need no rescaling
        l = l + P.sum(axis=-1, keepdims=True)
        O = O + P @ V[..., s : s + block_size, :]
    return O / l
"""

FULL_MATRIX = """
def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    mask = mh.causal_mask(Q.shape[-2]) if causal else 0.0
    A = mh.softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + mask)  # (T_q, T_k)
    return A @ V
"""

LOOPS = """
def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError("block_size must be a positive int.")
    *lead, T_q, d_k = Q.shape
    T_k, d_v = K.shape[-2], V.shape[-1]
    out = np.zeros((*lead, T_q, d_v))
    for idx in np.ndindex(*lead):  # one batch element at a time
        q_all, k_all, v_all = Q[idx], K[idx], V[idx]
        m = np.full(T_q, -np.inf)
        l = np.zeros(T_q)
        acc = np.zeros((T_q, d_v))
        for s in range(0, T_k, block_size):
            k, v = k_all[s : s + block_size], v_all[s : s + block_size]
            S = np.einsum("qd,kd->qk", q_all, k) / np.sqrt(d_k)
            if causal:
                j = s + np.arange(len(k))
                S[j[None, :] > np.arange(T_q)[:, None]] = -np.inf
            m_new = np.maximum(m, S.max(axis=1))
            safe = np.where(np.isinf(m_new), 0.0, m_new)
            P = np.exp(S - safe[:, None])
            r = np.exp(m - safe)
            l = l * r + P.sum(axis=1)
            acc = acc * r[:, None] + np.einsum("qk,kv->qv", P, v)
            m = m_new
        out[idx] = acc / np.where(l > 0, l, 1.0)[:, None]
    return out
"""


def fails(source: str, hidden: bool = False) -> str:
    fn = load(source, NAME)
    with pytest.raises(CheckFailed) as info:
        (checks.check_hidden if hidden else checks.check)(NAME, fn)
    return str(info.value)


def passes(fn, capsys) -> None:
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


def test_the_check_is_catalogued():
    assert NAME in CATALOGUED


def test_the_course_solution_passes(capsys):
    passes(load(tiled(), NAME), capsys)


MISTAKES = {
    "sum not rescaled": (tiled(l_old="l"), "the running sum ℓ is not rescaled"),
    "output not rescaled": (tiled(O_old="O"), "the running output O is not rescaled"),
    "neither rescaled": (tiled(l_old="l", O_old="O"), "neither the running sum nor"),
    "no max shift": (NO_SHIFT, "not shifted by the running maximum"),
    "diagonal blocked": (tiled(blocked="np.arange(s, e) >= rows"), "also blocks the diagonal"),
    "one key ahead": (tiled(blocked="np.arange(s, e) > rows + 1"), "see the next key too"),
    "index within the block": (tiled(blocked="np.arange(e - s) > rows"), "inside its block"),
    "causal ignored": (tiled(blocked="False"), "causal=True is ignored"),
    "last block skipped": (
        tiled(blocks="0, T_k - T_k % block_size, block_size"),
        "the last, shorter block of keys is skipped",
    ),
    "not scaled": (tiled(scale="1.0"), "the scores are not scaled"),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_is_named_by_its_own_hint(mistake):
    source, hint = MISTAKES[mistake]
    message = fails(source)
    assert hint in message, message
    others = [h for m, (_, h) in MISTAKES.items() if m != mistake]
    assert not any(h in message for h in others), message
    fails(source, hidden=True)


def test_the_full_matrix_fails_the_memory_bound_in_learner_terms():
    message = fails(FULL_MATRIX)
    assert "MiB at its peak, more than 32 MiB" in message, message
    assert "(T_q, block_size)" in message and "causal" not in message.split("MiB")[0], message


def test_a_full_causal_mask_fails_the_memory_bound():
    """Blocks right, but the mask of the whole sequence is built first: only the causal call."""
    source = tiled(
        before="full = mh.causal_mask(T_q) if causal else None",
        blocked="full[:, s:e] == -np.inf",
    )
    message = fails(source)
    assert "causal, the call used" in message and "more than 32 MiB" in message, message


def test_an_input_modified_in_place_fails():
    message = fails(tiled(before="Q /= np.sqrt(d_k)  # scale the queries once", scale="1.0"))
    assert "modified an input in place" in message, message


def test_a_runtime_warning_fails():
    """Correct values, but log-weights taken for a print: log(0) where the mask blocks."""
    source = tiled(after="logw = np.log(P)  # debugging")
    message = fails(source)
    assert "warning counts as an error" in message and "divide by zero" in message, message


def test_no_value_error_for_block_size_zero_fails():
    source = tiled(before="block_size = max(block_size, 1)  # at least one key per block")
    message = fails(source.replace("block_size < 1", "block_size < 0"))
    assert "should raise ValueError for block_size = 0" in message, message


EINSUM = tiled().replace(
    "Q @ np.swapaxes(K[..., s:e, :], -1, -2)", "np.einsum('...qd,...kd->...qk', Q, K[..., s:e, :])"
)


@pytest.mark.parametrize("source", [LOOPS, EINSUM], ids=["explicit loops", "einsum"])
def test_correct_variants_pass(source, capsys):
    passes(load(source, NAME), capsys)


def test_a_single_precision_answer_passes(capsys):
    passes(single_precision(load(tiled(), NAME)), capsys)


def test_a_difference_outside_the_contract_is_located():
    """Inside numpy's default tolerance but outside the contract's: the entry is named."""
    expected = np.linspace(1.0, 2.0, 6).reshape(2, 3)
    got = expected.copy()
    got[1, 2] *= 1 + 5e-7
    with pytest.raises(CheckFailed, match=r"first at index \(1, 2\)"):
        compare(NAME, got, expected, "the output", contract="float64")
