"""One head's backward slips: their hints and the gradients each gives, for the head's check
and the layer's (which names each, seen through the layer)."""

from __future__ import annotations

import math

import numpy as np

from .. import reference as ref
from .hints import (
    ADD_MASK,
    FINITE_MASK,
    FULLY_BLOCKED_QUERY,
    GRADIENT_LEAKS,
    MASK_ARGUMENT_ONLY,
    NO_CAUSAL_ASKED,
    QK_WIDTH,
)
from .masks import NAN_WHEN_ALL_BLOCKED, fully_blocked

DQ_NOT_SCALED = "dQ misses the 1/√d_k: Z = Q·Kᵀ/√d_k, so dQ = dZ·K/√d_k."
DK_NOT_SCALED = "dK misses the 1/√d_k: Z = Q·Kᵀ/√d_k, so dK = dZᵀ·Q/√d_k."
NOT_SCALED = "dQ and dK miss the 1/√d_k of the scores: divide dZ by √d_k before using it."
SCALED_BY_D_K = (
    "dQ and dK are divided by d_k: the 1/√d_k is applied twice (to dZ, then to dQ and dK again, "
    "or as / d_k). The scores were divided by √d_k once, so divide once: dQ = dZ·K/√d_k and "
    "dK = dZᵀ·Q/√d_k."
)
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
DQ_FROM_Q = (
    "dQ = dZ·Q: Z = Q·Kᵀ/√d_k, so the queries' gradient takes the keys: dQ = dZ·K/√d_k (and "
    "dK = dZᵀ·Q/√d_k)."
)
DK_FROM_K = "dK = dZᵀ·K: Z = Q·Kᵀ/√d_k, so the keys' gradient takes the queries: dK = dZᵀ·Q/√d_k."
ZEROED_AFTER = (
    "the weights are masked after the softmax (A·(mask == 0)), so their rows no longer sum to "
    f"1: {ADD_MASK}, as the forward does."
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
    f"{GRADIENT_LEAKS}: the backward uses weights computed without the "
    "mask; use the forward's masked A (0 where blocked), so no gradient passes there."
)
FORWARD_UNMASKED = (
    "the forward pass inside the backward runs without the mask (attention_head(Q, K, V)), "
    "so A holds the weights of unmasked attention, and dV = Aᵀ·dOut and dZ = "
    "softmax_backward(A, dA) are taken from it; zeroing dZ where the mask blocks afterwards "
    "does not fix A, dV or dZ's other entries. Pass the mask to the forward, "
    "attention_head(Q, K, V, mask): its A is 0 where a key is blocked, and so is dZ there."
)
FINITE_BACK = (
    f"{FULLY_BLOCKED_QUERY} still passes gradient: {FINITE_MASK}, so that "
    "query's weights sum to 1 instead of being 0. With the course's −∞ mask and softmax, a "
    "fully blocked query has weights 0: its dQ row is 0 and it adds nothing to dK and dV."
)
DZ_MASKED = (
    "the mask is added to dZ (or dA): the mask belongs to the forward only, Z + M before the "
    "softmax. In the backward, A is 0 where a key is blocked, so dZ = softmax_backward(A, dA) "
    "is 0 there already; adding −∞ to a gradient makes NaN."
)
HEAD_NO_ROW_SUM = (
    "dZ = A·dA misses the softmax's row-sum term: dZ = A·(dA − Σ_k dA_k·A_k) with "
    "dA = dOut·Vᵀ (softmax_backward)."
)
ALWAYS_CAUSAL_BACK = (
    "the backward applies a causal mask of its own: these gradients are those of a causal "
    f"layer, {NO_CAUSAL_ASKED}. Use {MASK_ARGUMENT_ONLY}, as the forward does."
)


def naive_softmax(Z) -> np.ndarray:
    """A softmax over the last axis that subtracts the row's maximum, as most write it: NaN on
    a row whose every score is −∞ (−∞ − (−∞)); warnings silenced."""
    with np.errstate(all="ignore"):
        E = np.exp(Z - Z.max(axis=-1, keepdims=True))
        return E / E.sum(axis=-1, keepdims=True)


