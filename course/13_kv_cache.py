# %% [markdown]
# # Extension 3 — Decoding with a KV cache
#
# A model that writes text produces one token at a time. Recomputing causal
# attention over the whole sequence for every new token repeats work: the keys
# and values of earlier tokens never change. A **KV cache** keeps them, and each
# step only computes the new token's query, key and value.

# %% setup

# %% [markdown]
# $$K' = \begin{pmatrix} K \\ x W_K \end{pmatrix}, \quad V' = \begin{pmatrix} V \\ x W_V \end{pmatrix},
# \quad y = \operatorname{concat}_i\!\left(\operatorname{softmax}\!\left(\frac{q^{(i)} {K'^{(i)}}^\top}{\sqrt{d_k}}\right) V'^{(i)}\right) W_O$$
#
# ### Exercise 13.1 — `decode_step`


# %% answer="decode_step"
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    """One decoding step: append x's key and value to the cache, attend, project.

    Parameters
    ----------
    x : ndarray of shape (..., d_model)
    cache : (K, V), each of shape (..., n_heads, t, d_k), or None
    W_q, W_k, W_v, W_o : ndarray of shape (d_model, d_model)
    n_heads : int

    Returns
    -------
    y : ndarray of shape (..., d_model)
    cache : (K', V'), each of shape (..., n_heads, t + 1, d_k)
    """
    ### BEGIN SOLUTION
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {d_model} and {n_heads}.")
    row = x[..., None, :]  # (..., 1, d_model)
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))  # (..., h, 1, d_k)
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-2)  # (..., h, t + 1, d_k): new arrays
        v = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, k, v)  # (..., h, 1, d_k)
    return mh.merge_heads(out)[..., 0, :] @ W_o, (k, v)
    ### END SOLUTION


# %% tests="decode_step"
