# %% [markdown]
# # After the backward pass — Training a tiny transformer
#
# Every weight so far was random or chosen by hand. This notebook **learns**
# them: a transformer with one multi-head attention layer and nothing else
# (no feed-forward block, no normalisation) is trained in numpy, with the
# backward pass you wrote in `17_backward`, to reverse sequences of letters.
# Then we look inside: what did each head learn to attend to?
#
# 1. The task: reverse a sequence.
# 2. The model, its loss and its gradient (your backward pass).
# 3. Training: a progress bar, the loss curve, the held-out accuracy.
# 4. What each head learned.
# 5. The trained weights as a worked example, in the explorer.
# 6. The mask decides what can be learned.
#
# There is no exercise here: run the cells, read the numbers.

# %% setup
from IPython.display import HTML, display

from mhsa_helpers.execution.saved import learner_functions
from mhsa_helpers.gradcheck import relative_error
from mhsa_helpers.line_plots import accuracy_by_position, training_curves
from mhsa_helpers.plots import heads_figure
from mhsa_helpers.training import backward, heads, layer, loop, model, task
from mhsa_helpers.widgets.explorer import Explorer
from mhsa_helpers.widgets.reverse import TryReversal

T, V = task.SEQ_LEN, len(task.VOCAB)

# %% [markdown]
# ## 1. The task: reverse a sequence
#
# The input is a sequence $x_0, x_1, \ldots, x_{T-1}$ of letters; the output
# at every position $i$ is the input's letter at the mirror position:
#
# $$y_i = x_{T-1-i}.$$
#
# The answer for position $i$ sits at *another* position, and the only part of
# a transformer that moves information between positions is attention. So a
# model that solves the task must have a head that, from query $i$, looks at
# key $T-1-i$. Training draws fresh random sequences at every step; the
# accuracy is measured on **held-out** sequences, drawn with another seed.

# %%
x_batch, y_batch = next(task.training_batches())
for seq, target in zip(x_batch[:3], y_batch[:3]):
    print(" ".join(task.letters(seq)), " →  ", " ".join(task.letters(target)))
x_test, y_test = task.held_out()
seen = task.seen_in_training(x_test, loop.STEPS)
print(f"\nT = {T} letters out of V = {V} ({task.VOCAB[0]}–{task.VOCAB[-1]}); "
      f"{task.BATCH_SIZE} fresh sequences per training step")
print(f"held-out: {len(x_test)} sequences, {int(seen.sum())} of which appear in the "
      f"{loop.STEPS} training batches")
print(f"guessing gets {1 / V:.1%} of the letters right")

# %% [markdown]
# ## 2. The model
#
# Token ids $x$ of shape $(B, T)$ become vectors, go through **one**
# multi-head self-attention layer with a residual connection, and a linear
# readout gives one score (logit) per letter at every position:
#
# $$X = E[x] + P, \qquad
# \text{out},\, A = \operatorname{MultiHead}(X;\, W_Q, W_K, W_V, W_O), \qquad
# H = X + \text{out}, \qquad
# \text{logits} = H\, W_U + b_U . \label{reversal-model}$$
#
# $E$ ($V \times d_{model}$) holds one vector per letter, $P$
# ($T \times d_{model}$) one per position: it starts as the sinusoidal
# encoding \eqref{sinusoid} of step 1 and is learned with the rest. The weight matrices start
# Glorot-uniform, as in step 2. The loss is the cross-entropy of the logits
# against the reversed sequence, averaged over the $B \cdot T$ positions:
#
# $$\mathcal{L} = -\frac{1}{BT} \sum_{b,\,i} \log \operatorname{softmax}\big(\text{logits}_{b,i}\big)_{y_{b,i}} . \label{cross-entropy}$$
#
# A model that knows nothing gives every letter the same score, and a loss of
# $\log V$; random initial weights give a loss near that.

# %%
params = model.init_params()
for name, p in params.items():
    print(f"{name:4} {p.shape!s:9}")
print("parameters:", sum(p.size for p in params.values()))
acts = model.forward(params, x_batch)
print("X:", acts.X.shape, " weights:", acts.weights.shape, " logits:", acts.logits.shape)
print(f"loss before training: {model.cross_entropy(acts.logits, y_batch):.3f}   (log V = {np.log(V):.3f})")

