"""Masks in the checks: queries whose every key is blocked, and the layer's head-axis rule.

The sentences and inputs of the masks' common slips: a fully blocked query
given NaN or weights that sum to 1 (:func:`fully_blocked_rows`), a batched
mask added without a head axis (:data:`NO_HEAD_AXIS`) or given a second one
(:data:`HEAD_AXIS_TWICE`), and the masks the checks call with.
"""

from __future__ import annotations

import contextvars
import math
import re

import numpy as np

from .. import reference as ref
from ..reference.inputs import heads_mask
from .failures import CheckFailed
from .hints import FINITE_MASK, FULLY_BLOCKED_QUERY

__all__ = [
    "FINITE_WHEN_ALL_BLOCKED",
    "HEAD_AXIS_TWICE",
    "NAN_WHEN_ALL_BLOCKED",
    "NAN_ZERO_BY_ZERO",
    "NO_HEAD_AXIS",
    "WARNED",
    "batched_mask_error",
    "fully_blocked",
    "fully_blocked_rows",
    "head_axis_reshaped",
    "head_axis_twice",
    "hidden_mask",
    "lacks_head_axis",
    "mask_has_head_axis",
    "mask_lacks_head_axis",
    "no_head_axis_in",
    "per_head",
    "per_head_mask",
    "per_sequence_mask",
    "two_batch_axes_mask",
    "without_head_axis",
]


#: A query whose every key is blocked, given weights that sum to 1 (a finite stand-in for −∞).
FINITE_WHEN_ALL_BLOCKED = (
    f"{FULLY_BLOCKED_QUERY} gets weights that sum to 1 (it still reads the values, as if "
    f"nothing were blocked or all equally): {FINITE_MASK}. Add the course's −∞ mask to the "
    "scores and use the course's softmax (notebook 07, mh.softmax): a fully blocked row then "
    "has weights 0 and output 0."
)
#: A query whose every key is blocked, given NaN.
NAN_WHEN_ALL_BLOCKED = (
    f"{FULLY_BLOCKED_QUERY} gets NaN: its scores are all −∞, and a softmax that "
    "subtracts the row's maximum computes −∞ − (−∞). The course's softmax (notebook 07, "
    "mh.softmax) gives that row weights 0 and output 0: use it, or handle an all −∞ row."
)
#: A query whose every key is blocked, given NaN by 0/0: numpy warned in a division, so no
#: row maximum made the NaN (none was subtracted, or an infinite one was replaced).
NAN_ZERO_BY_ZERO = (
    f"{FULLY_BLOCKED_QUERY} gets NaN: its scores are all −∞, every exp(−∞) is 0, and the "
    "softmax divides their sum 0 by 0. Give such a row weights 0 and output 0, and shift "
    "every row by its own maximum first (without it exp overflows on large scores): "
    "the course's softmax (notebook 07, mh.softmax) does both."
)

#: The warning numpy gave in the call being judged (set by :meth:`.core.Check.judge_warned`,
#: "" otherwise): the operation that made a NaN.
WARNED: contextvars.ContextVar[str] = contextvars.ContextVar("warned", default="")


def fully_blocked(mask, scores_shape: tuple) -> np.ndarray | None:
    """The queries (rows) of scores of ``scores_shape`` whose every key ``mask`` blocks, of
    shape (..., T_q) as the mask and the scores broadcast; None without any."""
    if mask is None:
        return None
    blocked = np.isneginf(np.asarray(mask, dtype=np.float64))
    shape = np.broadcast_shapes(blocked.shape, scores_shape)
    rows = np.broadcast_to(blocked, shape).all(axis=-1)  # (..., T_q)
    return rows if rows.any() else None


def fully_blocked_rows(name: str, A, exp_A) -> None:
    """Fail naming how a fully blocked query's weights went wrong, if only they did.

    The reference gives a query whose every key is blocked weights 0 (no softmax of
    real scores is 0 everywhere), so such rows are read off ``exp_A``. NaN there only,
    or weights summing to 1 there with every other row right, name the slip (a NaN by the
    warning that made it, :data:`WARNED`: 0/0, or −∞ − (−∞)).
    """
    exp_A = np.asarray(exp_A)
    if not isinstance(A, np.ndarray) or A.dtype.kind != "f":
        return  # not floats (ints, complex, objects, lists): the comparison says what it is
    if A.shape != exp_A.shape or exp_A.ndim < 2:
        return
    rows = ~(exp_A != 0).any(axis=-1)  # (..., T_q): every key blocked
    if not rows.any():
        return
    with np.errstate(all="ignore"):
        others_right = np.allclose(A[~rows], exp_A[~rows], rtol=1e-4, atol=1e-6)
        if np.isnan(A).any() and not np.isnan(A[~rows]).any():
            divided = "encountered in divide" in WARNED.get()
            raise CheckFailed(f"{name}: {NAN_ZERO_BY_ZERO if divided else NAN_WHEN_ALL_BLOCKED}")
        sums = A[rows].sum(axis=-1)  # (n,)
        if others_right and np.isfinite(sums).all() and np.allclose(sums, 1.0, atol=1e-4):
            raise CheckFailed(f"{name}: {FINITE_WHEN_ALL_BLOCKED}")


