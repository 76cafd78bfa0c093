# %% [markdown]
# # Extension 2 — Grouped-query attention
#
# Multi-head attention gives every query head its own key and value head;
# multi-query attention (capstone) shares one K/V head among all of them.
# **Grouped-query attention** sits in between: `n_kv_heads` K/V heads, each
# shared by a group of `n_heads // n_kv_heads` consecutive query heads.
#
# 1. Why share: the KV cache.
# 2. Which query head reads which K/V head.
# 3. The exercise.
# 4. What sharing does to the attention, live.

# %% setup
from mhsa_helpers.plots import heads_figure, heatmaps
from mhsa_helpers.widgets.gqa import GQAWidget

q = mh.get_example("question")

# %% [markdown]
# ## 1. Why share K and V: the cache
#
# When a model generates text it keeps the keys and values of every earlier
# token. With $h$ heads of width $d_k$ that is $2\,T\,h\,d_k = 2\,T\,d_{model}$
# numbers per layer; with $n_{kv}$ K/V heads only
#
# $$\text{cache} = 2\,T\,n_{kv}\,d_k .$$
#
# The queries are not cached, so they keep all $h$ heads. For a model of
# $d_{model} = 4096$ with 32 heads and 4096 tokens:

# %%
T, d_model, h = 4096, 4096, 32
d_k = d_model // h
for kv in (32, 8, 4, 1):
    numbers = 2 * T * kv * d_k
    print(f"n_kv_heads = {kv:>2}: {numbers:>11,} numbers per layer, {numbers * 2 / 2**20:6.1f} MiB in float16")
assert 2 * T * h * d_k == mh.kv_cache_size(T, d_model, h)  # n_kv_heads = h: multi-head
assert 2 * T * 1 * d_k == mh.kv_cache_size(T, d_model, h, multi_query=True)  # 1: multi-query
print("✓ n_kv_heads = h and n_kv_heads = 1 give the capstone's kv_cache_size")

# %% [markdown]
# ## 2. Which query head reads which K/V head
#
# Heads count from 1, as in the figures. $W_K$ and $W_V$ now have
# $n_{kv}\,d_k$ columns: K/V head $j$ owns columns $(j-1)\,d_k$ to
# $j\,d_k - 1$ of $XW_K$ and of $XW_V$ (as in step 4). The query heads are cut
# into $n_{kv}$ groups of $h / n_{kv}$ **consecutive** heads, and every head of
# group $j$ reads K/V head $j$: query head $i$ reads K/V head
#
# $$g(i) = \left\lceil \frac{i}{h / n_{kv}} \right\rceil, \qquad i = 1, \ldots, h . \label{gqa-group}$$
#
# In numpy the head axis counts from 0: index `i` on the query heads' axis
# reads index `i // (h // n_kv)` on the K/V heads' axis. Split $XW_K$ into
# $n_{kv}$ heads, then repeat each head $h / n_{kv}$ times along the head axis
# (`np.repeat(..., h // n_kv, axis=-3)`); `np.tile` would pair index `i` with
# index `i % n_kv` instead, a different (wrong) pairing. The figure marks which
# K/V head each of 8 query heads reads.

