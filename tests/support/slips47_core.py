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
    # -- round 2: set A's slips (the sources as the learner wrote them) --
    # inner loop starts at i + 2: the key right after the query is left visible
    "set_a_causal_loop_bounds": (
        "06_masking",
        "causal_mask",
        """def causal_mask(seq_len):
    M = np.zeros((seq_len, seq_len))
    for i in range(seq_len):
        for j in range(i + 2, seq_len):
            M[i, j] = -np.inf
    return M
""",
        "the key right after each query (j = i + 1) stays visible",
    ),
    # missing parentheses: sqrt(6/d_in + d_out) instead of sqrt(6/(d_in + d_out))
    "set_a_init_precedence_slip": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    limit = np.sqrt(6 / d_in + d_out)
    return rng.uniform(-limit, limit, (d_in, d_out))
""",
        "the parentheses around d_in + d_out are missing",
    ),
    # swaps the last two axes (T and d_k) instead of h and T before the reshape
    "set_a_merge_swaps_wrong_axes": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-1, -2).reshape(*lead, T, h * d_k)
""",
        "the last two axes (T and d_k) are swapped before the reshape",
    ),
    # np.concatenate(H, axis=-1) iterates over the first axis: right for (h, T, d_k), wrong with
    # batch axes
    "set_a_merge_concatenate_first_axis": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    return np.concatenate(H, axis=-1)
""",
        "splits H along its first axis",
    ),
    # reshape(T, -1) folds the batch axes into the columns
    "set_a_merge_loses_batch": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    T = H.shape[-2]
    return H.swapaxes(-2, -3).reshape(T, -1)
""",
        "reshape(T, -1) folds the batch axes into the columns",
    ),
    # ports nn.Linear's x @ W.T: every weight is applied transposed
    "set_a_mhsa_pytorch_weights": (
        "09_multi_head",
        "multi_head_self_attention",
        """import mhsa_helpers as mh

def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (mh.split_heads(X @ W.T, n_heads) for W in (W_q, W_k, W_v))
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o.T, A
""",
        "every weight is applied transposed, X @ W.T",
    ),
    # gives head i every n_heads-th column (M[..., i::h]) instead of its block of d_k columns
    "set_a_mhsa_strided_heads": (
        "09_multi_head",
        "multi_head_self_attention",
        """import mhsa_helpers as mh

def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    def heads(M):
        return np.stack([M[..., i::n_heads] for i in range(n_heads)], axis=-3)
    Qh, Kh, Vh = heads(X @ W_q), heads(X @ W_k), heads(X @ W_v)
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "head i takes every n_heads-th column",
    ),
    # builds a (..., T, T) mask that blocks padded queries as well as keys
    "set_a_pad_square_mask": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    lengths = np.asarray(lengths)[..., None, None]
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    return np.where((i >= lengths) | (j >= lengths), -np.inf, 0.0)
""",
        "also blocks the padded queries",
    ),
    # np.atleast_1d turns an int into a batch of one: (1, 1, seq_len) instead of (1, seq_len);
    # 2-D lengths break
    "set_a_pad_batch_loop_flat": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    lengths = np.atleast_1d(lengths)
    M = np.zeros((len(lengths), 1, seq_len))
    for b, n in enumerate(lengths):
        M[b, 0, n:] = -np.inf
    return M
""",
        "the int was made a batch of one",
    ),
    # writes 2i // d_model (integer division) in the exponent, so every pair gets frequency 1
    "set_a_pe_integer_division_exponent": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    PE = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            freq = 10000 ** (i // d_model)
            PE[pos, i] = np.sin(pos / freq)
            if i + 1 < d_model:
                PE[pos, i + 1] = np.cos(pos / freq)
    return PE
""",
        "the exponent is 2i // d_model, an integer division",
    ),
    # multiplies the position by 10000^(2i/d) instead of dividing by it
    "set_a_pe_inverted_frequency": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    two_i = np.arange(0, d_model, 2)[None, :]
    angle = pos * 10000.0 ** (two_i / d_model)
    PE = np.zeros((seq_len, d_model))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return PE
