"""The checks pass the reference, and name each listed mistake (fast, no nbgrader)."""

import numpy as np
import pytest

from autograders import checks
from autograders.progress import EXERCISES, load_answers
from tests.mistakes import MISTAKES, WARNING_BUT_CORRECT
from tests.nbgrader_course import SOLUTIONS

# Every exercise of the course that has a visible and a hidden check, in course order.
FUNCTIONS = [n for names in EXERCISES.values() for n in names if n != "kv_cache_size"]


def load(source, name):
    namespace = {"np": np}
    exec(source, namespace)
    return namespace[name]


def solution(name):
    """The instructor's answer for ``name``, from the solutions notebooks."""
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        if path.stem in ("00_start_here",):
            continue
        found = load_answers(path)
        if name in found:
            return found[name]
    raise LookupError(name)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_solutions_pass_visible_and_hidden(name, capsys):
    fn = solution(name)
    getattr(checks, f"check_{name}")(fn)
    getattr(checks, f"check_{name}_hidden")(fn, seed=7)
    assert capsys.readouterr().out.count("\u2713") == 2


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_visible_check_names_the_mistake(mistake):
    _, name, source, hint = MISTAKES[mistake]
    with pytest.raises(AssertionError, match=None) as info:
        getattr(checks, f"check_{name}")(load(source, name))
    assert hint in str(info.value), str(info.value)


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_hidden_check_fails_the_mistake(mistake):
    _, name, source, _ = MISTAKES[mistake]
    with pytest.raises(AssertionError):
        getattr(checks, f"check_{name}_hidden")(load(source, name), seed=11)


def test_unimplemented_answer_says_so():
    def softmax(Z, axis=-1):
        raise NotImplementedError()

    with pytest.raises(AssertionError, match="not implemented yet"):
        checks.check_softmax(softmax)


def test_correct_answer_with_warnings_passes_without_stderr(capfd):
    _, name, source = WARNING_BUT_CORRECT
    checks.check_softmax(load(source, name))
    assert capfd.readouterr().err == ""


def test_kv_cache_size_check():
    checks.check_kv_cache_size(solution("kv_cache_size"))
    with pytest.raises(AssertionError, match="Both K and V"):
        checks.check_kv_cache_size(lambda T, d, h, mq=False: T * d)


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
    ],
)
def test_more_mistakes_named(name, source, hint):
    with pytest.raises(AssertionError) as info:
        getattr(checks, f"check_{name}")(load(source, name))
    assert hint in str(info.value), str(info.value)


@pytest.mark.parametrize("case", ["calls_reference"])
def test_calling_the_reference_is_named(case):
    from tests.mistakes import HOSTILE

    _, name, source, hint = HOSTILE[case]
    with pytest.raises(AssertionError) as info:
        getattr(checks, f"check_{name}")(load(source, name))
    assert hint in str(info.value)


def test_patched_numpy_fails_every_check():
    original = np.allclose
    np.allclose = lambda *a, **k: True
    try:
        with pytest.raises(AssertionError, match=r"numpy\.allclose has been replaced"):
            checks.check_softmax(solution("softmax"))
    finally:
        np.allclose = original
    checks.check_softmax(solution("softmax"))


def test_earlier_steps_of_the_reference_may_be_used():
    import mhsa_helpers as mh

    def attention_head(Q, K, V, mask=None):  # own head, reference softmax from step 7
        Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        A = mh.softmax(Z if mask is None else Z + mask)
        return A @ V, A

    checks.check_attention_head(attention_head)
