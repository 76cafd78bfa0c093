# ruff: noqa: E501  (learners' answers, kept as they wrote them)
"""Issue 47's slips named by the checks (ext), as learners wrote them; the format of
:mod:`tests.support.fresh_mistakes` (merged into its ``FRESH``)."""

SLIPS47_EXT = {
    # Splits the shared K and V (one head of width d_k) into n_heads heads and calls mh.attention_head, which refuses Q and K of different widths.
    "multi_query_attention_splits_shared_kv_with_mh": (
        "10_capstone",
        "multi_query_attention",
        """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(X @ W_k, n_heads)
    Vh = mh.split_heads(X @ W_v, n_heads)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
""",
        "the shared K and V were split into n_heads = 2 heads of 2 columns",
    ),
    # Splits X @ W_k (n_kv_heads·d_k columns) into n_heads heads, as for the queries; mh.attention_head refuses their width.
    "grouped_query_attention_kv_split_into_n_heads_with_mh": (
        "12_gqa",
        "grouped_query_attention",
        """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError("n_heads must divide d_model and n_kv_heads must divide n_heads")
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(X @ W_k, n_heads)
    Vh = mh.split_heads(X @ W_v, n_heads)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
""",
        "split into n_heads = 4 heads of 1 column",
    ),
    # Repeats each K/V head n_kv_heads times instead of n_heads // n_kv_heads (right only where the two are equal).
    "grouped_query_attention_repeats_each_kv_head_n_kv_heads_times": (
        "12_gqa",
        "grouped_query_attention",
        """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError("n_heads must divide d_model and n_kv_heads must divide n_heads")
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), n_kv_heads, axis=-3)
    Vh = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), n_kv_heads, axis=-3)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
""",
        "each K/V head is repeated n_kv_heads = 4 times, giving 16 K/V heads",
    ),
    # Concatenates the new key and value on axis -3, the head axis, instead of -2.
    "decode_step_cache_grown_along_the_head_axis": (
        "13_kv_cache",
        "decode_step",
        """def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-3)
        v = np.concatenate([cache[1], v], axis=-3)
    out, _ = mh.attention_head(q, k, v)
    return mh.merge_heads(out)[..., 0, :] @ W_o, (k, v)
""",
        "the cache grows along the head axis",
    ),
    # Cuts K/V head j as the columns j, j + n_kv_heads, … instead of a run of d_k columns.
    "grouped_query_attention_kv_heads_of_strided_columns": (
        "12_gqa",
        "grouped_query_attention",
        """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError("n_heads must divide d_model and n_kv_heads must divide n_heads")
    d_k = d_model // n_heads
    g = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    K, V = X @ W_k, X @ W_v
    # K/V head j: every n_kv_heads-th column
    Kh = np.stack([K[..., j::n_kv_heads] for j in range(n_kv_heads)], axis=-3)
    Vh = np.stack([V[..., j::n_kv_heads] for j in range(n_kv_heads)], axis=-3)
    Kh, Vh = np.repeat(Kh, g, axis=-3), np.repeat(Vh, g, axis=-3)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
""",
        "K/V head j takes every n_kv_heads-th column",
    ),
    # Divides θ's exponent by T, the sequence length, instead of d.
    "rotary_embedding_theta_over_T": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X)
    T, d = X.shape[-2], X.shape[-1]
    if d % 2:
        raise ValueError(f"d must be even, got {d}")
    pos = np.arange(T) if positions is None else np.asarray(positions)
    theta = base ** (-np.arange(0, d, 2) / T)
    angle = pos[..., None] * theta
    cos, sin = np.cos(angle), np.sin(angle)
    out = np.empty(X.shape)
    out[..., 0::2] = X[..., 0::2] * cos - X[..., 1::2] * sin
    out[..., 1::2] = X[..., 0::2] * sin + X[..., 1::2] * cos
    return out
