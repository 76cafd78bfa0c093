"""Extension 6: the causal sliding-window mask, compared exactly (``np.array_equal``)."""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from .core import Call, Check, Opaque
from .failures import AmbiguousMistake, CheckFailed
from .hints import BOOLEAN_MASK, PLUS_INFINITY, ZERO_TIMES_INF, additive
from .step06_masking import finite_for_infinity

#: numpy's own, as imported before any learner code ran (see core.guard_numpy).
_array_equal = np.array_equal

ONE_TOO_MANY = (
    "off by one: query i also sees key i − window, so window + 1 keys; keep j > i − window "
    "(itself and the window − 1 tokens before it)."
)
ONE_TOO_FEW = (
    "off by one: query i sees only window − 1 keys; the window includes query i itself, "
    "so 0 where i − window < j ≤ i."
)
NOT_CAUSAL = (
    "the window is not causal: a symmetric band |i − j| < window lets a token see the tokens "
    "after it; keep only j ≤ i."
)
#: Only the keys too far back blocked (np.tril(full(−∞), −window)): the future left open.
FUTURE_OPEN = (
    "the future is not blocked: only the keys too far back (j ≤ i − window) are −∞, while "
    "every later key (j > i) stays 0. The window is causal: −∞ for j > i too, 0 only where "
    "i − window < j ≤ i."
)
#: A window as long as the sequence (or longer) taken for no mask at all.
LONG_WINDOW_NO_MASK = (
    "a window as long as the sequence or longer (window ≥ seq_len) is taken for no mask "
    "(all zeros): it is the causal mask, for a token still never sees the tokens after it; "
    "the window only drops keys further back than window − 1, and there are none."
)


def capped(T: int) -> str:
    """The hint for a window capped at seq_len − 1: a window ≥ seq_len loses key 0 at the end."""
    return (
        "the window is capped at seq_len − 1 (min(window, seq_len - 1)): a window as long as the "
        "sequence or longer (window ≥ seq_len) is the causal mask, for the window counts query i "
        f"itself, so the last query, {T - 1}, sees all {T} keys, key 0 included. Use the window "
        "as it is (or cap it at seq_len, not seq_len − 1)."
    )


LOOKS_AHEAD = (
    "the window looks ahead (rows and columns swapped): rows are queries i, columns keys j, "
    "and query i sees j from i − window + 1 up to i."
)
BOOLEAN = BOOLEAN_MASK
ZERO_ONE = additive("0 and 1 (nor 1 and 0): it is added to the scores")


WRAPPED = (
    "the first window − 1 rows are blocked entirely: there i − window + 1 is negative, and a "
    "negative slice start counts from the end of the row, so M[i, i - window + 1 : i + 1] is "
    "empty. Start the slice at max(0, i − window + 1)."
)
NOT_ITSELF = (
    "a token does not see itself: the window holds the token and the window − 1 tokens "
    "before it, j ≤ i (the diagonal is 0, not −∞)."
)


def wraps_around(T: int, w: int) -> str:
    """The hint for a loop whose negative key index j = i − window + 1 wraps to the row's end."""
    return (
        "for the first window − 1 queries the loop starts at a negative key j = i − window + 1, "
        "and numpy reads a negative index from the end of the row: query 0 also sees the keys "
        f"at the row's end, {T - w + 1} to {T - 1} (M[0, -1] is key {T - 1}). Start at "
        "max(0, i − window + 1)."
    )


def mistakes(T: int, w: int) -> list:
    """``(hint, wrong mask)`` for the known mistakes of a sliding-window mask."""
    i = np.arange(T)[:, None]  # (T, 1) queries
    j = np.arange(T)[None, :]  # (1, T) keys
    allowed = (j <= i) & (j > i - w)

    def additive(keep):
        return np.where(keep, 0.0, -np.inf)

    return [
        (ONE_TOO_MANY, additive((j <= i) & (j >= i - w))),
        (ONE_TOO_FEW, additive((j <= i) & (j > i - w + 1))),
        (NOT_CAUSAL, additive(np.abs(i - j) < w)),
        (FUTURE_OPEN, additive(j > i - w)),
        (NOT_ITSELF, additive((j < i) & (j >= i - w))),
        (NOT_ITSELF, additive((j < i) & (j > i - w))),
        (LOOKS_AHEAD, additive(allowed.T)),
        (WRAPPED, additive(allowed & (i - w + 1 >= 0))),
        *(  # M[i, j] = 0 for j from i − window + 1: a negative j opens key T + j
            [(wraps_around(T, w), additive(allowed | (j - T >= i - w + 1)))] if 1 < w <= T else []
        ),
        # a window capped at T − 1: only where window ≥ T; at window = T it is ONE_TOO_FEW's
        *([(capped(T), additive((j <= i) & (j > i - (T - 1))))] if w >= T > 1 else []),
        (BOOLEAN, allowed.copy()),
        (ZERO_ONE, (~allowed).astype(float)),
        (ZERO_TIMES_INF, np.where(allowed, np.nan, -np.inf)),
        (PLUS_INFINITY, np.where(allowed, 0.0, np.inf) if not allowed.all() else None),
    ]


