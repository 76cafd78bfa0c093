# ruff: noqa: E501  (learners' answers, kept as they wrote them)
"""Slips found unnamed by the second fresh round of issue 33 (and the first round's last
generic ones), as learners wrote them; the format of :mod:`tests.support.fresh_mistakes`."""

from tests.support.answer_parts import SOFTMAX_BACKWARD

ROUND2 = {
    # The exponent uses the pair's index i instead of 2i.
    "positional_encoding_exponent_without_2": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    i = np.arange((d_model + 1) // 2)[None, :]
    angle = pos / 10000 ** (i / d_model)
    PE = np.zeros((seq_len, d_model))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return PE
""",
        "the exponent misses its factor 2",
    ),
    # Q, K and V divided by √d_model.
    "project_qkv_scaled_by_sqrt_d_model": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    s = np.sqrt(X.shape[-1])
    return X @ W_q / s, X @ W_k / s, X @ W_v / s
""",
        "belongs to the scores",
    ),
    # The heads summed instead of concatenated.
    "merge_heads_summed": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    return H.sum(axis=-3)
""",
        "the heads are summed",
    ),
    # The row maxima taken without keepdims.
    "softmax_max_without_keepdims": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    m = np.max(Z, axis=axis)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(Z - m)
    s = e.sum(axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)
""",
        "keepdims=True is missing",
    ),
    # −∞ clamped to −1e9: a fully masked row comes out uniform.
    "softmax_minus_infinity_clamped": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    Z = np.maximum(Z, -1e9)
    e = np.exp(Z - Z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""",
        "comes out uniform",
    ),
    # `if mask:` on an array.
    "attention_head_if_mask": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    Z = mh.attention_scores(Q, K)
    if mask:
        Z = Z + mask
    A = mh.softmax(Z)
    return A @ V, A
""",
        "`if mask is not None:`",
    ),
    # K and V not given their head axis of size 1 (mh.attention_head; named apart from the
    # fresh round's own slip of that name, which this one used to replace in FRESH).
    "multi_query_attention_kv_without_head_axis_with_mh": (
        "10_capstone",
        "multi_query_attention",
        """def _m(mask, X):
    if mask is None:
        return None
    return np.expand_dims(mask, -3) if np.ndim(mask) <= X.ndim else mask

def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Q = mh.split_heads(X @ W_q, n_heads)
    K, V = X @ W_k, X @ W_v
    out, A = mh.attention_head(Q, K, V, _m(mask, X))
    return mh.merge_heads(out) @ W_o, A
""",
        "head axis of size 1",
    ),
    # The test of multi_query the wrong way round.
    "kv_cache_size_multi_query_reversed": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    if not multi_query:
        return 2 * seq_len * (d_model // n_heads)
    return 2 * seq_len * d_model
""",
        "the wrong way round",
    ),
    # K/V head index i // n_kv_heads.
    "grouped_query_attention_divided_by_n_kv_heads": (
        "12_gqa",
        "grouped_query_attention",
        """def _check(X, n_heads, n_kv_heads):
    if X.shape[-1] % n_heads:
        raise ValueError("n_heads must divide d_model.")
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("n_kv_heads must divide n_heads.")
def _m(mask, X):
    if mask is None:
        return None
    return np.expand_dims(mask, -3) if np.ndim(mask) <= X.ndim else mask

def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    _check(X, n_heads, n_kv_heads)
    idx = np.minimum(np.arange(n_heads) // n_kv_heads, n_kv_heads - 1)
    Q = mh.split_heads(X @ W_q, n_heads)
    K = np.take(mh.split_heads(X @ W_k, n_kv_heads), idx, axis=-3)
    V = np.take(mh.split_heads(X @ W_v, n_kv_heads), idx, axis=-3)
    out, A = mh.attention_head(Q, K, V, _m(mask, X))
    return mh.merge_heads(out) @ W_o, A
""",
        "i // g",
    ),
    # Scores divided by √d_v.
    "tiled_attention_scaled_by_sqrt_d_v": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError("block_size must be an integer of at least 1.")
    Tq, Tk = Q.shape[-2], K.shape[-2]
    scale = 1.0 / np.sqrt(V.shape[-1])
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(lead + (Tq, 1), -np.inf)
    l = np.zeros(lead + (Tq, 1))
    O = np.zeros(lead + (Tq, V.shape[-1]))
    qi = np.arange(Tq)[:, None]
    for s in range(0, Tk, block_size):
        Kb, Vb = K[..., s:s + block_size, :], V[..., s:s + block_size, :]
        S = (Q @ np.swapaxes(Kb, -1, -2)) * scale
        if causal:
            kj = np.arange(s, s + Kb.shape[-2])[None, :]
            S = np.where(kj > qi, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        safe = np.where(np.isneginf(m_new), 0.0, m_new)
        alpha = np.exp(m - safe)
        P = np.exp(S - safe)
        l = alpha * l + P.sum(axis=-1, keepdims=True)
        O = alpha * O + P @ Vb
        m = m_new
    return O / l
""",
        "divided by √d_v",
    ),
    # A slice whose negative start wraps round.
    "sliding_window_mask_slice_wraps": (
        "16_sliding_window",
        "sliding_window_mask",
        """def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError("window must be at least 1.")
    M = np.full((seq_len, seq_len), -np.inf)
    for i in range(seq_len):
        M[i, i - window + 1:i + 1] = 0.0
    return M
""",
        "max(0, i − window + 1)",
    ),
    # Central differences, one entry at a time: right in float64, lost in float32.
    "backward_sb_central_differences_float32": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    with np.errstate(divide="ignore"):
        Z = np.log(A)
    h = 1e-6
    dZ = np.zeros(A.shape)
    for idx in np.ndindex(A.shape):
        if not np.isfinite(Z[idx]):
            continue
        Zp = Z.copy(); Zp[idx] += h
        Zm = Z.copy(); Zm[idx] -= h
        dZ[idx] = ((mh.softmax(Zp, axis) - mh.softmax(Zm, axis)) * dA).sum() / (2 * h)
    return dZ
""",
        "right on float64 inputs and wrong on these float32",
    ),
    # dC = dOut·W_O, W_O not transposed.
    "backward_mb_dC_not_transposed": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def _ahb(Q, K, V, dOut, mask=None):
    s = np.sqrt(Q.shape[-1])
    Z = Q @ np.swapaxes(K, -1, -2) / s
    if mask is not None:
        Z = Z + mask
    A = mh.softmax(Z)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True))
    return dZ @ K / s, np.swapaxes(dZ, -1, -2) @ Q / s, dV

def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    if mask is not None and np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    d = X.shape[-1]
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    H, _ = mh.attention_head(Qh, Kh, Vh, mask)
    C = mh.merge_heads(H)
    dW_o = C.reshape(-1, d).T @ dOut.reshape(-1, d)
    dC = dOut @ W_o
    dH = mh.split_heads(dC, n_heads)
    dQh, dKh, dVh = _ahb(Qh, Kh, Vh, dH, mask)
    dQ, dK, dV = mh.merge_heads(dQh), mh.merge_heads(dKh), mh.merge_heads(dVh)
    X2 = X.reshape(-1, d)
    dW_q, dW_k, dW_v = (X2.T @ G.reshape(-1, d) for G in (dQ, dK, dV))
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (dW_q, dW_k, dW_v, dW_o)
""",
        "dC = dOut·W_Oᵀ",
    ),
    # The mask added to dZ too.
    "backward_ah_mask_added_to_dZ": (
        "17_backward",
        "attention_head_backward",
        SOFTMAX_BACKWARD
        + """def attention_head_backward(Q, K, V, dOut, mask=None):
    s = np.sqrt(Q.shape[-1]); _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s
    if mask is not None:
        dZ = dZ + mask
    return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV
""",
        "the mask is added to dZ",
    ),
    # dZ divided by √d_v instead of √d_k.
    "backward_ah_scaled_by_sqrt_d_v": (
        "17_backward",
        "attention_head_backward",
        SOFTMAX_BACKWARD
        + """def attention_head_backward(Q, K, V, dOut, mask=None):
    s = np.sqrt(V.shape[-1]); _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s
    return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV
""",
        "divided by √d_v",
    ),
    # The layer right, its own head backward with dV = A·dOut.
    "backward_mb_own_head_dV_not_transposed": (
        "17_backward",
        "multi_head_self_attention_backward",
        SOFTMAX_BACKWARD
        + """def attention_head_backward(Q, K, V, dOut, mask=None):
    s = np.sqrt(Q.shape[-1]); _, A = mh.attention_head(Q, K, V, mask)
    dV = A @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s
    return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV

def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    d = X.shape[-1]
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    if mask is not None and np.ndim(mask) > 2 and np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)
    C = mh.merge_heads(heads)

    def summed(A, B):
        return A.reshape(-1, d).T @ B.reshape(-1, d)

    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, mh.split_heads(dOut @ W_o.T, n_heads), mask))
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (summed(X, dQ), summed(X, dK), summed(X, dV), summed(C, dOut))
""",
        "in the heads' backward",
    ),
    # einsum '...td,...te->de' to sum over the batch.
    "backward_mb_einsum_drops_batch": (
        "17_backward",
        "multi_head_self_attention_backward",
        SOFTMAX_BACKWARD
        + """def attention_head_backward(Q, K, V, dOut, mask=None):
    s = np.sqrt(Q.shape[-1]); _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s
    return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV

def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    Q, K, V = (np.einsum('...td,de->...te', X, W) for W in (W_q, W_k, W_v))
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)
    C = mh.merge_heads(heads)
    dH = mh.split_heads(np.einsum('...te,de->...td', dOut, W_o), n_heads)
    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))
    dX = sum(np.einsum('...te,de->...td', G, W) for G, W in ((dQ, W_q), (dK, W_k), (dV, W_v)))
    wg = lambda A, B: np.einsum('...td,...te->de', A, B)
    return dX, (wg(X, dQ), wg(X, dK), wg(X, dV), wg(C, dOut))
""",
        "np.einsum cannot sum over '...'",
    ),
    # softmax_backward(A, dOut): dOut in dA's place.
    "backward_ah_dOut_to_softmax_backward": (
        "17_backward",
        "attention_head_backward",
        SOFTMAX_BACKWARD
        + """def attention_head_backward(Q, K, V, dOut, mask=None):
    s = np.sqrt(Q.shape[-1]); _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dZ = softmax_backward(A, dOut) / s
    return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV
""",
        "softmax_backward is given dOut",
    ),
    # masked_fill(−1e9), as ports of PyTorch code do: a fully blocked query reads the values.
    "multi_head_self_attention_masked_fill": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    Z = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        m = np.asarray(mask)
        if m.ndim <= X.ndim: m = np.expand_dims(m, -3)
        Z = np.where(np.isneginf(m), -1e9, Z)
    A = mh.softmax(Z)
    return mh.merge_heads(A @ Vh) @ W_o, A
