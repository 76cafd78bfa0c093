"""The explorer in the kernel: which functions it computes with, the arrays it sends, its words.

The page draws (``front/explorer.js``; the browser tests look at the picture); here the
data state (example, heads, mask, length), the arrays of :attr:`Explorer.data` against a
numpy computation written out below, and the words of each step (:attr:`Explorer.texts`).
"""

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers import reference as ref
from mhsa_helpers.exercises import names
from mhsa_helpers.training import induction
from mhsa_helpers.widgets.base import REFERENCE, REFERENCE_STATUS
from mhsa_helpers.widgets.explorer import USED, Explorer
from mhsa_helpers.widgets.sliding_window import SlidingWindowWidget

NAMES = ("X", "W_Q", "W_K", "W_V", "W_O", "Q", "K", "V", "Qh", "Kh", "Vh", "Z", "M", "ZM", "A")
NAMES += ("heads", "concat", "out")


def my_softmax(Z, axis=-1):
    """A learner's correct softmax (all −∞ rows give zeros)."""
    m = np.max(Z, axis=axis, keepdims=True)
    E = np.exp(Z - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=axis, keepdims=True)
    return np.divide(E, total, out=np.zeros_like(E), where=total > 0)


def columns_softmax(Z, axis=-1):
    """A learner's softmax over the wrong axis: its check says each column sums to 1."""
    return my_softmax(Z, axis=-2)


def my_project_qkv(X, W_q, W_k, W_v):
    """A learner's correct projection."""
    return X @ W_q, X @ W_k, X @ W_v


def my_split_heads(M, n_heads):
    """A learner's correct split: head i owns the i-th block of columns."""
    return np.stack(np.split(M, n_heads, axis=-1), axis=-3)  # (..., h, T, d_k)


def stub(*args, **kwargs):
    """A function as the student's notebook gives it."""
    raise NotImplementedError()


def by_hand(e, h: int, mask: str = "none", length: int = 0) -> dict:
    """Every matrix of the layer, written out with numpy (none of the course's functions)."""
    T, d = e.X.shape
    dk = d // h
    Q, K, V = (e.X @ W for W in (e.W_q, e.W_k, e.W_v))  # (T, d) each

    def split(M):  # head i owns columns i·d_k .. (i+1)·d_k
        return np.stack([M[:, i * dk : (i + 1) * dk] for i in range(h)])  # (h, T, d_k)

    Qh, Kh, Vh = split(Q), split(K), split(V)
    Z = np.einsum("iqc,ikc->iqk", Qh, Kh) / np.sqrt(dk)  # (h, T, T)
    M = np.zeros((T, T))
    if mask == "causal":
        M[np.triu_indices(T, 1)] = -np.inf  # a query reads no later key
    elif mask == "padding":
        M[:, length:] = -np.inf  # keys past the sentence's length
    ZM = Z + M
    E = np.exp(ZM - ZM.max(axis=-1, keepdims=True))  # every row keeps one key: no 0/0
    A = E / E.sum(axis=-1, keepdims=True)  # (h, T, T)
    heads = A @ Vh  # (h, T, d_k)
    concat = np.concatenate(list(heads), axis=1)  # (T, d)
    W = dict(X=e.X, W_Q=e.W_q, W_K=e.W_k, W_V=e.W_v, W_O=e.W_o)
    return dict(W, Q=Q, K=K, V=V, Qh=Qh, Kh=Kh, Vh=Vh, Z=Z, M=M, ZM=ZM, A=A, heads=heads,
                concat=concat, out=concat @ e.W_o)  # fmt: skip


def sent(ex) -> dict:
    """The arrays the page gets, back as numpy (the strings "NaN", "±Infinity" read as floats)."""
    return {k: np.array(v, dtype=float) for k, v in ex.data["arrays"].items()}


def same(got: dict, want: dict, keys=NAMES) -> None:
    for k in keys:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-12, err_msg=k)


def said(ex, step: int) -> str:
    """Everything step ``step`` tells the learner: the status line, then the notes."""
    words = ex.texts[step - 1]
    return "\n".join([words["status"], *words["notes"]])


