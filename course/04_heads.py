# %% [markdown]
# # Step 4 — Dividing into heads
#
# Several heads let the layer attend in several ways at once (one head may
# follow grammar, another topic). Instead of $h$ separate sets of weights,
# the usual implementation cuts $Q$, $K$ and $V$ into $h$ slices of
# $d_k = d_{model}/h$ columns: **head $i$ owns columns
# $(i-1)\,d_k$ to $i\,d_k - 1$** (heads count from 1, as in every figure; in
# Python the first head is `H[0]`).

# %% setup
from mhsa_helpers.plots import check_shape, heads_figure

song = mh.get_example("song")


# %% [markdown]
# $$Q = \big[\,Q^{(1)} \;\big|\; Q^{(2)} \;\big|\; \cdots \;\big|\; Q^{(h)}\,\big],
# \qquad Q^{(i)} = Q_{[:,\; (i-1) d_k : i\, d_k]} \in \mathbb{R}^{T \times d_k}$$
#
# `split_heads` returns all heads stacked as an array of shape
# $(\dots, h, T, d_k)$: reshape the last axis into $(h, d_k)$, giving
# $(\dots, T, h, d_k)$, **then swap the $T$ and $h$ axes**. `merge_heads` is its
# inverse: it puts the columns back side by side, $(\dots, T, h\,d_k)$.
#
# ### Exercise 4.1 — `split_heads`


# %% answer="split_heads"
def split_heads(M, n_heads):
    ### BEGIN SOLUTION
    *lead, T, d_model = M.shape
    d_k = d_model // n_heads
    return M.reshape(*lead, T, n_heads, d_k).swapaxes(-2, -3)  # (..., h, T, d_k)
    ### END SOLUTION


# %% tests="split_heads"

# %% [markdown]
# ### Exercise 4.2 — `merge_heads`
#
# $$\operatorname{merge}(H) = \big[\,H^{(1)} \;\big|\; \cdots \;\big|\; H^{(h)}\,\big]
# \in \mathbb{R}^{T \times h d_k}$$


# %% answer="merge_heads"
def merge_heads(H):
    ### BEGIN SOLUTION
    *lead, h, T, d_k = H.shape
    return H.swapaxes(-2, -3).reshape(*lead, T, h * d_k)  # (..., T, h*d_k)
    ### END SOLUTION


# %% tests="merge_heads"

# %% [markdown]
# ## The song's queries in two heads
#
# Each head sees all six tokens, but only its own $d_k = 2$ columns.

# %%
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
Qh = mh.split_heads(Q, 2)  # (h, T, d_k)
check_shape(Qh, (2, 6, 2))
heads_figure(Qh, song.tokens, ["c0", "c1"], "Q split into 2 heads");

# %% [markdown]
# ### Try it: the number of heads
#
# Pick a number of heads (only divisors of $d_{model}$ are offered) and a query
# token. The explorer runs **your** `split_heads` from this notebook once its
# check passes (until then the reference, and the status line says why). The
# *query* view shows Q, K and V with each head's columns in its colour.

# %%
from mhsa_helpers.widgets.explorer import Explorer

Explorer(functions=globals(), step=4, controls=("heads", "query", "view"))

# %% [markdown]
# ## Common mistake: reshaping without the transpose
#
# `Q.reshape(h, T, d_k)` has the right shape, but it reads the numbers in
# memory order, row after row, so "head 1" gets the first **three tokens** with
# all four columns folded in, not all six tokens with columns 0–1:

# %%
wrong = Q.reshape(2, 6, 2)
print("right head 1, token 'ideas':", Qh[0, 2], " = Q[2, 0:2] =", Q[2, 0:2])
print("wrong head 1, row 2:        ", wrong[0, 2], " = Q[1, 0:2], the token 'new'")
print("same shape:", wrong.shape == Qh.shape, "| same values:", np.allclose(wrong, Qh))

# %% [markdown]
# ## Checking the round trip
#
# `merge_heads` must undo `split_heads` for any number of heads that divides
# $d_{model}$:

# %%
for h in song.head_choices:
    back = mh.merge_heads(mh.split_heads(Q, h))
    print(f"h = {h}: d_k = {Q.shape[-1] // h}, round trip exact: {np.array_equal(back, Q)}")
