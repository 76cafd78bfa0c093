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
        "T = 10 times too many (T·T positions)",
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
    # Scores divided by the square root of the number of cached positions, not of d_k. (set A: decode_scale_seq_len)
    "decode_scale_seq_len": (
        "13_kv_cache",
        "decode_step",
        """import mhsa_helpers as mh

def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-2)
        v = np.concatenate([cache[1], v], axis=-2)
    t1 = k.shape[-2]
    A = mh.softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(t1))
    return mh.merge_heads(A @ v)[..., 0, :] @ W_o, (k, v)
""",
        "divided by √(t + 1) = √3, the number of positions in the cache",
    ),
    # np.atleast_2d puts the token axis in front: a batch (B, d_model) is read as B tokens. (set A: decode_no_token_axis)
    "decode_no_token_axis": (
        "13_kv_cache",
        "decode_step",
        """import mhsa_helpers as mh

def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    q = mh.split_heads(np.atleast_2d(x @ W_q), n_heads)
    k = mh.split_heads(np.atleast_2d(x @ W_k), n_heads)
    v = mh.split_heads(np.atleast_2d(x @ W_v), n_heads)
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-2)
        v = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, k, v)
    return mh.merge_heads(out)[..., 0, :] @ W_o, (k, v)
""",
        "np.atleast_2d adds the token axis in front",
    ),
    # K/V head index np.arange(n_heads) // n_kv_heads: past the last K/V head (IndexError). (set A: gqa_index_by_n_kv)
    "gqa_index_by_n_kv": (
        "12_gqa",
        "grouped_query_attention",
        """import mhsa_helpers as mh

def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    if n_heads % n_kv_heads:
        raise ValueError("n_kv_heads must divide n_heads")
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(X @ W_k, n_kv_heads)
    Vh = mh.split_heads(X @ W_v, n_kv_heads)
    idx = np.arange(n_heads) // n_kv_heads
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh[..., idx, :, :], Vh[..., idx, :, :], mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "query head i reads K/V head i // n_kv_heads",
    ),
    # Ignores multi_query: always 2·T·d_model. (set A: kv_ignores_flag)
    "kv_ignores_flag": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    d_k = d_model // n_heads
    return 2 * seq_len * n_heads * d_k
""",
        "as if multi_query=True were ignored",
    ),
    # n_heads set to 1 for multi-query before d_k = d_model // n_heads: the shared head gets the full width. (set A: kv_one_head_full_width)
    "kv_one_head_full_width": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    if multi_query:
        n_heads = 1              # one shared K/V head ...
    d_k = d_model // n_heads     # ... which then gets the whole width
    return 2 * seq_len * n_heads * d_k
""",
        "n_heads set to 1 before d_k = d_model // n_heads",
    ),
    # The queries split, and the heads merged, by a bare reshape (no transpose). (set A: mqa_query_reshape_no_transpose)
    "mqa_query_reshape_no_transpose": (
        "10_capstone",
        "multi_query_attention",
        """import mhsa_helpers as mh

def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    *lead, T, d_model = X.shape
    d_k = d_model // n_heads
    Qh = (X @ W_q).reshape(*lead, n_heads, T, d_k)
    K = np.expand_dims(X @ W_k, -3)
    V = np.expand_dims(X @ W_v, -3)
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, K, V, mask)
    return out.reshape(*lead, T, d_model) @ W_o, A
""",
        "reshaped straight to (..., n_heads, T, d_k) and the heads back",
    ),
    # 2i // d in RoPE's exponent: every θ_i is 1. (set A: rope_int_division_exponent)
    "rope_int_division_exponent": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X, dtype=float)
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    two_i = np.arange(0, d, 2)
    theta = base ** -(two_i // d)
    a = pos[..., None] * theta
    out = np.empty_like(X)
    out[..., 0::2] = X[..., 0::2] * np.cos(a) - X[..., 1::2] * np.sin(a)
    out[..., 1::2] = X[..., 0::2] * np.sin(a) + X[..., 1::2] * np.cos(a)
    return out
""",
        "integer division, 2i // d",
    ),
    # A per-head mask repeated like K and V although it has one entry per query head. (set A: gqa_mask_repeated_like_kv)
    "gqa_mask_repeated_like_kv": (
        "12_gqa",
        "grouped_query_attention",
        """import mhsa_helpers as mh

def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    if n_heads % n_kv_heads:
        raise ValueError("n_kv_heads must divide n_heads")
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)
    Vh = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
        else:
            mask = np.repeat(mask, group, axis=-3)  # like K and V
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "the per-head mask of shape (4, 6, 6) is repeated like K and V",
    ),
    # The mask rule counts X's axes only: a per-sequence mask with a batched C and an unbatched X is taken for a head mask. (set A: cross_mask_rule_counts_x_only)
    "cross_mask_rule_counts_x_only": (
        "15_cross",
        "cross_attention",
        """import mhsa_helpers as mh

def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C @ W_v, n_heads)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "counting the axes of X alone",
    ),
    # Counts K (or V) only: the factor 2 forgotten. (set A: kv_forgets_factor_two)
    "kv_forgets_factor_two": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    d_k = d_model // n_heads
    return seq_len * (d_k if multi_query else d_model)
""",
        "Both K and V are cached: count them twice.",
    ),
    # The shared K and V given no head axis: with a batch, the batch meets the heads. (set A: mqa_no_head_axis_on_kv)
    "mqa_no_head_axis_on_kv": (
        "10_capstone",
        "multi_query_attention",
        """import mhsa_helpers as mh

def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    K = X @ W_k  # (..., T, d_k), shared
    V = X @ W_v
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, K, V, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "the shared K and V have no head axis",
    ),
    # ---- issue 47, round 3 (set B), group ext: MQA, GQA, cross-attention, kv_cache_size ----
    # For multi-query, shares the key head but keeps one value head per query head: T·d_k + T·d_model. (set B: kv_mqa_shares_only_keys)
    "kv_mqa_shares_only_keys": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    d_k = d_model // n_heads
    if multi_query:
        return seq_len * d_k + seq_len * d_model
    return 2 * seq_len * d_model
""",
        "one of K and V is shared and the other kept per head",
    ),
    # Adds the shared head axis in front (K[None]) instead of at -3: with a batch, the batch axis meets the heads. (set B: mqa_head_axis_in_front)
    "mqa_head_axis_in_front": (
        "10_capstone",
        "multi_query_attention",
        """import mhsa_helpers as mh