# ------------------------------------------------------------------ the data state
def test_heads_offer_only_divisors_and_follow_the_example():
    ex = Explorer(example="song")
    assert ex.data["head_choices"] == [1, 2, 4] and ex.state["heads"] == 2  # second smallest
    ex.change_state(heads=4, mask="causal")
    ex.query = 3
    ex.change_state(example="simple")  # 4 divides 8: kept
    assert ex.data["head_choices"] == [1, 2, 4, 8] and ex.state["heads"] == 4
    assert ex.state["mask"] == "causal" and ex.query == 0  # the mask kept, the query back at 0
    ex.change_state(example="students")  # d_model = 7: 4 heads impossible, 7 offered
    assert ex.data["head_choices"] == [1, 7] and ex.state["heads"] == 7
    assert ex.data["tokens"] == mh.get_example("students").tokens
    assert ex.data["features"] == list(mh.get_example("students").features)
    ex.change_state(example="song")  # 7 does not divide 4: the second smallest again
    assert ex.state["heads"] == 2
    ex.query = 5
    ex.change_state(heads=1)  # not a new example: the query stays
    assert ex.query == 5


def test_the_data_names_the_example_and_offers_every_example():
    ex = Explorer(example="question", n_heads=4)
    e = mh.get_example("question")
    assert ex.data["example"] == "question" and ex.data["title"] == e.title
    assert ex.data["h"] == 4 and ex.state["heads"] == 4 and ex.state["mask"] == "none"
    assert set(ex.state) == {"example", "layer", "heads", "mask", "length"}
    assert ex.state["layer"] == 1 and ex.data["layer_choices"] == [1]  # one layer only
    assert [n for _, n in ex.data["examples"]] == list(mh.EXAMPLES)
    assert set(ex.data["meaning"]) >= {"X", "Z", "M", "A"}
    assert len(ex.texts) == 9 and all({"status", "notes", "failing"} <= set(t) for t in ex.texts)


