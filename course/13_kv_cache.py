# %% [markdown]
# # Extension 3 — Decoding with a KV cache
#
# A model that writes text produces one token at a time. Recomputing causal
# attention over the whole sequence for every new token repeats work: the keys
# and values of earlier tokens never change. A **KV cache** keeps them, and each
# step only computes the new token's query, key and value.

# %% setup
from mhsa_helpers.plots import heads_figure, heatmaps

song = mh.get_example("song")

# %% [markdown]
# ## 1. Row $t$ of causal attention only needs tokens $0 \dots t$
#
# With the causal mask, query $t$ sees keys $0 \dots t$ and nothing after:
#
# $$y_t = \operatorname{MHSA}(X_{0..t})_t = \operatorname{MHSA}(X)_t \label{prefix}$$
#
# so the output for token $t$ is the same whether the layer is run on the whole
# sentence or only on its first $t+1$ tokens. Below, the song's causal weights
# (2 heads), and the check: each row computed from its prefix alone.

# %%
h = 2
full, A = mh.multi_head_self_attention(song.X, *song.weights, h, mh.causal_mask(song.T))
heads_figure(A, song.tokens, song.tokens, "causal attention per head", vmin=0, vmax=1, mask=mh.causal_mask(song.T))
for t in range(song.T):
    prefix, _ = mh.multi_head_self_attention(song.X[: t + 1], *song.weights, h, mh.causal_mask(t + 1))
    print(f"row {t} ({song.tokens[t]!r}) from its prefix alone:", np.allclose(prefix[-1], full[t]))

# %% [markdown]
# ## 2. The cache: keys and values grow by one row per token
#
# Decoding token $t$ needs the keys and values of every earlier token. They
# never change, so keep them: the new token $x$ adds one row at the end of each
# head's $K$ and $V$ (axis $-2$), and only its own query $q = xW_Q$ is needed.
# Each head $i$ attends with its slice $q^{(i)}$ of the query over its keys
# and values with the new row, $K'^{(i)}$ and $V'^{(i)}$; the heads' outputs
# are then concatenated and projected with $W_O$, exactly as in step 9, so
# $y$ is row $t$ of the layer's causal output, as \eqref{prefix} of section 1 says:
#
# $$K' = \begin{pmatrix} K \\ x W_K \end{pmatrix}, \quad V' = \begin{pmatrix} V \\ x W_V \end{pmatrix},
# \quad y = \operatorname{concat}_i\!\left(\operatorname{softmax}\!\left(\frac{q^{(i)} {K'^{(i)}}^\top}{\sqrt{d_k}}\right) V'^{(i)}\right) W_O$$
#
# No mask: the new token is the last one, everything in the cache is its past.
# The cache's layout is fixed: after tokens $0 \dots t$,
# `K' == mh.split_heads(X[:t+1] @ W_k, n_heads)`, shape $(\dots, h, t+1, d_k)$.
# The cache passed in must not change: build new arrays (`np.concatenate`).
# Raise a `ValueError` that says what is wrong when `n_heads` does not divide
# `d_model`.
#
# ### Exercise 13.1 — `decode_step`


# %% answer="decode_step"
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    ### BEGIN SOLUTION
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {d_model} and {n_heads}.")
    row = x[..., None, :]  # (..., 1, d_model)
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))  # (..., h, 1, d_k)
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-2)  # (..., h, t + 1, d_k): new arrays
        v = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, k, v)  # (..., h, 1, d_k)
    return mh.merge_heads(out)[..., 0, :] @ W_o, (k, v)
    ### END SOLUTION


# %% tests="decode_step"

# %% [markdown]
# ### Try it: decoding the song token by token
#
# Move the slider "tokens decoded" (or press *Next token*; *Reset* goes back
# to the first): each head's cached $K'$ and $V'$ gain one row per token (the
# dotted grey rows are not decoded yet), the panel "weights of …" shows the
# new token's weights over its cache, head by head, and the outputs decoded so
# far stand beside causal multi-head self-attention recomputed over the whole
# sentence (the sentence under the picture compares the new row). Once its check above passes, your `decode_step` decodes, fed its
# own caches (the line under the slider says which function drew the picture);
# in the notebook, while its check fails, a box beside that line, *draw my failing functions
# anyway*, has yours decode all the same.

