"""Step 3: queries, keys and values, each weight acting on the right."""

from __future__ import annotations

import math
import re

import numpy as np

from ..examples import get_example
from .batches import batch_rng, random_shape
from .comparison import compare
from .core import Call, Check
from .failures import CheckFailed
from .hints import matches_on_random
from .relayed import core_sizes

NAMES = ("Q", "K", "V")


def mistakes(X, weights: dict, name: str) -> list:
    """``(hint, wrong matrix)`` for the known mistakes in computing ``name`` (Q, K or V)."""
    right = {n: X @ W for n, W in weights.items()}
    out = [
        (
            f"{name} equals X @ W_{other.lower()}: you used the same weight for Q, K and V, "
            f"or returned them out of order; {name} = X @ W_{name.lower()}.",
            right[other],
        )
        for other in NAMES
        if other != name
    ]
    W = weights[name]
    out += [  # a chain: K = Q @ W_k, V = K @ W_v (the earlier projection for X)
        (
            f"{name} is computed from {other}, {name} = {other} @ W_{name.lower()}, a chain: every "
            f"projection starts from X, {name} = X @ W_{name.lower()}.",
            right[other] @ W if right[other].shape[-1] == W.shape[0] else None,
        )
        for other in NAMES[: NAMES.index(name)]
    ]
    out.append(
        (
            f"{name} = X @ W_{name.lower()}.T: the weights act on the right as they are, "
            "without transposing.",
            X @ W.T,
        )
    )
    d_model = X.shape[-1]
    out += [
        (
            f"{name} is divided by {by}: the projection is X @ W_{name.lower()} alone; the "
            "scale 1/√d_k belongs to the scores Q·Kᵀ (step 5), not to Q, K or V.",
            X @ W / math.sqrt(size),
        )
        for by, size in ((f"√d_model = √{d_model}", d_model),)
        if size > 1
    ]
    n = name.lower()
    out.append(
        (
            f"{name} = W_{n} @ X.T: the weight is on the left, which gives the transpose of "
            f"{name}, (d_model, T) instead of (T, d_model); the input comes first: "
            f"{name} = X @ W_{n}.",
            W @ X.swapaxes(-1, -2) if X.ndim == 2 else None,
        )
    )
    if X.ndim > 2:  # X.reshape(-1, d_model) @ W: (B·T, d_model), the batch never restored
        rows = int(np.prod(X.shape[:-1]))
        out.append(
            (
                f"the batch axes are flattened into the rows (B·T = {rows} rows of "
                f"X.reshape(-1, d_model)) and never restored: X @ W_{n} keeps every leading "
                "axis, (..., T, d_model); or reshape the result back to X.shape[:-1] + "
                "(d_model,).",
                X.reshape(-1, d_model) @ W,
            )
        )
    fused = X @ np.concatenate(list(weights.values()), axis=-1)  # (..., T, 3·d_model)
    if fused.shape[0] % 3 == 0:  # np.split(X @ [W_q W_k W_v], 3, axis=0): the first axis cut
        out.append((fused_split_axis0(fused.shape, X.ndim), np.split(fused, 3)[NAMES.index(name)]))
    square = W.shape[0] == W.shape[1] and X.shape[-2] == W.shape[1]
    out.append(
        (
            f"{name} = W_{name.lower()} @ X: the input comes first, X @ W.",
            (W @ X.swapaxes(-1, -2)).swapaxes(-1, -2) if square else None,
        )
    )
    return out


def fused_split_axis0(shape: tuple, ndim: int) -> str:
    """The hint for the fused product X @ [W_q W_k W_v] split into three along its first axis
    (np.split(QKV, 3) or axis=0), which holds the tokens (a 2-D X) or a batch axis."""
    first = "the tokens" if ndim == 2 else "a batch axis"
    return (
        f"the fused product X @ [W_q W_k W_v], of shape (..., T, 3·d_model) = {shape}, is split "
        f"into three along its first axis ({first}: np.split's default axis=0), but Q's, K's and "
        "V's columns lie side by side along its last axis: split along that one, "
        "np.split(QKV, 3, axis=-1)."
    )


def fused_split_uneven(X, d_model: int) -> str:
    """The hint for np.split(X @ [W_q W_k W_v], 3) along an axis other than the last, read off
    numpy's refusal: that axis (a batch axis, or the tokens) does not divide by 3."""
    shape = (*X.shape[:-1], 3 * d_model)
    return (
        f"the fused product X @ [W_q W_k W_v], of shape (..., T, 3·d_model) = {shape}, is split "
        "into three along an axis other than its last (np.split's default axis=0 is a batch "
        "axis or the tokens), which here does not divide by 3; Q's, K's and V's columns lie "
        "side by side along the last axis: np.split(QKV, 3, axis=-1)."
    )


