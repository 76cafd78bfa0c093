"""Issue 33: code written elsewhere (tutorials, framework ports) is told how it strays.

Each function is written as public code writes it, adapted only to the
course's signature; the notebook's check must name the deviation.
"""

import pytest

from mhsa_helpers import checks
from tests.test_checks import load

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
        ("attention_head", HEAD_FILL, "every key is blocked gets equal weights 1/T_k"),
        ("attention_head", HEAD_NAN, "every key is blocked gets NaN"),
    ],
)
def test_code_from_elsewhere_is_told_how_it_strays(name, source, said):
    with pytest.raises(AssertionError) as info:
        checks.check(name, load(source, name))
    assert said in str(info.value), str(info.value)
