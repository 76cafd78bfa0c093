"""The check of the softmax's backward, ``softmax_backward``, and its catalogue of slips."""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..gradcheck import central_differences
from .batches import batch_rng, random_shape
from .comparison import as_result, compare
from .core import Call, Check
from .hints import AXIS_IGNORED as IGNORED
from .hints import backward_passed, lost_axis, matches_on_random
from .step17_backward import FD_STEP, against_differences, call_bound, not_a_backward

NO_ROW_SUM = (
    "dZ = A·dA misses the row-sum term: the softmax ties a row's entries together (its "
    "Jacobian is diag(a) − a·aᵀ), so dZ = A·(dA − Σ_k dA_k·A_k), the sum along the "
    "softmax's axis with keepdims=True."
)
SUM_OF_DA = (
    "the row sum must weigh dA by A: Σ_k dA_k·A_k (np.sum(dA * A, axis, keepdims=True)), "
    "not Σ_k dA_k."
)
WRONG_AXIS = (
    "the sum Σ dA·A runs along the wrong axis: along the softmax's own axis, the one each "
    "slice of A sums to 1 over."
)
NO_A = "the bracket is not multiplied by A: dZ = A·(dA − Σ dA·A)."
DIAGONAL = (
    "only the Jacobian's diagonal A·(1 − A) is used: off the diagonal, −A_i·A_j ties the "
    "entries together, so dZ = A·(dA − Σ_k dA_k·A_k)."
)
REVERSED = "the bracket is reversed (the sign is flipped): dZ = A·(dA − Σ dA·A), not A·(Σ − dA)."
NO_KEEPDIMS = lost_axis("sums", "sum", "np.sum(dA * A, axis=axis, keepdims=True)")
AXIS_IGNORED = f"{IGNORED}: with axis=-2 the sums run down the columns."
PLUS_SIGN = (
    "the row-sum term is added: the Jacobian is diag(a) − a·aᵀ, so dZ = A·(dA − Σ dA·A), with "
    "a minus."
)
MEAN_NOT_SUM = (
    "Σ dA·A is a mean over the row: it is the sum, np.sum(dA * A, axis=axis, keepdims=True), "
    "not np.mean."
)
SUM_OF_ALL = (
    "Σ dA·A is summed over every entry at once: each slice along the softmax's axis (one "
    "query's row) has its own sum, np.sum(dA * A, axis=axis, keepdims=True)."
)
DA_OUTSIDE = (
    "dA and A trade places: the factor outside the bracket is A (the softmax's own output), "
    "dZ = A·(dA − Σ dA·A), not dA·(A − Σ dA·A)."
)

MINUS_A = (
    "the bracket subtracts A itself: what each entry loses is one number per row, the sum "
    "Σ_k dA_k·A_k of dA weighted by A, so dZ = A·(dA − Σ dA·A)."
)
SUM_OF_A = (
    "dZ is 0 everywhere: each dA_i is multiplied by a sum that is 0 in every row, the "
    "Jacobian's row sum Σ_j J_ij = A_i − A_i·Σ_j A_j (J applied from the wrong side: "
    "einsum('...ij,...i->...i', J, dA) keeps dA's index i), or A_i·(1 − Σ_j A_j) with the sum "
    "taken of A alone. Apply J to dA, dZ_i = Σ_j J_ij·dA_j (einsum('...ij,...j->...i', J, dA)), "
    "which is A·(dA − Σ_j dA_j·A_j)."
)
MATRIX_PRODUCT = (
    "Σ dA·A is taken as a matrix product, dA·Aᵀ (every row of dA against every row of A), "
    "summed: it is the sum of the entrywise product along the axis, one row against itself, "
    "np.sum(dA * A, axis=axis, keepdims=True)."
)
TERM_WITHOUT_A = (
    "the row-sum term is not multiplied by A: dZ = A·(dA − Σ dA·A) = A·dA − A·Σ dA·A, not "
    "A·dA − Σ dA·A (so a blocked entry, where A is 0, gets a gradient of 0)."
)
LOG_SOFTMAX = (
    "dZ = dA − A·Σ dA is the backward of log_softmax (whose output is log A): the softmax's "
    "own multiplies by A and weighs the sum by A, dZ = A·(dA − Σ_k dA_k·A_k)."
)
RENORMALISED = (
    "A is divided by its sums along the axis again: a row whose every score was blocked is "
    "all 0 in A (its query sees no key), and 0/0 is NaN there. A is the softmax's output "
    "already (each row sums to 1, or is 0 where every key is blocked): use it as it is given, "
    "dZ = A·(dA − Σ dA·A)."
)
SOFTMAX_AGAIN = (
    "the softmax is applied to A again: A is already the softmax's output (the weights), "
    "not the scores. Use A as it is given: dZ = A·(dA − Σ dA·A)."
)


