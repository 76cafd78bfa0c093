"""Extension 2: grouped-query attention, n_heads query heads sharing n_kv_heads K/V heads.

Judged by the extensions' contract (EXTENSIONS.md): the contract's tolerance
by the inputs' precision, warnings are errors, inputs must not change, and
a ValueError (with a message) where n_kv_heads does not divide n_heads or
n_heads does not divide d_model.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .batches import batch_axes_error, batch_rng, random_shape
from .comparison import as_pair, close, compare, head_weights, precision
from .core import Call, Check, Outcome
from .failures import CheckFailed
from .hints import (
    MASK_IGNORED_HEADS,
    MERGED_HEAD_AXIS_FIRST,
    NOT_SCALED,
    QUERY_HEADS_STRIDED,
    SQUARE_WEIGHTS_TRANSPOSED,
    W_O_MISSING,
    W_O_TRANSPOSED,
    WRONG_AXIS_HEADS,
    by_d_model,
    every_kind_of_mask,
    matches_on_random,
    narrow_weight_transposed,
    not_dividing,
    scaled_wrongly,
    values_from_W_k,
)
from .masks import (
    HEAD_AXIS_TWICE,
    batched_mask_error,
    fully_blocked_rows,
    head_axis_twice,
    lacks_head_axis,
    per_head,
    per_head_mask,
    per_sequence_mask,
    without_head_axis,
)
from .relayed import core_sizes, qk_shapes
from .wording import agree

#: What a function that gives every query head a K/V head of its own runs into.
NOT_SHARED = (
    "K and V have n_kv_heads = {kv} heads, not n_heads = {h}: split X @ W_k (and X @ W_v) "
    "into n_kv_heads heads of d_k columns and let each serve n_heads // n_kv_heads = {g} "
    "consecutive query heads."
)
#: What a function that repeats the K/V heads along the first axis runs into on batch axes.
REPEAT_AXIS = (
    "the K/V heads are shared right without batch axes but not with them: repeat them along "
    "the head axis, np.repeat(K_heads, n_heads // n_kv_heads, axis=-3), not axis=0, which is "
    "the batch axis once X has batch axes (the same for V)."
)


def by_n_kv_heads(group: int) -> str:
    """The hint for K/V head index i // n_kv_heads, where i // g belongs (g the group size)."""
    return (
        "query head i reads K/V head i // n_kv_heads; it must read K/V head i // g, with "
        f"g = n_heads // n_kv_heads = {group} the size of a group (np.repeat(..., g, "
        "axis=-3))."
    )


def one_based(formula: str, group: int) -> str:
    """The hint for a K/V head index ``formula`` that counts heads from 1, clipped to the last.

    ``formula`` as the learner would write it ("ceil(i / g)"), ``group`` g = n_heads //
    n_kv_heads.
    """
    return (
        f"query head i reads K/V head {formula}, clipped to the last K/V head: a formula for "
        "heads counted from 1, on numpy's indices, which count from 0, so the groups are "
        "shifted. Counted from 0, query head i reads K/V head i // g, with g = n_heads // "
        f"n_kv_heads = {group} (np.repeat(K_heads, g, axis=-3))."
    )


def group_alike(group: int) -> str:
    """The hint for query heads that attend alike within each group (g = ``group``): one
    query per group (averaged, or the first), shared like K and V."""
    return (
        f"the query heads of each group attend alike (the g = n_heads // n_kv_heads = {group} "
        "heads of a group have the same weights): their queries were made one per group "
        "(averaged, or the first kept), as if shared like K and V. Keep all n_heads query "
        "heads, X @ W_q split into n_heads heads, and share only K and V, each K/V head "
        "serving g query heads."
    )


def weights_per_kv_head(got_shape: tuple, kv: int, h: int) -> str:
    """The hint for attention weights with one matrix per K/V head (``got_shape``)."""
    return (
        f"the attention weights have one matrix per K/V head, shape {got_shape} with "
        f"n_kv_heads = {kv} on the head axis: return one per query head, (..., n_heads, T, T) "
        f"with n_heads = {h} (a group's query heads share K and V, not their weights)."
    )


def mask_repeated(mask_shape: tuple, group: int, heads: int) -> str:
    """The hint for a mask with its head axis repeated like K and V (``heads`` after it)."""
    return (
        f"the per-head mask of shape {mask_shape} is repeated like K and V (g = n_heads // "
        f"n_kv_heads = {group} times along its head axis, giving {heads}), but it already has "
        "one entry per query head, not per K/V head: only K and V are repeated, the mask is "
        "used unrepeated."
    )


