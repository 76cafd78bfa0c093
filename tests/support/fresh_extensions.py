"""The extensions' slips (notebooks 11 to 16), written fresh without reading the checks
(issue 23), and what each is told; the format of :mod:`tests.support.fresh_mistakes`."""

from tests.support.answer_parts import HELPERS, SOFTMAX_ROWS

FRESH_EXTENSIONS = {
    # Inverts the online-softmax rescale factor, exp(m_new - m) instead of exp(m - m_new), so
    # whenever the running maximum grows the earlier blocks are weighted up instead of down.
    "tiled_attention_inverted_rescale": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError(f"causal attention needs T_q == T_k, but got {T_q} and {T_k}.")
    rows = np.arange(T_q)[:, None]

    def block_scores(s, e):
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        return S

    # the first block starts the running statistics
    e = min(block_size, T_k)
    S = block_scores(0, e)
    m = S.max(axis=-1, keepdims=True)
    P = np.exp(S - m)
    l = P.sum(axis=-1, keepdims=True)
    O = P @ V[..., 0:e, :]
    for s in range(block_size, T_k, block_size):
        e = min(s + block_size, T_k)
        S = block_scores(s, e)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        scale = np.exp(m_new - m)  # correct the old sums for the new max
        P = np.exp(S - m_new)
        l = l * scale + P.sum(axis=-1, keepdims=True)
        O = O * scale + P @ V[..., s:e, :]
        m = m_new
    return O / l
""",
        "the rescale is inverted",
    ),
    # Always adds a causal mask, which makes no sense in cross-attention: query i of X is stopped
    # from reading positions j > i of the complete memory C.
    "cross_attention_causal_mask_added": (
        "15_cross",
        "cross_attention",
        HELPERS
        + """def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    if X.shape[-1] % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {X.shape[-1]} and {n_heads}.")
    Qh = _split(X @ W_q, n_heads)
    Kh = _split(C @ W_k, n_heads)
    Vh = _split(C @ W_v, n_heads)
    T_q, T_k = Qh.shape[-2], Kh.shape[-2]
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])
    Z = Z + np.triu(np.full((T_q, T_k), -np.inf), 1)  # no peeking ahead
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "a causal mask is added",
    ),
    # Does not handle cache=None: the first token fails with a TypeError ('NoneType' object is not
    # subscriptable).
    "decode_step_cache_none_not_handled": (
        "13_kv_cache",
        "decode_step",
        HELPERS
        + """def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {d_model} and {n_heads}.")
    row = x[..., None, :]
    q, k, v = (_split(row @ W, n_heads) for W in (W_q, W_k, W_v))
    K = np.concatenate([cache[0], k], axis=-2)
    V = np.concatenate([cache[1], v], axis=-2)
    A = _softmax_rows(q @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1]))
    return _merge(A @ V)[..., 0, :] @ W_o, (K, V)
""",
        "where the cache is None",
    ),
    # Adds a batched mask (B, T, T) or (B, 1, T) to the (B, h, T, T) scores without inserting a
    # head axis, so the batch axis of the mask meets the head axis.
    "grouped_query_attention_mask_without_head_axis": (
        "12_gqa",
        "grouped_query_attention",
        HELPERS
        + """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads must divide d_model and n_kv_heads must divide n_heads, but got "
            f"d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}."
        )
    group = n_heads // n_kv_heads
    Qh = _split(X @ W_q, n_heads)
    Kh = np.repeat(_split(X @ W_k, n_kv_heads), group, axis=-3)
    Vh = np.repeat(_split(X @ W_v, n_kv_heads), group, axis=-3)
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "no head axis",
    ),
    # Adds a batched mask (B, 1, T_k) or (B, T_q, T_k) to the (B, h, T_q, T_k) scores without
    # inserting a head axis, so the mask's batch axis meets the head axis.
    "cross_attention_mask_without_head_axis": (
        "15_cross",
        "cross_attention",
        HELPERS
        + """def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    if X.shape[-1] % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {X.shape[-1]} and {n_heads}.")
    Qh = _split(X @ W_q, n_heads)
    Kh = _split(C @ W_k, n_heads)
    Vh = _split(C @ W_v, n_heads)
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "no head axis",
    ),
    # Validates the head counts with assert, which raises AssertionError (and disappears under
    # python -O) instead of the required ValueError.
    "grouped_query_attention_assert_not_valueerror": (
        "12_gqa",
        "grouped_query_attention",
        HELPERS
        + """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    assert X.shape[-1] % n_heads == 0, "n_heads must divide d_model"
    assert n_heads % n_kv_heads == 0, "n_kv_heads must divide n_heads"
    group = n_heads // n_kv_heads
    Qh = _split(X @ W_q, n_heads)
    Kh = np.repeat(_split(X @ W_k, n_kv_heads), group, axis=-3)
    Vh = np.repeat(_split(X @ W_v, n_kv_heads), group, axis=-3)
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if 2 < mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "an assert is not an argument check",
    ),
    # Never checks block_size, so block_size = 0 raises ZeroDivisionError from the block count
    # instead of the required ValueError.
    "tiled_attention_zero_block_size_zerodivision": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError(f"causal attention needs T_q == T_k, but got {T_q} and {T_k}.")
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full((*lead, T_q, 1), -np.inf)
    l = np.zeros((*lead, T_q, 1))
    O = np.zeros((*lead, T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    n_blocks = -(-T_k // block_size)  # ceil(T_k / block_size)
    for b in range(n_blocks):
        s = b * block_size
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        shift = np.where(np.isneginf(m_new), 0.0, m_new)
        P = np.exp(S - shift)
        scale = np.exp(m - shift)
        l = l * scale + P.sum(axis=-1, keepdims=True)
        O = O * scale + P @ V[..., s:e, :]
        m = m_new
    return np.divide(O, l, out=np.zeros_like(O), where=l > 0)
""",
        "but raised ZeroDivisionError",
    ),
    # Copied the self-attention split that reads T from X, and uses X's length to reshape C's keys
    # and values, so it fails whenever T_k differs from T_q.
    "cross_attention_query_length_for_keys": (
        "15_cross",
        "cross_attention",
        SOFTMAX_ROWS
        + """def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    *lead, T, d_model = X.shape
    if d_model % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {d_model} and {n_heads}.")
    d_k = d_model // n_heads

    def split(M):
        return M.reshape(*lead, T, n_heads, d_k).swapaxes(-2, -3)

    Qh, Kh, Vh = split(X @ W_q), split(C @ W_k), split(C @ W_v)
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    out = (A @ Vh).swapaxes(-2, -3).reshape(*lead, T, d_model)
    return out @ W_o, A
""",
        "C has its own length T_k",
    ),
    # Off-by-one at the near edge: lets query i see the window keys before it but not itself (j <
    # i instead of j <= i), so the first row is entirely -inf.
    "sliding_window_mask_excludes_self": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError(f"window must be at least 1, but got {window}.")
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    return np.where((j < i) & (j >= i - window), 0.0, -np.inf)
""",
        "a token does not see itself",
    ),
    # Hard-codes axis=1 for the token axis of the cache, which is right for an unbatched (h, t,
    # d_k) cache only; with batch axes it concatenates along the wrong axis.
    "decode_step_concatenate_axis_1": (
        "13_kv_cache",
        "decode_step",
        HELPERS
        + """def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {d_model} and {n_heads}.")
    row = x[..., None, :]
    q, k, v = (_split(row @ W, n_heads) for W in (W_q, W_k, W_v))
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=1)  # (h, t, d_k): the token axis
        v = np.concatenate([cache[1], v], axis=1)
    A = _softmax_rows(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    return _merge(A @ v)[..., 0, :] @ W_o, (k, v)
""",
        "concatenate along axis=-2",
    ),
    # Ported from the GPT-NeoX/Hugging Face 'rotate_half' RoPE: pairs feature i with feature i +
    # d/2 (two halves) instead of the interleaved pairs (2i, 2i+1) of the contract.
    "ported_rotary_embedding_rotate_half": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X)
    d = X.shape[-1]
    if d % 2:
        raise ValueError(f"d must be even to rotate pairs, but got d={d}.")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)
    freqs = pos[..., None] * inv_freq
    emb = np.concatenate([freqs, freqs], axis=-1)
    x1, x2 = X[..., : d // 2], X[..., d // 2:]
    rotate_half = np.concatenate([-x2, x1], axis=-1)
    return X * np.cos(emb) + rotate_half * np.sin(emb)
""",
        "the GPT-NeoX layout",
    ),
}
