"""Step 7: the row-wise, numerically stable softmax."""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .batches import batch_rng, random_shape
from .comparison import close, compare
from .core import Call, Check
from .hints import AXIS_IGNORED, LARGE_FINITE, lost_axis, whole_array_sum

COLUMNS = (
    "each column sums to 1 (the softmax ran down the columns, as the source article says); "
    "each row must sum to 1: softmax over the last axis."
)
OVERFLOW = (
    "overflow on large scores: exp(1000) is inf and inf/inf is NaN; subtract each row's "
    "maximum before exp."
)
ALL_MASKED = (
    "a row that is entirely −∞ (fully masked) gives NaN; return zeros for it: shift such rows "
    "by 0, not by their max, and do not divide 0 by 0."
)
GLOBAL_MAX = (
    "the shift subtracts the maximum of all of Z (Z.max() without an axis): a row far below "
    "it underflows to 0/0; subtract each row's own maximum, Z.max(axis=-1, keepdims=True)."
)
NO_KEEPDIMS = lost_axis("maxima", "maximum", "Z.max(axis=axis, keepdims=True)")
SUM_NO_KEEPDIMS = lost_axis("sums", "sum", "E.sum(axis=axis, keepdims=True)", effect="divides")
BOTH_NO_KEEPDIMS = lost_axis(
    "maxima and sums",
    "maximum and sum",
    "Z.max(axis=axis, keepdims=True) and E.sum(axis=axis, keepdims=True)",
    effect="shift and divide",
)
CLAMPED = (
    "a row that is entirely −∞ (fully masked) comes out uniform, 1/n each: −∞ was replaced by "
    f"{LARGE_FINITE}. Keep −∞, and return zeros for such a row: shift it by 0, not by its max, "
    "and do not divide 0 by 0."
)
IGNORES_AXIS = (
    f"{AXIS_IGNORED}: every slice along the given axis must sum to 1 (each column, for the "
    "axis of the rows), not always each row; use axis in the max and the sum."
)

#: The maximum and the sum taken along different axes (one of them the last, not axis).
MAX_AND_SUM_APART = (
    "the maximum is taken along {max_axis} but the sum along {sum_axis}: the shift and the "
    "sum must run along the same axis, the one asked for; use axis in both, "
    "Z.max(axis=axis, keepdims=True) and E.sum(axis=axis, keepdims=True)."
)


def axes_apart(Z, axis: int) -> list:
    """``(hint, softmax)`` whose maximum and sum run along different axes: one of them along
    ``axis``, the other along the last axis."""
    out = []
    with np.errstate(all="ignore"):
        for max_axis, sum_axis in ((axis, -1), (-1, axis)):
            e = np.exp(Z - Z.max(axis=max_axis, keepdims=True))
            said = {a: "axis" if a == axis else "the last axis" for a in (max_axis, sum_axis)}
            hint = MAX_AND_SUM_APART.format(max_axis=said[max_axis], sum_axis=said[sum_axis])
            out.append((hint, e / e.sum(axis=sum_axis, keepdims=True)))
    return out


def naive(Z, axis: int = -1):
    """exp(Z) / sum(exp(Z)) without the shift: overflows to NaN on large scores."""
    with np.errstate(all="ignore"):
        e = np.exp(Z)
        return e / e.sum(axis=axis, keepdims=True)


def _guarded(Z, axis: int = -1):
    """exp(Z) / sum(exp(Z)) with 0 where the sum is 0 (the guard against 0/0)."""
    with np.errstate(all="ignore"):
        e = np.exp(Z)
        s = e.sum(axis=axis, keepdims=True)
        return np.divide(e, s, out=np.zeros_like(e), where=s > 0)


def mistakes(Z) -> list:
    """``(hint, wrong output)`` for the known mistakes on the scores ``Z``."""
    with np.errstate(all="ignore"):
        shifted = np.exp(Z - Z.max(axis=-1, keepdims=True))  # NaN on all −∞ rows
        return [
            (COLUMNS, ref.softmax(Z, axis=-2) if Z.ndim >= 2 else None),
            (OVERFLOW, naive(Z)),
            (ALL_MASKED, shifted / shifted.sum(axis=-1, keepdims=True)),
            (GLOBAL_MAX, naive(Z - Z.max()) if Z.size else None),
            (GLOBAL_MAX, _guarded(Z - Z.max()) if Z.size else None),
            *((NO_KEEPDIMS, wrong) for wrong in _without_keepdims(Z)),
            *_sums_without_keepdims(Z),
            *((whole_array_sum(Z), wrong) for wrong in _whole_sums(Z)),
            (CLAMPED, ref.softmax(np.maximum(Z, -1e9)) if np.isneginf(Z).any() else None),
        ]


def _without_keepdims(Z) -> list:
    """The softmax with each row's maximum broadcast along the rows (keepdims missing)."""
    with np.errstate(all="ignore"):
        m = Z.max(axis=-1)  # (..., T): lines up with the last axis, not the rows
        try:
            guarded = np.where(np.isfinite(m), m, 0.0)
            return [naive(Z - m), _guarded(Z - guarded), naive(Z - guarded)]
        except ValueError:  # the shapes do not broadcast: the mistake shows as an error
            return []