def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    Qh = mh.split_heads(X @ W_q, n_heads)
    K = (X @ W_k)[None]
    V = (X @ W_v)[None]
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, K, V, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "have their head axis in front of the batch axes",
    ),
    # Applies the square weights W_q and W_o as nn.Linear does (X @ W.T). (set B: mqa_linear_transposed)
    "mqa_linear_transposed": (
        "10_capstone",
        "multi_query_attention",
        """import mhsa_helpers as mh


def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    Qh = mh.split_heads(X @ W_q.T, n_heads)
    K = (X @ W_k)[..., None, :, :]
    V = (X @ W_v)[..., None, :, :]
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, K, V, mask)
    return mh.merge_heads(out) @ W_o.T, A
""",
        "W_Q and W_O are applied transposed",
    ),
    # Averages each group's query heads into one and shares the result, instead of keeping every query head. (set B: gqa_mean_pooled_queries)
    "gqa_mean_pooled_queries": (
        "12_gqa",
        "grouped_query_attention",
        """import mhsa_helpers as mh


def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError("n_heads must divide d_model and n_kv_heads must divide n_heads")
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Qg = Qh.reshape(Qh.shape[:-3] + (n_kv_heads, group) + Qh.shape[-2:]).mean(axis=-3)
    Kh = mh.split_heads(X @ W_k, n_kv_heads)
    Vh = mh.split_heads(X @ W_v, n_kv_heads)
    if mask is not None and np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qg, Kh, Vh, mask)
    out = np.repeat(out, group, axis=-3)
    A = np.repeat(A, group, axis=-3)
    return mh.merge_heads(out) @ W_o, A
""",
        "the query heads of each group attend alike",
    ),
    # K/V head ceil(i / g) (the 1-based formula on 0-based heads), clipped to the last K/V head. (set B: gqa_one_based_ceil_clipped)
    "gqa_one_based_ceil_clipped": (
        "12_gqa",
        "grouped_query_attention",
        """import mhsa_helpers as mh


def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    X = np.asarray(X, dtype=float)
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("n_kv_heads must divide n_heads")
    d_k = d_model // n_heads
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(X @ W_k, n_kv_heads)
    Vh = mh.split_heads(X @ W_v, n_kv_heads)
    Kh = Kh[..., np.minimum(np.ceil(np.arange(n_heads) / group).astype(int), n_kv_heads - 1), :, :]
    Vh = Vh[..., np.minimum(np.ceil(np.arange(n_heads) / group).astype(int), n_kv_heads - 1), :, :]
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "query head i reads K/V head ceil(i / g), clipped to the last K/V head",
    ),
    # K/V head ceil(i / g) (the 1-based formula on 0-based heads): the last heads run past the K/V axis (IndexError). (set B: gqa_one_based_ceil_formula)
    "gqa_one_based_ceil_formula": (
        "12_gqa",
        "grouped_query_attention",
        """import mhsa_helpers as mh


def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    X = np.asarray(X, dtype=float)
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("n_kv_heads must divide n_heads")
    d_k = d_model // n_heads
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(X @ W_k, n_kv_heads)
    Vh = mh.split_heads(X @ W_v, n_kv_heads)
    Kh = Kh[..., np.ceil(np.arange(n_heads) / group).astype(int), :, :]
    Vh = Vh[..., np.ceil(np.arange(n_heads) / group).astype(int), :, :]
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "a query head reads K/V head 2, past the last one",
    ),
    # Applies the square weights as nn.Linear does, X @ W.T (W_k, W_v are not square). (set B: gqa_pytorch_weights_transposed)
    "gqa_pytorch_weights_transposed": (
        "12_gqa",
        "grouped_query_attention",
        """import mhsa_helpers as mh


def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    X = np.asarray(X, dtype=float)
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("n_kv_heads must divide n_heads")
    d_k = d_model // n_heads
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q.T, n_heads)
    Kh = mh.split_heads(X @ W_k, n_kv_heads)
    Vh = mh.split_heads(X @ W_v, n_kv_heads)
    Kh = np.repeat(Kh, group, axis=-3)
    Vh = np.repeat(Vh, group, axis=-3)
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o.T, A
""",
        "W_Q and W_O are applied transposed",
    ),
    # Returns one attention matrix per K/V head (the first query head of each group). (set B: gqa_weights_of_kv_heads_only)
    "gqa_weights_of_kv_heads_only": (
        "12_gqa",
        "grouped_query_attention",
        """import mhsa_helpers as mh


def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    X = np.asarray(X, dtype=float)
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("n_kv_heads must divide n_heads")
    d_k = d_model // n_heads
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(X @ W_k, n_kv_heads)
    Vh = mh.split_heads(X @ W_v, n_kv_heads)
    Kh = np.repeat(Kh, group, axis=-3)
    Vh = np.repeat(Vh, group, axis=-3)
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A[..., ::group, :, :]
""",
        "one matrix per K/V head",
    ),
    # Swaps the mask's last two axes, as if it were (T_k, T_q): a padding mask no longer fits the scores. (set B: cross_mask_transposed_to_queries)
    "cross_mask_transposed_to_queries": (
        "15_cross",
        "cross_attention",
        """import mhsa_helpers as mh


def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    C = np.asarray(C, dtype=float)
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C @ W_v, n_heads)
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        mask = np.swapaxes(mask, -1, -2)
        if mask.ndim <= max(X.ndim, C.ndim):
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "the mask's last two axes are swapped",
    ),
    # Merges the heads with a bare reshape of (..., h, T_q, d_k), the head axis still in front of the token axis. (set B: cross_merge_bare_reshape)
    "cross_merge_bare_reshape": (
        "15_cross",
        "cross_attention",
        """import mhsa_helpers as mh


def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    C = np.asarray(C, dtype=float)
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C @ W_v, n_heads)
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        if mask.ndim <= max(X.ndim, C.ndim):
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return out.reshape(out.shape[:-3] + (X.shape[-2], d_model)) @ W_o, A
""",
        "with their head axis still in front of T",
    ),
    # Copy-paste slip: the values projected with W_k. (set B: cross_values_with_W_k)
    "cross_values_with_W_k": (
        "15_cross",
        "cross_attention",
        """import mhsa_helpers as mh


