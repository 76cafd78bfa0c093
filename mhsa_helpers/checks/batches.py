"""Batch axes in the checks: the batch inputs they draw, and a shape error on them explained."""

from __future__ import annotations

import re

import numpy as np

from .hints import EINSUM_SCORES

__all__ = [
    "SHAPE_ERRORS",
    "batch_axes",
    "batch_axes_error",
    "batch_rng",
    "one_batch_axis",
    "random_shape",
    "reversed_by_dot_t",
]


#: numpy's words for a matrix product whose inner sizes differ.
_CORE_MISMATCH = "mismatch in its core dimension"
#: numpy's words for the shape errors an input of the wrong shape gives (products, sums, reshapes).
SHAPE_ERRORS = (_CORE_MISMATCH, "could not be broadcast", "cannot reshape")

#: An einsum with '...' for the batch axes: one batched operand (X times a weight), and two
#: (queries against keys, both with batch axes).
_EINSUM_ONE = "np.einsum('...td,de->...te', X, W), with '...' for the batch axes"
_EINSUM_TWO = f"{EINSUM_SCORES}, with '...' for the batch axes of each operand"

#: The advice for a shape error on an input with batch axes, by the words of the error.
_BATCH_TIPS = (
    (
        (_CORE_MISMATCH,),
        "swap the last two axes, np.swapaxes(M, -1, -2), not M.T (which reverses every axis, "
        "the batch axes too)",
    ),
    (("axes don't match",), "M.swapaxes(-2, -3), not M.transpose(1, 0, 2)"),
    (("cannot reshape",), "reshape(*M.shape[:-1], h, d_k), not reshape(T, h, d_k)"),
    (("values to unpack",), "T, d = X.shape[-2:], not T, d = X.shape"),
    (("ellipsis",), _EINSUM_ONE),
    (("concatenation axis",), "concatenate along axis=-2 (the token axis), not axis=1"),
    (
        ("could not be broadcast", "out of bounds for array of dimension", "index out of range"),
        "index and sum along negative axes (axis=-1, X[..., i]), not axis=1 or X[:, i]",
    ),
)


#: What code written for a fixed number of leading axes does, by the words of the error it
#: raises on an input without batch axes.
_FIXED_AXES = (
    (
        ("not enough values to unpack",),
        "B, T, d = X.shape assumes one batch axis",
        "T, d = X.shape[-2:], and count axes from the end",
    ),
    (
        ("tuple index out of range",),
        "a size read from the front (M.shape[2], Q.shape[3]) assumes leading axes that are "
        "not there",
        "read sizes from the end (M.shape[-1], M.shape[-2]) and count axes from the end",
    ),
    (
        ("too many subscripts for operand",),
        "np.einsum's subscripts name a fixed set of axes (one letter per axis, so subscripts "
        "written for one batch axis fit no input with zero or two)",
        "write '...' for the batch axes in every operand and in the output (e.g. '...td' for "
        "an array (..., T, d)); to sum them away, as for a weight's gradient, reshape first, "
        "A.reshape(-1, A.shape[-1])",
    ),
    (
        ("axes don't match array",),
        "transpose(0, 2, 1, 3) lists the axes of exactly one batch axis",
        "swap axes counted from the end, swapaxes(-2, -3)",
    ),
    (
        ("cannot reshape",),
        "reshape(M.shape[0], M.shape[1], h, -1) takes the first two axes as (B, T), one batch axis",
        "reshape(*M.shape[:-1], h, -1), and count axes from the end",
    ),
)


def _reshaped_from_front(said: str, shape: tuple) -> bool:
    """Whether numpy's "cannot reshape … into shape (…)" keeps ``shape`` in front, as
    ``M.reshape(M.shape[0], M.shape[1], h, -1)`` does on an input without batch axes."""
    target = said.rsplit("into shape (", 1)[-1].split(")", 1)[0].split(",")
    sizes = [s.strip() for s in target]
    return len(sizes) > len(shape) and sizes[: len(shape)] == [str(n) for n in shape]


#: The first operand of a matrix product whose batch axes numpy could not broadcast.
_REMAPPED_FIRST = re.compile(r"remapped shapes \[original->remapped\]: \(([\d,\s]*)\)->")
#: The public sentence for a .T that reversed the batch axes (no input's shape in it).
DOT_T_REVERSES = (
    ".T reverses every axis of an array with batch or head axes, those too: transpose only "
    "the last two, np.swapaxes(M, -1, -2)"
)


