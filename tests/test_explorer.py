"""The explorer widget, driven in the kernel (the browser test drives it in JupyterLab)."""

import re

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers.plot_style import HEAD_COLOURS
from mhsa_helpers.widgets import svg, svg_tips
from mhsa_helpers.widgets.explorer import USED, Explorer
from mhsa_helpers.widgets.explorer_steps import MEANING, STEPS
from tests.support.pictures import cells, links, size, without_ids
from tests.support.pictures import tips as tooltip_lines


def my_softmax(Z, axis=-1):
    """A learner's correct softmax (all −∞ rows give zeros)."""
    m = np.max(Z, axis=axis, keepdims=True)
    E = np.exp(Z - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=axis, keepdims=True)
    return np.divide(E, total, out=np.zeros_like(E), where=total > 0)


def png(ex):
    """The picture (SVG text; the name is kept from when it was a PNG), its drawing's own ids
    left out, so that two drawings compare by what they show."""
    return without_ids(ex.figure.value)


def drawing(ex):
    """What ``ex`` draws now, at the largest height, its own ids left out: to compare two."""
    return without_ids(ex.render(max_height=svg.HEIGHT))


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
    assert drawing(mine) == drawing(Explorer(step=7))
    assert "Drawn with <b>your</b> <code>softmax</code>" in mine.status_w.value
    assert mine.anyway_w.layout.display == "none"  # nothing failing: no box


def test_a_failing_function_is_replaced_by_the_reference_and_its_hint_shown():
    def softmax(Z, axis=-1):  # over the columns: its check says so
        return my_softmax(Z, axis=-2)

    ex = Explorer(functions={"softmax": softmax}, step=7)
    assert drawing(ex) == drawing(Explorer(step=7))  # the reference is drawn
    assert "the course's <code>softmax</code> instead of yours" in ex.status_w.value
    notes = ex.notes_w.value
    assert notes.startswith("<div class='mhsa-notes'><span")  # the reason comes first
    assert "Why not your <code>softmax</code>: its check fails" in notes
    assert "each column sums to 1" in notes  # the check's own sentence
    assert ex.anyway_w.layout.display == ""
    ex.anyway_w.value = True  # the learner asks to see their version
    assert drawing(ex) != drawing(Explorer(step=7))
    assert "your failing <code>softmax</code>, as asked" in ex.status_w.value
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
    assert drawing(ex) == drawing(Explorer(step=5))
    notes = ex.notes_w.value.split("<br>")
    assert "Why not your <code>attention_scores</code>: its check fails" in notes[0]  # first
    assert ex.anyway_w.layout.display == ""  # attention_scores is written, and fails
    unwritten = [n for n in notes if "Not written yet" in n]
    assert len(unwritten) == 1 and "<code>split_heads</code>" in unwritten[0]  # one line
    assert "<code>attention_scores</code> instead of yours" in ex.status_w.value


def test_static_fallback_in_the_mimebundle():
    ex = Explorer()
    bundle = ex._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["image/svg+xml"] == ex.figure.value


def test_a_cell_names_its_value_and_meaning_and_links_its_query_and_key():
    """A weight's cell: its tooltip says head, query, key, value and meaning; its links light."""
    ex = Explorer(step=7, mask="causal", n_heads=2)
    picture = png(ex)
    found = cells(picture)
    assert len(found) == 2 * 6 * 6  # every cell of both heads
    cell = next(c for c in found if c.links == "q3 k1")
    w = ex.compute()["A"][0, 3, 1]
    assert cell.tip == [f"A, head 1: query 'for', key 'new' = {w:.2f}", MEANING["A"]]
    blocked = next(c for c in found if c.links == "q0 k5 off")
    assert "blocked by the mask" in blocked.text  # causal: 'List' reads no later key
    scope = "mhsa-ID"
    for link in ("q3", "k1"):  # pointing at it keeps its query's row and key's column lit
        assert f"#{scope}:has(.{link}:hover) .{link}" in picture
        assert f"#{scope}:has(.{link}:focus) .{link}" in picture


