"""Answers for the live widgets of notebooks 13 and 14: right ones and one-slip ones."""

DECODE = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-2)
        v = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, k, v)
    return mh.merge_heads(out)[..., 0, :] @ W_o, (k, v)
"""


PREPENDING = DECODE.replace("[cache[0], k]", "[k, cache[0]]").replace(
    "[cache[1], v]", "[v, cache[1]]"
)


TILED = """
def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full((*lead, T_q, 1), -np.inf)
    l = np.zeros((*lead, T_q, 1))
    O = np.zeros((*lead, T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        shift = np.where(np.isneginf(m_new), 0.0, m_new)
        P = np.exp(S - shift)
        r = np.exp(m - shift)
        l = l * r + P.sum(axis=-1, keepdims=True)
        O = O * r + P @ V[..., s:e, :]
        m = m_new
    return np.divide(O, l, out=np.zeros_like(O), where=l > 0)
"""


NOT_RESCALED = TILED.replace("l = l * r +", "l = l +")
