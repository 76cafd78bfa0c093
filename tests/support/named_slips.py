"""Slips issue 33 found misnamed, failed wrongly or not caught, as learners wrote them.

The same format as :mod:`tests.support.fresh_mistakes` (merged into its ``FRESH`` and
``CORRECT``): notebook stem, the function's name, the answer cell's source and, for a
mistake, a piece of the sentence its visible check must say.
"""

from tests.support.answer_parts import HELPERS

#: A tiled attention whose running maximum starts at ``START``; ``END`` is the last division.
_TILED = """def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError(f"causal attention needs T_q == T_k, but got {T_q} and {T_k}.")
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = START
    l = np.zeros((*lead, T_q, 1))
    O = np.zeros((*lead, T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        r = np.exp(m - m_new)
        l = l * r + P.sum(axis=-1, keepdims=True)
        O = O * r + P @ V[..., s:e, :]
        m = m_new
    return END
"""

#: A decode_step written with its own per-head einsum; ``CHECK`` is its argument check.
_DECODE_EINSUM = """def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
CHECK    d_k = d_model // n_heads

    def heads(W):  # (..., n_heads, 1, d_k)
        return (x @ W).reshape(*x.shape[:-1], n_heads, 1, d_k)

    q, k, v = heads(W_q), heads(W_k), heads(W_v)
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-2)
        v = np.concatenate([cache[1], v], axis=-2)
    S = np.einsum("...hqd,...hkd->...hqk", q, k) / np.sqrt(d_k)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    o = np.einsum("...hqk,...hkd->...hqd", A, v)[..., 0, :]
    return o.reshape(*x.shape[:-1], d_model) @ W_o, (k, v)
"""
_OWN_CHECK = """    if d_model % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {d_model} and {n_heads}.")
"""

NAMED = {
    # The bound multiplies the sizes instead of adding them: symmetric, but far too narrow
    # (it was told "no value is negative", though half its values are).
    "init_weights_sizes_multiplied": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    a = np.sqrt(6 / (d_in * d_out))
    return rng.uniform(-a, a, size=(d_in, d_out))
""",
        "b = 0.01 = sqrt(6 / (d_in * d_out)): the sizes are multiplied under the root",
    ),
    # Repeats the K/V heads along axis 0: right without batch axes, and with them it repeats
    # the batch (it was told its mask has no head axis, though its mask code is right).
    "grouped_query_attention_repeat_axis_0": (
        "12_gqa",
        "grouped_query_attention",
        HELPERS
        + """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    if X.shape[-1] % n_heads or n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads must divide d_model and n_kv_heads must divide n_heads, but got "
            f"{X.shape[-1]}, {n_heads} and {n_kv_heads}."
        )
    group = n_heads // n_kv_heads
    Qh = _split(X @ W_q, n_heads)
    Kh = np.repeat(_split(X @ W_k, n_kv_heads), group, axis=0)
    Vh = np.repeat(_split(X @ W_v, n_kv_heads), group, axis=0)
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if 2 < mask.ndim <= X.ndim:  # no head axis of its own: give it one
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "repeat them along the head axis, np.repeat(K_heads, n_heads // n_kv_heads, axis=-3), "
        "not axis=0",
    ),
    # Checks d_model but not n_kv_heads: for n_kv_heads = 3 of 4 heads, mh.attention_head
    # refuses 4 query heads against 3 K/V heads, a ValueError of the course's, not its own.
    "grouped_query_attention_no_own_kv_check": (
        "12_gqa",
        "grouped_query_attention",
        """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    if X.shape[-1] % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {X.shape[-1]} and {n_heads}.")
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)
    Vh = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)
    if mask is not None:
        mask = np.asarray(mask)
        if 2 < mask.ndim <= X.ndim:  # no head axis of its own: give it one
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "but from a function it calls on the way (numpy's, Python's, or a course function such "
        "as mh.attention_head refusing the shapes it is given), not from a check of its own",
    ),
    # Adds the token axis in front (x[None, :]): a batch of new tokens (B, d_model) is read as
    # one sequence of B tokens (it was told to swap its cache's axes).
    "decode_step_batch_read_as_sequence": (
        "13_kv_cache",
        "decode_step",
        """def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {d_model} and {n_heads}.")
    row = x[None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-2)
        v = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, k, v)
    return mh.merge_heads(out)[..., 0, :] @ W_o, (k, v)
""",
        "x is read as a sequence of tokens: x[None, :] puts the new token axis in front",
    ),
    # Its own per-head einsum and no check of n_heads: the text of 13 now asks for the
    # ValueError (as 12's and 15's do), and a failed reshape is not one.
    "decode_step_einsum_no_own_check": (
        "13_kv_cache",
        "decode_step",
        _DECODE_EINSUM.replace("CHECK", ""),
        "raises ValueError for n_heads = 3, which does not divide d_model = 4, but from numpy "
        "or Python on the way",
    ),
    # The running maximum starts at 0: where every score is very negative, every exp is 0 and
    # the row is 0/0 (NaN, with a warning) ...
    "tiled_attention_max_starts_at_zero": (
        "14_tiled",
        "tiled_attention",
        _TILED.replace("START", "np.zeros((*lead, T_q, 1))").replace("END", "O / l"),
        "the running maximum must start at −∞, not at 0",
    ),
    # ... or, with a guarded division, a row of zeros.
    "tiled_attention_max_starts_at_zero_guarded": (
        "14_tiled",
        "tiled_attention",
        _TILED.replace("START", "np.zeros((*lead, T_q, 1))").replace(
            "END", "np.divide(O, l, out=np.zeros_like(O), where=l > 0)"
        ),
        "the running maximum must start at −∞, not at 0",
    ),
}

NAMED_CORRECT = {
    # decode_step with its own per-head einsum and its own check of n_heads.
    "decode_step_einsum_own_check": (
        "13_kv_cache",
        "decode_step",
        _DECODE_EINSUM.replace("CHECK", _OWN_CHECK),
    ),
    # Checks n_kv_heads itself and leaves n_heads against d_model to mh.split_heads, whose
    # ValueError says exactly that: a course function's check of the very thing asked.
    "grouped_query_attention_d_model_left_to_split_heads": (
        "12_gqa",
        "grouped_query_attention",
        """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    if n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads must divide n_heads, but got {n_kv_heads} and {n_heads}.")
    Qh = mh.split_heads(X @ W_q, n_heads)
    group = n_heads // n_kv_heads
    Kh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)
    Vh = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)
    if mask is not None:
        mask = np.asarray(mask)
        if 2 < mask.ndim <= X.ndim:  # no head axis of its own: give it one
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
    ),
    # The running maximum starts from the first block's own maximum (no −∞ written at all).
    "tiled_attention_max_from_first_block": (
        "14_tiled",
        "tiled_attention",
        _TILED.replace("    m = START\n", "    m = None\n")
        .replace(
            "        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))\n",
            "        top = S.max(axis=-1, keepdims=True)\n"
            "        m_new = top if m is None else np.maximum(m, top)\n"
            "        m_new = np.where(np.isneginf(m_new), 0.0, m_new)\n",
        )
        .replace(
            "        r = np.exp(m - m_new)\n",
            "        r = 1.0 if m is None else np.exp(m - m_new)\n",
        )
        .replace("END", "np.divide(O, l, out=np.zeros_like(O), where=l > 0)"),
    ),
}