""",
        "gets weights that sum to 1",
    ),
    # A softmax without the guard: NaN where every key is blocked.
    "grouped_query_attention_nan_row": (
        "12_gqa",
        "grouped_query_attention",
        """def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    if n_heads % n_kv_heads: raise ValueError('n_kv_heads must divide n_heads')
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh = mh.split_heads(Q, n_heads)
    Kh, Vh = (np.repeat(mh.split_heads(M, n_kv_heads), n_heads // n_kv_heads, axis=-3) for M in (K, V))
    Z = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        m = np.asarray(mask)
        if m.ndim <= X.ndim: m = np.expand_dims(m, -3)
        Z = Z + m
    with np.errstate(all="ignore"):
        E = np.exp(Z - Z.max(-1, keepdims=True))
        A = E / E.sum(-1, keepdims=True)
    return mh.merge_heads(A @ Vh) @ W_o, A
""",
        "every key is blocked gets NaN",
    ),
    # −1e9 added where the mask has −∞: a fully blocked query passes gradient.
    "backward_ah_masked_fill": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    d_k = Q.shape[-1]
    Z = Q @ K.swapaxes(-1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + np.where(np.isneginf(mask), -1e9, mask)
    A = mh.softmax(Z)
    dV = A.swapaxes(-1, -2) @ dOut
    dA = dOut @ V.swapaxes(-1, -2)
    dZ = A * (dA - (dA * A).sum(-1, keepdims=True)) / np.sqrt(d_k)
    return dZ @ K, dZ.swapaxes(-1, -2) @ Q, dV
""",
        "still passes gradient",
    ),
    # masked_fill(−1e9) in the layer's backward.
    "backward_mb_masked_fill": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))
    d_k = Qh.shape[-1]
    Z = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(d_k)
    if mask is not None:
        m = np.asarray(mask)
        if m.ndim <= X.ndim: m = np.expand_dims(m, -3)
        Z = np.where(np.isneginf(m), -1e9, Z)
    A = mh.softmax(Z)
    M = mh.merge_heads(A @ Vh)
    dM = dOut @ W_o.T
    dH = mh.split_heads(dM, n_heads)
    dVh = A.swapaxes(-1, -2) @ dH
    dA = dH @ Vh.swapaxes(-1, -2)
    dZ = A * (dA - (dA * A).sum(-1, keepdims=True)) / np.sqrt(d_k)
    dQ, dK, dV = (mh.merge_heads(G) for G in (dZ @ Kh, dZ.swapaxes(-1, -2) @ Qh, dVh))
    flat = lambda A_: A_.reshape(-1, A_.shape[-1])
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, tuple(flat(X).T @ flat(G) for G in (dQ, dK, dV)) + (flat(M).T @ flat(dOut),)
""",
        "still passes gradient",
    ),
}