def stacked_weights(X, W, said: str) -> str | None:
    """The sentence for W_q, W_k, W_v stacked on a new leading axis, (3, d_model, d_model),
    which numpy lines up with X's batch axes (its broadcast error names the stack's shape);
    None for any other error."""
    if X.ndim < 3 or "could not be broadcast" not in said:
        return None
    shapes = {
        tuple(int(n) for n in found.split(",") if n.strip())
        for found in re.findall(r"\(([\d,\s]*)\)", said)
    }
    stack = (3, *W.shape)
    if stack not in shapes:
        return None
    return (
        f"the weights are stacked on a new leading axis (np.stack([W_q, W_k, W_v]), shape "
        f"{stack}), and X @ W lines that axis of 3 up with X's batch axes, here "
        f"{X.shape[:-2]}: a stack of weights is a batch to numpy. Compute X @ W_q, X @ W_k and "
        "X @ W_v one by one (or put the weights side by side, np.concatenate([W_q, W_k, W_v], "
        "axis=-1), and split the product's columns into three)."
    )


def column_vectors(shape: tuple) -> str:
    """The hint for the column-vector convention, (W.T @ X.T).T, on an X with batch axes."""
    return (
        f"X.T reverses all of X's axes, the batch axes too ({shape} becomes {shape[::-1]}), so "
        "(W.T @ X.T).T, the column-vector convention q = Wᵀx, equals X @ W for a 2-D X only. "
        "Write the product the right way round, Q = X @ W_q, which keeps every leading axis "
        "(or np.swapaxes(X, -1, -2) in place of X.T)."
    )


class ProjectQKV(Check):
    name = "project_qkv"
    passed = (
        "Q, K and V match on the song example, a batch of 2 sentences and a batch with two "
        "batch axes (2, 3)."
    )
    passed_hidden = matches_on_random("with batch axes")

    def visible(self):
        e = get_example("song")
        rng = batch_rng()
        batch = Call((rng.normal(size=(2, 5, 6)), *(rng.normal(size=(6, 6)) for _ in range(3))))
        two = Call((rng.normal(size=(2, 3, 5, 6)), *batch.args[1:]))  # two batch axes
        return [Call((e.X, e.W_q, e.W_k, e.W_v)), batch, two]

    def hidden(self, rng):
        calls = []
        for _ in range(3):
            T, d = (int(n) for n in rng.integers(2, 9, size=2))
            X = rng.normal(size=(*random_shape(rng), T, d))
            calls.append(Call((X, *(rng.normal(size=(d, d)) for _ in range(3)))))
        return calls

    def catalogue(self, call):
        X, *Ws = call.args
        weights = dict(zip(NAMES, Ws, strict=True))
        right = tuple(X @ W for W in Ws)
        known = []
        for i, name in enumerate(NAMES):
            for hint, wrong in mistakes(X, weights, name):
                if wrong is not None:  # the result with this one matrix wrong
                    known.append((hint, (*right[:i], wrong, *right[i + 1 :])))
        return right, known

    def relayed(self, call, said):
        """The weight put on the left, W @ X, read off numpy's refusal of its sizes; the three
        weights stacked on a new leading axis, read off numpy's refusal to broadcast it."""
        X, W = call.args[0], call.args[1]
        if not isinstance(X, np.ndarray) or not isinstance(W, np.ndarray) or X.ndim < 2:
            return None
        stacked = stacked_weights(X, W, said)
        if stacked:
            return stacked
        if "array split does not result in an equal division" in said:
            if any(n % 3 for n in X.shape[:-1]):  # an axis of X @ [W_q W_k W_v] but the last
                return fused_split_uneven(X, W.shape[-1])
            return None
        T, d_k = X.shape[-2], W.shape[-1]
        aligned = re.search(r"shapes \((\d+), ?(\d+)\) and \(([\d, ]+)\) not aligned", said)
        on_left = core_sizes(said) == (T, d_k) if "core dimension" in said else False
        reversed_x = False  # np.dot(W.T, X.T): X.T is X with every axis reversed
        if aligned is not None:  # np.dot(W, X)
            first = (int(aligned[1]), int(aligned[2]))
            second = tuple(int(n) for n in aligned[3].replace(",", " ").split())
            on_left = first == W.shape and second == X.shape
            reversed_x = X.ndim > 2 and first == W.shape and second == X.shape[::-1]
        elif on_left and X.ndim > 2:  # right on the 2-D X before: (W.T @ X.T).T, not W @ X
            reversed_x = True
        if reversed_x and T != d_k:
            return column_vectors(X.shape)
        if not on_left or T == d_k:
            return None
        return (
            "the weight is on the left, W @ X: the input comes first, Q = X @ W_q, "
            f"with X of shape {X.shape} and W_q of shape {W.shape} (each row of X, one token, "
            "times the weight); the weights act on the right."
        )

    def judge(self, call, got):
        X, *Ws = call.args
        if not isinstance(got, tuple | list) or len(got) != 3:
            raise CheckFailed(f"{self.name}: return the three matrices as a tuple (Q, K, V).")
        weights = dict(zip(NAMES, Ws, strict=True))
        for name, g in zip(NAMES, got, strict=True):
            compare(self.name, g, X @ weights[name], name, mistakes(X, weights, name))
