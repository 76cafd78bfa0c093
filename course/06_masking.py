# %% [markdown]
# # Step 6 — Masking
#
# Sometimes a token must not look at some others:
#
# * **causal** (a language model predicting the next word): token $i$ may only
#   look at tokens $j \le i$, never at the future;
# * **padding** (a batch of sentences of different lengths, padded to one
#   length $T$): no token may look at the padding positions.
#
# Both are done with an **additive mask** $M$: $0$ where attention is allowed,
# $-\infty$ where it is blocked, **added to the scores** before the softmax
# (step 7), where $e^{-\infty} = 0$ turns a blocked score into a weight of 0.

# %% setup
from mhsa_helpers.plots import check_shape, heatmaps

song = mh.get_example("song")
students = mh.get_example("students")


# %% [markdown]
# ## The causal mask
#
# $$M_{ij} = \begin{cases} 0 & j \le i \quad\text{(key at or before the query)}\\
# -\infty & j > i \quad\text{(key in the future)}\end{cases}$$
#
# Rows are queries $i$, columns keys $j$: the $-\infty$ fill the triangle
# **above the main diagonal**.
#
# ### Exercise 6.1 — `causal_mask`


# %% answer="causal_mask"
def causal_mask(seq_len):
    ### BEGIN SOLUTION
    i = np.arange(seq_len)[:, None]  # (T, 1) queries
    j = np.arange(seq_len)[None, :]  # (1, T) keys
    return np.where(j > i, -np.inf, 0.0)
    ### END SOLUTION


# %% tests="causal_mask"

# %% [markdown]
# ## Common misconception: the mask's orientation
#
# One source article draws the mask as the **anti-triangle** (the corner below
# the anti-diagonal). That would let *"List"* see the whole sentence and stop
# *"song"* from seeing itself and most of the past. Side by side with the right
# one (hatched = $-\infty$, blocked):

# %%
T = song.T
i, j = np.indices((T, T))
article = np.where(i + j > T - 1, -np.inf, 0.0)
heatmaps(
    [
        (mh.causal_mask(T), song.tokens, song.tokens, "right: −∞ where key j > query i"),
        (article, song.tokens, song.tokens, "wrong (article): anti-triangle"),
    ],
    xlabel="key j",
    ylabel="query i",
);


# %% [markdown]
# ## The padding mask
#
# A batch holds sentences of different lengths, padded to $T$. For a sentence
# with `length` real tokens, every query may look at key positions
# $j < \text{length}$ only:
#
# $$M_{j} = \begin{cases} 0 & j < \text{length}\\ -\infty & j \ge \text{length}\end{cases}$$
#
# The mask blocks **keys** (columns), so it has shape
# `lengths.shape + (1, seq_len)`: the axis of size 1 stands for the queries and
# broadcasts against scores of shape $(\dots, T_q, T_k)$. An int `lengths` gives
# shape `(1, seq_len)`.
#
# ### Exercise 6.2 — `padding_mask`


# %% answer="padding_mask"
def padding_mask(lengths, seq_len):
    ### BEGIN SOLUTION
    lengths = np.asarray(lengths)
    j = np.arange(seq_len)  # (T,) key positions
    return np.where(j >= lengths[..., None, None], -np.inf, 0.0)  # (..., 1, T)
    ### END SOLUTION


# %% tests="padding_mask"

# %% [markdown]
# ## Masking the scores of the song
#
# Head 1's scores with the causal mask added, and with a padding mask as if
# only the first 4 tokens were real:

# %%
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
Z = mh.attention_scores(mh.split_heads(Q, 2), mh.split_heads(K, 2))[0]  # head 1, (T, T)
heatmaps([
    (Z + mh.causal_mask(T), song.tokens, song.tokens, "Z + causal mask"),
    (Z + mh.padding_mask(4, T), song.tokens, song.tokens, "Z + padding mask (length 4)"),
])
check_shape(mh.padding_mask(np.array([6, 4, 2]), T), (3, 1, T))

# %% [markdown]
# ### Try it: none, causal, padding
#
# Switch the mask and move the padded length; hatched cells are $-\infty$
# (blocked), white mask cells are 0 (allowed). The explorer runs **your**
# `causal_mask` and `padding_mask` once their checks pass.

# %%
from mhsa_helpers.widgets.explorer import Explorer

Explorer(functions=globals(), step=6, controls=("mask", "query"))

# %% [markdown]
# ## Common misconception: "replacing key values with −∞"
#
# One source article says the mask replaces **key values** with $-\infty$. It
# cannot: a key is shared by every query, so a key cannot be "future" for one
# query and "past" for another; and $-\infty$ inside one key turns that key's
# whole **column** of scores (every query's score for it) into $\pm\infty$ or
# NaN. What is masked is the **score** $Z_{ij}$ of one query–key pair:

# %%
K_bad = K.copy()
K_bad[5] = -np.inf  # hide the last token "by its key"
with np.errstate(all="ignore"):
    Z_bad = Q @ K_bad.T / np.sqrt(Q.shape[-1])
print("scores that became NaN:", int(np.isnan(Z_bad).sum()), "of", Z_bad.size)
print("columns hit (keys):", sorted({int(j) for j in np.nonzero(~np.isfinite(Z_bad))[1]}))
print("scores that became ±inf:", int(np.isinf(Z_bad).sum()), "of", Z_bad.size)
