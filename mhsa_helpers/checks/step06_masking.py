"""Step 6: the additive causal and padding masks."""

from __future__ import annotations

import re

import numpy as np

from .. import reference as ref
from .batches import random_shape
from .comparison import compare
from .core import Call, Check
from .failures import CheckFailed, said_publicly
from .hints import BOOLEAN_MASK, PLUS_INFINITY, ZERO_TIMES_INF, additive


def finite_for_infinity(name: str, got, expected, what: str) -> None:
    """Fail, naming it, where ``got`` is ``expected`` with a large finite number for −∞.

    Real code often blocks with −1e9, −1e10 or the dtype's lowest value: the
    partly blocked rows come out nearly right, but a fully blocked row gets
    uniform weights instead of none.
    """
    try:
        got = np.asarray(got)
    except (TypeError, ValueError, OverflowError):  # ragged: compare() says what it is
        return
    if got.dtype.kind not in "biuf":  # complex, objects, text: compare() says what it is
        return
    got = got.astype(np.float64)
    blocked = np.isneginf(expected)
    if got.shape != expected.shape or not blocked.any() or not np.isfinite(got).all():
        return
    stand_in = got[blocked]
    if stand_in.max() > -1e3 or not np.allclose(got[~blocked], expected[~blocked]):
        return
    mantissa, exponent = f"{stand_in.max():.0e}".split("e")
    value = f"{mantissa}e{int(exponent)}"  # -1e9, -2e308
    raise CheckFailed(
        f"{name}: {what} blocks with {value}, a large finite number, where the course uses "
        "-np.inf (−∞): a row where every key is blocked then gets equal weights 1/T instead of "
        "none, and a blocked weight is small but not 0. Use -np.inf.",
        public=f"{name}: {what} blocks with a large finite number instead of −∞.",
    )


def causal_mistakes(T: int) -> list:
    """``(hint, wrong mask)`` for the known mistakes in a causal mask of size ``T``."""
    i = np.arange(T)[:, None]  # (T, 1) queries
    j = np.arange(T)[None, :]  # (1, T) keys
    return [
        (
            "the mask is flipped: −∞ goes above the diagonal, where key j > query i, so a token "
            "cannot see the future.",
            np.where(j < i, -np.inf, 0.0),
        ),
        (
            "this is the anti-triangle drawn in the source article; mask where key j > query i "
            "(above the main diagonal).",
            np.where(i + j > T - 1, -np.inf, 0.0),
        ),
        (
            "the diagonal is masked too: a token may attend to itself (j == i).",
            np.where(j >= i, -np.inf, 0.0),
        ),
        (
            "the mask is additive: 0 where attention is allowed, -np.inf where it is blocked "
            "(not 1 and 0, not booleans).",
            np.where(j > i, 0.0, 1.0),
        ),
        (
            "the mask is additive: 0 where attention is allowed, -np.inf where it is blocked "
            "(not 0 and 1).",
            (j > i).astype(float),
        ),
        (ZERO_TIMES_INF, np.where(j > i, -np.inf, np.nan)),
        (PLUS_INFINITY, np.where(j > i, np.inf, 0.0) if T > 1 else None),
        (
            "off by one: −∞ starts at key j = i + 2, so the key right after each query "
            "(j = i + 1) stays visible; the future starts at j = i + 1 (range(i + 1, seq_len), "
            "np.triu(..., k=1)).",
            np.where(j > i + 1, -np.inf, 0.0) if T > 1 else None,
        ),
        (
            "row 0 has no −∞: query 0 sees every key, the future too; the loop over queries "
            "skips the first row (range(1, seq_len)): start it at 0, so row 0 blocks keys 1 "
            "and up.",
            np.where((j > i) & (i > 0), -np.inf, 0.0) if T > 1 else None,
        ),
    ]


def padding_mistakes(lengths, T: int) -> list:
    """``(hint, wrong mask)`` for the known mistakes in a padding mask."""
    L = np.asarray(lengths)
    j = np.arange(T)  # (T,) key positions
    off_by_one = "off by one: positions 0 … length-1 are real tokens, −∞ starts at position length."
    return [
        (
            "the mask is additive: 0 where attention is allowed, -np.inf where it is blocked "
            "(not a keep-mask of 1 for real tokens and 0 for padding).",
            np.where(j < L[..., None, None], 1.0, 0.0),
        ),
        (
            "the mask hides queries instead of keys: the padded positions are key columns, so "
            "the mask has shape lengths.shape + (1, seq_len).",
            np.where(j[:, None] >= L[..., None, None], -np.inf, 0.0),
        ),
        (
            "the mask is inverted: −∞ on the real tokens (keys j < length) and 0 on the "
            "padding; block the padded keys, j ≥ length, and leave the real ones at 0.",
            np.where(j < L[..., None, None], -np.inf, 0.0),
        ),
        (
            f"{additive('1.0 at the padded keys (a 0/1 mask)')} Added to the scores, a 1 only "
            "raises a padded key's score by 1, which blocks nothing.",
            np.where(j >= L[..., None, None], 1.0, 0.0),
        ),
        (off_by_one, np.where(j > L[..., None, None], -np.inf, 0.0)),
        (off_by_one, np.where(j >= L[..., None, None] - 1, -np.inf, 0.0)),
        (
            "keep the query axis of size 1: the shape is lengths.shape + (1, seq_len), so the "
            "mask broadcasts against the scores (..., T_q, T_k).",
            np.where(j >= L[..., None], -np.inf, 0.0),
        ),
        (ZERO_TIMES_INF, np.where(j >= L[..., None, None], -np.inf, np.nan)),
        (PLUS_INFINITY, np.where(j >= L[..., None, None], np.inf, 0.0)),
        (left_padding(L, T), np.where(j < T - L[..., None, None], -np.inf, 0.0)),
        (
            f"the mask is (seq_len, seq_len) = ({T}, {T}) and also blocks the padded queries "
            "(rows i ≥ length): a padding mask blocks only key columns, so its shape is "
            f"lengths.shape + (1, seq_len) = {(*L.shape, 1, T)}; the query axis of size 1 "
            "broadcasts over every query.",
            np.where((j >= L[..., None, None]) | (j[:, None] >= L[..., None, None]), -np.inf, 0.0),
        ),
    ]


