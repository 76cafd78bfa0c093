"""The checks pass the course's solutions and name each listed mistake (fast, in-process)."""

import dataclasses

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers.checks.comparison import compare
from mhsa_helpers.checks.core import Call, Outcome, call_in_notebook
from mhsa_helpers.checks.failures import blind
from mhsa_helpers.exercises import names
from tests.support.answers import cast, load, single_precision, solution
from tests.support.fresh_correct import CORRECT
from tests.support.fresh_mistakes import FRESH
from tests.support.marks import right_answer
from tests.support.mistakes import HOSTILE, MISTAKES, WARNING_BUT_CORRECT
from tests.support.oracles import hidden


def test_every_exercise_has_exactly_one_check():
    assert sorted(checks.CHECKS) == sorted(names())


@pytest.mark.parametrize("name", names())
def test_solutions_pass_visible_and_hidden(name, capsys):
    fn = solution(name)
    checks.check(name, fn)
    checks.check_hidden(name, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_visible_check_names_the_mistake(mistake):
    _, name, source, hint = MISTAKES[mistake]
    with pytest.raises(AssertionError) as info:
        checks.check(name, load(source, name))
    assert hint in str(info.value), str(info.value)
    # that the hidden check fails it too, under three keys: tests/test_hidden_parity.py


def test_unimplemented_answer_says_so_as_ordinary_output_worth_zero():
    """Not written yet is no error of the learner's: a ✗ line, shown as output, worth 0."""

    def softmax(Z, axis=-1):
        raise NotImplementedError()

    for said in (checks.check("softmax", softmax), checks.check_hidden("softmax", softmax)):
        assert not said and repr(said) == "0"  # nbgrader's partial grade: 0 points
        assert str(said).startswith("\u2717 softmax is not implemented yet"), str(said)
        assert "not implemented yet" in said._repr_html_() and "<pre" in said._repr_html_()


def test_a_function_that_stops_half_way_is_a_failure_not_a_not_yet():
    """Only an untouched function is "not yet": NotImplementedError on a later call fails."""

    def softmax(Z, axis=-1):
        if Z.ndim > 2:
            raise NotImplementedError("batches later")
        m = Z.max(axis=axis, keepdims=True)  # right on every other call
        E = np.exp(Z - np.where(np.isneginf(m), 0.0, m))
        total = E.sum(axis=axis, keepdims=True)
        return np.divide(E, total, out=np.zeros_like(E), where=total > 0)

    with pytest.raises(AssertionError, match="not implemented yet"):
        checks.check("softmax", softmax)


def test_right_values_with_a_warning_fail_and_say_so():
    """The contract: no warning (softmax's text promises zeros "with no NaN and no warning")."""
    _, name, source = WARNING_BUT_CORRECT
    with pytest.raises(AssertionError, match="right values, but numpy warns") as info:
        checks.check(name, load(source, name))
    assert "invalid value encountered" in str(info.value)


def test_kv_cache_size_counts_k_and_v():
    with pytest.raises(AssertionError, match="Both K and V"):
        checks.check("kv_cache_size", lambda T, d, h, mq=False: T * d)


@pytest.mark.parametrize(
    "name, source, hint",
    [
        (
            "positional_encoding",
            "def positional_encoding(T, d):\n"
            "    pos, col = np.arange(T)[:, None], np.arange(d)[None, :]\n"
            "    angle = pos / 10000 ** (2 * (col // 2) / d)\n"
            "    return np.where(col % 2 == 0, np.sin(angle), np.cos(angle)).T\n",
            "transposed",
        ),
        (
            "init_weights",
            "def init_weights(a, b, rng):\n    return np.random.uniform(-1, 1, (a, b))\n",
            "same rng seed differ",
        ),
        (
            "init_weights",
            "def init_weights(a, b, rng):\n    return rng.normal(0, 1, (a, b))\n",
            "not from a normal distribution",
        ),
        (
            "init_weights",
            "def init_weights(a, b, rng):\n"
            "    return rng.uniform(0, np.sqrt(6 / (a + b)), (a, b))\n",
            "no value is negative",
        ),
        (
            "causal_mask",
            "def causal_mask(T):\n    i, j = np.indices((T, T))\n"
            "    return np.where(i + j > T - 1, -np.inf, 0.0)\n",
            "anti-triangle",
        ),
        (
            "causal_mask",
            "def causal_mask(T):\n    return np.triu(np.ones((T, T), bool), 1)\n",
            "additive",
        ),
        (
            "attention_scores",
            "def attention_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]\n",
            "its square root",
        ),
        (
            "softmax",
            "def softmax(Z, axis=-1):\n    return Z\n",
            "differs from the reference, first at query 'Monica', key 'Monica'",
        ),
    ],
)
def test_more_mistakes_named(name, source, hint):
    with pytest.raises(AssertionError) as info:
        checks.check(name, load(source, name))
    assert hint in str(info.value), str(info.value)


def test_messages_speak_plain_numbers_not_numpy_reprs():
    with pytest.raises(AssertionError) as info:
        checks.check("softmax", load("def softmax(Z, axis=-1):\n    return Z\n", "softmax"))
    assert "np.float64" not in str(info.value) and "np.int64" not in str(info.value)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_answers_are_named(case):
    _, name, source, hint = HOSTILE[case]
    genuine = np.allclose, np.isclose, np.testing.assert_allclose
    try:
        with pytest.raises(AssertionError) as info:
            checks.check(name, load(source, name))
    finally:
        np.allclose, np.isclose, np.testing.assert_allclose = genuine
    assert hint in str(info.value)


@pytest.mark.parametrize(
    "name, used",
    [
        ("attention_head", "mh.softmax(mh.attention_scores(Q, K) + (0 if mask is None else mask))"),
        (
            "multi_query_attention",
            "mh.multi_head_self_attention(X, W_q, Wk, Wv, W_o, n_heads, mask)",
        ),
    ],
)
def test_earlier_steps_of_the_reference_may_be_used(name, used):
    """The registry allows every function of an earlier notebook through ``mh``."""
    sources = {
        "attention_head": f"def attention_head(Q, K, V, mask=None):\n    A = {used}\n"
        "    return A @ V, A\n",
        "multi_query_attention": "def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads,"
        " mask=None):\n    Wk, Wv = np.tile(W_k, n_heads), np.tile(W_v, n_heads)\n"
        f"    return {used}\n",
    }
    checks.check(name, load(sources[name], name))


def test_the_exercise_itself_and_later_ones_may_not_be_used():
    source = (
        "def attention_head(Q, K, V, mask=None):\n    return mh.attention_head(Q, K, V, mask)\n"
    )
    with pytest.raises(AssertionError, match=r"reference mhsa_helpers\.attention_head"):
        checks.check("attention_head", load(source, "attention_head"))
    source = (
        "def attention_scores(Q, K):\n"
        "    return mh.attention_head(Q, K, np.eye(K.shape[-2]))[0] * 0 + Q @ K.swapaxes(-1, -2)"
        " / np.sqrt(Q.shape[-1])\n"
    )
    with pytest.raises(AssertionError, match=r"reference mhsa_helpers\.attention_head"):
        checks.check("attention_scores", load(source, "attention_scores"))


@pytest.mark.parametrize(
    "name",
    [right_answer(n, n, id=n) for n in names() if n not in ("init_weights", "kv_cache_size")],
)
def test_correct_float32_implementations_pass(name, capsys):
    """A correct answer in single precision is not a mistake (tolerances follow the dtype).

    The extensions' contract (strict checks) sets the tolerance by the inputs' precision:
    there the check's own inputs are given in float32.
    """
    fn = single_precision(solution(name))
    check = checks.CHECKS[name]
    if not check.strict:
        checks.check(name, fn)
        checks.check_hidden(name, fn)
        assert capsys.readouterr().out.count("\u2713") == 2
        return
    for seed in (None, hidden(name)):
        calls = [
            dataclasses.replace(
                c, args=cast(c.args), kwargs={k: cast(v) for k, v in c.kwargs.items()}
            )
            for c in check.calls(seed)
        ]
        with np.errstate(all="ignore"):
            check.verdict(calls, call_in_notebook(name, fn, calls))


def test_a_failure_shows_as_one_sentence_in_ipython():
    from mhsa_helpers.checks import CheckFailed

    with pytest.raises(CheckFailed) as info:
        checks.check("softmax", load("def softmax(Z, axis=-1):\n    return Z\n", "softmax"))
    (line,) = info.value._render_traceback_()
    assert line.startswith("\u2717 softmax: ") and "\n" not in line


@pytest.mark.parametrize(
    "name, source",
    [
        (
            "attention_scores",
            "def attention_scores(Q, K):\n    return Q @ K.T / np.sqrt(Q.shape[-1])\n",
        ),
        (
            "split_heads",
            "def split_heads(M, n_heads):\n    T, d = M.shape\n"
            "    return M.reshape(T, n_heads, d // n_heads).transpose(1, 0, 2)\n",
        ),
        (
            "positional_encoding",  # the PyTorch tutorial's version: breaks for odd d_model
            "def positional_encoding(seq_len, d_model):\n"
            "    pos = np.arange(seq_len)[:, None]\n"
            "    div = np.exp(np.arange(0, d_model, 2) * (-np.log(10000.0) / d_model))\n"
            "    pe = np.zeros((seq_len, d_model))\n"
            "    pe[:, 0::2] = np.sin(pos * div)\n    pe[:, 1::2] = np.cos(pos * div)\n"
            "    return pe\n",
        ),
    ],
)
def test_what_only_works_without_batch_axes_or_odd_sizes_fails_visibly(name, source):
    """The visible check has a batch case and an odd size: no ✓ that hidden tests then deny."""
    with pytest.raises(AssertionError):
        checks.check(name, load(source, name))


LAYER = (
    "def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):\n"
    "    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in mh.project_qkv(X, W_q, W_k, W_v))\n"
    "    T, d_k = X.shape[-2], Qh.shape[-1]\n"
    "    Z = Qh @ Kh.swapaxes(-1, -2) / {scale}\n"
    "    M = 0 if mask is None else mask\n"
    "    A = {weights}\n"
    "    return mh.merge_heads(A @ Vh) @ W_o, A\n"
)


@pytest.mark.parametrize(
    "name, source, hint",
    [
        (  # song head 1: d_k = 2 = √d_model, so the first input cannot tell; the hint says both
            "attention_scores",
            "def attention_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(4)\n",
            "√d_model = √4",
        ),
        (  # the students' Q = K = V make Z symmetric: only the song tells this from the axis
            "attention_head",
            "def attention_head(Q, K, V, mask=None):\n"
            "    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n"
            "    A = mh.softmax(Z if mask is None else Z + mask)\n"
            "    return np.swapaxes(A, -1, -2) @ V, A\n",
            "the weights are transposed",
        ),
        (
            "multi_head_self_attention",
            LAYER.format(scale="np.sqrt(d_k)", weights="mh.softmax(Z)"),
            "the mask is ignored",
        ),
        (
            "multi_head_self_attention",
            LAYER.format(scale="np.sqrt(T)", weights="mh.softmax(Z + M)"),
            "divided by √T",
        ),
        (
            "multi_head_self_attention",
            LAYER.format(scale="np.sqrt(d_k)", weights="mh.softmax(Z + M, axis=-2)"),
            "the softmax runs over the wrong axis",
        ),
        (
            "multi_head_self_attention",
            LAYER.format(scale="np.sqrt(d_k)", weights="mh.softmax(Z) + M"),
            "the mask is added after the softmax",
        ),
    ],
)
def test_each_mistake_is_named_by_its_own_hint(name, source, hint):
    with pytest.raises(AssertionError) as info:
        checks.check(name, load(source, name))
    assert hint in str(info.value), str(info.value)


MQA = (
    "def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):\n"
    "    Qh = mh.split_heads(X @ W_q, n_heads)\n"
    "    K, V = (X @ W_k)[..., None, :, :], (X @ W_v)[..., None, :, :]\n"
    "    Z = Qh @ K.swapaxes(-1, -2) / np.sqrt(Qh.shape[-1])\n"
    "    A = mh.softmax({scores})\n"
    "    return mh.merge_heads(A @ V) @ W_o, A\n"
)


@pytest.mark.parametrize(
    "scores, hint",
    [("Z", "the mask is ignored"), ("Z * np.sqrt(Qh.shape[-1]) + M", "not scaled")],
)
def test_multi_query_mistakes_are_named(scores, hint):
    source = MQA.format(scores=scores).replace(
        "    A = ", "    M = 0 if mask is None else mask\n    A = "
    )
    with pytest.raises(AssertionError) as info:
        checks.check("multi_query_attention", load(source, "multi_query_attention"))
    assert hint in str(info.value), str(info.value)


VARIANTS = {
    "attention_scores": "def attention_scores(Q, K):\n"
    "    return np.einsum('...qd,...kd->...qk', Q, K) / np.sqrt(Q.shape[-1])\n",
    "softmax": "def softmax(Z, axis=-1):\n"
    "    Z = np.moveaxis(np.asarray(Z, dtype=float), axis, -1)\n"
    "    out = np.zeros_like(Z)\n"
    "    for idx in np.ndindex(Z.shape[:-1]):\n"
    "        row = Z[idx]\n"
    "        if np.isneginf(row).all():\n"
    "            continue\n"
    "        e = np.exp(row - row.max())\n"
    "        out[idx] = e / e.sum()\n"
    "    return np.moveaxis(out, -1, axis)\n",
    "attention_head": "def attention_head(Q, K, V, mask=None):\n"
    "    Z = np.einsum('...qd,...kd->...qk', Q, K) / np.sqrt(Q.shape[-1])\n"
    "    A = mh.softmax(Z if mask is None else Z + mask)\n"
    "    return np.einsum('...qk,...kv->...qv', A, V), A\n",
    "multi_head_self_attention": "def multi_head_self_attention(X, W_q, W_k, W_v, W_o, "
    "n_heads, mask=None):\n"
    "    d_k = X.shape[-1] // n_heads\n"
    "    outs, weights = [], []\n"
    "    for i in range(n_heads):  # one head at a time\n"
    "        cols = slice(i * d_k, (i + 1) * d_k)\n"
    "        m = mask\n"
    "        if m is not None and np.ndim(m) > X.ndim:  # a head axis at -3: this head's mask\n"
    "            m = m[..., min(i, m.shape[-3] - 1), :, :]\n"
    "        o, a = mh.attention_head(X @ W_q[:, cols], X @ W_k[:, cols], X @ W_v[:, cols], m)\n"
    "        outs.append(o)\n"
    "        weights.append(a)\n"
    "    return np.concatenate(outs, axis=-1) @ W_o, np.stack(weights, axis=-3)\n",
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_einsum_and_loop_variants_pass(name):
    fn = load(VARIANTS[name], name)
    checks.check(name, fn)
    checks.check_hidden(name, fn)


@pytest.mark.parametrize(
    "source",
    [
        "def init_weights(d_in, d_out, rng):\n    a = np.sqrt(6 / (d_in + d_out))\n"
        "    return np.random.default_rng(12345).uniform(-a, a, size=(d_in, d_out))\n",
        "def init_weights(d_in, d_out, rng):\n    a = np.sqrt(6 / (d_in + d_out))\n"
        "    return np.linspace(-a, a, d_in * d_out)[::-1].reshape(d_in, d_out)\n",
    ],
)
def test_init_weights_must_draw_from_the_given_rng(source):
    """The red team's passes: a fixed seed of one's own, or no randomness at all."""
    with pytest.raises(AssertionError, match="draw every value from the `rng`"):
        checks.check("init_weights", load(source, "init_weights"))


@pytest.mark.parametrize("mistake", sorted(FRESH))
def test_a_fresh_mistake_is_told_its_slip(mistake):
    """Mistakes written without reading the checks: each named by catalogue or diagnosis."""
    _, name, source, hint = FRESH[mistake]
    with pytest.raises(AssertionError) as info:
        checks.check(name, load(source, name))
    assert hint in str(info.value), str(info.value)
    assert " Or: " not in str(info.value)  # the slip named, and no other beside it
    assert "array([" not in str(info.value)  # shapes, never numpy's reprs


@pytest.mark.parametrize("answer", [right_answer(CORRECT[a][1], a, id=a) for a in sorted(CORRECT)])
def test_a_right_answer_written_unusually_passes(answer, capsys):
    _, name, source = CORRECT[answer]
    fn = load(source, name)
    checks.check(name, fn)
    checks.check_hidden(name, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


def test_unscaled_scores_where_q_shape_1_is_1_do_not_say_only_not_scaled():
    """Q of shape (2, 1, 5, 4): dividing by √Q.shape[1] = √1 leaves the scores unscaled, and a
    hidden input like it must not tell a learner who read d_k from axis 1 only "not scaled"."""
    from mhsa_helpers.checks.core import Call
    from mhsa_helpers.checks.failures import AmbiguousMistake

    rng = np.random.default_rng(5)
    Q, K = rng.normal(size=(2, 1, 5, 4)), rng.normal(size=(2, 1, 3, 4))
    unscaled = Q @ np.swapaxes(K, -1, -2)
    with pytest.raises(AmbiguousMistake) as info:
        checks.CHECKS["attention_scores"].judge(Call((Q, K)), unscaled)
    assert any("the size of Q's axis 1 (Q.shape[1]" in h for h in info.value.hints)
    assert any("not scaled" in h for h in info.value.hints)


def test_a_refusal_whose_call_says_names_must_name_that_argument():
    """``Call(..., raises=..., context={"why": ..., "names": "window"})``: the message names it."""
    check = checks.CHECKS["sliding_window_mask"]
    context = {"why": "window = 0", "names": "window"}
    call = Call((5, 0), raises="ValueError", context=context)
    named = Outcome(
        raised="ValueError: window must be at least 1, but got window=0", raised_here=True
    )
    assert check.judge_raised(call, named) is None
    unnamed = Outcome(raised="ValueError: the size must be at least 1, got 0", raised_here=True)
    with pytest.raises(checks.CheckFailed) as info:
        check.judge_raised(call, unnamed)
    assert "does not name window" in str(info.value), info.value
    assert info.value.public.endswith("its message does not name window."), info.value.public
    plain = dataclasses.replace(call, context={"why": "window = 0"})  # no "names": any message
    assert check.judge_raised(plain, unnamed) is None
    assert check.judge_raised(call, blind(unnamed)) is None  # a hidden test reads no words


def test_compare_takes_its_axes_names_by_negative_index_and_refuses_a_tuple():
    A = np.eye(3)
    assert compare("f", A, A, "the weights", axes={-2: "row (query)", -1: "column (key)"}) is None
    with pytest.raises(
        TypeError, match=r"by negative index, e.g. \{-2: .*but got \('query', 'key'\)"
    ):
        compare("f", A, A, "the weights", axes=("query", "key"))


def test_a_call_that_must_raise_but_warns_is_told_to_refuse_not_of_the_warning():
    """tau = 0 without a refusal divides by zero: the learner is told to raise, first."""
    check = checks.CHECKS["sliding_window_mask"]
    call = Call((5, 0), raises="ValueError", context={"why": "window = 0"})
    warned = Outcome(
        error="sliding_window_mask(5, 0) raised RuntimeWarning: divide by zero encountered "
        "in divide (in these checks a warning counts as an error)",
        code="warning",
    )
    failed = check.explain_error(call, warned)
    assert str(failed).startswith(
        "sliding_window_mask should raise ValueError for window = 0, but computed on and numpy "
        "warned: RuntimeWarning: divide by zero encountered in divide. Check the argument first"
    ), str(failed)
    assert failed.public.endswith("but computed on."), failed.public


def test_a_refusal_whose_message_is_one_word_is_told_what_it_said():
    """Not "without a message": the learner wrote one, too short to say what is wrong."""
    from mhsa_helpers.checks import CHECKS, CheckFailed
    from mhsa_helpers.execution.outcomes import Outcome

    check = CHECKS["grouped_query_attention"]
    call = next(c for c in check.calls() if c.raises == "ValueError")
    for message, said in (("empty", "with only 'empty' as its message"), ("", "without a message")):
        outcome = Outcome(raised=f"ValueError: {message}", raised_here=True)
        with pytest.raises(CheckFailed, match=said):
            check.judge_raised(call, outcome)