def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    C = np.asarray(C, dtype=float)
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C @ W_k, n_heads)
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        if mask.ndim <= max(X.ndim, C.ndim):
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "V is computed with W_k",
    ),
    # nn.Linear's habit on every weight: X @ W_k.T, which numpy refuses (W_k is d_model × d_k). (a variant of set B's)
    "multi_query_attention_every_weight_transposed": (
        "10_capstone",
        "multi_query_attention",
        """import mhsa_helpers as mh
def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q.T, n_heads)
    K = (X @ W_k.T)[..., None, :, :]
    V = (X @ W_v.T)[..., None, :, :]
    if mask is not None and np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, K, V, mask)
    return mh.merge_heads(out) @ W_o.T, A
""",
        "W_K of shape (8, 4) is applied transposed",
    ),
    # nn.Linear's habit on every weight: X @ W_k.T, which numpy refuses (W_k is d_model × n_kv_heads·d_k). (a variant of set B's)
    "grouped_query_attention_every_weight_transposed": (
        "12_gqa",
        "grouped_query_attention",
        """import mhsa_helpers as mh
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    g = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q.T, n_heads)
    Kh = np.repeat(mh.split_heads(X @ W_k.T, n_kv_heads), g, axis=-3)
    Vh = np.repeat(mh.split_heads(X @ W_v.T, n_kv_heads), g, axis=-3)
    if mask is not None and np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o.T, A
""",
        "W_K of shape (8, 4) is applied transposed",
    ),
    # Keeps the first query head of each group and repeats its result, instead of every query head. (a variant of set B's)
    "grouped_query_attention_first_query_head_of_each_group": (
        "12_gqa",
        "grouped_query_attention",
        """import mhsa_helpers as mh
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    g = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)[..., ::g, :, :]
    Kh = mh.split_heads(X @ W_k, n_kv_heads)
    Vh = mh.split_heads(X @ W_v, n_kv_heads)
    if mask is not None and np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(np.repeat(out, g, axis=-3)) @ W_o, np.repeat(A, g, axis=-3)
""",
        "the query heads of each group attend alike",
    ),
    # -- set B, decode_step and rotary_embedding (helper extb3) --
    # The new value projected with W_k (copy-paste): the cache holds K twice. (set B: decode_value_from_W_k)
    "decode_value_from_W_k": (
        "13_kv_cache",
        "decode_step",
        """import mhsa_helpers as mh


def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    x = np.asarray(x, dtype=float)
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    d_k = d_model // n_heads
    row = x[..., None, :]
    q = mh.split_heads(row @ W_q, n_heads)
    k = mh.split_heads(row @ W_k, n_heads)
    v = mh.split_heads(row @ W_k, n_heads)
    if cache is None:
        K, V = k, v
    else:
        K = np.concatenate([cache[0], k], axis=-2)
        V = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, K, V)
    y = mh.merge_heads(out)[..., 0, :] @ W_o
    return y, (K, V)
""",
        "the new token's value is computed with W_k",
    ),
    # Keys cached already divided by √d_k, scores left undivided. (set B: decode_cache_stores_scaled_keys)
    "decode_cache_stores_scaled_keys": (
        "13_kv_cache",
        "decode_step",
        """import mhsa_helpers as mh


def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    x = np.asarray(x, dtype=float)
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    d_k = d_model // n_heads
    row = x[..., None, :]
    q = mh.split_heads(row @ W_q, n_heads)
    k = mh.split_heads(row @ W_k, n_heads) / np.sqrt(d_k)
    v = mh.split_heads(row @ W_v, n_heads)
    if cache is None:
        K, V = k, v
    else:
        K = np.concatenate([cache[0], k], axis=-2)
        V = np.concatenate([cache[1], v], axis=-2)
    A = mh.softmax(q @ np.swapaxes(K, -1, -2))
    y = mh.merge_heads(A @ V)[..., 0, :] @ W_o
    return y, (K, V)
""",
        "the cached keys are divided by √d_k = √2",
    ),
    # The softmax along axis -2, the single query: every weight is 1. (set B: decode_softmax_over_query_axis)
    "decode_softmax_over_query_axis": (
        "13_kv_cache",
        "decode_step",
        """import mhsa_helpers as mh


def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    x = np.asarray(x, dtype=float)
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    d_k = d_model // n_heads
    row = x[..., None, :]
    q = mh.split_heads(row @ W_q, n_heads)
    k = mh.split_heads(row @ W_k, n_heads)
    v = mh.split_heads(row @ W_v, n_heads)
    if cache is None:
        K, V = k, v
    else:
        K = np.concatenate([cache[0], k], axis=-2)
        V = np.concatenate([cache[1], v], axis=-2)
    Z = q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    A = np.exp(Z - Z.max(axis=-2, keepdims=True))
    A = A / A.sum(axis=-2, keepdims=True)
    out = A @ V
    y = mh.merge_heads(out)[..., 0, :] @ W_o
    return y, (K, V)
""",
        "each weight is alone in its softmax, so every weight is 1",
    ),
    # With cache None the cache starts with a row of zeros, attended to as a key. (set B: decode_zero_initial_cache)
    "decode_zero_initial_cache": (
        "13_kv_cache",
        "decode_step",
        """import mhsa_helpers as mh


def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    x = np.asarray(x, dtype=float)
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    d_k = d_model // n_heads
    row = x[..., None, :]
    q = mh.split_heads(row @ W_q, n_heads)
    k = mh.split_heads(row @ W_k, n_heads)
    v = mh.split_heads(row @ W_v, n_heads)
    if cache is None:
        K = np.concatenate([np.zeros_like(k), k], axis=-2)
        V = np.concatenate([np.zeros_like(v), v], axis=-2)
    else:
        K = np.concatenate([cache[0], k], axis=-2)
        V = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, K, V)
    y = mh.merge_heads(out)[..., 0, :] @ W_o
    return y, (K, V)
""",
        "the cache starts with a row of zeros",
    ),
    # y returned with the token axis of size 1 still in. (set B: decode_keeps_token_axis)
    "decode_keeps_token_axis": (
        "13_kv_cache",
        "decode_step",
        """import mhsa_helpers as mh


def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    x = np.asarray(x, dtype=float)
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    d_k = d_model // n_heads
    row = x[..., None, :]
    q = mh.split_heads(row @ W_q, n_heads)
    k = mh.split_heads(row @ W_k, n_heads)
    v = mh.split_heads(row @ W_v, n_heads)
    if cache is None:
        K, V = k, v
    else:
        K = np.concatenate([cache[0], k], axis=-2)
        V = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, K, V)
    y = mh.merge_heads(out) @ W_o
    return y, (K, V)
""",
        "y keeps the token axis of size 1",
    ),
    # The pairs counted from 1: θ_i = base^(−2(i+1)/d). (set B: rope_pairs_counted_from_one)
    "rope_pairs_counted_from_one": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X, dtype=float)
    T, d = X.shape[-2:]
    if d % 2:
        raise ValueError("d must be even to make pairs")
    pos = np.arange(T) if positions is None else np.asarray(positions)
    i = np.arange(1, d // 2 + 1)
    theta = base ** (-2 * i / d)
    ang = pos[..., None] * theta
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty_like(X)
    out[..., 0::2] = X[..., 0::2] * c - X[..., 1::2] * s
    out[..., 1::2] = X[..., 0::2] * s + X[..., 1::2] * c
    return out
""",
        "the pairs are counted from 1",
    ),
    # Per-sequence positions flattened and cut to T: every sequence gets the first one's. (set B: rope_positions_flattened_first_sequence)
    "rope_positions_flattened_first_sequence": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X, dtype=float)
    T, d = X.shape[-2:]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(T) if positions is None else np.asarray(positions).reshape(-1)[:T]
    theta = base ** (-np.arange(0, d, 2) / d)
    ang = pos[:, None] * theta
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty_like(X)
    out[..., 0::2] = X[..., 0::2] * c - X[..., 1::2] * s
    out[..., 1::2] = X[..., 0::2] * s + X[..., 1::2] * c
    return out
""",
        "every sequence is rotated with the first sequence's positions",
    ),
    # The second line of the rotation with cos and sin swapped. (set B: rope_second_row_cos_sin_swapped)
    "rope_second_row_cos_sin_swapped": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X, dtype=float)
    T, d = X.shape[-2:]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(T) if positions is None else np.asarray(positions)
    theta = base ** (-np.arange(0, d, 2) / d)
    ang = pos[..., None] * theta
    c, s = np.cos(ang), np.sin(ang)
    x0, x1 = X[..., 0::2], X[..., 1::2]
    out = np.empty_like(X)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * c + x1 * s
    return out
