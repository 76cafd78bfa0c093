# %% [markdown]
# # After training — Watch an induction head form
#
# Notebook 18 trained one attention layer to reverse letters: its heads
# learned to look at a fixed **position**. The most famous thing attention
# learns is not positional but **in context**: the *induction head* (Olsson et
# al., "In-context Learning and Induction Heads", 2022; Elhage et al., "A
# Mathematical Framework for Transformer Circuits", 2021). It finds the earlier
# occurrence of the current token and copies the token that came after it. No
# single head can do that: it takes two layers working together. Here you train
# them, with your own attention layer and its backward pass, and watch the
# circuit appear.
#
# 1. The task: a random sequence that repeats.
# 2. The model: two layers of your attention.
# 3. Training: the loss of each half, and the moment the second one drops.
# 4. Seeing the circuit: every head of both layers, its scores (your
#    exercise, `induction_scores`), and your own sequence.
# 5. The scores over training: the phase change.
# 6. Cutting a head off.

# %% setup
from IPython.display import HTML, display

from mhsa_helpers.execution.saved import learner_functions
from mhsa_helpers.gradcheck import relative_error
from mhsa_helpers.learner import learner_or_reference
from mhsa_helpers.line_plots import halves_curves, scores_over_training
from mhsa_helpers.plots import heads_figure, mark_cells
from mhsa_helpers.training import induction, layer
from mhsa_helpers.widgets.explorer import Explorer

T, L, V = induction.SEQ_LEN, induction.PERIOD, len(induction.VOCAB)

# %% [markdown]
# ## 1. The task: a random sequence that repeats
#
# A sequence of $L$ tokens, all different, drawn at random, is written twice:
# $x_0, \ldots, x_{L-1}, x_0, \ldots, x_{L-1}$. At every position the model
# predicts the **next** token. In the first half that is impossible: the next
# token is random. In the second half it is easy, for whoever reads the first
# half: the token at position $t \ge L$ occurred before at $t - L$, and what
# follows it now is what followed it then,
#
# $$x_{t+1} = x_{t+1-L} \qquad (L \le t \le 2L - 2). \label{copy}$$
#
# The held-out sequences are exactly that, with $L = 8$ tokens out of
# $V = 24$ (the letters A–X), $T = 16$ positions. The **training** sequences
# differ in one way: each repeats its own number $p$ of tokens, from 4 to 8,
# until it is $T$ long. Trained only on $p = 8$, the model finds a cheaper
# trick: a head that looks exactly 7 positions back, found by position alone.
# It scores well on period 8 and fails on any other; varying $p$ leaves no
# fixed offset to learn, only the content.

# %%
x_batch, periods = next(induction.training_batches())
for seq, p in zip(x_batch[:4], periods[:4]):
    print(f"period {p}:  {' '.join(induction.tokens(seq))}")
x_test = induction.held_out()
print(f"\nheld-out: {len(x_test)} sequences of {L} tokens repeated once, e.g. "
      f"{' '.join(induction.tokens(x_test[0]))}")
print(f"guessing gets {1 / V:.1%} of the tokens right")

# %% [markdown]
# ## 2. The model: two layers of your attention
#
# Token ids become vectors as in 18; then **two** multi-head self-attention
# layers, each added to its input (the residual stream), with the causal mask
# of step 6 (a prediction of the next token must not see it), and a readout:
#
# $$X_0 = E[x] + P, \qquad
# X_1 = X_0 + \operatorname{MultiHead}_1(X_0), \qquad
# X_2 = X_1 + \operatorname{MultiHead}_2(X_1), \qquad
# \text{logits} = X_2\, W_U + b_U . \label{two-layers}$$
#
# Nothing else: no feed-forward block, no normalisation. The loss is the
# cross-entropy of the prediction at every position $t$ against $x_{t+1}$.
# Backward, each layer is your `multi_head_self_attention_backward`, and the
# residual connections add the two paths, layer 2 first:
#
# $$dX_1 = dX_2 + \operatorname{MultiHead\_backward}_2(dX_2)_X, \qquad
# dX_0 = dX_1 + \operatorname{MultiHead\_backward}_1(dX_1)_X .$$
#
# Both layers run your functions (as saved, from `09_multi_head` and
# `17_backward`) wherever their checks pass; the cell says which.

