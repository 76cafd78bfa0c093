"""The extensions' reference functions against loop definitions and the contract (EXTENSIONS.md)."""

import math
import tracemalloc
import warnings

import numpy as np
import pytest

import mhsa_helpers as mh


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def rng(seed=0):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------ loops
def rope_loop(X, positions, base=10000.0):
    X = np.asarray(X, float)
    T, d = X.shape
    out = np.empty_like(X)
    for t in range(T):
        for i in range(d // 2):
            a = positions[t] * base ** (-2 * i / d)
            x0, x1 = X[t, 2 * i], X[t, 2 * i + 1]
            out[t, 2 * i] = x0 * math.cos(a) - x1 * math.sin(a)
            out[t, 2 * i + 1] = x0 * math.sin(a) + x1 * math.cos(a)
    return out


def attention_loop(Q, K, V, mask=None):
    """One head, 2-D inputs, row by row."""
    T_q, d_k = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    A = np.zeros((T_q, K.shape[0]))
    for i in range(T_q):
        z = np.array([Q[i] @ K[j] / math.sqrt(d_k) for j in range(K.shape[0])])
        if mask is not None:
            z = z + mask[i]
        if np.all(np.isneginf(z)):
            continue
        e = np.exp(z - z.max())
        A[i] = e / e.sum()
        out[i] = A[i] @ V
    return out, A


def gqa_loop(X, W_q, W_k, W_v, W_o, h, kv, mask=None):
    d = X.shape[1]
    d_k = d // h
    heads, weights = [], []
    for i in range(h):
        j = i // (h // kv)
        Q = X @ W_q[:, i * d_k : (i + 1) * d_k]
        K = X @ W_k[:, j * d_k : (j + 1) * d_k]
        V = X @ W_v[:, j * d_k : (j + 1) * d_k]
        o, a = attention_loop(Q, K, V, mask)
        heads.append(o)
        weights.append(a)
    return np.concatenate(heads, axis=1) @ W_o, np.stack(weights)


# ------------------------------------------------------------------ rope
def test_rope_matches_the_loop_for_default_offset_and_random_positions():
    X = rng().normal(size=(5, 8))
    for pos in (np.arange(5), np.arange(5) + 7, np.array([3, 0, 9, 9, 2])):
        got = mh.rotary_embedding(X, None if pos[0] == 0 and pos[1] == 1 else pos)
        np.testing.assert_allclose(got, rope_loop(X, pos), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        mh.rotary_embedding(X, base=500.0), rope_loop(X, np.arange(5), 500.0), atol=1e-12
    )


def test_rope_relative_position_norms_identity_and_odd_d():
    r = rng(1)
    q, k = r.normal(size=16), r.normal(size=16)
    dots = []
    for m, n in ((3, 1), (10, 8), (8191, 8189)):
        qm = mh.rotary_embedding(q[None], np.array([m]))[0]
        kn = mh.rotary_embedding(k[None], np.array([n]))[0]
        dots.append(qm @ kn)
    np.testing.assert_allclose(dots, dots[0], rtol=1e-9)
    X = r.normal(size=(2, 3, 4, 6))
    pos = r.integers(0, 100, size=(2, 1, 4))  # per batch, broadcast over heads
    out = mh.rotary_embedding(X, pos)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(X, axis=-1))
    np.testing.assert_allclose(out[1, 2], rope_loop(X[1, 2], pos[1, 0]), atol=1e-12)
    np.testing.assert_array_equal(mh.rotary_embedding(X[..., :1, :]), X[..., :1, :])
    with pytest.raises(ValueError, match="even"):
        mh.rotary_embedding(r.normal(size=(3, 5)))


# ------------------------------------------------------------------ gqa
@pytest.mark.parametrize(("h", "kv"), [(4, 4), (4, 2), (4, 1), (6, 3), (8, 2), (6, 2)])
def test_gqa_matches_the_loop(h, kv):
    r = rng(h * 10 + kv)
    d = 2 * h
    d_k = d // h
    X = r.normal(size=(5, d))
    W_q, W_o = r.normal(size=(d, d)), r.normal(size=(d, d))
    W_k, W_v = r.normal(size=(d, kv * d_k)), r.normal(size=(d, kv * d_k))
    for mask in (None, mh.causal_mask(5), mh.sliding_window_mask(5, 2)):
        out, A = mh.grouped_query_attention(X, W_q, W_k, W_v, W_o, h, kv, mask)
        o2, a2 = gqa_loop(X, W_q, W_k, W_v, W_o, h, kv, mask)
        np.testing.assert_allclose(out, o2, atol=1e-10)
        np.testing.assert_allclose(A, a2, atol=1e-12)


def test_gqa_ends_are_multi_head_and_multi_query():
    r = rng(2)
    X = r.normal(size=(2, 5, 8))
    Ws = [r.normal(size=(8, 8)) for _ in range(4)]
    mask = mh.padding_mask(np.array([5, 3]), 5)  # (2, 1, 5)
    a = mh.grouped_query_attention(X, *Ws, 4, 4, mask)
    b = mh.multi_head_self_attention(X, *Ws, 4, mask)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, atol=1e-12)
    W_k, W_v = r.normal(size=(8, 2)), r.normal(size=(8, 2))
    a = mh.grouped_query_attention(X, Ws[0], W_k, W_v, Ws[3], 4, 1, mh.causal_mask(5))
    b = mh.multi_query_attention(X, Ws[0], W_k, W_v, Ws[3], 4, mh.causal_mask(5))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, atol=1e-12)
    for h, kv in ((4, 3), (4, 8), (3, 1)):
        with pytest.raises(ValueError):
            mh.grouped_query_attention(X, *Ws, h, kv)