""",
        "the second line swaps cos and sin",
    ),
    # cos/sin tables tiled (half-split layout) for interleaved pairs. (set B: rope_tile_instead_of_repeat)
    "rope_tile_instead_of_repeat": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X, dtype=float)
    T, d = X.shape[-2:]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(T) if positions is None else np.asarray(positions)
    inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)
    freqs = pos[..., None] * inv_freq
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)
    rot = np.empty_like(X)
    rot[..., 0::2] = -X[..., 1::2]
    rot[..., 1::2] = X[..., 0::2]
    return X * cos + rot * sin
""",
        "the cos and sin tables are tiled",
    ),
    # The cache read and returned as (V, K): from step 1 on its K' is the one a key made with W_v gives; its whole result is the swap's. (set A: decode_cache_order_swapped)
    "decode_cache_order_swapped": (
        "13_kv_cache",
        "decode_step",
        """import mhsa_helpers as mh

def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    if cache is not None:
        V_old, K_old = cache
        k = np.concatenate([K_old, k], axis=-2)
        v = np.concatenate([V_old, v], axis=-2)
    out, _ = mh.attention_head(q, k, v)
    return mh.merge_heads(out)[..., 0, :] @ W_o, (v, k)
""",
        "the cache is returned as (V', K')",
    ),
    # --- set C (round 4) ---
    # Takes i from np.arange(0, d, 2) (already 2i) and still writes 2*i/d: the exponent is 4i/d. (set C: rope_exponent_double_counted)
    "rope_exponent_double_counted": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X, dtype=float)
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    i = np.arange(0, d, 2)            # already 2i
    theta = base ** (-2 * i / d)      # ... and doubled again
    ang = pos[..., None] * theta
    c, s = np.cos(ang), np.sin(ang)
    x0, x1 = X[..., 0::2], X[..., 1::2]
    out = np.empty_like(X)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out
""",
        "the exponent is doubled, θ_i = base^(−4i/d): np.arange(0, d, 2) already is 2i",
    ),
    # The same slip written as inverse frequencies, 1 / base**(2·(2i)/d), with the half-split-free interleaved rotation.
    "rope_exponent_doubled_inverse_frequencies": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    T, d = X.shape[-2:]
    if d % 2 != 0:
        raise ValueError(f"d must be even, got {d}")
    if positions is None:
        positions = np.arange(T)
    inv_freq = 1.0 / base ** (2 * np.arange(0, d, 2) / d)
    angles = np.asarray(positions, dtype=float)[..., None] * inv_freq
    out = np.array(X, dtype=np.result_type(X, np.float32), copy=True)
    out[..., 0::2] = X[..., 0::2] * np.cos(angles) - X[..., 1::2] * np.sin(angles)
    out[..., 1::2] = X[..., 0::2] * np.sin(angles) + X[..., 1::2] * np.cos(angles)
    return out
""",
        "the exponent is doubled",
    ),
    # An angle table for positions 0..T-1 only (a cached sin/cos table habit), looked up at positions % T. (set C: rope_positions_as_index_into_T)
    "rope_positions_as_index_into_T": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X, dtype=float)
    T, d = X.shape[-2:]
    if d % 2:
        raise ValueError("d must be even")
    theta = base ** (-np.arange(0, d, 2) / d)
    ang = np.arange(T)[:, None] * theta
    if positions is not None:
        ang = ang[np.asarray(positions) % T]   # look the angle table up
    c, s = np.cos(ang), np.sin(ang)
    x0, x1 = X[..., 0::2], X[..., 1::2]
    out = np.empty_like(X)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out
