# %% [markdown]
# # Extension 4 — Tiled attention with an online softmax
#
# The attention matrix has $T_q \times T_k$ entries: for $T = 4096$ in float64
# that is 128 MiB per head. FlashAttention never builds it: it walks over the
# keys block by block, keeping for each query a running maximum $m$, a running
# sum $\ell$ and a running output, and rescales them when the maximum grows.

# %% setup

# %% [markdown]
# For each key block $B$: $S = Q K_B^\top/\sqrt{d_k}$,
#
# $$m' = \max(m, \max_j S_j), \quad \ell' = e^{m - m'}\ell + \sum_j e^{S_j - m'}, \quad
# O' = e^{m - m'} O + \sum_j e^{S_j - m'} V_j$$
#
# and at the end $\text{output} = O / \ell$.
#
# ### Exercise 14.1 — `tiled_attention`


# %% answer="tiled_attention"
def tiled_attention(Q, K, V, block_size, causal=False):
    """attention_head(Q, K, V, mask)[0], block by block over the keys (online softmax).

    Parameters
    ----------
    Q : ndarray of shape (..., T_q, d_k)
    K : ndarray of shape (..., T_k, d_k)
    V : ndarray of shape (..., T_k, d_v)
    block_size : int >= 1
    causal : bool

    Returns
    -------
    output : ndarray of shape (..., T_q, d_v)
    """
    ### BEGIN SOLUTION
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError(f"causal attention needs T_q == T_k, but got {T_q} and {T_k}.")
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full((*lead, T_q, 1), -np.inf)  # running max
    l = np.zeros((*lead, T_q, 1))  # running sum
    O = np.zeros((*lead, T_q, V.shape[-1]))  # running output
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)  # (..., T_q, e - s)
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
    ### END SOLUTION


# %% tests="tiled_attention"