@pytest.mark.parametrize("example", list(mh.EXAMPLES))
def test_the_arrays_sent_are_the_layer_written_out_by_hand(example):
    """Every heads choice, every mask, padding at lengths 1..T−1: the page's numbers are the
    layer's (and its output and weights are the course's layer's)."""
    e = mh.get_example(example)
    ex = Explorer(example=example)
    for h in e.head_choices:
        for mask, length in [("none", 1), ("causal", 1), *(("padding", n) for n in range(1, e.T))]:
            ex.change_state(heads=h, mask=mask, length=length)
            got, want = sent(ex), by_hand(e, h, mask, length)
            assert set(got) == set(NAMES)
            same(got, want)
            out, A = ref.multi_head_self_attention(e.X, *e.weights, h, want["M"])
            np.testing.assert_allclose(got["out"], out, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(got["A"], A, rtol=1e-12, atol=1e-12)


def test_blocked_scores_travel_as_strings_json_reads():
    """JSON has no −∞: the mask's blocked cells go as "-Infinity", the rest as numbers."""
    ex = Explorer(example="song", n_heads=2, mask="causal")
    T = mh.get_example("song").T
    M = ex.data["arrays"]["M"]
    assert all(M[i][j] == ("-Infinity" if j > i else 0.0) for i in range(T) for j in range(T))
    assert ex.data["arrays"]["ZM"][1][0][5] == "-Infinity"
    assert all(isinstance(v, float) for row in ex.data["arrays"]["A"][0] for v in row)
    json.dumps(ex.data, allow_nan=False)  # strict JSON: no bare NaN or Infinity


def test_the_padding_length_blocks_the_keys_past_it():
    ex = Explorer(example="song", mask="padding")
    ex.change_state(length=2)
    M = sent(ex)["M"]
    assert np.isneginf(M[:, 2:]).all() and (M[:, :2] == 0).all()
    ex.change_state(example="trained")  # longer sentence: the length is kept (mask reset)
    assert ex.state["length"] == 2


def test_step_query_and_view_are_the_pages_alone():
    """The page answers step, query and view from the arrays it has: the kernel computes
    nothing for them, and only a data state (or the box) sends new arrays and words."""
    ex = Explorer(functions={"softmax": my_softmax})
    sent_again = []
    ex.observe(lambda change: sent_again.append(change["name"]), names=["data", "texts"])
    ex.step, ex.query, ex.view = 5, 2, "query"
    assert sent_again == []
    ex.change_state(mask="causal")
    assert sent_again == ["data", "texts"]


# ------------------------------------------------------------------ whose functions
def test_only_the_course_functions_count_and_only_the_ones_it_names():
    assert set(USED) <= set(ref.__all__) and set(USED) <= set(names())
    ex = Explorer(functions={"softmax": my_softmax, "unrelated": 3, "split_heads": 3, "f": len})
    assert ex.functions == {"softmax": my_softmax}


def test_runs_the_learners_passing_function_and_names_it():
    calls = []

    def softmax(Z, axis=-1):  # a learner's correct softmax
        calls.append(np.shape(Z))
        return my_softmax(Z, axis)

    ex = Explorer(functions={"softmax": softmax}, n_heads=2, step=7)
    T = mh.get_example("song").T
    assert (2, T, T) in calls  # called on the explorer's scores (and by its check)
    same(sent(ex), by_hand(mh.get_example("song"), 2))
    assert "Drawn with <b>your</b> <code>softmax</code> (checks pass)" in ex.texts[6]["status"]
    assert not any(t["failing"] for t in ex.texts)  # nothing failing: no box to tick


def test_a_failing_function_is_replaced_and_why_comes_first():
    ex = Explorer(functions={"softmax": columns_softmax}, n_heads=2, step=7)
    want = by_hand(mh.get_example("song"), 2)
    same(sent(ex), want)  # the reference is drawn
    words = ex.texts[6]
    assert "the course's <code>softmax</code> instead of yours" in words["status"]
    assert words["notes"][0].startswith("<span")  # in the warning colour, first
    assert "Why not your <code>softmax</code>: its check fails" in words["notes"][0]
    assert "each column sums to 1" in words["notes"][0]  # the check's own sentence
    assert "Fix it, run its cell, then this one." in words["notes"][0]
    assert words["failing"] and not ex.texts[5]["failing"]  # from its step on: the box shows

    ex.anyway = True  # the learner asks to see their version
    got = sent(ex)
    np.testing.assert_allclose(got["A"], columns_softmax(want["ZM"]), rtol=1e-12)
    assert not np.allclose(got["A"], want["A"])
    words = ex.texts[6]
    assert "your failing <code>softmax</code>, as asked" in words["status"]
    assert "Drawn with your <code>softmax</code>, failing; its check:" in words["notes"][0]
    assert words["failing"]  # the box stays, to untick
    ex.anyway = False
    same(sent(ex), want)


def test_draw_anyway_draws_a_wrong_split_heads_in_step_4_and_after():
    """A wrong ``split_heads`` (a reshape, no transpose: the same shape) drawn anyway: the
    heads of step 4 are its output, and the scores of step 5 follow from them."""

    def split_heads(M, n_heads):
        return M.reshape(n_heads, M.shape[0], -1)

    e = mh.get_example("song")
    want = by_hand(e, 2)
    ex = Explorer(functions={"split_heads": split_heads}, n_heads=2, step=4)
    same(sent(ex), want)
    assert "the course's <code>split_heads</code> instead of yours" in ex.texts[3]["status"]
    assert ex.texts[3]["failing"] and "split_heads" not in said(ex, 3)

    ex.anyway = True
    got = sent(ex)
    for n in ("Q", "K", "V"):  # step 4 draws Qh, Kh, Vh: the learner's split of Q, K, V
        np.testing.assert_allclose(got[f"{n}h"], split_heads(want[n], 2), rtol=1e-12)
        assert not np.allclose(got[f"{n}h"], want[f"{n}h"])
    same(got, want, ("X", "Q", "K", "V"))  # the steps before are the reference's
    Z = got["Qh"] @ got["Kh"].transpose(0, 2, 1) / np.sqrt(2)  # d_k = 4 / 2
    np.testing.assert_allclose(got["Z"], Z, rtol=1e-12)
    assert "your failing <code>split_heads</code>, as asked" in ex.texts[3]["status"]


def test_draw_anyway_draws_a_wrong_merge_heads_only_where_it_is_used():
    def merge_heads(H):  # heads stacked down instead of side by side
        return H.reshape(H.shape[1], -1)

    e = mh.get_example("song")
    ex = Explorer(functions={"merge_heads": merge_heads}, n_heads=2, step=9)
    ex.anyway = True
    got, want = sent(ex), by_hand(e, 2)
    same(got, want, NAMES[:-2])  # up to the heads' outputs: the reference's
    np.testing.assert_allclose(got["concat"], merge_heads(want["heads"]), rtol=1e-12)
    np.testing.assert_allclose(got["out"], merge_heads(want["heads"]) @ e.W_o, rtol=1e-12)
    assert not np.allclose(got["concat"], want["concat"])
    assert "merge_heads" not in said(ex, 8) and "<code>merge_heads</code>" in said(ex, 9)


def test_a_stub_is_never_drawn_not_even_when_asked():
    ex = Explorer(functions={"split_heads": stub}, n_heads=2, step=4)
    ex.anyway = True
    same(sent(ex), by_hand(mh.get_example("song"), 2))
    assert not any(t["failing"] for t in ex.texts)  # no box for a stub
    assert "<code>split_heads</code>: yours is not written yet." in said(ex, 4)
    assert "Write it, run its cell, then this one." in said(ex, 4)
    assert "check fails" not in said(ex, 9)


@pytest.mark.parametrize(
    ("softmax", "why"),
    [
        (lambda Z, axis=-1: [][3], "it raised IndexError: list index out of range"),
        (
            lambda Z, axis=-1: my_softmax(Z)[..., :1],
            "it returned a different shape than the reference",
        ),
    ],
)
def test_a_failing_function_drawn_anyway_that_cannot_be_drawn_falls_back(softmax, why):
    ex = Explorer(functions={"softmax": softmax}, n_heads=2, step=7)
    ex.anyway = True
    same(sent(ex), by_hand(mh.get_example("song"), 2))
    assert "the course's <code>softmax</code> instead of yours" in ex.texts[6]["status"]
    (line,) = [n for n in ex.texts[6]["notes"] if "Why not" in n]
    assert f"Why not your <code>softmax</code>: {why}" in line


def test_special_values_from_the_learners_code_travel_as_strings():
    """A learner's scores with +∞ (drawn anyway): "Infinity" in Z, and the softmax of that
    row is NaN where ∞ − ∞, sent as "NaN": the page draws both apart and names them."""

    def attention_scores(Q, K):
        Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        Z[..., 0, 1] = np.inf
        return Z

    ex = Explorer(functions={"attention_scores": attention_scores}, n_heads=2, step=7)
    ex.anyway = True
    Z, A = ex.data["arrays"]["Z"], ex.data["arrays"]["A"]
    assert [Z[i][0][1] for i in range(2)] == ["Infinity", "Infinity"]
    assert [A[i][0][1] for i in range(2)] == ["NaN", "NaN"]  # e^(∞ − ∞)
    assert all(isinstance(v, float) for row in A[0][1:] for v in row)  # other rows: numbers
    json.dumps(ex.data, allow_nan=False)


def test_nan_from_a_learners_softmax_is_sent_where_it_is():
    def softmax(Z, axis=-1):  # NaN where the mask blocks: its check fails
        return np.where(np.isneginf(Z), np.nan, my_softmax(Z, axis))

    ex = Explorer(functions={"softmax": softmax}, n_heads=2, step=7, mask="causal")
    ex.anyway = True
    A, T = sent(ex)["A"], mh.get_example("song").T
    np.testing.assert_array_equal(np.isnan(A), np.broadcast_to(np.triu(np.ones((T, T)), 1) == 1,
                                                               A.shape))  # fmt: skip


def test_a_redefined_function_is_checked_again_and_used():
    space = {"softmax": columns_softmax}  # globals(): read afresh on each data state
    ex = Explorer(functions=space, step=7)
    assert "check fails" in said(ex, 7)
    space["softmax"] = my_softmax  # the learner fixes the cell and runs it again
    ex.change_state(heads=4)
    assert "Drawn with <b>your</b> <code>softmax</code>" in ex.texts[6]["status"]
    assert "check fails" not in said(ex, 7)


# ------------------------------------------------------------------ the words
def test_the_words_name_only_the_functions_of_the_steps_shown():
    ex = Explorer(functions={"softmax": columns_softmax}, step=3)
    for step in (1, 2):  # no function draws them: the words say so, and name none
        assert "example's own numbers" in ex.texts[step - 1]["status"]
        assert "<code>" not in said(ex, step)
    assert "softmax" not in said(ex, 3) + said(ex, 6)  # before any softmax
    assert "<code>project_qkv</code>" in said(ex, 3) and "split_heads" not in said(ex, 3)
    for step in (7, 8, 9):
        assert "the course's <code>softmax</code> instead of yours" in ex.texts[step - 1]["status"]


def test_a_mask_function_is_named_only_where_the_mask_calls_it():
    def causal_mask(T):  # a learner's, correct
        return np.where(np.tril(np.ones((T, T))) == 1, 0.0, -np.inf)

    ex = Explorer(functions={"causal_mask": causal_mask, "softmax": my_softmax}, step=7,
                  saved=True)  # fmt: skip
    assert "_mask" not in said(ex, 7)  # no mask: neither mask function is used
    ex.change_state(mask="causal")
    status = ex.texts[6]["status"]
    assert "<b>your</b> <code>causal_mask</code>, <code>softmax</code> (checks pass)" in status
    assert "padding_mask" not in said(ex, 7) and "causal_mask" not in said(ex, 5)
    ex.change_state(mask="padding")
    (absent,) = [n for n in ex.texts[6]["notes"] if "not in your saved" in n]
    assert "<code>padding_mask</code>: yours are not in your saved notebooks 03, 04, 05 and 06" in (
        absent
    )
    assert "causal_mask" not in said(ex, 7)


def test_stub_failing_and_absent_are_told_in_that_order():
    """A step notebook (04): the failing function's reason first, then its own stub, then the
    functions of other notebooks, each said once."""

    def attention_scores(Q, K):
        return Q @ K  # wrong shapes: raises ValueError in numpy

    ex = Explorer(functions={"split_heads": stub, "attention_scores": attention_scores}, step=5)
    same(sent(ex), by_hand(mh.get_example("song"), 2))
    notes = ex.texts[4]["notes"]
    assert len(notes) == 3
    assert "Why not your <code>attention_scores</code>: its check fails" in notes[0]
    assert notes[1] == (
        "Drawn with the course's <code>split_heads</code>: yours is not written yet. "
        "Write it, run its cell, then this one."
    )
    assert notes[2] == (
        "Drawn with the course's <code>project_qkv</code>: the exercise of notebook 03; "
        "the capstone (notebook 10) draws with yours."
    )
    status = ex.texts[4]["status"]
    assert "the course's <code>attention_scores</code> instead of yours" in status
    assert "the course's other functions" in status
    assert ex.texts[4]["failing"]  # attention_scores is written, and fails: the box shows


def test_not_written_yet_is_said_as_the_extensions_say_it():
    """Issue 46: a stub is "not written yet" in the explorer and the extensions' widgets alike,
    never "its check fails"."""
    shape = r"Drawn with the course's <code>(\w+)</code>: yours is not written yet"
    explorer = said(Explorer(functions={"softmax": stub}, step=7), 7)
    widget = SlidingWindowWidget(functions={"sliding_window_mask": stub}).current()["status"]
    assert re.search(shape, explorer)[1] == "softmax"
    assert re.search(shape, widget)[1] == "sliding_window_mask"
    assert "check fails" not in explorer + widget


def test_a_saved_notebooks_functions_are_named_with_their_notebook():
    """The capstone reads the saved notebooks: a saved wrong copy, a saved stub and a function
    not in its saved notebook are each named with that notebook, and the learner is told to
    save it, then run this cell again (a control here reads nothing anew)."""
    functions = {"softmax": columns_softmax, "split_heads": stub, "project_qkv": my_project_qkv}
    ex = Explorer(functions=functions, step=7, saved=True)
    notes = ex.texts[6]["notes"]
    assert (
        "Why not your <code>softmax</code> (the copy saved in notebook 07): its check fails"
        in (notes[0])
    )
    assert notes[0].endswith("Fix it, save it, then run this cell again.</span>")
    assert notes[1] == (
        "Drawn with the course's <code>split_heads</code>: yours is not written yet in notebook "
        "04 as saved (a stub there; written but not saved yet?). Write it, save it, then run "
        "this cell again."
    )
    assert notes[2].startswith(
        "Drawn with the course's <code>attention_scores</code>: yours is not in your saved "
        "notebook 05 (not written, not saved, or a cell there raises"
    )
    assert notes[2].endswith("Save it, then run this cell again.")
    assert "<code>project_qkv</code>" not in " ".join(notes)  # its check passes: drawn
    for step in range(1, 10):
        assert "change a control" not in said(ex, step)
        assert "run its cell" not in said(ex, step)  # a saved notebook's cell runs nowhere here
    ex.anyway = True
    assert "Drawn with your <code>softmax</code> (the copy saved in notebook 07), failing" in (
        said(ex, 7)
    )


def test_many_absent_functions_name_each_notebook_not_a_range():
    """Notebooks 04 and 05 saved and passing, the others not: 03, 07 and 08 are named, not
    "03–08", which would send the learner back to 04–06 too."""

    def merge_heads(H):
        return np.concatenate(list(np.moveaxis(H, -3, 0)), axis=-1)  # (..., T, h·d_k)

    def attention_scores(Q, K):
        return Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])

    mine = {"split_heads": my_split_heads, "merge_heads": merge_heads}
    ex = Explorer(functions={**mine, "attention_scores": attention_scores}, step=9, saved=True)
    assert ex.texts[8]["status"].startswith(
        "Drawn with <b>your</b> <code>split_heads</code>, <code>attention_scores</code>, "
        "<code>merge_heads</code> (checks pass)"
    )
    (line,) = ex.texts[8]["notes"]
    assert line.startswith(
        "Drawn with the course's <code>project_qkv</code>, <code>softmax</code>, "
        "<code>attention_head</code>: yours are not in your saved notebooks 03, 07 and 08 ("
    )
    assert line.endswith("Save them, then run this cell again.")


