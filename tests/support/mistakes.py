"""Buggy learner answers, one per mistake the checks must name.

Each entry: notebook stem, the function's name, the answer cell's source,
and a piece of the hint the feedback must contain. Used by the fast check
tests and by the real-nbgrader tests.
"""

MISTAKES = {
    "scale_sqrt_T": (
        "05_scores",
        "attention_scores",
        """
def attention_scores(Q, K):
    T = K.shape[-2]
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(T)
""",
        "√T (the sequence length",
    ),
    "scale_sqrt_d_model": (
        "09_multi_head",
        "multi_head_self_attention",
        """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    d_model = X.shape[-1]
    d_k = d_model // n_heads
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    *lead, T, _ = Q.shape
    split = lambda M: M.reshape(*lead, T, n_heads, d_k).swapaxes(-2, -3)
    Qh, Kh, Vh = split(Q), split(K), split(V)
    Z = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(d_model)
    if mask is not None:
        Z = Z + mask
    Z = Z - Z.max(axis=-1, keepdims=True)
    A = np.exp(Z) / np.exp(Z).sum(axis=-1, keepdims=True)
    out = (A @ Vh).swapaxes(-2, -3).reshape(*lead, T, d_model)
    return out @ W_o, A
""",
        "√d_model",
    ),
    "no_scale": (
        "05_scores",
        "attention_scores",
        """
def attention_scores(Q, K):
    return Q @ np.swapaxes(K, -1, -2)
""",
        "not scaled",
    ),
    "softmax_wrong_axis": (
        "07_softmax",
        "softmax",
        """
def softmax(Z, axis=-1):
    Z = Z - Z.max(axis=-2, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=-2, keepdims=True)
""",
        "each column sums to 1",
    ),
    "softmax_overflow": (
        "07_softmax",
        "softmax",
        """
def softmax(Z, axis=-1):
    E = np.exp(Z)
    return E / E.sum(axis=axis, keepdims=True)
""",
        "overflow on large scores",
    ),
    "mask_flipped": (
        "06_masking",
        "causal_mask",
        """
def causal_mask(seq_len):
    return np.tril(np.full((seq_len, seq_len), -np.inf), k=-1)
""",
        "the mask is flipped",
    ),
    "mask_after_softmax": (
        "08_head_output",
        "attention_head",
        """
def attention_head(Q, K, V, mask=None):
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    E = np.exp(Z - Z.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    if mask is not None:
        A = A + mask
    return A @ V, A
""",
        "added after the softmax",
    ),
    "mask_in_K": (
        "08_head_output",
        "attention_head",
        """
def attention_head(Q, K, V, mask=None):
    if mask is not None:
        K = K + np.min(mask, axis=0)[:, None]   # "replacing key values with -inf"
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    E = np.exp(Z - Z.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A
""",
        "never to K or V",
    ),
    "padding_on_queries": (
        "06_masking",
        "padding_mask",
        """
def padding_mask(lengths, seq_len):
    lengths = np.asarray(lengths)
    j = np.arange(seq_len)
    return np.where(j[:, None] >= lengths[..., None, None], -np.inf, 0.0)
""",
        "hides queries instead of keys",
    ),
    "split_without_transpose": (
        "04_heads",
        "split_heads",
        """
def split_heads(M, n_heads):
    *lead, T, d_model = M.shape
    return M.reshape(*lead, n_heads, T, d_model // n_heads)
""",
        "without the transpose",
    ),
    "merge_not_inverse": (
        "04_heads",
        "merge_heads",
        """
def merge_heads(H):
    *lead, h, T, d_k = H.shape
    return H.reshape(*lead, T, h * d_k)
""",
        "must undo split_heads",
    ),
    "forgot_W_o": (
        "09_multi_head",
        "multi_head_self_attention",
        """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    d_model = X.shape[-1]
    d_k = d_model // n_heads
    *lead, T, _ = X.shape
    split = lambda M: M.reshape(*lead, T, n_heads, d_k).swapaxes(-2, -3)
    Qh, Kh, Vh = split(X @ W_q), split(X @ W_k), split(X @ W_v)
    Z = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + mask
    E = np.exp(Z - Z.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vh).swapaxes(-2, -3).reshape(*lead, T, d_model), A
""",
        "W_O is missing",
    ),
    "same_weight_qkv": (
        "03_qkv",
        "project_qkv",
        """
def project_qkv(X, W_q, W_k, W_v):
    Q = X @ W_q
    return Q, Q, Q
""",
        "same weight for Q, K and V",
    ),
    "weights_two_values": (
        "02_parameters",
        "init_weights",
        """
def init_weights(d_in, d_out, rng):
    a = np.sqrt(6 / (d_in + d_out))
    return a / np.sqrt(3) * rng.choice([-1.0, 1.0], size=(d_in, d_out))  # variance a**2 / 3
""",
        "the two values ±a/√3",
    ),
    "weights_bound_d_in": (
        "02_parameters",
        "init_weights",
        """
def init_weights(d_in, d_out, rng):
    a = np.sqrt(6 / d_in)
    return rng.uniform(-a, a, size=(d_in, d_out))
""",
        "= sqrt(6 / d_in)",
    ),
    "weights_normal": (
        "02_parameters",
        "init_weights",
        """
def init_weights(d_in, d_out, rng):
    return rng.normal(0, np.sqrt(2 / (d_in + d_out)), size=(d_in, d_out))
""",
        "not from a normal distribution",
    ),
    "wrong_output_shape": (
        "03_qkv",
        "project_qkv",
        """
def project_qkv(X, W_q, W_k, W_v):
    return W_q @ X.T, W_k @ X.T, W_v @ X.T
""",
        "the weight is on the left, which gives the transpose of Q, (d_model, T)",
    ),
}

# A naive shift that computes -inf - -inf on a fully masked row, then cleans up the NaN.
#: Right values, but numpy warns on the way: fails the contract ("no warning"), and is told so.
WARNING_BUT_CORRECT = (
    "07_softmax",
    "softmax",
    """
def softmax(Z, axis=-1):
    m = np.max(Z, axis=axis, keepdims=True)
    E = np.exp(Z - m)                       # nan (with a RuntimeWarning) on all -inf rows
    E = np.nan_to_num(E, nan=0.0)
    s = E.sum(axis=axis, keepdims=True)
    return np.divide(E, s, out=np.zeros_like(E), where=s > 0)
""",
)

# Hostile answers: each must get no credit for its exercise (stem, name, source, hint).
HOSTILE = {
    "calls_reference": (
        "07_softmax",
        "softmax",
        """
import mhsa_helpers
from mhsa_helpers import softmax as _s


def softmax(Z, axis=-1):
    return _s(Z, axis)
""",
        "instead of implementing it",
    ),
    "patches_allclose": (
        "07_softmax",
        "softmax",
        """
np.allclose = lambda *args, **kwargs: True
np.isclose = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, bool)


def softmax(Z, axis=-1):
    return np.zeros_like(Z)
""",
        "has been replaced",
    ),
    "patches_testing": (
        "07_softmax",
        "softmax",
        """
np.testing.assert_allclose = lambda *args, **kwargs: None


def softmax(Z, axis=-1):
    return np.zeros_like(Z)
""",
        "has been replaced",
    ),
}
