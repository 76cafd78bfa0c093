# %% [markdown]
# # Extension 6 — Sliding-window masks
#
# With a causal mask, token $i$ attends to all $i + 1$ tokens before it and
# itself: the cost grows with the whole context. A **sliding window** lets each
# token see only itself and the `window - 1` tokens before it.

# %% setup

# %% [markdown]
# $$M_{ij} = \begin{cases} 0 & i - w < j \le i \\ -\infty & \text{otherwise} \end{cases}$$
#
# ### Exercise 16.1 — `sliding_window_mask`


# %% answer="sliding_window_mask"
def sliding_window_mask(seq_len, window):
    """Additive (T, T) mask: 0 where i - window < j <= i, -inf elsewhere.

    Returns
    -------
    mask : ndarray of shape (seq_len, seq_len)
    """
    ### BEGIN SOLUTION
    if window < 1:
        raise ValueError(f"window must be at least 1, but got {window}.")
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    return np.where((j <= i) & (j > i - window), 0.0, -np.inf)
    ### END SOLUTION


# %% tests="sliding_window_mask"
