# %% [markdown]
# # Step 5 — The score matrix $Z$
#
# How much should token $i$ attend to token $j$? Compare what $i$ looks for
# (its query $q_i$) with what $j$ offers (its key $k_j$) by a dot product. All
# pairs at once are one matrix product, one row per query, one column per key.

# %% setup
from mhsa_helpers.plots import check_shape, heads_figure, heatmaps

song = mh.get_example("song")
students = mh.get_example("students")


# %% [markdown]
# $$Z = \frac{Q K^\top}{\sqrt{d_k}}, \qquad Z_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}}$$
#
# $Q$ is $(\dots, T_q, d_k)$, $K$ is $(\dots, T_k, d_k)$ and $Z$ is
# $(\dots, T_q, T_k)$. $d_k$ is the **last axis of $Q$**: in a multi-head layer,
# the size of one head, not $d_{model}$ and not the number of tokens. Transpose
# only the last two axes of $K$ (`np.swapaxes(K, -1, -2)`), so batch axes keep
# working.
#
# ### Exercise 5.1 — `attention_scores`


# %% answer="attention_scores"
def attention_scores(Q, K):
    ### BEGIN SOLUTION
    d_k = Q.shape[-1]
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (..., T_q, T_k)
    ### END SOLUTION


# %% tests="attention_scores"

# %% [markdown]
# ## Six students: who gets on with whom
#
# In the student analogy there are no learned weights: $Q = K = V$ is the
# matrix of six students' interests in seven characteristics, so $d_k = 7$.
# $R = QQ^\top$ says how much each pair has in common. The source article
# works out one entry, Monica · Chandler, term by term:

# %%
X = students.X
R = X @ X.T
m, c = students.tokens.index("Monica"), students.tokens.index("Chandler")
terms = [f"{a:g}×{b:g}" for a, b in zip(X[m], X[c]) if a * b != 0]
print("Monica · Chandler =", " + ".join(terms), f"= {R[m, c]:.3f}")
heatmaps([
    (R, students.tokens, students.tokens, "R = Q·Qᵀ"),
    (mh.attention_scores(X, X), students.tokens, students.tokens, "Z = Q·Qᵀ / √7"),
]);

# %% [markdown]
# (The article rounds that sum to one decimal.)
#
# ## The song, head by head
#
# With 2 heads, each head has $d_k = 2$ columns of $Q$ and $K$:

# %%
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
Qh, Kh = mh.split_heads(Q, 2), mh.split_heads(K, 2)  # (h, T, d_k)
Z = mh.attention_scores(Qh, Kh)  # (h, T, T)
check_shape(Z, (2, 6, 6))
heads_figure(Z, song.tokens, song.tokens, "Z per head (rows: queries, columns: keys)");

# %% [markdown]
# ## Common misconception: dividing by $\sqrt{T}$
#
# One source article divides by the square root of the **sequence length**.
# The reason for the division is different: a dot product of $d_k$ independent
# numbers of variance 1 has variance $d_k$, so its spread grows like
# $\sqrt{d_k}$ however many tokens there are. Dividing by $\sqrt{d_k}$ brings it
# back to 1; dividing by $\sqrt{T}$ leaves it depending on the head size and
# makes it shrink as the text gets longer. Measured on random queries and keys:

# %%
rng = np.random.default_rng(0)
print(f"{'d_k':>4} {'T':>5} | std of Q·Kᵀ | /√d_k | /√T")
for d_k in (4, 64):
    for T in (8, 512):
        q, k = rng.normal(size=(T, d_k)), rng.normal(size=(T, d_k))
        raw = q @ k.T
        print(
            f"{d_k:>4} {T:>5} | {raw.std():11.2f} | {(raw / np.sqrt(d_k)).std():5.2f} | "
            f"{(raw / np.sqrt(T)).std():5.2f}"
        )