""",
        "the position is multiplied by 10000**(2i/d_model) instead of divided",
    ),
    # flattens the batch axes into the rows and never restores them: (B*T, d_model)
    "set_a_qkv_flattens_batch": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    d_model = X.shape[-1]
    X2 = X.reshape(-1, d_model)
    return X2 @ W_q, X2 @ W_k, X2 @ W_v
""",
        "the batch axes are flattened into the rows (B·T = 10 rows",
    ),
    # puts the weight on the left (W @ X.T): the result is transposed, (d_model, T)
    "set_a_qkv_weight_on_left": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    Q = W_q @ X.T
    K = W_k @ X.T
    V = W_v @ X.T
    return Q, K, V
""",
        "the weight is on the left, which gives the transpose of Q",
    ),
    # np.dot on stacked arrays is not a batched product: batch axes give a 4-D result
    "set_a_scores_np_dot_batch": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    return np.dot(Q, np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1])
""",
        "np.dot (like np.tensordot) is not a batched product",
    ),
    # loop starts at i - window + 1 even when that is negative: numpy's negative indices open
    # keys at the end of the row
    "set_a_sw_loop_negative_index_wraps": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    M = np.full((seq_len, seq_len), -np.inf)
    for i in range(seq_len):
        for j in range(i - window + 1, i + 1):
            M[i, j] = 0.0
    return M
""",
        "query 0 also sees the keys at the row's end, 4 to 5",
    ),
    # returns a boolean 'keep' mask instead of the additive 0 / -inf mask
    "set_a_pad_boolean": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    lengths = np.asarray(lengths)
    return (np.arange(seq_len) < lengths[..., None, None])
""",
        "the mask is additive: 0.0 where a key is allowed and -np.inf",
    ),
    # follows the article: masks the keys K instead of the scores
    "set_a_head_mask_on_keys": (
        "08_head_output",
        "attention_head",
        """import mhsa_helpers as mh

def attention_head(Q, K, V, mask=None):
    if mask is not None:
        # 'replace the key values with -inf' for the blocked positions
        blocked = np.isneginf(mask).all(axis=-2)[..., :, None]
        K = np.where(blocked, -1e9, K)
    A = mh.softmax(mh.attention_scores(Q, K))
    return A @ V, A
""",
        "the mask is applied to K, not to the scores",
    ),
    # multiplies the scores by a 0/1 mask: blocked scores become 0, not -inf, so they still get
    # weight
    "set_a_head_mask_multiplied": (
        "08_head_output",
        "attention_head",
        """import mhsa_helpers as mh

def attention_head(Q, K, V, mask=None):
    Z = mh.attention_scores(Q, K)
    if mask is not None:
        Z = Z * np.where(np.isneginf(mask), 0.0, 1.0)  # 'apply' the mask
    A = mh.softmax(Z)
    return A @ V, A
""",
        "the scores are multiplied by a 0/1 mask: a blocked score becomes 0",
    ),
    # H.T reverses every axis before the reshape
    "set_a_merge_heads_dot_T": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    *lead, h, T, d_k = H.shape
    return H.T.reshape(*lead, T, h * d_k)
""",
        "H.T reverses every axis, (h, T, d_k) into (d_k, T, h)",
    ),
    # H.T, then reshape(T, -1)
    "set_a_merge_heads_dot_T_flat": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    T = H.shape[-2]
    return H.T.reshape(T, -1)
""",
        "H.T reverses every axis, (h, T, d_k) into (d_k, T, h)",
    ),
    # the exponent divided by d_model - 1
    "set_a_pe_exponent_over_d_model_minus_1": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    two_i = np.arange(0, d_model, 2)[None, :]
    angle = pos / 10000 ** (two_i / (d_model - 1))
    PE = np.zeros((seq_len, d_model))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return PE
