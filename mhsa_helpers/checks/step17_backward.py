"""After the extensions: the backward pass of the softmax, of one head, of the whole layer.

Each check compares the learner's gradients with the reference's and names
the catalogued mistake; on the calls marked ``fd`` it also holds them to
central differences of the scalar loss ``sum(output * G)`` (LEARNING.md: step
1e-6, relative error at most 1e-5), the way the notebook teaches to check a
gradient, so that a gradient is judged by its definition as well.

A gradient must come from a backward pass, not from central differences of
the forward (two forward passes per entry of the input). Each check ends
with one large input (thousands of numbers, few rows) on which the call may
make at most one Python function call per :data:`CALLS_PER` numbers of its
inputs (:func:`call_bound`): the child counts every call, the answer's own,
the course's ``mh`` functions and numpy's, in the threads the call starts
too, and stops the call past the bound (:class:`mhsa_helpers.child._Counted`).
No time is measured: a backward pass makes a fixed number of calls whatever
the size (a loop over heads or rows a few per head or row), central
differences at least two per number.

What the count does not see: a forward copied inline that makes no Python
call per entry (only ufuncs and their ``reduce``, no ``np.max``, ``.sum()``
or ``np.einsum``), central differences batched into a few forward calls on
a stack of perturbed inputs (the forward takes batch axes), work handed to
a thread or a process started before the call, or a profiler taken down and
put back by the answer itself; each takes a deliberate effort to hide from
the check, and the answer's code can do it because it runs in the process
that counts.

So the hidden tests of one head's and of the layer's backward end with a
larger input still (:func:`work`: heads of 256 tokens, a layer of width 256),
on which the grader's time budget, kept by its own clock outside the
answer's process, holds what the count cannot: central differences, batched
or hidden however, need a forward pass's worth of work per number of the
input, minutes there, where a backward pass takes milliseconds. The
softmax's backward has no such input: central differences of one row cost
what its full Jacobian costs, a correct way to write it, so only the count
tells them apart there.
"""

from __future__ import annotations

import math

import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..gradcheck import central_differences, relative_error
from .batches import batch_axes_error, batch_rng, random_shape
from .comparison import as_result, close, compare
from .core import Call, Check
from .diagnose import diagnose_order
from .failures import CheckFailed, said_publicly
from .masks import fully_blocked, hidden_mask, per_head_mask, two_batch_axes_mask
from .wording import agree

#: The finite-difference bound of LEARNING.md.
FD_STEP, FD_BOUND = 1e-6, 1e-5

#: Numbers of the inputs per Python function call a backward pass may make on the large input.
CALLS_PER = 2


def call_bound(*arrays) -> int:
    """The function calls a backward on ``arrays`` may make: one per :data:`CALLS_PER` numbers.

    Central differences make two forward passes, each at least one call,
    per number they differentiate: at least twice the bound (the bound
    counts ``dA`` or ``dOut`` too); a backward pass, even one that loops
    over the rows or heads of the large input, makes a few per row.
    """
    return sum(int(np.size(a)) for a in arrays) // CALLS_PER


def not_a_backward(name: str, error: str, numbers: int, rule: str) -> str:
    """The sentence for a backward stopped past its bound of function calls.

    ``error`` is the child's word (how many calls), ``numbers`` the input's
    size, ``rule`` the chain rule the function should compute instead.
    """
    said = (
        error.removeprefix(f"{name} ")
        .rstrip(".")
        .replace(" in one call,", f" in one call on an input of {numbers} numbers,")
    )
    return (
        f"{name} {said}: that is central differences (two forward passes per entry) or "
        "another loop over every entry, not a backward pass. Compute the gradient by the chain "
        f"rule, with array operations over whole axes: {rule} A backward pass makes a fixed "
        "number of array operations whatever the size of its input; central differences are "
        "only for checking it on small inputs. (The check counts the function calls of one "
        f"call on a large input: at most one per {CALLS_PER} numbers of its inputs.)"
    )


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
NO_KEEPDIMS = (
    "the row sums lost their axis (keepdims=True is missing), so row i's sum is subtracted "
    "from column i: np.sum(dA * A, axis=axis, keepdims=True)."
)
AXIS_IGNORED = "the axis argument is ignored: with axis=-2 the sums run down the columns."
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

