"""Step 9: the whole multi-head layer, heads concatenated and projected by W_O."""

from __future__ import annotations

import math

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .batches import batch_rng, random_shape
from .comparison import compare_head_outputs, head_weights
from .core import Call, Check
from .hints import (
    HEAD_COUNT_AND_SIZE_SWAPPED,
    HEADS_STRIDED,
    MASK_IGNORED_HEADS,
    MASK_ON_KEYS,
    MASKS_WITH_HEAD_AXIS,
    NOT_SCALED,
    PER_SEQUENCE,
    RESIDUAL_OUTSIDE,
    REVERSED_MERGE,
    TWO_AXES_FULLY_BLOCKED,
    W_O_MISSING,
    W_O_TRANSPOSED,
    WEIGHTS_TRANSPOSED,
    WEIGHTS_ZEROED_AFTER,
    WRONG_AXIS_HEADS,
    by_d_k,
    by_d_model,
    by_length,
    matches_on_random,
    song_and_question,
)
from .masks import (
    HEAD_AXIS_TWICE,
    head_axis_twice,
    hidden_mask,
    lacks_head_axis,
    per_head,
    per_head_mask,
    two_batch_axes_mask,
    without_head_axis,
)
from .step08_head_output import MASK_AFTER


def mistakes(X, W_q, W_k, W_v, W_o, h, mask) -> list:
    """``(hint, wrong output, wrong weights)`` for the known mistakes of the layer.

    The same mistakes as steps 4-8 (scale, softmax axis, mask) plus the
    layer's own (W_O, splitting, merging, one weight for Q, K and V), each
    computed with the mask the call gives.
    """
    Q, K, V = ref.project_qkv(X, W_q, W_k, W_v)
    T, d_model = X.shape[-2:]
    d_k = d_model // h
    M = per_head(mask, X.ndim, h)  # (..., 1 or h, T, T): the layer's mask rule

    def run(Qh, Kh, Vh, merge=ref.merge_heads, W_out=W_o, scale=None, residual=False, **how):
        with np.errstate(all="ignore"):
            Z = Qh @ Kh.swapaxes(-1, -2) / (scale or math.sqrt(d_k))  # (..., h, T, T)
            if how.get("raw_mask") is not None:
                A = ref.softmax(Z + how["raw_mask"], axis=-1)
            elif how.get("mask_after"):
                A = ref.softmax(Z) + M
            elif how.get("zeroed_after"):
                A = ref.softmax(Z) * np.exp(M)
            else:
                A = ref.softmax(Z + (0.0 if how.get("no_mask") else M), axis=how.get("axis", -1))
            heads = merge(A @ Vh)  # (..., T, h * d_k)
            out = heads @ W_out if W_out is not None else heads
            return (X + out if residual else out), A

    def bad_split(M_):
        *lead, T_, _ = M_.shape
        return M_.reshape(*lead, h, T_, d_k)

    def bad_merge(H):
        *lead, _, T_, _ = H.shape
        return H.reshape(*lead, T_, h * d_k)

    Qh, Kh, Vh = (ref.split_heads(M_, h) for M_ in (Q, K, V))  # (..., h, T, d_k) each
    out = [
        (W_O_MISSING, *run(Qh, Kh, Vh, W_out=None)),
        (
            "the heads are split by reshaping without the transpose: use split_heads "
            "(reshape to (..., T, h, d_k), then swap the T and h axes).",
            *run(bad_split(Q), bad_split(K), bad_split(V), merge=bad_merge),
        ),
        (
            "the heads are merged by reshaping without swapping the axes back: use merge_heads.",
            *run(Qh, Kh, Vh, merge=bad_merge),
        ),
        (
            "the same weight is used for Q, K and V: Q = X·W_Q, K = X·W_K, V = X·W_V.",
            *run(Qh, Qh, Qh),
        ),
        (by_d_model(d_model, d_k), *run(Qh, Kh, Vh, scale=math.sqrt(d_model))),
        (NOT_SCALED, *run(Qh, Kh, Vh, scale=1.0)),
        (W_O_TRANSPOSED, *run(Qh, Kh, Vh, W_out=W_o.T)),
        (
            f"{REVERSED_MERGE} before W_O, head 2 the next, … (merge_heads, no [::-1]).",
            *(
                run(Qh, Kh, Vh, merge=lambda H: ref.merge_heads(H[..., ::-1, :, :]))
                if h > 1
                else (None, None)
            ),
        ),
        (by_length(T, d_k), *run(Qh, Kh, Vh, scale=math.sqrt(T))),
        (by_d_k(d_k), *run(Qh, Kh, Vh, scale=float(d_k))),
        (WRONG_AXIS_HEADS, *run(Qh, Kh, Vh, axis=-2)),
    ]
    out.append((residual_inside(), *run(Qh, Kh, Vh, residual=True)))
    if d_k != h:  # d_k = n_heads: d_model // n_heads = d_k heads of n_heads columns each
        try:
            with np.errstate(all="ignore"):
                swapped = ref.multi_head_self_attention(X, W_q, W_k, W_v, W_o, d_k, mask)
            out.append((heads_swapped(h, d_k), *swapped))
        except ValueError:  # a mask with a head axis of size n_heads: no such layer runs
            pass
    transposed = (ref.split_heads(X @ W.T, h) for W in (W_q, W_k, W_v))
    out.append((WEIGHTS_TRANSPOSED, *run(*transposed, W_out=W_o.T)))
    if h > 1 and d_k > 1:  # head i from columns i, i + h, …
        strided = (np.stack([M_[..., i::h] for i in range(h)], axis=-3) for M_ in (Q, K, V))
        out.append((HEADS_STRIDED, *run(*strided)))
    if h > 1:
        blocks = np.zeros_like(W_o)  # W_O's diagonal blocks only: head i's columns alone
        for i in range(h):
            cols = slice(i * d_k, (i + 1) * d_k)
            blocks[cols, cols] = W_o[cols, cols]
        out.append((diagonal_blocks(d_k), *run(Qh, Kh, Vh, W_out=blocks)))
    if h > 1:  # the heads averaged, then copied side by side (tiled) or each column repeated
        for copy in (lambda H: np.tile(H, h), lambda H: np.repeat(H, h, axis=-1)):
            out.append((heads_averaged(h), *run(Qh, Kh, Vh, merge=lambda H, c=copy: c(H.mean(-3)))))
    if h > 1:  # one head over all d_model columns, its weights copied to every head
        for scale, said in ((d_model, f"√d_model = √{d_model}"), (d_k, f"√d_k = √{d_k}")):
            with np.errstate(all="ignore"):
                Qf, Kf, Vf = (M_[..., None, :, :] for M_ in (Q, K, V))  # (..., 1, T, d_model)
                A = ref.softmax(Qf @ Kf.swapaxes(-1, -2) / math.sqrt(scale) + M)
                wide = (A[..., :1, :, :] @ Vf)[..., 0, :, :] @ W_o
                A = np.broadcast_to(A, (*A.shape[:-3], h, *A.shape[-2:])).copy()
            out.append((one_full_width_head(said, h), wide, A))
    if mask is not None:
        first = first_head_mask(mask, X.ndim, h)
        if first is not None:
            out.append((FIRST_HEAD_MASK, *run(Qh, Kh, Vh, raw_mask=first)))
        out += [
            (MASK_IGNORED_HEADS, *run(Qh, Kh, Vh, no_mask=True)),
            (MASK_AFTER, *run(Qh, Kh, Vh, mask_after=True)),
            (WEIGHTS_ZEROED_AFTER, *run(Qh, Kh, Vh, zeroed_after=True)),
        ]
        # each head's keys blocked for all of its queries set to −1e9, no mask on the scores
        blocked = np.isneginf(M).all(axis=-2)[..., None]  # (..., 1 or h, T_k, 1)
        with np.errstate(all="ignore"):
            out.append(
                (MASK_ON_KEYS_HEADS, *run(Qh, np.where(blocked, -1e9, Kh), Vh, no_mask=True))
            )
        raw = without_head_axis(mask, (*Qh.shape[:-1], Kh.shape[-2]))  # scores: (..., h, T, T)
        if raw is not None:
            out.append((lacks_head_axis(mask, X.shape), *run(Qh, Kh, Vh, raw_mask=raw)))
        twice = head_axis_twice(mask, (*Qh.shape[:-1], Kh.shape[-2]))  # (..., h, 1, T, T)
        if twice is not None:
            out.append((HEAD_AXIS_TWICE, *run(Qh, Kh, Vh, raw_mask=twice)))
    return out