# %%
h = 8
panels = []
for kv in (8, 2, 1):
    reads = np.zeros((h, kv))
    reads[np.arange(h), np.arange(h) // (h // kv)] = 1  # row i (query head i + 1) reads column i // (h // kv)
    panels.append((reads, [f"q{i + 1}" for i in range(h)], [f"kv{j + 1}" for j in range(kv)], f"n_kv_heads = {kv}"))
heatmaps(panels, vmin=0, vmax=1, annotate=False);

# %% [markdown]
# A worked check on the question sentence with $h = 4$ and $n_{kv} = 2$: the
# repeated key heads 1 and 2 are one and the same, and so are 3 and 4.

# %%
h, kv = 4, 2
d_k = q.d_model // h
rng = np.random.default_rng(0)
W_k = mh.init_weights(q.d_model, kv * d_k, rng)  # (8, 4): two K/V heads of width 2
Kh = np.repeat(mh.split_heads(q.X @ W_k, kv), h // kv, axis=-3)  # (4, T, 2)
print("K shape, per query head:", Kh.shape)
assert np.array_equal(Kh[0], Kh[1]) and np.array_equal(Kh[2], Kh[3])
assert not np.array_equal(Kh[1], Kh[2])
print("✓ query heads 1 and 2 read K/V head 1; heads 3 and 4 read K/V head 2")

# %% [markdown]
# ## 3. The exercise
#
# $$\operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q^{(i)} {K^{(g(i))}}^\top}{\sqrt{d_k}} + M\right) V^{(g(i))},
# \qquad g(i) = \left\lceil \frac{i}{n_{heads}/n_{kv}} \right\rceil$$
#
# (heads counted from 1, as in \eqref{gqa-group} of section 2), then concatenate the heads and
# project with $W_O$, as in step 9. The scale is each head's own $\sqrt{d_k}$
# (not $\sqrt{d_{model}}$, not the width of $XW_K$). The mask follows step 9's rule: with at most as many axes as `X` it has
# no head axis and is the same for every head (if it has batch axes, give it one:
# `np.expand_dims(mask, -3)`); with one axis more, its axis −3 is the head axis,
# of size 1 or `n_heads` (one mask per query head): add it as it is. Raise a `ValueError` that says
# what is wrong when `n_kv_heads` does not divide `n_heads`, or `n_heads` does
# not divide `d_model`. The course's functions of earlier steps are yours to
# use (`mh.split_heads`, `mh.attention_head`, `mh.merge_heads`, …); the checks
# treat warnings as errors and fail a function that changes its inputs.
#
# ### Exercise 12.1 — `grouped_query_attention`


# %% answer="grouped_query_attention"
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    ### BEGIN SOLUTION
    d_model = X.shape[-1]
    if d_model % n_heads or n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads must divide d_model and n_kv_heads must divide n_heads, but got "
            f"d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}."
        )
    group = n_heads // n_kv_heads
    Qh = mh.split_heads(X @ W_q, n_heads)  # (..., h, T, d_k)
    Kh = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), group, axis=-3)  # (..., h, T, d_k)
    Vh = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), group, axis=-3)  # (..., h, T, d_k)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):  # no head axis: give it one
        mask = np.expand_dims(mask, -3)  # (..., 1, T, T)
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
    ### END SOLUTION


# %% tests="grouped_query_attention"

# %% [markdown]
# ## 4. What sharing does to the attention
#
# With fewer K/V heads, the query heads of one group compare their queries
# with the **same** keys. Their weights still differ (each has its own
# queries), but their outputs are mixtures of the same values. Below, the
# course's reference on the question sentence (causal), from 4 K/V heads
# (multi-head) down to 1 (multi-query): the last two lines confirm those
# two ends.

# %%
h = 4
rng = np.random.default_rng(1)
W_k4 = mh.init_weights(q.d_model, q.d_model, rng)  # K/V head j (from 1): columns 2j - 2, 2j - 1
W_v4 = mh.init_weights(q.d_model, q.d_model, rng)
causal = mh.causal_mask(q.T)
for kv in (4, 2, 1):
    cols = kv * (q.d_model // h)
    _, A = mh.grouped_query_attention(q.X, 3 * q.W_q, 3 * W_k4[:, :cols], W_v4[:, :cols], q.W_o, h, kv, causal)
    heads_figure(A, q.tokens, q.tokens, f"{h} query heads, n_kv_heads = {kv}", vmin=0, vmax=1, mask=causal,
                 titles=[f"q head {i + 1} · kv {i // (h // kv) + 1}" for i in range(h)])
mha = mh.multi_head_self_attention(q.X, q.W_q, W_k4, W_v4, q.W_o, h, causal)
gqa = mh.grouped_query_attention(q.X, q.W_q, W_k4, W_v4, q.W_o, h, h, causal)
print("n_kv_heads = n_heads is multi-head attention:", all(np.allclose(a, b) for a, b in zip(mha, gqa)))
mqa = mh.multi_query_attention(q.X, q.W_q, W_k4[:, :2], W_v4[:, :2], q.W_o, h, causal)
gqa = mh.grouped_query_attention(q.X, q.W_q, W_k4[:, :2], W_v4[:, :2], q.W_o, h, 1, causal)
print("n_kv_heads = 1 is multi-query attention:     ", all(np.allclose(a, b) for a, b in zip(mqa, gqa)))

# %% [markdown]
# ### Live: move the slider
#
# The number of K/V heads for 4 query heads on the question sentence; each
# panel is framed in the colour of the K/V head its query head reads. The
# picture uses **your** `grouped_query_attention` once its check passes (the
# line above the picture says which function drew it), and the reference until
# then. In the notebook, while its check fails, a box beside that line, *draw my failing
# functions anyway*, draws yours all the same.

# %%
GQAWidget(functions=globals())