""",
        "the exponent is divided by d_model − 1 = 3, not by d_model = 4",
    ),
    # set B: a softmax without the max's shift and without a guard: 0/0 on a fully blocked row
    "set_b_head_unstable_softmax": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = Z + mask
    E = np.exp(Z)
    A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A
""",
        "every exp(−∞) is 0, and the softmax divides their sum 0 by 0",
    ),
    # set B
    "set_b_merge_swapaxes_2d_only": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    h, T, d_k = H.shape[-3:]
    return H.swapaxes(0, 1).reshape(T, h * d_k)
""",
        "swapping axes 0 and 1 moves a batch axis",
    ),
    # swapaxes(0, 1), then reshape(T, -1): runs on a batch, with the batch folded into the columns
    "merge_swapaxes_reshape_T_minus_1": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    T = H.shape[-2]
    return np.swapaxes(H, 0, 1).reshape(T, -1)
""",
        "swapping axes 0 and 1 moves a batch axis",
    ),
    # set B
    "set_b_swm_long_window_no_mask": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    if window >= seq_len:
        return np.zeros((seq_len, seq_len))
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    return np.where((j <= i) & (j > i - window), 0.0, -np.inf)
""",
        "a window as long as the sequence or longer (window ≥ seq_len) is taken for no mask",
    ),
    # a window longer than the sequence taken for no mask
    "swm_window_past_T_no_mask": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    if window > seq_len:
        return np.zeros((seq_len, seq_len))
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    return np.where((j <= i) & (i - j < window), 0.0, -np.inf)
""",
        "a window as long as the sequence or longer (window ≥ seq_len) is taken for no mask",
    ),
    # set B
    "set_b_pe_log10_in_exp": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    position = np.arange(seq_len)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * -(np.log10(10000.0) / d_model))
    PE = np.zeros((seq_len, d_model))
    PE[:, 0::2] = np.sin(position * div_term)
    PE[:, 1::2] = np.cos(position * div_term[: d_model // 2])
    return PE
""",
        "the frequencies use log10(10000) = 4 where the natural log",
    ),
    # set B
    "set_b_pe_odd_pad_then_cut": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    d = d_model + d_model % 2
    pos = np.arange(seq_len)[:, None]
    two_i = np.arange(0, d, 2)
    angle = pos / 10000 ** (two_i / d)
    PE = np.zeros((seq_len, d))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle)
    return PE[:, :d_model]
""",
        "the frequencies are computed with d_model + 1 = 6",
    ),
    # set B
    "set_b_pe_loop_skips_last_pair": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    PE = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(0, d_model - 1, 2):
            w = 1 / 10000 ** (i / d_model)
            PE[pos, i] = np.sin(pos * w)
            PE[pos, i + 1] = np.cos(pos * w)
    return PE
""",
        "the last column, 4, is left at 0",
    ),
    # a loop over d_model // 2 whole pairs: an odd d_model's last column stays 0
    "pe_pairs_loop_skips_unpaired_column": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    PE = np.zeros((seq_len, d_model))
    pos = np.arange(seq_len)
    for i in range(d_model // 2):
        w = 10000 ** (2 * i / d_model)
        PE[:, 2 * i] = np.sin(pos / w)
        PE[:, 2 * i + 1] = np.cos(pos / w)
    return PE
""",
        "the last column, 4, is left at 0",
    ),
    # sin and cos stacked for (d_model + 1) // 2 pairs with 2·half for d_model, then cut
    "pe_odd_interleaved_then_cut": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    half = (d_model + 1) // 2
    freqs = 1.0 / 10000 ** (np.arange(half) * 2 / (2 * half))
    angles = np.arange(seq_len)[:, None] * freqs[None, :]
    PE = np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(seq_len, 2 * half)
    return PE[:, :d_model]
""",
        "the frequencies are computed with d_model + 1 = 6",
    ),
    # set B
    "set_b_qkv_chained": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    Q = X @ W_q
    K = Q @ W_k
    V = K @ W_v
    return Q, K, V
""",
        "K is computed from Q, K = Q @ W_k, a chain",
    ),
    # set B
    "set_b_qkv_weight_on_the_left": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    return W_q @ X, W_k @ X, W_v @ X
