"""The explorer widget, driven in the kernel (the browser test drives it in JupyterLab)."""

import html
import re

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers.plots import HEAD_COLOURS
from mhsa_helpers.widgets import svg
from mhsa_helpers.widgets.explorer import MEANING, STEPS, USED, Explorer


def my_softmax(Z, axis=-1):
    """A learner's correct softmax (all −∞ rows give zeros)."""
    m = np.max(Z, axis=axis, keepdims=True)
    E = np.exp(Z - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=axis, keepdims=True)
    return np.divide(E, total, out=np.zeros_like(E), where=total > 0)


def png(ex):
    """The picture (SVG text; the name is kept from when it was a PNG)."""
    return ex.figure.value


def test_heads_offer_only_divisors_and_follow_the_example():
    ex = Explorer(example="song")
    assert list(ex.heads_w.options) == [1, 2, 4]
    ex.example_w.value = "students"
    assert list(ex.heads_w.options) == [1, 7]
    assert ex.heads_w.value in (1, 7)
    assert [label for label, _ in ex.query_w.options] == mh.get_example("students").tokens
    ex.example_w.value = "simple"
    assert list(ex.heads_w.options) == [1, 2, 4, 8]


@pytest.mark.parametrize("step", range(1, len(STEPS) + 1))
def test_every_step_draws(step):
    ex = Explorer(step=step)
    assert png(ex).startswith("<svg") and png(ex).endswith("</svg>")
    assert f"Step {STEPS[step - 1]}" in ex.title_w.value


def test_controls_change_the_picture_and_the_status():
    ex = Explorer(step=7)
    before = png(ex)
    ex.heads_w.value = 4
    assert "<b>h = 4</b>" in ex.title_w.value
    after_heads = png(ex)
    assert after_heads != before
    ex.mask_w.value = "causal"
    assert png(ex) != after_heads and "mask: causal" in ex.title_w.value
    ex.query_w.value = 3
    assert "query: 'for'" in ex.title_w.value


def test_padding_length_slider_only_for_padding():
    ex = Explorer(step=6)
    assert ex.length_w.disabled and ex.length_w.layout.visibility == "hidden"
    ex.mask_w.value = "padding"
    assert not ex.length_w.disabled and ex.length_w.layout.visibility == "visible"
    a = png(ex)
    ex.length_w.value = 2
    assert png(ex) != a and "length 2" in ex.title_w.value


def test_prev_next_walk_the_steps():
    ex = Explorer(step=1)
    assert ex.prev_w.disabled
    for k in range(2, 10):
        ex.next_w.click()
        assert ex.step_w.value == k
    assert ex.next_w.disabled
    ex.prev_w.click()
    assert ex.step_w.value == 8


def test_runs_the_learners_functions_that_pass_their_checks_and_names_them():
    calls = []

    def softmax(Z, axis=-1):  # a learner's correct softmax
        calls.append(Z.shape)
        return my_softmax(Z, axis)

    mine = Explorer(functions={"softmax": softmax, "unrelated": 3}, step=7)
    assert mine.functions == {"softmax": softmax}
    assert calls, "the learner's softmax was never called"
    assert png(mine) == png(Explorer(step=7))
    assert "Drawn with <b>your</b> <code>softmax</code>" in mine.status_w.value
    assert mine.anyway_w.layout.display == "none"  # nothing failing: no box


def test_a_failing_function_is_replaced_by_the_reference_and_its_hint_shown():
    def softmax(Z, axis=-1):  # over the columns: its check says so
        return my_softmax(Z, axis=-2)

    ex = Explorer(functions={"softmax": softmax}, step=7)
    assert png(ex) == png(Explorer(step=7))  # the reference is drawn
    assert "the reference instead of your <code>softmax</code>" in ex.status_w.value
    notes = ex.notes_w.value
    assert "The reference instead of your <code>softmax</code>" in notes
    assert "each column sums to 1" in notes  # the check's own sentence
    assert ex.anyway_w.layout.display == ""
    ex.anyway_w.value = True  # the learner asks to see their version
    assert png(ex) != png(Explorer(step=7))
    assert "drawn with your failing <code>softmax</code>" in ex.status_w.value
    assert "Drawn with your failing <code>softmax</code>" in ex.notes_w.value