# %%
functions = learner_functions()
attention, attention_backward, said = layer.layer_functions(functions, directory=".")
display(HTML(said))

# %% [markdown]
# The whole model's gradient against central differences, on a tiny model
# ($d_{model} = 4$, $T = 6$, two sequences), every parameter:

# %%
tiny = induction.init_params(seed=3, d_model=4, seq_len=6)
x_tiny, _ = induction.sequences(2, np.random.default_rng(0), periods=(3,), seq_len=6)
_, grads, _ = induction.loss_and_grads(tiny, x_tiny, 2, attention, attention_backward)
numeric = induction.numerical_grads(tiny, x_tiny, 2)
worst = max(relative_error(grads[n], numeric[n]) for n in tiny)
print(f"{len(tiny)} parameters; largest relative error {worst:.1e}")

# %% [markdown]
# ## 3. Training
#
# Adam, as in 18, on fresh batches of 64 sequences; every 25 steps the
# accuracy on the repeated half of the held-out sequences (the predictions
# \eqref{copy}) is measured.

# %%
result = induction.train(attention=attention, attention_backward=attention_backward, bar="training")
print(result.summary())

# %% [markdown]
# The loss of the two halves, step by step. The repeated part's falls slowly
# at first, then **drops** steeply: the dashed line marks the step where,
# averaged over 10 steps, it falls below half of $\log V$. The first period's
# does the opposite: it climbs **above** chance, $\log V$, and stays there. No
# model can do better there than $\log(V - t - 1)$ (after $t + 1$ distinct
# tokens the next is one of the $V - t - 1$ not yet seen: the dotted line, the
# mean of these). But the copying machinery also runs where there is nothing
# to copy: its heads must put their weight somewhere, and the model bets on
# tokens it has already seen, which in the first period, whose tokens are all
# different, are certainly wrong. The last line below measures that bet.

# %%
drop = induction.drop_step(result.loss_repeated, np.log(V) / 2)
best = induction.best_first_loss()
print(f"the repeated part's loss drops below log(V)/2 = {np.log(V) / 2:.2f} at step {drop}")
print(f"first period at the end: {result.loss_first[-50:].mean():.3f} "
      f"(chance log V = {np.log(V):.3f}, best possible {best:.3f})")
probs = mh.softmax(induction.forward(result.params, x_test, attention=attention).logits)
seen = [np.take_along_axis(probs[:, t], x_test[:, : t + 1], axis=1).sum(1).mean() for t in range(L - 1)]
print(f"held-out, first period: probability put on tokens already seen, t = 0..{L - 2}: "
      f"{np.round(seen, 2)}")
halves_curves(result.loss_first, result.loss_repeated, np.log(V), best, drop);

# %% [markdown]
# ## 4. Seeing the circuit
#
# Every head of both layers on one held-out sequence. The circuit to look for:
#
# * in **layer 1**, a *previous-token head*: query $t$ attends to key $t-1$,
#   the stripe just below the diagonal (outlined on layer 1). Its output writes
#   into position $t$ which token came before it;
# * in **layer 2**, an *induction head*: query $t$ of the second half attends
#   to key $t - L + 1$, the stripe $L - 1$ below the diagonal (outlined on
#   layer 2). That key is the one whose **previous** token is the current
#   token, which layer 1 wrote there; its own token is the one to copy.