DQ_NOT_SCALED = "dQ misses the 1/√d_k: Z = Q·Kᵀ/√d_k, so dQ = dZ·K/√d_k."
DK_NOT_SCALED = "dK misses the 1/√d_k: Z = Q·Kᵀ/√d_k, so dK = dZᵀ·Q/√d_k."
NOT_SCALED = "dQ and dK miss the 1/√d_k of the scores: divide dZ by √d_k before using it."
SCALED_BY_D_K = "dQ and dK are divided by d_k; the scores were divided by √d_k, so is dZ."
DK_NOT_TRANSPOSED = (
    "dK = dZ·Q: the keys are dZ's columns, so dK = dZᵀ·Q/√d_k (shape (..., T_k, d_k))."
)
DQ_FROM_DZT = "dQ = dZᵀ·K: the queries are dZ's rows, so dQ = dZ·K/√d_k (dZᵀ belongs to dK)."
TIMES_SQRT = (
    "dQ and dK are multiplied by √d_k: the scores were divided by √d_k (Z = Q·Kᵀ/√d_k), so "
    "dQ = dZ·K/√d_k and dK = dZᵀ·Q/√d_k, divided too."
)
SOFTMAX_SKIPPED = (
    "the softmax's backward is skipped (dZ = dA): between the weights and the scores lies the "
    "softmax, so dZ = softmax_backward(A, dA) = A·(dA − Σ dA·A)."
)
DK_FROM_K = "dK = dZᵀ·K: Z = Q·Kᵀ/√d_k, so the keys' gradient takes the queries: dK = dZᵀ·Q/√d_k."
ZEROED_AFTER = (
    "the weights are masked after the softmax (A·(mask == 0)), so their rows no longer sum to "
    "1: add the mask to the scores before the softmax, as the forward does."
)
DA_TRANSPOSED = (
    "dA is transposed: output = A·V gives dA = dOut·Vᵀ (one row per query, one column per "
    "key), not (dOut·Vᵀ)ᵀ."
)
SOFTMAX_BACK_AXIS = (
    "the softmax's backward runs along the query axis (axis=-2): the forward softmax normalises "
    "each query's row over the keys, so its backward sums along the keys too (axis=-1)."
)
UNSCALED_RECOMPUTE = (
    "the forward recomputed in the backward misses the 1/√d_k: A must be the forward's own "
    "weights, softmax(Q·Kᵀ/√d_k + mask); the backward then divides dZ by √d_k as well."
)
DV_SCALED = (
    "dV is divided by √d_k too: the scale sits in the scores only (Z = Q·Kᵀ/√d_k); "
    "output = A·V has none, so dV = Aᵀ·dOut."
)
DV_NOT_TRANSPOSED = (
    "dV = A·dOut: output = A·V, so dV = Aᵀ·dOut (each key's value collects the gradient of "
    "the queries that read it)."
)
MASK_LEAKS = (
    "gradient flows through blocked positions: the backward uses weights computed without the "
    "mask; use the forward's masked A (0 where blocked), so no gradient passes there."
)
FINITE_BACK = (
    "a query whose every key is blocked still passes gradient: the mask is applied with a large"
    " finite number (such as −1e9, as masked_fill(mask, -1e9) puts in) instead of −∞, so that "
    "query's weights sum to 1 instead of being 0. With the course's −∞ mask and softmax, a "
    "fully blocked query has weights 0: its dQ row is 0 and it adds nothing to dK and dV."
)
HEADS_SHAPES = (
    "a shape error between the layer and its heads: the gradient that enters the heads is "
    "split like the heads were, dH = split_heads(dC, n_heads) of shape (..., h, T, d_k), and "
    "the heads' gradients are merged back, merge_heads(dQ_h) of shape (..., T, d_model), "
    "before the projections."
)
DC_NOT_TRANSPOSED = (
    "the merged heads' gradient is dOut·W_O: out = C·W_O with C the merged heads, so "
    "dC = dOut·W_Oᵀ (W_O transposed; dW_O = Cᵀ·dOut)."
)
DZ_MASKED = (
    "the mask is added to dZ (or dA): the mask belongs to the forward only, Z + M before the "
    "softmax. In the backward, A is 0 where a key is blocked, so dZ = softmax_backward(A, dA) "
    "is 0 there already; adding −∞ to a gradient makes NaN."
)
DA_IS_DOUT = (
    "softmax_backward is given dOut: its second argument is the weights' gradient "
    "dA = dOut·Vᵀ, of the weights' shape (..., T_q, T_k), not dOut (..., T_q, d_v)."
)
HEAD_NO_ROW_SUM = (
    "dZ = A·dA misses the softmax's row-sum term: dZ = A·(dA − Σ_k dA_k·A_k) with "
    "dA = dOut·Vᵀ (softmax_backward)."
)

DW_O_TRANSPOSED = (
    "W_O's gradient is transposed: out = C·W_O with C the merged heads, so "
    "dW_O = Cᵀ·dOut (rows are W_O's inputs), not dOutᵀ·C."
)
DX_ONE_PATH = (
    "dX has only the path through the queries: X makes Q, K and V, so "
    "dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ."
)
DX_NOT_TRANSPOSED = (
    "dX multiplies by the weights instead of their transposes: Q = X·W_Q, so "
    "dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ."
)
ALL_NOT_TRANSPOSED = (
    "the backward multiplies by the weights instead of their transposes: out = C·W_O gives "
    "dC = dOut·W_Oᵀ, and Q = X·W_Q gives dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ."
)
BARE_RESHAPE = (
    "the heads' gradients are put back with a bare reshape: merge_heads (swap the head and "
    "token axes, then reshape) undoes split_heads, in the backward as in the forward."
)
UNMASKED_BACK = (
    "the heads' backward gets no mask: pass the forward's mask (with its head axis) to "
    "attention_head_backward too, or gradient flows through blocked positions."
)
DW_NOT_SUMMED = (
    "the weights' gradients keep the batch axes: one W is shared by every sequence, so sum "
    "over them: dW_Q = Σ Xᵀ·dQ over the batch, shape (d_model, d_model)."
)
NO_W_O_BACK = (
    "the way back through the output projection is missing: out = C·W_O, so the merged "
    "heads get dC = dOut·W_Oᵀ, not dOut itself."
)
BARE_SPLIT = (
    "dOut·W_Oᵀ is split into heads with a bare reshape: split_heads (reshape, then swap the "
    "token and head axes) cuts each token's gradient into its heads, in the backward as in the "
    "forward."
)
DW_AVERAGED = (
    "the weights' gradients are averaged over the batch: the loss adds up every sequence's "
    "output, so its gradient adds up their contributions: sum over the batch axes, never mean."
)
ALWAYS_CAUSAL_BACK = (
    "the backward applies a causal mask of its own: these gradients are those of a causal "
    "layer, where this call asks for no causal mask. Use the mask argument only (none when it "
    "is None), as the forward does."
)
DW_O_FROM_X = (
    "dW_O uses X: out = C·W_O with C the merged heads (the attention's output before W_O), so "
    "dW_O = Cᵀ·dOut, not Xᵀ·dOut."
)
DX_MISSING_PATH = (
    "dX misses the path through {which}: X makes Q, K and V, so dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ."
)
DW_TRANSPOSED = (
    "the projections' gradients are transposed: Q = X·W_Q, so dW_Q = Xᵀ·dQ (and likewise "
    "for K and V), shape (d_model, d_model) with rows for X's columns."
)


