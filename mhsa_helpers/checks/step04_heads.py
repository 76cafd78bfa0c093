"""Step 4: splitting into heads and merging them back."""

from __future__ import annotations

import re

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .batches import batch_rng, random_shape
from .comparison import compare
from .core import Call, Check
from .hints import HEAD_COUNT_AND_SIZE_SWAPPED, REVERSED_MERGE, SPLIT_RESHAPE


def split_mistakes(M, h: int) -> list:
    """``(hint, wrong heads)`` for the known mistakes in splitting ``M`` into ``h`` heads."""
    *lead, T, d = M.shape
    d_k = d // h
    return [
        (
            "reshaped straight to (..., h, T, d_k) without the transpose: reshape to "
            "(..., T, h, d_k) first, then swap the T and h axes.",
            M.reshape(*lead, h, T, d_k),
        ),
        (
            "each head must own a contiguous block of d_k columns (the first head columns "
            "0:d_k, the second d_k:2*d_k, …), not every h-th column.",
            np.moveaxis(M.reshape(*lead, T, d_k, h), -1, -3),
        ),
        (
            f"{HEAD_COUNT_AND_SIZE_SWAPPED} in the reshape: "
            f"reshape(..., T, d_k, n_heads) = (..., {T}, {d_k}, {h}) cuts each token's row into "
            f"d_k = {d_k} blocks of n_heads = {h} columns, so the result is (..., d_k, T, "
            f"n_heads) = (..., {d_k}, {T}, {h}), not (..., {h}, {T}, {d_k}); reshape to "
            f"{SPLIT_RESHAPE} (np.swapaxes(M, -2, -3)).",
            M.reshape(*lead, T, d_k, h).swapaxes(-2, -3) if h != d_k else None,
        ),
        (
            f"the token axis is split, not the columns: each head gets {T // h} of the {T} "
            f"tokens with all {d} columns (np.split(M, n_heads, axis=-2), or "
            "reshape(..., n_heads, T // n_heads, d_model)); split each token's row, the last "
            f"axis, into n_heads = {h} blocks of d_k = {d_k} columns: reshape to {SPLIT_RESHAPE}.",
            M.reshape(*lead, h, T // h, d) if T % h == 0 and h > 1 else None,
        ),
        (
            "the head axis must come before the token axis: shape (..., h, T, d_k).",
            M.reshape(*lead, T, h, d_k),
        ),
        (
            "the heads come out in reverse order: head 1 is the first block of d_k columns "
            "(columns 0:d_k), head 2 the next, … ; no [::-1] on the head axis.",
            ref.split_heads(M, h)[..., ::-1, :, :] if h > 1 else None,
        ),
        (
            "T is read from M.shape[0], the first axis, which is a batch axis (not the tokens) "
            "when M has one, so the rows of different sequences get mixed up: count from the "
            "end, T = M.shape[-2], and reshape to (*M.shape[:-1], h, d_k).",
            # M.reshape(-1, M.shape[0], h, d_k), heads swapped forward, shaped (..., h, T, d_k)
            M.reshape(-1, lead[0], h, d_k).swapaxes(-2, -3).reshape(*lead, h, T, d_k)
            if lead and lead[0] != T
            else None,
        ),
    ]


#: A merge written for one sequence, H of shape (h, T, d_k): swapaxes(0, 1), reshape(T, h·d_k).
ONE_SEQUENCE_MERGE = (
    "merge_heads is written for one sequence, H of shape (h, T, d_k): with batch axes, "
    "swapping axes 0 and 1 moves a batch axis, not the heads, and reshape(T, h·d_k) drops the "
    "batch axes; count axes from the end: put the heads after the tokens, "
    "np.swapaxes(H, -3, -2), then reshape to (*H.shape[:-3], T, h·d_k)."
)


def merge_mistakes(H) -> list:
    """``(hint, wrong merge)`` for the known mistakes in merging the heads ``H``."""
    *lead, h, T, d_k = H.shape
    # swapaxes(0, 1).reshape(T, -1), as for one sequence (reshape(T, h·d_k) runs only where
    # the batch is one sequence, and raises otherwise: the check reads the error, relayed)
    two_d = [(ONE_SEQUENCE_MERGE, H.swapaxes(0, 1).reshape(T, -1) if lead else None)]
    return [
        *two_d,
        (
            "reshaped without swapping the head and token axes back; merge_heads must undo "
            "split_heads: swap axes -3 and -2, then reshape.",
            H.reshape(*lead, T, h * d_k),
        ),
        (
            "the heads are concatenated along the wrong axis; the heads fill each token's row "
            "side by side (the first head columns 0:d_k, the second d_k:2*d_k, …).",
            np.concatenate(list(np.moveaxis(H, -3, 0)), axis=-2),
        ),
        (
            "the heads' columns are interleaved (column c from head c % h, as moving the head "
            "axis last gives): each head fills its own block of d_k columns side by side; "
            "swap axes -3 and -2, then reshape.",
            np.moveaxis(H, -3, -1).reshape(*lead, T, h * d_k) if h > 1 and d_k > 1 else None,
        ),
        (
            f"{REVERSED_MERGE} (0:d_k), head 2 the next, … ; merge_heads must undo split_heads "
            "exactly.",
            ref.merge_heads(H[..., ::-1, :, :]) if H.shape[-3] > 1 else None,
        ),
        (
            "the last two axes (T and d_k) are swapped before the reshape, not the head and "
            "token axes: swap axes -3 and -2 (h and T), then reshape to (..., T, h·d_k).",
            H.swapaxes(-1, -2).reshape(*lead, T, h * d_k) if d_k > 1 else None,  # else bare
        ),
        *(
            (
                "H.T reverses every axis, (h, T, d_k) into (d_k, T, h), the batch axes too: "
                "the reshape then mixes the heads' entries; swap only the head and token axes, "
                "np.swapaxes(H, -3, -2), then reshape to (..., T, h·d_k).",
                wrong,
            )
            for wrong in (
                H.T.reshape(*lead, T, h * d_k),
                H.T.reshape(T, -1) if lead else None,
            )
        ),
        (
            "np.concatenate(H, axis=-1) splits H along its first axis, which holds the heads "
            "only without batch axes: with batch axes it puts the batch's sequences side by "
            "side, not the heads; swap axes -3 and -2, then reshape to (..., T, h·d_k).",
            np.concatenate(list(H), axis=-1) if lead else None,
        ),
        (
            "reshape(T, -1) folds the batch axes into the columns: keep them, "
            "reshape(*H.shape[:-3], T, h·d_k) after swapping axes -3 and -2.",
            ref.merge_heads(H).reshape(T, -1) if lead else None,
        ),
        *(
            (
                f"the heads are {how} (shape (..., T, d_k)): merge_heads concatenates them side "
                "by side, (..., T, h·d_k); swap axes -3 and -2, then reshape.",
                H.sum(axis=-3) if how == "summed" else H.mean(axis=-3),
            )
            for how in ("summed", "averaged")
            if h > 1
        ),
    ]


def _random_input(rng, least: int = 1):
    """A random (..., T, h*d_k) matrix with leading batch axes, and its number of heads h
    (h and d_k at least ``least``: at 2, heads side by side differ from interleaved ones)."""
    h, d_k, T = (int(n) for n in rng.integers(least, 5, size=3))
    return rng.normal(size=(*random_shape(rng), T + 1, h * d_k)), h


def _song_q():
    e = get_example("song")
    return e.X @ e.W_q


def reversed_axes(shape: tuple) -> str:
    """The hint for M.T reshaped to (n_heads, d_k, T), right for a 2-D M only."""
    return (
        f"M.T reverses all of M's axes, the batch axes too ({shape} becomes {shape[::-1]}), so "
        "M.T.reshape(n_heads, d_k, T) (then swapping its last two axes) splits a 2-D M only, "
        "and the reshape of a batch fails: drop M.T and count axes from the end, "
        "reshape(*M.shape[:-1], n_heads, d_k), then np.swapaxes(…, -2, -3)."
    )


class SplitHeads(Check):
    name = "split_heads"
    passed = (
        "splits the song's Q into 1, 2 and 4 heads, a batch (and a batch of batches) into 3, "
        "an odd d_model = 5 into 5."
    )
    passed_hidden = "splits random batched inputs correctly."

    def visible(self):
        batch = batch_rng().normal(size=(2, 5, 6))  # batch axis, d_k = 2 with 3 heads
        odd = batch_rng().normal(size=(3, 5))  # an odd d_model: 5 heads of 1 column, or one
        nested = batch_rng().normal(size=(2, 3, 4, 6))  # two leading axes
        return [
            *(Call((_song_q(), h)) for h in (2, 4, 1)),
            Call((batch, 3)),
            Call((nested, 3)),
            Call((odd, 5)),
            Call((odd, 1)),
        ]

    def hidden(self, rng):
        return [Call(_random_input(rng)) for _ in range(4)] + [Call(_random_input(rng, least=2))]

    def catalogue(self, call):
        M, h = call.args
        return ref.split_heads(M, h), split_mistakes(M, h)

    def relayed(self, call, said):
        """M.T (every axis reversed) reshaped to (h, d_k, T), read off numpy's refusal to
        reshape a batch into it."""
        M, h = call.args
        found = re.search(r"cannot reshape array of size \d+ into shape \(([\d, ]+)\)", said)
        if (
            not isinstance(M, np.ndarray)
            or M.ndim < 3
            or found is None
            or not isinstance(h, int | np.integer)
        ):
            return None
        target = tuple(int(n) for n in found[1].replace(",", " ").split())
        T, d = M.shape[-2:]
        if h < 1 or d % h or target[-1] != T or target[:-1] not in ((h, d // h), (d // h, h)):
            return None
        return reversed_axes(M.shape)

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        axes = {-3: "head", -2: "row (token)", -1: "column"}
        compare(self.name, got, expected, "the heads", known, axes=axes)


class MergeHeads(Check):
    name = "merge_heads"
    core_ndim = 3  # H: (h, T, d_k)
    passed = (
        "merge_heads(split_heads(Q, h)) gives back Q for h = 2 and 4, a batch and a batch of "
        "batches."
    )
    passed_hidden = "undoes split_heads on random batched inputs."

    def visible(self):
        batch = ref.split_heads(batch_rng().normal(size=(2, 5, 6)), 3)  # (2, 3, 5, 2)
        nested = ref.split_heads(batch_rng().normal(size=(2, 3, 4, 6)), 3)  # (2, 3, 3, 4, 2)
        return [
            *(Call((ref.split_heads(_song_q(), h),)) for h in (2, 4)),
            Call((batch,)),
            Call((nested,)),
        ]

    def hidden(self, rng):
        inputs = [_random_input(rng) for _ in range(4)] + [_random_input(rng, least=2)]
        return [Call((ref.split_heads(*M_h),)) for M_h in inputs]

    def catalogue(self, call):
        (H,) = call.args
        return ref.merge_heads(H), merge_mistakes(H)

    def relayed(self, call, said):
        """A merge for one sequence, read off numpy's refusal to reshape a batch of heads
        into (T, h·d_k)."""
        (H,) = call.args
        found = re.search(r"cannot reshape array of size \d+ into shape \((\d+), ?(\d+)\)", said)
        if not isinstance(H, np.ndarray) or H.ndim < 4 or found is None:
            return None
        *_, h, T, d_k = H.shape
        if (int(found[1]), int(found[2])) != (T, h * d_k):
            return None
        return ONE_SEQUENCE_MERGE

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        compare(self.name, got, expected, "merge_heads(split_heads(M))", known)