""",
        "the weight is on the left, W @ X",
    ),
    # np.dot(W, X): the weight on the left
    "qkv_np_dot_weight_first": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    Q = np.dot(W_q, X)
    K = np.dot(W_k, X)
    V = np.dot(W_v, X)
    return Q, K, V
""",
        "the weight is on the left, W @ X",
    ),
    # V projected from Q instead of X
    "qkv_value_from_query": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    Q = X @ W_q
    K = X @ W_k
    V = Q @ W_v
    return Q, K, V
""",
        "V is computed from Q, V = Q @ W_v, a chain",
    ),
    # set B
    "set_b_softmax_max_axis_sum_last": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    Z = np.asarray(Z, dtype=float)
    m = Z.max(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(keepdims=True, axis=-1)
    return E / np.where(s == 0, 1.0, s)
""",
        "the maximum is taken along axis but the sum along the last axis",
    ),
    # the max along the last axis, the sum along axis
    "softmax_max_last_sum_axis": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    Z = np.asarray(Z, dtype=float)
    m = np.max(Z, axis=-1, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    E = np.exp(Z - m)
    s = np.sum(E, axis=axis, keepdims=True)
    return np.divide(E, s, out=np.zeros_like(E), where=s > 0)
""",
        "the maximum is taken along the last axis but the sum along axis",
    ),
    # set B
    "set_b_init_sqrt_misplaced": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    a = 6 / np.sqrt(d_in + d_out)
    return rng.uniform(-a, a, size=(d_in, d_out))
""",
        "= 6 / sqrt(d_in + d_out): the square root covers only the denominator",
    ),
    # the root over the 6 alone
    "init_sqrt_over_six_only": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    limit = np.sqrt(6) / (d_in + d_out)
    return rng.uniform(low=-limit, high=limit, size=(d_in, d_out))
""",
        "= sqrt(6) / (d_in + d_out): the square root covers only the 6",
    ),
    # set B
    "set_b_causal_loop_skips_first_row": (
        "06_masking",
        "causal_mask",
        """def causal_mask(seq_len):
    M = np.zeros((seq_len, seq_len))
    for i in range(1, seq_len):
        M[i, i + 1:] = -np.inf
    return M
""",
        "row 0 has no −∞: query 0 sees every key",
    ),
    # set B
    "set_b_split_T_from_first_axis": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    T = M.shape[0]
    d_model = M.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model")
    H = M.reshape(-1, T, n_heads, d_model // n_heads)
    return np.swapaxes(H, -2, -3).reshape(M.shape[:-2] + (n_heads, M.shape[-2], d_model // n_heads))
""",
        "T is read from M.shape[0], the first axis",
    ),
    # T = M.shape[0], reshape(-1, T, h, d_k) and transpose(0, 2, 1, 3)
    "split_T_from_shape_0_transpose": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    T = M.shape[0]
    d_k = M.shape[-1] // n_heads
    heads = M.reshape(-1, T, n_heads, d_k).transpose(0, 2, 1, 3)
    return heads.reshape(*M.shape[:-2], n_heads, M.shape[-2], d_k)
""",
        "T is read from M.shape[0], the first axis",
    ),
    # set B
    "set_b_mhsa_one_head_of_full_width": (
        "09_multi_head",
        "multi_head_self_attention",
        """import mhsa_helpers as mh


def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    Q, K, V = mh.project_qkv(X, W_q, W_k, W_v)
    if X.shape[-1] % n_heads:
        raise ValueError("n_heads must divide d_model")
    Qh, Kh, Vh = Q[..., None, :, :], K[..., None, :, :], V[..., None, :, :]
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        if mask.ndim <= X.ndim:
            mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return out[..., 0, :, :] @ W_o, np.repeat(A, n_heads, axis=-3)
