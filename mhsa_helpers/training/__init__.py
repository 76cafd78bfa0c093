"""The training notebook's tiny transformer, trained in numpy with the course's backward pass.

The task: **reverse a sequence** of letters. The output at position ``i`` is
the input letter at position ``T - 1 - i``, which only attention can fetch: a
head has to learn to look from query ``i`` to key ``T - 1 - i`` (the
anti-diagonal of its attention matrix).

The model, for a sequence of token ids ``x``::

    X      = E[x] + P                       token embedding + position embedding
    out, A = multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads)
    H      = X + out                        residual connection
    logits = H @ W_u + b_u                  one score per letter, at every position

and the loss is the mean cross-entropy of ``logits`` against the reversed
sequence. The attention layer's forward and backward functions are
parameters of every function that runs the model (the reference's by
default), so that the training notebook can train with the learner's own.

One module a job:

- :mod:`~mhsa_helpers.training.task`: the task's data (sequences, targets, batches, held-out set);
- :mod:`~mhsa_helpers.training.model`: the parameters, the forward pass and the loss;
- :mod:`~mhsa_helpers.training.backward`: the hand-written backward pass, and its check by
  central differences;
- :mod:`~mhsa_helpers.training.adam`: the optimiser;
- :mod:`~mhsa_helpers.training.layer`: which attention layer to train with (the learner's
  where its check passes);
- :mod:`~mhsa_helpers.training.loop`: the training loop, with its progress bar (tqdm);
- :mod:`~mhsa_helpers.training.heads`: reading what each head learned;
- :mod:`~mhsa_helpers.training.saved`: the shipped worked example ``trained``, written and read;
- :mod:`~mhsa_helpers.training.__main__`: the command line, ``python -m mhsa_helpers.training``,
  which trains with the fixed seed and writes ``mhsa_helpers/data/trained.npz``;
- :mod:`~mhsa_helpers.training.induction`: notebook 19's two-layer model that learns to copy
  (an induction head), its training, head scores and ablation, and its shipped weights
  ``mhsa_helpers/data/induction.npz`` (``python -m mhsa_helpers.training.induction``).
"""