# --------------------------------------------------------------------------
# softmax_backward
# --------------------------------------------------------------------------
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
    out.append((PLUS_SIGN, A * (dA + weighted)))
    out.append((MEAN_NOT_SUM, A * (dA - (dA * A).mean(axis=axis, keepdims=True))))
    last = axis in (-1, A.ndim - 1)
    if A.ndim >= 2 and last:
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


def work(call: Call) -> Call:
    """``call`` as a hidden test's last call, whose input is large enough that no central
    differences fit in the grader's time budget for it.

    A backward pass costs a few forward passes whatever the size of its input;
    central differences cost at least one forward pass (or, cleverly, the part of
    one that an entry touches: a key's entry touches every query's row) per number
    of the input, batched into stacks or not. On these inputs (heads of 256 tokens;
    a layer of width 256) that is 10^11 operations or more, minutes where the budget
    (:mod:`mhsa_helpers.budget`: 50 times the reference's time, plus 5 s) allows
    seconds. The budget is kept by the grader's clock, outside the answer's process,
    so nothing the answer does there can change it, unlike the count of its calls.
    Its catalogue is not computed (the size would make it slow): the reference
    alone judges it.
    """
    return Call(call.args, call.kwargs, {**call.context, "work": True}, calls=call.calls)


#: What a hidden test says of a backward that ran out of time on its large input.
WORK_SLOW = (
    "{name} took far longer than a backward pass on a large hidden input: central "
    "differences, batched or not, make forward passes for every number of the input, and no "
    "time budget fits them. Compute the gradient by the chain rule, with array operations "
    "over whole axes."
)


def work_error(name: str, call: Call, outcome) -> CheckFailed | None:
    """The failure of a :func:`work` call that ran out of time, or None for any other."""
    if call.context.get("work") and outcome.code == "slow":
        said = WORK_SLOW.format(name=name)
        return CheckFailed(said, public=said)
    return None


def _large_softmax_call(rng) -> Call:
    """Scores of 2048 numbers in 8 rows, some masked: the call whose function calls are counted."""
    Z = rng.normal(size=(2, 4, 256)) * 2
    Z[..., 200:] = -np.inf  # padded keys
    return _softmax_call(Z, rng, counted=True)


SOFTMAX_RULE = "dZ = A·(dA − Σ dA·A), the sum along the softmax's axis with keepdims=True."


class SoftmaxBackward(Check):
    name = "softmax_backward"
    passed = (
        "dZ = A·(dA − Σ dA·A), as central differences give it, on the students, a causal and "
        "a fully masked row, axis=-2, one and two batch axes and float32; and on a large "
        "input it is a backward pass (not a forward called again and again)."
    )
    passed_hidden = "matches on random shapes, axes, masks and batches."

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
            _against_differences(self.name, "dZ", got, numeric)


def _whole(name: str, got: tuple, expected: tuple, known: list) -> None:
    """Name the one catalogued mistake whose every part ``got`` matches, if just one does.

    A mistake in one gradient (dQ without its scale) and one in several (dQ and
    dK without it) agree on that gradient: only all the parts together tell them
    apart.
    """
    if all(close(g, e) for g, e in zip(got, expected, strict=True)):
        return
    whole = {
        h
        for h, w in known
        if w is not None and all(close(g, x) for g, x in zip(got, w, strict=True))
    }
    if len(whole) == 1:
        raise CheckFailed(f"{name}: {whole.pop()}")


def _order(name: str, got, expected, names) -> None:
    """Fail, naming the swap, where the returned parts are right but in each other's places."""
    said = diagnose_order(got, expected, names)
    if said is not None:
        raise CheckFailed(f"{name}: {said}")


def _against_differences(name: str, what: str, got, numeric) -> None:
    """Fail unless ``got`` is within LEARNING.md's bound of the central differences."""
    err = relative_error(got, numeric)
    if not err <= FD_BOUND:
        raise CheckFailed(
            f"{name}: {what} {agree(what, 'differs')} from central differences of sum(output·G) "
            f"(step {FD_STEP:g}) by a relative error of {err:.2g}, more than {FD_BOUND:g}.",
            public=f"{name}: {what} {agree(what, 'differs')} from central differences.",
        )