# %% [markdown]
# ### Its gradient
#
# Backward, from the loss \eqref{cross-entropy} to every parameter. The cross-entropy of a softmax
# has the simplest of gradients, "predicted minus true":
#
# $$d\,\text{logits} = \frac{\operatorname{softmax}(\text{logits}) - \operatorname{onehot}(y)}{BT}.$$
#
# The readout of \eqref{reversal-model} is a matrix product, as in step 3:
#
# $$dH = d\,\text{logits}\; W_U^\top, \qquad dW_U = H^\top d\,\text{logits}, \qquad db_U = \sum_{b,i} d\,\text{logits}_{b,i}.$$
#
# The residual connection $H = X + \text{out}$ sends $dH$ to $X$ along two
# paths: directly, and through the attention layer — your
# `multi_head_self_attention_backward` \eqref{layer-backward} with $dOut = dH$, which also gives
# $dW_Q, dW_K, dW_V, dW_O$:
#
# $$dX = dH + \operatorname{MultiHead\_backward}(X, W_Q, W_K, W_V, W_O;\ dOut = dH)_X .$$
#
# Finally each letter's row of $E$ collects the gradient of every position
# where that letter occurs, and each row of $P$ that of its position in every
# sequence:
#
# $$dE_v = \sum_{(b,i):\ x_{b,i} = v} dX_{b,i}, \qquad dP_i = \sum_b dX_{b,i}.$$
#
# The layer's forward and backward are **yours** (from `09_multi_head` and
# `17_backward`, as saved: save them first) wherever their checks pass; the
# cell says which.

# %%
functions = learner_functions()
attention, attention_backward, said = layer.layer_functions(functions, directory=".")
display(HTML(said))
print("forward: ", "yours" if attention is not mh.multi_head_self_attention else "the course's")
print("backward:", "yours" if attention_backward is not mh.multi_head_self_attention_backward else "the course's")

# %% [markdown]
# Before training with it, the whole model's gradient against central
# differences (as in `17_backward`), on a tiny model: $T = 4$,
# $d_{model} = 4$, 2 heads, 3 sequences, every parameter.

# %%
rng = np.random.default_rng(0)
tiny = model.init_params(seed=3, d_model=4, seq_len=4)
x_tiny = task.sequences(3, rng, seq_len=4)
y_tiny = task.targets(x_tiny)
_, grads = backward.loss_and_grads(tiny, x_tiny, y_tiny, 2, attention, attention_backward)
numeric = backward.numerical_grads(tiny, x_tiny, y_tiny, 2, attention)
for name in tiny:
    print(f"d{name:4} shape {grads[name].shape!s:8} relative error {relative_error(grads[name], numeric[name]):.1e}")

# %% [markdown]
# ## 3. Training
#
# Each step draws a fresh batch, runs the model forward and backward, and
# moves every parameter with **Adam** (given here, not an exercise). For a
# parameter $p$ with gradient $g$ at step $t$:
#
# $$m \leftarrow \beta_1 m + (1-\beta_1)\, g, \qquad
# v \leftarrow \beta_2 v + (1-\beta_2)\, g^2, \qquad
# p \leftarrow p - \eta\, \frac{m / (1-\beta_1^t)}{\sqrt{v / (1-\beta_2^t)} + \epsilon},$$
#
# with $\beta_1 = 0.9$, $\beta_2 = 0.999$, $\epsilon = 10^{-8}$: a running
# mean of the gradient, divided by a running size of it, so that every
# parameter moves by at most about the learning rate $\eta$ per step. Every
# few steps the held-out accuracy is measured (the bar shows it).

# %%
result = loop.train(loop.STEPS, attention=attention, attention_backward=attention_backward, bar="training")
print(result.summary())

# %% [markdown]
# The loss on a log scale (left): it falls from about $\log V$ to nearly
# nothing. The held-out accuracy (right) climbs from chance to the goal.

# %%
training_curves(result.losses, result.eval_steps, result.accuracies, V, loop.GOAL);

# %% [markdown]
# ## 4. What each head learned
#
# Each head's attention matrix on a held-out sequence (one whose letters are
# all different, so the labels are unambiguous). A head that fetches the
# mirror letter puts its weight on the **anti-diagonal**: query $i$ on key
# $T-1-i$.

# %%
seq = task.distinct_sequence(x_test)
labels = task.letters(seq)
A = model.head_weights(result.params, seq, attention=attention)  # (h, T, T)
heads_figure(A, labels, labels, "attention of the trained model on a held-out sequence", vmin=0, vmax=1);

# %% [markdown]
# One sequence could be luck. Over all the held-out sequences: for each head,
# the pattern it follows best among a few simple ones (the mirror
# $T-1-i$, itself $i$, the previous $i-1$, the next $i+1$), and the average
# weight it puts on that pattern's key. A head is named only when that weight
# is at least 0.8.

# %%
A_all = model.head_weights(result.params, x_test, attention=attention)  # (N, h, T, T)
learned = heads.name_heads(A_all)
for k, (pattern, share) in enumerate(learned):
    print(heads.head_sentence(k, pattern, share))
print("\nweight on the mirror key, per query position (rows: heads):")
per_query = A_all[..., np.arange(T), heads.pattern_keys("mirror")].mean(axis=0)  # (h, T)
print(np.round(per_query, 2))

# %% [markdown]
# ### Two heads, one job?
#
# The layer's output is the concatenated heads times $W_O$, which is a sum of
# one term per head: with $W_O^{(k)}$ the $d_k$ rows of $W_O$ that head $k$'s
# columns meet (head 1 the rows $0$ to $d_k - 1$, head 2 the rows $d_k$ to
# $2d_k - 1$, counting rows from 0 as numpy does),
#
# $$\text{out} = [\text{head}_1 \,|\, \text{head}_2]\, W_O = \text{head}_1 W_O^{(1)} + \text{head}_2 W_O^{(2)} .$$
#
# Setting $W_O^{(k)}$ to zero removes head $k$ and keeps the other. If both
# heads look at the same key, does the model still work with one of them?