def per_head(mask, x_ndim: int, n_heads: int):
    """A layer's additive mask ready to add to scores of shape (..., h, T_q, T_k).

    The layer's one rule (:func:`mhsa_helpers.reference.inputs.heads_mask`): with at
    most ``x_ndim`` axes (the input's) the mask has no head axis and gets one;
    with one more, its axis -3 is the head axis. 0.0 for no mask.
    """
    if mask is None:
        return 0.0
    return heads_mask(mask, x_ndim, n_heads)  # (..., 1 or h, T_q, T_k)


#: The mistake of adding a batched mask (..., T, T) to scores (..., h, T, T) as it is.
_LINED_UP = (
    "numpy lines its batch axis up with the heads (wrong when the batch size equals the "
    "number of heads, an error otherwise)"
)
_EXPAND = "give it a head axis before adding it, np.expand_dims(mask, -3), shape (..., 1, T, T)"
NO_HEAD_AXIS = (
    f"the mask has batch axes but no head axis: {_LINED_UP}. A mask with at most as many axes "
    f"as X is the same for every head: {_EXPAND}."
)


def lacks_head_axis(mask, x_shape) -> str:
    """:data:`NO_HEAD_AXIS`, said of a mask with fewer axes than ``X`` (of ``x_shape``) where
    it has them: such a mask (one per sequence of X's last batch axis) has no head axis either.
    """
    shape = np.shape(mask)
    if len(shape) >= len(x_shape):
        return NO_HEAD_AXIS
    return (
        f"the mask {shape} has fewer axes than X {tuple(x_shape)}, and no head axis: "
        f"{_LINED_UP}. Every mask with at most as many axes as X, fewer too (not only "
        f"exactly as many), is the same for every head: {_EXPAND}."
    )


#: The mistake of giving a head axis to a mask that already has one.
HEAD_AXIS_TWICE = (
    "the mask already has a head axis, and a second one is added: a mask with one axis more "
    "than X (shape (..., h, T, T) or (..., 1, T, T), such as a bias per head) carries its "
    "head axis at axis -3; add it to the scores as it is. Only a mask with at most as many "
    "axes as X gets np.expand_dims(mask, -3)."
)


def two_batch_axes_mask(T: int) -> np.ndarray:
    """A causal mask with padding for a batch of shape (2, 2), one sequence empty: (2, 2, T, T).

    Two leading batch axes, and every key of the sequence at [1, 0] is blocked (its
    length is 0), so each of its queries is a fully blocked row: weights 0, output 0.
    """
    lengths = np.array([[T, T - 1], [0, T - 2]])  # (2, 2)
    return ref.causal_mask(T) + ref.padding_mask(lengths, T)  # (2, 2, T, T)


def hidden_mask(rng: np.random.Generator, lead: tuple, T: int, h: int):
    """A hidden call's mask for X with batch axes ``lead``: causal, without or with its head
    axis ((..., T, T), (..., 1, T, T) or (..., h, T, T)), drawn by ``rng``."""
    form = int(rng.integers(3))
    if form == 2:
        return np.broadcast_to(per_head_mask(T, h), (*lead, h, T, T)).copy()  # (..., h, T, T)
    causal = np.broadcast_to(ref.causal_mask(T), (*lead, T, T)).copy()  # (..., T, T)
    return causal if form == 0 else causal[..., None, :, :]  # or (..., 1, T, T)


def per_head_mask(T: int, h: int) -> np.ndarray:
    """A mask with its head axis, shape (h, T, T): head 1 causal, the others a window."""
    windows = [ref.sliding_window_mask(T, w) for w in range(2, h + 1)]  # (T, T) each
    return np.stack([ref.causal_mask(T), *windows])  # (h, T, T)


def without_head_axis(mask, scores_shape: tuple):
    """The mask as a function that forgot its head axis adds it, or None where numpy refuses.

    ``scores_shape`` is the scores' ``(..., h, T, T)``, with one axis more
    than the input ``X``. None too for a mask without batch axes (it needs no
    head axis), for a mask that has its head axis already (one axis more than
    ``X``), and where adding the mask as it is gives the right result or
    another shape.
    """
    if mask is None or not 2 < np.ndim(mask) < len(scores_shape):
        return None
    mask = np.asarray(mask)
    if mask.shape[-3] == 1:
        return None  # the same as the right mask
    try:
        added = np.broadcast_shapes(tuple(scores_shape), mask.shape)
    except ValueError:
        return None  # numpy's error: the check explains it from the call's error
    if added != tuple(scores_shape):
        return None
    return mask  # added to (..., h, T, T) as (..., B, T, T): batch lined up with heads