# --------------------------------------------------------------------------
# attention_head_backward
# --------------------------------------------------------------------------
def head_variant(Q, K, V, dOut, mask=None, **mistake) -> tuple:
    """``(dQ, dK, dV)`` of one head with at most one mistake switched on (float64)."""
    d_k = Q.shape[-1]
    scale = float(d_k) if mistake.get("by_d_k") else math.sqrt(d_k)
    if mistake.get("by_d_v"):
        scale = math.sqrt(V.shape[-1])
    with np.errstate(all="ignore"):
        unscaled = mistake.get("unscaled_recompute")
        Z = Q @ K.swapaxes(-1, -2) / (1.0 if unscaled else math.sqrt(d_k))  # (..., T_q, T_k)
        A = ref.softmax(Z if mask is None else Z + mask)
        if mistake.get("finite") and mask is not None:  # −1e9 where the mask has −∞
            blocked = np.broadcast_to(np.isneginf(mask), np.broadcast_shapes(Z.shape, mask.shape))
            finite = np.where(np.isneginf(mask), -1e9, mask)
            A = ref.softmax(
                np.where(blocked, -1e9, Z) if mistake["finite"] == "fill" else Z + finite
            )
        A_back = ref.softmax(Z) if mistake.get("leak") and mask is not None else A
        dA = dOut @ V.swapaxes(-1, -2)  # (..., T_q, T_k)
        if mistake.get("da_t"):
            dA = dA.swapaxes(-1, -2)  # (..., T_k, T_q): square only
        if mistake.get("no_row_sum"):
            dZ = A_back * dA
        elif mistake.get("skip_softmax"):
            dZ = dA
        elif mistake.get("zeroed_after") and mask is not None:
            A_back = np.where(np.isneginf(mask), 0.0, ref.softmax(Z))
            dZ = ref.softmax_backward(A_back, dA)
        else:
            dZ = ref.softmax_backward(A_back, dA, -2 if mistake.get("sm_axis") else -1)
        if mistake.get("dz_mask") and mask is not None:
            dZ = dZ + mask
        if mistake.get("times_sqrt"):
            scale = 1.0 / math.sqrt(d_k)
        dV = (A_back if mistake.get("dv") else A_back.swapaxes(-1, -2)) @ dOut
        if mistake.get("dv_scale"):
            dV = dV / scale
        dZq = dZ.swapaxes(-1, -2) if mistake.get("dq_t") else dZ
        dQ = dZq @ K / (1.0 if mistake.get("dq_scale") or mistake.get("scale") else scale)
        dZt = dZ if mistake.get("dk") else dZ.swapaxes(-1, -2)
        dK = dZt @ (K if mistake.get("dk_from_k") else Q)
        dK = dK / (1.0 if mistake.get("dk_scale") or mistake.get("scale") else scale)
    return dQ, dK, dV


def _with_causal(mask, T_q: int, T_k: int):
    """``mask`` and a causal mask together, or None where that changes nothing (or T_q ≠ T_k)."""
    if T_q != T_k or T_q < 2:
        return None
    causal = ref.causal_mask(T_q)  # (T, T)
    if mask is None:
        return causal
    blocked = np.isneginf(np.asarray(mask, dtype=np.float64))  # (..., T, T)
    both = blocked | np.isneginf(causal)  # (..., T, T)
    if not np.array_equal(both, np.broadcast_to(blocked, both.shape)):
        return np.where(both, -np.inf, 0.0)
    return None  # already causal: the mistake cannot show


#: One head's slips as :func:`head_variant` switches: ``(hint, switches, square only)``; the
#: layer's check names each too, seen through the layer.
HEAD_SLIPS = (
    (HEAD_NO_ROW_SUM, {"no_row_sum": True}, False),
    (DQ_NOT_SCALED, {"dq_scale": True}, False),
    (DK_NOT_SCALED, {"dk_scale": True}, False),
    (NOT_SCALED, {"scale": True}, False),
    (SCALED_BY_D_K, {"by_d_k": True}, False),
    (DK_NOT_TRANSPOSED, {"dk": True}, True),
    (DV_NOT_TRANSPOSED, {"dv": True}, True),
    (DQ_FROM_DZT, {"dq_t": True}, True),
    (DA_TRANSPOSED, {"da_t": True}, True),
    (SOFTMAX_BACK_AXIS, {"sm_axis": True}, False),
    (UNSCALED_RECOMPUTE, {"unscaled_recompute": True}, False),
    (DV_SCALED, {"dv_scale": True}, False),
    (TIMES_SQRT, {"times_sqrt": True}, False),
    (SOFTMAX_SKIPPED, {"skip_softmax": True}, False),
    (DK_FROM_K, {"dk_from_k": True}, True),
)
#: The switches whose mistake is no mistake where √d_k = 1.
SCALE_SLIPS = {
    "dq_scale",
    "dk_scale",
    "scale",
    "by_d_k",
    "unscaled_recompute",
    "dv_scale",
    "times_sqrt",
}


