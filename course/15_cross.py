# %% [markdown]
# # Extension 5 — Cross-attention
#
# In a translation model the decoder's tokens ask questions of the encoder's
# output: the **queries** come from one sequence $X$, the **keys and values**
# from another, $C$ (the "memory"). The weight matrix is $T_q \times T_k$.
#
# 1. Who asks, who answers: the roles of $X$ and $C$.
# 2. Shapes: a $T_q \times T_k$ attention matrix.
# 3. Masking the memory.
# 4. The exercise, then the layer live.

# %% setup
from mhsa_helpers.plots import heads_figure, heatmap
from mhsa_helpers.widgets.cross import CrossWidget

x = mh.get_example("simple")  # "The cat sat on the mat": the sequence that asks
c = mh.get_example("question")  # "Where did the cat sit ?": the memory it reads

# %% [markdown]
# ## 1. Who asks, who answers
#
# Self-attention projects one sequence three times. Cross-attention projects
# **two**: the queries from $X$, the keys and values from $C$,
#
# $$Q = X W_Q, \qquad K = C W_K, \qquad V = C W_V .$$
#
# Each output row is a mixture of $C$'s values, one for each token of $X$: it
# has as many rows as $X$, whatever the length of $C$. A worked check: the
# first 4 tokens of the simple sentence read the whole question.

# %%
X = x.X[:4]  # (T_q = 4, 8): "The cat sat on"
Q, K, V = X @ c.W_q, c.X @ c.W_k, c.X @ c.W_v
print("Q:", Q.shape, " K:", K.shape, " V:", V.shape)
assert Q.shape[0] == 4 and K.shape[0] == V.shape[0] == c.T
print(f"✓ {Q.shape[0]} queries from X, {K.shape[0]} keys and values from C")

# %% [markdown]
# ## 2. A $T_q \times T_k$ attention matrix
#
# $$A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right)
# \in \mathbb{R}^{T_q \times T_k}, \qquad \text{output} = A V \in \mathbb{R}^{T_q \times d_v}$$
#
# Row $i$ says how much token $i$ of $X$ takes from each position of $C$; every
# row sums to 1 over the positions of $C$ (not over the queries). One head,
# $d_k = 8$:

# %%
A = mh.softmax(Q @ K.T / np.sqrt(Q.shape[-1]))  # (4, 6)
heatmap(A, x.tokens[:4], c.tokens, "one head: X (rows) reads C (columns)", vmin=0, vmax=1)
print("shape:", A.shape, " row sums:", A.sum(axis=-1).round(12))
assert A.shape == (4, c.T) and np.allclose(A.sum(axis=-1), 1)
print("✓ rows sum to 1 over the memory")

# %% [markdown]
# ## 3. Masking the memory
#
# There is no causal mask here: $C$ is already complete (the encoder has read
# the whole input), so every query may look at every position of it. What is
# masked is **padding**: when the memories of a batch have different lengths,
# `padding_mask(lengths, T_k)` of shape $(B, 1, T_k)$ hides the padded
# positions of each $C$, for every query and every head:
#
# $$M_{b,\,i,\,j} = \begin{cases} 0 & j < \text{length}_b \\ -\infty & \text{otherwise.}\end{cases}$$
#
# A worked check: the memory cut to its first 3 positions.

# %%
M = mh.padding_mask(3, c.T)  # (1, T_k)
A3 = mh.softmax(Q @ K.T / np.sqrt(Q.shape[-1]) + M)
heatmap(A3, x.tokens[:4], c.tokens, "memory of length 3", vmin=0, vmax=1, mask=M)
assert np.all(A3[:, 3:] == 0) and np.allclose(A3.sum(axis=-1), 1)
print("✓ no weight on the padded positions of C; rows still sum to 1")

# %% [markdown]
# ## 4. The exercise
#
# $$\operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q^{(i)} {K^{(i)}}^\top}{\sqrt{d_k}} + M\right) V^{(i)},
# \qquad \operatorname{CrossAttn}(X, C) = \big[\operatorname{head}_1 \,\big|\, \cdots \,\big|\,
# \operatorname{head}_h\big]\, W_O$$
#
# with $Q = XW_Q$, $K = CW_K$, $V = CW_V$ split into $h$ heads of
# $d_k = d_{model}/h$ columns, each head scaled by its own $\sqrt{d_k}$. The
# mask broadcasts against $(\ldots, T_q, T_k)$ and follows step 9's rule: with
# at most as many axes as `X` (or `C`, whichever has more) it has no head axis
# and is the same for every head (a mask with batch axes gets one:
# `np.expand_dims(mask, -3)`); with one axis
# more, its axis −3 is the head axis, of size 1 or `n_heads`: add it as it is. Raise
# a `ValueError` that says what is wrong when `n_heads` does not divide
# `d_model`. `cross_attention(X, X, …)` must be the self-attention of step 9.
# The course's functions of earlier steps are yours to use; the checks treat
# warnings as errors and fail a function that changes its inputs.
#
# ### Exercise 15.1 — `cross_attention`


# %% answer="cross_attention"
def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    ### BEGIN SOLUTION
    if X.shape[-1] % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {X.shape[-1]} and {n_heads}.")
    Qh = mh.split_heads(X @ W_q, n_heads)  # (..., h, T_q, d_k)
    Kh = mh.split_heads(C @ W_k, n_heads)  # (..., h, T_k, d_k)
    Vh = mh.split_heads(C @ W_v, n_heads)  # (..., h, T_k, d_k)
    if mask is not None and 2 < np.ndim(mask) <= max(np.ndim(X), np.ndim(C)):  # no head axis
        mask = np.expand_dims(mask, -3)  # (..., 1, T_q, T_k)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
    ### END SOLUTION


# %% tests="cross_attention"

# %% [markdown]
# ## The whole layer, two heads, a batch of two memories
#
# The course's reference on a batch: the simple sentence reads the question
# (all 6 positions), then the same sentence reads the question cut to 2
# positions. Each head has its own $T_q \times T_k$ matrix; the padded
# columns get no weight in any head.

# %%
XB = np.stack([x.X, x.X])  # (2, T_q, 8)
CB = np.stack([c.X, c.X])  # (2, T_k, 8)
lengths = np.array([c.T, 2])
M = mh.padding_mask(lengths, c.T)  # (B, 1, T_k)
out, A = mh.cross_attention(XB, CB, 2 * c.W_q, 2 * c.W_k, c.W_v, c.W_o, 2, M)
print("output:", out.shape, " weights:", A.shape)
for b in range(2):
    heads_figure(A[b], x.tokens, c.tokens, f"memory length {lengths[b]}", vmin=0, vmax=1, mask=M[b])
assert np.all(A[1, :, :, 2:] == 0)
same = mh.cross_attention(x.X, x.X, c.W_q, c.W_k, c.W_v, c.W_o, 2)
mhsa = mh.multi_head_self_attention(x.X, c.W_q, c.W_k, c.W_v, c.W_o, 2)
print("cross_attention(X, X) is self-attention:", all(np.allclose(a, b) for a, b in zip(same, mhsa)))

# %% [markdown]
# ### Live: move the slider
#
# How many positions of the question are real (the rest is padding). The
# picture uses **your** `cross_attention` once its check passes (the line
# above the picture says which function drew it), and the reference until
# then. In the notebook, while its check fails, a box beside that line, *draw my failing
# functions anyway*, draws yours all the same.

# %%
CrossWidget(functions=globals())