def left_padding(lengths, T: int) -> str:
    """The hint for a padding mask that blocks the first ``T - length`` keys (left padding)."""
    here = ""
    if np.ndim(lengths) == 0 and 0 < int(lengths) < T:
        L = int(lengths)

        def keys(a: int, b: int) -> str:
            return f"key {a}" if a == b else f"keys {a}{' and ' if b == a + 1 else ' … '}{b}"

        first, last = keys(0, T - L - 1), keys(L, T - 1)
        here = f" (here length = {L}, seq_len = {T}: −∞ on {first} instead of {last})"
    return (
        "the padding is blocked at the start (left padding): −∞ on the first seq_len − length "
        f"keys, j < seq_len − length{here}. In this course a sequence's real tokens come "
        "first, positions 0 … length − 1, and its padding after them: block the keys "
        "j ≥ length."
    )


#: numpy's and Python's words when an array of lengths is used where one int is expected.
ONE_INT = (
    "only integer scalar arrays can be converted to a scalar index",
    "only length-1 arrays can be converted to Python scalars",
    "only 0-dimensional arrays can be converted to Python scalars",
    "interpreted as an integer",
    "truth value of an array",
    "slice indices must be integers",
)


def _lengths_as_they_are(lengths, T: int, said: str) -> bool:
    """Whether ``said`` is numpy's broadcast error of the key positions, shape (T,) or (1, T),
    against the lengths with their own shape: the lengths used as if they were one int."""
    if np.ndim(lengths) == 0 or "could not be broadcast" not in said:
        return False
    shapes = {
        tuple(int(n) for n in found.split(",") if n.strip())
        for found in re.findall(r"\(([\d,\s]*)\)", said)
    }
    return np.shape(lengths) in shapes and bool(shapes & {(T,), (1, T)})


class CausalMask(Check):
    name = "causal_mask"
    passed = "0 on and below the diagonal, −∞ above it."
    passed_hidden = "correct for random sizes."

    def visible(self):
        return [Call((T,)) for T in (6, 1, 3)]

    def hidden(self, rng):
        return [Call((int(T),)) for T in rng.integers(2, 40, size=4)]

    def catalogue(self, call):
        (T,) = call.args
        return ref.causal_mask(T), causal_mistakes(T)

    def judge(self, call, got):
        if isinstance(got, np.ndarray) and got.dtype == bool:
            raise CheckFailed(f"{self.name}: {BOOLEAN_MASK}")
        expected, known = self.catalogue(call)
        finite_for_infinity(self.name, got, expected, "the causal mask")
        compare(self.name, got, expected, "the causal mask", known)


def _head_axis_too(name: str, got, expected) -> None:
    """Fail where the padding mask has extra axes of size 1 before its last two (a head axis,
    the (B, 1, 1, T) layout of a key padding mask for (B, h, T_q, T_k) scores)."""
    if (
        not isinstance(got, np.ndarray)
        or got.ndim <= expected.ndim
        or got.shape[-1:] != (expected.shape[-1],)
    ):
        return
    lead, extra = got.shape[:-2], got.shape[-2:]
    squeezed = tuple(n for n in lead if n != 1)
    wanted = tuple(n for n in expected.shape[:-2] if n != 1)
    if extra[0] != 1 or squeezed != wanted:
        return
    with np.errstate(all="ignore"):
        if not np.array_equal(got.reshape(expected.shape), expected):
            return
    more = got.ndim - expected.ndim
    axes = "an extra axis" if more == 1 else f"{more} extra axes"
    raise CheckFailed(
        f"{name}: the mask has shape {got.shape}, with {axes} of size 1 before the query axis "
        "(a head axis, as in a key padding mask laid out (batch, 1, 1, T) for scores "
        f"(batch, heads, T_q, T_k)); this course's padding mask is lengths.shape + "
        f"(1, seq_len) = {expected.shape}: the layer inserts the head axis itself.",
        public=f"{name}: the mask has extra axes of size 1 (a head axis) before the query axis.",
    )