MASK_ON_KEYS_HEADS = (
    f"{MASK_ON_KEYS}, and a causal mask cannot be written into K at all (each query blocks "
    "different keys): add the mask to every head's scores Q·Kᵀ/√d_k before the softmax (pass "
    "it to attention_head), and leave K as it is."
)


def heads_swapped(h: int, d_k: int) -> str:
    """The sentence for the head count and the head size swapped: ``d_k`` heads of ``h``."""
    return (
        f"there are {d_k} heads of {h} columns where there should be n_heads = {h} heads of "
        f"d_k = {d_k} columns: {HEAD_COUNT_AND_SIZE_SWAPPED} (d_k = n_heads). "
        "Take d_k = d_model // n_heads and split into n_heads heads."
    )


def heads_averaged(h: int) -> str:
    """The sentence for the heads averaged (then copied ``h`` times) instead of concatenated."""
    return (
        f"the heads are averaged (then copied n_heads = {h} times) instead of concatenated: "
        "merge_heads puts the n_heads heads side by side, (..., T, n_heads·d_k) = (..., T, "
        "d_model), each head's d_k columns its own, before W_O."
    )


FIRST_HEAD_MASK = (
    "only the first head's mask is used, for every head: a mask with a head axis (one axis "
    "more than X, (..., h, T, T)) gives head i its own mask[..., i, :, :]; add the whole mask "
    "to the scores (..., h, T, T) as it is, not mask[..., 0, :, :]."
)