def _first_difference(got, expected) -> str:
    i, j = (int(n) for n in np.argwhere(got != expected)[0])
    return f"first at query {i}, key {j}: got {float(got[i, j]):g}, expected {expected[i, j]:g}"


class SlidingWindowMask(Check):
    name = "sliding_window_mask"
    passed = (
        "0 where i − window < j ≤ i and −∞ elsewhere, exactly: window 1, every window of a "
        "short sequence, window ≥ T (the causal mask), T = 1, a long sequence; window < 1 refused."
    )
    passed_hidden = "exact on random lengths and windows."

    def visible(self):
        return [
            Call((6, 3)),
            Call((5, 1)),
            *(Call((7, w)) for w in range(2, 7)),
            Call((6, 6)),
            Call((4, 10)),
            Call((1, 1)),
            Call((1, 4)),
            Call((1024, 100)),
            Call((5, 0), raises="ValueError", context={"why": "window = 0"}),
            Call((5, -2), raises="ValueError", context={"why": "a negative window (-2)"}),
        ]

    def hidden(self, rng):
        T = int(rng.integers(2, 40))
        # first, window ≥ T (the causal mask): the shorter windows after it tell no mask there
        # from a symmetric band
        calls = [Call((T, T + int(rng.integers(0, 3))))]
        T = int(rng.integers(3, 40))  # then 1 < window < T, which tells them apart
        calls.append(Call((T, int(rng.integers(2, T)))))
        for _ in range(4):
            T = int(rng.integers(2, 40))
            calls.append(Call((T, int(rng.integers(1, T + 4)))))
        calls.append(
            Call((int(rng.integers(1, 9)), 0), raises="ValueError", context={"why": "window = 0"})
        )
        return calls

    def catalogue(self, call):
        if call.raises is not None:
            return None, []
        T, w = call.args
        return ref.sliding_window_mask(T, w), mistakes(T, w)

    def judge(self, call, got):
        T, w = call.args
        if isinstance(got, tuple | list) or got is None or isinstance(got, Opaque):
            kind = got.type_name if isinstance(got, Opaque) else type(got).__name__
            raise CheckFailed(f"{self.name} should return one ndarray, but returned {kind}.")
        got = np.asarray(got)
        if got.dtype == bool:
            raise CheckFailed(f"{self.name}: {BOOLEAN}")
        if got.shape != (T, T):
            raise CheckFailed(
                f"{self.name}({T}, {w}) should have shape ({T}, {T}), but has shape {got.shape}."
            )
        if not np.issubdtype(got.dtype, np.floating):
            raise CheckFailed(
                f"{self.name} should return a float array of 0.0 and -np.inf, not dtype "
                f"{got.dtype}."
            )
        expected, known = self.catalogue(call)
        if _array_equal(got, expected):
            return
        finite_for_infinity(f"{self.name}({T}, {w})", got, expected, "the window mask")
        if w >= T > 1 and _array_equal(got, np.zeros((T, T))):
            # no mask, a symmetric band or only the keys too far back blocked (or, at window T or
            # T + 1, a loop whose negative key index wraps around, which fills every row): alike
            # here; a shorter window (which
            # the check narrows with, Check.narrow) tells them apart
            wraps = [wraps_around(T, min(w, T))] if w <= T + 1 else []
            raise AmbiguousMistake(
                self.name, [LONG_WINDOW_NO_MASK, NOT_CAUSAL, FUTURE_OPEN, *wraps]
            )
        hints = []  # the mistakes whose mask this is, each once
        for hint, wrong in known:
            if wrong is None or wrong.dtype == bool or hint in hints:
                continue
            if _array_equal(got, wrong, equal_nan=bool(np.isnan(wrong).any())):
                hints.append(hint)
        if len(hints) > 1:  # alike on this input: a later one (Check.narrow) tells them apart
            raise AmbiguousMistake(self.name, hints)
        if hints:
            raise CheckFailed(f"{self.name}({T}, {w}): {hints[0]}")
        if np.isin(got, (0.0, 1.0)).all():
            raise CheckFailed(f"{self.name}({T}, {w}): {ZERO_ONE}")
        rule = "differs from 0 where i − window < j ≤ i and −∞ elsewhere"
        raise CheckFailed(
            f"{self.name}({T}, {w}) {rule}, {_first_difference(got, expected)}.",
            public=f"{self.name}(…) {rule}.",  # no position, no value: a hidden test's sentence
        )
