"""The reference's input checks and the layers' mask rule, in one place.

One place, so that every function words its errors alike: each check names
what was expected and what came. The reference functions (:mod:`.steps`,
:mod:`.extensions`, :mod:`.backward`) call these before computing anything.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_array",
    "check_mask",
    "check_min_ndim",
    "check_positive_int",
    "check_weight",
    "heads_for",
    "heads_mask",
]


def as_array(x, name: str) -> np.ndarray:
    """``x`` as a float ndarray, or an error naming what came instead.

    Parameters
    ----------
    x : array_like
        A real numeric array; integers become float64.
    name : str
        The parameter's name, for the error.

    Returns
    -------
    arr : ndarray of the shape of x

    Raises
    ------
    ValueError
        If ``x`` is boolean, not numeric or complex.
    """
    arr = np.asarray(x)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must be a numeric array, but got dtype {arr.dtype}.")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real, but got dtype {arr.dtype}.")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    return arr


def check_min_ndim(arr: np.ndarray, ndim: int, name: str, shape: str) -> None:
    """Raise unless ``arr`` has at least ``ndim`` axes.

    Parameters
    ----------
    arr : ndarray
    ndim : int
        The least number of axes.
    name : str
        The parameter's name, for the error.
    shape : str
        The shape it must have, as the error shows it, e.g. ``"(..., T, d_model)"``.
    """
    if arr.ndim < ndim:
        raise ValueError(
            f"{name} must have shape {shape} (at least {ndim} axes), "
            f"but got an array of shape {arr.shape}."
        )


def check_positive_int(value, name: str) -> int:
    """``value`` as an int, or an error unless it is a positive integer (not a bool).

    Parameters
    ----------
    value : object
    name : str
        The parameter's name, for the error.

    Returns
    -------
    value : int
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, but got {value!r}.")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, but got {value}.")
    return int(value)


def check_weight(W, d_in: int, name: str) -> np.ndarray:
    """``W`` as a float matrix that acts on the right of an input with last axis ``d_in``.

    Parameters
    ----------
    W : array_like of shape (d_in, d_out)
    d_in : int
        The input's last axis.
    name : str
        The weight's name, for the error.

    Returns
    -------
    W : ndarray of shape (d_in, d_out)
    """
    W = as_array(W, name)
    if W.ndim != 2 or W.shape[0] != d_in:
        raise ValueError(
            f"{name} must have shape ({d_in}, d_out) to act on the right of an input "
            f"with last axis {d_in}, but got an array of shape {W.shape}."
        )
    return W


def check_mask(mask, scores_shape: tuple) -> np.ndarray:
    """An additive mask as a float array that broadcasts against the scores.

    Parameters
    ----------
    mask : array_like
        0 where allowed, -inf where blocked; a boolean mask is refused with
        the line that converts it.
    scores_shape : tuple of int
        The scores' shape, ``(..., T_q, T_k)``.

    Returns
    -------
    mask : ndarray broadcastable to scores_shape
    """
    mask = np.asarray(mask)
    if mask.dtype == bool:
        raise ValueError(
            "mask must be additive (0 where allowed, -inf where blocked), but got a "
            "boolean array; convert it with np.where(allowed, 0.0, -np.inf)."
        )
    mask = as_array(mask, "mask")
    try:
        out = np.broadcast_shapes(mask.shape, scores_shape)
    except ValueError:
        out = None
    if out != tuple(scores_shape):
        raise ValueError(
            f"mask must broadcast against the scores of shape {tuple(scores_shape)}, "
            f"but got a mask of shape {mask.shape}."
        )
    return mask


def heads_for(d_model: int, n_heads) -> tuple[int, int]:
    """The number of heads and their size, or an error unless ``n_heads`` divides ``d_model``.

    Parameters
    ----------
    d_model : int
    n_heads : int

    Returns
    -------
    h : int
        ``n_heads`` as an int.
    d_k : int
        ``d_model // n_heads``.
    """
    h = check_positive_int(n_heads, "n_heads")
    if d_model % h:
        raise ValueError(f"n_heads must divide d_model, but got d_model={d_model} and n_heads={h}.")
    return h, d_model // h


def heads_mask(mask, x_ndim: int, n_heads: int):
    """A layer's additive mask, ready to add to the scores of all heads.

    One rule for every layer (multi-head, multi-query, grouped-query and
    cross-attention, forward and backward): the mask's leading axes are told
    apart by the input's batch axes. For ``X`` of shape ``(..., T_q, d_model)``
    with ``x_ndim`` axes:

    * a mask with at most ``x_ndim`` axes, ``(..., T_q, T_k)``, has no head
      axis: it is shared by every head and gets one, ``(..., 1, T_q, T_k)``;
    * a mask with ``x_ndim + 1`` axes, ``(..., h, T_q, T_k)``, carries its head
      axis at ``-3``, of size 1 or ``n_heads`` (a per-head additive bias);
    * a mask with more axes fits neither form and is refused.

    Parameters
    ----------
    mask : array_like of shape (..., T_q, T_k) or (..., h, T_q, T_k), or None
        Additive (0 where allowed, -inf where blocked, or any bias).
    x_ndim : int
        The number of axes of the layer's input, batch axes and ``(T, d_model)``
        (for cross-attention, the larger of ``X``'s and ``C``'s).
    n_heads : int
        The number of heads of the scores (query heads), ``h``.

    Returns
    -------
    mask : ndarray of shape (..., 1 or h, T_q, T_k), or None
        None for no mask; a mask of fewer than 3 axes is returned as it is
        (it broadcasts over the heads already).

    Raises
    ------
    ValueError
        If the mask has more than ``x_ndim + 1`` axes, or a head axis of
        another size than 1 or ``n_heads``.
    """
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.ndim > x_ndim + 1:
        raise ValueError(
            f"mask must have at most {x_ndim + 1} axes for an input with {x_ndim}: "
            f"(..., T_q, T_k) without a head axis, or (..., n_heads, T_q, T_k) with one, "
            f"but got a mask of shape {mask.shape}."
        )
    if mask.ndim == x_ndim + 1:  # (..., h, T_q, T_k): the head axis is axis -3
        if mask.shape[-3] not in (1, n_heads):
            raise ValueError(
                f"mask has one axis more than the input ({x_ndim}), so its axis -3 is the "
                f"head axis and must have size 1 or n_heads={n_heads}, "
                f"but got a mask of shape {mask.shape}."
            )
        return mask
    if mask.ndim > 2:
        return np.expand_dims(mask, -3)  # (..., 1, T_q, T_k): the same for every head
    return mask  # (T_q, T_k), (T_k,) or a scalar: broadcasts over the heads as it is
