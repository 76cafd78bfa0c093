"""Issue 33: code written elsewhere (tutorials, framework ports) is told how it strays.

Each function is written as public code writes it, adapted only to the
course's signature; the notebook's check must name the deviation.
"""

import io
from contextlib import redirect_stdout

import pytest

from mhsa_helpers import checks
from tests.support.answers import load
from tests.support.real_code import REAL

CAUSAL_FINITE = """
def causal_mask(seq_len):
    return np.triu(np.full((seq_len, seq_len), {value}), k=1)
"""
PADDING_FINITE = """
def padding_mask(lengths, seq_len):
    lengths = np.asarray(lengths)[..., None, None]
    return np.where(np.arange(seq_len) >= lengths, {value}, 0.0)
"""
#: One head that masks by overwriting blocked scores with a big negative number.
HEAD_FILL = """
def attention_head(Q, K, V, mask=None):
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = np.where(np.isneginf(mask), -1e9, Z)
    A = np.exp(Z - Z.max(-1, keepdims=True))
    A = A / A.sum(-1, keepdims=True)
    return A @ V, A
"""
#: One head with the textbook softmax, which has no answer for a row of −∞ only.
HEAD_NAN = """
def attention_head(Q, K, V, mask=None):
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = Z + mask
    E = np.exp(Z - Z.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)
    return A @ V, A
"""

#: Code written for one batch axis exactly (a framework port): it takes (B, T, d) only.
SPLIT_ONE_BATCH = """
def split_heads(M, n_heads):
    *lead, T, d = M.shape
    if lead:
        return M.reshape(lead[0], T, n_heads, d // n_heads).transpose(0, 2, 1, 3)
    return M.reshape(T, n_heads, d // n_heads).transpose(1, 0, 2)
"""
MERGE_ONE_BATCH = """
def merge_heads(H):
    *lead, h, T, d_k = H.shape
    if lead:
        return H.transpose(0, 2, 1, 3).reshape(lead[0], T, h * d_k)
    return H.transpose(1, 0, 2).reshape(T, h * d_k)
"""
#: A decoder's layer: causal whatever the mask argument says.
ALWAYS_CAUSAL = """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    T = X.shape[-2]
    causal = np.triu(np.full((T, T), -np.inf), 1)
    Qh, Kh, Vh = (mh.split_heads(X @ W, n_heads) for W in (W_q, W_k, W_v))
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1]) + causal
    if mask is not None:
        Z = Z + (np.expand_dims(mask, -3) if 2 < np.ndim(mask) <= np.ndim(X) else mask)
    A = mh.softmax(Z)
    return mh.merge_heads(A @ Vh) @ W_o, A
"""

#: A port of masked_fill(mask == 0, -1e9), written for a 1/0 keep-mask.
HEAD_KEEP = """
def attention_head(Q, K, V, mask=None):
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = np.where(mask == 0, -1e9, Z)
    A = mh.softmax(Z)
    return A @ V, A
"""
#: The attention mask of a tokenizer: 1 for real tokens, 0 for padding.
PADDING_KEEP = """
def padding_mask(lengths, seq_len):
    lengths = np.asarray(lengths)[..., None, None]
    return (np.arange(seq_len) < lengths).astype(float)
"""
HEAD_CAUSAL = """
def attention_head(Q, K, V, mask=None):
    T_q, T_k = Q.shape[-2], K.shape[-2]
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    Z = Z + np.triu(np.full((T_q, T_k), -np.inf), 1)
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    return A @ V, A
"""


@pytest.mark.parametrize(
    ("name", "source", "said"),
    [
        ("causal_mask", CAUSAL_FINITE.format(value="-1e10"), "blocks with -1e10, a large finite"),
        ("causal_mask", CAUSAL_FINITE.format(value="-1e9"), "blocks with -1e9, a large finite"),
        (
            "causal_mask",
            CAUSAL_FINITE.format(value="np.finfo(np.float64).min"),
            "blocks with -2e308, a large finite",
        ),
        ("padding_mask", PADDING_FINITE.format(value="-1e4"), "blocks with -1e4, a large finite"),
        ("attention_head", HEAD_FILL, "every key is blocked gets weights that sum to 1"),
        ("attention_head", HEAD_NAN, "every key is blocked gets NaN"),
        ("split_heads", SPLIT_ONE_BATCH, "written for exactly one batch axis"),
        ("merge_heads", MERGE_ONE_BATCH, "written for exactly one batch axis"),
        ("multi_head_self_attention", ALWAYS_CAUSAL, "never a causal mask of your own"),
        ("attention_head", HEAD_CAUSAL, "never a causal mask of your own"),
        ("attention_head", HEAD_KEEP, "read as a keep-mask"),
        ("padding_mask", PADDING_KEEP, "not a keep-mask of 1 for real tokens"),
    ],
)
def test_code_from_elsewhere_is_told_how_it_strays(name, source, said):
    with pytest.raises(AssertionError) as info:
        checks.check(name, load(source, name))
    assert said in str(info.value), str(info.value)


@pytest.mark.parametrize("key", sorted(k for k, v in REAL.items() if v[3] is not None))
def test_public_code_is_told_its_deviation(key):
    """Issue 47: onnx's, keras's, picoGPT's, llama3.np's … conventions, each named."""
    name, source, _origin, said = REAL[key]
    with pytest.raises(AssertionError) as info:
        checks.check(name, load(source, name))
    assert said in str(info.value), str(info.value)
    assert " Or: " not in str(info.value)


@pytest.mark.parametrize("key", sorted(k for k, v in REAL.items() if v[3] is None))
def test_public_code_right_in_its_own_way_passes(key):
    """Issue 47: right code written another way (onnx's √scale on Q and K, keras's einsum,
    np.triu of −∞, np.repeat of K/V heads) passes the visible and the hidden check."""
    name, source, _origin, _ = REAL[key]
    with redirect_stdout(io.StringIO()):
        assert checks.check(name, load(source, name)) is None
        assert checks.check_hidden(name, load(source, name)) is None
