"""Learner mistakes written fresh, without reading the checks (issue 23), and what each is told.

Each entry: notebook stem, the function's name, the answer cell's source, and a piece
of the sentence the visible check must say. They were written by someone who had read
only the course's text and contract; each sentence was read and judged to name the
actual slip. Used in-process by tests/test_checks.py and through real nbgrader and
grading kernels by tests/test_course.py.
"""

from tests.named_slips import NAMED, NAMED_CORRECT
from tests.round2_slips import ROUND2

FRESH = {
    # Concatenates each next head on the left of the result instead of the right, so the heads
    # come out in reversed order (head h-1 in the first d_k columns, head 0 in the last).
    "merge_heads_reversed_head_order": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    out = H[..., 0, :, :]
    for i in range(1, H.shape[-3]):
        out = np.concatenate([H[..., i, :, :], out], axis=-1)  # add the next head
    return out
""",
        "merged in reverse order",
    ),
    # Multiplies the concatenated heads by W_o.T instead of W_o (output projection transposed).
    "multi_head_self_attention_W_o_transposed": (
        "09_multi_head",
        "multi_head_self_attention",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    d_k = Qh.shape[-1]
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o.T, A
""",
        "W_O is transposed",
    ),
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
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
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
    # Puts all the sines in the first half of the columns and all the cosines in the second half
    # instead of interleaving them (sin in column 2i, cos in column 2i+1), and loses the last
    # column when d_model is odd.
    "positional_encoding_sin_cos_halves": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    i = np.arange(d_model // 2)[None, :]
    angle = pos / 10000 ** (2 * i / d_model)
    # sines in the first half, cosines in the second half
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=-1)
""",
        "laid out in two halves",
    ),
    # Subtracts the global maximum of the whole array instead of each row's maximum, so a row
    # whose scores are far below the global maximum underflows to all zeros.
    "softmax_global_max": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    E = np.exp(Z - np.max(Z))  # subtract the max for stability
    s = E.sum(axis=axis, keepdims=True)
    return E / np.where(s > 0, s, 1.0)
""",
        "the maximum of all of Z",
    ),
    # Does not handle cache=None: the first token fails with a TypeError ('NoneType' object is not
    # subscriptable).
    "decode_step_cache_none_not_handled": (
        "13_kv_cache",
        "decode_step",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
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
    # Uses K.T, which reverses all axes of a batched K instead of swapping only the last two, so
    # it fails (or is wrong) as soon as there are batch axes.
    "attention_scores_K_dot_T": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return Q @ K.T / np.sqrt(d_k)
""",
        "not M.T (which reverses every axis",
    ),
    # Hard-codes transpose(1, 0, 2), which only works for a 2-D (T, d_model) input and fails as
    # soon as there is a batch axis.
    "split_heads_hardcoded_transpose": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    T, d_model = M.shape[-2], M.shape[-1]
    d_k = d_model // n_heads
    return M.reshape(*M.shape[:-1], n_heads, d_k).transpose(1, 0, 2)
""",
        "not M.transpose(1, 0, 2)",
    ),
    # Hard-codes transpose(1, 0, 2) and reshape(T, h*d_k) for a single (h, T, d_k) array, so it
    # fails with batch axes.
    "merge_heads_hardcoded_transpose": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    h, T, d_k = H.shape[-3:]
    return H.transpose(1, 0, 2).reshape(T, h * d_k)
""",
        "not M.transpose(1, 0, 2)",
    ),
    # Uses the He/Kaiming bound sqrt(6/d_in) instead of Glorot's sqrt(6/(d_in + d_out)), so the
    # range is too wide.
    "init_weights_fan_in_only": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    a = np.sqrt(6 / d_in)  # He/Kaiming-uniform bound
    return rng.uniform(-a, a, size=(d_in, d_out))
""",
        "sqrt(6 / d_in)",
    ),
    # Casts Q, K, V to float32 'for speed', so float64 inputs come back with float32 precision
    # (errors around 1e-7).
    "attention_head_float32_compute": (
        "08_head_output",
        "attention_head",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def attention_head(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))  # faster
    Z = Q @ np.swapaxes(K, -1, -2) / np.float32(np.sqrt(Q.shape[-1]))
    if mask is not None:
        Z = Z + np.asarray(mask, dtype=np.float32)
    A = _softmax_rows(Z)
    return A @ V, A