# ------------------------------------------------------------------ decode
@pytest.mark.parametrize("lead", [(), (2,), (2, 3)])
def test_decoding_token_by_token_gives_causal_attention_and_the_cache(lead):
    r = rng(3)
    T, d, h = 6, 8, 2
    X = r.normal(size=(*lead, T, d))
    Ws = [r.normal(size=(d, d)) for _ in range(4)]
    full, _ = mh.multi_head_self_attention(X, *Ws, h, mh.causal_mask(T))
    cache = None
    for t in range(T):
        before = None if cache is None else tuple(c.copy() for c in cache)
        y, new = mh.decode_step(X[..., t, :], cache, *Ws, h)
        if before is not None:  # the cache passed in is left as it was
            np.testing.assert_array_equal(cache[0], before[0])
        np.testing.assert_allclose(y, full[..., t, :], atol=1e-10)
        np.testing.assert_allclose(new[0], mh.split_heads(X[..., : t + 1, :] @ Ws[1], h))
        np.testing.assert_allclose(new[1], mh.split_heads(X[..., : t + 1, :] @ Ws[2], h))
        cache = new
    with pytest.raises(ValueError):
        mh.decode_step(X[..., 0, :], None, *Ws, 3)


# ------------------------------------------------------------------ tiled
@pytest.mark.parametrize("b", [1, 2, 3, 7, 8, 50])
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_equals_attention_head(b, causal):
    r = rng(b)
    T, T_q = 7, (7 if causal else 4)
    Q = r.normal(size=(2, T_q, 3)) * 30  # scores of hundreds
    K = r.normal(size=(2, T, 3)) * 30
    V = r.normal(size=(2, T, 5))
    mask = mh.causal_mask(T) if causal else None
    np.testing.assert_allclose(
        mh.tiled_attention(Q, K, V, b, causal), mh.attention_head(Q, K, V, mask)[0], atol=1e-10
    )


def test_tiled_attention_when_the_max_grows_every_block_and_errors():
    K = np.arange(12.0)[:, None] * np.ones((12, 2))  # scores grow from block to block
    Q = np.ones((3, 2))
    V = rng().normal(size=(12, 4))
    np.testing.assert_allclose(
        mh.tiled_attention(Q, K, V, 3), mh.attention_head(Q, K, V)[0], atol=1e-12
    )
    with pytest.raises(ValueError):
        mh.tiled_attention(Q, K, V, 0)
    with pytest.raises(ValueError):
        mh.tiled_attention(Q, K, V, 2, causal=True)  # T_q != T_k


@pytest.mark.slow  # at full size (T = 4096): tests/support/marks.py
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_stays_under_32_mib_at_4096(causal):
    r = rng(4)
    Q, K, V = (r.normal(size=(4096, 64)) for _ in range(3))
    tracemalloc.start()
    try:
        out = mh.tiled_attention(Q, K, V, 128, causal)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, peak / 2**20
    rows = [0, 1000, 4095]
    mask = mh.causal_mask(4096)[rows] if causal else None
    np.testing.assert_allclose(out[rows], mh.attention_head(Q[rows], K, V, mask)[0], atol=1e-10)


# ------------------------------------------------------------------ cross
def test_cross_attention_matches_the_loop_and_self_attention():
    r = rng(5)
    d, h = 6, 3
    X, C = r.normal(size=(4, d)), r.normal(size=(7, d))
    Ws = [r.normal(size=(d, d)) for _ in range(4)]
    out, A = mh.cross_attention(X, C, *Ws, h)
    d_k = d // h
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)
        _, a = attention_loop(X @ Ws[0][:, cols], C @ Ws[1][:, cols], C @ Ws[2][:, cols])
        np.testing.assert_allclose(A[i], a, atol=1e-12)
    perm = r.permutation(7)
    out2, A2 = mh.cross_attention(X, C[perm], *Ws, h)
    np.testing.assert_allclose(out2, out, atol=1e-12)
    np.testing.assert_allclose(A2, A[..., perm], atol=1e-12)
    for mask in (None, mh.causal_mask(4)):
        a = mh.cross_attention(X[:4], X[:4], *Ws, h, mask)
        b = mh.multi_head_self_attention(X[:4], *Ws, h, mask)
        np.testing.assert_allclose(a[0], b[0], atol=1e-12)
    Xb, Cb = r.normal(size=(2, 4, d)), r.normal(size=(2, 7, d))
    out, A = mh.cross_attention(Xb, Cb, *Ws, h, mh.padding_mask(np.array([7, 0]), 7))
    assert np.all(A[1] == 0) and np.isfinite(out).all()


# ------------------------------------------------------------------ window
def test_sliding_window_mask_band():
    for T in range(1, 9):
        for w in range(1, T + 2):
            M = mh.sliding_window_mask(T, w)
            expected = np.array(
                [[0.0 if i - w < j <= i else -np.inf for j in range(T)] for i in range(T)]
            )
            assert np.array_equal(M, expected), (T, w)
        assert np.array_equal(mh.sliding_window_mask(T, T), mh.causal_mask(T))
    for w in (0, -1):
        with pytest.raises(ValueError):
            mh.sliding_window_mask(5, w)