def head_mistakes(Q, K, V, dOut, mask=None) -> list:
    """``(hint, (dQ, dK, dV) or None)`` for the known mistakes of one head's backward."""
    square = Q.shape[-2] == K.shape[-2]
    out = [
        (hint, head_variant(Q, K, V, dOut, mask, **how) if square or not square_only else None)
        for hint, how, square_only in HEAD_SLIPS
        if Q.shape[-1] > 1 or not how.keys() & SCALE_SLIPS  # √1 = 1: no scale's mistake
    ]
    d_k, d_v = Q.shape[-1], V.shape[-1]
    if d_v != d_k:
        hint = (
            f"dQ and dK are divided by √d_v = √{d_v}, the width of the values; the scores "
            f"were divided by √d_k = √{d_k}, the width of the queries and keys, and so is dZ."
        )
        out.append((hint, head_variant(Q, K, V, dOut, mask, by_d_v=True)))
    every_key = fully_blocked(mask, (*Q.shape[:-1], K.shape[-2])) is not None
    if mask is not None and np.isneginf(mask).any() and not every_key:  # else NaN everywhere
        out.append((DZ_MASKED, head_variant(Q, K, V, dOut, mask, dz_mask=True)))
    if every_key:
        out += [(FINITE_BACK, head_variant(Q, K, V, dOut, mask, finite=f)) for f in ("fill", "add")]
    if mask is not None and np.isneginf(mask).any():
        out.append((ZEROED_AFTER, head_variant(Q, K, V, dOut, mask, zeroed_after=True)))
        out.append((MASK_LEAKS, head_variant(Q, K, V, dOut, mask, leak=True)))
    causal = _with_causal(mask, Q.shape[-2], K.shape[-2])
    if causal is not None:  # code for a decoder: causal whatever the mask argument says
        out.append((ALWAYS_CAUSAL_BACK, head_variant(Q, K, V, dOut, causal)))
    return out


def _triple(name: str, got, names=("dQ", "dK", "dV")) -> tuple:
    if not isinstance(got, tuple | list) or len(got) != len(names):
        raise CheckFailed(f"{name}: return a tuple ({', '.join(names)}).")
    return tuple(got)


def _head_call(rng, Q, K, V, mask=None, fd=False, dtype=np.float64, counted=False) -> Call:
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    dOut = rng.normal(size=(*lead, Q.shape[-2], V.shape[-1]))
    args = tuple(M.astype(dtype) for M in (Q, K, V, dOut))
    calls = call_bound(*args) if counted else None
    return Call(args if mask is None else (*args, mask), context={"fd": fd}, calls=calls)


def _large_head_call(rng) -> Call:
    """Two sequences of 2 heads, 16 tokens, d_k = 32, causal: the call whose calls are counted."""
    Q, K, V = (rng.normal(size=(2, 2, 16, 32)) for _ in range(3))
    return _head_call(rng, Q, K, V, ref.causal_mask(16), counted=True)


HEAD_RULE = (
    "dV = Aᵀ·dOut, dZ = softmax_backward(A, dOut·Vᵀ)/√d_k, dQ = dZ·K and dK = dZᵀ·Q, with A "
    "from one forward pass."
)


class AttentionHeadBackward(Check):
    name = "attention_head_backward"
    passed = (
        "dQ, dK and dV match, as central differences give them, on the song's head 1, causal "
        "and padding masks, T_q ≠ T_k, d_v ≠ d_k, masks with and without a head axis, one and "
        "two batch axes, a sequence whose every key is blocked, and float32; and on a large "
        "input it is a backward pass."
    )
    passed_hidden = "matches on random shapes, heads, masks and batches."

    def visible(self):
        e = get_example("song")
        Q, K, V = (ref.split_heads(M, 2)[0] for M in ref.project_qkv(e.X, *e.weights[:3]))
        rng = batch_rng()
        n = rng.normal
        heads = n(size=(2, 3, 4, 2)), n(size=(2, 3, 4, 2)), n(size=(2, 3, 4, 3))
        per_sequence = np.expand_dims(ref.padding_mask(np.array([4, 2]), 4), -3)  # (2, 1, 1, 4)
        causal = np.stack([ref.causal_mask(4), ref.sliding_window_mask(4, 2)])[:, None]
        return [
            _head_call(rng, Q, K, V, fd=True),
            _head_call(rng, Q, K, V, ref.causal_mask(6), fd=True),
            _head_call(rng, Q, K, V, ref.padding_mask(4, 6)),
            _head_call(rng, n(size=(3, 4)), n(size=(5, 4)), n(size=(5, 2)), fd=True),
            _head_call(rng, *heads, causal, fd=True),  # a mask with the head axis (2, 1, T, T)
            _head_call(rng, *heads, ref.causal_mask(4)),  # a mask without it
            _head_call(rng, *heads, per_sequence),
            _head_call(rng, Q, K, V, ref.padding_mask(0, 6)),  # every key blocked
            _head_call(rng, *heads, ref.causal_mask(4), dtype=np.float32),
            _head_call(rng, *(M[0] for M in heads), ref.padding_mask(np.array([4, 3, 0]), 4)),
            _large_head_call(rng),
        ]

    def hidden(self, rng):
        calls = []
        for kind in ("none", "causal", "padding"):
            T, d_k, d_v = (int(k) for k in rng.integers(2, 6, size=3))
            lead = random_shape(rng)
            Q, K = (rng.normal(size=(*lead, T, d_k)) for _ in range(2))
            V = rng.normal(size=(*lead, T, d_v))
            mask = {
                "none": None,
                "causal": ref.causal_mask(T),
                "padding": ref.padding_mask(int(rng.integers(1, T + 1)), T),
            }[kind]
            calls.append(_head_call(rng, Q, K, V, mask))
        Q, K, V = (rng.normal(size=(2, 2, 256, 64)) for _ in range(3))  # (B, h, T, d_k)
        causal = ref.causal_mask(256)
        return [*calls, _large_head_call(rng), work(_head_call(rng, Q, K, V, causal, counted=True))]

    def explain_error(self, call, outcome):
        """As :meth:`Check.explain_error`; dOut given to softmax_backward in dA's place is named,
        and the large hidden input's time out names central differences."""
        if (said := work_error(self.name, call, outcome)) is not None:
            return said
        _, K, _, dOut, *_ = call.args
        said = (outcome.error or "").split(" raised ", 1)[-1].replace(" ", "")
        weights = (*dOut.shape[:-1], K.shape[-2])  # (..., T_q, T_k)
        shapes = [str(tuple(s)).replace(" ", "").replace(",)", ")") for s in (dOut.shape, weights)]
        if "couldnotbebroadcast" in said and all(s in said for s in shapes):
            return CheckFailed(
                f"{self.name}: {DA_IS_DOUT} ({outcome.error})",
                public=said_publicly(self.name, outcome.code),
            )
        return super().explain_error(call, outcome)

    def too_many_calls(self, call, error):
        numbers = sum(np.size(a) for a in call.args[:4])
        return not_a_backward(self.name, error, numbers, HEAD_RULE)

    def catalogue(self, call):
        Q, K, V, dOut, *rest = (np.asarray(a, dtype=np.float64) for a in call.args)
        mask = rest[0] if rest else None
        known = [] if call.context.get("work") else head_mistakes(Q, K, V, dOut, mask)
        return ref.attention_head_backward(Q, K, V, dOut, mask), known

    def judge(self, call, got):
        got = _triple(self.name, got)
        expected, known = self.catalogue(call)
        _whole(self.name, got, expected, known)
        _order(self.name, got, expected, ("dQ", "dK", "dV"))
        for i, what in enumerate(("dQ", "dK", "dV")):
            wrong = [(h, None if w is None else w[i]) for h, w in known]
            compare(self.name, got[i], expected[i], what, wrong)
        got = tuple(
            as_result(self.name, g, w) for g, w in zip(got, ("dQ", "dK", "dV"), strict=True)
        )
        if call.context.get("fd"):
            Q, K, V, dOut, *rest = call.args
            mask = rest[0] if rest else None
            forward = (
                lambda q: ref.attention_head(q, K, V, mask)[0],
                lambda k: ref.attention_head(Q, k, V, mask)[0],
                lambda v: ref.attention_head(Q, K, v, mask)[0],
            )
            for i, (what, x) in enumerate(zip(("dQ", "dK", "dV"), (Q, K, V), strict=True)):
                numeric = central_differences(forward[i], x, dOut, FD_STEP)
                _against_differences(self.name, what, got[i], numeric)