def _sums_without_keepdims(Z) -> list:
    """``(hint, softmax)`` whose row sums (and maybe maxima) are broadcast along the rows."""
    with np.errstate(all="ignore"):
        m = Z.max(axis=-1, keepdims=True)
        shifts = [(SUM_NO_KEEPDIMS, np.where(np.isfinite(m), m, 0.0)), (SUM_NO_KEEPDIMS, m)]
        shifts.append((BOTH_NO_KEEPDIMS, m[..., 0]))  # (..., T): the maxima lost it too
        out = []
        for hint, shift in shifts:
            try:
                e = np.exp(Z - shift)
                s = e.sum(axis=-1)  # (..., T): lines up with the last axis, not the rows
                out += [(hint, e / s), (hint, e / np.where(s > 0, s, 1.0))]
            except ValueError:  # the shapes do not broadcast: the mistake shows as an error
                pass
        return out


def _whole_sums(Z) -> list:
    """The softmax divided by the sum of the whole array, each row shifted by its own max.

    (Shifted by Z's one maximum, it is the global maximum's slip wherever one row
    alone survives the shift; that slip is named first.)
    """
    if Z.ndim < 2 or Z.shape[-2] < 2:
        return []  # one row: its sum is the whole array's
    with np.errstate(all="ignore"):
        m = Z.max(axis=-1, keepdims=True)
        out = []
        for shift in (np.where(np.isfinite(m), m, 0.0), m):
            e = np.exp(Z - shift)
            s = e.sum()
            out += [e / s, e / s if s > 0 else e]
        return out


def nan_patterns(Z, got) -> list:
    """``(hint, got)`` when ``got`` has NaN where a known mistake puts them.

    For variants of the overflow and fully-masked-row mistakes that the
    catalogue does not compute exactly: named by where the NaN stand.
    """
    if not isinstance(got, np.ndarray) or got.shape != Z.shape:
        return []
    if not np.issubdtype(got.dtype, np.number) or not np.isnan(got).any():
        return []
    all_masked = np.isneginf(Z).all(axis=-1)
    if all_masked.any() and np.isnan(got[all_masked]).any():
        return [(ALL_MASKED, got)]
    return [(OVERFLOW, got)]


class Softmax(Check):
    name = "softmax"
    passed = (
        "rows sum to 1, stable for large scores, zeros for a fully masked row, one and two batch "
        "axes, float32."
    )
    passed_hidden = "matches on random, large and masked scores with batch axes."

    def visible(self):
        s = get_example("students")
        Z = ref.attention_scores(s.X, s.X)
        names = ("query", s.tokens, "key", s.tokens)
        return [
            Call((Z,), context={"labels": names}),
            Call((np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -999.0]]),)),
            # a row spread over 2000: a shift by the row's minimum (not maximum) overflows
            Call((np.array([[1000.0, 0.0, -1000.0], [3.0, 1.0, 2.0]]),)),
            Call((Z + ref.causal_mask(6),)),
            # before any other fully masked row (a check stops at the first call that warns):
            # a fully masked row below rows of very different sizes: tells the global max
            # (0/0 on the low row too) from the row max without the fully-masked guard
            Call((np.array([[2.0, 1.0, -np.inf], [-800.0, -801.0, -802.0], [-np.inf] * 3]),)),
            Call((np.array([[0.5, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]]),)),
            Call((np.array([[1000.0, -np.inf, 1001.0], [-np.inf, -np.inf, -np.inf]]),)),
            Call((np.arange(12.0).reshape(3, 4) / 3,), {"axis": 0}),
            Call((batch_rng().normal(size=(2, 3, 4)) * 10,)),
            Call(((batch_rng().normal(size=(2, 3, 4)) * 10).astype(np.float32),)),  # float32
            Call((batch_rng().normal(size=(2, 2, 3, 4)) * 10 + ref.causal_mask(4)[:3],)),  # 2 axes
        ]

    def hidden(self, rng):
        calls = []
        for scale in (1.0, 30.0, 800.0):
            shape = (*random_shape(rng), int(rng.integers(2, 8)), int(rng.integers(2, 8)))
            calls.append(Call((rng.normal(size=shape) * scale,)))
        T = int(rng.integers(2, 8))
        # the first sequence's scores near 1000, the second's (with the fully masked row) near
        # 0: exp without the shift overflows on the first, a shift by the maximum of all of Z
        # underflows the second, and a row-max shift without a guard for an all −∞ row NaNs
        # that row only: the three are told apart
        Z = rng.normal(size=(2, T, T)) + np.array([1000.0, 0.0])[:, None, None]
        Z = Z + ref.causal_mask(T)
        Z = Z + ref.padding_mask(np.array([[T], [1]]), T)
        Z[1, 0] = -np.inf
        # one row far below the others: Z's own maximum (not the row's) underflows it to 0
        low = rng.normal(
            size=(*random_shape(rng), int(rng.integers(3, 8)), int(rng.integers(2, 8)))
        )
        low[..., 1, :] -= rng.uniform(800.0, 1000.0)
        # softmax along another axis than the last: down the columns
        cols = rng.normal(
            size=(*random_shape(rng), int(rng.integers(2, 8)), int(rng.integers(2, 8)))
        )
        return [*calls, Call((Z,)), Call((low,)), Call((cols * 5,), {"axis": -2})]

    def catalogue(self, call):
        (Z,) = call.args
        axis = call.kwargs.get("axis", -1)
        if axis != -1:
            return ref.softmax(Z, axis=axis), [(IGNORES_AXIS, ref.softmax(Z)), *axes_apart(Z, axis)]
        return ref.softmax(Z), mistakes(Z)

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        axis = call.kwargs.get("axis", -1)
        if axis != -1:
            compare(self.name, got, expected, f"softmax(Z, axis={axis})", known)
            return
        if not any(w is not None and close(got, w) for _, w in known):
            known = [*known, *nan_patterns(call.args[0], got)]
        compare(self.name, got, expected, "softmax(Z)", known, labels=call.context.get("labels"))