""",
        "the attention weights come out as float32 from float64 inputs",
    ),
    # Casts everything to float32 to save memory, so float64 inputs lose precision (errors around
    # 1e-7 instead of 1e-15).
    "project_qkv_float32_compute": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    X32 = np.asarray(X, dtype=np.float32)  # save memory
    return tuple(X32 @ np.asarray(W, dtype=np.float32) for W in (W_q, W_k, W_v))
""",
        "comes out as float32 from float64 inputs",
    ),
    # Adds a batched mask (B, T, T) or (B, 1, T) to the scores (B, h, T, T) without inserting a
    # head axis, so the mask's batch axis lines up with the head axis (wrong or a broadcast
    # error).
    "multi_head_self_attention_mask_without_head_axis": (
        "09_multi_head",
        "multi_head_self_attention",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    d_k = Qh.shape[-1]
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "no head axis",
    ),
    # Adds a batched mask to the (..., h, T, T) scores without inserting a head axis, so the
    # mask's batch axis lines up with the head axis.
    "multi_query_attention_mask_without_head_axis": (
        "10_capstone",
        "multi_query_attention",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = _split(X @ W_q, n_heads)
    K = (X @ W_k)[..., None, :, :]
    V = (X @ W_v)[..., None, :, :]
    Z = Qh @ np.swapaxes(K, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ V) @ W_o, A
""",
        "no head axis",
    ),
    # Adds a batched mask (B, T, T) or (B, 1, T) to the (B, h, T, T) scores without inserting a
    # head axis, so the batch axis of the mask meets the head axis.
    "grouped_query_attention_mask_without_head_axis": (
        "12_gqa",
        "grouped_query_attention",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
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
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
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
    # Uses true division d_model / n_heads, so the multi-query count is a float (e.g. 64.0)
    # instead of an int.
    "kv_cache_size_float_division": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    if multi_query:
        return 2 * seq_len * d_model / n_heads
    return 2 * seq_len * d_model
""",
        "whole number (an int)",
    ),
    # Validates the head counts with assert, which raises AssertionError (and disappears under
    # python -O) instead of the required ValueError.
    "grouped_query_attention_assert_not_valueerror": (
        "12_gqa",
        "grouped_query_attention",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
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
    # Works in place on the caller's array (Z -= m, np.exp(Z, out=Z)), so the scores passed in are
    # overwritten by the weights.
    "softmax_modifies_input": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    m = np.max(Z, axis=axis, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    Z -= m              # in place, saves a copy
    np.exp(Z, out=Z)
    s = Z.sum(axis=axis, keepdims=True)
    s[s == 0] = 1.0
    Z /= s
    return Z
""",
        "modified an input in place",
    ),
    # Scales Q in place (Q /= sqrt(d_k)), which overwrites the caller's queries, so a second call
    # with the same Q gives different scores.
    "attention_head_scales_Q_in_place": (
        "08_head_output",
        "attention_head",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def attention_head(Q, K, V, mask=None):
    Q /= np.sqrt(Q.shape[-1])  # cheaper to scale Q than the T x T scores
    Z = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        Z = Z + mask
    A = _softmax_rows(Z)
    return A @ V, A
""",
        "modified an input in place",
    ),
    # Does not handle a row that is entirely -inf: -inf - (-inf) is NaN (with a RuntimeWarning)
    # instead of a row of zeros.
    "softmax_nan_on_masked_row": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    m = np.max(Z, axis=axis, keepdims=True)
    E = np.exp(Z - m)
    return E / E.sum(axis=axis, keepdims=True)
""",
        "entirely −∞ (fully masked) gives NaN",
    ),
    # Assumes d_model is even: for odd d_model there is one fewer cosine column than sine columns,
    # so the assignment fails with a broadcast error.
    "positional_encoding_odd_d_model_breaks": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    two_i = np.arange(0, d_model, 2)[None, :]
    angle = pos / 10000 ** (two_i / d_model)
    PE = np.zeros((seq_len, d_model))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle)  # assumes as many cosine columns as sine columns
    return PE
""",
        "an odd d_model = 5 must work too",
    ),
    # Multiplies a 0/1 matrix by -inf, and 0 * -inf is NaN (with a RuntimeWarning), so the allowed
    # positions become NaN instead of 0.
    "causal_mask_ones_times_inf": (
        "06_masking",
        "causal_mask",
        """def causal_mask(seq_len):
    return np.triu(np.ones((seq_len, seq_len)), k=1) * -np.inf
""",
        "0 · (−∞) is NaN",
    ),
    # Indexes lengths[:, None, None], which assumes a 1-D array of lengths: a single int length
    # raises an IndexError and a 2-D array of lengths gives the wrong shape.
    "padding_mask_int_lengths_fail": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    lengths = np.asarray(lengths)
    j = np.arange(seq_len)
    return np.where(j >= lengths[:, None, None], -np.inf, 0.0)
""",
        "lengths may be a single int",
    ),
    # Copy-paste slip: computes the shared values with W_k instead of W_v (the weights are right,
    # the output is not).
    "multi_query_attention_values_from_W_k": (
        "10_capstone",
        "multi_query_attention",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = _split(X @ W_q, n_heads)
    K = (X @ W_k)[..., None, :, :]
    V = (X @ W_k)[..., None, :, :]
    Z = Qh @ np.swapaxes(K, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ V) @ W_o, A
""",
        "the shared values are computed with W_k",
    ),
    # Treats it like multi-head attention and splits the single shared K/V head (width d_k) into
    # n_heads pieces, which do not match the queries' d_k (fails unless n_heads = 1).
    "multi_query_attention_splits_shared_kv": (
        "10_capstone",
        "multi_query_attention",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "one shared head of width d_k",
    ),
    # Does not give the shared K and V a head axis of size 1, which broadcasts correctly only
    # without batch axes; with a batch axis K's batch lines up with the query heads.
    "multi_query_attention_kv_without_head_axis": (
        "10_capstone",
        "multi_query_attention",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = _split(X @ W_q, n_heads)  # (..., h, T, d_k)
    K = X @ W_k  # (..., T, d_k), broadcasts over the heads
    V = X @ W_v
    Z = Qh @ np.swapaxes(K, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ V) @ W_o, A
""",
        "one shared head of width d_k",
    ),
    # Counts d_model numbers per head per token instead of d_k, so multi-head is n_heads times too
    # big and multi-query is counted as 2*T*d_model.
    "kv_cache_size_times_heads": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    kv_heads = 1 if multi_query else n_heads
    return 2 * seq_len * d_model * kv_heads
""",
        "n_heads = 2 times too many",
    ),
    # Counts the queries as cached too (factor 3 for Q, K, V) although only K and V are cached.
    "kv_cache_size_caches_queries_too": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    width = d_model // n_heads if multi_query else d_model
    return 3 * seq_len * width  # Q, K and V