def one_full_width_head(scale: str, h: int) -> str:
    """The sentence for one head over all d_model columns whose weights are copied h times."""
    return (
        f"one head runs over all d_model columns (scaled by {scale}) and its weights are "
        f"copied to the n_heads = {h} heads: split Q, K and V into n_heads heads of d_k "
        "columns each (split_heads), each with its own attention, then merge them "
        "(merge_heads) before W_O."
    )


def residual_inside() -> str:
    """The sentence for a layer that adds its input X to its output (a residual inside)."""
    return (
        f"the output is X + the layer's output: {RESIDUAL_OUTSIDE}; return the merged heads "
        "times W_O alone."
    )


def diagonal_blocks(d_k: int) -> str:
    """The sentence for W_O applied to each head apart (its diagonal blocks of size ``d_k``)."""
    return (
        f"W_O is applied to each head apart, head i's {d_k} columns times W_O's diagonal block "
        f"[i·d_k:(i+1)·d_k, i·d_k:(i+1)·d_k] (d_k = {d_k}), so no output column mixes the "
        "heads: multiply the whole concatenation (..., T, d_model) by the whole W_O."
    )


def first_head_mask(mask, x_ndim: int, h: int):
    """A per-head mask as a layer that takes its first head's slice for every head uses it:
    ``(..., 1, T, T)``; None where the mask has no head axis of size ``h`` > 1."""
    mask = np.asarray(mask)
    if h < 2 or mask.ndim != x_ndim + 1 or mask.shape[-3] != h:
        return None
    return mask[..., :1, :, :]


def _per_sequence(T: int, B: int = 2) -> np.ndarray:
    """A causal mask and padding per sequence: shape (B, T, T), a different mask for each."""
    return ref.causal_mask(T) + ref.padding_mask(np.arange(T, T - B, -1), T)  # (B, T, T)


def mask_forms(rng, T: int, d: int, h: int, Ws: list) -> list:
    """Calls whose mask has its head axis: (h, T, T) on X (T, d), (B, 1, T, T) and
    (B, 1, 1, T) on X (B, T, d)."""
    lengths = np.arange(T, T - 2, -1)  # (B,) = (2,)
    return [
        Call((rng.normal(size=(T, d)), *Ws, h, per_head_mask(T, h))),
        Call((rng.normal(size=(2, T, d)), *Ws, h, _per_sequence(T)[:, None])),  # (B, 1, T, T)
        Call(
            (rng.normal(size=(2, T, d)), *Ws, h, ref.padding_mask(lengths, T)[:, None])
        ),  # (B, 1, 1, T)
    ]


def hidden_mask_forms(rng) -> list:
    """Hidden calls on a batch of as many sequences as heads, each with a mask of its own.

    Without a head axis (B, T, T), where a mask added as it is lines the batch up with the
    heads, silently; with one, (B, 1, 1, T), (B, 1, T, T) and a per-head (B, h, T, T) whose
    heads differ. One sequence has no real token: each of its queries has every key blocked.
    Then one sequence with its per-head mask (h, T, T), and a batch of shape (2, B) with a mask
    (2, B, T, T), and with the mask (B, T, T) of fewer axes than X.
    """
    h, d_k, T = (int(n) for n in rng.integers(2, 5, size=3))
    T, d, B = T + 1, h * d_k, h
    Ws = [rng.normal(size=(d, d)) / math.sqrt(d) for _ in range(4)]
    lengths = rng.integers(1, T + 1, size=B)
    lengths[rng.integers(B)] = 0
    padding = ref.padding_mask(lengths, T)  # (B, 1, T)
    causal = ref.causal_mask(T) + padding  # (B, T, T)
    heads = np.broadcast_to(per_head_mask(T, h), (B, h, T, T)) + padding[:, None]
    forms = [causal, padding[:, None], causal[:, None], heads]
    calls = [Call((rng.normal(size=(B, T, d)), *Ws, h, m)) for m in forms]
    # one sequence with its per-head mask (h, T, T), and two batch axes: code written for
    # exactly one batch axis (B, T, C = X.shape) fails on either
    calls.append(Call((rng.normal(size=(T, d)), *Ws, h, heads[0])))
    two = np.broadcast_to(causal, (2, B, T, T)).copy()
    calls.append(Call((rng.normal(size=(2, B, T, d)), *Ws, h, two)))
    # the batch's mask (B, T, T) on X (2, B, T, d): fewer axes than X, and no head axis either
    calls.append(Call((rng.normal(size=(2, B, T, d)), *Ws, h, causal)))
    return calls


