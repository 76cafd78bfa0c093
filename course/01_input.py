# %% [markdown]
# # Step 1 — Defining the input
#
# Attention works on a **sequence of vectors**, one per token. Here the
# sentence *"List new ideas for a song"* is six tokens, each a vector of
# $d_{model} = 4$ numbers, stacked as the rows of a matrix $X$ of shape
# $(T, d_{model}) = (6, 4)$ (values from the source article).

# %% setup
from mhsa_helpers.plots import check_shape, heatmap

song = mh.get_example("song")

# %%
T, d_model = song.X.shape
print(f"T = {T} tokens, d_model = {d_model}")
heatmap(song.X, song.tokens, song.features, "X: one row per token");

# %% [markdown]
# ## Why positions must be added
#
# Self-attention compares every token with every other token, and nothing in
# that comparison knows *where* a token is: shuffle the rows of $X$ and the
# output rows are shuffled the same way, nothing more. The cell below checks
# this on the song example with the course's reference layer.

# %%
perm = [5, 2, 0, 1, 4, 3]
out, _ = mh.multi_head_self_attention(song.X, *song.weights, n_heads=2)
out_shuffled, _ = mh.multi_head_self_attention(song.X[perm], *song.weights, n_heads=2)
print("max |out[perm] - out(X[perm])| =", np.abs(out[perm] - out_shuffled).max())


# %% [markdown]
# So "song ideas list for new a" would mean the same as "List new ideas for a
# song". The fix of *Attention Is All You Need* is to add to each token vector a
# **positional encoding** that depends only on the position $pos$:
#
# $$PE_{pos,\,2i} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right), \qquad
# PE_{pos,\,2i+1} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right) \label{sinusoid}$$
#
# Columns $2i$ and $2i+1$ share one frequency; low columns change fast with the
# position, high columns slowly. Positions and columns start at 0.
#
# Your function must also work when $d_{model}$ is **odd** (the check tries one
# odd size). Then the last column, $d_{model} - 1$, is even: it is the sine of
# the last pair, $PE_{pos,\,d_{model}-1} = \sin\!\left(pos / 10000^{(d_{model}-1)/d_{model}}\right)$,
# and that pair has no cosine column, so there is one more sine column than
# cosine columns (\eqref{sinusoid}, kept to the columns that exist).
#
# ### Exercise 1.1 — `positional_encoding`


# %% answer="positional_encoding"
def positional_encoding(seq_len, d_model):
    ### BEGIN SOLUTION
    pos = np.arange(seq_len)[:, None]  # (T, 1)
    two_i = np.arange(0, d_model, 2)[None, :]  # (1, ceil(d_model / 2))
    angle = pos / 10000 ** (two_i / d_model)  # (T, ceil(d_model / 2))
    PE = np.zeros((seq_len, d_model))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return PE
    ### END SOLUTION


# %% tests="positional_encoding"

# %% [markdown]
# ## What the encoding looks like
#
# Each row is a position, each column a feature (drawn with the course's
# reference `mh.positional_encoding`, the same function your answer is checked
# against).

# %%
PE = mh.positional_encoding(50, 16)
heatmap(PE, annotate=False, title="positional encoding, 50 positions x 16 features", xlabel="feature", ylabel="position");

# %% [markdown]
# An odd $d_{model}$, with the course's encoding: the last column is the sine
# of the last pair.

# %%
T_odd, d_odd = 4, 5
PE_odd = mh.positional_encoding(T_odd, d_odd)
last = np.sin(np.arange(T_odd) / 10000 ** ((d_odd - 1) / d_odd))
print(f"d_model = {d_odd}: {PE_odd[:, 0::2].shape[1]} sine columns, {PE_odd[:, 1::2].shape[1]} cosine columns")
print(f"column {d_odd - 1} == sin(pos / 10000**({d_odd - 1}/{d_odd})):", np.allclose(PE_odd[:, -1], last))

# %% [markdown]
# ## The input of the layer: $X + PE$
#
# The song's vectors with their positions added. Now the same word at two
# different places gets two different vectors.

# %%
X_in = song.X + mh.positional_encoding(T, d_model)
check_shape(X_in, (T, d_model))
heatmap(X_in, song.tokens, song.features, "X + PE");