""",
        "Only K and V are cached",
    ),
    # Ignores the multi_query flag and always returns the multi-head count 2*T*d_model.
    "kv_cache_size_ignores_multi_query": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    d_k = d_model // n_heads
    return 2 * seq_len * d_k * n_heads
""",
        "each token caches 2·d_k numbers",
    ),
    # Relies on np.concatenate iterating over the first axis, which is the head axis only for a
    # 3-D (h, T, d_k) input; with a batch axis it concatenates the batch elements instead.
    "merge_heads_concatenate_first_axis": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    return np.concatenate(H, axis=-1)
""",
        "right without batch axes and wrong with batch axes",
    ),
    # Moves the head axis to the end, (..., T, d_k, h), before reshaping, so the heads' columns
    # come out interleaved (column c from head c % h) instead of side by side.
    "merge_heads_heads_interleaved": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    *lead, h, T, d_k = H.shape
    return np.moveaxis(H, -3, -1).reshape(*lead, T, h * d_k)
""",
        "the heads' columns are interleaved",
    ),
    # Ported from a batch-first tutorial: unpacks B, T, d_model = X.shape and hard-codes 4-D
    # transposes, so it fails on a plain (T, d_model) input and on two batch axes.
    "ported_multi_head_self_attention_batch_first": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    B, T, d_model = X.shape  # batch-first, as in the tutorial
    d_k = d_model // n_heads

    def split(M):
        return M.reshape(B, T, n_heads, d_k).transpose(0, 2, 1, 3)

    Q, K, V = split(X @ W_q), split(X @ W_k), split(X @ W_v)
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim == 3:
            mask = mask[:, None]
        scores = scores + mask
    m = scores.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(scores - m)
    s = e.sum(axis=-1, keepdims=True)
    A = e / np.where(s > 0, s, 1.0)
    out = (A @ V).transpose(0, 2, 1, 3).reshape(B, T, d_model)
    return out @ W_o, A
""",
        "fails on an input without batch axes",
    ),
    # Computes d_k with true division (d_model / n_heads), a float that reshape refuses
    # (TypeError), instead of integer division //.
    "split_heads_float_d_k": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    *lead, T, d_model = M.shape
    d_k = d_model / n_heads
    return M.reshape(*lead, T, n_heads, d_k).swapaxes(-2, -3)
""",
        "use // for sizes",
    ),
    # Copied the self-attention split that reads T from X, and uses X's length to reshape C's keys
    # and values, so it fails whenever T_k differs from T_q.
    "cross_attention_query_length_for_keys": (
        "15_cross",
        "cross_attention",
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
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
        """def _softmax_rows(Z):
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _split(M, h):
    *lead, T, d = M.shape
    return M.reshape(*lead, T, h, d // h).swapaxes(-2, -3)


def _merge(H):
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)


def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
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
    # Writes the einsum for a single (T, d_model) matrix ('td,de->te'), so it fails on inputs with
    # leading batch axes.
    "project_qkv_einsum_2d_only": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    Q = np.einsum("td,de->te", X, W_q)
    K = np.einsum("td,de->te", X, W_k)
    V = np.einsum("td,de->te", X, W_v)
    return Q, K, V
""",
        "with '...' for the batch axes",
    ),
    # Ported from PyTorch's F.linear convention: multiplies by the transposed weights (X @ W.T)
    # although the course's weights act on the right (X @ W).
    "ported_project_qkv_torch_linear": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    # F.linear(x, W) = x @ W.T
    return X @ W_q.T, X @ W_k.T, X @ W_v.T
""",
        "Q = X @ W_q.T",
    ),
    # Ported from PyTorch's scaled_dot_product_attention: returns only the output instead of the
    # (output, weights) pair.
    "ported_attention_head_output_only": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    # scaled_dot_product_attention returns only the output
    d_k = Q.shape[-1]
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + mask
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    A = E / np.where(s > 0, s, 1.0)
    return A @ V
""",
        "return a tuple (output, weights)",
    ),
    # Ported from a 'b t h d' (einops/TensorFlow) layout: leaves the head axis after the token
    # axis, (..., T, h, d_k), instead of before it, (..., h, T, d_k).
    "ported_split_heads_heads_after_T": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    # "b t (h d) -> b t h d"
    *lead, T, d_model = M.shape
    return M.reshape(*lead, T, n_heads, d_model // n_heads)
""",
        "the head axis must come before the token axis",
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
    # Ported from PyTorch's nn.Linear: returns the weight in shape (d_out, d_in) instead of (d_in,
    # d_out) for weights that act on the right.
    "ported_init_weights_torch_shape": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    # like torch.nn.Linear: weight has shape (out_features, in_features)
    a = np.sqrt(6 / (d_in + d_out))
    return rng.uniform(-a, a, size=(d_out, d_in))
""",
        "W must be (d_in, d_out)",
    ),
}