""",
        "wrapped around with positions % T, so a position p ≥ T turns as p mod T",
    ),
    # The cos and sin tables built for the T positions of the sequence and indexed by the positions given: IndexError past T.
    "rope_cos_sin_cache_indexed_by_positions": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    T, d = X.shape[-2:]
    if d % 2:
        raise ValueError(f"d must be even, got {d}")
    freqs = base ** (-np.arange(0, d, 2) / d)
    table = np.outer(np.arange(T), freqs)       # cached angles, one row per position
    cos_cache, sin_cache = np.cos(table), np.sin(table)
    idx = np.arange(T) if positions is None else np.asarray(positions)
    cos, sin = cos_cache[idx], sin_cache[idx]
    x_even, x_odd = X[..., 0::2], X[..., 1::2]
    out = np.empty(np.shape(X), dtype=np.result_type(X, np.float32))
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out
""",
        "the angles are looked up in a table of the positions 0 … T − 1 (arange(T), T = 5), indexed by the positions given: a position p ≥ T is past its end",
    ),
    # Loops over the pairs with range(d // 2 - 1): the last pair is never rotated. (set C: rope_loop_misses_last_pair)
    "rope_loop_misses_last_pair": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X, dtype=float)
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    out = X.copy()
    for i in range(d // 2 - 1):
        ang = pos * base ** (-2 * i / d)
        c, s = np.cos(ang), np.sin(ang)
        a, b = X[..., 2 * i], X[..., 2 * i + 1]
        out[..., 2 * i] = a * c - b * s
        out[..., 2 * i + 1] = a * s + b * c
    return out
""",
        "the last pair (the final two features of each token) is never rotated",
    ),
    # The same slip over the features: range(0, d - 2, 2) stops before the last pair.
    "rope_feature_loop_stops_before_last_pair": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    T, d = X.shape[-2:]
    if d % 2:
        raise ValueError(f"d must be even, got {d}")
    p = np.arange(T) if positions is None else np.asarray(positions)
    out = np.array(X, dtype=np.result_type(X, np.float32))
    for j in range(0, d - 2, 2):
        angle = p * base ** (-j / d)
        out[..., j] = X[..., j] * np.cos(angle) - X[..., j + 1] * np.sin(angle)
        out[..., j + 1] = X[..., j] * np.sin(angle) + X[..., j + 1] * np.cos(angle)
    return out
""",
        "the last pair (the final two features of each token) is never rotated",
    ),
    # Adds and repeats the head axis at position 0: right for one sequence, in front of the batch axes with a batch. (set C: mqa_repeat_on_axis0)
    "mqa_repeat_on_axis0": (
        "10_capstone",
        "multi_query_attention",
        """import mhsa_helpers as mh
def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    Q = mh.split_heads(X @ W_q, n_heads)
    K = np.repeat((X @ W_k)[None], n_heads, axis=0)   # one copy per head
    V = np.repeat((X @ W_v)[None], n_heads, axis=0)
    if mask is not None:
        mask = np.asarray(mask)
        if 2 < mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Q, K, V, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "the shared K and V have their head axis in front of the batch axes (K[None], np.expand_dims(K, 0), or np.repeat(K[None], h, axis=0))",
    ),
    # Counts vectors per head instead of numbers: 2*T*h for multi-head and 2*T for multi-query. (set C: kv_heads_not_width)
    "kv_heads_not_width": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    return 2 * seq_len * (1 if multi_query else n_heads)
""",
        "That is 2·T·n_heads: it counts vectors (one row of K and one of V per token and head), not numbers: each row is d_k = d_model // n_heads = 4 wide",
    ),
    # Right for multi-head, but the shared head counted as one number per token for K and V.
    "kv_multi_query_counts_rows": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    if multi_query:
        return 2 * seq_len          # one K and one V per token
    return 2 * seq_len * d_model
""",
        "That is 2·T: it counts vectors (one row of K and one of V per token), not numbers",
    ),
    # Shares the queries too: runs the first query head only and repeats it.
    "multi_query_attention_one_query_head_copied": (
        "10_capstone",
        "multi_query_attention",
        """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    K = np.expand_dims(X @ W_k, -3)
    V = np.expand_dims(X @ W_v, -3)
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh[..., :1, :, :], K, V, mask)
    out = np.repeat(out, n_heads, axis=-3)
    A = np.broadcast_to(A, Qh.shape[:-1] + (X.shape[-2],))
    return mh.merge_heads(out) @ W_o, A
""",
        "only one query head is computed and copied to every head",
    ),
    # Gives the feature axis to the default positions only.
    "rotary_embedding_given_positions_without_feature_axis": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    T = X.shape[-2]
    pos = np.arange(T)[:, None] if positions is None else np.asarray(positions)
    ang = pos * base ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(ang), np.sin(ang)
    x0, x1 = X[..., 0::2], X[..., 1::2]
    out = np.empty(X.shape)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out
""",
        "the positions passed in get no feature axis",
    ),
    # Allocates the result like X: an integer X truncates the rotation (set E).
    "rotary_embedding_empty_like_integer_X": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    a = pos[..., None] * base ** (-np.arange(0, d, 2) / d)
    out = np.empty_like(X)                       # same dtype as X
    out[..., 0::2] = X[..., 0::2] * np.cos(a) - X[..., 1::2] * np.sin(a)
    out[..., 1::2] = X[..., 0::2] * np.sin(a) + X[..., 1::2] * np.cos(a)
    return out
""",
        "allocate floats",
    ),
    # Copies K and V onto axis 1, the head axis only with exactly one batch axis (set E).
    "multi_query_attention_kv_copies_stacked_on_axis_1": (
        "10_capstone",
        "multi_query_attention",
        """def _heads_mask(mask, x_ndim):
    if mask is None:
        return None
    mask = np.asarray(mask)
    if 2 < mask.ndim <= x_ndim:
        mask = np.expand_dims(mask, -3)
    return mask

def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    K = np.stack([X @ W_k] * n_heads, axis=1)      # (B, h, T, d_k)
    V = np.stack([X @ W_v] * n_heads, axis=1)
    out, A = mh.attention_head(Qh, K, V, _heads_mask(mask, X.ndim))
    return mh.merge_heads(out) @ W_o, A
