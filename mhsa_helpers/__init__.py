"""mhsa_helpers: reference implementation, worked examples and widgets of the course."""

from .examples import EXAMPLES, Example, get_example
from .reference import (
    attention_head,
    attention_scores,
    causal_mask,
    init_weights,
    kv_cache_size,
    merge_heads,
    multi_head_self_attention,
    multi_query_attention,
    padding_mask,
    positional_encoding,
    project_qkv,
    softmax,
    split_heads,
)

__all__ = [
    "EXAMPLES",
    "Example",
    "attention_head",
    "attention_scores",
    "causal_mask",
    "get_example",
    "init_weights",
    "kv_cache_size",
    "merge_heads",
    "multi_head_self_attention",
    "multi_query_attention",
    "padding_mask",
    "positional_encoding",
    "project_qkv",
    "softmax",
    "split_heads",
]
