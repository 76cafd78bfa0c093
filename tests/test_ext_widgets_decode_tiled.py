"""The live companions of notebooks 13 and 14: every state computed at once, the learner's
function where its check passes, its mistakes told in words, drawn anyway when ticked."""

import json
import shutil
import subprocess

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers.checks.step13_kv_cache import NO_W_O, PREPENDED
from mhsa_helpers.checks.step14_tiled import SUM_NOT_RESCALED
from mhsa_helpers.widgets.base import FRONT
from mhsa_helpers.widgets.kv_cache import DecodeWidget
from mhsa_helpers.widgets.panels import NOT_WRITTEN
from mhsa_helpers.widgets.tiled import TiledWidget
from tests.support.ext_kv_cache import decode
from tests.support.extensions import load
from tests.support.widget_answers import DECODE, NOT_RESCALED, PREPENDING, TILED

song = mh.get_example("song")
T, H = song.T, 2
FULL, A = mh.multi_head_self_attention(song.X, *song.weights, H, mh.causal_mask(T))
Q, K, V = mh.project_qkv(song.X, song.W_q, song.W_k, song.W_v)
S = (Q @ K.T / np.sqrt(K.shape[-1]))[-1]  # the query "song"'s scores
ROW = mh.attention_head(Q, K, V)[0][-1]
STUB = "def {name}(*args, **kwargs):\n    raise NotImplementedError()\n"


def panels(state) -> dict:
    """The state's panels by title, their matrices as floats (−∞ where not computed)."""
    return {
        p["title"]: {**p, "M": np.array(p["M"], dtype=float)} for p in state["picture"]["panels"]
    }


def said(state) -> str:
    return " ".join([state["status"], *state["notes"]])


def drawn_as_promised(w) -> None:
    """Every panel means something; what is not computed yet is dotted (pending), never a mask's
    hatching; one fixed colour scale for every state, covering every number drawn."""
    fixed = {tuple(s["picture"]["fixed"]) for s in w.states}
    assert len(fixed) == 1
    ((lo, hi),) = fixed
    for state in w.states:
        for p in panels(state).values():
            assert len(p["meaning"].split()) >= 6 and p["blocked"] is None and not p.get("neutral")
            assert p.get("pending") or not np.isneginf(p["M"]).any(), p["title"]
            finite = p["M"][np.isfinite(p["M"])]
            assert ((finite >= lo) & (finite <= hi)).all() and -lo == hi


# ---------------------------------------------------------------------------- notebook 13
def test_the_decode_slider_has_a_state_per_token_and_next_and_reset_buttons():
    w = DecodeWidget(tokens=2)
    (spec,) = w.controls
    assert spec["label"] == "tokens decoded" and [o[1] for o in spec["options"]] == [
        1,
        2,
        3,
        4,
        5,
        6,
    ]
    assert spec["buttons"] == [["Next token", 1], ["Reset", "first"]]
    assert [s["key"] for s in w.states] == [{"tokens": t} for t in range(1, T + 1)]
    assert w.current()["key"] == {"tokens": 2} and "Token 2 of 6" in w.current()["status"]
    w.values = {"tokens": 5}  # what the page sets
    assert "Token 5 of 6" in w.current()["status"]
    drawn_as_promised(w)


def test_every_decoding_state_shows_the_cache_the_weights_and_the_causal_rows():
    KX, VX = song.X @ song.W_k, song.X @ song.W_v  # head i: columns 2i, 2i + 1
    for state in DecodeWidget().states:
        t = state["key"]["tokens"] - 1
        p = panels(state)
        token = f"\u201c{song.tokens[t]}\u201d"
        for title, M in (("cache K\u2032", KX), ("cache V\u2032", VX)):
            np.testing.assert_allclose(p[title]["M"][: t + 1], M[: t + 1], atol=1e-12)
            assert np.isneginf(p[title]["M"][t + 1 :]).all() and p[title]["highlight"] == t
            assert [b[3] for b in p[title]["blocks"]] == ["head 1", "head 2"]
        weights = p[f"weights of {token}"]["M"]  # cached token x head
        np.testing.assert_allclose(weights[: t + 1], A[:, t, : t + 1].T, atol=1e-12)
        assert np.isneginf(weights[t + 1 :]).all()
        np.testing.assert_allclose(p["y, step by step"]["M"][: t + 1], FULL[: t + 1], atol=1e-12)
        np.testing.assert_allclose(p["causal MHSA"]["M"], FULL, atol=1e-12)
        words = said(state)
        assert f"Token {t + 1} of 6: {token} (position {t}, counting from 0)" in words
        assert f"shape {(H, t + 1, 2)} each" in words
        assert f"token {t + 1} ({token}) equals row {t} of causal" in words
        assert words.count("equal") == words.count("max |difference|") == 1


