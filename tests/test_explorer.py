"""The explorer widget, driven in the kernel (the browser test drives it in JupyterLab)."""

import pytest

import mhsa_helpers as mh
from mhsa_helpers.explorer import STEPS, Explorer


def png(ex):
    return bytes(ex.image.value)


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
    assert png(ex).startswith(b"\x89PNG")
    assert f"Step {STEPS[step - 1]}" in ex.title_w.value


def test_controls_change_the_picture_and_the_status():
    ex = Explorer(step=7)
    before = png(ex)
    ex.heads_w.value = 4
    assert "<b>h = 4</b>" in ex.status_w.value
    after_heads = png(ex)
    assert after_heads != before
    ex.mask_w.value = "causal"
    assert png(ex) != after_heads and "mask: causal" in ex.status_w.value
    ex.query_w.value = 3
    assert "query: 'for'" in ex.status_w.value


def test_padding_length_slider_only_for_padding():
    ex = Explorer(step=6)
    assert ex.length_w.disabled
    ex.mask_w.value = "padding"
    assert not ex.length_w.disabled
    a = png(ex)
    ex.length_w.value = 2
    assert png(ex) != a and "length 2" in ex.status_w.value


def test_prev_next_walk_the_steps():
    ex = Explorer(step=1)
    assert ex.prev_w.disabled
    for k in range(2, 10):
        ex.next_w.click()
        assert ex.step_w.value == k
    assert ex.next_w.disabled
    ex.prev_w.click()
    assert ex.step_w.value == 8


def test_figure_kept_for_data_changes_rebuilt_for_layout_changes():
    ex = Explorer(step=7)
    fig = ex._fig
    ex.query_w.value = 2
    ex.mask_w.value = "causal"
    assert ex._fig is fig  # same layout: data replaced in place
    ex.heads_w.value = 4
    assert ex._fig is not fig  # four panels instead of two


def test_runs_the_learners_functions():
    calls = []

    def softmax(Z, axis=-1):  # a learner's (wrong) softmax over columns
        calls.append(Z.shape)
        return mh.softmax(Z, axis=-2)

    mine = Explorer(functions={"softmax": softmax, "unrelated": 3}, step=7)
    ref = Explorer(step=7)
    assert mine.functions == {"softmax": softmax}
    assert calls, "the learner's softmax was never called"
    assert png(mine) != png(ref)
    assert "Using the reference" not in mine.status_w.value


def test_unwritten_or_failing_functions_fall_back_to_the_reference():
    def split_heads(M, n_heads):
        raise NotImplementedError()

    def attention_scores(Q, K):
        return Q @ K  # wrong shapes: raises ValueError in numpy

    ex = Explorer(
        functions={"split_heads": split_heads, "attention_scores": attention_scores}, step=5
    )
    assert png(ex) == png(Explorer(step=5))
    assert "split_heads</code> is not implemented yet" in ex.status_w.value
    assert "attention_scores</code> raised ValueError" in ex.status_w.value


def test_static_fallback_in_the_mimebundle():
    ex = Explorer()
    bundle = ex._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    import base64

    assert base64.b64decode(data["image/png"]) == png(ex)


def test_values_table_lists_the_query_row():
    ex = Explorer(step=7, mask="causal")
    ex.query_w.value = 0
    # the first token attends only to itself under the causal mask
    assert "row of the query 'List'" in ex.values_w.value
    assert ex.values_w.value.count("<td") == 2 * 6
    first_row = ex.values_w.value.split("</tr>")[1]  # [0] is the header of key tokens
    assert first_row.count(">1.00<") == 1 and first_row.count(">0.00<") == 5
