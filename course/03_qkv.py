# %% [markdown]
# # Step 3 — Queries, keys and values
#
# Each token plays three roles, each through its own learned projection:
#
# * its **query** $q_i$: what it is looking for;
# * its **key** $k_j$: what it offers to be found by;
# * its **value** $v_j$: what it passes on when it is attended to.
#
# For all tokens at once:

# %% setup
from mhsa_helpers.plots import check_shape, heatmaps

song = mh.get_example("song")


# %% [markdown]
# $$Q = X W_Q, \qquad K = X W_K, \qquad V = X W_V$$
#
# with $X$ of shape $(\dots, T, d_{model})$ and each $W$ of shape
# $(d_{model}, d_{model})$, so $Q$, $K$, $V$ are $(\dots, T, d_{model})$. Leading
# batch axes ($\dots$) should just work: `@` broadcasts them.
#
# ### Exercise 3.1 — `project_qkv`


# %% answer="project_qkv"
def project_qkv(X, W_q, W_k, W_v):
    ### BEGIN SOLUTION
    return X @ W_q, X @ W_k, X @ W_v
    ### END SOLUTION


# %% tests="project_qkv"

# %% [markdown]
# ## Q, K and V of the song
#
# (Computed with the course's reference, the function your answer is checked
# against.)

# %%
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
T, d_model = song.X.shape
check_shape(Q, (T, d_model))
heatmaps([(M, song.tokens, song.features, name) for name, M in zip("QKV", (Q, K, V))])
print("q1 =", Q[0].round(2))

# %% [markdown]
# ## Common misconception: the article's Q and Kᵀ tables
#
# The source article prints a $Q$ table next to its $X$ and $W_Q$. Its first
# row is what $XW_Q$ gives (above). The other five rows are not:

# %%
from mhsa_helpers.examples import SONG_ARTICLE_KT, SONG_ARTICLE_Q

for i, token in enumerate(song.tokens):
    print(
        f"q{i + 1} ({token:>5}): X @ W_Q = {np.array2string(Q[i], precision=2):>28}   "
        f"article: {np.array2string(SONG_ARTICLE_Q[i], precision=2):>28}   "
        f"max diff {np.abs(Q[i] - SONG_ARTICLE_Q[i]).max():.2f}"
    )

# %% [markdown]
# Its $K^\top$ table is worse: no $W_K$ at all turns this $X$ into those keys.
# The best possible $W_K$, found by least squares, still misses:

# %%
K_article = SONG_ARTICLE_KT.T  # (6, 4)
W_best, *_ = np.linalg.lstsq(song.X, K_article, rcond=None)
print(f"largest error of the best W_K: {np.abs(song.X @ W_best - K_article).max():.2f}")

# %% [markdown]
# That is why the course chooses its own $W_K$, $W_V$ and $W_O$ and shows only
# numbers computed from stated inputs. Always check a worked example by
# recomputing it.
