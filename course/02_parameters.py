# %% [markdown]
# # Step 2 — Defining the learnable parameters
#
# Multi-head self-attention learns four matrices: $W_Q$, $W_K$, $W_V$ (which
# make the queries, keys and values) and $W_O$ (which mixes the heads at the
# end). In this course they act **on the right** of the input, as in the source
# articles: $Q = X W_Q$, with $W_Q$ of shape $(d_{model}, d_{model})$.
#
# Before training they are random; training then adjusts them. How random
# matters: too large and the products explode, too small and they vanish.

# %% setup
from mhsa_helpers.plots import heatmaps

song = mh.get_example("song")


# %% [markdown]
# ## Glorot (Xavier) uniform initialisation
#
# Draw every entry from the uniform distribution on $[-a, a]$ with
#
# $$a = \sqrt{\frac{6}{d_{in} + d_{out}}}.$$
#
# A uniform variable on $[-a, a]$ has variance $a^2/3 = 2/(d_{in}+d_{out})$,
# which keeps the variance of $XW$ about that of $X$. Use the generator `rng`
# you are given (`rng.uniform`), so that the same seed gives the same weights.
#
# ### Exercise 2.1 — `init_weights`


# %% answer="init_weights"
def init_weights(d_in, d_out, rng):
    ### BEGIN SOLUTION
    a = np.sqrt(6 / (d_in + d_out))
    return rng.uniform(-a, a, size=(d_in, d_out))
    ### END SOLUTION


# %% tests="init_weights"

# %% [markdown]
# ## Why the scale matters
#
# Push a random input through 6 layers of $X \leftarrow XW$: with Glorot
# weights the spread stays put; with plain $\mathcal{N}(0, 1)$ weights it grows
# by about $\sqrt{d}$ every layer.

# %%
rng = np.random.default_rng(0)
d = 256
X0 = rng.normal(size=(32, d))
for label, draw in [
    ("Glorot uniform", lambda: mh.init_weights(d, d, rng)),
    ("N(0, 1)", lambda: rng.normal(size=(d, d))),
]:
    X = X0
    stds = []
    for _ in range(6):
        X = X @ draw()
        stds.append(X.std())
    print(f"{label:>15}: std after each layer", np.array2string(np.array(stds), precision=3))

# %% [markdown]
# ## The song example's weights
#
# $W_Q$ is copied from the source article. The article prints no usable $W_K$
# or $W_V$ (see step 3) and no $W_O$, so the course chooses them; they are shown
# here.

# %%
print(song.source)
heatmaps([(W, song.features, song.features, name) for name, W in zip(["W_Q", "W_K", "W_V", "W_O"], song.weights)]);

# %% [markdown]
# ## Common misconception: "a 4×4 $W_K$ stores 4 keys"
#
# The source article says that $W_K$ being $4\times4$ means *4 keys are stored*.
# It does not: $W_K$ is a **projection** applied to every token. Its shape says
# how long each key vector is ($d_{model}$ in, $d_k \cdot h$ out), never how many
# keys there are. The number of keys is the number of tokens $T$. The same
# $W_K$ gives 3 keys for 3 tokens and 6 for 6:

# %%
for n_tokens in (3, 6):
    K = song.X[:n_tokens] @ song.W_k
    print(
        f"{n_tokens} tokens x W_K of shape {song.W_k.shape} -> K of shape {K.shape}: "
        f"{K.shape[0]} keys"
    )
