# %% [markdown]
# # After the extensions — The backward pass
#
# Every weight of the course so far was random or made by hand. To *learn*
# weights, a model needs the gradient of its loss with respect to each of
# them: the **backward pass**. Frameworks compute it for you (autograd); here
# you write it for attention, in numpy, and check it the way gradients are
# defined, with central differences. The next notebook trains a small
# transformer with your backward pass and draws what its heads learned.
#
# 1. Checking a gradient: central differences.
# 2. The softmax's backward, and the exercise `softmax_backward`.
# 3. One head's backward: `attention_head_backward`.
# 4. The whole layer's backward: `multi_head_self_attention_backward`.
#
# Conventions: for a forward pass `out = f(x)`, the backward pass receives
# `dOut` (the gradient of a scalar loss with respect to `out`, the shape of
# `out`) and returns `dx` (the gradient with respect to `x`, the shape of `x`).

# %% setup
from IPython.display import HTML, display

from mhsa_helpers.gradcheck import central_differences, relative_error
from mhsa_helpers.learner import learner_or_reference
from mhsa_helpers.plots import heads_figure

song = mh.get_example("song")
rng = np.random.default_rng(0)


def mine_or_course(name):
    """Your function if it passes its check, else the course's (the explorer's rule), and which."""
    fn, said = learner_or_reference(name, globals(), {})
    display(HTML(said.replace("Drawn with", "Computed with")))
    return fn

# %% [markdown]
# ## 1. Checking a gradient
#
# Take any forward function $f$ and a fixed random $G$ of the output's shape.
# The scalar loss $L(x) = \sum f(x) \odot G$ has, by the chain rule, exactly
# the gradient a backward pass computes from $dOut = G$. Nudging one entry of
# $x$ both ways measures it directly:
#
# $$\frac{\partial L}{\partial x_i} \approx \frac{L(x + h\,e_i) - L(x - h\,e_i)}{2h},
# \qquad h = 10^{-6}.$$
#
# The error of this **central difference** shrinks like $h^2$; it costs two
# forward passes per entry, so it is a way to *check* a backward pass on small
# inputs, never to replace it. `central_differences(f, x, G)` does it entry by
# entry. The check of each exercise below uses it too: your gradients must be
# within a relative error of $10^{-5}$ of it. Your functions must not use it:
# on one large input (thousands of numbers) the check counts the Python
# function calls a call of your backward makes (yours, the course's and
# numpy's) and stops it past one call per two numbers of its inputs. A
# backward pass makes a fixed number of array operations whatever the size
# of its input; central differences (or any forward pass per entry) make
# thousands there, and earn nothing. The grader's hidden tests of one head's
# and of the layer's backward also end with a larger input (heads of 256
# tokens, a layer of width 256) and a time budget of seconds: a backward pass
# takes milliseconds there, central differences, however batched, minutes.
#
# A first example whose gradient we know: $f(x) = x^2$ (entrywise) has
# $dx = 2x \cdot dOut$.

# %%
x = rng.normal(size=(2, 3))
G = rng.normal(size=(2, 3))
numeric = central_differences(lambda v: v**2, x, G)
print(f"relative error of 2·x·G against central differences: {relative_error(2 * x * G, numeric):.1e}")
print(f"and of a wrong gradient, x·G: {relative_error(x * G, numeric):.2f}")

# %% [markdown]
# ## 2. The softmax's backward
#
# $A = \operatorname{softmax}(Z)$ row by row: $a_j = e^{z_j} / \sum_k e^{z_k}$.
# Each $a_j$ depends on *every* $z_i$ of its row:
#
# $$\frac{\partial a_j}{\partial z_i} = a_j\,(\delta_{ij} - a_i),$$
#
# so the Jacobian of one row is $\operatorname{diag}(a) - a\,a^\top$. Applied
# to the incoming gradient $dA$ (the chain rule,
# $dz_i = \sum_j dA_j\, \partial a_j / \partial z_i$):
#
# $$dZ = A \odot \Big(dA - \sum_k dA_k\, A_k\Big), \label{softmax-backward}$$
#
# the sum along the softmax's axis, kept as an axis of size 1 so that it
# broadcasts back over the row. The second term is what couples a row's
# entries: adding the same number to every $z$ of a row changes nothing, so
# $dZ$ sums to $0$ along each row. A fully masked row (all of $A$ zero) gives
# a zero row: no gradient goes where no weight went.
#
# ### Exercise 17.1 — `softmax_backward`
#
# `A` and `dA` have shape `(..., T_q, T_k)`; `axis` says which axis the
# softmax normalised (by default the last). Return `dZ` of the same shape,
# without changing `A` or `dA`.


# %% answer="softmax_backward"
def softmax_backward(A, dA, axis=-1):
    ### BEGIN SOLUTION
    return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))
    ### END SOLUTION


# %% tests="softmax_backward"

# %% [markdown]
# Your `softmax_backward` against central differences on the song's scores,
# with a causal mask (the course's reference stands in while yours is not
# written): each row of $dZ$ sums to zero, and the masked cells get none.