""",
        "copies of the shared K and V are stacked on axis 1",
    ),
    # Takes d_k = n_heads: d_k heads of n_heads columns, the head count and size swapped (set E).
    "multi_head_self_attention_d_k_equals_n_heads": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    d_model = X.shape[-1]
    d_k = n_heads
    Qh, Kh, Vh = (mh.split_heads(X @ W, d_model // d_k) for W in (W_q, W_k, W_v))
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "the head count and the head size are swapped",
    ),
    # Masks the weights after the softmax, A * exp(M), so rows no longer sum to 1 (set E).
    "multi_head_self_attention_weights_times_exp_mask": (
        "09_multi_head",
        "multi_head_self_attention",
        """def _split(M, h):
    *lead, T, d = M.shape
    return np.swapaxes(M.reshape(*lead, T, h, d // h), -2, -3)

def _merge(H):
    *lead, h, T, dk = H.shape
    return np.swapaxes(H, -2, -3).reshape(*lead, T, h * dk)

def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Q, K, V = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    A = mh.softmax(mh.attention_scores(Q, K))
    if mask is not None:
        m = np.asarray(mask)
        if 2 < m.ndim <= X.ndim:
            m = np.expand_dims(m, -3)
        A = A * np.exp(m)                 # exp(-inf) = 0 removes blocked keys
    return _merge(A @ V) @ W_o, A
""",
        "the masked weights are zeroed after the softmax",
    ),
    # nanoGPT-style B, T, C = X.shape; a (h, T, T) mask treated as per-sequence gets a second head axis (set E).
    "multi_head_self_attention_nanogpt_one_batch_axis": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    squeeze = X.ndim == 2
    if squeeze:
        X = X[None]
    B, T, C = X.shape
    hs = C // n_heads
    q = (X @ W_q).reshape(B, T, n_heads, hs).transpose(0, 2, 1, 3)
    k = (X @ W_k).reshape(B, T, n_heads, hs).transpose(0, 2, 1, 3)
    v = (X @ W_v).reshape(B, T, n_heads, hs).transpose(0, 2, 1, 3)
    att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs)
    if mask is not None:
        m = np.asarray(mask)
        att = att + (m[:, None] if m.ndim == 3 else m)
    att = mh.softmax(att)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C) @ W_o
    return (y[0], att[0]) if squeeze else (y, att)
""",
        "the mask already has a head axis, and a second one is added",
    ),
    # Counts seq_len + 1 positions (set E).
    "kv_cache_size_seq_len_plus_one": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    width = d_model // n_heads if multi_query else d_model
    return 2 * (seq_len + 1) * width     # the new token too
""",
        "one position too many",
    ),
    # Takes the default positions from len(X), which is T only without batch axes (with them it is the batch size). (set F)
    "rotary_embedding_default_positions_len_X": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    if positions is None:
        positions = np.arange(len(X))
    angle = np.asarray(positions)[..., None] * base ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(angle), np.sin(angle)
    out = np.empty(X.shape)
    out[..., 0::2] = X[..., 0::2] * c - X[..., 1::2] * s
    out[..., 1::2] = X[..., 0::2] * s + X[..., 1::2] * c
    return out
""",
        "the default positions count X's first axis",
    ),
    # Indexes positions[:, None], which is right for positions of shape (T,) but puts the new axis in the wrong place for (B, T) positions. (set F)
    "rotary_embedding_positions_axis_in_front": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    T, d = X.shape[-2:]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(T) if positions is None else np.asarray(positions)
    theta = base ** (-np.arange(0, d, 2) / d)
    angle = pos[:, None] * theta   # (T, d/2)
    c, s = np.cos(angle), np.sin(angle)
    out = np.empty(X.shape)
    out[..., 0::2] = X[..., 0::2] * c - X[..., 1::2] * s
    out[..., 1::2] = X[..., 0::2] * s + X[..., 1::2] * c
    return out
""",
        "get their new axis at 1 (positions[:, None]",
    ),
    # Sums the weight gradients with an einsum written for exactly one batch axis, so unbatched inputs and two batch axes fail. (set F)
    "mhsa_backward_einsum_one_batch_axis": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def _head_backward(Q, K, V, dOut, mask=None):
    _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - (dA * A).sum(-1, keepdims=True)) / np.sqrt(Q.shape[-1])
    return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV

def _head_mask(mask, X):
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    return mask

def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    d = X.shape[-1]
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    mask = _head_mask(mask, X)
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)
    C = mh.merge_heads(heads)
    dQh, dKh, dVh = _head_backward(Qh, Kh, Vh, mh.split_heads(dOut @ W_o.T, n_heads), mask)
    dQ, dK, dV = (mh.merge_heads(g) for g in (dQh, dKh, dVh))
    total = lambda A, B: np.einsum("btd,bte->de", A, B)
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (total(X, dQ), total(X, dK), total(X, dV), total(C, dOut))
""",
        "np.einsum's subscripts name a fixed set of axes",
    ),
    # Builds the keys with W_v and the values with W_k. (set F)
    "multi_query_attention_k_v_swapped": (
        "10_capstone",
        "multi_query_attention",
        """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    K = np.expand_dims(X @ W_v, -3)
    V = np.expand_dims(X @ W_k, -3)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, K, V, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "K and V are swapped",
    ),
    # Averages the query heads into one, sharing the queries as well as K and V, instead of keeping h query heads. (set F)
    "multi_query_attention_query_heads_averaged": (
        "10_capstone",
        "multi_query_attention",
        """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = mh.split_heads(X @ W_q, n_heads)
    K = np.expand_dims(X @ W_k, -3)
    V = np.expand_dims(X @ W_v, -3)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):
        mask = np.expand_dims(mask, -3)
    q = Qh.mean(axis=-3, keepdims=True)  # one query head to match one K/V head
    out, A = mh.attention_head(q, K, V, mask)
    out = np.broadcast_to(out, Qh.shape)
    A = np.broadcast_to(A, Qh.shape[:-1] + (A.shape[-1],))
    return mh.merge_heads(out) @ W_o, A
""",
        "the query heads are averaged into one",
    ),
    # Treats a per-head mask as one mask per K/V group and keeps only the first query head's mask of each group, instead of giving every query head its own. (set F)
    "grouped_query_attention_mask_first_of_group": (
        "12_gqa",
        "grouped_query_attention",
        """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError("n_heads must divide d_model and n_kv_heads must divide n_heads")
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)
    Vh = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)
    if mask is not None:
        mask = np.asarray(mask)
        if 2 < mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
        elif mask.ndim == X.ndim + 1 and mask.shape[-3] == n_heads:
            # one mask per K/V head, shared by its group
            mask = np.repeat(mask[..., ::group, :, :], group, axis=-3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "uses its first head's mask",
    ),
    # Adds a (t+1, t+1) causal mask although the new token's single query may see every cached key; the mask broadcasts the one query to t+1 rows and row 0 sees only key 0. (set F)
    "decode_step_causal_mask_on_one_query": (
        "13_kv_cache",
        "decode_step",
        """def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
    row = x[..., None, :]                                  # (..., 1, d_model)
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    if cache is None:
        K, V = k, v
    else:
        K = np.concatenate([cache[0], k], axis=-2)
        V = np.concatenate([cache[1], v], axis=-2)
    t1 = K.shape[-2]
    out, _ = mh.attention_head(q, K, V, mh.causal_mask(t1))   # decoding is causal
    return mh.merge_heads(out)[..., 0, :] @ W_o, (K, V)
""",
        "no mask belongs in a decoding step",
    ),
    # Averages the gradient of a broadcast input over the batch instead of summing it. (set F)
    "attention_head_backward_shared_grads_averaged": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    out, A = mh.attention_head(Q, K, V, mask)
    s = np.sqrt(Q.shape[-1])
    dV = np.swapaxes(A, -1, -2) @ dOut
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - (dA * A).sum(-1, keepdims=True)) / s
    def back(g, shape):
        while g.ndim > len(shape):
            g = g.mean(axis=0)
        for ax, n in enumerate(shape):
            if n == 1 and g.shape[ax] != 1:
                g = g.mean(axis=ax, keepdims=True)
        return g
    return back(dZ @ K, Q.shape), back(np.swapaxes(dZ, -1, -2) @ Q, K.shape), back(dV, V.shape)
