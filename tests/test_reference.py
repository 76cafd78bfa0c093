"""The reference implementation against plain loop-by-loop definitions."""

import math

import numpy as np
import pytest

import mhsa_helpers as mh

RNG = np.random.default_rng(0)


# --------------------------------------------------------------------------
# loop-by-loop definitions, written from the formulas, independent of the code
# --------------------------------------------------------------------------
def loop_matmul(A, B):
    n, m = len(A), len(B[0])
    return np.array(
        [[sum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(m)] for i in range(n)]
    )


def loop_pe(T, d):
    PE = np.zeros((T, d))
    for pos in range(T):
        for col in range(d):
            i = col // 2
            angle = pos / 10000 ** (2 * i / d)
            PE[pos, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return PE


def loop_softmax_row(z):
    finite = [v for v in z if v != -math.inf]
    if not finite:
        return [0.0] * len(z)
    m = max(finite)
    e = [math.exp(v - m) if v != -math.inf else 0.0 for v in z]
    s = sum(e)
    return [v / s for v in e]


def loop_head(Q, K, V, mask=None):
    T_q, d_k = Q.shape
    T_k = K.shape[0]
    Z = np.zeros((T_q, T_k))
    for i in range(T_q):
        for j in range(T_k):
            Z[i, j] = sum(Q[i, c] * K[j, c] for c in range(d_k)) / math.sqrt(d_k)
            if mask is not None:
                Z[i, j] += mask[i, j]
    A = np.array([loop_softmax_row(list(row)) for row in Z])
    out = np.zeros((T_q, V.shape[1]))
    for i in range(T_q):
        for j in range(T_k):
            out[i] += A[i, j] * V[j]
    return out, A


def loop_mhsa(X, W_q, W_k, W_v, W_o, h, mask=None):
    Q, K, V = (loop_matmul(X, W) for W in (W_q, W_k, W_v))
    d_k = X.shape[1] // h
    outs, weights = [], []
    for head in range(h):
        cols = slice(head * d_k, (head + 1) * d_k)
        o, a = loop_head(Q[:, cols], K[:, cols], V[:, cols], mask)
        outs.append(o)
        weights.append(a)
    concat = np.concatenate(outs, axis=1)
    return loop_matmul(concat, W_o), np.stack(weights)


# --------------------------------------------------------------------------
# each contract function against its loop definition
# --------------------------------------------------------------------------
@pytest.mark.parametrize("T,d", [(1, 1), (5, 4), (7, 9), (50, 16)])
def test_positional_encoding_matches_formula(T, d):
    np.testing.assert_allclose(mh.positional_encoding(T, d), loop_pe(T, d), atol=1e-12)


def test_positional_encoding_first_row_is_sin0_cos0():
    PE = mh.positional_encoding(3, 6)
    np.testing.assert_array_equal(PE[0], [0, 1, 0, 1, 0, 1])


def test_init_weights_glorot_uniform():
    W = mh.init_weights(300, 200, np.random.default_rng(1))
    limit = math.sqrt(6 / 500)
    assert W.shape == (300, 200)
    assert np.all(np.abs(W) <= limit)
    # uniform on [-a, a] has variance a^2 / 3; 60,000 draws pin it to about 1 %
    assert abs(W.var() / (limit**2 / 3) - 1) < 0.03
    assert abs(W.max() - limit) < 0.01 * limit and abs(W.min() + limit) < 0.01 * limit


def test_init_weights_reproducible_from_rng():
    a = mh.init_weights(4, 3, np.random.default_rng(7))
    b = mh.init_weights(4, 3, np.random.default_rng(7))
    c = mh.init_weights(4, 3, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_project_qkv_matches_loops():
    X = RNG.normal(size=(5, 4))
    Ws = [RNG.normal(size=(4, 4)) for _ in range(3)]
    for got, W in zip(mh.project_qkv(X, *Ws), Ws, strict=True):
        np.testing.assert_allclose(got, loop_matmul(X, W), atol=1e-12)


def test_project_qkv_batch_axes():
    X = RNG.normal(size=(2, 3, 5, 4))
    Ws = [RNG.normal(size=(4, 4)) for _ in range(3)]
    Q, K, V = mh.project_qkv(X, *Ws)
    assert Q.shape == K.shape == V.shape == (2, 3, 5, 4)
    np.testing.assert_allclose(V[1, 2], loop_matmul(X[1, 2], Ws[2]), atol=1e-12)


def test_split_heads_matches_column_slices():
    M = RNG.normal(size=(5, 6))
    H = mh.split_heads(M, 3)
    assert H.shape == (3, 5, 2)
    for head in range(3):
        for t in range(5):
            for c in range(2):
                assert H[head, t, c] == M[t, head * 2 + c]


def test_merge_heads_matches_concatenation():
    H = RNG.normal(size=(2, 3, 5, 2))
    M = mh.merge_heads(H)
    assert M.shape == (2, 5, 6)
    for b in range(2):
        expected = np.concatenate([H[b, head] for head in range(3)], axis=1)
        np.testing.assert_array_equal(M[b], expected)


def test_attention_scores_matches_loops():
    Q = RNG.normal(size=(4, 3))
    K = RNG.normal(size=(6, 3))
    expected = np.array(
        [
            [sum(Q[i, c] * K[j, c] for c in range(3)) / math.sqrt(3) for j in range(6)]
            for i in range(4)
        ]
    )
    np.testing.assert_allclose(mh.attention_scores(Q, K), expected, atol=1e-12)


def test_causal_mask_matches_definition():
    M = mh.causal_mask(5)
    for i in range(5):
        for j in range(5):
            assert M[i, j] == (-math.inf if j > i else 0.0)


def test_padding_mask_matches_definition():
    lengths = np.array([[1, 4], [0, 3]])
    M = mh.padding_mask(lengths, 4)
    assert M.shape == (2, 2, 1, 4)
    for a in range(2):
        for b in range(2):
            for j in range(4):
                assert M[a, b, 0, j] == (0.0 if j < lengths[a, b] else -math.inf)
    assert mh.padding_mask(2, 3).shape == (1, 3)
    np.testing.assert_array_equal(mh.padding_mask(2, 3), [[0, 0, -np.inf]])


def test_softmax_matches_loops():
    Z = RNG.normal(size=(4, 5)) * 3
    Z[1, 2] = -np.inf
    expected = np.array([loop_softmax_row(list(r)) for r in Z])
    np.testing.assert_allclose(mh.softmax(Z), expected, atol=1e-12)
    np.testing.assert_allclose(
        mh.softmax(Z, axis=0), np.array([loop_softmax_row(list(c)) for c in Z.T]).T, atol=1e-12
    )


def test_softmax_large_scores_and_all_masked_rows():
    Z = np.array([[1000.0, 1001.0, -np.inf], [-np.inf, -np.inf, -np.inf]])
    A = mh.softmax(Z)  # RuntimeWarning is an error under this suite's filterwarnings
    np.testing.assert_allclose(A[0], loop_softmax_row([1000.0, 1001.0, -math.inf]))
    np.testing.assert_array_equal(A[1], [0.0, 0.0, 0.0])
    assert not np.isnan(A).any()


def test_softmax_does_not_modify_input():
    Z = RNG.normal(size=(3, 3))
    before = Z.copy()
    mh.softmax(Z)
    np.testing.assert_array_equal(Z, before)


@pytest.mark.parametrize("masked", [False, True])
def test_attention_head_matches_loops(masked):
    Q, K, V = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))
    mask = mh.causal_mask(5) if masked else None
    out, A = mh.attention_head(Q, K, V, mask)
    exp_out, exp_A = loop_head(Q, K, V, mask)
    np.testing.assert_allclose(out, exp_out, atol=1e-12)
    np.testing.assert_allclose(A, exp_A, atol=1e-12)


