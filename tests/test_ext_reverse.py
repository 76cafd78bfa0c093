"""Try your own input (notebook 18): the trained model on letters the learner types.

The kernel's rules (:func:`parse_letters`, :func:`reverse_on`) and what the widget sends;
what the page says of an input (``front/reverse.js``: ``verdict``, ``headLines``), run
under Node.js and compared with numpy. The page itself (typing, the picture) is driven in
Chromium by ``tests/test_site.py`` and ``tests/test_browser_extensions.py``.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from mhsa_helpers.training import heads, loop, model, saved, task
from mhsa_helpers.widgets.base import esm
from mhsa_helpers.widgets.reverse import PARAMS, TryReversal, parse_letters, reverse_on
from tests.support.node import run_json

CASES = Path(__file__).parent / "js" / "reverse_cases.mjs"


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
    outputs = np.array([[task.VOCAB.index(c) for c in reverse_on(task.letters(s))[1]] for s in x])
    np.testing.assert_array_equal(outputs, model.predict(shipped, x))
    assert (outputs == task.targets(x)).mean() >= loop.GOAL


def test_the_widget_sends_the_model_once_and_the_page_runs_it():
    """The parameters as the page's ``reversal`` reads them, the first text, the module."""
    shipped = saved.load_trained()
    w = TryReversal()
    assert w._esm == esm("reverse.js") and "export default" in w._esm
    for name in PARAMS:
        np.testing.assert_array_equal(np.array(w.params[name]), shipped[name], err_msg=name)
    assert (w.params["n_heads"], w.params["vocab"]) == (shipped["n_heads"], task.VOCAB)
    assert w.params["patterns"] == heads.PATTERNS
    assert w.text == " ".join(task.letters(shipped["sequence"]))
    assert TryReversal(text="a b c").text == "a b c"  # the page says why it is refused
    bundle = w._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data["text/plain"] == TryReversal.where  # one line where no widget runs


def without_head(k: int) -> dict:
    shipped = saved.load_trained()
    return heads.without_head({name: shipped[name] for name in model.init_params()}, k)


@pytest.fixture(scope="module")
def said() -> dict:
    """What the page says (``verdict``) of each run, and ``headLines`` of made-up weights."""
    T = task.SEQ_LEN
    flat = np.full((1, T, T), 1 / T)  # no key preferred: no pattern
    runs = [
        (None, "a b c d e f g h"),
        (None, "PPPPPPPP"),
        (None, "A,A,A,A,B,B,B,B"),
        (without_head(0), "KNPCIJBA"),
        (without_head(1), "ABCDEFGH"),
    ]
    payload = {
        "runs": [{"params": TryReversal(params=p).params, "text": text} for p, text in runs],
        "weights": [flat.tolist()],
        "patterns": heads.PATTERNS,
    }
    got = run_json(CASES, payload)
    return {"runs": runs, "words": got["words"], "flat": got["lines"][0]}


def test_the_page_says_the_output_against_the_reversed_input(said):
    for (params, text), words in zip(said["runs"], said["words"], strict=True):
        letters = parse_letters(text)
        _, output, probs = reverse_on(letters, params)
        want = letters[::-1]
        status, first = words["status"], words["notes"][0]
        assert "<br" not in status and "\n" not in status
        assert status.startswith(f"{''.join(letters)} → output {' '.join(output)}: ")
        right = [o == e for o, e in zip(output, want, strict=True)]
        assert f"{sum(right)} of {len(letters)} letters right" in status
        assert ("not quite the reverse" in status) == (not all(right))
        for i, ok in enumerate(right):
            named = f"position {i} gave {output[i]} (want {want[i]})"
            assert (named in first) == (not ok), (named, first)
        assert f"probability of {np.floor(probs.min() * 1000) / 1000:.3f} or more" in first
        each = ", ".join(f"{o} {p:.3f}" for o, p in zip(output, probs, strict=True))
        assert first.endswith(f"{each}."), first
    assert "not quite" not in said["words"][0]["status"]  # the model works
    assert any("not quite" in w["status"] for w in said["words"][3:])  # without a head: not


def test_the_page_names_what_each_head_attends_to_with_measured_numbers(said):
    """Each head's line: the pattern ``heads.name_heads`` finds, its share, how many queries'
    strongest key it is; else each query's strongest key."""
    for (params, text), words in zip(said["runs"], said["words"], strict=True):
        weights = reverse_on(parse_letters(text), params)[0]  # (h, T, T)
        lines, T = words["notes"][1:], weights.shape[-1]
        assert len(lines) == weights.shape[0]
        for k, ((pattern, share), line) in enumerate(
            zip(heads.name_heads(weights), lines, strict=True)
        ):
            top = weights[k].argmax(axis=-1)  # (T,)
            assert line.startswith(f"head {k + 1}: "), line
            if pattern is None:
                assert "no single pattern" in line and line.endswith(" ".join(map(str, top)))
                continue
            hits = int((top == heads.pattern_keys(pattern, T)).sum())
            assert f"mostly {heads.PATTERNS[pattern]}, the strongest key for {hits} of {T}" in line
            assert f"({share:.2f} of its weight there on average)" in line
    flat = said["flat"]
    assert len(flat) == 1 and "no single pattern" in flat[0]
    assert re.search(r"\(positions from 0\): 0 0 0 0 0 0 0 0$", flat[0])  # the first largest