def test_a_tooltip_sits_beside_its_cell_inside_the_picture():
    """Every cell's tooltip: next to the cell (above or below it), wholly inside the picture."""
    for kw in ({"step": 7, "n_heads": 2}, {"example": "students", "n_heads": 7, "step": 7}):
        picture = png(Explorer(**kw))
        width, height = size(picture)
        tips_of = tooltip_lines(picture)
        boxes = re.findall(
            r"<g class='cell [^']*'[^>]*><rect x='([\d.]+)' y='([\d.]+)' width='([\d.]+)'",
            picture,
        )
        tips = [  # (x, y, width, height) of each tooltip, from its first line's place
            (
                float(x) - 7,
                float(y) - 4 - 0.75 * svg_tips.TIP_LINE,
                svg_tips.TIP_CHAR * max(len(line) for line in lines) + 14,
                svg_tips.TIP_LINE * len(lines) + 8,
            )
            for x, y, lines in (
                (*re.search(r"x='([\d.]+)' y='([\d.]+)'", t).groups(), tips_of[k])
                for k, t in re.findall(r"<text class='tip (c\d+)'([^>]*)>", picture)
            )
        ]
        assert len(boxes) == len(tips) > 0
        for (cx, cy, s), (tx, ty, tw, th) in zip(boxes, tips, strict=True):
            cx, cy, s, tx, ty, tw, th = map(float, (cx, cy, s, tx, ty, tw, th))
            assert 0 <= tx and tx + tw <= width and 0 <= ty and ty + th <= height
            assert ty + th <= cy or ty >= cy + s  # never over the cell pointed at
            assert min(abs(ty + th - cy), abs(ty - cy - s)) <= 8  # right above or below it
            assert tx <= cx + s and tx + tw >= cx  # over the cell's column


def test_tab_walks_the_querys_row_only():
    """Tab reaches one row per panel (the query's), not every cell: head 2 in T presses."""
    ex = Explorer(step=7, n_heads=2, query=3)
    found = cells(png(ex))
    tabbed = [c for c in found if c.tab]
    assert len(tabbed) == 2 * 6 and all(c.links.split()[0] == "q3" for c in tabbed)


def test_the_query_view_links_each_line_to_its_key_rows_within_its_head():
    ex = Explorer(view="query", n_heads=2)
    ex.query_w.value = 2
    picture = png(ex)
    line = dict(links(picture))["q2h2 k4h2"]  # head 2: 'ideas' -> 'a'
    assert line[1] == "the share of the value row of 'a' in the output of 'ideas'"
    k_row = [c for c in cells(picture) if "k4h2" in c.links.split()]
    assert len(k_row) == 2 * 2  # K and V: token 'a''s two columns of head 2
    assert len([c for c in cells(picture) if "q2h2" in c.links.split()]) == 2  # Q's row


@pytest.mark.slow  # every figure drawn
def test_every_picture_fits_its_budget_and_has_one_colour_bar():
    """Whatever the example, heads, step, mask or view: as wide as the frame, at most as
    tall as the status and notes leave on screen, filled (no blank band); one bar per step."""
    ex = Explorer()
    for example in mh.EXAMPLES:
        ex.example_w.value = example
        for h in ex.heads_w.options:
            ex.heads_w.value = h
            for step in range(1, len(STEPS) + 1):
                ex.step_w.value = step
                for mask in ("none", "causal"):
                    ex.mask_w.value = mask
                    width, height = size(png(ex))
                    assert width == svg.WIDTH and height <= ex.frame.picture_budget() + 0.5
                    assert png(ex).count("class='mhsa-colourbar'") == 1
                    bottom = max(
                        float(y) + float(s)
                        for y, s in re.findall(
                            r"<g class='cell [^']*'[^>]*><rect x='[\d.]+' y='([\d.]+)' "
                            r"width='([\d.]+)'",
                            png(ex),
                        )
                    )
                    if step != 9:  # (step 9's last panel has 2 rows: the row of panels is taller)
                        assert height - bottom <= 130, (example, h, step, height - bottom)
    ex.view_w.value = "query"
    assert size(png(ex))[1] <= ex.frame.picture_budget() + 0.5


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
    found = cells(png(ex))
    blocked = [c for c in found if c.fill.startswith("url(#blocked-")]
    assert len(blocked) == 3 * 15  # the mask and two heads, 15 cells above the diagonal each
    assert all(c.number is None for c in blocked)
    mask = [c.fill for c in found if c.tip[0].startswith("mask M:")]
    assert mask.count("#ffffff") == 21 and len(mask) == 36  # 21 allowed cells, white