# %%
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
Z = mh.attention_scores(Q, K) + mh.causal_mask(song.T)
A = mh.softmax(Z)
dA = rng.normal(size=A.shape)
dZ = mine_or_course("softmax_backward")(A, dA)
err = relative_error(dZ, central_differences(mh.softmax, Z, dA))
print(f"relative error against central differences: {err:.1e}")
print(f"largest |row sum| of dZ: {np.abs(dZ.sum(axis=-1)).max():.1e}")
print(f"largest |gradient| on masked cells: {np.abs(dZ[np.isneginf(Z)]).max():.1e}")

# %% [markdown]
# ## 3. One head's backward
#
# The forward pass of one head, with $s = \sqrt{d_k}$:
#
# $$Z = \frac{QK^\top}{s} + M, \qquad A = \operatorname{softmax}(Z), \qquad
# \text{out} = A V.$$
#
# Backward, from $dOut$ (shape `(..., T_q, d_v)`), one product at a time (the
# softmax's backward is \eqref{softmax-backward}):
#
# $$dV = A^\top dOut, \qquad dA = dOut\, V^\top, \qquad
# dZ = \operatorname{softmax\_backward}(A, dA),$$
# $$dQ = \frac{dZ\,K}{s}, \qquad dK = \frac{dZ^\top Q}{s}.$$
#
# Each product's gradient is the other factor, transposed where the shapes ask
# for it: the keys are $Z$'s *columns*, so $dK$ needs $dZ^\top$; each key's
# value collects the gradient of the queries that read it, so $dV$ needs
# $A^\top$. The mask is a constant: it gets no gradient, and a blocked
# position has $A = 0$, so $dZ = 0$ there and nothing flows through it. With
# batch and head axes in front, transpose only the last two axes
# (`np.swapaxes(M, -1, -2)`).
#
# ### Exercise 17.2 — `attention_head_backward`
#
# Return `(dQ, dK, dV)`, each the shape of `Q`, `K`, `V`. Run the forward pass
# again inside (you may call `mh.attention_head` and `mh.softmax`, and your own
# `softmax_backward`). The mask may come with a head axis `(..., 1, T, T)` or
# without one `(T, T)`: it only needs to broadcast against the scores. An input
# shared by a batch (`K` of shape `(T_k, d_k)` beside `Q` of shape `(B, T_q, d_k)`)
# served every sequence, so its gradient is the sum of every sequence's: sum it
# over the axes it was broadcast along, back to its own shape.


# %% answer="attention_head_backward"
def attention_head_backward(Q, K, V, dOut, mask=None):
    ### BEGIN SOLUTION
    def _sum_to(g, shape):  # sum over the axes an input of `shape` was broadcast along
        g = g.sum(axis=tuple(range(g.ndim - len(shape))))  # the batch axes it lacks
        ones = tuple(k for k, n in enumerate(shape) if n == 1 and g.shape[k] != 1)
        return g.sum(axis=ones, keepdims=True)  # the axes of size 1 it has

    s = np.sqrt(Q.shape[-1])
    _, A = mh.attention_head(Q, K, V, mask)  # (..., T_q, T_k)
    dV = np.swapaxes(A, -1, -2) @ dOut  # (..., T_k, d_v)
    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s  # (..., T_q, T_k)
    dQ = dZ @ K  # (..., T_q, d_k)
    dK = np.swapaxes(dZ, -1, -2) @ Q  # (..., T_k, d_k)
    return tuple(_sum_to(g, M.shape) for g, M in ((dQ, Q), (dK, K), (dV, V)))
    ### END SOLUTION


# %% tests="attention_head_backward"

# %% [markdown]
# Where the gradient goes: for the song's first head, a causal mask and a
# random $dOut$, the weights $A$ and the size of $dZ$, the gradient of the
# scores $Z$ (before the division by $\sqrt{d_k}$ that $dQ$ and $dK$ then take).
# The blocked cells above the diagonal carry neither; each figure has its own
# colour scale.

# %%
Qh, Kh, Vh = (mh.split_heads(M, 2)[0] for M in (Q, K, V))  # head 1: (T, d_k) each
mask = mh.causal_mask(song.T)
dOut = rng.normal(size=Vh.shape)
_, A1 = mh.attention_head(Qh, Kh, Vh, mask)
dZ1 = mh.softmax_backward(A1, dOut @ Vh.T)  # (T, T): the gradient of the scores Z
heads_figure(A1[None], song.tokens, song.tokens, titles=["weights A (head 1)"], vmin=0, vmax=1, mask=mask)
heads_figure(np.abs(dZ1)[None], song.tokens, song.tokens, titles=["|dZ|, the scores' gradient"], mask=mask)
dQ, dK, dV = mine_or_course("attention_head_backward")(Qh, Kh, Vh, dOut, mask)
for name, got, x in (("dQ", dQ, Qh), ("dK", dK, Kh), ("dV", dV, Vh)):
    forward = {
        "dQ": lambda q: mh.attention_head(q, Kh, Vh, mask)[0],
        "dK": lambda k: mh.attention_head(Qh, k, Vh, mask)[0],
        "dV": lambda v: mh.attention_head(Qh, Kh, v, mask)[0],
    }[name]
    print(f"{name}: relative error {relative_error(got, central_differences(forward, x, dOut)):.1e}")