def test_a_redefined_function_is_checked_again_and_used():
    space = {"softmax": lambda Z, axis=-1: my_softmax(Z, axis=-2)}
    ex = Explorer(functions=space, step=7)
    assert "check fails" in ex.notes_w.value

    space["softmax"] = my_softmax  # the learner fixes the cell and runs it again
    ex.query_w.value = 1
    assert "Drawn with <b>your</b> <code>softmax</code>" in ex.status_w.value
    assert "check fails" not in ex.notes_w.value


def test_nan_from_the_learners_code_is_drawn_apart_and_named():
    # the song's own scores do not overflow: make the learner's softmax meet NaN
    nan_softmax = {"softmax": lambda Z, axis=-1: np.where(np.isneginf(Z), np.nan, my_softmax(Z))}
    ex = Explorer(functions=nan_softmax, step=7, mask="causal")
    ex.anyway_w.value = True
    assert svg.NAN_FILL in png(ex) and ">NaN<" in png(ex)
    assert "NaN (drawn magenta)" in ex.notes_w.value
    assert "NaN: not a number" in png(ex)  # the legend names it


def test_unwritten_or_failing_functions_fall_back_to_the_reference():
    def split_heads(M, n_heads):
        raise NotImplementedError()

    def attention_scores(Q, K):
        return Q @ K  # wrong shapes: raises ValueError in numpy

    ex = Explorer(
        functions={"split_heads": split_heads, "attention_scores": attention_scores}, step=5
    )
    assert png(ex) == png(Explorer(step=5))
    assert "<code>split_heads</code> (not written yet)" in ex.status_w.value
    assert "Your <code>split_heads</code> is not implemented yet" in ex.notes_w.value
    assert ex.anyway_w.layout.display == ""  # attention_scores is written, and fails
    assert "your <code>attention_scores</code>, whose check fails" in ex.notes_w.value


def test_static_fallback_in_the_mimebundle():
    ex = Explorer()
    bundle = ex._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["image/svg+xml"] == png(ex)


def cells(picture: str) -> list[tuple[str, str]]:
    """``(link classes, tip text)`` of every cell of a picture."""
    return re.findall(
        r"<g class='cell ([^']*)' tabindex='0'>.*?<text class='tip'[^>]*>([^<]*)<", picture
    )


def test_a_cell_names_its_value_and_meaning_and_links_its_query_and_key():
    """A weight's cell: its tip says head, query, key, value and meaning; its links light up."""
    ex = Explorer(step=7, mask="causal", n_heads=2)
    picture = png(ex)
    got = dict(cells(picture))
    assert len(cells(picture)) == 2 * 6 * 6  # every cell of both heads
    tip = next(t for c, t in cells(picture) if c == "q3 k1")
    w = ex.compute()["A"][0, 3, 1]
    assert tip.startswith(f"A, head 1: query &#x27;for&#x27;, key &#x27;new&#x27; = {w:.2f}")
    meaning = re.findall(r"<text class='tip meaning'[^>]*>([^<]*)<", picture)
    assert meaning == [html.escape(MEANING["A"], quote=True)] * 2  # one per panel
    assert "blocked by the mask" in got["q0 k5 off"]  # causal: 'List' reads no later key
    scope = re.search(r"id='(mhsa-[0-9a-f]+)'", picture).group(1)
    for link in ("q3", "k1"):  # pointing at it keeps its query's row and key's column lit
        assert f"#{scope}:has(.{link}:hover) .{link}" in picture
        assert f"#{scope}:has(.{link}:focus) .{link}" in picture


