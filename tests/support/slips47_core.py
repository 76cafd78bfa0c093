"""Issue 47's slips named by the checks (core), as learners wrote them; the format of
:mod:`tests.support.fresh_mistakes` (merged into its ``FRESH``)."""

from tests.support.answer_parts import SPLIT_MERGE

SLIPS47_CORE = {
    # Slices with the length, so an array of lengths (a batch) fails with numpy's TypeError.
    "padding_mask_int_length_only_slice": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    m = np.zeros((1, seq_len))
    m[:, lengths:] = -np.inf
    return m
""",
        "works for one int length only",
    ),
    # Loops over key positions comparing each with the length: ambiguous for an array of lengths.
    "padding_mask_int_length_only_loop": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    m = np.zeros(seq_len)
    for j in range(seq_len):
        if j >= lengths:
            m[j] = -np.inf
    return m[None, :]
""",
        "(here shape (3,), giving a mask of shape lengths.shape + (1, seq_len) = (3, 1, 6))",
    ),
    # Builds the causal mask in an int array: assigning -np.inf raises OverflowError.
    "causal_mask_int_array": (
        "06_masking",
        "causal_mask",
        """def causal_mask(seq_len):
    M = np.zeros((seq_len, seq_len), dtype=int)
    M[np.triu_indices(seq_len, 1)] = -np.inf
    return M
""",
        "an integer cannot hold −∞",
    ),
    # The padding mask in np.zeros_like of an int broadcast: an int array again.
    "padding_mask_int_array": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    L = np.asarray(lengths)[..., None, None]
    j = np.arange(seq_len)
    M = np.zeros_like(j + L)
    M[np.broadcast_to(j >= L, M.shape)] = -np.inf
    return M
""",
        "an integer cannot hold −∞",
    ),
    # The sliding window filled in a loop into an int array.
    "sliding_window_mask_int_array": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError(f"window must be >= 1, but got {window}")
    M = np.zeros((seq_len, seq_len), dtype=int)
    for i in range(seq_len):
        for j in range(seq_len):
            if j > i or j <= i - window:
                M[i, j] = -np.inf
    return M
""",
        "an integer cannot hold −∞",
    ),
    # Multiplies the 0/1 "blocked" array by -inf: 0 * -inf is NaN on the allowed keys.
    "sliding_window_mask_zero_times_inf": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError(f"window must be >= 1, but got {window}")
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    blocked = (j > i) | (j <= i - window)
    return blocked * -np.inf
""",
        "0 · (−∞) is NaN",
    ),
    # Scores of one head written with einsum for a single sequence's (T, d_k), applied to
    # the heads (h, T, d_k) of an unbatched layer.
    "multi_head_self_attention_einsum_without_ellipsis": (
        "09_multi_head",
        "multi_head_self_attention",
        SPLIT_MERGE
        + """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    Z = np.einsum('qd,kd->qk', Qh, Kh) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "Write '...' for the leading axes",
    ),
    # Elementwise product for the projections.
    "project_qkv_elementwise_product": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    return X * W_q, X * W_k, X * W_v
""",
        "`*` multiplies entry by entry",
    ),
    # Divides by the sum of every exponential in the array instead of each row's sum.
    "softmax_whole_array_sum": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    m = np.max(Z, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum()
    return E / s if s > 0 else E
""",
        "the weights of all 6 rows sum to 1 together",
    ),
    # keepdims on the max but not on the sum: column i is divided by row i's sum.
    "softmax_sum_without_keepdims": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    m = np.max(Z, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=axis)
    return E / np.where(s > 0, s, 1.0)
""",
        "the row sums lost their axis",
    ),
    # keepdims on neither.
    "softmax_max_and_sum_without_keepdims": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    E = np.exp(Z - np.max(Z, axis=axis))
    return E / E.sum(axis=axis)
""",
        "the row maxima and sums lost their axis",
    ),
    # Always normalises along the last axis, whatever axis says.
    "softmax_always_last_axis": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)
""",
        "the axis argument is ignored",
    ),
    # Returns the scaled scores where the weights are asked for.
    "attention_head_returns_scores": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    return A @ V, Z
""",
        "the second value returned is the scores Z",
    ),
    # Its own softmax divides by the sum over the whole array.
    "attention_head_whole_array_sum": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = Z + mask
    E = np.exp(Z - Z.max(axis=-1, keepdims=True))
    A = E / E.sum()
    return A @ V, A
""",
        "the weights of all 6 rows sum to 1 together",
    ),
    # Forgets the softmax: the scores are used as the weights.
    "attention_head_no_softmax": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = Z + mask
    return Z @ V, Z
""",
        "the softmax is missing",
    ),
    # Adds the input back (a residual) inside the layer.
    "multi_head_self_attention_residual_inside": (
        "09_multi_head",
        "multi_head_self_attention",
        SPLIT_MERGE
        + """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = mh.softmax(Z)
    return X + _merge(A @ Vh) @ W_o, A
""",
        "the residual connection belongs to the block around the layer",
    ),
    # Projects each head by its own diagonal block of W_O: the heads never mix.
    "multi_head_self_attention_W_o_per_head": (
        "09_multi_head",
        "multi_head_self_attention",
        SPLIT_MERGE
        + """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    d_k = Qh.shape[-1]
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = mh.softmax(Z)
    H = A @ Vh
    outs = [H[..., i, :, :] @ W_o[i*d_k:(i+1)*d_k, i*d_k:(i+1)*d_k] for i in range(n_heads)]
    return np.concatenate(outs, axis=-1), A
""",
        "W_O is applied to each head apart, head i's 2 columns",
    ),
    # Takes head 0's slice of a per-head mask and shares it with every head.
    "multi_head_self_attention_first_head_mask": (
        "09_multi_head",
        "multi_head_self_attention",
        SPLIT_MERGE
        + """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > X.ndim:
            mask = mask[..., 0, :, :]
        Z = Z + np.expand_dims(mask, -3)
    A = mh.softmax(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "only the first head's mask is used",
    ),
    # Divides by √d_model (the layer's width) instead of √d_k: told as such, not "d_k".
    "multi_head_self_attention_sqrt_d_model": (
        "09_multi_head",
        "multi_head_self_attention",
        SPLIT_MERGE
        + """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(X.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = mh.softmax(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "divided by √d_model = √8",
    ),
    # Types the base as 1000.
    "positional_encoding_base_1000": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    i = np.arange(d_model)[None, :]
    angle = pos / 1000 ** (2 * (i // 2) / d_model)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle))
""",
        "the angles' base is 1000, not 10000",
    ),
    # Fills an int array: every sin and cos is truncated.
    "positional_encoding_int_array": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    PE = np.zeros((seq_len, d_model), dtype=int)
    pos = np.arange(seq_len)[:, None]
    i = np.arange(0, d_model, 2)
    angle = pos / 10000 ** (i / d_model)
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return PE
""",
        "the encoding is an array of integers",
    ),
    # Multiplies entry by entry and sums: one score per query, against its own position's key.
    "attention_scores_diagonal_only": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    return (Q * K).sum(-1) / np.sqrt(Q.shape[-1])
""",
        "only query i against key i",
    ),
}