# %% [markdown]
# ## 4. The whole layer's backward
#
# The layer of step 9 is a chain: three projections, a split into heads, the
# heads, a merge, and the output projection:
#
# $$Q = XW_Q,\; K = XW_K,\; V = XW_V, \qquad
# H = \operatorname{head}(\operatorname{split}(Q), \operatorname{split}(K),
# \operatorname{split}(V)), \qquad \text{out} = \operatorname{merge}(H)\, W_O.$$
#
# Backward, in reverse order. With $C = \operatorname{merge}(H)$ the
# concatenated heads:
#
# $$dW_O = C^\top dOut, \qquad dC = dOut\, W_O^\top.$$
#
# `split_heads` and `merge_heads` only move numbers around, so each one's
# backward is the other: $dH = \operatorname{split}(dC)$, and the heads'
# gradients $dQ_h, dK_h, dV_h$ (your `attention_head_backward`) merge back into
# $dQ, dK, dV$ of shape `(..., T, d_model)`. Then the projections:
#
# $$dW_Q = X^\top dQ,\quad dW_K = X^\top dK,\quad dW_V = X^\top dV, \qquad
# dX = dQ\,W_Q^\top + dK\,W_K^\top + dV\,W_V^\top. \label{layer-backward}$$
#
# $X$ feeds all three projections, so its gradient is the sum of the three
# paths. One weight matrix serves every sequence of a batch: its gradient is
# summed over the batch axes (flatten them: `X.reshape(-1, d_model).T @
# dQ.reshape(-1, d_model)`).
#
# ### Exercise 17.3 — `multi_head_self_attention_backward`
#
# Return `(dX, (dW_q, dW_k, dW_v, dW_o))`. The mask is the forward pass's,
# by step 9's rule: `(T, T)`, or `(..., T, T)` per sequence, with at most as
# many axes as `X`, gets a head axis (`np.expand_dims(mask, -3)`); one with an
# axis more than `X`, such as `(h, T, T)` or `(B, 1, T, T)`, has it already.
# A query whose every key is blocked (a padded sequence) has weights 0 in the
# forward pass, so it sends no gradient back: its rows of the heads' $dQ$ are
# 0, and it adds nothing to $dK$ and $dV$. You may call `mh.split_heads`,
# `mh.merge_heads`, `mh.attention_head` and your own `attention_head_backward`.


# %% answer="multi_head_self_attention_backward"
def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    ### BEGIN SOLUTION
    d_model = X.shape[-1]
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (..., T, d_model) each
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in (Q, K, V))  # (..., h, T, d_k) each
    if mask is not None and 2 < np.ndim(mask) <= np.ndim(X):  # no head axis: give it one
        mask = np.expand_dims(mask, -3)  # (..., 1, T, T): the same for every head
    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)  # (..., h, T, d_k)
    merged = mh.merge_heads(heads)  # (..., T, d_model)
    dH = mh.split_heads(dOut @ W_o.T, n_heads)  # (..., h, T, d_k)
    dQ, dK, dV = (
        mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask)
    )  # (..., T, d_model) each

    def summed(A, B):  # Aᵀ B over every sequence of the batch: (d_model, d_model)
        return A.reshape(-1, d_model).T @ B.reshape(-1, d_model)

    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (summed(X, dQ), summed(X, dK), summed(X, dV), summed(merged, dOut))
    ### END SOLUTION


# %% tests="multi_head_self_attention_backward"

# %% [markdown]
# The whole layer against central differences: the song with 2 heads and a
# causal mask, every input and weight.

# %%
backward = mine_or_course("multi_head_self_attention_backward")
mask = mh.causal_mask(song.T)
dOut = rng.normal(size=song.X.shape)
dX, grads = backward(song.X, *song.weights, 2, dOut, mask)
inputs = [song.X, *song.weights]
for i, (name, got) in enumerate(zip(("dX", "dW_q", "dW_k", "dW_v", "dW_o"), (dX, *grads))):

    def forward(x, i=i):
        args = [*inputs[:i], x, *inputs[i + 1 :]]
        return mh.multi_head_self_attention(*args, 2, mask)[0]

    err = relative_error(got, central_differences(forward, inputs[i], dOut))
    print(f"{name:5} shape {got.shape}: relative error {err:.1e}")

# %% [markdown]
# One step downhill: moving every weight a little against its gradient lowers
# the loss $L = \sum \text{out} \odot G$, by about the step times the squared
# length of the gradient. That is all training does, many times over — the
# next notebook, `18_training`, does it with your functions.

# %%
loss = float((mh.multi_head_self_attention(song.X, *song.weights, 2, mask)[0] * dOut).sum())
lr = 1e-3
stepped = [W - lr * g for W, g in zip(song.weights, grads)]
after = float((mh.multi_head_self_attention(song.X, *stepped, 2, mask)[0] * dOut).sum())
print(f"loss {loss:.6f} → {after:.6f} after one step (predicted change "
      f"{-lr * sum(float((g**2).sum()) for g in grads):.6f})")
