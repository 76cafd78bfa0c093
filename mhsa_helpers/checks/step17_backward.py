"""After the extensions: the backward pass of the softmax, of one head, of the whole layer.

Each check compares the learner's gradients with the reference's and names
the catalogued mistake; on the calls marked ``fd`` it also holds them to
central differences of the scalar loss ``sum(output * G)`` (LEARNING.md: step
1e-6, relative error at most 1e-5), the way the notebook teaches to check a
gradient, so that a gradient is judged by its definition as well.
"""

from __future__ import annotations

import math

import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..gradcheck import central_differences, relative_error
from .core import (
    Call,
    Check,
    CheckFailed,
    as_result,
    batch_rng,
    close,
    compare,
    per_head_mask,
    random_shape,
)
from .wording import agree

#: The finite-difference bound of LEARNING.md.
FD_STEP, FD_BOUND = 1e-6, 1e-5

NO_ROW_SUM = (
    "dZ = A·dA misses the row-sum term: the softmax ties a row's entries together (its "
    "Jacobian is diag(a) − a·aᵀ), so dZ = A·(dA − Σ_k dA_k·A_k), the sum along the "
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

DQ_NOT_SCALED = "dQ misses the 1/√d_k: Z = Q·Kᵀ/√d_k, so dQ = dZ·K/√d_k."
DK_NOT_SCALED = "dK misses the 1/√d_k: Z = Q·Kᵀ/√d_k, so dK = dZᵀ·Q/√d_k."
NOT_SCALED = "dQ and dK miss the 1/√d_k of the scores: divide dZ by √d_k before using it."
SCALED_BY_D_K = "dQ and dK are divided by d_k; the scores were divided by √d_k, so is dZ."
DK_NOT_TRANSPOSED = (
    "dK = dZ·Q: the keys are dZ's columns, so dK = dZᵀ·Q/√d_k (shape (..., T_k, d_k))."
)
DV_NOT_TRANSPOSED = (
    "dV = A·dOut: output = A·V, so dV = Aᵀ·dOut (each key's value collects the gradient of "
    "the queries that read it)."
)
MASK_LEAKS = (
    "gradient flows through blocked positions: the backward uses weights computed without the "
    "mask; use the forward's masked A (0 where blocked), so no gradient passes there."
)
HEAD_NO_ROW_SUM = (
    "dZ = A·dA misses the softmax's row-sum term: dZ = A·(dA − Σ_k dA_k·A_k) with "
    "dA = dOut·Vᵀ (softmax_backward)."
)

DW_O_TRANSPOSED = (
    "W_O's gradient is transposed: out = M·W_O with M the merged heads, so "
    "dW_O = Mᵀ·dOut (rows are W_O's inputs), not dOutᵀ·M."
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
    "the backward multiplies by the weights instead of their transposes: out = M·W_O gives "
    "dM = dOut·W_Oᵀ, and Q = X·W_Q gives dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ."
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
    last = axis in (-1, A.ndim - 1)
    if A.ndim >= 2 and last:
        out.append((WRONG_AXIS, A * (dA - (dA * A).sum(axis=-2, keepdims=True))))
        if A.shape[-1] == A.shape[-2]:
            out.append((NO_KEEPDIMS, A * (dA - (dA * A).sum(axis=-1)[..., None, :])))
    if not last:  # the sums along the last axis: the axis argument ignored
        out.append((AXIS_IGNORED, ref.softmax_backward(A, dA)))
    return out


def _softmax_call(Z, rng, axis: int = -1, fd: bool = False, dtype=np.float64) -> Call:
    A = ref.softmax(Z, axis).astype(dtype)
    dA = rng.normal(size=Z.shape).astype(dtype)
    kwargs = {} if axis == -1 else {"axis": axis}
    return Call((A, dA), kwargs, context={"Z": Z, "fd": fd})


class SoftmaxBackward(Check):
    name = "softmax_backward"
    passed = (
        "dZ = A·(dA − Σ dA·A) on the students, a causal and a fully masked row, axis=-2, "
        "batches and float32, and as central differences give it."
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
        ]

    def hidden(self, rng):
        calls = []
        for axis in (-1, -1, -2):
            T_q, T_k = (int(n) for n in rng.integers(2, 7, size=2))
            Z = rng.normal(size=(*random_shape(rng), T_q, T_k)) * 3
            if axis == -1 and T_q == T_k:
                Z = Z + ref.causal_mask(T_q)
            calls.append(_softmax_call(Z, rng, axis=axis))
        return calls

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
    with np.errstate(all="ignore"):
        Z = Q @ K.swapaxes(-1, -2) / math.sqrt(d_k)  # (..., T_q, T_k)
        A = ref.softmax(Z if mask is None else Z + mask)
        A_back = ref.softmax(Z) if mistake.get("leak") and mask is not None else A
        dA = dOut @ V.swapaxes(-1, -2)  # (..., T_q, T_k)
        if mistake.get("no_row_sum"):
            dZ = A_back * dA
        else:
            dZ = ref.softmax_backward(A_back, dA)
        dV = (A_back if mistake.get("dv") else A_back.swapaxes(-1, -2)) @ dOut
        dQ = dZ @ K / (1.0 if mistake.get("dq_scale") or mistake.get("scale") else scale)
        dZt = dZ if mistake.get("dk") else dZ.swapaxes(-1, -2)
        dK = dZt @ Q / (1.0 if mistake.get("dk_scale") or mistake.get("scale") else scale)
    return dQ, dK, dV


def head_mistakes(Q, K, V, dOut, mask=None) -> list:
    """``(hint, (dQ, dK, dV) or None)`` for the known mistakes of one head's backward."""
    square = Q.shape[-2] == K.shape[-2]
    out = [
        (HEAD_NO_ROW_SUM, head_variant(Q, K, V, dOut, mask, no_row_sum=True)),
        (DQ_NOT_SCALED, head_variant(Q, K, V, dOut, mask, dq_scale=True)),
        (DK_NOT_SCALED, head_variant(Q, K, V, dOut, mask, dk_scale=True)),
        (NOT_SCALED, head_variant(Q, K, V, dOut, mask, scale=True)),
        (SCALED_BY_D_K, head_variant(Q, K, V, dOut, mask, by_d_k=True)),
        (DK_NOT_TRANSPOSED, head_variant(Q, K, V, dOut, mask, dk=True) if square else None),
        (DV_NOT_TRANSPOSED, head_variant(Q, K, V, dOut, mask, dv=True) if square else None),
    ]
    if mask is not None and np.isneginf(mask).any():
        out.append((MASK_LEAKS, head_variant(Q, K, V, dOut, mask, leak=True)))
    if Q.shape[-1] == 1:  # √1 = 1: the scale's mistakes are no mistakes here
        out = [(h, w) for h, w in out if h not in (DQ_NOT_SCALED, DK_NOT_SCALED, NOT_SCALED)]
    return out


def _triple(name: str, got, names=("dQ", "dK", "dV")) -> tuple:
    if not isinstance(got, tuple | list) or len(got) != len(names):
        raise CheckFailed(f"{name}: return a tuple ({', '.join(names)}).")
    return tuple(got)


def _head_call(rng, Q, K, V, mask=None, fd=False, dtype=np.float64) -> Call:
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    dOut = rng.normal(size=(*lead, Q.shape[-2], V.shape[-1]))
    args = tuple(M.astype(dtype) for M in (Q, K, V, dOut))
    return Call(args if mask is None else (*args, mask), context={"fd": fd})


class AttentionHeadBackward(Check):
    name = "attention_head_backward"
    passed = (
        "dQ, dK and dV match on the song's head 1, causal and padding masks, T_q ≠ T_k, "
        "d_v ≠ d_k, heads with and without the mask's head axis, float32, and as central "
        "differences give them."
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
        return calls

    def catalogue(self, call):
        Q, K, V, dOut, *rest = (np.asarray(a, dtype=np.float64) for a in call.args)
        mask = rest[0] if rest else None
        return ref.attention_head_backward(Q, K, V, dOut, mask), head_mistakes(Q, K, V, dOut, mask)

    def judge(self, call, got):
        got = _triple(self.name, got)
        expected, known = self.catalogue(call)
        _whole(self.name, got, expected, known)
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

    def total(A, B):
        if mistake.get("not_summed"):
            return A.swapaxes(-1, -2) @ B  # (..., d_model, d_model)
        return A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])

    not_t = mistake.get("dx_not_t") or mistake.get("all_not_t")
    t = (lambda W: W) if not_t else (lambda W: W.T)
    dX = dQ @ t(W_q) + dK @ t(W_k) + dV @ t(W_v)
    if mistake.get("one_path"):
        dX = dQ @ W_q.T
    dWs = [total(X, G) for G in (dQ, dK, dV)]
    if mistake.get("dw_t"):
        dWs = [W.swapaxes(-1, -2) for W in dWs]
    dW_o = total(dOut, merged) if mistake.get("dwo_t") else total(merged, dOut)
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
        (HEAD_NO_ROW_SUM, layer_variant(*args, head={"no_row_sum": True})),
        (SCALED_BY_D_K, layer_variant(*args, head={"by_d_k": True}) if d_k > 1 else None),
        (NOT_SCALED, layer_variant(*args, head={"scale": True}) if d_k > 1 else None),
    ]
    if h > 1:
        out.append((BARE_RESHAPE, layer_variant(*args, bad_merge=True)))
    if X.ndim > 2:
        out.append((DW_NOT_SUMMED, layer_variant(*args, not_summed=True)))
    if mask is not None and np.isneginf(mask).any():
        out.append((UNMASKED_BACK, layer_variant(*args, unmasked_back=True)))
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