""",
        "averaged over the 6 sequences that share K and V",
    ),
    # Returns bytes for float32 (4 per number) instead of the number of cached numbers. (set F)
    "kv_cache_size_float32_bytes": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    d_k = d_model // n_heads
    numbers = 2 * seq_len * (d_k if multi_query else d_model)
    return numbers * 4  # float32
""",
        "counts numbers, not bytes",
    ),
    # Uses a symmetric band |i - j| < window, which also lets a query see window - 1 future keys. (set F)
    "sliding_window_mask_symmetric_band_set_f": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if not isinstance(window, (int, np.integer)) or isinstance(window, bool) or window < 1:
        raise ValueError(f"window must be an integer of at least 1, got {window!r}")
    i, j = np.indices((seq_len, seq_len))
    return np.where(np.abs(i - j) < window, 0.0, -np.inf)
""",
        "the window is not causal",
    ),
    # Uses exp(m_new - m) as the correction factor, the inverse of exp(m - m_new), from a start m = -1e30 (it overflows). (set G)
    "tiled_attention_rescale_inverted_from_finite_start": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):

    if not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError('causal attention needs T_q == T_k')
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full((*lead, T_q, 1), -1e30)
    l = np.zeros((*lead, T_q, 1))
    acc = np.zeros((*lead, T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]

    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        c = np.exp(m_new - m)
        l = c * l + P.sum(axis=-1, keepdims=True)
        acc = c * acc + P @ V[..., s:e, :]
        m = m_new
    return acc / l
""",
        "the rescale is inverted",
    ),
    # Divides the output by l after every block and resets l to 1. (set G)
    "tiled_attention_normalised_after_every_block": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):

    if not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError('causal attention needs T_q == T_k')
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full((*lead, T_q, 1), -np.inf)
    l = np.zeros((*lead, T_q, 1))
    acc = np.zeros((*lead, T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]

    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        c = np.exp(m - m_new)
        l = c * l + P.sum(axis=-1, keepdims=True)
        acc = c * acc + P @ V[..., s:e, :]
        m = m_new
        acc = acc / l
        l = np.ones_like(l)
    return acc / l
""",
        "divided by ℓ inside the loop, after every block",
    ),
    # Computes dW_o from the heads flattened with a bare reshape instead of the merged heads. (set G)
    "mhsa_backward_dW_o_from_heads_bare_reshape": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def _head_backward(Q, K, V, dOut, mask=None):
    _, A = mh.attention_head(Q, K, V, mask)
    s = np.sqrt(Q.shape[-1])
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - (dA * A).sum(-1, keepdims=True)) / s
    return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, np.swapaxes(A, -1, -2) @ dOut

def _fix_mask(mask, ndim):
    if mask is not None and 2 < np.ndim(mask) <= ndim:
        mask = np.expand_dims(mask, -3)
    return mask

def _flat_T(A, B):
    return A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])

def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    h = n_heads
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh, Kh, Vh = (mh.split_heads(M, h) for M in (Q, K, V))
    mask = _fix_mask(mask, X.ndim)
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)
    merged = mh.merge_heads(heads)

    dMerged = dOut @ W_o.T
    dQh, dKh, dVh = _head_backward(Qh, Kh, Vh, mh.split_heads(dMerged, h), mask)
    dQ, dK, dV = (mh.merge_heads(G) for G in (dQh, dKh, dVh))
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (_flat_T(X, dQ), _flat_T(X, dK), _flat_T(X, dV), _flat_T(heads.reshape(X.shape), dOut))
""",
        "dW_O uses the heads (..., h, T, d_k) flattened with a bare reshape",
    ),
    # Averages the three paths into X instead of summing them. (set G)
    "mhsa_backward_dX_paths_averaged": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def _head_backward(Q, K, V, dOut, mask=None):
    _, A = mh.attention_head(Q, K, V, mask)
    s = np.sqrt(Q.shape[-1])
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - (dA * A).sum(-1, keepdims=True)) / s
    return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, np.swapaxes(A, -1, -2) @ dOut

def _fix_mask(mask, ndim):
    if mask is not None and 2 < np.ndim(mask) <= ndim:
        mask = np.expand_dims(mask, -3)
    return mask

def _flat_T(A, B):
    return A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])

def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    h = n_heads
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh, Kh, Vh = (mh.split_heads(M, h) for M in (Q, K, V))
    mask = _fix_mask(mask, X.ndim)
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)
    merged = mh.merge_heads(heads)

    dMerged = dOut @ W_o.T
    dQh, dKh, dVh = _head_backward(Qh, Kh, Vh, mh.split_heads(dMerged, h), mask)
    dQ, dK, dV = (mh.merge_heads(G) for G in (dQh, dKh, dVh))
    dX = (dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T) / 3
    return dX, (_flat_T(X, dQ), _flat_T(X, dK), _flat_T(X, dV), _flat_T(merged, dOut))
""",
        "the mean of the three paths into X",
    ),
    # Transposes with .T (V.T, dZ.T, A.T), which reverses every axis: right for a single 2-D head only. (set G)
    "attention_head_backward_dot_T_on_heads": (
        "17_backward",
        "attention_head_backward",
        """def _sum_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for ax, n in enumerate(shape):
        if n == 1 and g.shape[ax] != 1:
            g = g.sum(axis=ax, keepdims=True)
    return g

def attention_head_backward(Q, K, V, dOut, mask=None):
    _, A = mh.attention_head(Q, K, V, mask)
    s = np.sqrt(Q.shape[-1])
    dA = dOut @ V.T
    dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True)) / s
    dQ = dZ @ K
    dK = dZ.T @ Q
    dV = A.T @ dOut
    return _sum_to(dQ, Q.shape), _sum_to(dK, K.shape), _sum_to(dV, V.shape)
""",
        ".T reverses every axis of an array with batch or head axes",
    ),
    # Runs the forward pass without the mask and only zeroes dZ at blocked positions, so A (and everything after) is the unmasked one. (set H)
    "attention_head_backward_forward_without_mask_dz_zeroed": (
        "17_backward",
        "attention_head_backward",
        """def _sum_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for ax, n in enumerate(shape):
        if n == 1 and g.shape[ax] != 1:
            g = g.sum(axis=ax, keepdims=True)
    return g