""",
        "one head runs over all d_model columns (scaled by √d_model = √8)",
    ),
    # no split: one attention over all columns, scaled by √d_k, its weights repeated per head
    "mhsa_full_width_head_scaled_by_d_k": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    d_k = X.shape[-1] // n_heads
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask, dtype=float)
        Z = Z + (mask if mask.ndim <= X.ndim else mask[..., 0, :, :])
    m = Z.max(axis=-1, keepdims=True)
    E = np.exp(Z - np.where(np.isfinite(m), m, 0.0))
    s = E.sum(axis=-1, keepdims=True)
    A = np.divide(E, s, out=np.zeros_like(E), where=s > 0)
    A_heads = np.repeat(A[..., None, :, :], n_heads, axis=-3)
    return (A @ V) @ W_o, A_heads
""",
        "one head runs over all d_model columns (scaled by √d_k = √2)",
    ),
    # set C: the loop index j runs over the even columns, already 2i, and the exponent doubles it
    "pe_exponent_2j": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    PE = np.zeros((seq_len, d_model))
    pos = np.arange(seq_len)[:, None]
    for j in range(0, d_model, 2):
        ang = pos[:, 0] / 10000 ** (2 * j / d_model)     # j is already 2i
        PE[:, j] = np.sin(ang)
        if j + 1 < d_model:
            PE[:, j + 1] = np.cos(ang)
    return PE
""",
        "the exponent is doubled, 4i/d_model",
    ),
    # the same slip vectorised: np.arange(0, d_model, 2) is 2i, and it is doubled again
    "pe_exponent_2j_arange": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    two_i = np.arange(0, d_model, 2)
    angle = pos / np.power(10000.0, 2 * two_i / d_model)
    PE = np.zeros((seq_len, d_model))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return PE
""",
        "the exponent is j/d_model, not 2·j/d_model",
    ),
    # set C: the lengths compared with np.arange(seq_len) as they are: fine for an int only
    "pad_int_only": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    row = np.where(np.arange(seq_len) < lengths, 0.0, -np.inf)
    return row[None, :]
""",
        "compared with the lengths as they are pairs 6 key positions with 3 lengths",
    ),
    # the same, written with the key row first: shapes (1, 6) and (3,) do not broadcast
    "pad_int_only_row_first": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    keys = np.arange(seq_len)[None, :]
    return np.where(keys >= lengths, -np.inf, 0.0)
""",
        "it works for one int length only, but lengths may be an array",
    ),
    # set C: the window capped at seq_len - 1, so a window as long as the sequence loses key 0
    "swm_window_capped_at_seq_len_minus_one": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    w = min(window, seq_len - 1)                 # a window cannot be longer than the past
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    return np.where((j <= i) & (j > i - w), 0.0, -np.inf)
""",
        "the window is capped at seq_len − 1",
    ),
    # the same cap written as a condition, in a loop over the queries
    "swm_window_capped_loop": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    if window >= seq_len:
        window = seq_len - 1
    M = np.full((seq_len, seq_len), -np.inf)
    for i in range(seq_len):
        M[i, max(0, i - window + 1) : i + 1] = 0.0
    return M
""",
        "a window as long as the sequence or longer (window ≥ seq_len) is the causal mask",
    ),
    # set C: PyTorch nn.Linear's default bound 1/sqrt(d_in) for Glorot's
    "iw_pytorch_linear_bound": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    bound = 1.0 / np.sqrt(d_in)                     # nn.Linear's default
    return rng.uniform(-bound, bound, size=(d_in, d_out))
""",
        "which is 1/√d_in (d_in = 200), the default bound of PyTorch's nn.Linear",
    ),
    # set C: d_k read as Q.shape[1], which is T_q once a batch axis is in front
    "scores_d_k_from_shape_1": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    d_k = Q.shape[1]
    return np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
""",
        "the size of Q's axis 1 (Q.shape[1], len(Q[0])), not by √d_k",
    ),
    # the same slip with len(Q[0]): the length of Q's first row, T_q for a batch
    "scores_d_k_from_len_of_first": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(len(Q[0]))
""",
        "once batch axes are in front it is the token count T_q",
    ),
    # Set D: Q = (W.T @ X.T).T, right for a 2-D X only (.T reverses the batch axes too).
    "d_qkv_double_transpose_trick": (
        "03_qkv",
        "project_qkv",
        """
def project_qkv(X, W_q, W_k, W_v):
    return tuple((W.T @ X.T).T for W in (W_q, W_k, W_v))