def test_the_layer_of_09_and_other_notebooks_functions_are_not_mentioned():
    """09's explorer next to a learner's passing layer, 18's next to every function: only the
    functions the picture uses are named (the layer is checked by its own test cell)."""
    others = {n: getattr(ref, n) for n in names() if n not in USED and hasattr(ref, n)}
    assert "multi_head_self_attention" in others
    ex = Explorer(functions=others, step=9)
    assert ex.texts[8]["status"] == "Drawn with the course's functions (below: which, and why)."
    for step in range(1, 10):
        assert not any(f"<code>{n}</code>" in said(ex, step) for n in others), step
    assert "the exercises of notebooks 03, 04, 05, 07 and 08" in said(ex, 9)


def test_the_reference_draws_and_says_so_without_yours():
    ex = Explorer(functions=REFERENCE, example="song", mask="causal")
    same(sent(ex), by_hand(mh.get_example("song"), 2, "causal"))
    assert all(t == {"status": REFERENCE_STATUS, "notes": [], "failing": False} for t in ex.texts)
    trained = Explorer(functions=REFERENCE, example="trained")
    assert trained.texts[6]["status"] == REFERENCE_STATUS
    assert [n[:9] for n in trained.texts[6]["notes"]] == ["Learned: "]  # what the heads learned


