# %% [markdown]
# # Extension 1 — Rotary position embeddings (RoPE)
#
# Step 1 added a position vector to each token. Most current models instead
# **rotate** the queries and keys by an angle that grows with the position:
# then the score of a query at position $m$ and a key at position $n$ depends
# on their positions only through $m - n$.
#
# 1. Turning one pair of numbers by an angle.
# 2. One angle per pair: the frequencies $\theta_i$.
# 3. The exercise: `rotary_embedding`.
# 4. What the rotation does to the song's tokens.
# 5. Why it works: scores that depend on $m - n$ only.

# %% setup
from mhsa_helpers.line_plots import turning_figure
from mhsa_helpers.plots import heatmap, heatmaps

song = mh.get_example("song")

# %% [markdown]
# ## 1. Turning one pair by an angle
#
# RoPE cuts a token vector of $d$ features into $d/2$ pairs and treats each pair
# $(x_{2i}, x_{2i+1})$ as a point in the plane. Turning a point counter-clockwise
# by an angle $\alpha$ is a product with a rotation matrix:
#
# $$\begin{pmatrix} y_0 \\ y_1 \end{pmatrix} =
# \begin{pmatrix} \cos\alpha & -\sin\alpha \\ \sin\alpha & \cos\alpha \end{pmatrix}
# \begin{pmatrix} x_0 \\ x_1 \end{pmatrix}$$
#
# The point keeps its distance to the origin: only its direction changes. Below,
# the point $(1, 0.5)$ turned by $\alpha = p \cdot 0.6$ for positions
# $p = 0 \ldots 5$.

# %%
def turn(x, alpha):
    """The point x = (x0, x1) turned counter-clockwise by alpha."""
    c, s = np.cos(alpha), np.sin(alpha)
    return np.array([c * x[0] - s * x[1], s * x[0] + c * x[1]])


x = np.array([1.0, 0.5])
points = np.array([turn(x, 0.6 * p) for p in range(6)])  # (6, 2)
turning_figure(points, "one pair at positions 0 … 5 (angle p·0.6)")
print("lengths:", np.round(np.linalg.norm(points, axis=1), 12))
print("turning by α then by β is turning by α + β:", np.allclose(turn(turn(x, 0.2), 0.5), turn(x, 0.7)))

# %% [markdown]
# ## 2. One frequency per pair
#
# Each pair turns at its own speed. Pair $i$ of a token at position $p$ turns by
# $p\,\theta_i$, with
#
# $$\theta_i = \text{base}^{-2i/d}, \qquad i = 0, \ldots, d/2 - 1,$$
#
# the same frequencies as the sinusoidal encoding \eqref{sinusoid} of step 1. The first pair
# turns by one radian per position; the last pair hardly moves, so it can still
# tell apart positions thousands of tokens apart. The heatmap shows
# $\cos(p\,\theta_i)$ for $d = 16$: fast stripes on the left, slow ones on the
# right.

# %%
d, base = 16, 10000.0
theta = base ** (-np.arange(0, d, 2) / d)  # (d/2,)
positions = np.arange(12)
angles = positions[:, None] * theta  # (T, d/2)
heatmap(
    np.cos(angles),
    [f"p={p}" for p in positions],
    [f"θ{i}" for i in range(d // 2)],
    "cos(p·θ_i): pair i of a token at position p",
)
print("θ:", np.array2string(theta, precision=4))
print("θ_0 = 1:", theta[0] == 1.0, "| decreasing:", bool(np.all(np.diff(theta) < 0)))

# %% [markdown]
# ## 3. The exercise
#
# Put sections 1 and 2 together for a whole array $X$ of shape $(\ldots, T, d)$:
# each pair $(x_{2i}, x_{2i+1})$ of a token at position $p$ is turned by the
# angle $p\,\theta_i$:
#
# $$\begin{pmatrix} y_{2i} \\ y_{2i+1} \end{pmatrix} =
# \begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix}
# \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}$$
#
# The pairs are **interleaved** (features 0 and 1, 2 and 3, …), and the rotation
# is counter-clockwise. `positions` defaults to `arange(T)`; otherwise it is an
# integer array that broadcasts to `X.shape[:-1]` (one position per token, for
# example `(T,)` or `(B, T)`). An odd $d$ has no pairs: raise a `ValueError` with
# a sentence saying so. Use numpy only; leave `X` unchanged.
#
# ### Exercise 11.1 — `rotary_embedding`


# %% answer="rotary_embedding"
def rotary_embedding(X, positions=None, base=10000.0):
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

# %% [markdown]
# ## 4. What the rotation does to the song
#
# The song's six tokens ($d_{model} = 4$, two pairs) before and after the
# rotation, with $\text{base} = 100$ so that the slow pair moves visibly. The
# first token, at position 0, is not turned at all; each token keeps its length.
# (The figures here use the course's `mh.rotary_embedding`, so they draw even
# before your function works.)

# %%
rotated = mh.rotary_embedding(song.X, base=100.0)
heatmaps([
    (song.X, song.tokens, song.features, "X"),
    (rotated, song.tokens, song.features, "rotary_embedding(X, base=100)"),
    (rotated - song.X, song.tokens, song.features, "what changed"),
])
print("position 0 unchanged:", np.array_equal(rotated[0], song.X[0]))
print(
    "lengths kept:",
    np.allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(song.X, axis=-1)),
)

# %% [markdown]
# ## 5. Scores that depend on $m - n$ only
#
# Rotate a query $q$ as if it stood at position $m$ and a key $k$ at position
# $n$. Their dot product is
#
# $$\langle R_{m} q,\; R_{n} k\rangle = q^\top R_{m}^\top R_{n}\, k
# = q^\top R_{n - m}\, k,$$
#
# because turning back by $m\theta_i$ and forward by $n\theta_i$ is turning by
# $(n - m)\theta_i$. So the score depends on the positions only through their
# difference: every diagonal of the matrix below (fixed $m - n$) holds one
# value. Attention then sees *how far apart* two tokens are, wherever they
# stand. An added position vector (step 1) does not do this.

# %%
rng = np.random.default_rng(0)
q, k = rng.normal(size=(2, 8))
T = 8
Q = mh.rotary_embedding(np.tile(q, (T, 1)))  # q at positions 0 … T-1
K = mh.rotary_embedding(np.tile(k, (T, 1)))  # k at positions 0 … T-1
S = Q @ K.T  # S[m, n] = score of q at m with k at n
heatmap(S, [f"m={m}" for m in range(T)], [f"n={n}" for n in range(T)], "RoPE: q at m · k at n")
diagonals = [np.ptp(np.diagonal(S, offset)) for offset in range(-T + 1, T)]
print("largest spread along a diagonal:", f"{max(diagonals):.1e}")
added = (np.tile(q, (T, 1)) + mh.positional_encoding(T, 8)) @ (
    np.tile(k, (T, 1)) + mh.positional_encoding(T, 8)
).T
spread = max(np.ptp(np.diagonal(added, o)) for o in range(-T + 1, T))
print("the same with an added positional encoding:", f"{spread:.2f}")

# %% [markdown]
# ### Try it: slide the song along the positions
#
# The slider moves the whole song to positions offset … offset + 5. The rotated
# tokens change; their scores do not. The picture uses your `rotary_embedding`
# once its check above passes (the line under the slider says which one is
# drawn). In the notebook, while its check fails, a box beside that line, *draw my failing
# functions anyway*, draws yours all the same.

# %%
from mhsa_helpers.widgets.rope import RopeWidget

RopeWidget(functions=globals())
