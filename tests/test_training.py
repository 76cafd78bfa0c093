"""The training notebook's model, its backward pass, and the shipped example ``trained``."""

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers import reference as ref
from mhsa_helpers.training import backward, heads, layer, loop, model, saved, task
from mhsa_helpers.training.__main__ import main
from mhsa_helpers.widgets.explorer import Explorer

#: Held-out sequences drawn with a seed that neither training nor the shipped file used.
OTHER_SEED = 20240917


@pytest.fixture(scope="module")
def shipped():
    return saved.load_trained()


def test_the_trained_example_loads_with_its_shapes():
    e = mh.get_example("trained")
    assert "trained" in mh.EXAMPLES
    assert e.X.shape == (task.SEQ_LEN, model.D_MODEL)
    assert len(e.tokens) == e.T and len(set(e.tokens)) == e.T  # distinct letters: readable labels
    assert set(e.tokens) <= set(task.VOCAB)
    assert len(e.features) == e.d_model
    for W in e.weights:
        assert W.shape == (e.d_model, e.d_model)
        with pytest.raises(ValueError, match="read-only"):
            W[0, 0] = 1.0
    assert e.head_choices == [model.N_HEADS]  # its heads make sense at the trained count only
    assert len(e.head_notes) == model.N_HEADS
    assert "python -m mhsa_helpers.training" in e.source


def test_the_shipped_x_is_the_layer_input_of_its_sequence(shipped):
    e = mh.get_example("trained")
    np.testing.assert_allclose(e.X, shipped["E"][shipped["sequence"]] + shipped["P"], atol=1e-12)
    assert e.tokens == task.letters(shipped["sequence"])
    x_test, _ = task.held_out()
    assert any((seq == shipped["sequence"]).all() for seq in x_test)


def test_the_explorer_accepts_the_trained_example():
    ex = Explorer(example="trained", step=7)
    assert ex.data["head_choices"] == [model.N_HEADS] and ex.state["heads"] == model.N_HEADS
    assert np.shape(ex.data["arrays"]["A"]) == (model.N_HEADS, 8, 8)  # what step 7 draws
    assert ex.data["title"].startswith("Trained to reverse")
    assert "Learned: head 1: the mirror position" in " ".join(ex.texts[6]["notes"])
    ex.change_state(example="song")  # away and back: the head count follows the example
    assert ex.state["heads"] in mh.get_example("song").head_choices
    ex.change_state(example="trained")
    assert ex.state["heads"] == model.N_HEADS


def test_the_named_heads_attend_where_the_example_says_on_unseen_sequences(shipped):
    """The contract: on held-out sequences, each named head puts >= 0.8 on its key."""
    assert any(shipped["head_patterns"]), "the example names no head"
    x = task.sequences(500, np.random.default_rng(OTHER_SEED))
    X = shipped["E"][x] + shipped["P"]  # (500, T, d_model)
    W = (shipped[n] for n in ("W_q", "W_k", "W_v", "W_o"))
    _, A = ref.multi_head_self_attention(X, *W, shipped["n_heads"])  # (500, h, T, T)
    for k, pattern in enumerate(shipped["head_patterns"]):
        if pattern:
            share = heads.weight_on_keys(A, heads.pattern_keys(pattern))[k]
            assert share >= 0.8, (k, pattern, share)


def test_the_shipped_model_reverses_unseen_sequences(shipped):
    x = task.sequences(500, np.random.default_rng(OTHER_SEED))
    assert model.accuracy(shipped, x, task.targets(x), shipped["n_heads"]) >= loop.GOAL


def test_the_held_out_sequences_are_not_trained_on():
    x, y = task.held_out()
    np.testing.assert_array_equal(y, x[:, ::-1])
    assert task.seen_in_training(x, loop.STEPS).sum() == 0


def test_a_short_run_lowers_the_loss():
    result = loop.train(40, eval_every=20)
    assert result.losses.shape == (40,)
    assert result.losses[0] == pytest.approx(np.log(len(task.VOCAB)), abs=0.5)  # knows ~nothing
    assert result.losses[-5:].mean() < result.losses[:5].mean() - 0.3
    np.testing.assert_array_equal(result.eval_steps, [20, 40])