#: Right answers written unusually (einsum, loops, complex numbers, float32 kept): each
#: passes its visible and hidden checks.
CORRECT = {
    # Double Python loop with math.sin/math.cos instead of vectorised numpy; handles odd d_model
    # with an explicit bounds test.
    "positional_encoding_math_loops": (
        "01_input",
        "positional_encoding",
        """import math


def positional_encoding(seq_len, d_model):
    PE = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            angle = pos / math.pow(10000.0, i / d_model)
            PE[pos, i] = math.sin(angle)
            if i + 1 < d_model:
                PE[pos, i + 1] = math.cos(angle)
    return PE
""",
    ),
    # Builds U(-a, a) by hand from rng.random() (an affine map of U[0, 1)) instead of calling
    # rng.uniform; it consumes the generator identically and gives the same numbers.
    "init_weights_affine_of_random": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    a = (6.0 / (d_in + d_out)) ** 0.5
    return -a + 2 * a * rng.random((d_in, d_out))
""",
    ),
    # Slices each head's column block and stacks the blocks on axis -3 instead of reshape +
    # swapaxes; returns a fresh array rather than a view.
    "split_heads_stack_on_axis_minus3": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    d_k = M.shape[-1] // n_heads
    return np.stack([M[..., i * d_k:(i + 1) * d_k] for i in range(n_heads)], axis=-3)
""",
    ),
    # Concatenates the head slices H[..., i, :, :] along the last axis with a list comprehension
    # instead of swapaxes + reshape.
    "merge_heads_concatenate_slices": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    h = H.shape[-3]
    return np.concatenate([H[..., i, :, :] for i in range(h)], axis=-1)
""",
    ),
    # Uses einsum with an ellipsis for the batch axes and scales Q before the product instead of
    # dividing the scores afterwards.
    "attention_scores_einsum": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    scale = 1.0 / np.sqrt(Q.shape[-1])
    return np.einsum("...qd,...kd->...qk", Q * scale, K)
""",
    ),
    # np.triu of a matrix full of -inf (triu selects, it never multiplies, so there is no 0·inf
    # NaN).
    "causal_mask_triu_of_inf": (
        "06_masking",
        "causal_mask",
        """def causal_mask(seq_len):
    return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)
""",
    ),
    # Copies the input once and then works in place on the copy (subtract, exp with out=, divide),
    # so float32 in gives float32 out and the caller's array is untouched.
    "softmax_copy_then_in_place_keeps_dtype": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    A = np.array(Z, copy=True)
    if not np.issubdtype(A.dtype, np.floating):
        A = A.astype(np.float64)
    m = np.max(A, axis=axis, keepdims=True)
    m[~np.isfinite(m)] = 0
    A -= m
    np.exp(A, out=A)
    s = np.sum(A, axis=axis, keepdims=True)
    s[s == 0] = 1
    A /= s
    return A
""",
    ),
    # einsum for both products, and everything kept in the inputs' precision (float32 in, float32
    # out; the mask is cast to that dtype).
    "attention_head_einsum_float32_preserving": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    dtype = np.result_type(Q, K, V, np.float32)
    Z = np.einsum("...qd,...kd->...qk", Q, K) / dtype.type(np.sqrt(Q.shape[-1]))
    if mask is not None:
        Z = Z + np.asarray(mask).astype(dtype)
    m = Z.max(axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0, m).astype(dtype)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    A = E / np.where(s == 0, 1, s).astype(dtype)
    return np.einsum("...qk,...kv->...qv", A, V), A
""",
    ),
    # Explicit Python loop over the heads on column slices, so no split/merge reshapes and no head
    # axis on the mask; the weights are stacked on axis -3 at the end.
    "multi_head_self_attention_loop_over_heads": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    d_model = X.shape[-1]
    d_k = d_model // n_heads
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    outputs, weights = [], []
    for i in range(n_heads):
        cols = slice(i * d_k, (i + 1) * d_k)
        Z = Q[..., cols] @ np.swapaxes(K[..., cols], -1, -2) / np.sqrt(d_k)
        if mask is not None:
            m = np.asarray(mask)
            if m.ndim > X.ndim:  # a head axis at -3: this head's mask
                m = m[..., min(i, m.shape[-3] - 1), :, :]
            Z = Z + m  # (..., T, T) per head: no head axis needed
        m = Z.max(axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        E = np.exp(Z - m)
        s = E.sum(axis=-1, keepdims=True)
        A = E / np.where(s > 0, s, 1.0)
        outputs.append(A @ V[..., cols])
        weights.append(A)
    return np.concatenate(outputs, axis=-1) @ W_o, np.stack(weights, axis=-3)
""",
    ),
    # Shares the K/V head by tiling W_k and W_v n_heads times along the columns and running plain
    # multi-head attention, instead of broadcasting a head axis of size 1 (more work, same
    # result).
    "multi_query_attention_tiled_columns": (
        "10_capstone",
        "multi_query_attention",
        """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    # give every head the same key/value columns, then run ordinary multi-head attention
    W_k_all = np.tile(W_k, (1, n_heads))  # (d_model, h * d_k)
    W_v_all = np.tile(W_v, (1, n_heads))
    *lead, T, d_model = X.shape
    d_k = d_model // n_heads

    def split(M):
        return M.reshape(*lead, T, n_heads, d_k).swapaxes(-2, -3)

    Qh, Kh, Vh = split(X @ W_q), split(X @ W_k_all), split(X @ W_v_all)
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask)
        Z = Z + (mask[..., None, :, :] if 2 < mask.ndim <= X.ndim else mask)
    m = Z.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    A = E / np.where(s > 0, s, 1.0)
    out = (A @ Vh).swapaxes(-2, -3).reshape(*lead, T, d_model)
    return out @ W_o, A
