"""Checking a gradient the way it is defined: central differences of a scalar loss.

For a function ``f`` and a fixed random ``G`` of the output's shape, the loss
``L(x) = sum(f(x) * G)`` has the gradient that a backward pass computes from
``dOut = G``. Nudging one entry of ``x`` by ``±h`` gives that entry's
gradient to about ``h²`` (central differences):

    dL/dx_i ≈ (L(x + h e_i) − L(x − h e_i)) / (2 h)

It costs two forward passes per entry, so it is for small inputs only: the
way to *check* a backward pass, never to replace it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["central_differences", "relative_error"]


def central_differences(f, x, G, h: float = 1e-6) -> np.ndarray:
    """The gradient of ``sum(f(x) * G)`` with respect to ``x``, entry by entry.

    Parameters
    ----------
    f : callable
        Maps an array of the shape of ``x`` to an array of the shape of ``G``.
    x : ndarray of any shape
        The point, float64 (it is not changed).
    G : ndarray of the shape of f(x)
        The gradient with respect to the output (``dOut``).
    h : float, default=1e-6
        The step.

    Returns
    -------
    grad : ndarray of the shape of x
    """
    x = np.array(x, dtype=np.float64)  # a copy: the caller's array is never nudged
    G = np.asarray(G, dtype=np.float64)
    grad = np.zeros_like(x)
    flat, out = x.reshape(-1), grad.reshape(-1)  # views: nudging flat nudges x
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        up = float(np.sum(np.asarray(f(x)) * G))
        flat[i] = old - h
        down = float(np.sum(np.asarray(f(x)) * G))
        flat[i] = old
        out[i] = (up - down) / (2 * h)
    return grad


def relative_error(got, expected) -> float:
    """``max |got − expected| / max(|expected|)``: one number for how far two gradients are."""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    scale = float(np.abs(expected).max(initial=0.0))
    return float(np.abs(got - expected).max(initial=0.0)) / max(scale, 1e-12)