def softmax_mistakes(A, dA, axis: int = -1) -> list:
    """``(hint, wrong dZ)`` for the known mistakes in the softmax's backward."""
    weighted = (dA * A).sum(axis=axis, keepdims=True)
    out = [
        (NO_ROW_SUM, A * dA),
        (SUM_OF_DA, A * (dA - dA.sum(axis=axis, keepdims=True))),
        (NO_A, dA - weighted),
        (DIAGONAL, A * (1 - A) * dA),
        (REVERSED, A * (weighted - dA)),
    ]
    if A.ndim >= 2:  # one sum for a whole matrix, or for the whole batch
        out.append((SUM_OF_ALL, A * (dA - (dA * A).sum(axis=(-2, -1), keepdims=True))))
        out.append((SUM_OF_ALL, A * (dA - (dA * A).sum())))
    out.append((DA_OUTSIDE, dA * (A - weighted)))
    out.append((MINUS_A, A * (dA - A)))
    out.append((TERM_WITHOUT_A, A * dA - weighted))
    again = ref.softmax(A, axis)  # the weights taken for scores
    out.append((SOFTMAX_AGAIN, ref.softmax_backward(again, dA, axis)))
    out.append((SUM_OF_A, A * dA - A * A.sum(axis=axis, keepdims=True) * dA))
    out.append((PLUS_SIGN, A * (dA + weighted)))
    out.append((LOG_SOFTMAX, dA - A * dA.sum(axis=axis, keepdims=True)))
    sums = A.sum(axis=axis, keepdims=True)
    if (sums == 0).any():  # a fully blocked row: 0/0 where A is divided by its sums
        with np.errstate(all="ignore"):
            again = A / sums
        out.append((RENORMALISED, again * (dA - (dA * again).sum(axis=axis, keepdims=True))))
    out.append((MEAN_NOT_SUM, A * (dA - (dA * A).mean(axis=axis, keepdims=True))))
    last = axis in (-1, A.ndim - 1)
    if A.ndim >= 2 and last:
        products = (dA @ np.swapaxes(A, -1, -2)).sum(axis=-1, keepdims=True)  # (..., T_q, 1)
        out.append((MATRIX_PRODUCT, A * (dA - products)))
        out.append((WRONG_AXIS, A * (dA - (dA * A).sum(axis=-2, keepdims=True))))
        if A.shape[-1] == A.shape[-2]:
            out.append((NO_KEEPDIMS, A * (dA - (dA * A).sum(axis=-1)[..., None, :])))
    if not last:  # the sums along the last axis: the axis argument ignored
        out.append((AXIS_IGNORED, ref.softmax_backward(A, dA)))
    return out


def _softmax_call(
    Z, rng, axis: int = -1, fd: bool = False, dtype=np.float64, counted: bool = False
) -> Call:
    A = ref.softmax(Z, axis).astype(dtype)
    dA = rng.normal(size=Z.shape).astype(dtype)
    kwargs = {} if axis == -1 else {"axis": axis}
    calls = call_bound(A, dA) if counted else None
    return Call((A, dA), kwargs, context={"Z": Z, "fd": fd}, calls=calls)


def _large_softmax_call(rng) -> Call:
    """Scores of 2048 numbers in 8 rows, some masked: the call whose function calls are counted."""
    Z = rng.normal(size=(2, 4, 256)) * 2
    Z[..., 200:] = -np.inf  # padded keys
    return _softmax_call(Z, rng, counted=True)


SOFTMAX_RULE = "dZ = A·(dA − Σ dA·A), the sum along the softmax's axis with keepdims=True."


class SoftmaxBackward(Check):
    name = "softmax_backward"
    passed = (
        backward_passed(
            "dZ = A·(dA − Σ dA·A)",
            "the students, a causal and a fully masked row, axis=-2, one and two batch axes and "
            "float32",
            them="it",
        )
        + " (not a forward called again and again)."
    )
    passed_hidden = matches_on_random("axes, masks and batches")

    def visible(self):
        s = get_example("students")
        rng = batch_rng()
        Z = ref.attention_scores(s.X, s.X)
        masked = rng.normal(size=(4, 4)) + ref.causal_mask(4)
        masked[1] = -np.inf  # a fully masked row
        return [
            _softmax_call(Z, rng, fd=True),
            _softmax_call(rng.normal(size=(5, 5)) + ref.causal_mask(5), rng, fd=True),
            _softmax_call(masked, rng),
            _softmax_call(rng.normal(size=(3, 4)), rng, axis=-2, fd=True),
            _softmax_call(rng.normal(size=(2, 3, 4)), rng),
            _softmax_call(rng.normal(size=(2, 2, 3, 3)) + ref.causal_mask(3), rng),
            _softmax_call(rng.normal(size=(2, 4, 4)), rng, dtype=np.float32),
            _large_softmax_call(rng),
        ]

    def hidden(self, rng):
        calls = []
        for axis in (-1, -1, -2):
            T_q, T_k = (int(n) for n in rng.integers(2, 7, size=2))
            Z = rng.normal(size=(*random_shape(rng), T_q, T_k)) * 3
            if axis == -1 and T_q == T_k:
                Z = Z + ref.causal_mask(T_q)
            if axis == -1 and not calls:  # a fully masked row, as the visible test has
                Z[..., int(rng.integers(T_q)), :] = -np.inf
            calls.append(_softmax_call(Z, rng, axis=axis))
        return [*calls, _large_softmax_call(rng)]

    def too_many_calls(self, call, error):
        return not_a_backward(self.name, error, sum(map(np.size, call.args)), SOFTMAX_RULE)

    def catalogue(self, call):
        A, dA = call.args
        axis = call.kwargs.get("axis", -1)
        A64, dA64 = A.astype(np.float64), dA.astype(np.float64)
        return ref.softmax_backward(A64, dA64, axis), softmax_mistakes(A64, dA64, axis)

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        compare(self.name, got, expected, "dZ", known)
        got = as_result(self.name, got, "dZ")  # real (complex with no imaginary part passes)
        if call.context.get("fd"):
            Z, (_, dA) = call.context["Z"], call.args
            axis = call.kwargs.get("axis", -1)
            numeric = central_differences(lambda z: ref.softmax(z, axis), Z, dA, FD_STEP)
            against_differences(self.name, "dZ", got, numeric)