# --------------------------------------------------------------------------
# multi_head_self_attention_backward
# --------------------------------------------------------------------------
def layer_variant(X, W_q, W_k, W_v, W_o, h, dOut, mask=None, **mistake) -> tuple:
    """``(dX, (dW_q, dW_k, dW_v, dW_o))`` with at most one mistake switched on (float64)."""
    Q, K, V = ref.project_qkv(X, W_q, W_k, W_v)  # (..., T, d_model) each
    Qh, Kh, Vh = (ref.split_heads(M, h) for M in (Q, K, V))  # (..., h, T, d_k) each
    M = ref.heads_mask(mask, X.ndim, h)  # (..., 1 or h, T, T), or None: the layer's mask rule
    with np.errstate(all="ignore"):
        heads, _ = ref.attention_head(Qh, Kh, Vh, M)
        merged = ref.merge_heads(heads)  # (..., T, d_model)
        dMerged = dOut @ (W_o if mistake.get("all_not_t") else W_o.T)  # (..., T, d_model)
        if mistake.get("no_w_o"):
            dMerged = dOut
        if mistake.get("dm_not_t"):
            dMerged = dOut @ W_o  # (..., T, d_model)
        if mistake.get("bare_split"):  # the token and head axes not swapped
            dH = dMerged.reshape(*dMerged.shape[:-2], h, -1, X.shape[-1] // h)  # (..., h, T, d_k)
        else:
            dH = ref.split_heads(dMerged, h)  # (..., h, T, d_k)
        M_back = None if mistake.get("unmasked_back") else M
        if mistake.get("head"):
            dQh, dKh, dVh = head_variant(Qh, Kh, Vh, dH, M_back, **mistake["head"])
        else:
            dQh, dKh, dVh = ref.attention_head_backward(Qh, Kh, Vh, dH, M_back)
        if mistake.get("bad_merge"):  # a bare reshape: the head and token axes not swapped
            dQ, dK, dV = (G.reshape(X.shape) for G in (dQh, dKh, dVh))
        else:
            dQ, dK, dV = (ref.merge_heads(G) for G in (dQh, dKh, dVh))  # (..., T, d_model)

    sequences = max(1, math.prod(X.shape[:-2]))

    def total(A, B):
        if mistake.get("not_summed"):
            return A.swapaxes(-1, -2) @ B  # (..., d_model, d_model)
        summed = A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])
        return summed / sequences if mistake.get("averaged") else summed

    not_t = mistake.get("dx_not_t") or mistake.get("all_not_t")
    t = (lambda W: W) if not_t else (lambda W: W.T)
    dX = dQ @ t(W_q) + dK @ t(W_k) + dV @ t(W_v)
    if mistake.get("one_path"):
        dX = dQ @ W_q.T
    if mistake.get("without"):  # one of the three paths left out
        paths = {"Q": dQ @ W_q.T, "K": dK @ W_k.T, "V": dV @ W_v.T}
        dX = sum(p for k, p in paths.items() if k != mistake["without"])
    dWs = [total(X, G) for G in (dQ, dK, dV)]
    if mistake.get("dw_t"):
        dWs = [W.swapaxes(-1, -2) for W in dWs]
    dW_o = total(dOut, merged) if mistake.get("dwo_t") else total(merged, dOut)
    if mistake.get("dwo_x"):
        dW_o = total(X, dOut)
    return dX, (*dWs, dW_o)


