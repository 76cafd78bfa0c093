"""Batch axes in the checks: the batch inputs they draw, and a shape error on them explained."""

from __future__ import annotations

import re

import numpy as np

__all__ = ["batch_axes", "batch_axes_error", "batch_rng", "random_shape"]


#: The advice for a shape error on an input with batch axes, by the words of the error.
_BATCH_TIPS = (
    (
        ("mismatch in its core dimension",),
        "swap the last two axes, np.swapaxes(M, -1, -2), not M.T (which reverses every axis, "
        "the batch axes too)",
    ),
    (("axes don't match",), "M.swapaxes(-2, -3), not M.transpose(1, 0, 2)"),
    (("cannot reshape",), "reshape(*M.shape[:-1], h, d_k), not reshape(T, h, d_k)"),
    (("values to unpack",), "T, d = X.shape[-2:], not T, d = X.shape"),
    (("ellipsis",), "np.einsum('...td,de->...te', X, W), with '...' for the batch axes"),
    (("concatenation axis",), "concatenate along axis=-2 (the token axis), not axis=1"),
    (
        ("could not be broadcast", "out of bounds for array of dimension", "index out of range"),
        "index and sum along negative axes (axis=-1, X[..., i]), not axis=1 or X[:, i]",
    ),
)


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
    if first is not None and first.ndim == core_ndim and "not enough values to unpack" in said:
        return (
            f"it fails on an input without batch axes (shape {first.shape}): B, T, d = X.shape "
            "assumes one batch axis, but the contract is (..., T, d), zero, one or two leading "
            "axes: T, d = X.shape[-2:], and count axes from the end."
        )
    if first is not None and first.ndim == core_ndim and _reshaped_as_batch(first.shape, said):
        return (
            f"it fails on an input without batch axes (shape {first.shape}): B, T = "
            "X.shape[0], X.shape[1] assumes one batch axis and reads T as B and d as T, but the "
            "contract is (..., T, d), zero, one or two leading axes: take the leading axes as "
            "X.shape[:-2] and reshape to (*X.shape[:-1], h, d_k), counting axes from the end."
        )
    if first is None or first.ndim <= core_ndim:
        return None
    tips = [tip for words, tip in _BATCH_TIPS if any(w in said for w in words)]
    if not tips:
        return None
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


def _reshaped_as_batch(shape: tuple, said: str) -> bool:
    """Whether ``said`` is a reshape of an input without batch axes into (shape..., more):
    its first axes read as (B, T), as code written for exactly one batch axis does."""
    found = re.search(r"cannot reshape array of size \d+ into shape \(([\d,\s]*)\)", said)
    if found is None:
        return False
    target = tuple(int(n) for n in found[1].replace(",", " ").split())
    return len(target) > len(shape) and target[: len(shape)] == tuple(shape)


def batch_rng() -> np.random.Generator:
    """The generator of the visible checks' batch cases (fixed: the same inputs every run)."""
    return np.random.default_rng(2024)


def random_shape(rng: np.random.Generator, max_lead: int = 2) -> tuple:
    """Zero to ``max_lead`` leading batch axes of sizes 1 to 3."""
    return tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(0, max_lead + 1)))
