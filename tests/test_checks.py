"""The checks pass the reference, and name each listed mistake (fast, no nbgrader)."""

import numpy as np
import pytest

import mhsa_helpers.reference as ref
from autograders import checks
from tests.mistakes import MISTAKES, WARNING_BUT_CORRECT

FUNCTIONS = [
    "positional_encoding",
    "init_weights",
    "project_qkv",
    "split_heads",
    "merge_heads",
    "attention_scores",
    "causal_mask",
    "padding_mask",
    "softmax",
    "attention_head",
    "multi_head_self_attention",
    "multi_query_attention",
]


def load(source, name):
    namespace = {"np": np}
    exec(source, namespace)
    return namespace[name]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_reference_passes_visible_and_hidden(name, capsys):
    getattr(checks, f"check_{name}")(getattr(ref, name))
    getattr(checks, f"check_{name}_hidden")(getattr(ref, name), seed=7)
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
    checks.check_kv_cache_size(ref.kv_cache_size)
    with pytest.raises(AssertionError, match="Both K and V"):
        checks.check_kv_cache_size(lambda T, d, h, mq=False: T * d)


@pytest.mark.parametrize(
    "name, source, hint",
    [
        (
            "positional_encoding",
            "def positional_encoding(T, d):\n"
            "    import mhsa_helpers\n    return mhsa_helpers.positional_encoding(T, d).T\n",
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