# %%
print(f"both heads:      held-out accuracy {model.accuracy(result.params, x_test, y_test, attention=attention):.1%}")
for k in range(model.N_HEADS):
    cut = heads.without_head(result.params, k)
    print(f"without head {k + 1}:  held-out accuracy {model.accuracy(cut, x_test, y_test, attention=attention):.1%}")

# %% [markdown]
# Each head alone is worse than the pair: the readout $W_U$ was trained on the
# **sum** of both heads' contributions, and each head carries part of the
# letter's identity in its own $d_k$ columns. Looking at the same key is not
# the same as carrying the same information.

# %% [markdown]
# ## 5. The trained weights as a worked example
#
# The course ships the weights of this run (same seed, same steps) as the
# worked example `trained`: `python -m mhsa_helpers.training` rebuilds it.
# Its $X$ is the layer's input (letter embedding + position embedding) for the
# held-out sequence above. Your run, with your functions, should give the
# same weights up to rounding:

# %%
e = mh.get_example("trained")
print(e.source, "\n")
for note in e.head_notes:
    print(note)
diff = max(np.abs(result.params[n] - w).max() for n, w in zip(("W_q", "W_k", "W_v", "W_o"), e.weights))
print(f"\nmax |your run's weights − the shipped ones| = {diff:.1e}")

# %% [markdown]
# The explorer walks through the nine steps on it: step 7 shows each head's
# anti-diagonal, and the *query* view one letter's weights. It has one choice
# of heads only, the number it was trained with (other head counts would
# split the same weights into meaningless pieces). Try the causal mask: it
# blocks the mirror key for the first half of the queries.

# %%
Explorer(functions=functions, example="trained", step=7, saved=True)

# %% [markdown]
# ### Try your own input
#
# Type 8 letters A–P in the box (`ABCDEFGH`, `a b c d e f g h` and
# `A,B,C,D,E,F,G,H` are all read the same) and press Enter: the trained model
# runs on **your** sequence. The picture shows each head's attention weights
# (rows: queries, columns: keys, your letters on both), the line above it the
# model's output against your input reversed, and the notes which key each head
# mostly attends to. Two inputs are drawn below in advance: one with repeated
# letters (`AAAABBBB`), and one the training batches are unlikely to contain
# (`PPPPPPPP`). Does a head still look at the mirror position, or at the letter?

# %%
TryReversal()

# %%
import matplotlib.pyplot as plt

from mhsa_helpers.widgets.reverse import parse_letters, reverse_on

for text in ("AAAABBBB", "PPPPPPPP"):
    letters = parse_letters(text)
    weights, output, _ = reverse_on(letters)  # (n_heads, T, T), T letters
    print(f"{text}: the model outputs {''.join(output)}, the input reversed is {text[::-1]}")
    for k, (pattern, share) in enumerate(heads.name_heads(weights)):
        print(f"  head {k + 1}: {heads.PATTERNS.get(pattern, 'no single key')} ({share:.2f} of its weight)")
    display(heads_figure(weights, letters, letters, f"{text}: each head's weights", vmin=0, vmax=1))
    plt.close("all")  # shown here, under its lines, not again at the end of the cell

# %% [markdown]
# ## 6. The mask decides what can be learned
#
# A decoder trains with the causal mask of step 6: query $i$ sees only keys
# $j \le i$. Its answer sits at key $T-1-i$, which is visible only when
# $T-1-i \le i$, that is for $i \ge (T-1)/2$. The same model, trained the same
# way with the causal mask, can only guess the first half of the output:

# %%
causal = mh.causal_mask(T)
masked = loop.train(loop.STEPS, attention=attention, attention_backward=attention_backward, mask=causal, bar="causal")
right = model.predict(masked.params, x_test, attention=attention, mask=causal) == y_test  # (N, T)
per_position = right.mean(axis=0)
visible = np.arange(T) >= (T - 1) / 2
print(f"held-out accuracy with the causal mask: {masked.accuracy:.1%}")
print(f"positions whose answer is visible:   {per_position[visible].mean():.1%}")
print(f"positions whose answer is masked:    {per_position[~visible].mean():.1%}   (chance {1 / V:.1%})")
accuracy_by_position(per_position, visible, V);

# %% [markdown]
# ## What to try
#
# - `loop.train(n_heads=1, attention=attention, attention_backward=attention_backward)`,
#   or `n_heads=4`: does one head suffice? Do four split the work?
# - Another `seed=`: the same task, other initial weights. Which heads learn
#   the mirror, and how sharply?
# - `d_model=8`: less room in each head.
# - Draw a trained head's scores $Z$ instead of its weights: how large do
#   they have to be for the softmax to pick one key out of $T$?