def mask_per_group(group: int) -> str:
    """The hint for a per-head mask read as one mask per K/V group: each group of ``group``
    query heads uses its first head's mask."""
    return (
        "each group of g = n_heads // n_kv_heads = "
        f"{group} query heads uses its first head's mask (mask[..., ::g, :, :] repeated g times), "
        "as if a per-head mask (..., n_heads, T, T) had one mask per K/V head: it has one per "
        "query head, so add it as it is; only K and V are shared within a group."
    )


_SHAPES = r"\(([\d,\s]+)\)"

#: Words of numpy's errors when arrays of different head counts or widths meet.
SHAPE_ERRORS = ("broadcast", "mismatch", "not aligned", "cannot reshape", "must divide d_model")


def as64(args) -> tuple:
    """``args`` with every float array in double precision: the reference's own inputs."""
    return tuple(
        a.astype(np.float64)
        if isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.floating)
        else a
        for a in args
    )


def floating(name: str, got, what: str) -> None:
    """Fail unless ``got`` is a floating ndarray (any precision: the contract prescribes none)."""
    if isinstance(got, np.ndarray) and not np.issubdtype(got.dtype, np.floating):
        raise CheckFailed(
            f"{name}: {what} should be a floating array (float64 or float32), but "
            f"{agree(what, 'has')} dtype "
            f"{got.dtype}."
        )


def compare_pair(name, got, expected, known, weights: str, contract: str) -> None:
    """Judge an ``(output, weights)`` pair with the contract's tolerance: weights first.

    ``known`` holds ``(hint, (wrong output, wrong weights))`` pairs (None
    where the mistake cannot occur); a tuple or a list of two is accepted.
    """
    out, A = as_pair(name, got)
    exp_out, exp_A = expected
    floating(name, A, weights)
    floating(name, out, "the output")
    fully_blocked_rows(name, A, exp_A)
    parts = [(h, w) for h, w in known if w is not None]
    if all(isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.number) for x in (out, A)):
        if not (close(A, exp_A, contract=contract) and close(out, exp_out, contract=contract)):
            # a mistake whose weights are another's (keys from X, with or without the values)
            # is told by the whole pair
            whole = {h for h, (o, a) in parts if close(A, a, contract=contract)}
            whole &= {h for h, (o, a) in parts if close(out, o, contract=contract)}
            if len(whole) == 1:
                raise CheckFailed(f"{name}: {whole.pop()}")
    heads = {-3: "head", -2: "row (query)", -1: "column (key)"}
    compare(name, A, exp_A, weights, [(h, w[1]) for h, w in parts], contract=contract, axes=heads)
    compare(name, out, exp_out, "the output", [(h, w[0]) for h, w in parts], contract=contract)