""",
        "the column-vector convention q = Wᵀx, equals X @ W for a 2-D X only",
    ),
    # Masks the keys (K rows set to -1e9) instead of the scores.
    "multi_head_self_attention_mask_written_into_K": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Q, K, V = mh.project_qkv(X, W_q, W_k, W_v)
    if mask is not None:
        K = np.where(np.isneginf(np.asarray(mask)).all(axis=-2)[..., None], -1e9, K)
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    out, A = mh.attention_head(Qh, Kh, Vh)
    return mh.merge_heads(out) @ W_o, A
""",
        "a causal mask cannot be written into K at all",
    ),
    # Averages the heads, then tiles the mean, instead of concatenating them.
    "multi_head_self_attention_heads_averaged_then_tiled": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Q, K, V = mh.project_qkv(X, W_q, W_k, W_v)
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    merged = np.tile(out.mean(axis=-3), n_heads)
    return merged @ W_o, A
""",
        "the heads are averaged (then copied n_heads =",
    ),
    # Shifts by the row minimum, not the maximum (set E).
    "softmax_shift_by_row_minimum": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    Z = np.asarray(Z, dtype=float)
    finite = np.where(np.isfinite(Z), Z, np.inf)
    m = finite.min(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(Z - m)
    s = e.sum(axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)
""",
        "overflow on large scores",
    ),
    # Stacks W_q, W_k, W_v on a new leading axis, which numpy lines up with X's batch axes (set E).
    "project_qkv_weights_stacked_on_a_batch_axis": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    W = np.stack([W_q, W_k, W_v])   # (3, d, d)
    QKV = X @ W                     # (3, T, d)
    return QKV[0], QKV[1], QKV[2]
""",
        "the weights are stacked on a new leading axis",
    ),
    # Reshapes the columns as (d_k, n_heads) instead of (n_heads, d_k) (set E).
    "split_heads_reshape_d_k_then_heads": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    *lead, T, d_model = M.shape
    d_k = d_model // n_heads
    return M.reshape(*lead, T, d_k, n_heads).swapaxes(-2, -3)
""",
        "the head count and the head size are swapped in the reshape",
    ),
    # Loops over every column j and still writes 2*j in the exponent (set E).
    "positional_encoding_two_j_per_column": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    PE = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(d_model):
            angle = pos / (10000 ** ((2 * i) / d_model))
            PE[pos, i] = np.sin(angle) if i % 2 == 0 else np.cos(angle)
    return PE
""",
        "the exponent is 2·j/d_model with j the column index",
    ),
    # Divides the exponent 2i by seq_len instead of d_model (set E).
    "positional_encoding_exponent_over_seq_len": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    two_i = np.arange(0, d_model, 2)[None, :]
    angle = pos / 10000 ** (two_i / seq_len)
    PE = np.empty((seq_len, d_model))
    PE[:, ::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return PE
""",
        "the exponent divides 2i by seq_len = ",
    ),
    # Splits the token axis into n_heads chunks instead of the columns (set E).
    "split_heads_token_axis_split": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    # one chunk per head, stacked on the head axis
    return np.stack(np.split(M, n_heads, axis=-2), axis=-3)
""",
        "the token axis is split, not the columns",
    ),
    # Scales by √(Q.shape[-3]·d_k), reading axis -3 as heads (set E).
    "attention_scores_d_model_from_axis_minus_3": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    # scale by sqrt(d_model): with a head axis, d_model = h * d_k
    d_model = Q.shape[-1] * (Q.shape[-3] if Q.ndim >= 3 else 1)
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_model)
""",
        "= √(Q.shape[-3]·d_k)",
    ),
    # −∞ on the real tokens and 0 on the padding (set E).
    "padding_mask_inverted": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    j = np.arange(seq_len)
    return np.where(j < np.asarray(lengths)[..., None, None], -np.inf, 0.0)
