"""No value an answer returns can break the judge: every exercise, odd values everywhere.

The parent judges whatever the child sent back. Huge integers, complex
numbers, arrays of objects, strings or records, subclasses, NaN and ±inf,
empty and zero-dimensional arrays, wrong nesting: each must end in a
verdict (:class:`CheckFailed`) or a pass, never in another exception, so
that one odd value costs one exercise at most.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mhsa_helpers.checks import CHECKS, GRADING_ERROR, CheckFailed, judge
from mhsa_helpers.execution.outcomes import Opaque, Outcome, outcomes_of
from mhsa_helpers.exercises import names
from tests.support.oracles import hidden

SCALARS = st.one_of(
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=20),
    st.sampled_from([np.float32(1.5), np.int8(-3), np.complex64(1j), np.bool_(True)]),
)
DTYPES = st.sampled_from(
    [
        "float64",
        "float32",
        "float16",
        "int64",
        "uint8",
        "bool",
        "complex128",
        "U3",
        "S2",
        "datetime64[s]",
        "timedelta64[s]",
        [("a", "f8")],
        object,
    ]
)


@st.composite
def arrays(draw):
    shape = tuple(draw(st.lists(st.integers(0, 6), max_size=4)))
    dtype = np.dtype(draw(DTYPES))
    size = int(np.prod(shape))
    if dtype.kind == "O":
        values = draw(st.lists(SCALARS, min_size=size, max_size=size))
        arr = np.empty(size, dtype=object)
        arr[:] = values
        return arr.reshape(shape)
    fill = draw(st.sampled_from([0, 1, -1, np.nan, np.inf, -np.inf, 1e308, -1e-320, 7]))
    try:
        with np.errstate(all="ignore"):
            arr = np.full(shape, fill).astype(dtype)
    except (ValueError, TypeError, OverflowError):
        arr = np.zeros(shape, dtype=dtype)
    if draw(st.booleans()) and dtype.kind in "f" and size:
        arr = arr.view(np.ma.MaskedArray)  # a subclass (the child sends plain arrays; be sure)
    return arr


VALUES = st.recursive(
    st.one_of(SCALARS, arrays(), st.builds(Opaque, st.text(max_size=10))),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple)),
    max_leaves=6,
)


def _outcome(value, peak):
    return Outcome(value=value, peak=peak)


@pytest.mark.slow  # a sweep: many examples per exercise
@pytest.mark.parametrize("name", names())
@settings(max_examples=200)
@given(data=st.data())
def test_any_returned_value_gets_a_verdict_never_an_exception(name, data):
    """The check itself decides on any values: a pass or a CheckFailed with a sentence."""
    hidden_too = data.draw(st.booleans())
    seed = hidden(name) if hidden_too else None
    calls = CHECKS[name].calls(seed)
    n = data.draw(st.integers(1, len(calls)))
    peaks = st.one_of(st.none(), st.integers(-1, 2**40))
    outcomes = [_outcome(data.draw(VALUES), data.draw(peaks)) for _ in range(n)]
    try:
        with np.errstate(all="ignore"):
            CHECKS[name].verdict(calls, outcomes)
    except CheckFailed as exc:
        assert str(exc).strip() and "\n" not in exc.public
    said = judge(name, seed, outcomes, hidden=hidden_too)
    assert said is None or GRADING_ERROR not in said, said


@pytest.mark.parametrize("name", names())
def test_a_value_like_the_right_one_but_odd_gets_a_verdict(name):
    """The right outputs, turned odd one way at a time: complex, huge, object, NaN."""
    from mhsa_helpers import reference as ref

    for call in CHECKS[name].calls()[:3]:
        if call.raises or call.memory:
            continue
        right = getattr(ref, name)(*call.args, **call.kwargs)
        for odd in (
            lambda a: np.asarray(a) + 0j,
            lambda a: np.asarray(a) + 1j,
            lambda a: np.asarray(a, dtype=object),
            lambda a: np.full(np.shape(a), np.nan),
            lambda a: 10**400,
            lambda a: str(a),
        ):
            got = (
                tuple(odd(r) for r in right)
                if isinstance(right, tuple) and not isinstance(right[0], tuple)
                else odd(right)
            )
            outcome = outcomes_of([("value", _plain(got))])[0]
            said = judge(name, None, [outcome] * len(CHECKS[name].calls()))
            assert said is None or GRADING_ERROR not in said, said


def _plain(value):
    from mhsa_helpers.execution.child.contract import plain

    return plain(value)


def test_a_judge_that_fails_costs_one_exercise_and_is_named(monkeypatch):
    """An exception inside a check's judgement is a grading error to review, not a crash."""

    def broken(self, call, got):
        raise OverflowError("a bug in the judge")

    monkeypatch.setattr(type(CHECKS["softmax"]), "judge", broken)
    calls = CHECKS["softmax"].calls()
    said = judge("softmax", None, [Outcome(value=np.zeros(3))] * len(calls))
    assert said is not None and GRADING_ERROR in said and "OverflowError" in said