def test_a_missing_or_stub_decode_step_is_not_written_yet_as_everywhere():
    for functions in ({}, {"decode_step": load(STUB.format(name="decode_step"), "decode_step")}):
        w = DecodeWidget(functions=functions)
        status = w.current()["status"]
        assert status.startswith(
            f"Drawn with the course's <code>decode_step</code>: yours is {NOT_WRITTEN}."
        )
        assert not w.failing
        w.anyway = True  # a stub is never drawn
        assert w.current()["status"] == status


def test_a_passing_decode_step_is_used_and_named():
    w = DecodeWidget(functions={"decode_step": load(DECODE, "decode_step")}, tokens=4)
    assert w.current()["status"].startswith("Drawn with <b>your</b> <code>decode_step</code>")
    assert [panels(s).keys() for s in w.states] == [panels(s).keys() for s in DecodeWidget().states]
    for mine, course in zip(w.states, DecodeWidget().states, strict=True):
        for a, b in zip(panels(mine).values(), panels(course).values(), strict=True):
            np.testing.assert_allclose(a["M"], b["M"], atol=1e-12)


def test_a_prepending_decode_step_is_told_then_drawn_when_ticked():
    w = DecodeWidget(functions={"decode_step": load(PREPENDING, "decode_step")}, tokens=3)
    state = w.current()
    assert w.failing and "instead of yours" in state["status"] and PREPENDED in said(state)
    course = panels(DecodeWidget(tokens=3).current())
    np.testing.assert_allclose(panels(state)["cache K\u2032"]["M"], course["cache K\u2032"]["M"])
    w.anyway = True
    state = w.current()
    assert "Drawn with your failing <code>decode_step</code>" in state["status"]
    assert PREPENDED in said(state)
    KX = song.X @ song.W_k
    np.testing.assert_allclose(panels(state)["cache K\u2032"]["M"][:3], KX[2::-1], atol=1e-12)
    assert "equals row 2" in said(state)  # attention without a mask: the order does not matter
    assert "returns no weights" in said(state)  # the weights drawn are not the learner's own
    w.anyway = False
    assert "returns no weights" not in said(w.current())


def test_a_decode_step_without_w_o_is_said_not_to_equal_the_causal_row():
    w = DecodeWidget(functions={"decode_step": load(decode(proj=""), "decode_step")}, tokens=2)
    assert NO_W_O in said(w.current())
    w.anyway = True
    state = w.current()
    Vh = mh.split_heads(V, H)  # (h, T, d_k)
    y = np.concatenate([A[i, 1, :2] @ Vh[i, :2] for i in range(H)])  # the heads, no W_O
    np.testing.assert_allclose(panels(state)["y, step by step"]["M"][1], y, atol=1e-12)
    diff = np.abs(y - FULL[1]).max()
    assert "<b>does not equal</b> row 1 of causal" in said(state)
    assert f"max |difference| = {diff:.1e}." in said(state)


def test_a_decode_step_that_breaks_on_its_own_caches_falls_back_and_says_so():
    mine = load(DECODE, "decode_step")

    def lists(x, cache, *rest):  # the check hands it tuples; its own caches are lists
        if isinstance(cache, list):
            raise TypeError("a list")
        y, (K, V) = mine(x, cache, *rest)
        return y, [K, V]

    w = DecodeWidget(functions={"decode_step": lists}, tokens=2)
    words = said(w.current())
    assert "instead of yours" in w.current()["status"]
    assert "your <code>decode_step</code> raised TypeError: a list (fed its own caches)" in words


# ---------------------------------------------------------------------------- notebook 14
def blocks_of(b: int) -> list[tuple[int, int]]:
    return [(s, min(s + b, T)) for s in range(0, T, b)]


def test_the_block_slider_offers_the_blocks_of_each_size():
    w = TiledWidget(block_size=4, block=6)  # 4 does not divide 6: two blocks, the last shorter
    assert w.values == {"size": 4, "block": 2}
    assert [c["label"] for c in w.controls] == ["block size", "block reached"]
    for b in (1, 2, 3, 4):
        mine = [s for s in w.states if s["key"]["size"] == b]
        n = len(blocks_of(b))
        assert sorted(s["key"]["block"] for s in mine) == list(range(1, n + 1))
        assert all(s["options"]["block"] == [[str(k), k] for k in range(1, n + 1)] for s in mine)
        # the page shows the first state that matches best: a size with fewer blocks than
        # the one reached shows its last one (block 5 at size 1, then size 3: block 2 of 2)
        assert mine[0]["key"]["block"] == n
    drawn_as_promised(w)


