# %% [markdown]
# # Step 9 — Concatenating the heads, and the output projection
#
# Every head has produced a $(T, d_k)$ output. Put them side by side again
# (`merge_heads`, the inverse of `split_heads`) to get $(T, d_{model})$, then
# mix the heads with one more learned matrix, $W_O$:

# %% setup
from mhsa_helpers.plots import heads_figure, heatmaps

song = mh.get_example("song")
students = mh.get_example("students")


# %% [markdown]
# $$\operatorname{MHSA}(X) = \big[\operatorname{head}_1 \,\big|\, \cdots \,\big|\,
# \operatorname{head}_h\big]\, W_O, \qquad
# \operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q^{(i)} K^{(i)\top}}{\sqrt{d_k}} + M\right) V^{(i)}$$
#
# with $Q = XW_Q$, $K = XW_K$, $V = XW_V$ split into heads of $d_k = d_{model}/h$
# columns. Without $W_O$ each output column would come from one head only; $W_O$
# lets every output feature draw on all heads.
#
# Write the whole layer. You may paste your functions from steps 3–8 into the
# cell, or use the course's versions of earlier steps (`mh.split_heads`, …), but
# not `mh.multi_head_self_attention` itself: the checks notice.
#
# **The mask's head axis.** The scores have shape $(\ldots, h, T, T)$, one axis
# more than `X` $(\ldots, T, d_{model})$. Count the mask's axes against `X`'s:
#
# - with **at most as many axes as `X`**, such as `causal_mask(T)` $(T, T)$ or
#   one mask per sequence $(B, T, T)$, the mask has no head axis and is the same
#   for every head: if it has batch axes, give it a head axis,
#   `np.expand_dims(mask, -3)` of shape $(\ldots, 1, T, T)$, so that its batch
#   axis is not lined up with the heads;
# - with **one axis more than `X`**, its axis −3 is already the head axis, of
#   size 1 (the same for every head, e.g. $(B, 1, T, T)$ or $(B, 1, 1, T)$) or
#   $h$ (one mask per head, e.g. $(h, T, T)$ for `X` of shape $(T, d_{model})$):
#   add it to the scores as it is.
#
# ### Exercise 9.1 — `multi_head_self_attention`


# %% answer="multi_head_self_attention"
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    ### BEGIN SOLUTION
    Q, K, V = mh.project_qkv(X, W_q, W_k, W_v)  # (..., T, d_model) each, step 3
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))  # (..., h, T, d_k), step 4
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):  # no head axis: give it one
        mask = np.expand_dims(mask, -3)  # (..., 1, T, T): the same for every head
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)  # (..., h, T, d_k), (..., h, T, T), step 8
    return mh.merge_heads(heads) @ W_o, A  # (..., T, d_model), step 4 undone
    ### END SOLUTION


# %% tests="multi_head_self_attention"

# %% [markdown]
# ## The song, through the whole layer (2 heads, causal)
#
# Per-head attention, the concatenated head outputs, and the final output next
# to the input.

# %%
h = 2
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
heads, A = mh.attention_head(*(mh.split_heads(M, h) for M in (Q, K, V)), mh.causal_mask(song.T))
concat = mh.merge_heads(heads)  # (T, d_model)
output = concat @ song.W_o  # (T, d_model)
heads_figure(A, song.tokens, song.tokens, "attention per head", vmin=0, vmax=1, mask=mh.causal_mask(song.T))
heatmaps([
    (concat, song.tokens, song.features, "concatenated heads"),
    (output, song.tokens, song.features, "output = concat · W_O"),
    (song.X, song.tokens, song.features, "input X"),
])
ref_out, _ = mh.multi_head_self_attention(song.X, *song.weights, h, mh.causal_mask(song.T))
print("step by step == mh.multi_head_self_attention:", np.allclose(output, ref_out))

# %% [markdown]
# ### Try it: the whole layer
#
# Change the number of heads and the mask; the last panel compares the chosen
# query token's output embedding with its input embedding.

# %%
from mhsa_helpers.widgets.explorer import Explorer

Explorer(functions=globals(), step=9, controls=("heads", "mask", "query"))

# %% [markdown]
# ## Forgetting $W_O$
#
# Without the output projection, column $c$ of the output (counting columns
# from 0, as numpy does) comes from head $\lfloor c / d_k \rfloor + 1$ alone
# (heads count from 1, as in step 4: head 1 is `heads[0]`, columns $0$ to
# $d_k - 1$); with it, every column mixes both heads:

# %%
d_k = concat.shape[-1] // h
for c in range(concat.shape[-1]):
    j = c // d_k  # numpy index of the head: head j + 1
    same = np.allclose(concat[:, c], heads[j][:, c % d_k])
    print(f"without W_O, column {c} is column {c % d_k} of head {j + 1} (heads[{j}]) alone:", same)
print(
    "with W_O, column 0 =",
    "".join(
        f"{w:.1f}·concat[:, 0]" if i == 0 else f" {'-' if w < 0 else '+'} {abs(w):.1f}·concat[:, {i}]"
        for i, w in enumerate(song.W_o[:, 0])
    ),
)
