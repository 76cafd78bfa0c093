"""Try your own input (notebook 18): the trained model on letters the learner types."""

import re

import numpy as np
import pytest

from mhsa_helpers.training import heads, loop, model, saved, task
from mhsa_helpers.widgets.reverse import TryReversal, head_lines, parse_letters, reverse_on
from tests.support.extensions import picture


@pytest.mark.parametrize(
    "text",
    ["ABCDEFGH", "abcdefgh", "a b c d e f g h", "A,B,C,D,E,F,G,H", " a, b,c d ,E F\tg h "],
)
def test_parse_letters_ignores_spaces_commas_and_case(text):
    assert parse_letters(text) == list("ABCDEFGH")


@pytest.mark.parametrize(
    "text, words",
    [
        ("ABCDEFG", ["8 letters A–P please", "got 7 letters"]),
        ("ABCDEFGHI", ["8 letters A–P please", "got 9 letters"]),
        ("A", ["got 1 letter."]),
        ("", ["8 letters A–P please", "got none"]),
        ("  , ,", ["got none"]),
        ("ABZDEFGH", ["'Z'", "not one of the letters A–P", "position 3"]),
        ("a b q", ["'Q'", "not one of the letters A–P", "position 3"]),
        ("ABC1EFGH", ["'1'", "not a letter", "position 4"]),
        ("12345678", ["'1'", "not a letter", "position 1"]),
        ("AB-CDEFGH", ["'-'", "not a letter", "position 3"]),
    ],
)
def test_parse_letters_gives_a_one_line_reason(text, words):
    with pytest.raises(ValueError) as info:
        parse_letters(text)
    reason = str(info.value)
    assert "\n" not in reason and len(reason) < 100, reason
    for word in words:
        assert word in reason, (word, reason)


def test_the_model_reverses_the_shipped_held_out_sequence():
    shipped = saved.load_trained()
    letters = task.letters(shipped["sequence"])
    weights, output, probs = reverse_on(letters)
    assert output == letters[::-1]
    assert weights.shape == (shipped["n_heads"], task.SEQ_LEN, task.SEQ_LEN)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    np.testing.assert_allclose(
        weights, model.head_weights(shipped, shipped["sequence"])
    )  # one model
    assert probs.shape == (task.SEQ_LEN,) and (probs > 0.5).all()


def test_on_random_sequences_the_output_is_what_predict_says():
    """``reverse_on`` is the trained model: same letters as ``predict``, at the goal."""
    shipped = saved.load_trained()
    x = task.sequences(200, np.random.default_rng(32))
    outputs = np.array(
        [[task.VOCAB.index(c) for c in reverse_on(task.letters(s)).output] for s in x]
    )
    np.testing.assert_array_equal(outputs, model.predict(shipped, x))
    assert (outputs == task.targets(x)).mean() >= loop.GOAL


def test_head_lines_name_the_mirror_with_measured_numbers():
    lines = head_lines(reverse_on(list("ABCDEFGH")).weights)
    assert len(lines) == model.N_HEADS
    for k, line in enumerate(lines):
        assert line.startswith(f"head {k + 1}: mostly the mirror position")
        assert re.search(r"for \d of 8 queries \((0|1)\.\d\d of its weight", line), line
    T = 4
    flat = np.full((1, T, T), 1 / T)  # no key preferred: no pattern
    assert "no single pattern" in head_lines(flat)[0]


def test_the_widget_draws_one_panel_per_head_and_names_the_output():
    w = TryReversal(text="a b c d e f g h")
    drawn = picture(w)
    assert drawn.startswith("<svg") and "ABCDEFGH" in drawn
    for k in range(model.N_HEADS):
        assert f"head {k + 1}: attention weights" in drawn
    assert f"head {model.N_HEADS + 1}:" not in drawn
    assert "output H G F E D C B A" in w.status_w.value
    assert "the reverse of your input, 8 of 8 letters right" in w.status_w.value
    assert "mirror position" in w.notes_w.value
    bundle = w._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data["image/svg+xml"] == w.figure.value  # static viewers see the picture


@pytest.mark.parametrize("text", ["ABZDEFGH", "ABC", "", "12345678", "a<b"])
def test_a_bad_input_gets_one_line_and_keeps_the_last_good_picture(text):
    w = TryReversal()
    good = picture(w)
    w.text_w.value = text
    status = w.status_w.value
    assert "<br" not in status and "\n" not in status
    with pytest.raises(ValueError) as info:
        parse_letters(text)
    shown = str(info.value).replace("<", "&lt;")
    assert shown in status
    assert "still shows your last good input, KNPCIJBA" in status
    assert picture(w) == good
    w.text_w.value = "P P P P P P P P"  # and a good one draws again
    assert "output P P P P P P P P" in w.status_w.value and picture(w) != good


def test_a_bad_first_input_draws_nothing_and_says_so():
    w = TryReversal(text="xyz")
    assert picture(w) == "" and "Nothing is drawn yet" in w.status_w.value
    assert "'X' is not one of the letters A–P (position 1" in w.status_w.value


def test_wrong_letters_are_named():
    """A model without one head gets letters wrong: the widget says which, and where."""
    shipped = saved.load_trained()
    params = {name: shipped[name] for name in model.init_params()}
    w = TryReversal(params=heads.without_head(params, 0))
    status, notes = w.status_w.value, w.notes_w.value
    right = [o == e for o, e in zip(w.result.output, w.letters[::-1], strict=True)]
    assert not all(right)
    assert f"{sum(right)} of 8 letters right" in status and "not quite the reverse" in status
    for i, ok in enumerate(right):
        if not ok:
            gave, want = w.result.output[i], w.letters[::-1][i]
            assert f"position {i} gave {gave} (want {want})" in notes
            assert str(i) in status.split("wrong at position")[1]