def test_the_query_view_links_each_line_to_its_key_rows_within_its_head():
    ex = Explorer(view="query", n_heads=2)
    ex.query_w.value = 2
    picture = png(ex)
    assert "<g class='link q2h2 k4h2' tabindex='0'>" in picture  # head 2: 'ideas' -> 'a'
    k_row = [c for c, _ in cells(picture) if "k4h2" in c.split()]
    assert len(k_row) == 2 * 2  # K and V: token 'a''s two columns of head 2
    assert len([c for c, _ in cells(picture) if "q2h2" in c.split()]) == 2  # Q's row, head 2


def size(picture: str) -> tuple[str, str]:
    return re.search(r"<svg [^>]*width='(\d+)' height='(\d+)'", picture).groups()


def test_every_picture_has_one_size_and_one_colour_bar():
    """Whatever the example, heads, step, mask or view: the same size; one bar per step."""
    ex = Explorer()
    for example in mh.EXAMPLES:
        ex.example_w.value = example
        for h in ex.heads_w.options:
            ex.heads_w.value = h
            for step in range(1, len(STEPS) + 1):
                ex.step_w.value = step
                for mask in ("none", "causal"):
                    ex.mask_w.value = mask
                    assert size(png(ex)) == (str(svg.WIDTH), str(svg.HEIGHT))
                    assert png(ex).count("class='mhsa-colourbar'") == 1
    ex.view_w.value = "query"
    assert size(png(ex)) == (str(svg.WIDTH), str(svg.HEIGHT))


def test_the_most_heads_stay_readable():
    """Students with 7 heads, sentences with 8: cells of at least 18 px, labels in place."""
    for example, h in (("students", 7), ("simple", 8)):
        ex = Explorer(example=example, n_heads=h, step=7)
        cells = [
            float(w)
            for w in re.findall(
                r"<rect x='[\d.]+' y='[\d.]+' width='([\d.]+)' "
                r"height='[\d.]+' fill='#",
                png(ex),
            )
        ]
        assert cells and min(cells) >= 18, min(cells)
        for i in range(h):
            assert f"A, head {i + 1}" in png(ex)


def test_head_colours_read_on_white():
    """No head colour is as light as the old yellow: titles sit on chips of the colour."""
    from mhsa_helpers.widgets.svg import text_colour

    assert "#F0E442" not in HEAD_COLOURS
    for colour in HEAD_COLOURS:
        r, g, b = (int(colour[k : k + 2], 16) / 255 for k in (1, 3, 5))
        assert 0.299 * r + 0.587 * g + 0.114 * b < 0.75, colour
        assert text_colour(colour) in ("#000000", "#ffffff")


def test_blocked_cells_are_hatched_and_allowed_mask_cells_white():
    ex = Explorer(step=6, mask="causal")
    picture = png(ex)
    blocked = len(re.findall(r"fill='url\(#blocked-\w+\)'/><text class='tip'", picture))
    assert blocked == 3 * 15  # the mask and two heads, 15 cells above the diagonal each
    assert "blocked by the mask" in picture
    cells = re.findall(r"fill='([^']+)'/><text class='tip'[^>]*>([^<]*)</text>", picture)
    mask = [f for f, t in cells if t.startswith("mask M:")]
    assert mask.count("#ffffff") == 21 and len(mask) == 36  # 21 allowed cells, white


@pytest.mark.parametrize("mask", ["causal", "padding"])
def test_blocked_weights_are_drawn_blocked_not_as_a_learned_zero(mask):
    """Step 7: a weight the mask blocks is hatched, with no number, like its −∞ score."""
    ex = Explorer(example="song", n_heads=2, step=7, mask=mask)
    picture = png(ex)
    M = ex.compute()["M"]
    cells = re.findall(r"fill='([^']+)'/><text class='tip'[^>]*>([^<]*)</text>", picture)
    hatched = [t for f, t in cells if f.startswith("url(#blocked")]
    assert len(hatched) == 2 * int(np.isneginf(M).sum())  # every blocked cell, in both heads
    assert all(t.endswith("blocked by the mask (score −∞, weight 0)") for t in hatched)
    shown = [t for f, t in cells if not f.startswith("url(")]  # the allowed weights
    assert len(shown) == 2 * int((M == 0).sum())  # each with its number, even one near 0
    values = [t.rsplit(" = ", 1)[1] for t in shown]
    assert all(v.replace(".", "").isdigit() for v in values), values
    assert "blocked by the mask (score −∞, weight 0, no number)" in picture  # the legend


