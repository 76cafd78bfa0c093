"""The sentences that more than one check says, each written once.

A check module imports the sentence it shares with another instead of writing it
out again: rewording it here rewords it everywhere. ``tests/test_one_voice.py``
fails when a string of 30 characters or more is written in two check modules.
"""

from __future__ import annotations

#: The query heads cut from X·W_Q by stride (np.stack of Q[..., i::n_heads]), not in runs of d_k.
QUERY_HEADS_STRIDED = (
    "query head i takes every n_heads-th column of X·W_Q (columns i, i + n_heads, …): it owns "
    "the consecutive columns i·d_k … (i+1)·d_k − 1, as split_heads(X @ W_q, n_heads) gives them."
)
