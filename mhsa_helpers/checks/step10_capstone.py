"""Capstone: multi-query attention and the size of the KV cache."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .batches import SHAPE_ERRORS, batch_rng, random_shape
from .comparison import compare_head_outputs, head_weights
from .core import Call, Check, Opaque
from .failures import CheckFailed, said_publicly
from .hints import (
    MASK_IGNORED_HEADS,
    MASKS_WITH_HEAD_AXIS,
    MERGED_HEAD_AXIS_FIRST,
    NOT_SCALED,
    QUERY_HEADS_STRIDED,
    SQUARE_WEIGHTS_TRANSPOSED,
    TWO_AXES_FULLY_BLOCKED,
    W_O_MISSING,
    W_O_TRANSPOSED,
    WRONG_AXIS_HEADS,
    bare_reshape,
    by_d_model,
    narrow_weight_transposed,
)
from .masks import (
    HEAD_AXIS_TWICE,
    batched_mask_error,
    head_axis_twice,
    hidden_mask,
    lacks_head_axis,
    mask_has_head_axis,
    per_head,
    per_head_mask,
    per_sequence_mask,
    two_batch_axes_mask,
    without_head_axis,
)
from .relayed import core_sizes, qk_shapes
from .wording import number

#: The shape of multi-query attention's shared keys and values, and how they meet the heads.
SHARED_KV_HEAD_AXIS = (
    "give them a head axis of size 1, K[..., None, :, :] of shape (..., 1, T, d_k), so that "
    "they broadcast against every query head (..., h, T, d_k)."
)
SHARED_KV = (
    "K = X·W_K and V = X·W_V are one shared head of width d_k, (..., T, d_k): do not split "
    f"them into heads; {SHARED_KV_HEAD_AXIS}"
)

#: Only the first query head computed, its weights and output copied to every head.
ONE_QUERY_HEAD = (
    "every head has head 1's weights: only one query head is computed and copied to every "
    "head. In multi-query attention only K and V are shared; each head keeps its own queries: "
    "split_heads(X·W_Q) gives the n_heads query heads: run attention for every one of them."
)

#: The shared keys made with W_V and the shared values with W_K.
KV_SWAPPED = (
    "K and V are swapped: the keys are made with W_V and the values with W_K. The shared keys "
    "are K = X·W_K (what each query is compared with) and the shared values V = X·W_V (what "
    "the weights average)."
)

#: The query heads averaged into one, which every head then uses.
MEAN_QUERY_HEAD = (
    "the query heads are averaged into one (a mean over the head axis) and that one query head "
    "is copied to every head, so every head has the same weights. In multi-query attention "
    "only K and V are shared: each of the n_heads query heads, split_heads(X·W_Q), attends "
    "with its own queries."
)

#: W_K and W_V widened to n_heads·d_k columns by repeating each column in place (np.repeat).
COLUMNS_REPEATED = (
    "each column of W_K and W_V is repeated n_heads times in place (np.repeat along the "
    "columns), so after the split each head holds copies of a few of the shared head's "
    "columns, not the whole shared head: column c lands in columns c·n_heads to c·n_heads + "
    "n_heads − 1. Keep K = X·W_K as one shared head and give it a head axis of size 1, "
    "(X @ W_k)[..., None, :, :] (np.tile(W_k, n_heads), whole copies side by side, would "
    "work too)."
)

#: The queries split by a bare reshape to (..., h, T, d_k), and the heads merged back likewise.
QUERIES_BARE_RESHAPE = bare_reshape("the queries X·W_Q are")


def no_head_axis(
    k_shape: str = "(..., T, d_k)", q_shape: str = "(..., h, T, d_k)", front: bool | None = None
) -> str:
    """The hint for a shared K and V without a head axis, whose batch axis meets the heads'.

    With ``front``, K and V have their head axis of size 1 in front of the batch axes
    (``K[None]``), which lines them up with the query heads just as none does; with
    ``front`` False they have none; with None (the values cannot tell) either.
    """
    in_front = (
        "in front of the batch axes (K[None], np.expand_dims(K, 0), or np.repeat(K[None], h, "
        "axis=0))"
    )
    what = {
        True: f"the shared K and V have their head axis {in_front}, not at -3",
        False: "the shared K and V have no head axis",
        None: f"the shared K and V have no head axis at -3 (none at all, or one {in_front})",
    }[front]
    return (
        f"{what}: K of shape {k_shape} meets the query heads "
        f"{q_shape} with its axes lined up from the end, so its batch axis falls on the heads' "
        f"axis. As one shared head of width d_k, {SHARED_KV_HEAD_AXIS}"
    )


def _axes(n: int) -> str:
    """``n`` batch axes in words: "no batch axis", "one batch axis", "two batch axes"."""
    word = {0: "no", 1: "one", 2: "two", 3: "three"}.get(n, str(n))
    return f"{word} batch {'axis' if n < 2 else 'axes'}"


def copies_on_axis(k_shape: tuple, shared: tuple, h: int) -> str | None:
    """The hint for the shared K copied ``h`` times on a fixed axis that is not -3 here.

    ``k_shape`` is the shape of K that ``mh.attention_head`` refused, ``shared`` the
    shape of the one shared head ``(..., T, d_k)``; None unless ``k_shape`` is ``shared``
    with one axis of size ``h`` put in at one place (``np.stack([K] * h, axis=a)``).
    """
    places = [
        a
        for a in range(len(k_shape))
        if a != len(k_shape) - 3 and k_shape[a] == h and k_shape[:a] + k_shape[a + 1 :] == shared
    ]
    if h < 2 or len(places) != 1:
        return None
    a, batch = places[0], len(shared) - 2
    return (
        f"the n_heads = {h} copies of the shared K and V are stacked on axis {a} "
        f"(np.stack([K] * n_heads, axis={a}), say), K of shape {k_shape}: axis {a} is the head "
        f"axis only when X has exactly {_axes(a)}, and this X has {_axes(batch)}. Count from "
        "the end: the head axis is -3, np.stack(..., axis=-3), shape (..., h, T, d_k); or, as "
        f"one shared head, {SHARED_KV_HEAD_AXIS}"
    )


def mistakes(X, W_q, W_k, W_v, W_o, h, mask) -> list:
    """``(hint, wrong output, wrong weights)`` for the known mistakes of multi-query attention."""
    Qh = ref.split_heads(X @ W_q, h)  # (..., h, T, d_k)
    K, V = (X @ W_k)[..., None, :, :], (X @ W_v)[..., None, :, :]  # (..., 1, T, d_k): shared
    d_model, d_k = X.shape[-1], Qh.shape[-1]
    M = per_head(mask, X.ndim, h)  # (..., 1 or h, T, T): the layer's mask rule

    def run(scale=None, axis=-1, use_mask=True, W_out=W_o, M=M, V=V, Qh=Qh, K=K):
        with np.errstate(all="ignore"):
            Z = Qh @ K.swapaxes(-1, -2) / (scale or math.sqrt(d_k))  # (..., h, T, T)
            A = ref.softmax(Z + (M if use_mask else 0.0), axis=axis)
            heads = ref.merge_heads(A @ V)  # (..., T, d_model)
            return (heads @ W_out if W_out is not None else heads), A

    out = [
        (W_O_MISSING, *run(W_out=None)),
        (NOT_SCALED, *run(scale=1.0)),
        ("the shared values are computed with W_k: V = X·W_V.", *run(V=K)),
        (W_O_TRANSPOSED, *run(W_out=W_o.T)),
        (by_d_model(d_model, d_k), *run(scale=math.sqrt(d_model))),
        (WRONG_AXIS_HEADS, *run(axis=-2)),
        (SQUARE_WEIGHTS_TRANSPOSED, *run(Qh=ref.split_heads(X @ W_q.T, h), W_out=W_o.T)),
    ]
    if h > 1 and d_k > 1:  # query head i of the columns i, i + h, …
        Q = X @ W_q
        out.append((QUERY_HEADS_STRIDED, *run(Qh=np.stack([Q[..., i::h] for i in range(h)], -3))))
    if h > 1:  # the queries split, and the heads merged, by a bare reshape
        Q = X @ W_q
        bare = Q.reshape(*Q.shape[:-2], h, Q.shape[-2], d_k)  # (..., h, T, d_k), tokens mixed
        with np.errstate(all="ignore"):
            A = ref.softmax(bare @ K.swapaxes(-1, -2) / math.sqrt(d_k) + M)
            heads = A @ V  # (..., h, T, d_k)
        flat = heads.reshape(*heads.shape[:-3], heads.shape[-2], d_model)
        out.append((QUERIES_BARE_RESHAPE, flat @ W_o, A))
    if h > 1 and d_k > 1:  # the heads reshaped to (..., T, d_model) with the head axis in front
        with np.errstate(all="ignore"):
            A = ref.softmax(Qh @ K.swapaxes(-1, -2) / math.sqrt(d_k) + M)
            heads = A @ V  # (..., h, T, d_k)
        flat = heads.reshape(*heads.shape[:-3], heads.shape[-2], d_model)
        out.append((MERGED_HEAD_AXIS_FIRST, flat @ W_o, A))
    if h > 1:  # one query head (the first) computed and copied to every head
        out.append((ONE_QUERY_HEAD, *run(Qh=np.repeat(Qh[..., :1, :, :], h, axis=-3))))
        mean = np.broadcast_to(Qh.mean(axis=-3, keepdims=True), Qh.shape)  # averaged heads
        out.append((MEAN_QUERY_HEAD, *run(Qh=mean)))
    out.append((KV_SWAPPED, *run(K=V, V=K)))
    if h > 1 and d_k > 1:  # np.repeat(W_k, h, axis=1): column c copied h times side by side
        Kr, Vr = (ref.split_heads(np.repeat(S[..., 0, :, :], h, axis=-1), h) for S in (K, V))
        out.append((COLUMNS_REPEATED, *run(K=Kr, V=Vr)))
    if X.ndim > 2:  # K and V (..., T, d_k) without a head axis: the batch meets the heads
        try:
            out.append((no_head_axis(), *run(K=K[..., 0, :, :], V=V[..., 0, :, :])))
        except ValueError:
            pass  # numpy refuses (the batch and the heads differ): the error is read instead
    if mask is not None:
        out.append((MASK_IGNORED_HEADS, *run(use_mask=False)))
    raw = without_head_axis(mask, (*Qh.shape[:-1], Qh.shape[-2]))  # scores: (..., h, T, T)
    if raw is not None:
        out.append((lacks_head_axis(mask, X.shape), *run(M=raw)))
    twice = head_axis_twice(mask, (*Qh.shape[:-1], Qh.shape[-2]))  # (..., h, 1, T, T)
    if twice is not None:
        out.append((HEAD_AXIS_TWICE, *run(M=twice)))
    return out


class MultiQueryAttention(Check):
    name = "multi_query_attention"
    mask_rule = True
    passed = (
        "one shared K and V for all heads; matches on the question sentence, a batch, and "
        f"{MASKS_WITH_HEAD_AXIS}, and {TWO_AXES_FULLY_BLOCKED}."
    )
    passed_hidden = "matches on random shapes."

    def visible(self):
        q = get_example("question")
        rng = np.random.default_rng(3)
        calls = []
        for h in (2, 4):
            d_k = q.d_model // h
            W_k = ref.init_weights(q.d_model, d_k, rng)
            W_v = ref.init_weights(q.d_model, d_k, rng)
            args = (q.X, q.W_q, W_k, W_v, q.W_o, h)
            calls += [Call(args), Call((*args, ref.causal_mask(q.T)))]
        rng = batch_rng()
        X, W_q, W_o = rng.normal(size=(2, 5, 6)), rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
        W_k, W_v = rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
        per_sequence = ref.causal_mask(5) + ref.padding_mask(np.array([5, 4]), 5)  # (2, 5, 5)
        W_k2, W_v2 = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
        return [
            *calls,
            Call((X, W_q, W_k, W_v, W_o, 3, ref.causal_mask(5))),
            Call((X, W_q, W_k2, W_v2, W_o, 2, per_sequence)),  # batch of 2, 2 heads
            # masks with their head axis (one axis more than X): added as they are
            Call((X[0], W_q, W_k2, W_v2, W_o, 2, per_head_mask(5, 2))),  # (h, T, T)
            Call((X, W_q, W_k2, W_v2, W_o, 2, per_sequence[:, None])),  # (B, 1, T, T)
            Call(
                (X, W_q, W_k2, W_v2, W_o, 2, ref.padding_mask(np.array([5, 3]), 5)[:, None])
            ),  # (B, 1, 1, T)
            # two leading batch axes, one sequence with every key blocked (weights 0, output 0)
            Call((rng.normal(size=(2, 2, 5, 6)), W_q, W_k2, W_v2, W_o, 2, two_batch_axes_mask(5))),
        ]

    def hidden(self, rng):
        calls = []
        for _ in range(3):
            h, d_k, T = (int(n) for n in rng.integers(2, 5, size=3))
            d = h * d_k
            lead = random_shape(rng)
            X = rng.normal(size=(*lead, T, d))
            W_q, W_o = (rng.normal(size=(d, d)) for _ in range(2))
            W_k, W_v = (rng.normal(size=(d, d_k)) for _ in range(2))
            calls.append(Call((X, W_q, W_k, W_v, W_o, h, hidden_mask(rng, lead, T, h))))
        # a batch with a mask per sequence and no head axis, a query that reads nothing
        h, d_k, T, B = (int(n) for n in rng.integers(2, 5, size=4))
        d = h * d_k
        X = rng.normal(size=(B, T, d))
        W_q, W_o = (rng.normal(size=(d, d)) for _ in range(2))
        W_k, W_v = (rng.normal(size=(d, d_k)) for _ in range(2))
        calls.append(Call((X, W_q, W_k, W_v, W_o, h, per_sequence_mask(rng, (B,), T, T))))
        return calls

    def catalogue(self, call):
        X, W_q, W_k, W_v, W_o, h, *rest = call.args
        known = mistakes(X, W_q, W_k, W_v, W_o, h, rest[0] if rest else None)
        return ref.multi_query_attention(*call.args), [(hint, (o, a)) for hint, o, a in known]

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        known = [(hint, *wrong) for hint, wrong in known]
        compare_head_outputs(self.name, got, expected, known, head_weights())

    def relayed(self, call, said):
        """The shared K and V split into heads, read off the shapes mh.attention_head refused."""
        X, W_k, h = call.args[0], call.args[2], call.args[5]
        shapes = qk_shapes(said)
        widths = core_sizes(said)
        if shapes is not None and shapes[2] == "batch":  # K (..., T, d_k) with no head axis
            q_shape, k_shape = shapes[0], shapes[1]
            if k_shape == (*np.shape(X)[:-1], q_shape[-1]) and len(k_shape) > 2:
                return no_head_axis(str(k_shape), str(q_shape), front=False)
            front = k_shape[0] in (1, h) and k_shape[1:] == (*np.shape(X)[:-1], q_shape[-1])
            if front and len(k_shape) > 3:  # K[None], or repeated h times along axis 0
                return no_head_axis(str(k_shape), str(q_shape), front=True)
            return copies_on_axis(k_shape, (*np.shape(X)[:-1], q_shape[-1]), h)
        if shapes is not None and shapes[2] == "width":
            width, d_k = shapes[1][-1], shapes[0][-1]
        elif widths is not None:
            width, d_k = widths
        else:
            return None
        T = np.shape(X)[-2]
        d_model = np.shape(X)[-1]
        narrow = np.ndim(W_k) == 2 and np.shape(W_k)[-1] != d_model
        if narrow and widths == (np.shape(W_k)[-1], d_model):
            return narrow_weight_transposed("W_K", np.shape(W_k))  # X @ W_k.T
        if widths is not None and width == T != d_k:  # Q @ K.T: K (..., 1, T, d_k) reversed
            return (
                f"K.T reverses every axis of the shared K (..., 1, T, d_k), its head axis "
                f"too, so Q's d_k = {d_k} columns meet K's T = {T} rows: swap just its "
                "final two, np.swapaxes(K, -1, -2)."
            )
        if h > 1 and width * h == d_k == np.shape(W_k)[-1]:
            return (
                f"the shared K and V were split into n_heads = {h} heads of {width} columns "
                f"(d_k / n_heads), which the query heads of d_k = {d_k} columns cannot meet. "
                f"{SHARED_KV}"
            )
        return None

    def explain_error(self, call, outcome):
        """As :meth:`Check.explain_error`; a shape error names the shared K and V's shape."""
        said = (outcome.error or "").split(" raised ", 1)[-1]
        if mask_has_head_axis(call.args) and batched_mask_error(call.args, outcome.error or ""):
            return super().explain_error(call, outcome)  # the mask's head axis added twice
        shapes = (*SHAPE_ERRORS, "broadcastable batch axes")
        raised = (outcome.code or "").startswith("raised:")
        if raised and not self.relayed(call, said) and any(w in said for w in shapes):
            return CheckFailed(
                f"{self.name}: {SHARED_KV} ({outcome.error})",
                public=said_publicly(self.name, outcome.code),
            )
        return super().explain_error(call, outcome)