@pytest.mark.parametrize("h", [1, 2, 3, 6])
@pytest.mark.parametrize("masked", [False, True])
def test_mhsa_matches_loops(h, masked):
    X = RNG.normal(size=(4, 6))
    Ws = [RNG.normal(size=(6, 6)) for _ in range(4)]
    mask = mh.causal_mask(4) if masked else None
    out, A = mh.multi_head_self_attention(X, *Ws, n_heads=h, mask=mask)
    exp_out, exp_A = loop_mhsa(X, *Ws, h, mask)
    assert out.shape == (4, 6) and A.shape == (h, 4, 4)
    np.testing.assert_allclose(out, exp_out, atol=1e-10)
    np.testing.assert_allclose(A, exp_A, atol=1e-12)


def test_mhsa_batch_with_padding_mask_per_sequence():
    X = RNG.normal(size=(3, 5, 4))
    Ws = [RNG.normal(size=(4, 4)) for _ in range(4)]
    lengths = np.array([5, 2, 3])
    out, A = mh.multi_head_self_attention(X, *Ws, n_heads=2, mask=mh.padding_mask(lengths, 5))
    assert out.shape == (3, 5, 4) and A.shape == (3, 2, 5, 5)
    for b in range(3):
        mask_b = mh.padding_mask(int(lengths[b]), 5) + np.zeros((5, 5))
        exp_out, exp_A = loop_mhsa(X[b], *Ws, 2, mask_b)
        np.testing.assert_allclose(out[b], exp_out, atol=1e-10)
        np.testing.assert_allclose(A[b], exp_A, atol=1e-12)
        assert np.all(A[b][..., lengths[b] :] == 0)


def test_float32_stays_float32():
    X = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    Ws = [RNG.normal(size=(8, 8)).astype(np.float32) for _ in range(4)]
    out, A = mh.multi_head_self_attention(X, *Ws, n_heads=4, mask=mh.causal_mask(5))
    assert out.dtype == np.float32 and A.dtype == np.float32
    ref, _ = mh.multi_head_self_attention(
        X.astype(float), *[W.astype(float) for W in Ws], 4, mh.causal_mask(5)
    )
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