def node(script: str, *args: str):
    """What ``script`` (an ES module run in ``front/``) prints, read as JSON."""
    exe = shutil.which("node") or pytest.fail("node is not on PATH (the widgets' JavaScript)")
    run = subprocess.run(
        [exe, "--input-type=module", "-e", script, *args], cwd=FRONT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_a_new_block_size_keeps_the_block_reached_or_shows_its_last_block():
    """The page's choice (``panels.js`` ``stateFor``, run by node on the widget's states): the
    block size changed first, the block reached kept where the new size has it."""
    keys = json.dumps([{"key": s["key"]} for s in TiledWidget().states])
    shown = node(
        "import { stateFor } from './panels.js'; const states = JSON.parse(process.argv[1]);"
        "const out = []; for (const size of [1, 2, 3, 4]) for (let block = 1; block <= 6; block++)"
        " out.push(stateFor(states, { size, block }, ['size', 'block']).key);"
        "console.log(JSON.stringify(out));",
        keys,
    )
    sizes = (1, 2, 3, 4)
    assert shown == [
        {"size": b, "block": min(k, len(blocks_of(b)))} for b in sizes for k in range(1, 7)
    ]


def test_a_fixed_range_below_zero_is_drawn_on_a_diverging_scale():
    """Both widgets fix one range for every state (the cached rows keep their colours)."""
    kinds = node(
        "import { scaleOf } from './picture.js';"
        "console.log(JSON.stringify([[-2, 2], [0, 1]].map((f) => scaleOf([[[5]]], f))));"
    )
    assert kinds == [{"kind": "div", "vmin": -2, "vmax": 2}, {"kind": "seq", "vmin": 0, "vmax": 1}]


def test_every_block_shows_the_scores_read_and_the_running_quantities():
    for state in TiledWidget().states:
        b, k = state["key"]["size"], state["key"]["block"] - 1
        blocks = blocks_of(b)
        end = blocks[k][1]
        p = panels(state)
        keys = p["the keys read"]
        m, l = S[:end].max(), np.exp(S[:end] - S[:end].max()).sum()
        np.testing.assert_allclose(keys["M"][0, :end], S[:end], atol=1e-12)
        np.testing.assert_allclose(keys["M"][1, :end], np.exp(S[:end] - m) / l, atol=1e-12)
        assert np.isneginf(keys["M"][:, end:]).all()
        assert [tuple(r[:2]) for r in keys["blocks"]] == blocks[: k + 1]
        assert [r[2] == "#000000" for r in keys["blocks"]] == [j == k for j in range(k + 1)]
        running = p["running m and \u2113"]["M"]  # m and ℓ after each block read
        for j, (_, e) in enumerate(blocks[: k + 1]):
            np.testing.assert_allclose(
                running[:, j], [S[:e].max(), np.exp(S[:e] - S[:e].max()).sum()]
            )
        assert np.isneginf(running[:, k + 1 :]).all()
        out = p["output of \u201csong\u201d"]["M"]
        weights = np.exp(S[:end] - m) / l
        np.testing.assert_allclose(out, [weights @ V[:end], ROW, ROW], atol=1e-12)
        words = said(state)
        assert f"Block {k + 1} of {len(blocks)}" in words
        assert ("Last block: O/\u2113 is the output." in words) == (end == T)
        assert "(tiled) equals <code>attention_head</code>'s" in words


def test_the_words_say_when_the_maximum_grows_and_by_how_much_the_sums_shrink():
    w = TiledWidget(block_size=2, block=2)
    grown = S[2:4].max()
    assert grown > S[:2].max()  # the song's key "for" raises the maximum
    factor = np.exp(S[:2].max() - grown)
    assert (
        f"m grows from {S[:2].max():.2f} to {grown:.2f}: \u2113 and O are multiplied by "
        f"exp(m_old \u2212 m) = {factor:.2f}" in w.current()["status"]
    )


def test_a_failing_tiled_attention_is_told_then_its_row_drawn_when_ticked():
    mine = load(NOT_RESCALED, "tiled_attention")
    w = TiledWidget(functions={"tiled_attention": mine}, block_size=2, block=3)
    assert w.failing and SUM_NOT_RESCALED in said(w.current())
    np.testing.assert_allclose(panels(w.current())["output of \u201csong\u201d"]["M"][1], ROW)
    w.anyway = True
    state = w.current()
    assert "Drawn with your failing <code>tiled_attention</code>" in state["status"]
    wrong = mine(Q, K, V, 2)[-1]
    assert np.abs(wrong - ROW).max() > 0.1
    np.testing.assert_allclose(panels(state)["output of \u201csong\u201d"]["M"][1], wrong)
    diff = np.abs(wrong - ROW).max()
    assert "(tiled) <b>differs from</b> <code>attention_head</code>'s (full): " in said(state)
    assert f"max |difference| = {diff:.1e}." in said(state)


def test_a_stub_tiled_attention_is_not_written_yet_and_never_drawn():
    w = TiledWidget(
        functions={"tiled_attention": load(STUB.format(name="tiled_attention"), "tiled_attention")}
    )
    w.anyway = True
    assert f"yours is {NOT_WRITTEN}." in w.current()["status"] and not w.failing


@pytest.mark.slow  # a passing tiled_attention: its calls at T = 4096 (tests/support/marks.py)
def test_a_passing_tiled_attention_is_named():
    w = TiledWidget(functions={"tiled_attention": load(TILED, "tiled_attention")})
    assert w.current()["status"].startswith("Drawn with <b>your</b> <code>tiled_attention</code>")
    assert not w.failing
