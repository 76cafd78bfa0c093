"""The worked examples reproduce what the articles print, where the articles are right."""

import numpy as np
import pytest

import mhsa_helpers as mh
from mhsa_helpers import examples


def test_song_q1_as_printed():
    e = mh.get_example("song")
    Q, _, _ = mh.project_qkv(e.X, *e.weights[:3])
    np.testing.assert_allclose(Q[0], [1.01, 0.36, -0.74, -0.09], atol=1e-12)
    assert e.tokens == ["List", "new", "ideas", "for", "a", "song"]


def test_song_article_q_rows_2_to_6_do_not_follow_from_x():
    e = mh.get_example("song")
    Q = e.X @ e.W_q
    for row in range(1, 6):
        assert np.abs(Q[row] - examples.SONG_ARTICLE_Q[row]).max() > 0.5


def test_song_article_kt_matches_no_w_k():
    e = mh.get_example("song")
    K = examples.SONG_ARTICLE_KT.T  # (6, 4)
    W, *_ = np.linalg.lstsq(e.X, K, rcond=None)
    worst = np.abs(e.X @ W - K).max()
    assert worst == pytest.approx(0.76, abs=0.01)


def test_students_monica_chandler():
    e = mh.get_example("students")
    R = e.X @ e.X.T
    i, j = e.tokens.index("Monica"), e.tokens.index("Chandler")
    assert R[i, j] == pytest.approx(0.5 * 0.5 + 0.05 * 0.1 + 0.05 * 0.2 + 0.3 * 0.1)
    assert R[i, j] == pytest.approx(0.295)
    assert e.X.shape == (6, 7) and len(e.features) == 7
    for W in e.weights:
        np.testing.assert_array_equal(W, np.eye(7))


def test_students_attention_is_nearly_uniform_without_weights_and_selective_with_them():
    """The article's R' barely differs between students; W_Q = W_K = s·I visibly does."""
    e = mh.get_example("students")
    R_prime = mh.softmax(mh.attention_scores(e.X, e.X))
    spread = R_prime.max(axis=1) - R_prime.min(axis=1)
    assert spread.max() < 0.06  # every row within 0.15-0.20: hard to see anything
    W = examples.STUDENT_SELECTIVE_SCALE * np.eye(7)
    A = mh.softmax(mh.attention_scores(e.X @ W, e.X @ W))
    spread = A.max(axis=1) - A.min(axis=1)
    assert spread.min() > 0.1 and spread.max() > 0.5  # every student's row visibly uneven
    best_other = {
        e.tokens[i]: e.tokens[max((j for j in range(6) if j != i), key=lambda j: A[i, j])]
        for i in range(6)
    }  # the story told in steps 7 and 8: shared interests attract
    assert best_other["Monica"] == "Ross" and best_other["Ross"] == "Monica"
    assert best_other["Rachel"] == "Joey" and best_other["Joey"] == "Rachel"


@pytest.mark.parametrize("name", mh.EXAMPLES)
def test_every_example_is_consistent(name):
    e = mh.get_example(name)
    assert len(e.tokens) == e.T
    assert len(e.features) == e.d_model
    for W in e.weights:
        assert W.shape == (e.d_model, e.d_model)
    assert all(e.d_model % h == 0 for h in e.head_choices)
    if e.n_heads is None:
        assert len(e.head_choices) >= 2  # every example can show more than one head
    else:  # trained weights: only the head count they were trained with, more than one
        assert e.head_choices == [e.n_heads] and e.n_heads >= 2
    with pytest.raises(ValueError, match="read-only"):
        e.X[0, 0] = 1.0


def test_sentences_are_deterministic_and_share_word_vectors():
    a, b = mh.get_example("simple"), mh.get_example("simple")
    np.testing.assert_array_equal(a.X, b.X)
    q = mh.get_example("question")
    # "cat" sits at position 1 in "The cat sat …" and 3 in "Where did the cat …":
    # same word vector, different positional encoding
    pe1 = mh.positional_encoding(6, 8)
    pe2 = mh.positional_encoding(q.T, 8)
    np.testing.assert_allclose(a.X[1] - pe1[1], q.X[3] - pe2[3], atol=1e-12)


def test_unknown_example_names_the_choices():
    with pytest.raises(ValueError, match="song"):
        mh.get_example("poem")
