# %% [markdown]
# # Extension 2 — Grouped-query attention
#
# Multi-head attention gives every query head its own key and value head;
# multi-query attention (capstone) shares one K/V head among all of them.
# **Grouped-query attention** sits in between: `n_kv_heads` K/V heads, each
# shared by a group of `n_heads // n_kv_heads` consecutive query heads.

# %% setup

# %% [markdown]
# $$\operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q^{(i)} {K^{(g(i))}}^\top}{\sqrt{d_k}} + M\right) V^{(g(i))},
# \qquad g(i) = \left\lfloor \frac{i}{n_{heads}/n_{kv}} \right\rfloor$$
#
# ### Exercise 12.1 — `grouped_query_attention`


# %% answer="grouped_query_attention"
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    """Grouped-query attention: query head i reads K/V head i // (n_heads // n_kv_heads).

    Parameters
    ----------
    X : ndarray of shape (..., T, d_model)
    W_q, W_o : ndarray of shape (d_model, d_model)
    W_k, W_v : ndarray of shape (d_model, n_kv_heads * d_k)
    n_heads, n_kv_heads : int
    mask : ndarray broadcastable to (..., T, T), optional

    Returns
    -------
    output : ndarray of shape (..., T, d_model)
    weights : ndarray of shape (..., n_heads, T, T)
    """
    ### BEGIN SOLUTION
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads must divide d_model and n_kv_heads must divide n_heads, but got "
            f"d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}."
        )
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)  # (..., h, T, d_k)
    Kh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)  # (..., h, T, d_k)
    Vh = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)  # (..., h, T, d_k)
    if mask is not None and np.ndim(mask) > 2:
        mask = np.expand_dims(mask, -3)  # (..., 1, T, T)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
    ### END SOLUTION


# %% tests="grouped_query_attention"