""",
        "the mask is inverted: −∞ on the real tokens",
    ),
    # 1.0 at the padded keys instead of −∞ (set E).
    "padding_mask_ones_at_padded_keys": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    j = np.arange(seq_len)
    return (j >= np.asarray(lengths)[..., None, None]).astype(float)
""",
        "not 1.0 at the padded keys (a 0/1 mask)",
    ),
    # Divides the weights by √d_k after the softmax (set E).
    "attention_head_scaled_after_softmax": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    Z = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z) / np.sqrt(Q.shape[-1])
    return A @ V, A
""",
        "after the softmax, so each row sums to 1/√d_k",
    ),
    # Blocks the first seq_len − length keys (left padding) instead of the keys from length on
    # (set F).
    "padding_mask_left_padding": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    lengths = np.asarray(lengths)
    j = np.arange(seq_len)
    # padding tokens come first, real tokens at the end
    return np.where(j < seq_len - lengths[..., None, None], -np.inf, 0.0)
""",
        "the padding is blocked at the start (left padding)",
    ),
    # Fills the future with +∞ instead of −∞ (set F).
    "causal_mask_plus_infinity": (
        "06_masking",
        "causal_mask",
        """def causal_mask(seq_len):
    return np.triu(np.full((seq_len, seq_len), np.inf), k=1)
""",
        "the blocked positions hold +∞ (np.inf), not −∞",
    ),
    # Gives a head axis only to a mask with exactly as many axes as X: a mask (B, T, T) on
    # X (2, B, T, d) meets the heads (set F).
    "mhsa_head_axis_only_for_as_many_axes_as_x": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Q, K, V = mh.project_qkv(X, W_q, W_k, W_v)
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    if mask is not None and np.ndim(mask) == np.ndim(X) and np.ndim(mask) > 2:
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "has fewer axes than X",
    ),
    # np.tensordot over the last axes pairs every query matrix with every key matrix (set F).
    "attention_scores_tensordot": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    return np.tensordot(Q, K, axes=([-1], [-1])) / np.sqrt(Q.shape[-1])
""",
        "np.dot (like np.tensordot) is not a batched product",
    ),
    # An einsum 'qd,kd->qk' without '...': fails on batch axes (set F).
    "attention_scores_einsum_without_ellipsis": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    return np.einsum("qd,kd->qk", Q, K) / Q.shape[-1] ** 0.5
""",
        "np.einsum('...qd,...kd->...qk', Q, K)",
    ),
    # Multiplies the scores by the additive mask, Z * M (set F).
    "attention_head_scores_times_mask": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    Z = mh.attention_scores(Q, K)
    if mask is not None:
        Z = Z * mask
    A = mh.softmax(Z)
    return A @ V, A
""",
        "the scores are multiplied by the mask, Z * M",
    ),
    # ---- round 7 (set G) ----
    # The fused product X @ [W_q W_k W_v] split along axis 0 (set G).
    "g03_qkv_fused_split_axis0": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    W_qkv = np.concatenate([W_q, W_k, W_v], axis=1)
    qkv = X @ W_qkv
    Q, K, V = np.split(qkv, 3, axis=0)
    return Q, K, V
""",
        "is split into three along its first axis",
    ),
    # d_k ** 1 / 2 read as (Q·Kᵀ / d_k) / 2: ** binds tighter than / (set G).
    "g05_scores_precedence": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return Q @ np.swapaxes(K, -1, -2) / d_k ** 1 / 2
""",
        "the scores are divided by 2·d_k = 8",
    ),
    # The mask forced into (T_q, T_k) by a reshape (set G).
    "g08_head_mask_reshape_2d": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    Z = mh.attention_scores(Q, K)
    if mask is not None:
        Z = Z + np.reshape(mask, Z.shape[-2:])
    A = mh.softmax(Z)
    return A @ V, A
""",
        "the mask is forced into the shape (T_q, T_k)",
    ),
    # θ and p·θ computed in float32, as PyTorch code does (set G).
    "g11_rope_float32_angles": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    inv_freq = (1.0 / base ** (np.arange(0, d, 2, dtype=np.float32) / d)).astype(np.float32)
    ang = pos[..., None].astype(np.float32) * inv_freq
    cos, sin = np.cos(ang).astype(X.dtype), np.sin(ang).astype(X.dtype)
    x0, x1 = X[..., 0::2], X[..., 1::2]
    out = np.empty(X.shape)
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out
""",
        "the angles are computed in float32",
    ),
    # Only the queries split by a bare reshape; K and V by split_heads (set G).
    "g15_cross_q_not_transposed": (
        "15_cross",
        "cross_attention",
        """def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    if X.shape[-1] % n_heads:
        raise ValueError("n_heads must divide d_model")

    *lead, T_q, d = X.shape
    d_k = d // n_heads
    Qh = (X @ W_q).reshape(*lead, n_heads, T_q, d_k)
    Kh, Vh = (mh.split_heads(C @ Wm, n_heads) for Wm in (W_k, W_v))
    if mask is not None and 2 < np.ndim(mask) <= max(X.ndim, C.ndim):
        mask = np.expand_dims(mask, -3)
    out, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(out) @ W_o, A
