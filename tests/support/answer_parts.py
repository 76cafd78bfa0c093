# ruff: noqa: E501  (learners' answers, kept as they wrote them)
"""Pieces of learners' answers that many catalogued answers share, each written once.

An answer cell's source is text (it runs in a notebook's kernel, where ``np``
and ``mh`` are defined). Answers that start with the same helpers say so
(``HELPERS + '''def ...'''``), and answers that differ from a right one in a
line or two state only those lines (:func:`edited`).
"""

#: A softmax over the last axis that gives a fully masked row weights 0.
SOFTMAX_ROWS = """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


"""

#: Splitting into heads and merging them back, for inputs with any batch axes.
SPLIT_MERGE = """def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


"""

#: The helpers most of the layers' answers start with: softmax, split and merge.
HELPERS = SOFTMAX_ROWS + SPLIT_MERGE

#: A right softmax backward, as most backward answers start.
SOFTMAX_BACKWARD = """def softmax_backward(A, dA, axis=-1):
    return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))

"""

#: A right backward of one head, with its own softmax backward inside.
HEAD_BACKWARD = """def attention_head_backward(Q, K, V, dOut, mask=None):
    def softmax_backward(A, dA, axis=-1):
        return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))

    s = np.sqrt(Q.shape[-1])
    _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s
    dQ = dZ @ K
    dK = np.swapaxes(dZ, -1, -2) @ Q
    return dQ, dK, dV
"""

#: A right backward of the layer, with its own head backward inside.
LAYER_BACKWARD = """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    def attention_head_backward(Q, K, V, dOut, mask=None):
        s = np.sqrt(Q.shape[-1])
        _, A = mh.attention_head(Q, K, V, mask)
        dV = np.swapaxes(A, -1, -2) @ dOut
        dA = dOut @ np.swapaxes(V, -1, -2)
        dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True)) / s
        return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV

    d_model = X.shape[-1]
    Q, K, V = mh.project_qkv(X, W_q, W_k, W_v)
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    if mask is not None and np.ndim(mask) > 2:
        mask = np.expand_dims(mask, -3)
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)
    merged = mh.merge_heads(heads)
    dH = mh.split_heads(dOut @ W_o.T, n_heads)
    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))
    flat = lambda M: M.reshape(-1, d_model)
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),
                flat(merged).T @ flat(dOut))
"""


def edited(source: str, *changes: tuple[str, str]) -> str:
    """``source`` with whole lines replaced: each change is ``(old lines, new lines)``.

    Parameters
    ----------
    source : str
        An answer cell's source.
    *changes : tuple of (str, str)
        ``old`` is one or more whole lines of ``source`` (without the last
        newline), found exactly once; ``new`` replaces them ("" removes them).

    Returns
    -------
    str
        The edited source.
    """
    text = "\n" + source  # every line, the first too, starts after a newline
    for old, new in changes:
        found = text.count(f"\n{old}\n")
        if found != 1:
            raise ValueError(f"expected the lines {old!r} once in the source, but found {found}.")
        text = text.replace(f"\n{old}\n", f"\n{new}\n" if new else "\n", 1)
    return text[1:]