def _off_by_one(T: int, mq: bool, more: bool) -> str:
    """The hint for a KV cache counted over T + 1 (``more``) or T − 1 positions."""
    width = "d_k" if mq else "d_model"
    counted, wrong = ("T + 1", "too many") if more else ("T − 1", "too few")
    return (
        f" That is 2·({counted})·{width}: one position {wrong}. The cache holds one row of K "
        f"and one of V for each of the T = seq_len = {T} tokens (positions 0 … T − 1), so "
        f"2·T·{width}."
    )


class KVCacheSize(Check):
    name = "kv_cache_size"
    passed = "2·T·d_model numbers for multi-head, 2·T·d_k for multi-query."
    passed_hidden = "correct on random sizes."

    def visible(self):
        # three heads first: with two, 2·T·d_k (the test of multi_query reversed) is T·d_model
        # (K or V counted once); with d_k = 4 ≠ n_heads, 2·T·n_heads is no size either
        return self._calls([(10, 12, 3), (6, 4, 2), (1024, 512, 8)])

    def hidden(self, rng):
        sizes = []
        for k in range(4):
            h, d_k = (int(n) for n in rng.integers(1, 17, size=2))
            T = int(rng.integers(1, 5000))
            if k == 0:  # n_heads and T no byte size (2, 4, 8) and unequal: one reading each
                h, T = int(rng.choice([3, 5, 6, 7])), int(rng.integers(9, 5000))
            sizes.append((T, h * d_k, h))
        return self._calls(sizes)

    @staticmethod
    def _calls(sizes):
        return [Call((T, d, h, mq)) for T, d, h in sizes for mq in (False, True)]

    def judge(self, call, got):
        T, d, h, mq = call.args
        expected = ref.kv_cache_size(T, d, h, mq)
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            kind = got.type_name if isinstance(got, Opaque) else type(got).__name__
            raise CheckFailed(f"{self.name} should return a whole number, but returned {kind}.")
        if not isinstance(got, numbers.Integral):
            raise CheckFailed(
                f"{self.name} should return a whole number (an int), but returned "
                f"{type(got).__name__} {number(got)}; count with integers (// not /).",
                public=f"{self.name} should return a whole number (an int).",
            )
        if got == expected:
            return
        hint = ""
        reversed_test = not mq and h > 1 and got == 2 * T * (d // h)
        if reversed_test and got != T * d:
            hint = (
                " That is the multi-query size 2·T·d_k: is the test of multi_query the wrong "
                "way round? Without it, every head caches its own K and V, 2·T·d_model."
            )
        elif mq and got == 2 * T * d:
            hint = (
                f" That is 2·T·d_model, the multi-head size, as if multi_query=True were ignored "
                "or the one shared K/V head had the whole width d_model (n_heads set to 1 before "
                f"d_k = d_model // n_heads): it is d_k = {d // h} wide, so each token caches "
                "2·d_k numbers; take d_k from the n_heads given."
            )
        elif got in (T * d, T * d // h):
            hint = " Both K and V are cached: count them twice."
            if reversed_test:
                hint += " (Or the test of multi_query is the wrong way round: 2·T·d_k is the "
                hint += "multi-query size.)"
        elif got == 3 * expected // 2:
            hint = " Only K and V are cached (the queries are used once and dropped): 2·, not 3·."
        elif mq and h > 1 and got == T * (d // h) + T * d:
            hint = (
                f" That is T·d_k + T·d_model ({T * (d // h)} + {T * d}): one of K and V is shared "
                "and the other kept per head. Multi-query shares both: one K head and one V "
                f"head of width d_k = {d // h}, 2·T·d_k numbers."
            )
        elif got == 2 * T * (1 if mq else h) and d // h > 1 and (mq or h != d // h):
            vectors = "2·T" if mq else "2·T·n_heads"
            counted = "2·T·d_k" if mq else "2·T·n_heads·d_k, that is 2·T·d_model"
            hint = (
                f" That is {vectors}: it counts vectors (one row of K and one of V per token"
                f"{'' if mq else ' and head'}), not numbers: each row is d_k = d_model // "
                f"n_heads = {d // h} wide, so {counted}."
            )
        elif mq and h > 1 and got == 2 * T * h and h != d // h:
            hint = (
                f" That is 2·T·n_heads: the shared head caches d_k = d_model // n_heads = "
                f"{d // h} numbers per token for K and for V, not n_heads = {h}."
            )
        elif got % expected == 0 and (ratio := got // expected) in (T, h, 2, 4, 8) and ratio > 1:
            readings = [  # what a result this many times too many can be, each that fits
                f" That is T = {T} times too many (T·T positions): each token caches one row "
                "of K and one of V."
                if ratio == T
                else None,
                f" That is n_heads = {h} times too many: each head caches d_k = d_model / "
                "n_heads numbers per token for K and for V, not d_model."
                if ratio == h
                else None,
                f" That is {ratio} times the count: kv_cache_size counts numbers, not "
                "bytes (the bytes are the count times the size of one number, outside this "
                "function)."
                if ratio in (2, 4, 8)
                else None,
            ]
            readings = [r for r in readings if r]
            # alike on these sizes: say only the factor, never one reading for another
            hint = readings[0] if len(readings) == 1 else f" That is {ratio} times too many."
        elif T > 1 and got in (expected + expected // T, expected - expected // T):
            hint = _off_by_one(T, mq, got > expected)
        raise CheckFailed(
            f"{self.name}({T}, {d}, {h}, multi_query={mq}) returned {number(got)}, "
            f"expected {expected}.{hint}"
        )