def layer_mistakes(X, W_q, W_k, W_v, W_o, h, dOut, mask=None) -> list:
    """``(hint, (dX, (dW_q, dW_k, dW_v, dW_o)))`` for the known mistakes of the layer."""
    args = (X, W_q, W_k, W_v, W_o, h, dOut, mask)
    d_k = X.shape[-1] // h
    out = [
        (DW_O_TRANSPOSED, layer_variant(*args, dwo_t=True)),
        (DX_ONE_PATH, layer_variant(*args, one_path=True)),
        (DX_NOT_TRANSPOSED, layer_variant(*args, dx_not_t=True)),
        (ALL_NOT_TRANSPOSED, layer_variant(*args, all_not_t=True)),
        (DW_TRANSPOSED, layer_variant(*args, dw_t=True)),
    ]
    out += [  # the heads are square: T queries, T keys
        (
            f"in the heads' backward (attention_head_backward): {hint}",
            layer_variant(*args, head=how),
        )
        for hint, how, _ in HEAD_SLIPS
        if d_k > 1 or not how.keys() & SCALE_SLIPS
    ]
    out.append((NO_W_O_BACK, layer_variant(*args, no_w_o=True)))
    out.append((DC_NOT_TRANSPOSED, layer_variant(*args, dm_not_t=True)))
    out.append((DW_O_FROM_X, layer_variant(*args, dwo_x=True)))
    for which, words in (("K", "the keys, dK·W_Kᵀ"), ("V", "the values, dV·W_Vᵀ")):
        out.append((DX_MISSING_PATH.format(which=words), layer_variant(*args, without=which)))
    if h > 1:
        out.append((BARE_RESHAPE, layer_variant(*args, bad_merge=True)))
        out.append((BARE_SPLIT, layer_variant(*args, bare_split=True)))
    if X.ndim > 2:
        out.append((DW_NOT_SUMMED, layer_variant(*args, not_summed=True)))
    if math.prod(X.shape[:-2]) > 1:
        out.append((DW_AVERAGED, layer_variant(*args, averaged=True)))
    M = ref.heads_mask(mask, X.ndim, h)  # (..., 1 or h, T, T), or None
    if fully_blocked(M, (*X.shape[:-2], h, X.shape[-2], X.shape[-2])) is not None:
        out += [(FINITE_BACK, layer_variant(*args, head={"finite": f})) for f in ("fill", "add")]
    if mask is not None and np.isneginf(mask).any():
        out.append((UNMASKED_BACK, layer_variant(*args, unmasked_back=True)))
    causal = _with_causal(mask, X.shape[-2], X.shape[-2])
    if causal is not None:
        out.append((ALWAYS_CAUSAL_BACK, layer_variant(*args[:-1], causal)))
    return out


_LAYER_PARTS = ("dX", "dW_q", "dW_k", "dW_v", "dW_o")


def _flat(pair) -> tuple | None:
    """``(dX, (dW_q, dW_k, dW_v, dW_o))`` as five parts, or None if it is not shaped so."""
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        return None
    dX, grads = pair
    if not isinstance(grads, tuple | list) or len(grads) != 4:
        return None
    return (dX, *grads)


def _layer_call(rng, X, Ws, h, mask=None, fd=False, dtype=np.float64, counted=False) -> Call:
    dOut = rng.normal(size=X.shape)
    args = (*(M.astype(dtype) for M in (X, *Ws)), h, dOut.astype(dtype))
    calls = call_bound(X, *Ws, dOut) if counted else None
    return Call(args if mask is None else (*args, mask), context={"fd": fd}, calls=calls)


def _large_layer_call(rng) -> Call:
    """Two sequences of 16 tokens, d_model = 64, 4 heads, causal: the calls are counted."""
    Ws = [rng.normal(size=(64, 64)) / 8 for _ in range(4)]
    return _layer_call(rng, rng.normal(size=(2, 16, 64)), Ws, 4, ref.causal_mask(16), counted=True)


LAYER_RULE = (
    "back through W_O (dC = dOut·W_Oᵀ, dW_O = Cᵀ·dOut), through the heads "
    "(attention_head_backward) and through the projections (dX = dQ·W_Qᵀ + dK·W_Kᵀ + "
    "dV·W_Vᵀ, dW_Q = Xᵀ·dQ …), from one forward pass."
)


