# %% [markdown]
# # Extension 1 — Rotary position embeddings (RoPE)
#
# Step 1 added a position vector to each token. Most current models instead
# **rotate** the queries and keys by an angle that grows with the position:
# then the score of a query at position $m$ and a key at position $n$ depends
# on their positions only through $m - n$.

# %% setup

# %% [markdown]
# Each pair of features $(x_{2i}, x_{2i+1})$ of a token at position $p$ is turned
# by the angle $p\,\theta_i$, with $\theta_i = \text{base}^{-2i/d}$:
#
# $$\begin{pmatrix} y_{2i} \\ y_{2i+1} \end{pmatrix} =
# \begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix}
# \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}$$
#
# ### Exercise 11.1 — `rotary_embedding`


# %% answer="rotary_embedding"
def rotary_embedding(X, positions=None, base=10000.0):
    """Rotate each pair (x[2i], x[2i+1]) of every token by position * base**(-2i/d).

    Parameters
    ----------
    X : ndarray of shape (..., T, d), d even
    positions : int ndarray broadcastable to (..., T), optional
        Default: arange(T).
    base : float

    Returns
    -------
    out : ndarray of shape (..., T, d)
    """
    ### BEGIN SOLUTION
    X = np.asarray(X)
    d = X.shape[-1]
    if d % 2:
        raise ValueError(f"d must be even to rotate pairs, but got d={d}.")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    theta = base ** (-np.arange(0, d, 2) / d)  # (d/2,)
    angle = pos[..., None] * theta  # (..., T, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    out = np.empty(X.shape, dtype=np.result_type(X, cos))
    out[..., 0::2] = X[..., 0::2] * cos - X[..., 1::2] * sin
    out[..., 1::2] = X[..., 0::2] * sin + X[..., 1::2] * cos
    return out
    ### END SOLUTION


# %% tests="rotary_embedding"