def _broadcast(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def reversed_by_dot_t(call_args, said: str) -> tuple[str, str] | None:
    """``(sentence, public sentence)`` for a matrix product refused because a ``.T`` reversed
    an input's batch axes, or None.

    numpy names the product's first operand ("remapped shapes [original->remapped]:
    (2,3,4,3)->…"; the rest of the error may be cut). It is the slip where an input of
    batch or head axes, reversed, is that operand, or where it is the second: transposed by
    its last two axes it would fit the first (the same batch axes, the inner sizes equal),
    reversed it does not.
    """
    found = _REMAPPED_FIRST.search(said)
    if found is None:
        return None
    first = tuple(int(n) for n in found[1].replace(",", " ").split())
    shapes = [np.shape(a) for a in call_args if isinstance(a, np.ndarray) and np.ndim(a) > 2]
    for shape in shapes:
        rev = shape[::-1]
        if rev == shape or len(first) < 2:
            continue
        fits = first[-1] == shape[-1] and _broadcast(first[:-2], shape[:-2])
        if first == rev or (fits and not _broadcast(first[:-2], rev[:-2])):
            other = "" if first == rev else f" the other operand's {first[:-2]}"
            return (
                f"{DOT_T_REVERSES}. An input of shape {shape} becomes {rev} under .T, so its "
                f"batch axes {rev[:-2]} no longer match{other}; np.swapaxes(M, -1, -2) gives "
                f"{(*shape[:-2], shape[-1], shape[-2])}. The same for every .T on an array with "
                "batch or head axes.",
                DOT_T_REVERSES + ".",
            )
    return None


def batch_axes(call_args, core_ndim: int) -> str | None:
    """ "batch axes (shape …)" if the call's first array has batch axes, else None."""
    first = next((a for a in call_args if isinstance(a, np.ndarray)), None)
    if first is None or first.ndim <= core_ndim:
        return None
    return f"batch axes (an input of shape {first.shape})"


def batch_axes_error(call_args, error: str, core_ndim: int) -> str | None:
    """The sentence for a shape error on an input with batch axes, or None.

    ``core_ndim`` is the number of axes of the first array argument without
    batch axes (2 for X of shape (T, d_model)).
    """
    first = next((a for a in call_args if isinstance(a, np.ndarray)), None)
    said = error.split(" raised ", 1)[-1].lower()
    if first is not None and first.ndim == core_ndim:
        fixed = next((tip for words, *tip in _FIXED_AXES if any(w in said for w in words)), None)
        if "cannot reshape" in said and not _reshaped_from_front(said, first.shape):
            fixed = None
        if fixed:
            return (
                f"it fails on an input without batch axes (shape {first.shape}): {fixed[0]}, "
                "but the contract is (..., T, d), zero, one or two leading axes: "
                f"{fixed[1]}."
            )
    if first is None or first.ndim <= core_ndim:
        return None
    tips = [tip for words, tip in _BATCH_TIPS if any(w in said for w in words)]
    if not tips:
        return None
    batched = [a for a in call_args if isinstance(a, np.ndarray) and a.ndim > core_ndim]
    if tips[0] == _EINSUM_ONE and len(batched) > 1:  # two batched operands: Q against K
        tips[0] = _EINSUM_TWO
    lead = first.ndim - core_ndim
    one_axis = ("axes don't match", "cannot reshape", "values to unpack")
    if lead > 1 and any(w in said for w in one_axis):  # B, T, d = X.shape, transpose(0, 2, …)
        return (
            f"it fails on an input with {lead} batch axes (shape {first.shape}): code written "
            "for exactly one batch axis (B, T, d = X.shape, transpose(0, 2, 1, 3)) takes "
            "(B, T, d) but not (B1, B2, T, d); the contract is (..., T, d), zero, one or two "
            f"leading axes, so count axes from the end: {tips[0]}."
        )
    batch = f"{lead} batch axes" if lead > 1 else "batch axes"
    return (
        f"it fails on an input with {batch} (shape {first.shape}): the contract is "
        f"(..., T, d), zero, one or two leading axes, so count axes from the end: {tips[0]}."
    )


def one_batch_axis(X, target: tuple) -> str:
    """A sentence for a reshape into ``(1, T, d)`` of an ``X`` of shape ``(T, d)``, or "".

    Such code gave X exactly one batch axis (``X[None]``, then ``B, T, C = X.shape``),
    which the contract's zero or two batch axes do not fit.
    """
    if np.ndim(X) != 2 or tuple(target) != (1, *np.shape(X)):
        return ""
    return (
        f" The reshape into {tuple(target)} also shows X {np.shape(X)} given exactly one batch "
        "axis: code that unpacks B, T, C = X.shape takes (B, T, d) only, but X may have zero, "
        "one or two batch axes: count axes from the end."
    )


def batch_rng() -> np.random.Generator:
    """The generator of the visible checks' batch cases (fixed: the same inputs every run)."""
    return np.random.default_rng(2024)


def random_shape(rng: np.random.Generator, max_lead: int = 2) -> tuple:
    """Zero to ``max_lead`` leading batch axes of sizes 1 to 3."""
    return tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(0, max_lead + 1)))
