"""The live companions of notebooks 11 and 16: the learner's function where its check passes."""

import re

import numpy as np

import mhsa_helpers as mh
from mhsa_helpers.checks.step16_sliding_window import ONE_TOO_MANY
from mhsa_helpers.widgets.rope import RopeWidget
from mhsa_helpers.widgets.sliding_window import SlidingWindowWidget
from tests.support.extensions import load, picture
from tests.support.pictures import cells, shown

OFF_BY_ONE = """
def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError(f"window must be at least 1, but got {window}.")
    i, j = np.indices((seq_len, seq_len))
    return np.where((j <= i) & (j >= i - window), 0.0, -np.inf)
"""


def test_the_window_slider_redraws_and_counts_the_keys():
    w = SlidingWindowWidget(window=2)
    first = picture(w)
    assert first.startswith("<svg") and "window 2" in first
    assert "course's <code>sliding_window_mask</code>" in w.status_w.value
    assert "sees 2 key(s)" in w.status_w.value
    w.window_w.value = 5
    assert picture(w) != first and "sees 5 key(s)" in w.status_w.value


def test_a_passing_learner_function_is_drawn_and_a_failing_one_is_not():
    mine = SlidingWindowWidget(
        functions={
            "sliding_window_mask": load(
                OFF_BY_ONE.replace("j >= i - window", "j > i - window"), "sliding_window_mask"
            )
        }
    )
    assert "<b>your</b>" in mine.status_w.value
    bad = SlidingWindowWidget(
        functions={"sliding_window_mask": load(OFF_BY_ONE, "sliding_window_mask")}
    )
    assert "instead of yours" in bad.status_w.value and "see below" in bad.status_w.value
    assert ONE_TOO_MANY in bad.notes_w.value  # the check's sentence, under the picture
    assert shown(picture(bad)) == shown(picture(SlidingWindowWidget()))  # the reference is drawn
    assert "sees 3 key(s)" in bad.status_w.value


def test_the_rope_offset_moves_the_tokens_not_the_scores():
    w = RopeWidget(offset=0)
    first = picture(w)
    w.offset_w.value = 17
    assert picture(w) != first and "positions 17 … 22" in picture(w)
    e = w.example
    R0, R17 = (mh.rotary_embedding(e.X, p + np.arange(e.T), w.base) for p in (0, 17))
    np.testing.assert_allclose(R0 @ R0.T, R17 @ R17.T, atol=1e-12)  # what the panel promises


def test_a_failing_rotary_embedding_is_replaced_by_the_reference():
    def calls_the_reference(X, positions=None, base=10000.0):  # its check refuses it
        return mh.rotary_embedding(X, None if positions is None else -np.asarray(positions), base)

    w = RopeWidget(functions={"rotary_embedding": calls_the_reference}, offset=4)
    assert "instead of yours" in w.status_w.value
    assert shown(picture(w)) == shown(picture(RopeWidget(offset=4)))


def test_no_picture_has_text_smaller_than_11_px():
    """Every widget, the explorer in every step and view included: text of at least 11 CSS px."""
    import re

    from mhsa_helpers.widgets.cross import CrossWidget
    from mhsa_helpers.widgets.explorer import Explorer
    from mhsa_helpers.widgets.explorer_steps import STEPS
    from mhsa_helpers.widgets.gqa import GQAWidget
    from mhsa_helpers.widgets.kv_cache import DecodeWidget
    from mhsa_helpers.widgets.tiled import TiledWidget

    pictures = [picture(w()) for w in (RopeWidget, SlidingWindowWidget, CrossWidget)]
    pictures += [picture(w()) for w in (GQAWidget, DecodeWidget, TiledWidget)]
    ex = Explorer(example="simple", n_heads=8, mask="causal")
    for step in range(1, len(STEPS) + 1):
        ex.step_w.value = step
        pictures.append(picture(ex))
    ex.view_w.value = "query"
    pictures.append(picture(ex))
    sizes = {float(s) for p in pictures for s in re.findall(r"font-size='([\d.]+)'", p)}
    assert sizes and min(sizes) >= 11, sorted(sizes)


def test_rope_shows_the_same_scores_at_every_offset():
    """The text says the scores do not change with the offset: the numbers shown agree."""

    def scores(picture):
        return [c.tip[0].split(" = ")[1] for c in cells(picture) if c.tip[0].startswith("scores")]

    w = RopeWidget()
    w.offset_w.value = 0
    first = scores(picture(w))
    assert len(first) == 36
    for offset in (1, 17, 60):
        w.offset_w.value = offset
        assert scores(picture(w)) == first, offset


def test_next_token_is_off_once_every_token_is_decoded():
    from mhsa_helpers.widgets.kv_cache import DecodeWidget

    w = DecodeWidget()
    w.step_w.value = w.step_w.max
    assert w.next_w.disabled
    w.step_w.value = 1
    assert not w.next_w.disabled


def test_the_decoded_token_is_counted_one_way_and_its_position_says_from_where():
    """ "token 3 of 8" counts from 1; the position (what RoPE and the mask use) says it counts
    from 0: never two unexplained numbers for one token."""
    from mhsa_helpers.widgets.kv_cache import DecodeWidget

    w = DecodeWidget()
    w.step_w.value = 3
    top = re.search(r"class='mhsa-info'[^>]*>([^<]*)<", picture(w))[1]
    token = w.example.tokens[2]
    assert "token 3 of " in top and f"\u201c{token}\u201d (position 2, counting from 0)" in top