def _layer_call(rng, X, Ws, h, mask=None, fd=False, dtype=np.float64) -> Call:
    dOut = rng.normal(size=X.shape)
    args = (*(M.astype(dtype) for M in (X, *Ws)), h, dOut.astype(dtype))
    return Call(args if mask is None else (*args, mask), context={"fd": fd})


class MultiHeadSelfAttentionBackward(Check):
    name = "multi_head_self_attention_backward"
    mask_rule = True
    passed = (
        "dX and the four weights' gradients match on the song (1 and 2 heads, causal), the "
        "question (4 heads), batches with a mask per sequence, masks with a head axis "
        "((h, T, T) on X (T, d_model), (B, 1, T, T) and (B, 1, 1, T) on a batch), float32, and "
        "as central differences give them."
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
        ]

    def hidden(self, rng):
        calls = []
        for _ in range(3):
            h, d_k, T = (int(k) for k in rng.integers(1, 4, size=3))
            d = h * d_k
            X = rng.normal(size=(*random_shape(rng), T + 1, d))
            Ws = [rng.normal(size=(d, d)) / math.sqrt(d) for _ in range(4)]
            calls.append(_layer_call(rng, X, Ws, h, ref.causal_mask(T + 1)))
        return calls

    def catalogue(self, call):
        X, W_q, W_k, W_v, W_o, h, dOut, *rest = call.args
        X, W_q, W_k, W_v, W_o, dOut = (
            np.asarray(a, dtype=np.float64) for a in (X, W_q, W_k, W_v, W_o, dOut)
        )
        mask = rest[0] if rest else None
        args = (X, W_q, W_k, W_v, W_o, h, dOut, mask)
        return ref.multi_head_self_attention_backward(*args), layer_mistakes(*args)

    def judge(self, call, got):
        parts = _flat(got)
        if parts is None:
            raise CheckFailed(f"{self.name}: return (dX, (dW_q, dW_k, dW_v, dW_o)).")
        expected, known = self.catalogue(call)
        expected = _flat(expected)
        _whole(self.name, parts, expected, [(h, w and _flat(w)) for h, w in known])
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