def test_the_query_view_shows_each_heads_weights_as_line_widths():
    ex = Explorer(example="song", n_heads=2, step=7, mask="causal", view="query", query=2)
    A = mh.softmax(ex.compute()["ZM"])[:, 2]  # (h, T): the query 'ideas' in each head
    lines = re.findall(
        r"class='mhsa-attend' data-weight='([\d.na-]+)'.*?stroke='([^']+)' "
        r"stroke-width='([\d.]+)'",
        png(ex),
    )
    assert len(lines) == 2 * 6
    for k, (w, stroke, width) in enumerate(lines):
        i, j = divmod(k, 6)
        assert float(w) == pytest.approx(A[i, j], abs=1e-4)
        if j <= 2:  # keys up to the query are visible: the head's colour, width by weight
            assert stroke == HEAD_COLOURS[i]
            assert float(width) == pytest.approx(0.5 + 9 * A[i, j], abs=0.01)
        else:
            assert stroke == "#999999"  # blocked by the causal mask
    assert all(f">{n}<" in png(ex) for n in "QKV")


def test_the_explorer_uses_only_the_course_functions_it_names():
    assert set(USED) <= set(mh.reference.__all__)


def test_pictures_ids_are_their_own():
    """Two explorers in one page (another notebook's tab) must not share pattern or bar ids."""
    a = png(Explorer(step=6, mask="causal"))
    b = png(Explorer(step=6, mask="padding"))
    ids = [set(re.findall(r"id='([\w-]+)'", picture)) for picture in (a, b)]
    assert ids[0] and ids[1] and not ids[0] & ids[1]
    for picture, own in zip((a, b), ids, strict=True):
        assert set(re.findall(r"url\(#([\w-]+)\)", picture)) <= own


def test_the_status_names_only_the_functions_of_the_steps_shown():
    def softmax(Z, axis=-1):  # over the columns: its check fails
        return my_softmax(Z, axis=-2)

    ex = Explorer(functions={"softmax": softmax}, step=3)
    assert "softmax" not in ex.status_w.value + ex.notes_w.value  # step 3: before any softmax
    ex.step_w.value = 7
    assert "the reference instead of your <code>softmax</code>" in ex.status_w.value
    assert "The reference instead of your <code>softmax</code>" in ex.notes_w.value
    ex.step_w.value = 5
    ex.view_w.value = "query"  # the query's view shows the weights: softmax counts
    assert "<code>softmax</code>" in ex.status_w.value


def test_the_query_view_writes_no_number_for_a_blocked_key():
    """Causal mask, query 'List': five keys blocked, each said blocked, none given 0.00."""
    ex = Explorer(view="query", n_heads=2, mask="causal", query=0)
    picture = png(ex)
    assert picture.count("<tspan font-style='italic'>blocked</tspan>") == 2 * 5
    labels = re.findall(r"<text [^>]*font-size='11'[^>]*>([^<]*) <tspan font-weight", picture)
    assert labels.count("List") == 2  # the only key with a weight in each head


def test_the_colour_bar_sits_beside_the_panels():
    """Two heads leave room on the right: the bar follows the panels instead of the edge."""
    picture = png(Explorer(step=7, n_heads=2))
    bar_x = float(re.search(r"class='mhsa-colourbar' x='([\d.]+)'", picture).group(1))
    rights = [
        float(x) + float(w)
        for x, w in re.findall(r"<rect x='([\d.]+)' y='[\d.]+' width='([\d.]+)' height", picture)
    ]
    assert 0 < bar_x - max(r for r in rights if r < bar_x) <= 40