""",
    ),
    # Treats each pair as a complex number and multiplies by exp(i·p·θ) instead of writing out the
    # 2x2 rotation.
    "rotary_embedding_complex_numbers": (
        "11_rope",
        "rotary_embedding",
        """def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X)
    d = X.shape[-1]
    if d % 2 != 0:
        raise ValueError(f"RoPE rotates pairs of features, so d must be even; got d={d}.")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    theta = float(base) ** (-np.arange(0, d, 2) / d)
    z = X[..., 0::2] + 1j * X[..., 1::2]  # pair (x_2i, x_2i+1) as x_2i + i x_2i+1
    z = z * np.exp(1j * (pos[..., None] * theta))
    out = np.empty(z.shape[:-1] + (d,), dtype=z.real.dtype)
    out[..., 0::2] = z.real
    out[..., 1::2] = z.imag
    return out
""",
    ),
    # Keeps the single query without a token axis and uses einsum over (..., h, t, d_k) for the
    # scores and the weighted sum, so no split_heads/merge_heads and no (..., h, 1, t) arrays.
    "decode_step_einsum_and_stack": (
        "13_kv_cache",
        "decode_step",
        """def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    x = np.asarray(x)
    d_model = x.shape[-1]
    if n_heads < 1 or d_model % n_heads != 0:
        raise ValueError(
            f"n_heads must divide d_model, but got d_model={d_model} and n_heads={n_heads}."
        )
    d_k = d_model // n_heads
    heads = lambda v: v.reshape(*v.shape[:-1], n_heads, d_k)  # (..., h, d_k)
    q, k, v = heads(x @ W_q), heads(x @ W_k), heads(x @ W_v)
    if cache is None:
        K, V = k[..., None, :], v[..., None, :]  # (..., h, 1, d_k)
    else:
        K = np.concatenate((cache[0], k[..., None, :]), axis=-2)
        V = np.concatenate((cache[1], v[..., None, :]), axis=-2)
    s = np.einsum("...hd,...htd->...ht", q, K) / np.sqrt(d_k)  # (..., h, t+1)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    out = np.einsum("...ht,...htd->...hd", w, V)  # (..., h, d_k)
    return out.reshape(*out.shape[:-2], d_model) @ W_o, (K, V)
""",
    ),
    # A while loop over the blocks, scales Q once up front, updates the running sum and output in
    # place, applies the causal mask by boolean indexing inside each block, and keeps float32
    # inputs in float32.
    "tiled_attention_dtype_preserving_inplace": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    if not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, but got {block_size!r}.")
    T_q, d_k = Q.shape[-2:]
    T_k, d_v = K.shape[-2], V.shape[-1]
    if causal and T_q != T_k:
        raise ValueError(f"causal=True needs as many queries as keys, got {T_q} and {T_k}.")
    dt = np.result_type(Q, K, V, np.float32)
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    Qs = Q * dt.type(1.0 / np.sqrt(d_k))
    m = np.full(lead + (T_q, 1), -np.inf, dtype=dt)
    l = np.zeros(lead + (T_q, 1), dtype=dt)
    acc = np.zeros(lead + (T_q, d_v), dtype=dt)
    q_idx = np.arange(T_q)[:, None]
    start = 0
    while start < T_k:
        stop = min(start + block_size, T_k)
        S = Qs @ np.swapaxes(K[..., start:stop, :], -1, -2)
        if causal:
            S[..., np.arange(start, stop)[None, :] > q_idx] = -np.inf
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        ref = np.where(np.isneginf(m_new), 0, m_new)
        S -= ref
        np.exp(S, out=S)
        corr = np.exp(m - ref)
        l *= corr
        l += S.sum(axis=-1, keepdims=True)
        acc *= corr
        acc += S @ V[..., start:stop, :]
        m = m_new
        start = stop
    safe = np.where(l > 0, l, 1)
    return np.where(l > 0, acc / safe, 0).astype(dt)
""",
    ),
    # Sums two triangular -inf matrices (future keys, and keys at least `window` back) instead of
    # comparing index grids; 0 + 0 stays 0 and -inf + 0 is -inf.
    "sliding_window_mask_triu_plus_tril": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be an integer of at least 1, but got {window!r}.")
    blocked = np.full((seq_len, seq_len), -np.inf)
    # future (above the diagonal) + too far back (j <= i - window)
    return np.triu(blocked, 1) + np.tril(blocked, -window)
""",
    ),
}


#: The backward pass (17_backward): written the same way, without reading its checks.
FRESH |= {
    # Drops the row-sum term: returns A * dA instead of A * (dA - sum(dA * A)).
    "backward_sb_no_rowsum": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # d softmax / dz is just softmax itself, like exp
    return A * dA
""",
        "misses the row-sum term",
    ),
    # Subtracts the row sum of dA instead of the row sum of dA * A.
    "backward_sb_sum_dA_only": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    return A * (dA - np.sum(dA, axis=axis, keepdims=True))