@pytest.mark.parametrize("mask", ["causal", "padding"])
def test_blocked_weights_are_drawn_blocked_not_as_a_learned_zero(mask):
    """Step 7: a weight the mask blocks is hatched, with no number, like its −∞ score."""
    ex = Explorer(example="song", n_heads=2, step=7, mask=mask)
    picture = png(ex)
    M = ex.compute()["M"]
    found = cells(picture)
    hatched = [c for c in found if c.fill.startswith("url(#blocked")]
    assert len(hatched) == 2 * int(np.isneginf(M).sum())  # every blocked cell, in both heads
    assert all(c.tip[0].endswith("blocked by the mask") and c.number is None for c in hatched)
    assert all("weight 0" in c.tip[1] for c in hatched)
    shown = [c for c in found if not c.fill.startswith("url(")]  # the allowed weights
    assert len(shown) == 2 * int((M == 0).sum())  # each with its number, even one near 0
    values = [c.tip[0].rsplit(" = ", 1)[1] for c in shown]
    assert all(v.replace(".", "").isdigit() for v in values), values
    assert all(c.number is not None for c in shown)
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
    a = Explorer(step=6, mask="causal").figure.value
    b = Explorer(step=6, mask="causal").figure.value  # the same state, a drawing of its own

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
    assert "the course's <code>softmax</code> instead of yours" in ex.status_w.value
    assert "Why not your <code>softmax</code>" in ex.notes_w.value
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


@pytest.mark.parametrize(("example", "h"), [("song", 4), ("students", 7), ("trained", 2)])
def test_weights_carry_readable_numbers_at_many_heads(example, h):
    """4 and 7 heads, and d_model = 16: every weight has its number, at 11 px or more."""
    picture = png(Explorer(example=example, n_heads=h, step=7))
    found = cells(picture)
    assert len(found) == h * get_T(example) ** 2
    assert all(c.number is not None for c in found), example
    sizes = re.findall(r"font-size='(\d+)' text-anchor='middle' fill='#[0-9a-f]{6}' ", picture)
    assert sizes and min(int(s) for s in sizes) >= 11


def get_T(example: str) -> int:
    return mh.get_example(example).T


def test_short_column_labels_stand_level_and_long_ones_slant():
    """Single letters (the trained example) are not rotated into the panel frames."""
    trained = png(Explorer(example="trained", step=7))
    letters = mh.get_example("trained").tokens
    for letter in letters:
        assert re.search(rf"text-anchor='middle'>{letter}</text>", trained), letter
    assert "rotate(-40" not in trained
    assert "rotate(-40" in png(Explorer(example="students", step=7))  # 'Chandler' slants


def test_choosing_the_trained_example_brings_its_own_mask():
    """The trained heads learned with no mask: choosing them resets the mask; a mask chosen
    afterwards is said to block what they learned to read."""
    ex = Explorer(example="song", step=7, mask="causal")
    ex.example_w.value = "trained"
    assert ex.mask_w.value == "none"
    assert "Learned:" in ex.notes_w.value and "was not there in training" not in ex.notes_w.value
    ex.mask_w.value = "causal"
    assert "causal mask drawn here was not there in training" in ex.notes_w.value
    ex.example_w.value = "song"
    assert ex.mask_w.value == "causal"  # other examples keep the learner's choice


