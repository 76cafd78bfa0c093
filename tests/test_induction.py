"""The induction notebook's task, model, backward pass and training (19_induction)."""

import numpy as np
import pytest

from mhsa_helpers.gradcheck import relative_error
from mhsa_helpers.training import induction

V = len(induction.VOCAB)


def test_each_sequence_repeats_distinct_tokens_with_its_own_period():
    x, period = induction.sequences(200, np.random.default_rng(5), periods=(4, 5, 6, 7, 8))
    assert x.shape == (200, induction.SEQ_LEN) and set(period.tolist()) == {4, 5, 6, 7, 8}
    for seq, p in zip(x, period, strict=True):
        assert len(set(seq[:p].tolist())) == p  # distinct within a period
        assert all(seq[t] == seq[t - p] for t in range(p, len(seq)))
    assert x.min() >= 0 and x.max() < V


def test_the_held_out_set_is_eight_tokens_repeated_once_and_not_the_training_stream():
    x = induction.held_out()
    L = induction.PERIOD
    assert x.shape == (induction.HELD_OUT_SIZE, 2 * L)
    assert (x[:, :L] == x[:, L:]).all()
    first_batch, _ = next(induction.training_batches())
    assert not any((first_batch[:, None, :] == x[None, :, :]).all(-1).ravel())


def test_the_masks_split_the_predictions_by_whether_the_target_occurred_before():
    first, repeated = induction.period_masks(np.array([3]), seq_len=7)
    # predictions t = 0..5 of x[1..6], period 3: x[1], x[2] unseen; x[3] = x[0] is neither
    assert first[0].tolist() == [True, True, False, False, False, False]
    assert repeated[0].tolist() == [False, False, False, True, True, True]


def test_the_best_first_period_loss_is_the_mean_log_of_the_tokens_not_yet_seen():
    # period 3 of vocabulary 5: after 1 token 4 remain, after 2 tokens 3 remain
    assert induction.best_first_loss((3,), vocab=5) == pytest.approx((np.log(4) + np.log(3)) / 2)
    assert induction.best_first_loss() < np.log(V)


def test_the_gradient_matches_central_differences():
    params = induction.init_params(seed=3, d_model=4, seq_len=6)
    x, _ = induction.sequences(2, np.random.default_rng(0), periods=(3,), seq_len=6)
    _, grads, _ = induction.loss_and_grads(params, x, 2)
    numeric = induction.numerical_grads(params, x, 2)
    assert set(grads) == set(params)
    for name in params:
        assert relative_error(grads[name], numeric[name]) < 1e-6, name


def test_cutting_every_head_of_a_layer_leaves_its_input_unchanged():
    params = induction.init_params()
    x = induction.held_out(4)
    cut = induction.without_head(induction.without_head(params, 1, 0), 1, 1)
    acts = induction.forward(cut, x)
    np.testing.assert_allclose(acts.X1, acts.X0, atol=1e-12)
    kept = induction.forward(induction.without_head(params, 1, 0), x)
    assert np.abs(kept.X1 - kept.X0).max() > 1e-3  # the other head still writes
    assert params["W_o1"].any()  # the original is not touched


def test_the_model_is_causal():
    params = induction.init_params()
    x = induction.held_out(3)
    y = x.copy()
    y[:, -1] = (y[:, -1] + 1) % V
    a, b = induction.forward(params, x).logits, induction.forward(params, y).logits
    np.testing.assert_allclose(a[:, :-1], b[:, :-1], atol=1e-12)
    assert np.abs(a[:, -1] - b[:, -1]).max() > 1e-6


def test_the_drop_is_the_first_step_whose_running_mean_is_below_the_level():
    losses = np.r_[np.full(30, 3.0), np.full(30, 0.0)]
    # the mean of steps 31..40 is the first mean of 10 below 1.5 only when > 5 of them are 0
    assert induction.drop_step(losses, 1.5) == 36
    assert induction.drop_step(losses, -1.0) is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("ABZ", "'Z' is not a token"),
        ("AB1?", "'1', '\\?' are not tokens"),
        ("ABCDEFGHI", "too long"),
        ("B", "1 letter is too few: at least 3"),
        ("A B", "2 letters are too few"),
    ],
)
def test_a_bad_typed_sequence_gets_a_one_line_reason(text, reason):
    with pytest.raises(ValueError, match=reason) as info:
        induction.parse_tokens(text)
    assert "\n" not in str(info.value)


def test_a_typed_sequence_is_read_in_any_of_its_spellings():
    for text in ("HELP", "h e l p", "H,E,L,P"):
        assert induction.tokens(induction.parse_tokens(text)) == list("HELP")


@pytest.fixture(scope="module")
def trained():
    return induction.train()


@pytest.mark.slow
def test_training_from_the_seed_copies_the_repeated_half_of_held_out_sequences(trained):
    assert trained.accuracy >= induction.GOAL
    # sequences neither training nor the held-out set drew
    x, _ = induction.sequences(500, np.random.default_rng(20240917))
    assert induction.accuracy(trained.params, x) >= induction.GOAL


