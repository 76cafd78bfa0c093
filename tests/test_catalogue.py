"""Every catalogued mistake can be told apart: on some visible input its wrong output
differs from the reference and from every other mistake's, so its hint names it alone
(where an input cannot tell two apart, the check waits for one that can)."""

import re

import numpy as np
import pytest

from mhsa_helpers import reference as ref
from mhsa_helpers.checks import (
    CHECKS,
    step01_input,
    step04_heads,
    step05_scores,
    step06_masking,
    step08_head_output,
    step09_multi_head,
    step10_capstone,
)
from mhsa_helpers.checks.core import close


def catalogues(name):
    """``(expected, [(hint, wrong)])`` for every visible call of exercise ``name``."""
    for call in CHECKS[name].calls():
        a, ctx = call.args, call.context
        if name == "positional_encoding":
            yield ref.positional_encoding(*a), step01_input.mistakes(*a)
        elif name == "split_heads":
            yield ref.split_heads(*a), step04_heads.split_mistakes(*a)
        elif name == "merge_heads":
            yield ref.merge_heads(*a), step04_heads.merge_mistakes(*a)
        elif name == "attention_scores":
            yield ref.attention_scores(*a), step05_scores.mistakes(*a, ctx.get("d_model"))
        elif name == "causal_mask":
            yield ref.causal_mask(*a), step06_masking.causal_mistakes(*a)
        elif name == "padding_mask":
            yield ref.padding_mask(*a), step06_masking.padding_mistakes(*a)
        elif name == "attention_head":
            Q, K, V, *mask = a
            out, _ = ref.attention_head(Q, K, V, *mask)
            known = step08_head_output.mistakes(Q, K, V, mask[0] if mask else None)
            yield out, [(h, o) for h, o, _ in known]
        elif name == "multi_head_self_attention":
            X, Wq, Wk, Wv, Wo, h, *mask = a
            out, _ = ref.multi_head_self_attention(*a)
            known = step09_multi_head.mistakes(X, Wq, Wk, Wv, Wo, h, mask[0] if mask else None)
            yield out, [(m, o) for m, o, _ in known]
        elif name == "multi_query_attention":
            X, Wq, Wk, Wv, Wo, h, *mask = a
            out, _ = ref.multi_query_attention(*a)
            known = step10_capstone.mistakes(X, Wq, Wk, Wv, Wo, h, mask[0] if mask else None)
            yield out, [(m, o) for m, o, _ in known]


NAMES = [
    "positional_encoding",
    "split_heads",
    "merge_heads",
    "attention_scores",
    "causal_mask",
    "padding_mask",
    "attention_head",
    "multi_head_self_attention",
    "multi_query_attention",
]


def mistake(hint: str) -> str:
    """The mistake a hint names, whatever numbers of its input it quotes."""
    return re.sub(r"\d+(\.\d+)?", "#", hint)


@pytest.mark.parametrize("name", NAMES)
def test_every_hint_is_told_apart_on_some_visible_input(name):
    hints, told_apart = set(), set()
    for expected, known in catalogues(name):
        known = [(mistake(h), np.asarray(w)) for h, w in known if w is not None]
        for hint, wrong in known:
            hints.add(hint)
            if close(wrong, expected):
                continue  # on this input the mistake changes nothing
            others = [w for h, w in known if h != hint]
            if not any(close(wrong, w) for w in others):
                told_apart.add(hint)
    assert hints and hints == told_apart, sorted(hints - told_apart)