""",
        "divides the exponent by the sequence length T = 5",
    ),
    # Takes cos where sin belongs and the reverse.
    "rotary_embedding_cos_sin_swapped": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X)
    d = X.shape[-1]
    if d % 2:
        raise ValueError(f"d must be even, got {d}")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    theta = base ** (-np.arange(0, d, 2) / d)
    angle = pos[..., None] * theta
    sin, cos = np.cos(angle), np.sin(angle)
    out = np.empty(X.shape)
    out[..., 0::2] = X[..., 0::2] * cos - X[..., 1::2] * sin
    out[..., 1::2] = X[..., 0::2] * sin + X[..., 1::2] * cos
    return out
""",
        "cos and sin are swapped",
    ),
    # Adapted from llama: B, T = X.shape[0], X.shape[1], right with one batch axis and wrong without one.
    "grouped_query_attention_llama_style_one_batch_axis": (
        "12_gqa",
        "grouped_query_attention",
        """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError("n_heads must divide d_model and n_kv_heads must divide n_heads")
    d_k = d_model // n_heads
    B, T = X.shape[0], X.shape[1]
    xq = (X @ W_q).reshape(B, T, n_heads, d_k)
    xk = (X @ W_k).reshape(B, T, n_kv_heads, d_k)
    xv = (X @ W_v).reshape(B, T, n_kv_heads, d_k)
    n_rep = n_heads // n_kv_heads
    keys = np.repeat(xk, n_rep, axis=2)
    values = np.repeat(xv, n_rep, axis=2)
    xq, keys, values = (a.transpose(0, 2, 1, 3) for a in (xq, keys, values))
    scores = xq @ keys.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    if mask is not None:
        scores = scores + mask
    A = mh.softmax(scores)
    out = (A @ values).transpose(0, 2, 1, 3).reshape(B, T, d_model)
    return out @ W_o, A
""",
        "takes the first two axes as (B, T)",
    ),
    # Makes the new token's query with W_k.
    "decode_step_query_from_W_k": (
        "13_kv_cache",
        "decode_step",
        """def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_k, W_k, W_v))
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-2)
        v = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, k, v)
    return mh.merge_heads(out)[..., 0, :] @ W_o, (k, v)
""",
        "the new token's query is computed with W_k",
    ),
    # Attends right but returns the cache it was given.
    "decode_step_returns_the_old_cache": (
        "13_kv_cache",
        "decode_step",
        """def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    if cache is None:
        K, V = k, v
        cache = (K, V)
    else:
        K = np.concatenate([cache[0], k], axis=-2)
        V = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, K, V)
    return mh.merge_heads(out)[..., 0, :] @ W_o, cache
""",
        "the cache returned is the one passed in (1 position)",
    ),
    # Splits C's keys and values with X's batch axes: wrong for one memory C shared by a batch of queries.
    "cross_attention_splits_C_with_X_batch_axes": (
        "15_cross",
        "cross_attention",
        """def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    d_k = d_model // n_heads
    lead, T_q, T_k = X.shape[:-2], X.shape[-2], C.shape[-2]
    def split(M, T):
        return np.swapaxes(M.reshape(*lead, T, n_heads, d_k), -2, -3)
    Qh, Kh, Vh = split(X @ W_q, T_q), split(C @ W_k, T_k), split(C @ W_v, T_k)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
""",
        "C's keys and values are split with X's batch axes",
    ),
    # Decides the mask's head axis by C's axes alone: wrong for one memory C shared by a batch of queries.
    "cross_attention_mask_rule_counts_C_alone": (
        "15_cross",
        "cross_attention",
        """def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    if X.shape[-1] % n_heads:
        raise ValueError("n_heads must divide d_model")
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C @ W_v, n_heads)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(C):
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
""",
        "counting the axes of C alone (C has 2, X has 3)",
    ),
    # Transposes the shared K (..., 1, T, d_k) with .T, which reverses its head axis too.
    "multi_query_attention_K_dot_T_with_head_axis": (
        "10_capstone",
        "multi_query_attention",
        """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    K = (X @ W_k)[..., None, :, :]
    V = (X @ W_v)[..., None, :, :]
    Z = Qh @ K.T / np.sqrt(Qh.shape[-1])
    if mask is not None:
        if 2 < np.ndim(mask) <= np.ndim(X):
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = mh.softmax(Z)
    return mh.merge_heads(A @ V) @ W_o, A
""",
        "K.T reverses every axis of the shared K",
    ),
    # Reshapes the heads (..., h, T, d_k) to (..., T, d_model) without moving the head axis.
    "multi_query_attention_heads_reshaped_without_swap": (
        "10_capstone",
        "multi_query_attention",
        """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    K = (X @ W_k)[..., None, :, :]
    V = (X @ W_v)[..., None, :, :]
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, K, V, mask)
    out = heads.reshape(*heads.shape[:-3], heads.shape[-2], -1)
    return out @ W_o, A
""",
        "with their head axis still in front of T",
    ),
    # Counts bytes of float32 (4 per number) instead of numbers.
    "kv_cache_size_bytes": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    d_k = d_model // n_heads
    per_token = 2 * (d_k if multi_query else d_model)
    return per_token * seq_len * 4