def test_choosing_the_trained_example_resets_the_mask_and_says_so_until_one_is_chosen():
    """The trained heads learned with no mask: choosing them resets it, and says so; a mask
    chosen afterwards is said to block what they learned to read."""
    ex = Explorer(example="song", step=7, mask="causal")
    ex.change_state(example="trained")
    assert ex.state["mask"] == "none" and not np.isneginf(sent(ex)["M"]).any()
    notes = " ".join(ex.texts[6]["notes"])
    assert "Mask set to none (it was causal)" in notes and "Learned: head 1" in notes
    assert "was not there in training" not in notes
    ex.query = 2
    ex.change_state(heads=2)  # nothing the learner chose about the mask: still said
    assert "Mask set to none" in " ".join(ex.texts[6]["notes"])
    ex.change_state(mask="padding")
    notes = " ".join(ex.texts[6]["notes"])
    assert "Mask set to none" not in notes
    assert "The padding mask drawn here was not there in training" in notes
    ex.change_state(example="song")  # other examples keep the learner's choice
    assert ex.state["mask"] == "padding" and "Learned" not in said(ex, 7)


def test_viewers_without_the_widget_get_one_line_saying_where_it_lives():
    bundle = Explorer()._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "run this cell" in data["text/plain"] and "\n" not in data["text/plain"]
    assert not any(k.startswith("image/") for k in data)  # no picture drawn in the kernel


