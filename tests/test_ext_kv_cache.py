"""decode_step's check: each typical mistake, written as a learner would, gets its own hint.

Correct but unusual answers (float32, einsum, one head at a time, lists
instead of tuples) pass the visible and the hidden checks; the contract's
strict rules (inputs untouched, no warnings, a ValueError) fail when broken.
"""

import numpy as np

import mhsa_helpers as mh
from mhsa_helpers import checks
from tests.support.answers import single_precision
from tests.support.ext_kv_cache import EINSUM, NAME, decode
from tests.support.extensions import fails, load
from tests.support.oracles import CATALOGUED


def test_the_check_is_catalogued():
    assert NAME in CATALOGUED


def test_the_cache_is_compared_after_every_step():
    """Right outputs, but the cache of step 3 on loses a position: named at that step."""
    source = decode(
        grow="np.concatenate([cache[0], k], axis=-2)[..., -3:, :], "
        "np.concatenate([cache[1], v], axis=-2)[..., -3:, :]"
    )
    message = fails(NAME, source)
    assert "after step 3" in message and "shape" in message, message


def test_a_cache_overwritten_in_place_fails():
    source = decode(
        before="if cache is not None:\n        cache[0][...] = cache[0] * 1.0 + 0.5"
        "  # 'refreshes' the cache in place"
    )
    message = fails(NAME, source)
    assert "modified the cache passed in" in message, message


def test_a_single_precision_answer_passes(capsys):
    fn = single_precision(load(EINSUM, NAME))
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


def test_a_learner_feeding_its_own_caches_gets_the_causal_rows():
    """What the notebook's worked check does: the learner's caches fed back, step after step."""
    fn = load(EINSUM, NAME)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2, 7, 6))
    Ws = [rng.normal(size=(6, 6)) for _ in range(4)]
    full, _ = mh.multi_head_self_attention(X, *Ws, 3, mh.causal_mask(7))
    cache = None
    for t in range(7):
        y, cache = fn(X[:, t], cache, *Ws, 3)
        np.testing.assert_allclose(y, full[:, t], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cache[0], mh.split_heads(X @ Ws[1], 3), rtol=1e-12)


def test_a_pair_of_other_kinds_is_refused_with_a_sentence():
    source = decode(cache="{'K': K, 'V': V}")
    message = fails(NAME, source)
    assert "pair (K', V')" in message, message
