# %% [markdown]
# # Extension 5 — Cross-attention
#
# In a translation model the decoder's tokens ask questions of the encoder's
# output: the **queries** come from one sequence $X$, the **keys and values**
# from another, $C$ (the "memory"). The weight matrix is $T_q \times T_k$.

# %% setup

# %% [markdown]
# $$Q = X W_Q, \quad K = C W_K, \quad V = C W_V, \qquad
# \operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q^{(i)} {K^{(i)}}^\top}{\sqrt{d_k}} + M\right) V^{(i)}$$
#
# ### Exercise 15.1 — `cross_attention`


# %% answer="cross_attention"
def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    """Multi-head attention with queries from X and keys and values from C.

    Parameters
    ----------
    X : ndarray of shape (..., T_q, d_model)
    C : ndarray of shape (..., T_k, d_model)
    W_q, W_k, W_v, W_o : ndarray of shape (d_model, d_model)
    n_heads : int
    mask : ndarray broadcastable to (..., T_q, T_k), optional

    Returns
    -------
    output : ndarray of shape (..., T_q, d_model)
    weights : ndarray of shape (..., n_heads, T_q, T_k)
    """
    ### BEGIN SOLUTION
    if X.shape[-1] % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {X.shape[-1]} and {n_heads}.")
    Qh = mh.split_heads(X @ W_q, n_heads)  # (..., h, T_q, d_k)
    Kh = mh.split_heads(C @ W_k, n_heads)  # (..., h, T_k, d_k)
    Vh = mh.split_heads(C @ W_v, n_heads)  # (..., h, T_k, d_k)
    if mask is not None and np.ndim(mask) > 2:
        mask = np.expand_dims(mask, -3)  # (..., 1, T_q, T_k)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
    ### END SOLUTION


# %% tests="cross_attention"
