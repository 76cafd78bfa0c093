"""Property tests (hypothesis) of the reference implementation."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import mhsa_helpers as mh

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
settings.register_profile("course", max_examples=60, deadline=None)
settings.load_profile("course")


@st.composite
def layer(draw, max_T=6):
    """A random self-attention layer: X, four weights and a number of heads."""
    h = draw(st.integers(1, 3))
    d_k = draw(st.integers(1, 3))
    d = h * d_k
    T = draw(st.integers(1, max_T))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, d))
    Ws = [rng.normal(size=(d, d)) for _ in range(4)]
    return X, Ws, h


@given(arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 6)), elements=finite))
def test_softmax_rows_sum_to_one(Z):
    np.testing.assert_allclose(mh.softmax(Z).sum(axis=-1), 1.0, rtol=1e-12)


@given(
    arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 6)), elements=finite),
    st.floats(-1e3, 1e3),
)
def test_softmax_unchanged_by_adding_a_constant_to_a_row(Z, c):
    shifted = Z.copy()
    shifted[0] += c
    np.testing.assert_allclose(mh.softmax(shifted), mh.softmax(Z), atol=1e-12)


@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 5),
    st.lists(st.integers(1, 3), max_size=2),
    st.integers(0, 2**32 - 1),
)
def test_merge_undoes_split(h, d_k, T, lead, seed):
    M = np.random.default_rng(seed).normal(size=(*lead, T, h * d_k))
    H = mh.split_heads(M, h)
    assert H.shape == (*lead, h, T, d_k)
    np.testing.assert_array_equal(mh.merge_heads(H), M)


@given(layer(), st.data())
def test_causal_output_ignores_the_future(args, data):
    X, Ws, h = args
    T = X.shape[0]
    i = data.draw(st.integers(0, T - 1))
    out, _ = mh.multi_head_self_attention(X, *Ws, h, mh.causal_mask(T))
    X2 = X.copy()
    X2[i + 1 :] = np.random.default_rng(1).normal(size=X2[i + 1 :].shape) * 5
    out2, _ = mh.multi_head_self_attention(X2, *Ws, h, mh.causal_mask(T))
    np.testing.assert_allclose(out2[: i + 1], out[: i + 1], atol=1e-9)
    if i + 1 < T:  # the future rows do see the change (the test can fail); near a
        # saturated softmax the change may be below any tolerance, but not nil
        assert not np.array_equal(out2[i + 1 :], out[i + 1 :])


@given(layer(), st.randoms())
def test_unmasked_attention_is_permutation_equivariant(args, random):
    X, Ws, h = args
    perm = list(range(X.shape[0]))
    random.shuffle(perm)
    out, A = mh.multi_head_self_attention(X, *Ws, h)
    out_p, A_p = mh.multi_head_self_attention(X[perm], *Ws, h)
    np.testing.assert_allclose(out_p, out[perm], atol=1e-9)
    np.testing.assert_allclose(A_p, A[:, perm][:, :, perm], atol=1e-12)


@given(layer())
def test_one_head_equals_attention_head(args):
    X, (W_q, W_k, W_v, W_o), _ = args
    out, A = mh.multi_head_self_attention(X, W_q, W_k, W_v, W_o, 1)
    head_out, head_A = mh.attention_head(X @ W_q, X @ W_k, X @ W_v)
    np.testing.assert_allclose(out, head_out @ W_o, atol=1e-9)
    np.testing.assert_allclose(A[0], head_A, atol=1e-12)
