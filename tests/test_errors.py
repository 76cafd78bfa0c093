"""Bad input raises ValueError naming what was expected and what came."""

import numpy as np
import pytest

import mhsa_helpers as mh

X = np.ones((5, 4))
W = np.ones((4, 4))


@pytest.mark.parametrize(
    "call, expected",
    [
        # wrong rank
        (lambda: mh.project_qkv(np.ones(4), W, W, W), r"\(\.\.\., T, d_model\).*shape \(4,\)"),
        (lambda: mh.split_heads(np.ones(4), 2), r"\(\.\.\., T, d_model\).*shape \(4,\)"),
        (lambda: mh.merge_heads(np.ones((5, 4))), r"\(\.\.\., h, T, d_k\).*shape \(5, 4\)"),
        (lambda: mh.attention_scores(np.ones(3), X), r"\(\.\.\., T_q, d_k\).*shape \(3,\)"),
        (lambda: mh.attention_head(X, X, np.ones(5)), r"\(\.\.\., T_k, d_v\).*shape \(5,\)"),
        # weights that do not fit
        (
            lambda: mh.project_qkv(X, W, np.ones((3, 4)), W),
            r"W_k must have shape \(4, d_out\).*\(3, 4\)",
        ),
        (
            lambda: mh.multi_head_self_attention(X, W, W, W, np.ones((2, 4)), 2),
            r"W_o must have shape \(4, d_out\).*\(2, 4\)",
        ),
        # heads
        (
            lambda: mh.split_heads(X, 3),
            r"n_heads must divide d_model, but got d_model=4 and n_heads=3",
        ),
        (lambda: mh.multi_head_self_attention(X, W, W, W, W, 3), r"d_model=4 and n_heads=3"),
        (lambda: mh.split_heads(X, 0), r"n_heads must be a positive integer, but got 0"),
        (lambda: mh.split_heads(X, 2.0), r"n_heads must be a positive integer, but got 2\.0"),
        # Q and K that do not match
        (
            lambda: mh.attention_scores(np.ones((5, 4)), np.ones((5, 3))),
            r"same last axis d_k.*Q of shape \(5, 4\) and K of shape \(5, 3\)",
        ),
        (
            lambda: mh.attention_scores(np.ones((2, 5, 4)), np.ones((3, 5, 4))),
            r"broadcastable batch axes.*\(2, 5, 4\).*\(3, 5, 4\)",
        ),
        (lambda: mh.attention_head(X, X, np.ones((6, 2))), r"\(\.\.\., 5, d_v\).*\(6, 2\)"),
        # masks
        (
            lambda: mh.attention_head(X, X, X, mask=np.zeros((4, 4))),
            r"broadcast against the scores of shape \(5, 5\).*mask of shape \(4, 4\)",
        ),
        (
            lambda: mh.attention_head(X, X, X, mask=np.zeros((2, 5, 5))),
            r"scores of shape \(5, 5\).*mask of shape \(2, 5, 5\)",
        ),
        (lambda: mh.attention_head(X, X, X, mask=np.tril(np.ones((5, 5), bool))), r"boolean"),
        (
            lambda: mh.multi_head_self_attention(X, W, W, W, W, 2, mask=np.zeros((3, 3))),
            r"scores of shape \(2, 5, 5\).*mask of shape \(3, 3\)",
        ),
        # lengths
        (lambda: mh.padding_mask(2.5, 4), r"lengths must be an int or an array of ints.*2\.5"),
        (lambda: mh.padding_mask(np.array([1.0, 2.0]), 4), r"array of ints.*float64"),
        (lambda: mh.padding_mask(np.array([1, -1]), 4), r"between 0 and seq_len=4.*-1"),
        (lambda: mh.padding_mask(5, 4), r"between 0 and seq_len=4.*5"),
        (lambda: mh.causal_mask(0), r"seq_len must be a positive integer, but got 0"),
        (lambda: mh.positional_encoding(3, -1), r"d_model must be a positive integer"),
        # other
        (lambda: mh.init_weights(4, 4, 42), r"numpy\.random\.Generator.*int"),
        (lambda: mh.softmax(np.ones(3), axis=1), r"axis must lie in \[-1, 1\).*got 1"),
        (lambda: mh.softmax(np.array(["a", "b"])), r"numeric array.*dtype <U1"),
    ],
)
def test_bad_input_names_expected_and_got(call, expected):
    with pytest.raises(ValueError, match=expected):
        call()


def test_mask_with_fewer_axes_broadcasts():
    _, A = mh.attention_head(
        np.ones((2, 5, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 4)), mask=mh.causal_mask(5)
    )
    assert A.shape == (2, 5, 5)
    assert A[1, 0, 1] == 0.0