""",
        "the queries X·W_Q are reshaped straight to (..., n_heads, T_q, d_k)",
    ),
    # K transposed by np.transpose(K, (0, 2, 1)): one batch axis only (set G).
    "g08_head_transpose_3d": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    Z = Q @ np.transpose(K, (0, 2, 1)) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    return A @ V, A
""",
        "Swap K's last two axes, counted from the end: np.swapaxes(K, -1, -2)",
    ),
    # M.T reverses every axis: M.T.reshape(h, d_k, T) splits a 2-D M only (set G).
    "g04_split_transpose_all": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    T, d = M.shape[-2], M.shape[-1]
    d_k = d // n_heads
    return M.T.reshape(n_heads, d_k, T).transpose(0, 2, 1)
""",
        "M.T reverses all of M's axes",
    ),
    # A scale d_k ** 1/2 = d_k/2 (set G, a variant).
    "g05_scores_precedence_scale_variable": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    d_k = Q.shape[-1]
    scale = d_k ** 1/2
    return Q @ np.swapaxes(K, -1, -2) / scale
""",
        "the scores are divided by d_k/2 = 3.5",
    ),
    # np.split's default axis 0 on the fused product (set G, a variant).
    "g03_qkv_fused_split_default_axis": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    return tuple(np.split(X @ np.hstack([W_q, W_k, W_v]), 3))
""",
        "is split into three along its first axis",
    ),
    # The mask broadcast to (T_q, T_k): a per-sequence mask fails (set G, a variant).
    "g08_head_mask_broadcast_to_2d": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        Z = Z + np.broadcast_to(mask, (Q.shape[-2], K.shape[-2]))
    A = mh.softmax(Z)
    return A @ V, A
""",
        "the mask is forced into the shape (T_q, T_k)",
    ),
    # K.transpose(0, 2, 1) in attention_scores (set G, a variant).
    "g05_scores_transpose_3d": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    return Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])
""",
        "np.swapaxes(K, -1, -2)",
    ),
    # float32 angles, cos and sin then in float64 (set G, a variant).
    "g11_rope_float32_angles_cos_float64": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    d = X.shape[-1]
    if d % 2:
        raise ValueError("d must be even")
    T = X.shape[-2]
    p = np.arange(T, dtype=np.float32) if positions is None else np.asarray(positions, np.float32)
    theta = np.float32(base) ** (-np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
    ang = (p[..., None] * theta).astype(np.float64)
    out = np.array(X, dtype=float)
    x0, x1 = out[..., 0::2].copy(), out[..., 1::2].copy()
    out[..., 0::2] = x0 * np.cos(ang) - x1 * np.sin(ang)
    out[..., 1::2] = x0 * np.sin(ang) + x1 * np.cos(ang)
    return out
""",
        "the angles are computed in float32",
    ),
    # The bound with floor division, 6 // (d_in + d_out) = 0: every weight 0 (set H).
    "init_weights_bound_floor_division": (
        "02_parameters",
        "init_weights",
        """import math
def init_weights(d_in, d_out, rng):
    a = math.sqrt(6 // (d_in + d_out))
    return rng.uniform(-a, a, size=(d_in, d_out))
""",
        "every weight is 0",
    ),
}
