# %% [markdown]
# # Extension 6 — Sliding-window masks
#
# With a causal mask, token $i$ (counting from 0) attends to the $i$ tokens
# before it and itself ($i + 1$ in all): the cost grows with the whole
# context. A **sliding window** lets each token see only itself and the
# `window - 1` tokens before it.
#
# 1. The mask, and the exercise: `sliding_window_mask`.
# 2. The window's edges, for every window size.
# 3. Attention with a window: the song.
# 4. Layers widen the view.
# 5. What it saves.

# %% setup
from mhsa_helpers.plots import heads_figure, heatmaps

song = mh.get_example("song")

# %% [markdown]
# ## 1. The mask
#
# Like the causal mask of step 6, the mask is additive: $0$ where query $i$ may
# look at key $j$, $-\infty$ where it may not. With a window of $w$ tokens,
# query $i$ sees keys $i - w + 1, \ldots, i$ (from key 0 while $i < w - 1$):
#
# $$M_{ij} = \begin{cases} 0 & i - w < j \le i \\ -\infty & \text{otherwise} \end{cases}$$
#
# `window` is an integer of at least 1 (raise a `ValueError` with a sentence
# otherwise); a window as long as the sequence, or longer, is the causal mask.
# Return floats `0.0` and `-np.inf`, not booleans.
#
# ### Exercise 16.1 — `sliding_window_mask`


# %% answer="sliding_window_mask"
def sliding_window_mask(seq_len, window):
    ### BEGIN SOLUTION
    if window < 1:
        raise ValueError(f"window must be at least 1, but got {window}.")
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    return np.where((j <= i) & (j > i - window), 0.0, -np.inf)
    ### END SOLUTION


# %% tests="sliding_window_mask"

# %% [markdown]
# ## 2. The window's edges
#
# Row $i$ is query $i$; its zeros are the keys it sees. Each row holds at most
# $w$ zeros, ending on the diagonal. With $w = 1$ a token sees itself only;
# with $w = T$ the mask is the causal mask. (The figures use the course's
# `mh.sliding_window_mask`, so they draw even before your function works.)

# %%
T = song.T
windows = [1, 2, 3, T]
masks = np.stack([mh.sliding_window_mask(T, w) for w in windows])  # (4, T, T)
heads_figure(masks, song.tokens, song.tokens, titles=[f"window = {w}" for w in windows])
print("keys seen per query, window 3:", (masks[2] == 0).sum(axis=1))
print("window = T is the causal mask:", np.array_equal(masks[-1], mh.causal_mask(T)))

# %% [markdown]
# ## 3. Attention with a window
#
# The mask is added to the scores before the softmax, exactly as in step 6 and in
# step 8's \eqref{head}:
#
# $$A = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)$$
#
# The song through one head, with the causal mask and with a window of 3: the
# weights of a row now spread over at most 3 keys, and still sum to 1.

# %%
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
_, A_causal = mh.attention_head(Q, K, V, mh.causal_mask(T))
_, A_window = mh.attention_head(Q, K, V, mh.sliding_window_mask(T, 3))
heads_figure(
    np.stack([A_causal, A_window]),
    song.tokens,
    song.tokens,
    titles=["causal", "window = 3"],
    vmin=0,
    vmax=1,
    mask=np.stack([mh.causal_mask(T), mh.sliding_window_mask(T, 3)]),
)
outside = mh.sliding_window_mask(T, 3) == -np.inf
print("rows sum to 1:", np.allclose(A_window.sum(axis=-1), 1))
print("weight outside the window:", A_window[outside].sum())

# %% [markdown]
# ### Try it: the window
#
# Move the slider: the mask and the song's attention weights follow. The
# picture uses your `sliding_window_mask` once its check above passes (the line
# under the slider says which one is drawn). In the notebook, while its check fails, a box
# beside that line, *draw my failing functions anyway*, draws yours all the same.

# %%
from mhsa_helpers.widgets.sliding_window import SlidingWindowWidget

SlidingWindowWidget(functions=globals())

# %% [markdown]
# ## 4. Layers widen the view
#
# One layer lets token $i$ read tokens up to $w - 1$ positions back. A second
# layer reads the outputs of the first, each of which already mixed $w$ tokens,
# so the view reaches $2(w - 1)$ back; after $L$ layers,
#
# $$\text{reach} = L\,(w - 1).$$
#
# The cell counts it by chaining the "who sees whom" matrix through the layers.

# %%
T_long, w = 16, 3
sees = (mh.sliding_window_mask(T_long, w) == 0).astype(int)  # (T, T): 1 where i sees j
reach = np.eye(T_long, dtype=int)
panels = []
for L in (1, 2, 4):
    reach = np.linalg.matrix_power(sees, L) > 0
    panels.append({"M": reach.astype(float), "title": f"{L} layer(s), window {w}"})
    back = T_long - 1 - int(np.argmax(reach[-1]))
    print(f"{L} layer(s): the last token reaches {back} tokens back (L·(w−1) = {L * (w - 1)})")
heatmaps(panels, vmin=0, vmax=1, annotate=False, xlabel="key j", ylabel="query i");

# %% [markdown]
# ## 5. What it saves
#
# A causal mask keeps $T(T + 1)/2$ scores; a window keeps at most $w$ per query,
# $T w - w(w - 1)/2$ in all: it grows like $T$, not $T^2$. Counted from the
# masks themselves:

# %%
w_n = 256
for T_n in (1024, 4096):
    causal = int((mh.causal_mask(T_n) == 0).sum())
    window = int((mh.sliding_window_mask(T_n, w_n) == 0).sum())
    assert causal == T_n * (T_n + 1) // 2 and window == T_n * w_n - w_n * (w_n - 1) // 2  # the formulas above
    print(f"T = {T_n}: causal {causal:>9,} scores, window {w_n}: {window:>9,} ({window / causal:.0%})")