def head_variant(Q, K, V, dOut, mask=None, **mistake) -> tuple:
    """``(dQ, dK, dV)`` of one head with at most one mistake switched on (float64)."""
    d_k = Q.shape[-1]
    scale = float(d_k) if mistake.get("by_d_k") else math.sqrt(d_k)
    if mistake.get("by_d_v"):
        scale = math.sqrt(V.shape[-1])
    root = mistake.get("forward_scale", math.sqrt(d_k))  # the forward's, recomputed
    scale = mistake.get("scale_to", mistake.get("forward_scale", scale))
    with np.errstate(all="ignore"):
        unscaled = mistake.get("unscaled_recompute")
        Z = Q @ K.swapaxes(-1, -2) / (1.0 if unscaled else root)  # (..., T_q, T_k)
        A = ref.softmax(Z if mask is None else Z + mask)
        if mistake.get("naive"):  # NaN on a fully blocked row
            A = naive_softmax(Z if mask is None else Z + mask)
        if mistake.get("finite") and mask is not None:  # −1e9 where the mask has −∞
            blocked = np.broadcast_to(np.isneginf(mask), np.broadcast_shapes(Z.shape, mask.shape))
            finite = np.where(np.isneginf(mask), -1e9, mask)
            A = ref.softmax(
                np.where(blocked, -1e9, Z) if mistake["finite"] == "fill" else Z + finite
            )
        leak = mistake.get("leak") or mistake.get("unmasked_forward")
        A_back = ref.softmax(Z) if leak and mask is not None else A
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
        if mistake.get("unmasked_forward") and mask is not None:  # dZ zeroed where blocked
            dZ = np.where(np.isneginf(mask), 0.0, dZ)
        if mistake.get("times_sqrt"):
            scale = 1.0 / math.sqrt(d_k)
        dV = (A_back if mistake.get("dv") else A_back.swapaxes(-1, -2)) @ dOut
        if mistake.get("dv_scale"):
            dV = dV / scale
        dZq = dZ.swapaxes(-1, -2) if mistake.get("dq_t") else dZ
        dQ = dZq @ (Q if mistake.get("dq_from_q") else K)
        dQ = dQ / (1.0 if mistake.get("dq_scale") or mistake.get("scale") else scale)
        dZt = dZ if mistake.get("dk") else dZ.swapaxes(-1, -2)
        dK = dZt @ (K if mistake.get("dk_from_k") else Q)
        dK = dK / (1.0 if mistake.get("dk_scale") or mistake.get("scale") else scale)
    return dQ, dK, dV


