"""diagnose names how an output differs from the reference, made wrong as a learner's slip does."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mhsa_helpers.checks.diagnose import _explain, diagnose

AXES = {-1: "column (feature)", -2: "row (token)", -3: "head"}
QUANTITIES = {"√d_k": 2.0, "d_k": 4, "√d_model": math.sqrt(8), "T": 5, "√2": math.sqrt(2)}
WHAT = "the output"


def reference(shape=(2, 3, 5, 4), seed=0):
    """A reference output (batch, head, row, column)."""
    return np.random.default_rng(seed).normal(size=shape)


def causal_weights(seed=0, masked=True):
    """Attention weights (2, 3, 5, 5) under a causal mask, exact zeros above the diagonal."""
    scores = np.random.default_rng(seed).normal(size=(2, 3, 5, 5))
    if masked:
        scores = np.where(np.triu(np.ones((5, 5), bool), 1), -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def said(got, expected=None):
    expected = reference() if expected is None else expected
    return diagnose(got, expected, WHAT, AXES, QUANTITIES)


# -- 1. shapes ----------------------------------------------------------------------------
def test_transposed_last_two_axes_by_shape():
    s = said(reference().swapaxes(-1, -2))
    assert "transposed" in s and "row (token)" in s and "column (feature)" in s


def test_two_named_axes_swapped():
    s = said(reference().swapaxes(1, 2))  # heads and tokens swapped: split without transpose
    assert "the head axis and the row (token) axis swapped" in s


def test_axes_in_another_order():
    s = said(np.moveaxis(reference(), 1, -1))
    assert "wrong order" in s and "the head axis (shape" in s


def test_batch_axis_dropped():
    assert "axis 0 is missing" in said(reference()[0]) and "only index 0" in said(reference()[0])
    one = reference((1, 3, 5, 4))
    assert "axis 0 is missing" in said(one[0], one)


def test_summed_over_an_axis():
    assert "summed over the head axis" in said(reference().sum(axis=1))


def test_extra_axis():
    assert "extra axis 0 of size 1" in said(reference()[None])


# -- 2. a constant factor -----------------------------------------------------------------
def test_scaled_by_sqrt2_names_the_quantity():
    s = said(reference() * math.sqrt(2))
    assert "1.41421 times too large" in s and "√2" in s and "not divided by √2" in s


def test_divided_by_sqrt_dk_once_too_often():
    s = said(reference() / 2.0)
    assert "2 times too small" in s and "divided by √d_k once too often" in s


def test_unnamed_factor():
    s = said(reference() * 3.7)
    assert s == "every entry of the output is 3.7 times too large."


def test_one_entry_is_a_factor_only_when_named():
    assert said(np.array(3.0), np.array(5.0)) is None
    assert "√d_k" in said(np.array(10.0), np.array(5.0))


def test_sign_flipped():
    assert "the sign is flipped" in said(-reference())
    s = said(-reference() * 2)
    assert "sign is flipped" in s and "√d_k" in s


def test_all_zeros():
    assert said(np.zeros((2, 3, 5, 4))) == "the output is all zeros."


# -- 3. a transpose of square matrices ----------------------------------------------------
def test_transposed_square():
    w = causal_weights(masked=False)
    assert "is transposed" in said(w.swapaxes(-1, -2), w)


# -- 4. a permutation along one axis ------------------------------------------------------
def test_two_heads_swapped():
    assert said(reference()[:, [1, 0, 2]]) == "head 1 and head 2 of the output are swapped."


def test_heads_reversed():
    assert "heads of the output are in reverse order" in said(reference()[:, ::-1])


def test_two_rows_swapped():
    assert said(reference()[:, :, [0, 3, 2, 1, 4]]) == "row 1 and row 3 of the output are swapped."


def test_columns_reversed():
    assert "columns of the output are in reverse order" in said(reference()[..., ::-1])


def test_rows_rolled():
    assert "rows of the output are shifted cyclically" in said(np.roll(reference(), 1, axis=2))


# -- 5. one wrong slice -------------------------------------------------------------------
def test_one_head_corrupted():
    got = reference().copy()
    got[:, 1] += np.random.default_rng(1).normal(size=(2, 5, 4))
    assert said(got) == "only head 2 of the output differs; the other heads match."


def test_one_head_scaled():
    got = reference().copy()
    got[:, 2] *= math.sqrt(2)  # the third head divided by the wrong √
    s = said(got)
    assert s.startswith("only head 3 of the output differs") and "1.41421 times too large" in s


# -- 6. masked cells that leak ------------------------------------------------------------
def test_masked_cells_leak_and_renormalised():
    w = causal_weights()
    masked = w == 0
    leaked = w + 0.01 * masked
    got = leaked / leaked.sum(axis=-1, keepdims=True)
    s = said(got, w)
    assert "mask leaks" in s and "renormalising each row" in s


def test_softmax_without_the_mask():
    s = said(causal_weights(masked=False), causal_weights())
    assert "mask leaks" in s and "renormalising" in s


def test_mask_added_after_the_softmax():
    w = causal_weights()
    s = said(w + 0.01 * (w == 0), w)
    assert "mask leaks" in s and "not after" in s


def test_a_mask_is_not_told_its_masked_cells_leak():
    """In a mask the zeros are the allowed cells: "the mask leaks … before the softmax" is wrong."""
    causal = np.where(np.triu(np.ones((5, 5), bool), 1), -np.inf, 0.0)  # (T, T)
    got = np.where(causal == 0, 0.5, causal)  # the allowed cells 0.5, not 0
    s = diagnose(got, causal, "the causal mask")
    assert s is None or "leak" not in s, s


def test_the_plural_of_an_axis_ending_in_y():
    got = reference((5,))[::-1]  # one axis, named "entry": its slices are entries
    s = diagnose(got, reference((5,)), "y", {-1: "entry"})
    assert "the entries of y are in reverse order" in s, s


def test_a_plural_output_takes_plural_verbs():
    s = diagnose(causal_weights() * 2, causal_weights(), "the attention weights", AXES)
    assert "every entry of the attention weights is 2 times too large" in s, s
    s = diagnose(causal_weights().swapaxes(-1, -2), causal_weights(), "the attention weights")
    assert s.startswith("the attention weights are transposed: their last two axes"), s
    w = causal_weights()
    s = diagnose(w + 0.01 * (w == 0), w, "the attention weights")
    assert s.startswith("the attention weights are not 0 where"), s


# -- 7. precision -------------------------------------------------------------------------
def test_computed_in_float32():
    rng = np.random.default_rng(3)
    X, W = rng.normal(size=(2, 5, 64)), rng.normal(size=(64, 4)) / 8
    got = (X.astype(np.float32) @ W.astype(np.float32)).astype(np.float64)
    assert "float32 precision" in said(got, X @ W)


def test_scores_round_tripped_through_float32():
    scores = 3 * reference((2, 3, 5, 5))
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    z = scores.astype(np.float32).astype(np.float64)  # the learner's scores in float32
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    assert "float32 precision" in said(e / e.sum(axis=-1, keepdims=True), weights)


# -- None: nothing structural -------------------------------------------------------------
@pytest.mark.parametrize(
    "got",
    [
        reference(seed=7),  # unrelated
        reference() + 1e-3 * reference(seed=8),  # noise, above float32's rounding
        reference() + 1.0,  # an offset, not a factor
        reference(),  # equal: nothing to explain
        reference().astype(np.float32),  # equal to float32 rounding
        reference((7,)),  # an unrelated shape
    ],
)
def test_nothing_structural(got):
    assert said(got) is None


# -- odd inputs never raise ---------------------------------------------------------------
ARRAYS = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.bool_, np.complex128]),
    shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3),
    elements={"allow_nan": True, "allow_infinity": True},
)
ODD = st.one_of(ARRAYS, st.none(), st.text(max_size=3), st.lists(st.integers(), max_size=3))
MAKE = st.sampled_from(
    [
        lambda e, g: g,
        lambda e, g: e,
        lambda e, g: np.asarray(e) * -2,
        lambda e, g: np.swapaxes(e, 0, -1) if np.ndim(e) else e,
        lambda e, g: np.asarray(e)[::-1] if np.ndim(e) else e,
        lambda e, g: np.asarray(e)[None],
        lambda e, g: np.asarray(e)[0] if np.ndim(e) and len(e) else e,
        lambda e, g: np.where(np.asarray(e) == 0, 1, e) if np.ndim(e) else e,
    ]
)


@pytest.mark.slow  # a sweep: a hundred odd inputs
@given(
    expected=ARRAYS,
    other=ODD,
    make=MAKE,
    axes=st.dictionaries(st.one_of(st.integers(-6, 6), st.text(max_size=2)), st.text(max_size=5)),
    quantities=st.dictionaries(
        st.text(max_size=3),
        st.one_of(st.floats(), st.integers(-(10**400), 10**400), st.text(max_size=2)),
    ),
)
def test_odd_inputs_never_raise(expected, other, make, axes, quantities):
    with np.errstate(all="ignore"):
        got = make(expected, other)
    for a, b in ((got, expected), (expected, got), (other, expected)):
        assert diagnose(a, b, WHAT, axes, quantities) is None or isinstance(
            diagnose(a, b, WHAT, axes, quantities), str
        )
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            with np.errstate(all="ignore"):  # each test handles NaN, inf, 0-d and empty itself
                result = _explain(a, b, WHAT, axes, quantities)
            assert result is None or isinstance(result, str)


@pytest.mark.parametrize(
    "got, expected",
    [
        (np.array(np.nan), np.array(1.0)),
        (np.array([np.inf, 1.0]), np.array([np.inf, 0.5])),
        (np.array([np.nan, 2.0]), np.array([np.nan, 1.0])),
        (np.zeros(0), np.zeros(0)),
        (np.zeros((0, 3)), np.zeros((3, 0))),
        (np.arange(6), np.arange(6).reshape(2, 3)),
        (np.array(3), np.array(5)),
        (np.full((2, 2), np.inf), np.full((2, 2), -np.inf)),
        (np.array([1e308, -1e308]), np.array([1e-308, 1e-308])),
    ],
)
def test_odd_values(got, expected):
    with np.errstate(all="ignore"):
        result = _explain(got, expected, WHAT, AXES, QUANTITIES)
    assert result is None or isinstance(result, str)
    assert diagnose(got, expected, WHAT, AXES, QUANTITIES) == result