def attention_head_backward(Q, K, V, dOut, mask=None):
    out, A = mh.attention_head(Q, K, V)
    d_k = Q.shape[-1]
    dV = np.swapaxes(A, -1, -2) @ dOut
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - (dA * A).sum(axis=-1, keepdims=True))
    dZ = dZ / np.sqrt(d_k)
    if mask is not None:
        dZ = np.where(np.isneginf(mask), 0.0, dZ)
    dQ = dZ @ K
    dK = np.swapaxes(dZ, -1, -2) @ Q
    return _sum_to(dQ, Q.shape), _sum_to(dK, K.shape), _sum_to(dV, V.shape)
""",
        "the forward pass inside the backward runs without the mask",
    ),
    # Applies the output projection as W_o.T. (set H)
    "cross_attention_w_o_transposed": (
        "15_cross",
        "cross_attention",
        """def _check(d_model, n_heads):
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")

def _mask_rule(mask, ndim):
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=float)
    if 2 < mask.ndim <= ndim:
        mask = np.expand_dims(mask, -3)
    return mask

def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    _check(X.shape[-1], n_heads)
    Q = mh.split_heads(X @ W_q, n_heads)
    K = mh.split_heads(C @ W_k, n_heads)
    V = mh.split_heads(C @ W_v, n_heads)
    out, A = mh.attention_head(Q, K, V, _mask_rule(mask, max(X.ndim, C.ndim)))
    return mh.merge_heads(out) @ W_o.T, A
""",
        "W_O is transposed: the merged heads (..., T_q, d_model) times W_O, not W_O.T",
    ),
    # Projects with W_o.T (PyTorch o_proj.weight layout) instead of W_o. (set H)
    "grouped_query_attention_w_o_transposed": (
        "12_gqa",
        "grouped_query_attention",
        """def _check(d_model, n_heads, n_kv_heads):
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
    if n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads}")

def _mask_rule(mask, x_ndim):
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=float)
    if 2 < mask.ndim <= x_ndim:
        mask = np.expand_dims(mask, -3)
    return mask

def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    _check(X.shape[-1], n_heads, n_kv_heads)
    g = n_heads // n_kv_heads
    Q = mh.split_heads(X @ W_q, n_heads)
    K = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), g, axis=-3)
    V = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), g, axis=-3)
    out, A = mh.attention_head(Q, K, V, _mask_rule(mask, X.ndim))
    return mh.merge_heads(out) @ W_o.T, A
""",
        "W_O is transposed: the merged heads (..., T, d_model) times W_O, not W_O.T",
    ),
    # Concatenates the new key and value on axis -3 (heads) instead of -2 (tokens), so the cache grows in heads. (set H)
    "decode_step_concatenates_on_the_head_axis_from_step_1": (
        "13_kv_cache",
        "decode_step",
        """def _heads(d_model, n_heads):
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
    return d_model // n_heads

def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    _heads(x.shape[-1], n_heads)
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    K = k if cache is None else np.concatenate([cache[0], k], axis=-3)
    V = v if cache is None else np.concatenate([cache[1], v], axis=-3)
    reps = K.shape[-3] // n_heads
    out, _ = mh.attention_head(q, K[..., -n_heads:, :, :], V[..., -n_heads:, :, :])
    return mh.merge_heads(out)[..., 0, :] @ W_o, (K, V)
""",
        "K' has 4 heads of 1 position instead of n_heads = 2 heads",
    ),
    # Widens W_k and W_v with np.repeat (each column repeated h times side by side) instead of np.tile, so heads see scrambled copies of the shared head. (set H)
    "multi_query_attention_w_k_columns_repeated_in_place": (
        "10_capstone",
        "multi_query_attention",
        """def _mask_rule(mask, x_ndim):
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=float)
    if 2 < mask.ndim <= x_ndim:
        mask = np.expand_dims(mask, -3)
    return mask

def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Wk = np.repeat(W_k, n_heads, axis=1)
    Wv = np.repeat(W_v, n_heads, axis=1)
    Q, K, V = (mh.split_heads(X @ W, n_heads) for W in (W_q, Wk, Wv))
    out, A = mh.attention_head(Q, K, V, _mask_rule(mask, X.ndim))
    return mh.merge_heads(out) @ W_o, A
""",
        "each column of W_K and W_V is repeated n_heads times in place",
    ),
    # Blocks only the keys too far in the past and forgets to block the future (j > i). (set H)
    "sliding_window_mask_future_left_open": (
        "16_sliding_window",
        "sliding_window_mask",
        """def _check(window):
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be an integer of at least 1, got {window!r}")

def sliding_window_mask(seq_len, window):
    _check(window)
    return np.tril(np.full((seq_len, seq_len), -np.inf), -window)
""",
        "the future is not blocked",
    ),
    # Uses the block's own maximum as the new reference instead of max(old, block), so exp(m_old - m_new) overflows when a later block has much smaller scores. (set H)
    "tiled_attention_block_maximum_alone_with_causal_blocks": (
        "14_tiled",
        "tiled_attention",
        """def _bs(block_size):
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be an integer of at least 1, got {block_size!r}")
    return int(block_size)

def tiled_attention(Q, K, V, block_size, causal=False):
    b = _bs(block_size)
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(lead + (T_q, 1), -np.inf)
    l = np.zeros(lead + (T_q, 1))
    acc = np.zeros(lead + (T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, b):
        e = min(s + b, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = S.max(axis=-1, keepdims=True)
        shift = np.where(np.isneginf(m_new), 0.0, m_new)
        P = np.exp(S - shift)
        r = np.exp(m - shift)
        l = l * r + P.sum(axis=-1, keepdims=True)
        acc = acc * r + P @ V[..., s:e, :]
        m = m_new
    return np.divide(acc, l, out=np.zeros_like(acc), where=l > 0)
""",
        "the running maximum is replaced by each block's own maximum",
    ),
    # Takes blocks K[s:s+b+1] (inclusive end), so the first key of every next block is counted twice. (set H)
    "tiled_attention_blocks_overlap_by_one_key": (
        "14_tiled",
        "tiled_attention",
        """def _bs(block_size):
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be an integer of at least 1, got {block_size!r}")
    return int(block_size)

def tiled_attention(Q, K, V, block_size, causal=False):
    b = _bs(block_size)
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(lead + (T_q, 1), -np.inf)
    l = np.zeros(lead + (T_q, 1))
    acc = np.zeros(lead + (T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, b):
        e = min(s + b + 1, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        shift = np.where(np.isneginf(m_new), 0.0, m_new)
        P = np.exp(S - shift)
        r = np.exp(m - shift)
        l = l * r + P.sum(axis=-1, keepdims=True)
        acc = acc * r + P @ V[..., s:e, :]
        m = m_new
    return np.divide(acc, l, out=np.zeros_like(acc), where=l > 0)
""",
        "the blocks overlap",
    ),
}