def _batch_of_one(name: str, lengths, got, expected) -> None:
    """Fail where one int length gave a batch of one, (1, 1, seq_len) for (1, seq_len): the
    int wrapped into an array of one length (np.atleast_1d, [lengths])."""
    if np.ndim(lengths) != 0 or not isinstance(got, np.ndarray):
        return
    if got.shape != (1, *expected.shape):
        return
    with np.errstate(all="ignore"):
        if not np.array_equal(got[0], expected):
            return
    raise CheckFailed(
        f"{name}: for one int length the mask has shape (1, seq_len) = {expected.shape}, but "
        f"this one has {got.shape}: the int was made a batch of one (np.atleast_1d(lengths), "
        "[lengths]). An int has lengths.shape = (), so the mask is lengths.shape + (1, seq_len): "
        "use lengths as it is, np.asarray(lengths)[..., None, None], without wrapping it.",
        public=f"{name}: one int length gives a mask with an extra axis (a batch of one).",
    )


class PaddingMask(Check):
    name = "padding_mask"
    core_ndim = 0  # lengths: an int for one sequence, (...,) for a batch
    passed = (
        "hides the key positions from each length on, with shape lengths.shape + (1, T), for "
        "one length and for lengths with one and two axes."
    )
    passed_hidden = "correct for random lengths and batch shapes."

    def visible(self):
        return [
            Call((4, 6)),
            Call((np.array([6, 3, 1]), 6)),
            Call((np.array([[6, 3], [0, 2]]), 6)),  # two batch axes: shape (2, 2, 1, 6)
        ]

    def hidden(self, rng):
        calls = []
        for _ in range(3):
            T = int(rng.integers(2, 12))
            calls.append(Call((rng.integers(0, T + 1, size=random_shape(rng)), T)))
        return calls

    def catalogue(self, call):
        lengths, T = call.args
        return ref.padding_mask(lengths, T), padding_mistakes(lengths, T)

    def judge(self, call, got):
        if isinstance(got, np.ndarray) and got.dtype == bool:
            raise CheckFailed(f"{self.name}: {BOOLEAN_MASK}")
        expected, known = self.catalogue(call)
        finite_for_infinity(self.name, got, expected, "the padding mask")
        _batch_of_one(self.name, call.args[0], got, expected)
        _head_axis_too(self.name, got, expected)
        compare(self.name, got, expected, "the padding mask", known)

    def explain_error(self, call, outcome):
        """As :meth:`Check.explain_error`; an error on one int length names the int case."""
        lengths, T = call.args
        code, said = outcome.code or "", (outcome.error or "").split(" raised ", 1)[-1]
        if code == "raised:OverflowError" and "infinity to integer" in said:
            return super().explain_error(call, outcome)  # an int array: the general sentence
        one_int = code.startswith("raised:") and any(w in said for w in ONE_INT)
        if one_int and np.ndim(lengths) > 1:
            shape = (*np.shape(lengths), 1, T)
            return CheckFailed(
                f"{self.name}: it fails on lengths with {np.ndim(lengths)} axes (here shape "
                f"{np.shape(lengths)}, giving a mask of shape lengths.shape + (1, seq_len) = "
                f"{shape}): a loop over lengths gets whole rows of lengths, not single ones, "
                "and a slice m[b, 0, n:] or `if j >= n` takes a single number. Compare every "
                "key position with every length at once, whatever the axes: np.arange(seq_len) "
                f">= np.asarray(lengths)[..., None, None] ({outcome.error})",
                public=f"{self.name} fails on lengths with more than one axis.",
            )
        unshaped = code.startswith("raised:") and _lengths_as_they_are(lengths, T, said)
        if (one_int or unshaped) and np.ndim(lengths) > 0:
            shape = (*np.shape(lengths), 1, T)
            why = (
                f"np.arange(seq_len) compared with the lengths as they are pairs {T} key "
                f"positions with {np.size(lengths)} lengths, shapes that do not broadcast"
                if unshaped
                else "a slice m[:, lengths:], range(lengths) or `if j >= lengths` takes a "
                "single number"
            )
            return CheckFailed(
                f"{self.name}: it works for one int length only, but lengths may be an array, "
                f"one length per sequence (here shape {np.shape(lengths)}, giving a mask of "
                f"shape lengths.shape + (1, seq_len) = {shape}): {why}. Compare every key "
                "position with every length at once: np.arange(seq_len) >= "
                f"np.asarray(lengths)[..., None, None] ({outcome.error})",
                public=f"{self.name} works for one int length only, not for an array of lengths.",
            )
        if code.startswith("raised:") and np.ndim(lengths) == 0:
            return CheckFailed(
                f"{self.name}: lengths may be a single int (one sequence), not only an array: "
                "np.asarray(lengths)[..., None, None] handles both, giving shape (1, seq_len) "
                f"for an int ({outcome.error})",
                public=said_publicly(self.name, outcome.code),
            )
        return super().explain_error(call, outcome)
