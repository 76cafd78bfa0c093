"""Step 2: Glorot-uniform initialisation.

Every size is drawn twice from two generators with the same seed, so that
reproducibility can be judged first (drawing from np.random is the likelier
mistake behind wrong values), then the bounds, then the spread of large
matrices.
"""

from __future__ import annotations

import math

import numpy as np

from .core import Call, Check, CheckFailed, as_result

#: Matrices with at least this many entries are judged on their spread too.
LARGE = 5000


def _twice(d_in: int, d_out: int, seed: int) -> list:
    """Two calls with two generators of the same seed, then one of another seed, then one
    generator and the same generator after one draw of d_in·d_out numbers: same, different,
    different.

    Each call's inputs travel to the learner's function on their own, so "the same
    generator, used again" is a generator in the state the first call leaves it in.
    """
    again = np.random.default_rng(seed + 1)
    again.random(d_in * d_out)  # the state after one call that drew the whole matrix
    return [
        Call((d_in, d_out, np.random.default_rng(seed)), context={"role": "seed"}),
        Call((d_in, d_out, np.random.default_rng(seed)), context={"role": "same seed"}),
        Call((d_in, d_out, np.random.default_rng(seed + 2)), context={"role": "other seed"}),
        Call((d_in, d_out, np.random.default_rng(seed + 1)), context={"role": "shared"}),
        Call((d_in, d_out, again), context={"role": "shared again"}),
    ]


class InitWeights(Check):
    name = "init_weights"
    passed = "Glorot-uniform: shape, reproducible from rng, bounded by a, variance a**2/3."
    passed_hidden = "Glorot-uniform on random shapes."

    def visible(self):
        return _twice(4, 4, 0) + _twice(200, 300, 1)

    def hidden(self, rng):
        calls = []
        for _ in range(3):
            d_in, d_out = (int(n) for n in rng.integers(1, 50, size=2))
            calls += _twice(d_in, d_out, int(rng.integers(1 << 30)))
        return calls + _twice(123, 77, int(rng.integers(1 << 30)))

    def judge(self, call, got):
        d_in, d_out, _ = call.args
        W = as_result(self.name, got, "W")
        if W.shape == (d_out, d_in) and d_in != d_out:
            raise CheckFailed(f"{self.name}: the shape is swapped; W must be (d_in, d_out).")
        if W.shape != (d_in, d_out):
            raise CheckFailed(
                f"{self.name}: W should have shape {(d_in, d_out)}, but has shape {W.shape}."
            )

    def judge_all(self, calls, results):
        for k in range(0, len(calls), 5):
            first, same, other, shared, again = results[k : k + 5]
            if not np.array_equal(first, same):
                raise CheckFailed(
                    f"{self.name}: two calls with the same rng seed differ; draw from `rng` "
                    "(rng.uniform), not from np.random."
                )
            if np.array_equal(first, other) or np.array_equal(shared, again):
                raise CheckFailed(
                    f"{self.name}: different generators (or one generator used twice) give the "
                    "same matrix; draw every value from the `rng` you are given (rng.uniform), "
                    "not from a generator of your own or a fixed pattern."
                )
        for call, W in zip(calls, results, strict=True):
            d_in, d_out, _ = call.args
            W = np.asarray(W, dtype=float)
            a = math.sqrt(6 / (d_in + d_out))
            if np.abs(W).max() > a * (1 + 1e-9):
                raise CheckFailed(
                    f"{self.name}: values reach {np.abs(W).max():.3g} beyond the Glorot limit "
                    f"a = sqrt(6 / (d_in + d_out)) = {a:.3g}; draw uniformly from [-a, a], "
                    "not from a normal distribution."
                )
            if d_in * d_out < LARGE:
                continue
            if W.min() > -a / 10:
                raise CheckFailed(
                    f"{self.name}: no value is negative; rng.random() gives [0, 1), "
                    "scale it to [-a, a]."
                )
            if abs(W.mean()) > a / 20 or not 0.93 < W.var() / (a * a / 3) < 1.07:
                raise CheckFailed(
                    f"{self.name}: the spread is off on a {W.shape} matrix (variance "
                    f"{W.var():.3g}, Glorot-uniform has a**2 / 3 = {a * a / 3:.3g}); use "
                    "a = sqrt(6 / (d_in + d_out))."
                )
