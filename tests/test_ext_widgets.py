"""The live companion of notebook 16 (the other extensions' widgets: their own test files), and
what every extension widget shares: the learner's function where its check passes, text of 11 px
at least."""

import re

import numpy as np

from mhsa_helpers.checks.step16_sliding_window import ONE_TOO_MANY
from mhsa_helpers.examples import get_example
from mhsa_helpers.widgets.base import FRONT
from mhsa_helpers.widgets.sliding_window import SlidingWindowWidget
from tests.support.extensions import load, panels

OFF_BY_ONE = """
def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError(f"window must be at least 1, but got {window}.")
    i, j = np.indices((seq_len, seq_len))
    return np.where((j <= i) & (j >= i - window), 0.0, -np.inf)
"""


def window(T: int, w: int):
    """The sliding-window mask by its definition: key j is read by query i iff i − w < j ≤ i."""
    return np.array([[0.0 if i - w < j <= i else -np.inf for j in range(T)] for i in range(T)])


def test_the_window_slider_shows_the_mask_as_a_mask_and_counts_the_keys():
    w = SlidingWindowWidget(window=2)
    T = get_example("song").T
    assert w.values == {"window": 2} and [o[1] for o in w.controls[0]["options"]] == [*range(1, 7)]
    for n in range(1, T + 1):
        M, A = panels(w, window=n)
        assert np.array_equal(M["M"], window(T, n)) and M["neutral"]  # white and hatched
        assert A["blocked"] == np.isneginf(window(T, n)).tolist()
        np.testing.assert_allclose(A["M"].sum(axis=1), 1.0)
        assert np.all(A["M"][np.isneginf(window(T, n))] == 0)
        assert f"sees {min(n, T)} key(s)" in w.current()["status"]
        assert M["meaning"] and A["meaning"]
    assert "course's <code>sliding_window_mask</code>" in w.current()["status"]


def test_a_passing_learner_function_is_drawn_and_a_failing_one_is_not():
    right = OFF_BY_ONE.replace("j >= i - window", "j > i - window")
    mine = SlidingWindowWidget(
        functions={"sliding_window_mask": load(right, "sliding_window_mask")}
    )
    assert "<b>your</b>" in mine.current()["status"] and not mine.failing
    bad = SlidingWindowWidget(
        functions={"sliding_window_mask": load(OFF_BY_ONE, "sliding_window_mask")}
    )
    state = bad.current()
    assert bad.failing and "instead of yours" in state["status"] and "see below" in state["status"]
    assert ONE_TOO_MANY in " ".join(state["notes"])  # the check's sentence, under the picture
    assert np.array_equal(panels(bad)[0]["M"], window(6, 3))  # the reference is drawn
    assert "sees 3 key(s)" in state["status"]


def test_the_page_draws_no_text_smaller_than_11_px():
    """Every widget (the explorer, the extensions' panels, the reversal) is drawn by
    front/draw.js: every size it writes."""
    js = (FRONT / "draw.js").read_text()
    sizes = [float(s) for s in re.findall(r'"font-size": (\d+)', js)]
    sizes += [float(s) for s in re.findall(r"[?:] (\d+)", re.search(r"const font = (.*);", js)[1])]
    assert sizes and min(sizes) >= 11, sorted(sizes)


def test_the_decoded_token_is_counted_one_way_and_its_position_says_from_where():
    """ "Token 3 of 6" counts from 1; the position (what RoPE and the mask use) says it counts
    from 0: never two unexplained numbers for one token."""
    from mhsa_helpers.widgets.kv_cache import DecodeWidget

    w = DecodeWidget(tokens=3)
    token = w.example.tokens[2]
    status = w.current()["status"]
    assert (
        "Token 3 of 6" in status and f"\u201c{token}\u201d (position 2, counting from 0)" in status
    )
