"""The check of the whole layer's backward, ``multi_head_self_attention_backward``, and its
catalogue of slips (one head's among them, from :mod:`.step17_head_slips`)."""

from __future__ import annotations

import math

import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..gradcheck import central_differences
from ..reference.inputs import heads_mask
from .batches import SHAPE_ERRORS, batch_axes_error, batch_rng, random_shape
from .comparison import as_result, compare
from .core import Call, Check
from .failures import CheckFailed, said_publicly
from .hints import (
    GRADIENT_LEAKS,
    MASKS_WITH_HEAD_AXIS,
    PER_SEQUENCE,
    RESIDUAL_OUTSIDE,
    TWO_AXES_FULLY_BLOCKED,
    backward_passed,
    by_d_model,
    matches_on_random,
    song_and_question,
)
from .masks import (
    NAN_WHEN_ALL_BLOCKED,
    fully_blocked,
    hidden_mask,
    per_head_mask,
    two_batch_axes_mask,
)
from .step17_backward import (
    FD_STEP,
    against_differences,
    call_bound,
    not_a_backward,
    swapped_parts,
    whole_mistake,
    work,
    work_error,
)
from .step17_head_slips import (
    ALWAYS_CAUSAL_BACK,
    FINITE_BACK,
    HEAD_SLIPS,
    SCALE_SLIPS,
    head_variant,
    naive_softmax,
    with_causal,
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
    f"attention_head_backward too, or {GRADIENT_LEAKS}."
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
DW_O_FROM_X = (
    "dW_O uses X: out = C·W_O with C the merged heads (the attention's output before W_O), so "
    "dW_O = Cᵀ·dOut, not Xᵀ·dOut."
)
DX_MISSING_PATH = (
    "dX misses the path through {which}: X makes Q, K and V, so dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ."
)
PROJECTIONS_FROM_DC = (
    "the gradients through the projections (dX, dW_Q, dW_K, dW_V) come from dOut·W_Oᵀ, the "
    "gradient before the heads: "
    "between it and Q, K, V lies the attention, so back through it first, dQ_h, dK_h, dV_h = "
    "attention_head_backward(Q_h, K_h, V_h, split_heads(dOut·W_Oᵀ)), each merged back "
    "(merge_heads); then dW_Q = Xᵀ·dQ and dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ."
)
RESIDUAL_BACK = (
    f"dX has an extra + dOut, as if the layer had a residual connection: {RESIDUAL_OUTSIDE}. "
    "This layer returns attention(X)·W_O alone, so dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ, nothing "
    "more."
)
DW_O_FROM_V = (
    "dW_O uses V = X·W_V: out = C·W_O with C the merged heads' outputs (A·V, merged), so "
    "dW_O = Cᵀ·dOut."
)
DW_O_UNMASKED = (
    "dW_O uses heads computed without the mask: C, the merged heads that W_O multiplies, "
    "comes from the forward with its mask, the same one the heads' backward gets."
)
DW_BY_POSITIONS = (
    "the weights' gradients are divided by {label} = {n}: every position's contribution adds "
    "up, dW_Q = Σ Xᵀ·dQ over all of them, never their mean."
)
DH_DIAGONAL_BLOCKS = (
    "each head's gradient comes from W_O's diagonal block only (head i's rows and its own "
    "d_k output columns): out = C·W_O mixes every head into every output column, so head i "
    "gets dOut (all its columns) times the whole of W_O's rows for head i, transposed: "
    "dC = dOut·W_Oᵀ, then split_heads(dC, n_heads)."
)
DW_O_BY_HEADS = (
    "dW_O is divided by n_heads = {h}: W_O is one matrix that multiplies the merged heads C "
    "(all n_heads·d_k columns at once), not one per head to average, so dW_O = Cᵀ·dOut, "
    "with no division."
)

DW_O_BARE_RESHAPE = (
    "dW_O uses the heads (..., h, T, d_k) flattened with a bare reshape into (..., T, "
    "d_model): each row then holds pieces of one head's rows, not one token's heads. C, the "
    "input of W_O, is merge_heads(heads) (swap the head and token axes back, then reshape), "
    "so dW_O = Cᵀ·dOut with that C."
)
DX_PATHS_AVERAGED = (
    "dX is the mean of the three paths into X, not their sum: X makes Q, K and V, and the "
    "gradients of its three uses add up, dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ, with no division."
)


class Whole(str):
    """A hint that names a mistake only where every part of the result shows it (one factor
    on every gradient); a part alone (dW_Q) may show another mistake's factor."""


AVERAGED_TWICE = (
    "every gradient is {n} times too small: divided by {label} = {n} twice? dOut is already the "
    "loss's gradient, its average over {what} included: use it as it is."
)
D_MODEL_SCALE = (
    "in the heads' backward (attention_head_backward): dQ and dK are divided by √d_model = "
    "√{d}: each head divides its scores by its own √d_k = √{d_k} (d_model / n_heads), and dZ "
    "by the same."
)
DW_TRANSPOSED = (
    "the projections' gradients are transposed: Q = X·W_Q, so dW_Q = Xᵀ·dQ (and likewise "
    "for K and V), shape (d_model, d_model) with rows for X's columns."
)


def layer_variant(X, W_q, W_k, W_v, W_o, h, dOut, mask=None, **mistake) -> tuple:
    """``(dX, (dW_q, dW_k, dW_v, dW_o))`` with at most one mistake switched on (float64)."""
    Q, K, V = ref.project_qkv(X, W_q, W_k, W_v)  # (..., T, d_model) each
    Qh, Kh, Vh = (ref.split_heads(M, h) for M in (Q, K, V))  # (..., h, T, d_k) each
    M = heads_mask(mask, X.ndim, h)  # (..., 1 or h, T, T), or None: the layer's mask rule
    own = mistake.get("head", {})  # a forward of its own: its softmax, its scale
    with np.errstate(all="ignore"):
        heads, _ = ref.attention_head(Qh, Kh, Vh, None if mistake.get("forward_unmasked") else M)
        if own.get("naive") or "forward_scale" in own:
            Z = Qh @ Kh.swapaxes(-1, -2) / own.get("forward_scale", math.sqrt(Qh.shape[-1]))
            Z = Z if M is None else Z + M  # (..., h, T, T)
            heads = (naive_softmax(Z) if own.get("naive") else ref.softmax(Z)) @ Vh
        merged = ref.merge_heads(heads)  # (..., T, d_model)
        if mistake.get("divided"):  # dOut divided again by the loss's count
            dOut = dOut / mistake["divided"]
        dMerged = dOut @ (W_o if mistake.get("all_not_t") else W_o.T)  # (..., T, d_model)
        if mistake.get("no_w_o"):
            dMerged = dOut
        if mistake.get("dm_not_t"):
            dMerged = dOut @ W_o  # (..., T, d_model)
        if mistake.get("diagonal"):  # head i from W_O's block (rows and columns of head i)
            d_k = X.shape[-1] // h
            cut = [slice(i * d_k, (i + 1) * d_k) for i in range(h)]
            dMerged = np.concatenate([dOut[..., c] @ W_o[c, c].T for c in cut], axis=-1)
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
        if mistake.get("from_dc"):  # the attention skipped: every projection gets dC
            dQ = dK = dV = dMerged

    sequences = max(1, math.prod(X.shape[:-2]))

    def total(A, B):
        if mistake.get("not_summed"):
            return A.swapaxes(-1, -2) @ B  # (..., d_model, d_model)
        summed = A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])
        if mistake.get("dw_divided"):
            return summed / mistake["dw_divided"]
        return summed / sequences if mistake.get("averaged") else summed

    not_t = mistake.get("dx_not_t") or mistake.get("all_not_t")
    t = (lambda W: W) if not_t else (lambda W: W.T)
    dX = dQ @ t(W_q) + dK @ t(W_k) + dV @ t(W_v)
    if mistake.get("one_path"):
        dX = dQ @ W_q.T
    if mistake.get("residual"):
        dX = dX + dOut
    if mistake.get("dx_averaged"):
        dX = dX / 3
    if mistake.get("without"):  # one of the three paths left out
        paths = {"Q": dQ @ W_q.T, "K": dK @ W_k.T, "V": dV @ W_v.T}
        dX = sum(p for k, p in paths.items() if k != mistake["without"])
    dWs = [total(X, G) for G in (dQ, dK, dV)]
    if mistake.get("dw_t"):
        dWs = [W.swapaxes(-1, -2) for W in dWs]
    dW_o = total(dOut, merged) if mistake.get("dwo_t") else total(merged, dOut)
    if mistake.get("dwo_x"):
        dW_o = total(X, dOut)
    if mistake.get("dwo_v"):
        dW_o = total(X @ W_v, dOut)
    if mistake.get("dwo_bare"):  # the heads (..., h, T, d_k) reshaped without the swap
        dW_o = total(heads.reshape(X.shape), dOut)
    if mistake.get("dwo_by_heads"):
        dW_o = dW_o / h
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
    out.append((DW_O_FROM_V, layer_variant(*args, dwo_v=True)))
    out.append((PROJECTIONS_FROM_DC, layer_variant(*args, from_dc=True)))
    out.append((RESIDUAL_BACK, layer_variant(*args, residual=True)))
    out.append((DX_PATHS_AVERAGED, layer_variant(*args, dx_averaged=True)))
    positions = math.prod(X.shape[:-1])  # B·T
    count = "B·T" if X.ndim > 2 else "T"
    for n, label, what in (
        (positions, count, "the positions"),
        (X.size, f"{count}·d_model", "every entry"),
    ):
        if n > 1:
            said = Whole(AVERAGED_TWICE.format(n=n, label=label, what=what))
            out.append((said, layer_variant(*args, divided=n)))
    if positions > 1:
        said = DW_BY_POSITIONS.format(label=count, n=positions)
        out.append((said, layer_variant(*args, dw_divided=positions)))
    d = X.shape[-1]
    if d_k > 1 and h > 1:  # √d_model where √d_k belongs: in the backward, or the forward too
        said = D_MODEL_SCALE.format(d=d, d_k=d_k)
        out.append((said, layer_variant(*args, head={"scale_to": math.sqrt(d)})))
        said = by_d_model(d, d_k)
        out.append((said, layer_variant(*args, head={"forward_scale": math.sqrt(d)})))
    for which, words in (("K", "the keys, dK·W_Kᵀ"), ("V", "the values, dV·W_Vᵀ")):
        out.append((DX_MISSING_PATH.format(which=words), layer_variant(*args, without=which)))
    if h > 1:
        out.append((BARE_RESHAPE, layer_variant(*args, bad_merge=True)))
        out.append((BARE_SPLIT, layer_variant(*args, bare_split=True)))
        out.append((DH_DIAGONAL_BLOCKS, layer_variant(*args, diagonal=True)))
        out.append((DW_O_BY_HEADS.format(h=h), layer_variant(*args, dwo_by_heads=True)))
        out.append((DW_O_BARE_RESHAPE, layer_variant(*args, dwo_bare=True)))
    if X.ndim > 2:
        out.append((DW_NOT_SUMMED, layer_variant(*args, not_summed=True)))
    if math.prod(X.shape[:-2]) > 1:
        out.append((DW_AVERAGED, layer_variant(*args, averaged=True)))
    M = heads_mask(mask, X.ndim, h)  # (..., 1 or h, T, T), or None
    if fully_blocked(M, (*X.shape[:-2], h, X.shape[-2], X.shape[-2])) is not None:
        out.append((NAN_WHEN_ALL_BLOCKED, layer_variant(*args, head={"naive": True})))
        out += [(FINITE_BACK, layer_variant(*args, head={"finite": f})) for f in ("fill", "add")]
    if mask is not None and np.isneginf(mask).any():
        out.append((DW_O_UNMASKED, layer_variant(*args, forward_unmasked=True)))
        out.append((UNMASKED_BACK, layer_variant(*args, unmasked_back=True)))
    causal = with_causal(mask, X.shape[-2], X.shape[-2])
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
        backward_passed(
            "dX and the four weights' gradients match",
            f"{song_and_question('1', '2 and 4')}, {PER_SEQUENCE}, {MASKS_WITH_HEAD_AXIS}, "
            f"{TWO_AXES_FULLY_BLOCKED}, and float32",
        )
        + "."
    )
    passed_hidden = matches_on_random("heads, masks and batches")

    def visible(self):
        e, q = get_example("song"), get_example("question")
        rng = batch_rng()
        W6 = [rng.normal(size=(6, 6)) / math.sqrt(6) for _ in range(4)]
        per_sequence = np.stack([ref.causal_mask(3), ref.sliding_window_mask(3, 2)])  # (2, T, T)
        padding = ref.padding_mask(np.array([3, 2]), 3)[:, None]  # (B, 1, 1, T): a head axis
        # no size where √d_model = d_k (the song's 2 heads: √4 = 2), so that √d_model in
        # √d_k's place and d_k in it give different gradients
        return [
            _layer_call(rng, q.X, q.weights, 2, fd=True),
            _layer_call(rng, e.X, e.weights, 1, ref.causal_mask(e.T)),
            _layer_call(rng, q.X, q.weights, 4, ref.causal_mask(q.T)),
            _layer_call(rng, rng.normal(size=(2, 3, 6)), W6, 3, per_sequence, fd=True),
            _layer_call(rng, rng.normal(size=(2, 2, 3, 6)), W6, 2, ref.causal_mask(3)),
            _layer_call(rng, rng.normal(size=(2, 3, 6)), W6, 3, dtype=np.float32),
            # masks with their head axis (one axis more than X), as the forward takes them
            _layer_call(rng, q.X, q.weights, 2, per_head_mask(q.T, 2), fd=True),  # (h, T, T)
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
        # a mask per sequence without its head axis (B, T, T), causal and padded, one sequence
        # with every key blocked
        B, h, d_k, T = (int(k) for k in rng.integers(2, 4, size=4))
        lengths = rng.integers(1, T + 2, size=B)  # every other sequence reads a key
        lengths[rng.integers(B)] = 0
        mask = ref.causal_mask(T + 1) + ref.padding_mask(lengths, T + 1)  # (B, T, T)
        Ws = [rng.normal(size=(h * d_k, h * d_k)) / math.sqrt(h * d_k) for _ in range(4)]
        calls.append(_layer_call(rng, rng.normal(size=(B, T + 1, h * d_k)), Ws, h, mask))
        # a mask with its head axis, one per head (h, T, T): it is added as it is
        h, d_k, T = (int(k) for k in rng.integers(2, 4, size=3))
        Ws = [rng.normal(size=(h * d_k, h * d_k)) / math.sqrt(h * d_k) for _ in range(4)]
        X = rng.normal(size=(T + 1, h * d_k))
        calls.append(_layer_call(rng, X, Ws, h, per_head_mask(T + 1, h)))
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
        shapes = SHAPE_ERRORS
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
        whole_mistake(self.name, parts, expected, [(h, w and _flat(w)) for h, w in known])
        swapped_parts(self.name, parts, expected, _LAYER_PARTS)
        d = call.args[0].shape[-1]
        for i, what in enumerate(_LAYER_PARTS):
            shape = np.shape(parts[i])
            if i and len(shape) > 2 and shape[-2:] == (d, d):
                raise CheckFailed(f"{self.name}: {DW_NOT_SUMMED} ({what} has shape {shape}.)")
            wrong = [
                (h, None if w is None or isinstance(h, Whole) else _flat(w)[i]) for h, w in known
            ]
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
                against_differences(self.name, what, parts[i], numeric)