class MultiHeadSelfAttention(Check):
    name = "multi_head_self_attention"
    mask_rule = True
    passed = (
        f"the layer matches on {song_and_question('1, 2, 4')}, {PER_SEQUENCE}, "
        f"{MASKS_WITH_HEAD_AXIS}, an odd d_model = 5, float32, {TWO_AXES_FULLY_BLOCKED}, and "
        "a mask (B, T, T) with fewer axes than X (2, B, T, d_model)."
    )
    passed_hidden = matches_on_random("batch axes and heads")

    def visible(self):
        e = get_example("song")
        q = get_example("question")
        rng = batch_rng()
        Ws = [rng.normal(size=(6, 6)) / math.sqrt(6) for _ in range(4)]
        odd, W5 = (
            rng.normal(size=(4, 5)),
            [rng.normal(size=(5, 5)) / math.sqrt(5) for _ in range(4)],
        )
        return [
            # first the question (d_model = 8, 4 heads): √d_model, d_k, √d_k and √T all differ
            Call((q.X, *q.weights, 4)),
            Call((q.X, *q.weights, 4, ref.causal_mask(q.T))),
            *(Call((e.X, *e.weights, h)) for h in (2, 1, 4)),
            Call((e.X, *e.weights, 2, ref.causal_mask(6))),
            Call((rng.normal(size=(2, 5, 6)), *Ws, 3, ref.causal_mask(5))),
            # a batch of 2 with a mask per sequence and 2 heads: a mask without its head
            # axis lines the batch up with the heads, silently
            Call((rng.normal(size=(2, 5, 6)), *Ws, 2, _per_sequence(5))),
            Call((rng.normal(size=(3, 5, 6)), *Ws, 2, _per_sequence(5, 3))),
            # a mask with its head axis (one axis more than X): added to the scores as it is
            *mask_forms(rng, 5, 6, 2, Ws),
            # an odd d_model = 5: one head, or five heads of one column
            *(Call((odd, *W5, h)) for h in (1, 5)),
            # single precision in: judged with the contract's float32 tolerance
            Call(
                (
                    rng.normal(size=(2, 5, 6)).astype(np.float32),
                    *(W.astype(np.float32) for W in Ws),
                    3,
                    ref.causal_mask(5),
                )
            ),
            # two leading batch axes, one sequence with every key blocked (weights 0, output 0)
            Call((rng.normal(size=(2, 2, 5, 6)), *Ws, 2, two_batch_axes_mask(5))),
            # a mask with fewer axes than X: one per sequence of the last batch axis, (3, T, T)
            # on X (2, 3, T, d_model), no head axis either; 3 heads meet its 3 sequences
            Call((rng.normal(size=(2, 3, 5, 6)), *Ws, 3, _per_sequence(5, 3))),
        ]

    def hidden(self, rng):
        calls = []
        for masked in (False, True, True):
            h, d_k, T = (int(n) for n in rng.integers(2, 5, size=3))
            T += 1
            d = h * d_k
            lead = random_shape(rng)
            X = rng.normal(size=(*lead, T, d))
            Ws = [rng.normal(size=(d, d)) / math.sqrt(d) for _ in range(4)]
            mask = hidden_mask(rng, lead, T, h)
            calls.append(Call((X, *Ws, h, mask) if masked else (X, *Ws, h)))
        return [*calls, *hidden_mask_forms(rng)]

    def catalogue(self, call):
        X, W_q, W_k, W_v, W_o, h, *rest = call.args
        known = mistakes(X, W_q, W_k, W_v, W_o, h, rest[0] if rest else None)
        return ref.multi_head_self_attention(*call.args), [(hint, (o, a)) for hint, o, a in known]

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        known = [(hint, *wrong) for hint, wrong in known]
        compare_head_outputs(self.name, got, expected, known, head_weights())