""",
        "the row sum must weigh dA by A",
    ),
    # Hard-codes the last axis for the sum and ignores the axis argument.
    "backward_sb_axis_ignored": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # rows of the attention matrix are the last axis
    s = np.sum(dA * A, axis=-1, keepdims=True)
    return A * (dA - s)
""",
        "the axis argument is ignored",
    ),
    # Sums without keepdims=True, so the row sums broadcast along the wrong axis (or fail to
    # broadcast).
    "backward_sb_no_keepdims": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    s = np.sum(dA * A, axis=axis)
    return A * (dA - s)
""",
        "keepdims=True is missing",
    ),
    # Uses only the diagonal of the Jacobian, a(1 - a), as for a sigmoid, dropping the off-
    # diagonal -a_i a_j terms.
    "backward_sb_sigmoid_diag": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # derivative of a_j w.r.t. z_j is a_j (1 - a_j)
    return dA * A * (1 - A)
""",
        "only the Jacobian's diagonal",
    ),
    # Takes the coupling sum along axis -2 (down the columns) instead of along the softmax's axis.
    "backward_sb_column_sum": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # sum over the keys... the columns are axis -2
    return A * (dA - np.sum(dA * A, axis=-2, keepdims=True))
""",
        "runs along the wrong axis",
    ),
    # Computes the right values but overwrites the caller's dA in place.
    "backward_sb_inplace": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # save memory: reuse dA's buffer
    dA -= np.sum(dA * A, axis=axis, keepdims=True)
    dA *= A
    return dA
""",
        "modified an input in place",
    ),
    # Divides the scores' gradient by d_k instead of sqrt(d_k).
    "backward_ah_divide_by_dk": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    def softmax_backward(A, dA, axis=-1):
        return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))

    d_k = Q.shape[-1]
    _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / d_k
    dQ = dZ @ K
    dK = np.swapaxes(dZ, -1, -2) @ Q
    return dQ, dK, dV
""",
        "divided by d_k",
    ),
    # Applies the 1/sqrt(d_k) scale to dQ but forgets it in dK.
    "backward_ah_dK_unscaled": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    def softmax_backward(A, dA, axis=-1):
        return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))

    s = np.sqrt(Q.shape[-1])
    _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2))
    dQ = dZ @ K / s
    dK = np.swapaxes(dZ, -1, -2) @ Q
    return dQ, dK, dV
""",
        "dK misses the 1/√d_k",
    ),
    # Computes dK as dZ @ Q instead of dZ^T @ Q (shapes only agree when T_q == T_k).
    "backward_ah_dK_no_transpose": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    def softmax_backward(A, dA, axis=-1):
        return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))

    s = np.sqrt(Q.shape[-1])
    _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s
    dQ = dZ @ K
    dK = dZ @ Q
    return dQ, dK, dV
""",
        "dK = dZ·Q",
    ),
    # Computes dV as A @ dOut instead of A^T @ dOut.
    "backward_ah_dV_no_transpose": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    def softmax_backward(A, dA, axis=-1):
        return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))

    s = np.sqrt(Q.shape[-1])
    _, A = mh.attention_head(Q, K, V, mask)
    dV = A @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s
    dQ = dZ @ K
    dK = np.swapaxes(dZ, -1, -2) @ Q
    return dQ, dK, dV
""",
        "dV = A·dOut",
    ),
    # Recomputes the attention weights without the mask, so blocked positions pass gradient.
    "backward_ah_unmasked_A": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    def softmax_backward(A, dA, axis=-1):
        return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))

    s = np.sqrt(Q.shape[-1])
    # the mask is a constant, it has no gradient, so the backward does not need it
    A = mh.softmax(Q @ np.swapaxes(K, -1, -2) / s)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s
    dQ = dZ @ K
    dK = np.swapaxes(dZ, -1, -2) @ Q
    return dQ, dK, dV
""",
        "gradient flows through blocked positions",
    ),
    # Transposes with .T, which reverses every axis and breaks (or scrambles) inputs with batch or
    # head axes.
    "backward_ah_dotT_2d_only": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    def softmax_backward(A, dA, axis=-1):
        return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))

    s = np.sqrt(Q.shape[-1])
    _, A = mh.attention_head(Q, K, V, mask)
    dV = A.T @ dOut
    dZ = softmax_backward(A, dOut @ V.T) / s
    dQ = dZ @ K
    dK = dZ.T @ Q
    return dQ, dK, dV
""",
        "not M.T (which reverses every axis",
    ),
    # Recomputes the softmax by hand without the fully-masked-row guard, so an all -inf row gives
    # NaN (and a RuntimeWarning).
    "backward_ah_naive_softmax": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    def softmax_backward(A, dA, axis=-1):
        return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))

    s = np.sqrt(Q.shape[-1])
    Z = Q @ np.swapaxes(K, -1, -2) / s
    if mask is not None:
        Z = Z + mask
    E = np.exp(Z - Z.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s
    dQ = dZ @ K
    dK = np.swapaxes(dZ, -1, -2) @ Q
    return dQ, dK, dV
""",
        "contains NaN",
    ),
    # dX follows only the query path, dropping the key and value paths dK W_k^T + dV W_v^T.
    "backward_mb_dX_only_Q": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
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
    dX = dQ @ W_q.T  # X -> Q -> output
    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),
                flat(merged).T @ flat(dOut))
""",
        "only the path through the queries",
    ),
    # Weight gradients keep the batch axes, shape (..., d_model, d_model), instead of being summed
    # over them.
    "backward_mb_weights_not_summed": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    def attention_head_backward(Q, K, V, dOut, mask=None):
        s = np.sqrt(Q.shape[-1])
        _, A = mh.attention_head(Q, K, V, mask)
        dV = np.swapaxes(A, -1, -2) @ dOut
        dA = dOut @ np.swapaxes(V, -1, -2)
        dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True)) / s
        return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV

    Q, K, V = mh.project_qkv(X, W_q, W_k, W_v)
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    if mask is not None and np.ndim(mask) > 2:
        mask = np.expand_dims(mask, -3)
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)
    merged = mh.merge_heads(heads)
    dH = mh.split_heads(dOut @ W_o.T, n_heads)
    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))
    Xt = np.swapaxes(X, -1, -2)
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (Xt @ dQ, Xt @ dK, Xt @ dV, np.swapaxes(merged, -1, -2) @ dOut)
""",
        "keep the batch axes",
    ),
    # dW_o is computed as dOut^T M, the transpose of M^T dOut.
    "backward_mb_dWo_transposed": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
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
    dW_o = flat(dOut).T @ flat(merged)
    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV), dW_o)
""",
        "W_O's gradient is transposed",
    ),
    # Backpropagates through each weight with W instead of W^T (dOut @ W_o and dQ @ W_q, ...).
    "backward_mb_W_not_transposed": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
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
    dH = mh.split_heads(dOut @ W_o, n_heads)
    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))
    flat = lambda M: M.reshape(-1, d_model)
    dX = dQ @ W_q + dK @ W_k + dV @ W_v
    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),
                flat(merged).T @ flat(dOut))
