"""cross_attention's answers (extension 15): a right one, slips that change it in one place
each, right answers written unusually, and contract breaches."""

from tests.support.extensions import Extension, changed

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


def wrong(*changes: str) -> str:
    """The right answer with ``changes`` made (:func:`~tests.support.extensions.changed`)."""
    return changed(RIGHT, *changes)


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
    K = (C @ W_k).reshape(*C.shape[:-1], n_heads, d_k)  # C's own batch axes (one memory
    V = (C @ W_v).reshape(*C.shape[:-1], n_heads, d_k)  # may serve a batch of queries)
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


def _no_value_error() -> str:
    """Heads of d_model // n_heads columns, sliced one by one: no error of its own."""
    source = VARIANTS["loop over heads, a list for the pair"].replace(
        '    if d_model % n_heads:\n        raise ValueError("n_heads must divide d_model.")\n',
        "",
    )
    return source.replace(
        "np.concatenate(outs, axis=-1) @ W_o",
        "np.concatenate(outs, axis=-1) @ W_o[: n_heads * d_k]",
    )


EXTENSION = Extension(
    NAME,
    right=RIGHT,
    mistakes=MISTAKES,
    variants=VARIANTS,
    breaches={
        "W_q modified in place": (
            wrong(
                "    Qh = mh.split_heads(X @ W_q, n_heads)\n",
                "    W_q /= np.sqrt(d_k)\n    Qh = mh.split_heads(X @ W_q, n_heads)\n",
                " / np.sqrt(d_k)\n    if mask",
                "\n    if mask",
            ),
            ("modified an input in place",),
        ),
        # a naive softmax warns where C is all masked, even if it mends the NaN afterwards
        "a warning": (
            wrong(
                "    A = mh.softmax(Z)\n",
                "    E = np.exp(Z - Z.max(axis=-1, keepdims=True))\n"
                "    A = np.nan_to_num(E / E.sum(axis=-1, keepdims=True))\n",
            ),
            ("warning counts as an error",),
        ),
        "no ValueError": (_no_value_error(), ("should raise ValueError for n_heads = 4",)),
    },
)


def weights_by_hand(X, C, W_q, W_k, n_heads: int, length: int):
    """Cross-attention's weights (h, T_q, T_k) head by head, with C's positions from
    ``length`` on masked out: the widget's numbers, computed without the course's code."""
    import numpy as np

    d_k = X.shape[-1] // n_heads
    out = []
    for i in range(n_heads):
        cols = slice(i * d_k, (i + 1) * d_k)
        Z = (X @ W_q[:, cols]) @ (C @ W_k[:, cols]).T / np.sqrt(d_k)  # (T_q, T_k)
        E = np.exp(Z[:, :length] - Z[:, :length].max(axis=1, keepdims=True))
        A = np.zeros_like(Z)
        A[:, :length] = E / E.sum(axis=1, keepdims=True)
        out.append(A)
    return np.stack(out)