def test_the_induction_example_is_the_models_own_forward_layer_by_layer():
    """Both layers of the shipped two-layer model on its sequence, with the causal mask it
    learned with: layer 1 on E[x] + P, layer 2 on the residual stream after layer 1, each
    written out by hand; their weights are the model's own forward's (``induction.forward``),
    and layer 2's input plus its output is the stream the readout reads."""
    data = induction.load_induction()
    x = data["sequence"]  # (T,) token ids: 8 letters repeated once
    acts = induction.forward(data, x)
    X0 = data["E"][x] + data["P"][: len(x)]  # (T, d_model)

    def layer(k, X):
        W = {f"W_{n}": data[f"W_{n}{k}"] for n in "qkvo"}
        return by_hand(SimpleNamespace(X=X, **W), 2, "causal")

    one = layer(1, X0)
    two = layer(2, X0 + one["out"])
    ex = Explorer(functions=REFERENCE, example="induction", step=7)
    assert ex.state["layer"] == 1 and ex.state["mask"] == "causal"
    assert ex.data["layer_choices"] == [1, 2] and ex.data["head_choices"] == [2]
    assert ex.data["tokens"] == [induction.VOCAB[k] for k in x]
    same(sent(ex), one)
    np.testing.assert_allclose(sent(ex)["A"], acts.A1, rtol=1e-12, atol=1e-12)
    ex.change_state(layer=2)
    got = sent(ex)
    same(got, two)
    np.testing.assert_allclose(got["A"], acts.A2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got["X"] + got["out"], acts.X2, rtol=1e-12, atol=1e-12)
    L = len(x) // 2  # the induction stripe: query t reads key t − L + 1 in the repeated half
    stripe = got["A"][:, np.arange(L, 2 * L), np.arange(1, L + 1)]  # (h, L)
    assert stripe.mean() > 0.5, stripe.round(2)