""",
        "instead of their transposes",
    ),
    # Merges the heads' gradients back with a bare reshape to X.shape instead of merge_heads (no
    # swap of the head and token axes).
    "backward_mb_reshape_no_transpose": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
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
    # back to (..., T, d_model)
    dQ, dK, dV = (G.reshape(X.shape) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))
    flat = lambda M: M.reshape(-1, d_model)
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),
                flat(merged).T @ flat(dOut))
""",
        "bare reshape",
    ),
    # Passes a per-sequence mask (..., T, T) to the heads without inserting a head axis, so its
    # batch axis lines up with the head axis.
    "backward_mb_mask_no_head_axis": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
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
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)  # the mask broadcasts
    merged = mh.merge_heads(heads)
    dH = mh.split_heads(dOut @ W_o.T, n_heads)
    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))
    flat = lambda M: M.reshape(-1, d_model)
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),
                flat(merged).T @ flat(dOut))
""",
        "no head axis",
    ),
    # Overwrites the caller's mask in place, replacing -inf with -1e9 (which also turns a fully
    # masked row into uniform weights).
    "backward_mb_mask_inplace_large_neg": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    def attention_head_backward(Q, K, V, dOut, mask=None):
        s = np.sqrt(Q.shape[-1])
        _, A = mh.attention_head(Q, K, V, mask)
        dV = np.swapaxes(A, -1, -2) @ dOut
        dA = dOut @ np.swapaxes(V, -1, -2)
        dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True)) / s
        return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV

    d_model = X.shape[-1]
    if mask is not None:
        mask[np.isneginf(mask)] = -1e9  # avoid -inf - -inf = nan in the gradients
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
    Q, K, V = mh.project_qkv(X, W_q, W_k, W_v)
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)
    merged = mh.merge_heads(heads)
    dH = mh.split_heads(dOut @ W_o.T, n_heads)
    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))
    flat = lambda M: M.reshape(-1, d_model)
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),
                flat(merged).T @ flat(dOut))
""",
        "modified an input in place",
    ),
    # Uses the mask in the forward pass but forgets to pass it to the heads' backward.
    "backward_mb_backward_unmasked": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
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
    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH))
    flat = lambda M: M.reshape(-1, d_model)
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),
                flat(merged).T @ flat(dOut))
""",
        "the heads' backward gets no mask",
    ),
}

CORRECT |= {
    # Builds the full per-row Jacobian diag(a) - a a^T and applies it with einsum, after moving
    # the softmax axis last.
    "backward_sb_jacobian_einsum": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    a = np.moveaxis(A, axis, -1)
    g = np.moveaxis(dA, axis, -1)
    n = a.shape[-1]
    J = a[..., :, None] * np.eye(n) - a[..., :, None] * a[..., None, :]  # diag(a) - a a^T
    dz = np.einsum("...ij,...j->...i", J, g)
    return np.moveaxis(dz, -1, axis)
""",
    ),
    # Every product written with einsum and the softmax backward inlined.
    "backward_ah_einsum": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    _, A = mh.attention_head(Q, K, V, mask)
    dA = np.einsum("...qv,...kv->...qk", dOut, V)
    dZ = A * (dA - np.einsum("...qk,...qk->...q", dA, A)[..., None])
    dZ = dZ / np.sqrt(Q.shape[-1])
    dQ = np.einsum("...qk,...kd->...qd", dZ, K)
    dK = np.einsum("...qk,...qd->...kd", dZ, Q)
    dV = np.einsum("...qk,...qv->...kv", A, dOut)
    return dQ, dK, dV
