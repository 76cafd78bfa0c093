"""Right answers written unusually (einsum, loops, complex numbers, float32 kept): each
passes its visible and hidden checks.

Written fresh, without reading the checks (issue 23; the backward pass's the same
way), with issue 33's (:mod:`tests.support.named_slips`); the format of
:mod:`tests.support.fresh_mistakes` without a sentence.
"""

from tests.support.named_slips import NAMED_CORRECT
from tests.support.slips51 import SLIPS51_CORRECT

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

#: The backward pass (17_backward).
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
    # (issue 47) a K or V shared by the batch: its gradient summed back to its own shape
    dK, dV = (g.sum(axis=tuple(range(g.ndim - M.ndim))) for g, M in ((dK, K), (dV, V)))
    dK, dV = (
        g.sum(axis=tuple(k for k, n in enumerate(M.shape) if n == 1 and g.shape[k] != 1),
              keepdims=True)
        for g, M in ((dK, K), (dV, V))
    )
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
    # (issue 47) a K or V shared by the batch: its gradient summed back to its own shape
    dK, dV = (g.sum(axis=tuple(range(g.ndim - M.ndim))) for g, M in ((dK, K), (dV, V)))
    dK, dV = (
        g.sum(axis=tuple(k for k, n in enumerate(M.shape) if n == 1 and g.shape[k] != 1),
              keepdims=True)
        for g, M in ((dK, K), (dV, V))
    )
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

CORRECT |= NAMED_CORRECT  # issue 33's

CORRECT |= {  # issue 47's (ext)
    # llama's repeat_kv, adapted to any leading axes: the K/V heads kept as (..., T, n_kv, d_k),
    # each repeated by np.broadcast_to and a reshape, before the heads come in front of T.
    "grouped_query_attention_llama_repeat_kv": (
        "12_gqa",
        "grouped_query_attention",
        """def repeat_kv(x, n_rep):
    # (..., T, n_kv, d_k) -> (..., T, n_kv * n_rep, d_k), each K/V head n_rep times in a row
    if n_rep == 1:
        return x
    *lead, T, n_kv, d_k = x.shape
    x = np.broadcast_to(x[..., None, :], (*lead, T, n_kv, n_rep, d_k))
    return x.reshape(*lead, T, n_kv * n_rep, d_k)


def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads must divide d_model and n_kv_heads n_heads, got {d_model}, {n_heads}, "
            f"{n_kv_heads}"
        )
    d_k = d_model // n_heads
    *lead, T, _ = X.shape
    xq = (X @ W_q).reshape(*lead, T, n_heads, d_k)
    xk = repeat_kv((X @ W_k).reshape(*lead, T, n_kv_heads, d_k), n_heads // n_kv_heads)
    xv = repeat_kv((X @ W_v).reshape(*lead, T, n_kv_heads, d_k), n_heads // n_kv_heads)
    q, k, v = (np.swapaxes(a, -2, -3) for a in (xq, xk, xv))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        if 2 < np.ndim(mask) <= X.ndim:
            mask = np.expand_dims(mask, -3)
        scores = scores + mask
    m = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(m), m, 0.0))
    s = e.sum(axis=-1, keepdims=True)
    A = np.divide(e, s, out=np.zeros_like(e), where=s > 0)
    out = np.swapaxes(A @ v, -2, -3).reshape(*lead, T, d_model)
    return out @ W_o, A
""",
    ),
    # One memory for a batch of queries made explicit: C broadcast to X's batch axes first (more
    # memory, same result), and the mask rule counted on the broadcast shapes.
    "cross_attention_memory_broadcast_first": (
        "15_cross",
        "cross_attention",
        """def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError(f"n_heads = {n_heads} does not divide d_model = {d_model}")
    lead = np.broadcast_shapes(X.shape[:-2], C.shape[:-2])
    X = np.broadcast_to(X, (*lead, *X.shape[-2:]))
    C = np.broadcast_to(C, (*lead, *C.shape[-2:]))
    Qh = mh.split_heads(X @ W_q, n_heads)
    Kh = mh.split_heads(C @ W_k, n_heads)
    Vh = mh.split_heads(C @ W_v, n_heads)
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        mask = np.expand_dims(mask, -3)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
""",
    ),
}

CORRECT |= SLIPS51_CORRECT  # issue 51's (19_induction)