# %%
from mhsa_helpers.widgets.kv_cache import DecodeWidget

DecodeWidget(functions=globals())

# %% [markdown]
# ## 3. Token by token, with the course's `decode_step`
#
# Feed the song one token at a time, passing back the cache each step returns.
# Left: head 1's cached keys after the last step (one row per token, in
# order). Right: the weights each new token gave its cache, stacked row by
# row; they are exactly the causal attention of section 1.

# %%
cache, ys, rows = None, [], []
for t in range(song.T):
    y, cache = mh.decode_step(song.X[t], cache, *song.weights, h)
    q = mh.split_heads(song.X[t][None, :] @ song.W_q, h)  # (h, 1, d_k): the new query
    w = mh.softmax(q @ cache[0].swapaxes(-1, -2) / np.sqrt(q.shape[-1]))[:, 0, :]  # (h, t+1)
    rows.append(np.pad(w, ((0, 0), (0, song.T - t - 1))))
    ys.append(y)
    print(f"step {t}: cache K' of shape {cache[0].shape}")
heatmaps([
    (cache[0][0], song.tokens, [f"k{j}" for j in range(cache[0].shape[-1])], "head 1: cached K"),
    {"M": np.stack(rows, axis=1)[0], "row_labels": song.tokens, "col_labels": song.tokens,
     "title": "head 1: weights, step by step", "vmin": 0, "vmax": 1, "mask": mh.causal_mask(song.T)},
])
print("outputs == rows of causal attention:", np.allclose(np.stack(ys), full))
print("cache == split_heads(X @ W_k):", np.allclose(cache[0], mh.split_heads(song.X @ song.W_k, h)))
print("weights == causal attention:", np.allclose(np.stack(rows, axis=1), A))

# %% [markdown]
# ## 4. Your `decode_step`, fed its own caches
#
# The graded check gives every step the cache the course computes; here your
# function gets back its own cache at every step, on a batch of two sentences
# with 3 heads, as a model would use it.

# %%
rng = np.random.default_rng(13)
X = rng.normal(size=(2, 8, 6))
Ws = [rng.normal(size=(6, 6)) / np.sqrt(6) for _ in range(4)]
expected, _ = mh.multi_head_self_attention(X, *Ws, 3, mh.causal_mask(8))
try:
    cache, worst = None, 0.0
    for t in range(8):
        y, cache = decode_step(X[:, t], cache, *Ws, 3)
        worst = max(worst, float(np.abs(y - expected[:, t]).max()))
    print(f"max |your y - causal attention| over 8 steps: {worst:.1e}")
    print("your cache K' == split_heads(X @ W_k):", np.allclose(cache[0], mh.split_heads(X @ Ws[1], 3)))
except NotImplementedError:
    print("decode_step is not implemented yet.")

# %% [markdown]
# ## 5. What the cache saves
#
# Without a cache, token $t$ runs the whole layer on its prefix: the
# projections $W_Q$, $W_K$, $W_V$ of all $t+1$ tokens ($3(t+1)d^2$
# multiplications), the scores and weighted sums of the whole prefix
# ($2(t+1)^2 d$), and the output projection $W_O$ of all $t+1$ rows
# ($(t+1)d^2$). With it, token $t$ projects itself only, with $W_Q$, $W_K$,
# $W_V$ and $W_O$ ($4d^2$), and reads its cache ($2(t+1)d$):
#
# $$\text{no cache: } \sum_{t<T} \big(3(t+1)d^2 + 2(t+1)^2 d + (t+1) d^2\big), \qquad
# \text{cache: } \sum_{t<T} \big(4d^2 + 2(t+1)d\big)$$
#
# The counts below come from these formulas (`benchmarks/bench_extensions.py`
# measures the times).

# %%
d = 512
for T in (128, 512, 2048):
    t = np.arange(1, T + 1)
    full_cost = int((3 * t * d * d + 2 * t * t * d + t * d * d).sum())
    cached = int((4 * d * d + 2 * t * d).sum())
    print(f"T = {T:4d}: {full_cost:.2e} vs {cached:.2e} multiplications, {full_cost / cached:5.0f}x fewer")