""",
    ),
    # Keeps the inputs' dtype throughout (float32 in, float32 out), multiplying by a dtype-matched
    # 1/sqrt(d_k).
    "backward_ah_float32_native": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    Q, K, V, dOut = (np.asarray(M) for M in (Q, K, V, dOut))
    dtype = np.result_type(Q, K, V, dOut)
    scale = np.asarray(1 / np.sqrt(Q.shape[-1]), dtype=dtype)
    _, A = mh.attention_head(Q, K, V, mask)
    A = A.astype(dtype, copy=False)
    Kt = np.swapaxes(K, -1, -2)
    dV = np.matmul(np.swapaxes(A, -1, -2), dOut)
    dA = np.matmul(dOut, np.swapaxes(V, -1, -2))
    dZ = A * (dA - (dA * A).sum(axis=-1, keepdims=True)) * scale
    dQ = np.matmul(dZ, np.swapaxes(Kt, -1, -2))
    dK = np.matmul(np.swapaxes(dZ, -1, -2), Q)
    return dQ.astype(dtype), dK.astype(dtype), dV.astype(dtype)
""",
    ),
    # Loops over heads with column slices (no split/merge, mask used as given per head) and sums
    # weight gradients with tensordot.
    "backward_mb_loop_over_heads": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    def head_backward(q, k, v, g, m):
        s = np.sqrt(q.shape[-1])
        _, A = mh.attention_head(q, k, v, m)
        dA = g @ np.swapaxes(v, -1, -2)
        dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True)) / s
        return dZ @ k, np.swapaxes(dZ, -1, -2) @ q, np.swapaxes(A, -1, -2) @ g

    d_model = X.shape[-1]
    d_k = d_model // n_heads
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    merged = np.zeros_like(Q)
    dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
    dM = dOut @ W_o.T
    for i in range(n_heads):  # head i owns columns i*d_k:(i+1)*d_k
        c = slice(i * d_k, (i + 1) * d_k)
        m = mask
        if m is not None and np.ndim(m) > X.ndim:  # a head axis at -3: this head's mask
            m = m[..., min(i, m.shape[-3] - 1), :, :]
        out, _ = mh.attention_head(Q[..., c], K[..., c], V[..., c], m)
        merged[..., c] = out
        dQ[..., c], dK[..., c], dV[..., c] = head_backward(
            Q[..., c], K[..., c], V[..., c], dM[..., c], m)
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    lead = tuple(range(X.ndim - 2))
    def total(A, B):
        return np.tensordot(A, B, axes=(lead + (X.ndim - 2,), lead + (X.ndim - 2,)))
    return dX, (total(X, dQ), total(X, dK), total(X, dV), total(merged, dOut))
""",
    ),
    # All products written as einsum (weight gradients over the flattened batch), the head axis
    # inserted with m[..., None, :, :].
    "backward_mb_einsum_weights": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    def attention_head_backward(Q, K, V, dOut, mask=None):
        _, A = mh.attention_head(Q, K, V, mask)
        dA = np.einsum("...qv,...kv->...qk", dOut, V)
        dZ = A * (dA - np.einsum("...qk,...qk->...q", dA, A)[..., None]) / np.sqrt(Q.shape[-1])
        return (np.einsum("...qk,...kd->...qd", dZ, K),
                np.einsum("...qk,...qd->...kd", dZ, Q),
                np.einsum("...qk,...qv->...kv", A, dOut))

    m = None if mask is None else np.asarray(mask)
    if m is not None and 2 < m.ndim <= X.ndim:
        m = m[..., None, :, :]
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in mh.project_qkv(X, W_q, W_k, W_v))
    merged = mh.merge_heads(mh.attention_head(Qh, Kh, Vh, m)[0])
    dH = mh.split_heads(np.einsum("...ti,ji->...tj", dOut, W_o), n_heads)
    dQ, dK, dV = map(mh.merge_heads, attention_head_backward(Qh, Kh, Vh, dH, m))
    dX = sum(np.einsum("...tj,ij->...ti", G, W) for G, W in ((dQ, W_q), (dK, W_k), (dV, W_v)))
    d = X.shape[-1]
    w = lambda A, B: np.einsum("ni,nj->ij", A.reshape(-1, d), B.reshape(-1, d))
    return dX, (w(X, dQ), w(X, dK), w(X, dV), w(merged, dOut))
""",
    ),
}

FRESH |= NAMED  # issue 33's misnamed, wrongly failed and uncaught slips
FRESH |= ROUND2  # issue 33's second fresh round
CORRECT |= NAMED_CORRECT

#: Those that also go through real nbgrader and grading kernels (tests/test_course.py): the
#: cases issue 23 lists and one slip per backward function; all of them are judged
#: in-process in tests/test_checks.py. (Each costs one notebook's run in the slow suite.)
THROUGH_KERNELS = (
    "merge_heads_reversed_head_order",
    "multi_head_self_attention_W_o_transposed",
    "tiled_attention_inverted_rescale",
    "cross_attention_causal_mask_added",
    "positional_encoding_sin_cos_halves",
    "softmax_global_max",
    "decode_step_cache_none_not_handled",
    "attention_scores_K_dot_T",
    "split_heads_hardcoded_transpose",
    "init_weights_fan_in_only",
    "attention_head_float32_compute",
    "multi_head_self_attention_mask_without_head_axis",
    "grouped_query_attention_mask_without_head_axis",
    "kv_cache_size_float_division",
    "grouped_query_attention_assert_not_valueerror",
    "tiled_attention_zero_block_size_zerodivision",
    "softmax_modifies_input",
    "attention_head_scales_Q_in_place",
    "backward_sb_no_rowsum",
    "backward_ah_dK_unscaled",
    "backward_mb_dWo_transposed",
)