class MultiHeadSelfAttentionBackward(Check):
    name = "multi_head_self_attention_backward"
    mask_rule = True
    passed = (
        "dX and the four weights' gradients match, as central differences give them, on the "
        "song (1 and 2 heads, causal), the question (4 heads), batches with a mask per "
        "sequence, masks with a head axis ((h, T, T), (B, 1, T, T), (B, 1, 1, T)), two batch "
        "axes with a sequence whose every key is blocked, and float32; and on a large input "
        "it is a backward pass."
    )
    passed_hidden = "matches on random shapes, heads, masks and batches."

    def visible(self):
        e, q = get_example("song"), get_example("question")
        rng = batch_rng()
        W6 = [rng.normal(size=(6, 6)) / math.sqrt(6) for _ in range(4)]
        per_sequence = np.stack([ref.causal_mask(3), ref.sliding_window_mask(3, 2)])  # (2, T, T)
        padding = ref.padding_mask(np.array([3, 2]), 3)[:, None]  # (B, 1, 1, T): a head axis
        return [
            _layer_call(rng, e.X, e.weights, 2, fd=True),
            _layer_call(rng, e.X, e.weights, 1, ref.causal_mask(e.T)),
            _layer_call(rng, q.X, q.weights, 4, ref.causal_mask(q.T)),
            _layer_call(rng, rng.normal(size=(2, 3, 6)), W6, 3, per_sequence, fd=True),
            _layer_call(rng, rng.normal(size=(2, 2, 3, 6)), W6, 2, ref.causal_mask(3)),
            _layer_call(rng, rng.normal(size=(2, 3, 6)), W6, 3, dtype=np.float32),
            # masks with their head axis (one axis more than X), as the forward takes them
            _layer_call(rng, e.X, e.weights, 2, per_head_mask(e.T, 2), fd=True),  # (h, T, T)
            _layer_call(rng, rng.normal(size=(2, 3, 6)), W6, 3, per_sequence[:, None]),
            _layer_call(rng, rng.normal(size=(2, 3, 6)), W6, 3, padding),  # (B, 1, 1, T)
            # two leading batch axes, one sequence with every key blocked (gradients 0 there)
            _layer_call(rng, rng.normal(size=(2, 2, 5, 6)), W6, 2, two_batch_axes_mask(5)),
            _large_layer_call(rng),  # last: the calls are counted
        ]

    def hidden(self, rng):
        calls = []
        for n in range(3):
            h, d_k, T = (int(k) for k in rng.integers(1, 4, size=3))
            d = h * d_k
            X = rng.normal(size=(*random_shape(rng), T + 1, d))
            Ws = [rng.normal(size=(d, d)) / math.sqrt(d) for _ in range(4)]
            mask = None if n == 0 else ref.causal_mask(T + 1)  # a layer causal always fails
            if n == 2:  # without or with its head axis
                mask = hidden_mask(rng, X.shape[:-2], T + 1, h)
            calls.append(_layer_call(rng, X, Ws, h, mask))
        X, Ws = rng.normal(size=(2, 64, 256)), [rng.normal(size=(256, 256)) / 16 for _ in range(4)]
        wide = work(_layer_call(rng, X, Ws, 4, ref.causal_mask(64), counted=True))
        return [*calls, _large_layer_call(rng), wide]

    def explain_error(self, call, outcome):
        """As :meth:`Check.explain_error`; a shape error between the layer and its heads names
        the split and the merge of the gradients, and the large hidden input's time out names
        central differences."""
        if (said := work_error(self.name, call, outcome)) is not None:
            return said
        error = outcome.error or ""
        said = error.split(" raised ", 1)[-1]
        shapes = ("mismatch in its core dimension", "could not be broadcast", "cannot reshape")
        plain = batch_axes_error(call.args, error, self.core_ndim) is None
        if (outcome.code or "").startswith("raised:") and plain and any(w in said for w in shapes):
            return CheckFailed(
                f"{self.name}: {HEADS_SHAPES} ({error})",
                public=said_publicly(self.name, outcome.code),
            )
        return super().explain_error(call, outcome)

    def too_many_calls(self, call, error):
        numbers = sum(np.size(a) for a in (*call.args[:5], call.args[6]))
        return not_a_backward(self.name, error, numbers, LAYER_RULE)

    def catalogue(self, call):
        X, W_q, W_k, W_v, W_o, h, dOut, *rest = call.args
        X, W_q, W_k, W_v, W_o, dOut = (
            np.asarray(a, dtype=np.float64) for a in (X, W_q, W_k, W_v, W_o, dOut)
        )
        mask = rest[0] if rest else None
        args = (X, W_q, W_k, W_v, W_o, h, dOut, mask)
        known = [] if call.context.get("work") else layer_mistakes(*args)
        return ref.multi_head_self_attention_backward(*args), known

    def judge(self, call, got):
        parts = _flat(got)
        if parts is None:
            raise CheckFailed(f"{self.name}: return (dX, (dW_q, dW_k, dW_v, dW_o)).")
        expected, known = self.catalogue(call)
        expected = _flat(expected)
        _whole(self.name, parts, expected, [(h, w and _flat(w)) for h, w in known])
        _order(self.name, parts, expected, _LAYER_PARTS)
        d = call.args[0].shape[-1]
        for i, what in enumerate(_LAYER_PARTS):
            shape = np.shape(parts[i])
            if i and len(shape) > 2 and shape[-2:] == (d, d):
                raise CheckFailed(f"{self.name}: {DW_NOT_SUMMED} ({what} has shape {shape}.)")
            wrong = [(h, None if w is None else _flat(w)[i]) for h, w in known]
            compare(self.name, parts[i], expected[i], what, wrong)
        parts = [as_result(self.name, p, w) for p, w in zip(parts, _LAYER_PARTS, strict=True)]
        if call.context.get("fd"):
            X, W_q, W_k, W_v, W_o, h, dOut, *rest = call.args
            mask = rest[0] if rest else None
            inputs = [X, W_q, W_k, W_v, W_o]
            for i, what in enumerate(_LAYER_PARTS):

                def forward(x, i=i):
                    args = [*inputs[:i], x, *inputs[i + 1 :]]
                    return ref.multi_head_self_attention(*args, h, mask)[0]

                numeric = central_differences(forward, inputs[i], dOut, FD_STEP)
                _against_differences(self.name, what, parts[i], numeric)
