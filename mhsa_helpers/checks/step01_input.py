"""Step 1: the sinusoidal positional encoding."""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from .comparison import close, compare
from .core import Call, Check
from .failures import CheckFailed, said_publicly
from .wording import number


def _interleaved(angle):
    """sin(angle) in the even columns, cos(angle) in the odd ones; None stays None."""
    if angle is None:
        return None
    even = np.arange(angle.shape[-1]) % 2 == 0  # (d,)
    return np.where(even, np.sin(angle), np.cos(angle))


def mistakes(T: int, d: int) -> list:
    """``(hint, wrong encoding)`` for the known mistakes at size ``(T, d)``."""
    pos = np.arange(T)[:, None]  # (T, 1)
    col = np.arange(d)[None, :]  # (1, d)
    pair = 2 * (col // 2)
    angle = pos / 10000 ** (pair / d)  # (T, d)

    sin_even = _interleaved(angle)
    by_col = pos / 10000 ** (col / d)
    by_pair = pos / 10000 ** ((col // 2) / d)  # the pair's index i, without the 2
    doubled = pos / 10000 ** (2 * pair / d)  # 2·j with j already 2i: the exponent 4i/d_model
    per_column = pos / 10000 ** (2 * col / d)  # 2·j with j the column: every column its own
    by_length = pos / 10000 ** (pair / T) if T != d else None  # 2i/seq_len
    shifted = (pos + 1) / 10000 ** (pair / d)
    whole = pos / 10000.0 ** (pair // d)  # 2i // d_model: 0 for every pair, frequency 1
    times = pos * 10000.0 ** (pair / d)  # the position multiplied, not divided
    less_one = pos / 10000.0 ** (pair / (d - 1)) if d > 2 else None  # d_model − 1
    padded = pos / 10000.0 ** (pair / (d + 1)) if d % 2 else None  # odd d_model made even
    log10 = pos * np.exp(-pair * np.log10(10000.0) / d)  # div_term with log10 for ln
    unpaired = np.where(col == d - 1, 0.0, sin_even) if d % 2 and d > 1 else None
    half = (d + 1) // 2  # sin takes the first half, cos the rest
    halves = pos / 10000 ** (2 * np.arange(half) / d)  # (T, half)
    return [
        (
            "sine and cosine are laid out in two halves (the first columns sin, the rest cos, "
            "as some libraries do); here they interleave: column 2i takes sin and column 2i+1 "
            "cos, of the same angle pos/10000**(2i/d_model).",
            np.concatenate([np.sin(halves), np.cos(halves)[:, : d - half]], axis=1),
        ),
        (
            "sine and cosine are swapped: even columns 2i take sin, odd columns 2i+1 take cos.",
            np.where(col % 2 == 0, np.cos(angle), np.sin(angle)),
        ),
        (
            "the exponent uses the column index; columns 2i and 2i+1 share the frequency "
            "1/10000**(2i/d_model).",
            _interleaved(by_col),
        ),
        (
            "the exponent misses its factor 2: columns 2i and 2i+1 take the angle "
            "pos/10000**(2i/d_model), with i the pair's index (0, 1, 2, …), so the exponent is "
            "2i/d_model, not i/d_model.",
            _interleaved(by_pair),
        ),
        (
            "the exponent is doubled, 4i/d_model: a loop over the even columns "
            "(j in range(0, d_model, 2), or np.arange(0, d_model, 2)) already gives j = 2i, so "
            "the exponent is j/d_model, not 2·j/d_model; the angle of columns 2i and 2i+1 is "
            "pos/10000**(2i/d_model).",
            _interleaved(doubled),
        ),
        (
            "the exponent is 2·j/d_model with j the column index (a loop over every column j "
            "that still writes 2·j): twice too large, and every column gets its own frequency; "
            "columns 2i and 2i+1 share one angle, pos/10000**(2i/d_model), so both take the "
            "exponent of their pair's even column 2i.",
            _interleaved(per_column),
        ),
        (
            f"the exponent divides 2i by seq_len = {T}, not by d_model = {d}: the angle of "
            "columns 2i and 2i+1 is pos/10000**(2i/d_model), whatever the number of positions.",
            _interleaved(by_length),
        ),
        (
            "positions start at 0, not 1.",
            _interleaved(shifted),
        ),
        (
            "the exponent is 2i // d_model, an integer division, which is 0 for every pair: "
            "every column pair gets the angle pos itself (frequency 1); the exponent is the "
            "fraction 2i / d_model.",
            _interleaved(whole),
        ),
        (
            "the position is multiplied by 10000**(2i/d_model) instead of divided by it: the "
            "angle is pos / 10000**(2i/d_model), so the frequencies fall from 1 as i grows.",
            _interleaved(times),
        ),
        (
            f"the exponent is divided by d_model − 1 = {d - 1}, not by d_model = {d}: the angle "
            "of columns 2i and 2i+1 is pos/10000**(2i/d_model).",
            _interleaved(less_one),
        ),
        (
            f"the frequencies are computed with d_model + 1 = {d + 1} (an odd d_model padded to "
            f"an even width, then cut), not with d_model = {d}: the angle of columns 2i and "
            "2i+1 is pos/10000**(2i/d_model), with the real d_model.",
            _interleaved(padded),
        ),
        (
            "the frequencies use log10(10000) = 4 where the natural log ln(10000) ≈ 9.21 "
            "belongs: exp(−2i·ln(10000)/d_model) is 10000**(−2i/d_model), and np.log is the "
            "natural log.",
            _interleaved(log10),
        ),
        (
            f"the last column, {d - 1}, is left at 0: with an odd d_model it is the sine of a "
            "last pair without a cosine partner (2i = d_model − 1), and a loop over whole "
            "pairs skips it; fill it with sin(pos/10000**((d_model − 1)/d_model)).",
            unpaired,
        ),
        ("only sine is used; odd columns 2i+1 take the cosine.", np.sin(angle)),
        ("the result is transposed: rows are positions, shape (seq_len, d_model).", sin_even.T),
    ]


INT_ENCODING = (
    "the encoding is an array of integers (made with dtype=int, or zeros_like of integers, "
    "np.arange for one): every sin and cos put in it is cut to a whole number, mostly 0; "
    "use floats: np.zeros((seq_len, d_model))."
)


def other_base(got, T: int, d: int) -> float | None:
    """The base b ≠ 10000 for which ``got`` is the encoding with angles pos/b**(2i/d), or None.

    Read off the sine of position 1 in column 2 (the second pair), then confirmed on the
    whole array; only a base of two significant digits (1000, 100000), as one types it.
    """
    if T < 2 or d < 4 or not isinstance(got, np.ndarray) or got.shape != (T, d):
        return None
    if got.dtype.kind != "f" or not np.isfinite(got).all() or not 0 < got[1, 2] < 1:
        return None
    base = float(np.arcsin(got[1, 2]) ** (-d / 2))  # sin(1/b**(2/d)) = got[1, 2]
    if not np.isfinite(base) or base <= 1 or abs(base - 10000) < 1:
        return None
    if not np.isclose(base, float(f"{base:.2g}"), rtol=1e-6):
        return None  # a base no one types (10000**(d/(d-1)): another slip than the base)
    pos, col = np.arange(T)[:, None], np.arange(d)[None, :]
    angle = pos / base ** (2 * (col // 2) / d)
    made = _interleaved(angle)
    return round(base, 6) if close(got, made, atol=1e-6) else None


class PositionalEncoding(Check):
    name = "positional_encoding"
    passed = "matches the sinusoidal encoding for (6, 4), (10, 6), (3, 8) and odd d_model (7, 5)."
    passed_hidden = "matches on random sizes, odd d_model included."

    def visible(self):
        return [Call((T, d)) for T, d in [(6, 4), (10, 6), (3, 8), (7, 5)]]

    def hidden(self, rng):
        sizes = [(int(rng.integers(1, 60)), int(rng.integers(1, 40))) for _ in range(5)]
        return [Call(s) for s in [*sizes, (7, 5)]]  # and one odd d_model

    def catalogue(self, call):
        T, d = call.args
        return ref.positional_encoding(T, d), mistakes(T, d)

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        T, d = call.args
        if isinstance(got, np.ndarray) and got.dtype.kind in "iu" and T > 1:
            if close(got, np.trunc(expected)):
                raise CheckFailed(f"{self.name}: {INT_ENCODING}")
        catalogued = any(w is not None and close(got, w) for _, w in known)
        base = None if catalogued else other_base(got, T, d)  # base 100: the exponent's 2
        if base is not None:
            raise CheckFailed(
                f"{self.name}: the angles' base is {number(base)}, not 10000: the angle of "
                "columns 2i and 2i+1 is pos/10000**(2i/d_model).",
                public=f"{self.name}: the angles' base is not 10000.",
            )
        compare(self.name, got, expected, "the encoding", known)

    def explain_error(self, call, outcome):
        """As :meth:`Check.explain_error`; an error at an odd d_model names the unpaired column."""
        d = call.args[1]
        if (outcome.code or "").startswith("raised:") and d % 2:
            return CheckFailed(
                f"{self.name}: an odd d_model = {d} must work too: its last column "
                f"{d - 1} = 2i takes sin and has no cos partner, so there is one sin column "
                "more than cos columns (fill PE[:, 0::2] and PE[:, 1::2] from angles of "
                f"their own widths) ({outcome.error})",
                public=said_publicly(self.name, outcome.code),
            )
        return super().explain_error(call, outcome)
