"""Step 7: the row-wise, numerically stable softmax."""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .core import Call, Check, batch_rng, compare, random_shape

COLUMNS = (
    "each column sums to 1 (softmax over axis 0, as the source article says); each row must "
    "sum to 1: softmax over the last axis."
)
OVERFLOW = (
    "overflow on large scores: exp(1000) is inf and inf/inf is NaN; subtract each row's "
    "maximum before exp."
)
ALL_MASKED = (
    "a row that is entirely −∞ (fully masked) gives NaN; return zeros for it: shift such rows "
    "by 0, not by their max, and do not divide 0 by 0."
)
IGNORES_AXIS = "the axis argument is ignored: softmax(Z, axis=0) normalises each column."


def naive(Z, axis: int = -1):
    """exp(Z) / sum(exp(Z)) without the shift: overflows to NaN on large scores."""
    with np.errstate(all="ignore"):
        e = np.exp(Z)
        return e / e.sum(axis=axis, keepdims=True)


def mistakes(Z, got) -> list:
    """``(hint, wrong output)`` for the known mistakes on the scores ``Z``.

    Some mistakes show only as NaN in the learner's output ``got``: they are
    named by where the NaN stand (fully masked rows, or overflowing rows).
    """
    out = [(COLUMNS, ref.softmax(Z, axis=-2) if Z.ndim >= 2 else None)]
    if not np.isnan(naive(Z)).any() or np.isnan(ref.softmax(Z)).any():
        return out
    finite_rows = np.isfinite(Z).all(axis=-1)
    if np.abs(Z[finite_rows]).max(initial=0) > 500:
        out.insert(0, (OVERFLOW, naive(Z)))
    got = np.asarray(got) if isinstance(got, np.ndarray) else None
    if got is not None and got.shape == Z.shape and np.issubdtype(got.dtype, np.number):
        all_masked = np.isneginf(Z).all(axis=-1)
        if all_masked.any() and np.isnan(got[all_masked]).any():
            out.insert(0, (ALL_MASKED, got))
        elif np.isnan(got).any():
            out.insert(0, (OVERFLOW, got))
    return out


class Softmax(Check):
    name = "softmax"
    passed = "rows sum to 1, stable for large scores, zeros for a fully masked row, batches."
    passed_hidden = "matches on random, large and masked scores with batch axes."

    def visible(self):
        s = get_example("students")
        Z = ref.attention_scores(s.X, s.X)
        names = ("query", s.tokens, "key", s.tokens)
        return [
            Call((Z,), context={"labels": names}),
            Call((np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -999.0]]),)),
            Call((Z + ref.causal_mask(6),)),
            Call((np.array([[0.5, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]]),)),
            Call((np.arange(12.0).reshape(3, 4) / 3,), {"axis": 0}),
            Call((batch_rng().normal(size=(2, 3, 4)) * 10,)),
        ]

    def hidden(self, rng):
        calls = []
        for scale in (1.0, 30.0, 800.0):
            shape = (*random_shape(rng), int(rng.integers(2, 8)), int(rng.integers(2, 8)))
            calls.append(Call((rng.normal(size=shape) * scale,)))
        T = int(rng.integers(2, 8))
        Z = rng.normal(size=(2, T, T)) + ref.causal_mask(T)
        Z = Z + ref.padding_mask(np.array([[T], [1]]), T)
        Z[1, 0] = -np.inf
        return [*calls, Call((Z,))]

    def judge(self, call, got):
        (Z,) = call.args
        if call.kwargs.get("axis", -1) == 0:
            known = [(IGNORES_AXIS, ref.softmax(Z))]
            compare(self.name, got, ref.softmax(Z, axis=0), "softmax(Z, axis=0)", known)
            return
        labels = call.context.get("labels")
        compare(self.name, got, ref.softmax(Z), "softmax(Z)", mistakes(Z, got), labels=labels)