@pytest.mark.slow
def test_cutting_the_previous_token_head_breaks_the_copying(trained):
    x = induction.held_out()
    acts = induction.forward(trained.params, x)
    on_previous = acts.A1[..., np.arange(1, 9), np.arange(0, 8)].mean(axis=(0, 2))  # (h,)
    head = int(np.argmax(on_previous))
    assert on_previous[head] > 0.8
    assert induction.ablation(trained.params, x)[(1, head + 1)] < 0.5


def test_the_scores_read_the_stripes_of_made_up_heads():
    T, L = 8, 4
    previous = np.eye(T, k=-1)
    previous[0, 0] = 1.0  # query 0 has no previous token: it keeps itself
    copying = np.zeros((T, T))
    t = np.arange(T)
    copying[t, np.where(t >= L - 1, t - L + 1, t)] = 1.0  # key t - L + 1, else itself
    half = 0.5 * previous + 0.5 * copying
    A = np.stack([previous, copying, half])[None]  # (1, 3 heads, T, T)
    prev, ind = induction.head_scores(np.repeat(A, 2, axis=0), L)
    np.testing.assert_allclose(prev, [1.0, 0.0, 0.5])
    np.testing.assert_allclose(ind, [0.0, 1.0, 0.5])


def test_the_previous_token_score_counts_the_first_period_and_one_more_query():
    T, L = 8, 4
    A = np.zeros((1, T, T))
    A[0, 4, 3] = 1.0  # query L on key L - 1: counted
    A[0, 5, 4] = 1.0  # query L + 1: not counted
    prev, _ = induction.head_scores(A, L)
    assert prev[0] == pytest.approx(1 / L)


def test_the_shipped_model_copies_the_repeated_half_of_unseen_sequences():
    shipped = induction.load_induction()
    params = {name: shipped[name] for name in induction.init_params()}
    x, _ = induction.sequences(500, np.random.default_rng(20240917))  # neither seed's
    assert induction.accuracy(params, x, shipped["n_heads"]) >= induction.GOAL
    assert (shipped["sequence"] == induction.held_out()[0]).all()
    assert shipped["seed"] == induction.SEED and shipped["steps"] == induction.STEPS


@pytest.mark.slow
def test_the_command_rebuilds_the_shipped_file_byte_for_byte(tmp_path):
    out = tmp_path / "induction.npz"
    assert induction.main(["--out", str(out)]) == 0
    assert out.read_bytes() == induction.DATA.read_bytes()


# ---------------------------------------------------------------------------
# the exercise induction_scores: its check beyond the catalogue (tests/test_catalogue.py
# proves each catalogued slip; tests/support/slips51.py holds them as learners write them)
# ---------------------------------------------------------------------------
def _solution(A, period):
    A = np.asarray(A)
    h, T = A.shape[-3], A.shape[-1]
    t = np.arange(1, period + 1)
    previous = A[..., t, t - 1].reshape(-1, h, period).mean(axis=(0, 2))
    t = np.arange(period, T)
    induction_ = A[..., t, t - period + 1].reshape(-1, h, T - period).mean(axis=(0, 2))
    return previous, induction_


def _said(fn, seed=None):
    from tests.support.oracles import failure

    failed = failure("induction_scores", fn, seed)
    return None if failed is None else failed


def test_the_notebook_uses_the_exercise_s_reference_for_its_scores():
    import mhsa_helpers as mh

    A = np.random.default_rng(0).dirichlet(np.ones(9), size=(3, 2, 9))
    for got, want in zip(induction.head_scores(A, 4), mh.induction_scores(A, 4), strict=True):
        np.testing.assert_array_equal(got, want)


def test_two_slips_at_once_one_in_each_score_are_both_named():
    from mhsa_helpers.checks import step19_induction_scores as s19

    def both(A, period):
        T, h = A.shape[-1], A.shape[-3]
        t = np.arange(period, T)
        return np.diagonal(A, -1, -2, -1).reshape(-1, h, T - 1).mean((0, 2)), A[
            ..., t, t - period
        ].reshape(-1, h, T - period).mean((0, 2))

    said = _said(both)
    assert said is not None and s19.PREVIOUS_ALL in str(said) and s19.SAME_TOKEN in str(said)


def test_an_unknown_wrong_score_is_located_and_the_hidden_sentence_quotes_no_value():
    def off(A, period):
        prev, ind = _solution(A, period)
        return prev, ind + 0.01 * np.arange(len(ind))

    said = _said(off)
    assert said is not None and "induction score differs" in str(said), said
    assert "(head index 3: got" in str(said)
    hidden = _said(off, seed=12345)
    assert hidden is not None and "got" not in hidden.public and "0." not in hidden.public


def test_a_single_score_or_a_wrong_shape_is_refused_with_a_sentence():
    said = _said(lambda A, period: _solution(A, period)[0])
    assert said is not None and "return a tuple (previous, induction)" in str(said), said
    said = _said(lambda A, period: tuple(np.append(s, 0.0) for s in _solution(A, period)))
    assert said is not None and "should have shape" in str(said), said
    assert "(h,)" in said.public


def test_the_check_s_visible_inputs_include_the_trained_model_on_a_batch():
    from mhsa_helpers.checks import CHECKS

    shapes = [call.args[0].shape for call in CHECKS["induction_scores"].calls()]
    assert (5, 4, 16, 16) in shapes and any(len(s) == 3 for s in shapes)
