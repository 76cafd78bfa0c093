# %% [markdown]
# # Capstone — the whole layer, several heads, and multi-query attention
#
# 1. Your own layer from step 9, compared with the reference on every worked
#    example.
# 2. The explorer: every step, on every example, with your own functions.
# 3. The student analogy with several heads: different interests, different
#    heads.
# 4. Multi-query attention: one key/value head shared by all query heads, and
#    how much memory it saves when generating text.

# %% setup
from mhsa_helpers.capstone import show_saved_layer
from mhsa_helpers.execution.saved import learner_functions
from mhsa_helpers.plots import heads_figure, heatmap
from mhsa_helpers.widgets.explorer import Explorer

song = mh.get_example("song")
students = mh.get_example("students")

# %% [markdown]
# ## 1. Your layer against the reference
#
# The cell takes `multi_head_self_attention` from your **saved**
# `09_multi_head.ipynb` (this kernel cannot see what is only in an open tab:
# save 09 first) and runs it on every example, every possible number of
# heads, with and without the causal mask. Its first line says when 09 was
# saved.

# %%
show_saved_layer()

# %% [markdown]
# ## 2. The explorer, on your own functions
#
# Every step of the layer, on every example: choose the example, the number of
# heads, the mask and the query token, and walk through the nine steps with
# Prev/Next; the *query* view shows one query against every key, per head. It
# runs the functions you wrote in notebooks 03–08 (as saved: save them first)
# whose checks pass, and the status line names them; any other is replaced by
# the reference, and the status line says why (in the notebook, a box lets you
# draw a failing one anyway).

# %%
explorer = Explorer(functions=learner_functions(), step=7, saved=True)
explorer

# %% [markdown]
# ## 3. Different interests, different heads
#
# Give each of the seven characteristics its own head ($h = 7$, $d_k = 1$). To
# let interests stand out as trained weights would, this cell scales the
# queries and keys as in step 7: $W_Q = W_K = s\,I$ (chosen, not learned),
# $W_V = W_O = I$.
# In the *robotics* head Ross looks at Ross; in the *NLP* head Chandler looks at
# Chandler; a single head (last figure) mixes all interests into one pattern.

# %%
X = students.X
eye = np.eye(7)
W_q = W_k = mh.examples.STUDENT_SELECTIVE_SCALE * eye  # s·I, as in step 7
_, A1 = mh.multi_head_self_attention(X, W_q, W_k, eye, eye, n_heads=1)
_, A7 = mh.multi_head_self_attention(X, W_q, W_k, eye, eye, n_heads=7)
picked = [students.features.index(f) for f in ("AI", "robotics", "NLP", "chemical eng.")]
heads_figure(
    A7[picked],
    students.tokens,
    students.tokens,
    vmin=0,
    vmax=1,
    titles=[f"head '{students.features[i]}'" for i in picked],
)
heatmap(A1[0], students.tokens, students.tokens, "one head, all interests", vmin=0, vmax=1);

# %% [markdown]
# Read off the figures above: the student each head picks out, and how sure it is.

# %%
for f in ("robotics", "NLP"):
    i = students.features.index(f)
    row = A7[i][students.tokens.index({"robotics": "Ross", "NLP": "Chandler"}[f])]
    print(f"head '{f}': {students.tokens[int(row.argmax())]} gets weight {row.max():.2f}")


# %% [markdown]
# ## 4. Multi-query attention
#
# When a model generates text one token at a time, it keeps ("caches") the keys
# and values of all earlier tokens so it does not recompute them. With $h$
# heads that is $K$ and $V$ of width $d_{model}$ per token. **Multi-query
# attention** keeps $h$ query heads but only **one** key head and one value
# head, shared by all of them:
#
# $$Q = XW_Q \;\text{split into } h \text{ heads}, \qquad K = XW_K,\; V = XW_V
# \in \mathbb{R}^{T \times d_k}, \qquad
# \operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q^{(i)} K^\top}{\sqrt{d_k}} + M\right) V$$
#
# with $W_K, W_V$ of shape $(d_{model}, d_k)$; then concatenate and project with
# $W_O$ as before. (Broadcasting does the sharing: give $K$ and $V$ a head axis
# of size 1.) The mask follows step 9's rule: with at most as many axes as `X`
# it gets a head axis, with one axis more it has one already. The course's versions of steps 1–9 are yours to use
# (`mh.split_heads`, `mh.attention_head`, `mh.merge_heads`, …).
#
# ### Exercise 10.1 — `multi_query_attention`


# %% answer="multi_query_attention"
def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    ### BEGIN SOLUTION
    Qh = mh.split_heads(X @ W_q, n_heads)  # (..., h, T, d_k)
    K = (X @ W_k)[..., None, :, :]  # (..., 1, T, d_k): one head, shared by broadcasting
    V = (X @ W_v)[..., None, :, :]  # (..., 1, T, d_k)
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):  # no head axis: give it one
        mask = np.expand_dims(mask, -3)  # (..., 1, T, T)
    heads, A = mh.attention_head(Qh, K, V, mask)  # (..., h, T, d_k), (..., h, T, T)
    return mh.merge_heads(heads) @ W_o, A  # (..., T, d_model)
    ### END SOLUTION


# %% tests="multi_query_attention"

# %% [markdown]
# ### Exercise 10.2 — how big is the KV cache?
#
# Per sequence and per layer, how many numbers are cached for $T$ tokens?
# Multi-head attention caches $K$ and $V$ of width $d_{model}$; multi-query
# caches one shared head of width $d_k$:
#
# $$\text{MHA: } 2\,T\,d_{model}, \qquad \text{MQA: } 2\,T\,d_k = 2\,T\,d_{model}/h$$


# %% answer="kv_cache_size"
def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    ### BEGIN SOLUTION
    width = d_model // n_heads if multi_query else d_model
    return 2 * seq_len * width
    ### END SOLUTION


# %% tests="kv_cache_size"

# %% [markdown]
# For a 24-layer model with $d_{model} = 1024$ and 16 heads (the size of
# BERT-large or GPT-2 medium), a long context and a batch of 8 sequences (the
# sizes are in the cell; 2 bytes per number in half precision):

# %%
T_ctx, d_model, h, layers, batch, bytes_per = 8192, 1024, 16, 24, 8, 2
for mq in (False, True):
    n = mh.kv_cache_size(T_ctx, d_model, h, mq) * layers * batch
    print(f"{'multi-query' if mq else 'multi-head':>11}: {n * bytes_per / 2**30:6.2f} GiB")
print(
    "saving: a factor of",
    mh.kv_cache_size(T_ctx, d_model, h) // mh.kv_cache_size(T_ctx, d_model, h, True),
)