def head_axis_twice(mask, scores_shape: tuple):
    """The mask as a function that always adds a head axis adds it, or None.

    The slip of a layer written only for masks without a head axis: a mask
    with its head axis already (one axis more than ``X``, that is as many as
    the scores ``(..., h, T, T)``) gets a second one, ``(..., h, 1, T, T)``.
    None where the mask has no head axis, and where numpy refuses to add it
    (the check then explains the call's error).
    """
    if mask is None or np.ndim(mask) != len(scores_shape):
        return None
    twice = np.expand_dims(np.asarray(mask), -3)  # (..., h, 1, T, T)
    try:
        np.broadcast_shapes(tuple(scores_shape), twice.shape)
    except ValueError:
        return None
    return twice


def mask_has_head_axis(call_args) -> bool:
    """Whether a layer call's mask has its head axis: one axis more than the input ``X``.

    ``X`` is the call's first array; the mask its last argument that is an
    additive mask (0 and -inf only) of more than 2 axes.
    """
    arrays = [a for a in call_args if isinstance(a, np.ndarray)]
    masks = [a for a in arrays[1:] if a.ndim > 2 and np.isin(a, (0.0, -np.inf)).all()]
    return bool(arrays) and bool(masks) and masks[-1].ndim == arrays[0].ndim + 1


def mask_lacks_head_axis(call_args) -> bool:
    """Whether a call's mask (its last additive mask of more than 2 axes) has fewer axes than
    its first array, the queries or heads ``(..., h, T, d_k)``: a mask that numpy would line
    up with other axes than its own. A mask of as many axes has its head axis (of size 1 or
    h), or needs none."""
    arrays = [a for a in call_args if isinstance(a, np.ndarray)]
    masks = [a for a in arrays[1:] if a.ndim > 2 and np.isin(a, (0.0, -np.inf)).all()]
    return bool(masks) and masks[-1].ndim < arrays[0].ndim


def no_head_axis_in(call_args) -> str:
    """:func:`lacks_head_axis` for a layer call's mask (its last additive mask of more than 2
    axes) and input ``X`` (its first array); :data:`NO_HEAD_AXIS` where there is none."""
    arrays = [a for a in call_args if isinstance(a, np.ndarray)]
    masks = [a for a in arrays[1:] if a.ndim > 2 and np.isin(a, (0.0, -np.inf)).all()]
    return lacks_head_axis(masks[-1], arrays[0].shape) if masks else NO_HEAD_AXIS


def batched_mask_error(call_args, error: str) -> bool:
    """Whether ``error`` is numpy refusing to add a batched mask without a head axis."""
    masks = [
        a
        for a in call_args
        if isinstance(a, np.ndarray) and a.ndim > 2 and np.isin(a, (0.0, -np.inf)).all()
    ]
    return bool(masks) and "broadcast" in error.split(" raised ", 1)[-1]


def head_axis_reshaped(call_args, error: str) -> tuple[int, ...] | None:
    """The shape numpy would not reshape into because the mask's head axis was added twice.

    The output, reshaped back into X's size, is h times too large (h the size of the
    mask's head axis, > 1: the mask's heads times the layer's). Returns the target
    shape of the refused reshape, or None for any other error.
    """
    arrays = [a for a in call_args if isinstance(a, np.ndarray)]
    found = re.search(r"cannot reshape array of size (\d+) into shape \(([\d,\s]*)\)", error)
    if not arrays or found is None or not mask_has_head_axis(call_args):
        return None
    masks = [a for a in arrays[1:] if a.ndim > 2 and np.isin(a, (0.0, -np.inf)).all()]
    target = tuple(int(n) for n in found[2].replace(",", " ").split())
    heads = masks[-1].shape[-3]
    fits = heads > 1 and math.prod(target) == arrays[0].size
    return target if fits and int(found[1]) == heads * arrays[0].size else None


def per_sequence_mask(rng: np.random.Generator, lead: tuple, T_q: int, T_k: int) -> np.ndarray:
    """A hidden call's mask without a head axis, (*lead, T_q, T_k), each sequence its own.

    Random blocked keys; the first sequence's last query has every key blocked
    and the second's reads every key, so that the sequences differ (a mask whose
    batch axis meets the head axis gives other values, or fails) and a fully
    blocked query is tried.
    """
    mask = np.where(rng.random((*lead, T_q, T_k)) < 0.4, -np.inf, 0.0)
    first = (0,) * len(lead)
    mask[(*first, slice(None, -1), 0)] = 0.0  # the first sequence: key 0 for its other queries
    mask[(*first, -1)] = -np.inf  # and nothing for its last one
    if lead and lead[0] > 1:
        mask[(1, *first[1:], -1)] = 0.0  # the second sequence's last query reads every key
    return mask