def mistakes(X, W_q, W_k, W_v, W_o, h, kv, mask) -> list:
    """``(hint, (wrong output, wrong weights))`` for the known mistakes of grouped-query attention.

    Each is what a function with that one mistake returns on these inputs
    (float64), with the mask the call gives.
    """
    d_model = X.shape[-1]
    d_k, group = d_model // h, h // kv
    M = per_head(mask, X.ndim, h)  # (..., 1 or h, T, T): the layer's mask rule
    Qh = ref.split_heads(X @ W_q, h)  # (..., h, T, d_k)
    K, V = X @ W_k, X @ W_v  # (..., T, kv * d_k)
    Kkv, Vkv = ref.split_heads(K, kv), ref.split_heads(V, kv)  # (..., kv, T, d_k)
    right = [i // group for i in range(h)]  # query head i -> K/V head i // group
    wrapped = [i % kv for i in range(h)]  # np.tile: i % kv
    by_kv = [min(i // kv, kv - 1) for i in range(h)]  # i // n_kv_heads: the wrong divisor

    def run(
        heads=right,
        Kh=None,
        Vh=None,
        scale=None,
        axis=-1,
        masked=True,
        W_out=W_o,
        M=M,
        Q=Qh,
        merge=ref.merge_heads,
    ):
        Kh = Kkv[..., heads, :, :] if Kh is None else Kh  # (..., h, T, d_k)
        Vh = Vkv[..., heads, :, :] if Vh is None else Vh
        with np.errstate(all="ignore"):
            Z = Q @ Kh.swapaxes(-1, -2) / (scale or math.sqrt(d_k))  # (..., h, T, T)
            A = ref.softmax(Z + (M if masked else 0.0), axis=axis)
            out = merge(A @ Vh)  # (..., T, d_model)
            return (out @ W_out if W_out is not None else out), A

    def bare_merge(H):  # (..., h, T, d_k) reshaped to (..., T, d_model) as it is
        return H.reshape(*H.shape[:-3], H.shape[-2], d_model)

    def pooled():  # each group's query heads averaged into one, the result repeated g times
        Qg = Qh.reshape(*Qh.shape[:-3], kv, group, *Qh.shape[-2:]).mean(axis=-3)
        with np.errstate(all="ignore"):
            try:
                Z = Qg @ Kkv.swapaxes(-1, -2) / math.sqrt(d_k) + M  # (..., kv, T, T)
            except ValueError:  # a mask per query head does not fit n_kv_heads heads
                return None
            A = ref.softmax(Z)
            heads = np.repeat(A @ Vkv, group, axis=-3)
            return ref.merge_heads(heads) @ W_o, np.repeat(A, group, axis=-3)

    def one_based_heads(formula) -> list | None:  # clipped to the last K/V head
        heads = [min(formula(i), kv - 1) for i in range(h)]
        return run(heads=heads) if heads != right else None

    columns = [ref.split_heads(np.repeat(M_, group, axis=-1), h) for M_ in (K, V)]
    strided = [  # K/V head j of the columns j, j + n_kv_heads, …: (..., kv, T, d_k)
        np.stack([M_[..., j::kv] for j in range(kv)], axis=-3)[..., right, :, :] for M_ in (K, V)
    ]
    out = [
        (
            "the query heads take the K/V heads in turn, as np.tile gives (index i reads index "
            "i % n_kv_heads): consecutive query heads share one K/V head instead. With g = "
            "n_heads // n_kv_heads, query heads 1 … g read K/V head 1, heads g+1 … 2g K/V "
            "head 2, … (index i reads index i // g: np.repeat over the head axis).",
            run(heads=wrapped),
        ),
        (by_n_kv_heads(group), run(heads=by_kv) if by_kv != right else None),
        (
            "the columns of X @ W_k and X @ W_v are repeated one by one (np.repeat on the last "
            "axis); repeat whole K/V heads: np.repeat(split_heads(X @ W_k, n_kv_heads), "
            "n_heads // n_kv_heads, axis=-3).",
            run(Kh=columns[0], Vh=columns[1]),
        ),
        (W_O_MISSING, run(W_out=None)),
        (W_O_TRANSPOSED, run(W_out=W_o.T)),
        (by_d_model(d_model, d_k), run(scale=math.sqrt(d_model))),
        (
            "K/V head j takes every n_kv_heads-th column of X @ W_k (columns j, j + n_kv_heads, "
            "…) instead of the run j·d_k … (j+1)·d_k − 1 that split_heads(X @ W_k, n_kv_heads) "
            "gives it (the same for X @ W_v).",
            run(Kh=strided[0], Vh=strided[1]) if kv > 1 and d_k > 1 else None,
        ),
        (
            QUERY_HEADS_STRIDED,
            run(Q=np.stack([(X @ W_q)[..., i::h] for i in range(h)], -3)) if d_k > 1 else None,
        ),
        (
            values_from_W_k("the values are X @ W_v, split into n_kv_heads heads like the keys."),
            run(Vh=Kkv[..., right, :, :]),
        ),
        (SQUARE_WEIGHTS_TRANSPOSED, run(Q=ref.split_heads(X @ W_q.T, h), W_out=W_o.T)),
        (MERGED_HEAD_AXIS_FIRST, run(merge=bare_merge) if h > 1 and d_k > 1 else None),
        (group_alike(group), pooled() if group > 1 else None),
        (one_based("ceil(i / g)", group), one_based_heads(lambda i: -(-i // group))),
        (one_based("(i + 1) // g", group), one_based_heads(lambda i: (i + 1) // group)),
        (one_based("i // g + 1", group), one_based_heads(lambda i: i // group + 1)),
        (
            scaled_wrongly(f"√(n_kv_heads·d_k) = √{kv * d_k}, the width of X @ W_k", d_k),
            run(scale=math.sqrt(kv * d_k)),
        ),
        (NOT_SCALED, run(scale=1.0)),
        (WRONG_AXIS_HEADS, run(axis=-2)),
    ]
    if mask is not None:
        out.append((MASK_IGNORED_HEADS, run(masked=False)))
    if group > 1 and np.ndim(mask) == X.ndim + 1 and np.shape(mask)[-3] == h:  # per head
        by_group = np.repeat(np.asarray(mask)[..., ::group, :, :], group, axis=-3)
        out.append((mask_per_group(group), run(M=by_group)))
    raw = without_head_axis(mask, (*Qh.shape[:-1], Qh.shape[-2]))  # scores: (..., h, T, T)
    if raw is not None:
        out.append((lacks_head_axis(mask, X.shape), run(M=raw)))
    twice = head_axis_twice(mask, (*Qh.shape[:-1], Qh.shape[-2]))  # (..., h, 1, T, T)
    if twice is not None:
        out.append((HEAD_AXIS_TWICE, run(M=twice)))
    return out


def _weights(rng, d_model: int, h: int, kv: int, dtype=np.float64) -> tuple:
    """``W_q, W_k, W_v, W_o`` for ``h`` query heads and ``kv`` K/V heads, scaled by 1/√d_model."""
    d_k = d_model // h
    shapes = ((d_model, d_model), (d_model, kv * d_k), (d_model, kv * d_k), (d_model, d_model))
    return tuple((rng.normal(size=s) / math.sqrt(d_model)).astype(dtype) for s in shapes)


def _batched_unmasked() -> tuple:
    """``X`` (2, 5, 12) and weights for 6 query heads and 2 K/V heads, from a generator of
    their own (the other visible calls' inputs stay as they were)."""
    rng = np.random.default_rng(1212)
    return rng.normal(size=(2, 5, 12)), _weights(rng, 12, 6, 2)


def _call(X, Ws, h, kv, mask=None, **context) -> Call:
    args = (X, *Ws, h, kv) if mask is None else (X, *Ws, h, kv, mask)
    return Call(args, context=context)


class GroupedQueryAttention(Check):
    name = "grouped_query_attention"
    mask_rule = True
    passed = (
        "groups of consecutive query heads share a K/V head; matches for 8 (n_heads, n_kv_heads) "
        f"pairs, {every_kind_of_mask()}, batches, float32, and raises ValueError where it "
        "should."
    )
    passed_hidden = matches_on_random("head counts, masks and precisions")

    def visible(self):
        q = get_example("question")  # 6 tokens, d_model = 8
        rng = np.random.default_rng(12)
        Wkv = {
            (h, kv): tuple(ref.init_weights(q.d_model, kv * q.d_model // h, rng) for _ in "kv")
            for h, kv in ((4, 2), (4, 1), (8, 2), (2, 1))
        }

        def question(h, kv, mask=None):
            W_k, W_v = Wkv.get((h, kv), (q.W_k, q.W_v))  # n_kv_heads = n_heads: the full W_k
            return _call(q.X, (q.W_q, W_k, W_v, q.W_o), h, kv, mask)

        causal = ref.causal_mask(q.T)
        b = batch_rng()
        X12 = b.normal(size=(2, 5, 12))
        per_batch = np.stack([ref.causal_mask(5), ref.sliding_window_mask(5, 2)])  # (2, 5, 5)
        X32 = b.normal(size=(2, 5, 12)).astype(np.float32)
        bad = np.random.default_rng(1)
        return [
            question(4, 2),
            question(4, 2, causal),
            question(4, 1, causal),  # = multi_query_attention
            question(4, 4, causal),  # = multi_head_self_attention
            question(8, 2, ref.sliding_window_mask(q.T, 3)),  # groups of 4 query heads
            question(2, 1),
            # batch axes and no mask: repeating the K/V heads along axis 0 fails here, not a mask
            _call(*_batched_unmasked(), 6, 2),
            _call(X12, _weights(b, 12, 6, 2), 6, 2, ref.padding_mask(np.array([5, 3]), 5)),
            _call(X12, _weights(b, 12, 6, 3), 6, 3, per_batch),
            _call(X12, _weights(b, 12, 2, 1), 2, 1, per_batch),  # batch size = n_heads
            _call(X12, _weights(b, 12, 12, 4), 12, 4, ref.causal_mask(5)),
            # masks with their head axis (one axis more than X): added as they are
            question(4, 2, per_head_mask(q.T, 4)),  # (h, T, T)
            _call(X12, _weights(b, 12, 6, 2), 6, 2, per_batch[:, None]),  # (B, 1, T, T)
            _call(
                X12, _weights(b, 12, 6, 2), 6, 2, ref.padding_mask(np.array([4, 2]), 5)[:, None]
            ),  # (B, 1, 1, T)
            _call(b.normal(size=(1, 12)), _weights(b, 12, 6, 3), 6, 3),  # T = 1
            _call(b.normal(size=(2, 3, 4, 8)), _weights(b, 8, 4, 2), 4, 2, ref.causal_mask(4)),
            _call(X32, _weights(b, 12, 6, 2, np.float32), 6, 2, ref.causal_mask(5)),
            _call(  # the second sequence's keys are all masked
                b.normal(size=(3, 4, 8)),
                _weights(b, 8, 4, 2),
                4,
                2,
                ref.padding_mask(np.array([4, 0, 2]), 4),
            ),
            *self._errors(bad),
        ]

    @staticmethod
    def _errors(rng) -> list:
        X = rng.normal(size=(5, 8))
        W, W6, W16 = rng.normal(size=(8, 8)), rng.normal(size=(8, 6)), rng.normal(size=(8, 16))
        X6, V6, W2 = rng.normal(size=(5, 6)), rng.normal(size=(6, 6)), rng.normal(size=(6, 2))
        return [
            Call(
                (X, W, W6, W6, W, 4, 3),
                raises="ValueError",
                context={"why": not_dividing(3, 4, "n_kv_heads", "n_heads")},
                own=True,  # no course function checks it: mh.attention_head's error is incidental
            ),
            Call(
                (X, W, W16, W16, W, 2, 4),
                raises="ValueError",
                context={"why": "n_kv_heads = 4 > n_heads = 2"},
                own=True,
            ),
            Call(
                (X6, V6, W2, W2, V6, 4, 2),
                raises="ValueError",
                context={"why": not_dividing(4, 6)},
            ),
        ]

    def hidden(self, rng):
        calls = []
        for k in range(6):
            kv, group, d_k, T = (int(n) for n in rng.integers(1, 5, size=4))
            h = kv * group
            d = h * d_k
            lead = random_shape(rng)
            dtype = np.float32 if k % 3 == 2 else np.float64
            X = rng.normal(size=(*lead, T, d)).astype(dtype)
            kind = ("none", "causal", "window", "padding", "per batch", "causal")[k]
            mask = None
            if kind == "causal":
                mask = ref.causal_mask(T)
            elif kind == "window":
                mask = ref.sliding_window_mask(T, int(rng.integers(1, T + 1)))
            elif kind == "padding":
                mask = ref.padding_mask(rng.integers(0, T + 1, size=lead), T)
            elif kind == "per batch":
                mask = np.where(rng.random((*lead, T, T)) < 0.3, -np.inf, 0.0)
            calls.append(_call(X, _weights(rng, d, h, kv, dtype), h, kv, mask))
        # a batch with a mask per sequence and no head axis, a query that reads nothing
        kv, group, d_k, T, B = (int(n) for n in rng.integers(2, 4, size=5))
        X = rng.normal(size=(B, T, kv * group * d_k))
        Ws = _weights(rng, kv * group * d_k, kv * group, kv)
        calls.append(_call(X, Ws, kv * group, kv, per_sequence_mask(rng, (B,), T, T)))
        h = int(rng.integers(3, 6))
        kv = h + 1 if rng.random() < 0.5 else h - 1
        X, W = rng.normal(size=(4, 2 * h)), rng.normal(size=(2 * h, 2 * h))
        Wkv = rng.normal(size=(2 * h, 2 * kv))
        why = f"n_kv_heads = {kv}, which does not divide n_heads = {h}"
        wrong = Call(
            (X, W, Wkv, Wkv, W, h, kv), raises="ValueError", context={"why": why}, own=True
        )
        # a mask with its head axis, one entry per query head, on groups of two or more; T ≥ 3,
        # so that the heads' masks (causal, then windows of 2, 3, …) differ within a group
        kv, group, d_k = (int(n) for n in rng.integers(2, 4, size=3))
        T = int(rng.integers(3, 6))
        h, lead = kv * group, random_shape(rng)
        X = rng.normal(size=(*lead, T, h * d_k))
        heads = np.broadcast_to(per_head_mask(T, h), (*lead, h, T, T)).copy()
        return [*calls, wrong, _call(X, _weights(rng, h * d_k, h, kv), h, kv, heads)]

    # -- verdict -------------------------------------------------------------
    def catalogue(self, call):
        if call.raises is not None:
            return None, []
        X, W_q, W_k, W_v, W_o, h, kv, *rest = as64(call.args)
        mask = rest[0] if rest else None
        if kv == h:  # the contract: the course's multi-head self-attention
            expected = ref.multi_head_self_attention(X, W_q, W_k, W_v, W_o, h, mask)
        elif kv == 1:  # the contract: the course's multi-query attention
            expected = ref.multi_query_attention(X, W_q, W_k, W_v, W_o, h, mask)
        else:
            expected = ref.grouped_query_attention(X, W_q, W_k, W_v, W_o, h, kv, mask)
        return expected, mistakes(X, W_q, W_k, W_v, W_o, h, kv, mask)

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        h, kv = call.args[5], call.args[6]
        A = got[1] if isinstance(got, tuple | list) and len(got) == 2 else None
        per_kv = (*np.shape(expected[1])[:-3], kv, *np.shape(expected[1])[-2:])
        if kv < h and isinstance(A, np.ndarray) and A.shape == per_kv:
            raise CheckFailed(
                f"{self.name}: {weights_per_kv_head(A.shape, kv, h)}",
                public=f"{self.name}: the attention weights have one matrix per K/V head, not "
                "one per query head.",
            )
        exp_A, g = np.asarray(expected[1]), h // kv
        if kv < h and isinstance(A, np.ndarray) and A.shape == exp_A.shape and A.size:
            grouped = (*A.shape[:-3], kv, g, *A.shape[-2:])  # (..., kv, g, T, T)
            alike = [
                close(B, np.broadcast_to(B[..., :1, :, :], grouped))
                for B in (A.reshape(grouped), exp_A.reshape(grouped))
            ]
            if alike[0] and not alike[1] and A.dtype.kind == "f":
                raise CheckFailed(
                    f"{self.name}: {group_alike(g)}",
                    public=f"{self.name}: the query heads of each group attend alike.",
                )
        compare_pair(
            self.name,
            got,
            expected,
            known,
            head_weights("n_heads"),
            precision((*call.args, got)),  # float32 in or out: float32's tolerance
        )

    def relayed(self, call, said):
        """The K/V heads' slip behind the shapes mh.attention_head (or numpy's matmul) refused.

        Split into n_heads heads instead of n_kv_heads (heads of d_k / g columns),
        repeated along d_k (heads g·d_k wide), or each repeated n_kv_heads times
        (n_kv_heads² heads).
        """
        X, h, kv = call.args[0], call.args[5], call.args[6]
        d_model = np.shape(X)[-1]
        if not (isinstance(h, int) and isinstance(kv, int) and h > 0 < kv) or d_model % h:
            return None
        d_k, g = d_model // h, h // kv
        mask = call.args[7] if len(call.args) > 7 else None
        if g > 1 and isinstance(mask, np.ndarray) and mask.ndim == np.ndim(X) + 1:
            # a mask with its head axis (one axis more than X) repeated g times like K and V
            m = mask.shape
            repeated = (*m[:-3], m[-3] * g, *m[-2:])
            found = {
                tuple(int(n) for n in t.replace(",", " ").split())
                for t in re.findall(_SHAPES, said)
            }
            if "broadcast" in said and repeated in found:
                return mask_repeated(m, g, m[-3] * g)
        widths = core_sizes(said, cut=True)
        W_k = call.args[2]
        narrow = np.ndim(W_k) == 2 and np.shape(W_k)[-1] != d_model
        if narrow and widths == (np.shape(W_k)[-1], d_model):  # X @ W_k.T
            return narrow_weight_transposed("W_K", np.shape(W_k))
        bounds = re.search(r"index (\d+) is out of bounds for axis -?\d+ with size (\d+)", said)
        if bounds and g > 1 and int(bounds[2]) == kv <= int(bounds[1]) <= (h - 1) // kv:
            # the K/V heads indexed by np.arange(n_heads) // n_kv_heads: past the last
            return (
                f"{by_n_kv_heads(g)} With n_heads = {h} and n_kv_heads = {kv}, i // n_kv_heads "
                f"reaches {(h - 1) // kv}, past the last K/V head, index {kv - 1}."
            )
        if bounds and g > 1 and int(bounds[2]) == kv <= int(bounds[1]) < h:
            # an index past the last K/V head: a formula counting from 1, or i itself
            return (
                f"a query head reads K/V head {bounds[1]}, past the last one, index {kv - 1} "
                f"(n_kv_heads = {kv}): a formula for heads counted from 1, such as ceil(i / g), "
                "runs past it on numpy's indices, which count from 0 (as does i itself). "
                "Counted from 0, query head i reads K/V head i // g, with g = n_heads // "
                f"n_kv_heads = {g} (np.repeat(K_heads, g, axis=-3))."
            )
        shapes, widths = qk_shapes(said), core_sizes(said)
        if shapes is not None and shapes[2] == "width":
            width = shapes[1][-1]
        else:
            width = widths[0] if widths is not None and widths[1] == d_k else None
        if width is not None and h > kv and width * h == kv * d_k != d_k * h:
            return (
                f"X @ W_k has n_kv_heads·d_k = {kv * d_k} columns, split into n_heads = {h} "
                f"heads of {width} column{'s' * (width != 1)}, not the query heads' d_k = {d_k}: "
                f"split it into n_kv_heads = {kv} heads of d_k columns (the same for X @ W_v), "
                f"then let each serve g = n_heads // n_kv_heads = {g} consecutive query heads, "
                "np.repeat(K_heads, g, axis=-3)."
            )
        if width is not None and g > 1 and width == g * d_k != kv * d_k:
            return (
                f"the K/V heads come out {width} columns wide, g = n_heads // n_kv_heads = {g} "
                f"times d_k = {d_k}: they were repeated along d_k, not along the head axis. "
                "Without batch axes a fixed axis number (axis=2 of (B, T, n_kv_heads, d_k)) "
                "is d_k; count from the end: np.repeat over the axis of the K/V heads (axis=-3 "
                "of (..., n_kv_heads, T, d_k))."
            )
        if shapes is not None and shapes[2] == "batch" and len(shapes[1]) >= 3:
            heads = shapes[1][-3]
            if heads == kv * kv != h and shapes[1][-1] == d_k:
                return (
                    f"each K/V head is repeated n_kv_heads = {kv} times, giving {heads} K/V heads "
                    f"for n_heads = {h} query heads: repeat each g = n_heads // n_kv_heads = {g} "
                    "times, np.repeat(K_heads, g, axis=-3)."
                )
        return None

    def verdict(self, calls, outcomes):
        """As every check; a shape error where K/V heads are fewer than query heads is explained.

        A function that gives every query head a K/V head of its own (or
        forgets to repeat the K/V heads) meets numpy's broadcasting or matmul
        error as soon as n_kv_heads < n_heads: the error says so, with how to
        share.
        """
        explained = []
        shared_flat = False  # a call without batch axes whose K/V heads are shared passed
        for call, outcome in zip(calls, outcomes, strict=False):
            error = outcome.error
            named = (
                error is not None
                and " raised " in error
                and call.raises is None
                and (
                    self.relayed(call, error.split(" raised ", 1)[1])
                    or (  # code for exactly one batch axis, on X without one
                        np.ndim(call.args[0]) == self.core_ndim
                        and batch_axes_error(call.args, error, self.core_ndim)
                    )
                )
            )
            if named:  # explain_error names it
                pass
            elif error is not None and call.raises is None and " raised " in error:
                h, kv = call.args[5], call.args[6]
                shared = not batched_mask_error(call.args, error)  # else the mask's doing
                said = error.split(" raised ", 1)[1]
                if (
                    shared_flat
                    and shared
                    and call.args[0].ndim > 2
                    and kv < h
                    and any(w in said for w in SHAPE_ERRORS)
                ):
                    outcome = Outcome(error=f"{self.name}: {REPEAT_AXIS} ({error})")
                elif (
                    shared
                    and kv < h
                    and any(w in error.split(" raised ", 1)[1] for w in SHAPE_ERRORS)
                ):
                    hint = NOT_SHARED.format(kv=kv, h=h, g=h // kv)
                    outcome = Outcome(error=f"{self.name}: {hint} ({error})")
            elif error is None and call.raises is None:
                shared_flat |= call.args[0].ndim == 2 and call.args[6] < call.args[5]
            explained.append(outcome)
        super().verdict(calls, explained)