# %%
seq = x_test[0]
labels = induction.tokens(seq)
acts = induction.forward(result.params, seq, attention=attention)
A = np.concatenate([acts.A1, acts.A2])  # (2 * n_heads, T, T): layer 1's heads, then layer 2's
h = induction.N_HEADS
titles = [f"layer {layer} head {k + 1}" for layer in (1, 2) for k in range(h)]
previous = [(t, t - 1) for t in range(1, T)]
copying = [(t, t - L + 1) for t in range(L, T)]
fig = heads_figure(A, labels, labels, "attention on a held-out sequence", titles=titles,
                   mask=mh.causal_mask(T), vmin=0, vmax=1, columns=2)  # fmt: skip
mark_cells(fig, [previous] * h + [copying] * h);

# %% [markdown]
# One sequence could be luck. Over all the held-out sequences, a score per
# head: its **previous-token score**, the mean weight of query $t$ on key
# $t - 1$ over $t = 1, \ldots, L$ (the first period and query $L$: the keys
# an induction head reads from; later queries of a trained model look
# elsewhere), and its **induction score**, the mean weight of query $t$ on
# key $t - L + 1$ over the repeated half $t = L, \ldots, T - 1$:
#
# $$\text{prev}_k = \frac{1}{L} \sum_{t=1}^{L} A^{(k)}_{t,\,t-1}, \qquad
# \text{ind}_k = \frac{1}{T - L} \sum_{t=L}^{T-1} A^{(k)}_{t,\,t-L+1}, \label{scores}$$
#
# each averaged over the sequences too. The last query, $T - 1$, counts
# although no token follows it and no loss ever trained it: a head may look
# elsewhere there, which lowers its induction score a little.
#
# ### Exercise 19.1 — `induction_scores`
#
# Write `induction_scores(A, period)`: `A` holds the attention weights of
# $h$ heads, shape `(..., h, T, T)` (rows are queries, columns keys), with
# any number of leading axes (the sequences); `period` is $L$. Return the
# pair `(previous, induction)`, each of shape `(h,)`: one score per head,
# averaged over its queries and every leading axis. Query 0 has no previous
# token, and the first period's queries have no earlier occurrence to copy.


# %% answer="induction_scores"
def induction_scores(A, period):
    ### BEGIN SOLUTION
    A = np.asarray(A)
    h, T = A.shape[-3], A.shape[-1]
    t = np.arange(1, period + 1)
    previous = A[..., t, t - 1].reshape(-1, h, period).mean(axis=(0, 2))
    t = np.arange(period, T)
    induction = A[..., t, t - period + 1].reshape(-1, h, T - period).mean(axis=(0, 2))
    return previous, induction
    ### END SOLUTION


# %% tests="induction_scores"

# %% [markdown]
# The scores of every head on the 1000 held-out sequences, with your
# `induction_scores` once its check passes (the course's until then; the line
# says which). A head is named by the score it stands out on.

# %%
scores, said = learner_or_reference("induction_scores", globals(), {})
display(HTML(said.replace("Drawn with", "Computed with")))
everything = induction.forward(result.params, x_test, attention=attention)
for lay, A_all in ((1, everything.A1), (2, everything.A2)):
    prev, ind = scores(A_all, L)
    for k in range(h):
        role = ("previous-token head" if prev[k] > 0.5 else
                "induction head" if ind[k] > 0.5 else "")  # fmt: skip
        print(f"layer {lay} head {k + 1}: previous-token {prev[k]:.2f}, "
              f"induction {ind[k]:.2f}  {role}")

# %% [markdown]
# ### The circuit, step by step: the explorer
#
# The course ships the weights of this run (same seed, same steps) as the
# worked example `induction` (`python -m mhsa_helpers.training.induction`
# rebuilds it), on the held-out sequence drawn above. The explorer walks
# through the nine steps of one layer at a time, with your functions where
# their checks pass: choose **layer** 1 or 2. Layer 1's input $X$ is
# $X_0 = E[x] + P$; layer 2's is the residual stream $X_1$, layer 1's input
# plus its output. It opens on layer 2 at step 7: each head's induction
# stripe, $L - 1 = 7$ below the diagonal in the second half. Layer 1 shows the
# previous-token stripe just below the diagonal. The *query* view shows where
# one token looks: pick a query in the second half, and follow its widest line
# to the key after the earlier occurrence of the same letter. The mask is the
# causal one the model learned with; choose *none* to see what the heads
# would read if the future were not hidden.

