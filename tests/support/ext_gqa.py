"""grouped_query_attention's answers (extension 12): a right one, slips that change it in one
place each, right answers written unusually, and contract breaches."""

from tests.support.extensions import Extension, changed

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


def wrong(*changes: str) -> str:
    """The right answer with ``changes`` made (:func:`~tests.support.extensions.changed`)."""
    return changed(RIGHT, *changes)


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


def _no_message() -> str:
    head, rest = RIGHT.split("        raise ValueError(\n", 1)
    return head + "        raise ValueError()\n" + rest.split("        )\n", 1)[1]


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
            ).replace(" / np.sqrt(d_k)\n    if mask", "\n    if mask"),
            ("modified an input in place",),
        ),
        # a naive softmax warns on a sequence whose keys are all masked, even if it mends the NaN
        "a warning": (
            wrong(
                "    A = mh.softmax(Z)\n",
                "    E = np.exp(Z - Z.max(axis=-1, keepdims=True))\n"
                "    A = np.nan_to_num(E / E.sum(axis=-1, keepdims=True))\n",
            ),
            ("warning counts as an error",),
        ),
        # query head i reads K/V head i * n_kv // n_heads: the same mapping, but no error when
        # n_kv_heads does not divide n_heads
        "no ValueError": (
            VARIANTS["loop over heads, a list for the pair"]
            .replace("n_heads % n_kv_heads", "False")
            .replace("i // (n_heads // n_kv_heads)", "i * n_kv_heads // n_heads"),
            ("should raise ValueError for n_kv_heads = 3",),
        ),
        "a ValueError without a message": (_no_message(), ("without a message",)),
    },
)
