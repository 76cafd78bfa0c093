"""The optimiser, Adam (given in the training notebook: not an exercise)."""

from __future__ import annotations

import numpy as np

__all__ = ["LEARNING_RATE", "Adam"]

LEARNING_RATE = 1e-2


class Adam:
    """Adam (Kingma and Ba, 2015): a step per parameter, scaled by its gradient's history.

    For each parameter ``p`` with gradient ``g`` at step ``t``::

        m = beta1 * m + (1 - beta1) * g          running mean of the gradient
        v = beta2 * v + (1 - beta2) * g**2       running mean of its square
        p -= lr * (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps)

    The divisions by ``1 - beta**t`` undo the running means' start at zero.
    Every parameter moves by about ``lr`` per step at most, whatever the
    scale of its gradient.

    Parameters
    ----------
    params : dict of ndarray
        Updated in place by :meth:`step`.
    learning_rate : float
    beta1, beta2 : float
    eps : float
    """

    def __init__(self, params: dict, learning_rate=LEARNING_RATE, beta1=0.9, beta2=0.999, eps=1e-8):
        self.learning_rate, self.beta1, self.beta2, self.eps = learning_rate, beta1, beta2, eps
        self.m = {n: np.zeros_like(p) for n, p in params.items()}
        self.v = {n: np.zeros_like(p) for n, p in params.items()}
        self.t = 0

    def step(self, params: dict, grads: dict) -> None:
        """Move every parameter of ``params`` one step against its gradient in ``grads``."""
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        for n, g in grads.items():
            self.m[n] = b1 * self.m[n] + (1 - b1) * g
            self.v[n] = b2 * self.v[n] + (1 - b2) * g * g
            m_hat = self.m[n] / (1 - b1**self.t)
            v_hat = self.v[n] / (1 - b2**self.t)
            params[n] -= self.learning_rate * m_hat / (np.sqrt(v_hat) + self.eps)