# %%
Explorer(functions=functions, example="induction", layer=2, step=7, saved=True,
         controls=("layer", "mask", "query", "view", "step"))  # fmt: skip

# %% [markdown]
# ### Try it: your own sequence
#
# Type 3 to $L = 8$ letters A–X (spaces and commas are ignored); the model
# reads them repeated once, $2n$ tokens. Its heads on your sequence, the
# stripes outlined for your period $n$, what it predicts in the repeated
# half, and the two scores of every head on this one sequence. (Letters that
# occur twice make the earlier occurrence ambiguous: try it.)

# %%
typed = "HELPMIND"  # your letters
try:
    mine = induction.parse_tokens(typed)
except ValueError as why:
    print(why)
else:
    n = len(mine)
    x_mine = np.concatenate([mine, mine])
    acts_mine = induction.forward(result.params, x_mine, attention=attention)
    letters = induction.tokens(x_mine)
    guess = induction.tokens(acts_mine.logits.argmax(-1))
    right = [guess[t] == letters[t + 1] for t in range(n, 2 * n - 1)]
    print(f"your sequence, repeated: {' '.join(letters)}")
    print(f"after each of {' '.join(letters[n : 2 * n - 1])} the model predicts "
          f"{' '.join(guess[n : 2 * n - 1])}: {sum(right)} of {len(right)} right")
    A_mine = np.concatenate([acts_mine.A1, acts_mine.A2])  # (2 * n_heads, 2n, 2n)
    prev, ind = scores(A_mine, n)
    for i, title in enumerate(titles):
        print(f"{title}: previous-token {prev[i]:.2f}, induction {ind[i]:.2f}")
    fig = heads_figure(A_mine, letters, letters, f"attention on {typed!r}, repeated",
                       titles=titles, mask=mh.causal_mask(2 * n), vmin=0, vmax=1, columns=2)
    mark_cells(fig, [[(t, t - 1) for t in range(1, 2 * n)]] * h
               + [[(t, t - n + 1) for t in range(n, 2 * n)]] * h);

# %% [markdown]
# ## 5. The scores over training: the phase change
#
# Every 5 steps, training kept each head's attention on 32 held-out probe
# sequences. The same two scores, step by step, with the drop of the
# repeated part's loss (the dashed line, as above). The scores creep up at
# first; then the previous-token head and the induction heads rise steeply
# together, around the steps where the loss drops: neither is of use without
# the other, so they form as one circuit.

# %%
prev_t, ind_t = induction.scores_over_training(result, L, scores)
scores_over_training(result.probe_steps, prev_t, ind_t, drop);

# %% [markdown]
# ## 6. Cutting a head off
#
# As in 18, zeroing head $k$'s rows of a layer's $W_O$ removes that head and
# keeps the rest. If layer 2 copies with the help of layer 1's previous-token
# head, cutting that head should break the copying even though layer 2 is
# untouched. The held-out accuracy on the repeated half, without each head in
# turn:

# %%
cut = induction.ablation(result.params, x_test, attention=attention)
for key, acc in cut.items():
    name = "every head" if key is None else f"without layer {key[0]} head {key[1]}"
    print(f"{name:24} {acc:.1%}")

# %% [markdown]
# ## What to try
#
# - `induction.train(periods=(8,), attention=attention, attention_backward=attention_backward)`:
#   the fixed-period task. It reaches the goal too; draw its heads. Is there
#   an induction head, or a head that looks 7 back? Cut layer 2 off.
# - Another `seed=`: which head of layer 1 becomes the previous-token head?
# - `d_model=8`: is there room for the circuit?
