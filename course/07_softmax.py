# %% [markdown]
# # Step 7 — The attention matrix
#
# The scores say how well each key fits each query, on any scale. The softmax
# turns each **row** (one query) into weights that are positive and sum to 1:
# how much of each token the query takes in.

# %% setup
from mhsa_helpers.plots import heads_figure, heatmaps

song = mh.get_example("song")
students = mh.get_example("students")


# %% [markdown]
# $$A_{ij} = \operatorname{softmax}(Z + M)_{ij}
# = \frac{e^{Z_{ij} + M_{ij} - m_i}}{\sum_{k} e^{Z_{ik} + M_{ik} - m_i}},
# \qquad m_i = \max_k \,(Z_{ik} + M_{ik})$$
#
# Subtracting the row maximum $m_i$ changes nothing mathematically (it cancels)
# but keeps $e^{x}$ from overflowing: $e^{1000}$ is `inf` in floating point,
# and `inf / inf` is NaN. One more case: a row that is **entirely** $-\infty$
# (every key masked) has $m_i = -\infty$ and $-\infty - (-\infty)$ is NaN; for
# such a row return zeros, with no NaN and no warning.
#
# ### Exercise 7.1 — `softmax`


# %% answer="softmax"
def softmax(Z, axis=-1):
    ### BEGIN SOLUTION
    m = np.max(Z, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)  # fully masked rows: shift by 0
    E = np.exp(Z - m)
    s = E.sum(axis=axis, keepdims=True)
    return E / np.where(s > 0, s, 1.0)
    ### END SOLUTION


# %% tests="softmax"

# %% [markdown]
# ## The song's attention per head, causal
#
# Each row is one query; the masked future is hatched, with no number: its
# weights are exactly 0, not small learned weights.

# %%
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
Z = mh.attention_scores(mh.split_heads(Q, 2), mh.split_heads(K, 2))  # (h, T, T)
A = mh.softmax(Z + mh.causal_mask(song.T))
heads_figure(A, song.tokens, song.tokens, "A = softmax(Z + M), per head", vmin=0, vmax=1, mask=mh.causal_mask(song.T))
print("row sums, head 1:   ", A[0].sum(axis=-1).round(6))
print("column sums, head 1:", A[0].sum(axis=-2).round(3))

# %% [markdown]
# ### Try it: heads and masks
#
# Each row of each head's attention matrix is one query's distribution over the
# keys. The explorer runs **your** `softmax` once its check passes (the figures
# above use the course's, `mh.softmax`, so that they are right whatever your
# code does); the *query* view draws one query's weights per head as lines to
# every key.

# %%
from mhsa_helpers.widgets.explorer import Explorer

Explorer(functions=globals(), step=7, controls=("heads", "mask", "query", "view"))

# %% [markdown]
# ## Common misconception: "each column adds up to 1"
#
# One source article says that after the softmax *the cells in each column add
# up to 1*. It is each **row**: a query distributes its attention over the
# keys. The column sums above are whatever they are; only the row sums are 1.
#
# ## The students: $R' = \operatorname{softmax}(R/\sqrt{7})$

# %%
R_prime = mh.softmax(mh.attention_scores(students.X, students.X))
print("row sums:", R_prime.sum(axis=1).round(6))
print(f"every weight lies between {R_prime.min():.2f} and {R_prime.max():.2f}")

# %% [markdown]
# Nearly uniform: every student spreads attention almost evenly. The interests
# are fractions, so their dot products are small, and $\sqrt{7}$ shrinks them
# further; the softmax of nearly equal scores is nearly uniform.
#
# ## Sharper attention: larger scores
#
# The article uses no learned weights: $Q = K = X$, in effect $W_Q = W_K = I$.
# In a trained layer, $W_Q$ and $W_K$ set how large the scores are. The
# simplest change counts every interest $s$ times as strongly,
# $W_Q = W_K = s\,I$: then $QK^\top = (sX)(sX)^\top = s^2\,XX^\top$, so every
# score is **multiplied** by $s^2$ (not increased by it: adding the same number
# to a whole row would change no weight at all). Multiplying the scores by
# $s^2 > 1$ acts like dividing the softmax *temperature* by $s^2$: it does not
# change the order of the scores in a row (who ranks first stays first); it
# makes the differences that were already there visible. (Choosing *which*
# interests matter takes different weights per interest, or heads: see the capstone.)
# The data are unchanged (Monica · Chandler is still the article's product).

# %%
s = mh.examples.STUDENT_SELECTIVE_SCALE
W = s * np.eye(len(students.features))  # (7, 7)
Z_selective = mh.attention_scores(students.X @ W, students.X @ W)
R_scaled = mh.attention_scores(students.X, students.X)  # R / √7
print(f"scores with W = {s:g}·I equal {s**2:g} × R/√7:", np.allclose(Z_selective, s**2 * R_scaled))
A_selective = mh.softmax(Z_selective)
heatmaps(
    [
        (R_prime, students.tokens, students.tokens, "R' = softmax(R / √7): W_Q = W_K = I"),
        (A_selective, students.tokens, students.tokens, f"W_Q = W_K = {s:g}·I"),
    ],
    vmin=0,
    vmax=1,
)
print(f"W_Q = W_K = {s:g}·I: weights between {A_selective.min():.2f} and {A_selective.max():.2f}")
for i, name in enumerate(students.tokens):
    j = max((j for j in range(len(students.tokens)) if j != i), key=lambda j: A_selective[i, j])
    print(
        f"{name:>8}: besides themselves, most to {students.tokens[j]} "
        f"({R_prime[i, j]:.2f} -> {A_selective[i, j]:.2f})"
    )

# %% [markdown]
# ## Why subtract the maximum
#
# Scores of a few hundred are ordinary in a big model. Without the shift:

# %%
z = np.array([1000.0, 1001.0, 999.0])
with np.errstate(all="ignore"):
    naive = np.exp(z) / np.exp(z).sum()
print("naive: ", naive)
print("stable:", mh.softmax(z).round(4))
print("fully masked row:", mh.softmax(np.full(3, -np.inf)))