def test_the_induction_examples_notes_quote_each_layers_scores_and_its_mask():
    """The notes of step 7 name each head by its two scores over the held-out sequences,
    computed here from the model's weights with numpy; choosing the example sets the causal
    mask it learned with and says so, and another mask is said not to be the learned one."""
    data, x = induction.load_induction(), induction.held_out()
    acts = induction.forward(data, x)
    L, T = induction.PERIOD, induction.SEQ_LEN
    ex = Explorer(example="song", step=7)
    ex.change_state(example="induction")
    assert ex.state["mask"] == "causal" and ex.state["layer"] == 1
    for layer, A in ((1, acts.A1), (2, acts.A2)):  # (n, h, T, T)
        ex.change_state(layer=layer)
        notes = " ".join(ex.texts[6]["notes"])
        assert f"Learned by layer {layer} of 2: head 1" in notes, notes
        for k in range(2):
            prev = A[:, k, np.arange(1, L + 1), np.arange(0, L)].mean()
            ind = A[:, k, np.arange(L, T), np.arange(1, T - L + 1)].mean()
            assert f"previous-token score {prev:.2f}, induction score {ind:.2f}" in notes, notes
        assert "Mask set to causal (it was none)" in notes
    assert "an induction head" in notes and "a previous-token head" not in notes  # layer 2
    ex.change_state(mask="none")
    notes = " ".join(ex.texts[6]["notes"])
    assert "Mask set to causal" not in notes
    assert "Drawn here with no mask: the heads learned with the causal mask." in notes
    ex.change_state(example="song")  # the note was the induction example's: not carried over
    assert ex.state["layer"] == 1 and "Mask set to" not in said(ex, 7)