def with_causal(mask, T_q: int, T_k: int):
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
    (DQ_FROM_Q, {"dq_from_q": True}, True),
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
            f"were divided by √d_k = √{d_k}, {QK_WIDTH}, and so is dZ."
        )
        out.append((hint, head_variant(Q, K, V, dOut, mask, by_d_v=True)))
    for T, axis in by_positions(Q.shape[-2], K.shape[-2], d_k):
        hint = scaled_by_positions(T, axis, d_k)
        out.append((hint, head_variant(Q, K, V, dOut, mask, scale_to=math.sqrt(T))))
        out.append((hint, head_variant(Q, K, V, dOut, mask, forward_scale=math.sqrt(T))))
    every_key = fully_blocked(mask, (*Q.shape[:-1], K.shape[-2])) is not None
    if mask is not None and np.isneginf(mask).any() and not every_key:  # else NaN everywhere
        out.append((DZ_MASKED, head_variant(Q, K, V, dOut, mask, dz_mask=True)))
    if every_key:
        out.append((NAN_WHEN_ALL_BLOCKED, head_variant(Q, K, V, dOut, mask, naive=True)))
        out += [(FINITE_BACK, head_variant(Q, K, V, dOut, mask, finite=f)) for f in ("fill", "add")]
    if mask is not None and np.isneginf(mask).any():
        out.append((ZEROED_AFTER, head_variant(Q, K, V, dOut, mask, zeroed_after=True)))
        out.append((MASK_LEAKS, head_variant(Q, K, V, dOut, mask, leak=True)))
        out.append((FORWARD_UNMASKED, head_variant(Q, K, V, dOut, mask, unmasked_forward=True)))
    causal = with_causal(mask, Q.shape[-2], K.shape[-2])
    if causal is not None:  # code for a decoder: causal whatever the mask argument says
        out.append((ALWAYS_CAUSAL_BACK, head_variant(Q, K, V, dOut, causal)))
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    shared = [n for n, M in zip("QKV", (Q, K, V), strict=True) if M.shape[:-2] != lead]
    if shared:  # an input shared by the batch: its gradient is the sum of every sequence's
        full = [np.broadcast_to(M, (*lead, *M.shape[-2:])) for M in (Q, K, V)]
        out.append((not_summed_back(shared, lead), ref.attention_head_backward(*full, dOut, mask)))
        # the gradient of a shared input averaged over the sequences it serves, not summed
        counts = [math.prod(lead) // math.prod(M.shape[:-2]) for M in (Q, K, V)]
        right = ref.attention_head_backward(Q, K, V, dOut, mask)
        averaged = tuple(g / n for g, n in zip(right, counts, strict=True))
        served = {n: counts["QKV".index(n)] for n in shared}
        out.append((averaged_back(served), averaged))
    return out


def by_positions(T_q: int, T_k: int, d_k: int) -> list[tuple[int, str]]:
    """``(T, what T counts)`` for a scale taken from the number of positions: of the queries
    (Q.shape[-2]) or of the keys (K.shape[-2]); none where √T = √d_k (no mistake then)."""
    if T_q == T_k:
        return [(T_q, "positions")] if T_q != d_k else []
    return [(T, what) for T, what in ((T_q, "queries"), (T_k, "keys")) if T != d_k]


def scaled_by_positions(T: int, what: str, d_k: int) -> str:
    """The hint for dQ and dK divided by √T, the number of ``what``, instead of √d_k."""
    axis = {"positions": "Q.shape[-2]", "queries": "Q.shape[-2]", "keys": "K.shape[-2]"}[what]
    return (
        f"dQ and dK are divided by √T = √{T}, T the number of {what} ({axis}): the scores were "
        f"divided by √d_k = √{d_k}, {QK_WIDTH} ({axis[0]}.shape[-1]), and so is dZ."
    )


def averaged_back(served: dict[str, int]) -> str:
    """The hint for the gradients of shared inputs averaged over the sequences they serve
    (``served``: input name → how many sequences share it) instead of summed."""
    names = " and ".join(f"d{n}" for n in served)
    counts = set(served.values())
    if len(counts) == 1:
        verb = "is" if len(served) == 1 else "are"
        said = f"{names} {verb} averaged over the {counts.pop()} sequences that share "
        said += " and ".join(served)
    else:
        said = "the shared inputs' gradients are averaged, " + ", ".join(
            f"d{n} over the {c} sequences that share {n}" for n, c in served.items()
        )
    return (
        f"{said} (a mean over the broadcast axes): each sequence adds its own gradient to a "
        "shared input, so sum over those axes, not mean."
    )


def not_summed_back(shared: list[str], lead: tuple) -> str:
    """The hint for gradients left with the batch axes their inputs were broadcast along."""
    names, grads = " and ".join(shared), " and ".join(f"d{n}" for n in shared)
    one = len(shared) == 1
    return (
        f"{grads} {'keeps' if one else 'keep'} the batch axes {names} "
        f"{'was' if one else 'were'} broadcast along: {names} {'serves' if one else 'serve'} "
        f"every sequence of the batch {lead}, so each gradient is the sum of every sequence's: "
        f"sum {grads} over the batch axes {names} {'lacks' if one else 'lack'} and over "
        f"{'its' if one else 'their'} axes of size 1 (keepdims=True there), back to "
        f"{'its' if one else 'their'} own shape."
    )