def test_a_step_explorer_says_why_the_learners_layer_is_not_drawn():
    """09's explorer next to a learner's passing layer: which functions draw, and why not the
    layer; the capstone's (saved notebooks) says how to get the learner's own drawn."""
    layer = {"multi_head_self_attention": mh.reference.multi_head_self_attention}
    ex = Explorer(functions=layer, step=9)
    assert "Drawn with the course's functions" in ex.status_w.value
    notes = ex.notes_w.value
    assert "Your <code>multi_head_self_attention</code> is checked by its test cell" in notes
    assert "yours are written in notebooks 03–08, not here" in notes
    saved = Explorer(functions={}, step=9, saved=True)
    assert "not in your saved notebooks 03–08" in saved.notes_w.value
    assert "save them and run this cell again" in saved.notes_w.value


def test_a_function_the_state_does_not_call_is_not_said_missing():
    """The learner's causal_mask with no mask chosen: not called, and not called missing."""

    def causal_mask(T):  # a learner's
        return np.where(np.tril(np.ones((T, T))) == 1, 0.0, -np.inf)

    functions = {"causal_mask": causal_mask, "softmax": my_softmax}
    ex = Explorer(functions=functions, step=7, saved=True)
    assert "causal_mask" not in ex.notes_w.value
    assert "<code>padding_mask</code>" in ex.notes_w.value  # this one the learner lacks
    ex.mask_w.value = "causal"
    assert "<code>causal_mask</code>, <code>softmax</code> (checks pass)" in ex.status_w.value


def test_an_example_that_resets_the_mask_says_so_until_the_learner_chooses_one():
    ex = Explorer(example="song", step=7, mask="causal")
    ex.example_w.value = "trained"
    assert "Mask set to none (it was causal)" in ex.notes_w.value
    ex.query_w.value = 2
    assert "Mask set to none" in ex.notes_w.value  # still said while nothing else changed it
    ex.mask_w.value = "padding"
    assert "Mask set to none" not in ex.notes_w.value


def test_the_step_notebooks_own_unwritten_function_is_named_before_other_notebooks():
    """06_masking, unsolved: its causal_mask comes before the functions of other notebooks."""

    def causal_mask(T):
        raise NotImplementedError()

    ex = Explorer(functions={"causal_mask": causal_mask}, step=6, mask="causal")
    lines = ex.notes_w.value.split("<br>")
    unwritten = next(k for k, n in enumerate(lines) if "Not written yet" in n)
    elsewhere = next(k for k, n in enumerate(lines) if "yours are written in notebooks" in n)
    assert unwritten < elsewhere and "run its cell, then change a control" in lines[unwritten]


def test_the_mask_panel_carries_no_column_of_zeros():
    """Its allowed cells are white (0 in the tooltip); blocked ones hatched."""
    found = cells(png(Explorer(step=6, mask="causal", example="trained")))
    mask = [c for c in found if c.tip[0].startswith("mask M:")]
    assert mask and all(c.number is None for c in mask)
    assert any(c.tip[0].endswith("= 0.00") for c in mask)


def test_a_picture_left_no_room_by_long_notes_still_draws_with_small_cells():
    """The reference's own functions passed as the learner's: every one "fails" (it calls the
    course's), so long notes leave step 9 of the trained heads a negative height; the
    layout keeps the best-fitting columns at the smallest cell size instead of raising."""
    ex = Explorer(functions=vars(mh.reference), example="trained", step=9)
    assert ex.frame.picture_budget() < 150  # the case: no room for the panels at any size
    assert png(ex).startswith("<svg") and "class='cell " in png(ex)
    widths = {
        float(w) for w in re.findall(r"<rect x='[\d.]+' y='[\d.]+' width='([\d.]+)'", png(ex))
    }
    assert min(widths) >= svg.MIN_CELL
    ex.view_w.value = "query"
    assert png(ex).startswith("<svg")


def test_the_layout_gives_the_smallest_cells_where_nothing_fits():
    """A box of negative height: the columns that come nearest, cells of ``MIN_CELL`` px."""
    panels = [
        svg.Panel(np.zeros((6, 6)), f"p{k}", list("abcdef"), list("abcdef")) for k in range(3)
    ]
    ncol, cell = svg._layout(panels, (10.0, 58.0, 800.0, -40.0), 48.0)
    assert ncol == 3 and cell == svg.MIN_CELL
