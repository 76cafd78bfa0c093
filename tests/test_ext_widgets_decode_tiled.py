"""The live companions of notebooks 13 and 14: the learner's function where its check passes."""

import re

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers.checks.step13_kv_cache import PREPENDED
from mhsa_helpers.widgets import svg
from mhsa_helpers.widgets.kv_cache import DecodeWidget
from mhsa_helpers.widgets.tiled import TiledWidget, online_softmax
from tests.support.extensions import load, picture
from tests.support.widget_answers import DECODE, NOT_RESCALED, PREPENDING, TILED


def size_of(picture: str) -> tuple[str, str]:
    return re.match(r"<svg[^>]* width='(\d+)' height='(\d+)'", picture).groups()


FIXED = (str(svg.WIDTH), str(svg.HEIGHT))


def test_the_decode_slider_and_buttons_redraw_at_a_fixed_size():
    w = DecodeWidget()
    first = picture(w)
    assert size_of(first) == FIXED and "token 1 of 6" in first
    assert "course's <code>decode_step</code>" in w.status_w.value
    w.next()
    assert w.step_w.value == 2 and picture(w) != first and size_of(picture(w)) == FIXED
    w.step_w.value = 6
    assert "not in the cache yet" not in picture(w)
    w.reset()
    assert w.step_w.value == 1 and picture(w) == first
    assert first.count("not in the cache yet") == 2 * 5  # 2 heads, 5 tokens to come


def test_every_decoded_row_equals_causal_attention():
    w = DecodeWidget()
    e = w.example
    full, A = mh.multi_head_self_attention(e.X, *e.weights, 2, mh.causal_mask(e.T))
    for tokens in range(1, e.T + 1):
        w.step_w.value = tokens
        t = tokens - 1
        y, K, _ = w.steps()[0][t]
        np.testing.assert_allclose(y, full[t], atol=1e-12)
        np.testing.assert_allclose(w.weights_of(t, K), A[:, t, : t + 1], atol=1e-12)
        assert w.difference < 1e-12
        said = w.status_w.value + w.notes_w.value
        assert said.count("max |difference|") == 1, said
        assert f"token {tokens} (" in said and f"equals row {t} of causal" in said


def test_the_kv_cache_verdict_is_said_once_where_the_comparison_is():
    """One sentence compares cached decoding with the full recomputation, not three."""
    prepending = load(PREPENDING, "decode_step")
    for functions, tokens in (({}, 1), ({}, 4), ({"decode_step": prepending}, 6)):
        w = DecodeWidget(functions=functions, tokens=tokens)
        status, notes = w.status_w.value, w.notes_w.value
        sentence = re.search(r"Cached decoding of token \d+ .*?max \|difference\| = [^<]*\.", notes)
        assert sentence is not None, notes
        assert (status + notes).count(sentence.group(0)) == 1
        assert (status + notes).count("max |difference|") == 1
        assert (status + notes + picture(w)).count("equal") == 1  # "equals", once
        assert f"Token {tokens} of 6" in status


def test_a_decode_step_that_differs_is_said_not_equal_once():
    w = DecodeWidget(tokens=3)
    w.full = w.full + 0.5  # as if the recomputation differed: the sentence says so
    w.update()
    said = w.status_w.value + w.notes_w.value
    assert "<b>does not equal</b> row 2" in said and "max |difference| = 5.0e-01" in said
    assert said.count("max |difference|") == 1


def test_a_passing_decode_step_is_used_and_named():
    mine = load(DECODE, "decode_step")
    w = DecodeWidget(functions={"decode_step": mine}, tokens=4)
    assert "<b>your</b> <code>decode_step</code>" in w.status_w.value
    assert w.steps()[0] is w._runs[1] and w._runs[0] is mine
    assert picture(w) == picture(DecodeWidget(tokens=4))  # the same numbers


def test_a_prepending_decode_step_is_replaced_with_the_checks_sentence():
    w = DecodeWidget(functions={"decode_step": load(PREPENDING, "decode_step")}, tokens=3)
    assert "instead of yours" in w.status_w.value and PREPENDED in w.notes_w.value
    assert w._runs[0] is mh.decode_step
    assert picture(w) == picture(DecodeWidget(tokens=3))


def test_a_decode_step_that_breaks_on_its_own_caches_falls_back_and_says_so():
    mine = load(DECODE, "decode_step")

    def lists(x, cache, *rest):  # the check hands it tuples; its own caches are lists
        if isinstance(cache, list):
            raise TypeError("a list")
        y, (K, V) = mine(x, cache, *rest)
        return y, [K, V]

    w = DecodeWidget(functions={"decode_step": lists}, tokens=2)
    assert "instead of yours (yours raised TypeError" in w.status_w.value
    assert "passes its check but, fed its own caches, raised TypeError" in w.notes_w.value
    assert w._runs[0] is mh.decode_step


def test_the_block_slider_redraws_at_a_fixed_size_and_follows_the_block_size():
    w = TiledWidget(block_size=2, block=1)
    first = picture(w)
    assert size_of(first) == FIXED and "block 1 of 3" in first and "not read yet" in first
    w.block_w.value = 2
    assert picture(w) != first and size_of(picture(w)) == FIXED
    w.size_w.value = 4  # does not divide T = 6: a shorter last block
    assert w.block_w.max == 2 and [(s.start, s.end) for s in w.steps] == [(0, 4), (4, 6)]
    w.size_w.value = 1
    assert w.block_w.max == 6 and w.block_w.value == 2
    w.size_w.value = 3
    assert w.block_w.max == 2 and w.block_w.value == 2


def test_the_last_block_gives_attention_heads_row():
    e = mh.get_example("song")
    Q, K, V = mh.project_qkv(e.X, e.W_q, e.W_k, e.W_v)
    row = mh.attention_head(Q, K, V)[0][-1]
    for b in (1, 2, 3, 4):
        w = TiledWidget(block_size=b, block=6)
        assert w.block_w.value == w.block_w.max
        np.testing.assert_allclose(w.steps[-1].output, row, atol=1e-12)
        assert w.difference < 1e-12 and "equal: max |difference|" in picture(w)
        steps = online_softmax(w.scores, V, b)
        S = w.scores
        assert steps[-1].m == S.max()
        np.testing.assert_allclose(steps[-1].l, np.exp(S - S.max()).sum())
        np.testing.assert_allclose(steps[0].l, np.exp(S[:b] - S[:b].max()).sum())


@pytest.mark.slow  # a passing tiled_attention: its calls at T = 4096 (tests/support/marks.py)
def test_a_passing_tiled_attention_is_named_and_a_failing_one_is_not():
    mine = TiledWidget(functions={"tiled_attention": load(TILED, "tiled_attention")})
    assert "<b>your</b> <code>tiled_attention</code>" in mine.status_w.value
    assert "equals their final row" in mine.notes_w.value
    bad = TiledWidget(functions={"tiled_attention": load(NOT_RESCALED, "tiled_attention")})
    assert "instead of yours" in bad.status_w.value and "is not rescaled" in bad.notes_w.value
    assert "course's <code>tiled_attention</code>" in bad.status_w.value
    assert picture(bad) == picture(TiledWidget())
