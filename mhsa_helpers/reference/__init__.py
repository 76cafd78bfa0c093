"""Reference implementation of multi-head self-attention, one function per exercise.

These are the functions the learner writes in the course notebooks; the
checks in :mod:`mhsa_helpers.checks` compare the learner's versions with these.
Weights act on the right, as in the course articles: ``Q = X @ W_q`` with
``W_q`` of shape ``(d_model, d_model)``; the head at index ``i`` owns the
columns ``i*d_k:(i+1)*d_k``. Leading batch axes (``...``) are allowed throughout.

One module a job: the nine steps (:mod:`.steps`), the capstone's variant and
the extensions (:mod:`.extensions`), the backward pass (:mod:`.backward`), and
the input checks and the layers' mask rule they share (:mod:`.inputs`).

Each function's docstring is its contract from the registry
(:class:`mhsa_helpers.exercises.Exercise`, written in ``exercises.toml``):
the meaning, then the function's own note on how it computes, then the
parameters and returns with their shapes. It is set here, at import, so that
``help(mh.softmax)`` in a notebook shows the same contract as the answer stub.
"""

from __future__ import annotations

import inspect

from ..exercises import exercise
from .backward import attention_head_backward, multi_head_self_attention_backward, softmax_backward
from .extensions import (
    cross_attention,
    decode_step,
    grouped_query_attention,
    kv_cache_size,
    multi_query_attention,
    rotary_embedding,
    sliding_window_mask,
    tiled_attention,
)
from .steps import (
    attention_head,
    attention_scores,
    causal_mask,
    init_weights,
    merge_heads,
    multi_head_self_attention,
    padding_mask,
    positional_encoding,
    project_qkv,
    softmax,
    split_heads,
)

#: One function per exercise of the course, in course order, named as in the registry
#: (``tests/test_registry.py`` proves that it is the registry's list).
__all__ = [  # noqa: RUF022 (course order, as the registry lists them)
    "positional_encoding",
    "init_weights",
    "project_qkv",
    "split_heads",
    "merge_heads",
    "attention_scores",
    "causal_mask",
    "padding_mask",
    "softmax",
    "attention_head",
    "multi_head_self_attention",
    "multi_query_attention",
    "kv_cache_size",
    "rotary_embedding",
    "grouped_query_attention",
    "decode_step",
    "tiled_attention",
    "cross_attention",
    "sliding_window_mask",
    "softmax_backward",
    "attention_head_backward",
    "multi_head_self_attention_backward",
]

for _name in __all__:
    _function = globals()[_name]
    _function.__doc__ = exercise(_name).docstring(notes=inspect.cleandoc(_function.__doc__ or ""))
del _name, _function