def test_the_callback_and_the_layer_functions_are_used():
    calls = {"forward": 0, "backward": 0, "callback": []}

    def forward(*args):
        calls["forward"] += 1
        return ref.multi_head_self_attention(*args)

    def backward(*args):
        calls["backward"] += 1
        return ref.multi_head_self_attention_backward(*args)

    loop.train(
        6,
        attention=forward,
        attention_backward=backward,
        eval_every=3,
        callback=lambda *a: calls["callback"].append(a),
    )
    assert calls["backward"] == 6 and calls["forward"] == 6 + 2  # 6 steps, 2 measurements
    assert [c[0] for c in calls["callback"]] == [3, 6]


@pytest.mark.parametrize("mask", [None, "causal"])
def test_the_backward_pass_matches_central_differences(mask):
    T, d, h = 4, 4, 2
    params = model.init_params(seed=3, d_model=d, seq_len=T)
    for n in params:  # away from the initial values' special structure (zero bias)
        params[n] = params[n] + np.random.default_rng(7).normal(0, 0.1, params[n].shape)
    x = task.sequences(3, np.random.default_rng(5), seq_len=T)
    y = task.targets(x)
    M = ref.causal_mask(T) if mask else None
    _, grads = backward.loss_and_grads(params, x, y, n_heads=h, mask=M)
    numeric = backward.numerical_grads(params, x, y, n_heads=h, mask=M)
    for n, g in grads.items():
        assert g.shape == params[n].shape
        scale = np.abs(numeric[n]).max()
        assert np.abs(g - numeric[n]).max() <= 1e-6 * scale + 1e-9, n


@pytest.mark.slow  # a sweep: many examples per exercise
def test_rebuilding_reproduces_the_shipped_weights(shipped):
    """`python -m mhsa_helpers.training` is deterministic: the same seed, the same weights."""
    result = loop.train(shipped["steps"], seed=shipped["seed"])
    for n in ("E", "P", "W_q", "W_k", "W_v", "W_o", "W_u", "b_u"):
        np.testing.assert_allclose(result.params[n], shipped[n], rtol=1e-7, atol=1e-9)


def test_the_build_command_writes_a_loadable_file(tmp_path, capsys):
    out = tmp_path / "trained.npz"
    assert main(["--out", str(out), "--steps", "150"]) == 0
    data = saved.load_trained(out)
    assert data["X"].shape == (task.SEQ_LEN, model.D_MODEL) and data["steps"] == 150
    assert "head 1:" in capsys.readouterr().out


def test_removing_a_head_zeroes_its_rows_of_w_o_only():
    params = model.init_params()
    cut = heads.without_head(params, 1)
    d_k = model.D_MODEL // model.N_HEADS
    assert (cut["W_o"][d_k:] == 0).all()
    np.testing.assert_array_equal(cut["W_o"][:d_k], params["W_o"][:d_k])
    assert (params["W_o"][d_k:] != 0).any()  # the original is untouched


def test_name_heads_says_none_below_the_threshold():
    T = task.SEQ_LEN
    mirror = np.eye(T)[::-1]  # query i looks at key T-1-i
    uniform = np.full((T, T), 1 / T)
    named = heads.name_heads(np.stack([mirror, uniform]))
    assert named[0] == ("mirror", 1.0)
    assert named[1][0] is None and named[1][1] == pytest.approx(1 / T)


def test_layer_functions_keep_the_learners_only_where_the_check_passes():
    fwd, bwd, said = layer.layer_functions({})
    assert fwd is ref.multi_head_self_attention
    assert bwd is ref.multi_head_self_attention_backward
    assert said.count("Trains with the course's") == 2

    def wrong(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
        return np.zeros_like(X), tuple(np.zeros_like(W) for W in (W_q, W_k, W_v, W_o))

    _, bwd, said = layer.layer_functions({"multi_head_self_attention_backward": wrong})
    assert bwd is ref.multi_head_self_attention_backward
    assert "instead of yours" in said


def test_the_explorer_says_what_each_trained_head_learned():
    ex = Explorer(example="trained", step=7)
    e = mh.get_example("trained")
    notes = " ".join(ex.texts[6]["notes"])  # under step 7's picture
    assert e.head_notes and all(note in notes for note in e.head_notes)
    assert "mirror position" in notes
