"""Notebook 19: each head's previous-token and induction score, judged by a catalogue.

The scores are means of two stripes of the attention weights: key ``t − 1``
over queries ``t = 1 … L`` (previous token) and key ``t − L + 1`` over queries
``t = L … T − 1`` (induction), per head, over every leading axis. Each
catalogued mistake reads the wrong stripe, the wrong queries or averages over
the wrong axes; its wrong result is computed from the call's own weights.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import reference as ref
from .comparison import as_pair, as_result, close
from .core import Call, Check
from .failures import AmbiguousMistake, CheckFailed

# -- the induction score's key ------------------------------------------------------------
SAME_TOKEN = (
    "the induction score reads key t − L, the earlier occurrence of the current token itself; "
    "an induction head attends to the token after it, key t − L + 1 (whose previous token is "
    "the current one)."
)
TWO_AFTER = (
    "the induction score reads key t − L + 2, one past the token to copy: the earlier "
    "occurrence of query t's token is key t − L, and the token after it key t − L + 1."
)
# -- the induction score's queries ----------------------------------------------------------
FIRST_PERIOD_QUERY = (
    "the induction score also counts query L − 1, the first period's last token (with key 0): "
    "np.diagonal(A, -(L - 1)) starts there. Only queries t = L … T − 1 have an earlier "
    "occurrence to copy from."
)
EVERY_QUERY = (
    "the induction score averages over every query t = 0 … T − 1: the first period's queries "
    "have no earlier occurrence to copy (and for t < L − 1 the key t − L + 1 is negative, "
    "read from the row's end). Average over t = L … T − 1 only."
)
# -- the previous-token score's queries -----------------------------------------------------
PREVIOUS_ALL = (
    "the previous-token score averages over every query t = 1 … T − 1; it is defined over "
    "t = 1 … L, the first period and query L, the keys an induction head reads from (later "
    "queries of a trained model look elsewhere)."
)
QUERY_ZERO = (
    "the previous-token score counts query 0, which has no previous token: its key t − 1 = −1 "
    "is read from the row's end, key T − 1. Start at t = 1 (t = 1 … L)."
)
QUERY_ZERO_TO_L_MINUS_1 = (
    "the previous-token score runs over t = 0 … L − 1 (range(L)): query 0 has no previous "
    "token (key −1 is the row's last key), and query L is left out. Use t = 1 … L."
)
STOPS_BEFORE_L = (
    "the previous-token score stops at query L − 1: it runs over t = 1 … L, query L (the "
    "first token repeated) included."
)
# -- the axes ---------------------------------------------------------------------------------
OVER_HEADS = (
    "the scores are averaged over the heads instead of the queries: there is one score per "
    "head, shape (h,), the mean over its queries t (and over the sequences)."
)
LEADING_KEPT = (
    "the scores keep the leading (sequence) axes: average over them too, one score per head, "
    "shape (h,) however many axes come before h (e.g. reshape to (-1, h, n) and average axes "
    "0 and 2)."
)
SUMMED = (
    "the stripe's weights are added up over the queries, not averaged: divide by the number "
    "of queries (L for the previous-token score, T − L for the induction score)."
)
ROWS_FOR_KEYS = (
    "the weights are read as A[..., t − 1, t]: rows are queries and columns keys, so query "
    "t's weight on key t − 1 is A[..., t, t − 1] (above the diagonal a causal head has none)."
)
SWAPPED = (
    "the two scores come back swapped: return (previous, induction), the previous-token "
    "score first."
)
PREVIOUS_PART = "previous-token score"
INDUCTION_PART = "induction score"


def _stripe(A: np.ndarray, queries, back: int) -> np.ndarray:
    """``A[..., t, t - back]`` for ``t`` in ``queries``: shape (..., h, len(queries))."""
    t = np.asarray(list(queries))
    return A[..., t, t - back]


def _mean(values: np.ndarray) -> np.ndarray:
    """One score per head: the mean over the queries and every leading axis."""
    h, n = values.shape[-2:]
    return values.reshape(-1, h, n).mean(axis=(0, 2))


def mistakes(A: np.ndarray, L: int) -> list:
    """``(hint, (previous, induction))`` for the known mistakes of ``induction_scores``."""
    T = A.shape[-1]
    first, repeated = range(1, L + 1), range(L, T)
    prev, ind = _mean(_stripe(A, first, 1)), _mean(_stripe(A, repeated, L - 1))
    pv, iv = _stripe(A, first, 1), _stripe(A, repeated, L - 1)
    h = A.shape[-3]
    t_first, t_rep = np.arange(1, L + 1), np.arange(L, T)
    return [
        (SAME_TOKEN, (prev, _mean(_stripe(A, repeated, L)))),
        (TWO_AFTER, (prev, _mean(_stripe(A, repeated, L - 2)))),
        (FIRST_PERIOD_QUERY, (prev, _mean(_stripe(A, range(L - 1, T), L - 1)))),
        (EVERY_QUERY, (prev, _mean(_stripe(A, range(T), L - 1)))),
        (PREVIOUS_ALL, (_mean(_stripe(A, range(1, T), 1)), ind)),
        (QUERY_ZERO, (_mean(_stripe(A, range(L + 1), 1)), ind)),
        (QUERY_ZERO_TO_L_MINUS_1, (_mean(_stripe(A, range(L), 1)), ind)),
        *([(STOPS_BEFORE_L, (_mean(_stripe(A, range(1, L), 1)), ind))] if L > 1 else []),
        (
            OVER_HEADS,
            (pv.reshape(-1, h, L).mean(axis=(0, 1)), iv.reshape(-1, h, T - L).mean(axis=(0, 1))),
        ),
        *([(LEADING_KEPT, (pv.mean(axis=-1), iv.mean(axis=-1)))] if A.ndim > 3 else []),
        (SUMMED, (pv.reshape(-1, h, L).sum(-1).mean(0), iv.reshape(-1, h, T - L).sum(-1).mean(0))),
        (
            ROWS_FOR_KEYS,
            (_mean(A[..., t_first - 1, t_first]), _mean(A[..., t_rep - L + 1, t_rep])),
        ),
        (SWAPPED, (ind, prev)),
    ]


def causal_weights(rng: np.random.Generator, shape: tuple, sharpness: float = 3.0) -> np.ndarray:
    """Random causal attention weights of ``shape`` (..., h, T, T): each row sums to 1."""
    T = shape[-1]
    Z = sharpness * rng.normal(size=shape) + np.where(np.tril(np.ones((T, T))) > 0, 0.0, -np.inf)
    Z = Z - Z.max(axis=-1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=-1, keepdims=True)


def ideal_heads(T: int, L: int) -> np.ndarray:
    """Two perfect heads, (2, T, T): a previous-token head, and an induction head (uniform
    over the causal keys where it has nothing to copy)."""
    A = np.zeros((2, T, T))
    A[0, 0, 0] = 1.0
    A[0, np.arange(1, T), np.arange(T - 1)] = 1.0
    for t in range(T):
        if t >= L:
            A[1, t, t - L + 1] = 1.0
        else:
            A[1, t, : t + 1] = 1.0 / (t + 1)
    return A


@functools.cache
def _trained(n: int) -> np.ndarray:
    from ..training import induction  # the training package imports the reference: here, late

    params = induction.load_induction()
    acts = induction.forward(params, induction.held_out()[:n], params["n_heads"])
    return np.concatenate([acts.A1, acts.A2], axis=-3)


def trained_weights(n: int) -> np.ndarray:
    """The shipped induction model's attention on ``n`` held-out sequences: (n, 4, 16, 16),
    layer 1's two heads then layer 2's (a fresh copy: a check's inputs may be changed)."""
    return _trained(n).copy()


class InductionScores(Check):
    name = "induction_scores"
    core_ndim = 3
    passed = (
        "the mean of key t − 1 over queries 1 … L and of key t − L + 1 over queries L … T − 1, "
        "per head: the trained model's four heads on one and on five sequences, two ideal heads, "
        "random causal weights with two leading axes, one head, L = T − 1."
    )
    passed_hidden = "right on random weights, heads, periods and leading axes."

    def visible(self):
        rng = np.random.default_rng(19)
        trained = trained_weights(5)
        return [
            Call((trained[0], 8)),
            Call((trained, 8)),
            Call((ideal_heads(7, 3), 3)),
            Call((causal_weights(rng, (2, 3, 3, 11, 11)), 4)),
            Call((causal_weights(rng, (1, 5, 5)), 2)),
            Call((causal_weights(rng, (2, 3, 6, 6)), 5)),
        ]

    def hidden(self, rng):
        calls = []
        for lead in ((), (int(rng.integers(2, 5)),), tuple(int(n) for n in rng.integers(2, 4, 2))):
            L = int(rng.integers(2, 8))
            T = int(rng.integers(L + 2, 3 * L + 1))
            h = int(rng.integers(1, 5))
            calls.append(Call((causal_weights(rng, (*lead, h, T, T)), L)))
        return calls

    def catalogue(self, call):
        A, L = call.args
        return ref.induction_scores(A, L), mistakes(np.asarray(A), L)

    def judge(self, call, got):
        A = call.args[0]
        h = A.shape[-3]
        prev, ind = as_pair(self.name, got, "previous", "induction")
        prev = as_result(self.name, prev, "the previous-token scores")
        ind = as_result(self.name, ind, "the induction scores")
        expected, known = self.catalogue(call)
        if close(prev, expected[0]) and close(ind, expected[1]):
            return
        hints = []  # the mistakes whose result this is, each once
        for hint, wrong in known:
            if close(prev, wrong[0]) and close(ind, wrong[1]) and hint not in hints:
                hints.append(hint)
        if len(hints) > 1:  # alike on this input: a later one (Check.narrow) tells them apart
            raise AmbiguousMistake(self.name, hints)
        if hints:
            raise CheckFailed(f"{self.name}: {hints[0]}", named=("hint", self.name, hints[0]))
        said = []  # each wrong part on its own: two slips at once, one in each score
        for part, (got_part, exp_part) in enumerate(zip((prev, ind), expected, strict=True)):
            if close(got_part, exp_part):
                continue
            what = (PREVIOUS_PART, INDUCTION_PART)[part]
            if got_part.shape != (h,):
                raise CheckFailed(
                    f"{self.name}: the {what} should have shape ({h},), one per head, but has "
                    f"shape {got_part.shape}.",
                    public=f"{self.name}: the {what} should have shape (h,), one per head.",
                )
            own = [
                hint
                for hint, wrong in known
                if close(got_part, wrong[part]) and not close(wrong[part], exp_part)
            ]
            if own:
                said.append(own[0])
                continue
            k = int(np.argmax(np.abs(got_part - exp_part)))
            stripe = "key t − 1 over t = 1 … L" if part == 0 else "key t − L + 1 over t = L … T − 1"
            said.append(
                f"the {what} differs from the mean weight on {stripe} (head index {k}: got "
                f"{float(got_part[k]):.4g}, expected {float(exp_part[k]):.4g})."
            )
        if len(said) == 1 and said[0] in (hint for hint, _ in known):
            raise CheckFailed(f"{self.name}: {said[0]}", named=("hint", self.name, said[0]))
        raise CheckFailed(
            f"{self.name}: " + " Also, ".join(said),
            public=f"{self.name}: the scores differ from the mean weights on the two stripes.",
        )