""",
        "counts numbers, not bytes",
    ),
    # Multi-query caches n_heads numbers per token instead of d_k.
    "kv_cache_size_multi_query_n_heads": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    if multi_query:
        return 2 * seq_len * n_heads
    return 2 * seq_len * d_model
""",
        "That is 2·T·n_heads",
    ),
    # Counts T·T positions, as for the scores.
    "kv_cache_size_T_squared": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    width = d_model // n_heads if multi_query else d_model
    return 2 * seq_len * seq_len * width
""",
        "T = 6 times too many (T·T positions)",
    ),
    # Rotates interleaved pairs but concatenates the results as two halves.
    "rotary_embedding_written_back_as_halves": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X)
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    theta = base ** (-2 * np.arange(d // 2) / d)
    angle = pos[..., None] * theta
    c, s = np.cos(angle), np.sin(angle)
    x1, x2 = X[..., ::2], X[..., 1::2]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)
""",
        "the rotated pairs are written back as two halves",
    ),
    # Converts the angles with np.deg2rad, as if they were degrees.
    "rotary_embedding_angles_in_degrees": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X)
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    theta = base ** (-2 * np.arange(d // 2) / d)
    angle = np.deg2rad(pos[..., None] * theta)
    c, s = np.cos(angle), np.sin(angle)
    out = X.astype(float).copy()
    out[..., ::2] = X[..., ::2] * c - X[..., 1::2] * s
    out[..., 1::2] = X[..., ::2] * s + X[..., 1::2] * c
    return out
""",
        "as if in degrees",
    ),
    # Spreads the exponent with np.linspace(0, 1, d // 2): −2i/(d−2) instead of −2i/d.
    "rotary_embedding_linspace_exponent": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X)
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    i = np.arange(d // 2)
    theta = base ** (-2 * i / (d - 2)) if d > 2 else np.ones(1)
    angle = pos[..., None] * theta
    c, s = np.cos(angle), np.sin(angle)
    out = np.empty(X.shape)
    out[..., ::2] = X[..., ::2] * c - X[..., 1::2] * s
    out[..., 1::2] = X[..., ::2] * s + X[..., 1::2] * c
    return out
""",
        "as np.linspace(0, 1, d // 2) gives",
    ),
    # Copy-paste slip: the values from W_k.
    "grouped_query_attention_values_from_W_k": (
        "12_gqa",
        "grouped_query_attention",
        """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError("bad heads")
    g = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), g, axis=-3)
    Vh = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), g, axis=-3)
    Vh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), g, axis=-3)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
""",
        "V is computed with W_k",
    ),
    # Splits C itself into the value heads, without W_v.
    "cross_attention_values_unprojected": (
        "15_cross",
        "cross_attention",
        """def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    if X.shape[-1] % n_heads:
        raise ValueError("n_heads must divide d_model")
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C, n_heads)
    if mask is not None and 2 < np.ndim(mask) <= max(np.ndim(X), np.ndim(C)):
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
""",
        "the values are C itself",
    ),
    # Divides the scores by √T_k, the source article's √(sequence length).
    "cross_attention_scaled_by_sqrt_T_k": (
        "15_cross",
        "cross_attention",
        """def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    if X.shape[-1] % n_heads:
        raise ValueError("n_heads must divide d_model")
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C @ W_v, n_heads)
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(C.shape[-2])
    if mask is not None:
        if 2 < np.ndim(mask) <= max(X.ndim, C.ndim):
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = mh.softmax(Z)
    return mh.merge_heads(A @ Vh) @ W_o, A
""",
        "divided by √T_k = √6, the length of C",
    ),
}
