"""Extension 1: rotary position embeddings (RoPE), the interleaved RoFormer convention."""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from .batches import random_shape
from .comparison import as_result, close, compare, precision
from .core import Call, Check
from .failures import CheckFailed, redact
from .hints import matches_on_random
from .wording import number

HALF_SPLIT = (
    "the pairs are the two halves (x[i], x[i + d/2]), the GPT-NeoX layout; this course "
    "rotates interleaved pairs (x[2i], x[2i+1])."
)
THETA_FROM_I = "θ_i uses base^(−i/d); the exponent is −2i/d, so θ_i = base^(−2i/d)."
CLOCKWISE = (
    "the pairs turn clockwise (the sine's signs are swapped): out[2i] = x[2i]·cos − "
    "x[2i+1]·sin and out[2i+1] = x[2i]·sin + x[2i+1]·cos."
)
POSITIONS_IGNORED = (
    "the positions passed in are ignored: rotate each token by its own position p, "
    "using arange(T) only when positions is None."
)
BASE_IGNORED = "the base passed in is ignored: θ_i = base^(−2i/d) with the given base."
EXPONENT_SIGN = (
    "θ_i = base^(+2i/d) grows with i; the exponent is negative: θ_i = base^(−2i/d), so the "
    "first pair turns fastest."
)
ROTATED_TWICE = (
    "the second line uses x[2i] after it was already rotated: keep the original x[2i] and "
    "x[2i+1] for both lines (compute both from the input)."
)
FROM_ONE = "the positions start at 1; by default they are arange(T): the first token is at 0."
COS_SIN_SWAPPED = (
    "cos and sin are swapped (cos taken where sin belongs): out[2i] = x[2i]·cos(pθ_i) − "
    "x[2i+1]·sin(pθ_i) and out[2i+1] = x[2i]·sin(pθ_i) + x[2i+1]·cos(pθ_i), so that position "
    "0 (cos 1, sin 0) leaves the token as it is."
)
HALVES_OUT = (
    "the rotated pairs are written back as two halves (every out[2i] first, then every "
    "out[2i+1]): write them interleaved, out[..., 0::2] and out[..., 1::2], so that each pair "
    "stays where it was."
)
DEGREES = (
    "the angles are converted as if in degrees (np.deg2rad, or ·π/180): p·θ_i is already in "
    "radians; pass it to np.cos and np.sin as it is."
)
LINSPACE = (
    "θ_i = base^(−2i/(d−2)), as np.linspace(0, 1, d // 2) gives, reaches base^(−1) at the last "
    "pair; the exponent is −2i/d (np.arange(0, d, 2) / d), which stops short of −1."
)
DOUBLED_EXPONENT = (
    "the exponent is doubled, θ_i = base^(−4i/d): np.arange(0, d, 2) already is 2i (the even "
    "features), so −2·np.arange(0, d, 2)/d counts the factor two twice. Use "
    "−np.arange(0, d, 2)/d as it is: θ_i = base^(−2i/d)."
)
LAST_PAIR = (
    "the last pair (the final two features of each token) is never rotated: the loop over the "
    "pairs stops one short. Loop over every pair, range(d // 2), or rotate them all at once "
    "with X[..., 0::2] and X[..., 1::2]."
)
INTEGER_EXPONENT = (
    "the exponent is taken with integer division, 2i // d, which is 0 for every pair, so "
    "every θ_i is base^0: each pair turns by one radian per position. Divide as floats: "
    "θ_i = base^(−2i / d)."
)


SECOND_LINE_SWAPPED = (
    "the second line swaps cos and sin: out[2i+1] = x[2i]·sin(pθ_i) + x[2i+1]·cos(pθ_i), not "
    "x[2i]·cos + x[2i+1]·sin (the first line, out[2i] = x[2i]·cos − x[2i+1]·sin, is right)."
)
FIRST_LINE_SWAPPED = (
    "the first line swaps cos and sin: out[2i] = x[2i]·cos(pθ_i) − x[2i+1]·sin(pθ_i), not "
    "x[2i]·sin − x[2i+1]·cos (the second line, out[2i+1] = x[2i]·sin + x[2i+1]·cos, is right)."
)
TABLES_TILED = (
    "the cos and sin tables are tiled, [θ_0, θ_1, …, θ_0, θ_1, …] (np.concatenate("
    "[freqs, freqs]) or np.tile, the half-split layout's tables), so x[2i] and x[2i+1] turn "
    "by different angles: with interleaved pairs repeat each θ_i twice, [θ_0, θ_0, θ_1, θ_1, "
    "…] (np.repeat(freqs, 2, axis=-1))."
)

#: Positions passed in multiplied by θ without a feature axis (the default had one).
POSITIONS_NO_AXIS = (
    "the positions passed in get no feature axis (only the default arange(T)[:, None] has "
    "one), so they are multiplied by θ entry by entry along the pairs' axis."
)


#: The angles (θ_i and p·θ_i, or their cos and sin) computed in float32 for float64 inputs.
FLOAT32_ANGLES = (
    "the angles are computed in float32 (θ_i and p·θ_i, as PyTorch's RoPE code does with "
    "dtype=float32), which keeps only about seven significant digits: an angle p·θ_i drifts "
    "in proportion to the position p, by a thousandth of a radian near p = ten thousand. "
    "Compute θ_i, p·θ_i and their cos and sin in float64 (positions.astype(float), no "
    "np.float32)."
)


def float32_angles(X, positions, base: float) -> np.ndarray:
    """RoPE with θ_i, p·θ_i and their cos and sin computed in float32 (the rest in float64)."""
    X = np.asarray(X, dtype=np.float64)
    T, d = X.shape[-2:]
    pos = np.arange(T) if positions is None else np.asarray(positions)
    theta = 1.0 / np.float32(base) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
    angle = pos[..., None].astype(np.float32) * theta.astype(np.float32)
    cos, sin = np.cos(angle).astype(np.float64), np.sin(angle).astype(np.float64)
    out = np.empty(X.shape)
    x0, x1 = X[..., 0::2], X[..., 1::2]
    out[..., 0::2], out[..., 1::2] = x0 * cos - x1 * sin, x0 * sin + x1 * cos
    return out


def within_float32_angles(X, positions, got, expected) -> bool:
    """Whether ``got`` differs from ``expected`` no more than angles rounded to float32 make
    it: each token by at most its length times a few float32 steps of its largest angle p."""
    X = np.asarray(X, dtype=np.float64)
    if got.shape != expected.shape or not np.isfinite(got).all():
        return False
    T = X.shape[-2]
    pos = np.arange(T) if positions is None else np.asarray(positions, dtype=np.float64)
    pos = np.broadcast_to(np.abs(pos), X.shape[:-1])
    allowed = np.linalg.norm(X, axis=-1) * 4 * 2.0**-23 * (pos + 1) + 1e-12
    return bool(np.all(np.linalg.norm(got - expected, axis=-1) <= allowed))


def pairs_from_one(base: float, d: int) -> str:
    """The hint for the pairs counted from 1: θ_i = base^(−2(i+1)/d)."""
    first = number(float(base) ** (-2 / d))
    return (
        "the pairs are counted from 1: θ_i = base^(−2(i+1)/d), as np.arange(1, d // 2 + 1) "
        f"gives, so the first pair turns by base^(−2/d) = {first} radian per position instead "
        "of one. Count them from 0 (np.arange(0, d, 2) / d): the first pair's θ is base⁰, one "
        "radian per position."
    )


def first_sequence_positions(sequences: int, T: int) -> str:
    """The hint for the positions of ``sequences`` sequences replaced by the first one's."""
    return (
        "every sequence is rotated with the first sequence's positions: the positions of the "
        f"{sequences} sequences were flattened (or indexed) down to the first T = {T} (e.g. "
        "positions.reshape(-1)[:T]). Keep their batch axes: positions[..., None] * θ gives each "
        "sequence its own angles, lined up with X's pairs."
    )


def angle_table(T: int, past_its_end: bool = False) -> str:
    """The hint for angles looked up in a table of the positions 0 … T − 1 (arange(T)).

    Indexed by ``positions % T``, a position p ≥ T wraps around to p mod T; indexed by the
    positions themselves (``past_its_end``), it is past the table's end (IndexError).
    """
    what = (
        "a position p ≥ T is past its end"
        if past_its_end
        else "wrapped around with positions % T, so a position p ≥ T turns as p mod T"
    )
    return (
        f"the angles are looked up in a table of the positions 0 … T − 1 (arange(T), T = {T}), "
        f"indexed by the positions given: {what}. A position can be any whole number (with "
        "a KV cache, the next token's is T or more): compute the angles from the positions "
        "themselves, positions[..., None] · θ."
    )


def theta_over_T(T: int, d: int) -> str:
    """The hint for θ_i = base^(−2i/T): the sequence length T where the size d belongs."""
    return (
        f"θ_i = base^(−2i/T) divides the exponent by the sequence length T = {T}; it divides by "
        f"the size of the vectors, d = {d}: θ_i = base^(−2i/d), the same for every sequence."
    )


#: Per-batch positions given their feature axis in front of the last (positions[:, None]).
POSITIONS_AXIS_MISPLACED = (
    "per-batch positions get their new axis in the wrong place (positions[:, None], right "
    "only for positions of shape (T,)): add the feature axis last, positions[..., None] · θ, "
    "of shape (..., T, d/2), lined up with X's pairs."
)


def positions_axis_misplaced(shape: tuple, at: int, half: int) -> str:
    """The hint for positions of ``shape`` given a new axis at ``at`` instead of at the end."""
    moved = (*shape[:at], 1, *shape[at:])
    return (
        f"the positions of shape {shape} get their new axis at {at} (positions[:, None] gives "
        f"{moved}), which is right only for positions of shape (T,): per-batch positions keep "
        "their batch axes in front, so add the feature axis last, positions[..., None] · θ, of "
        f"shape {shape} + (d/2,) = {(*shape, half)}, lined up with X's pairs."
    )


def default_positions_from_front(first: int, T: int) -> str:
    """The hint for default positions counted along X's first axis (len(X), X.shape[0])."""
    return (
        f"the default positions count X's first axis (np.arange(len(X)) or X.shape[0]), which "
        f"is the batch ({first}) once X has batch axes, not the T = {T} tokens: take T from the "
        "end, np.arange(X.shape[-2])."
    )


#: :func:`default_positions_from_front` without the case's numbers (a hidden test's).
DEFAULT_POSITIONS_FROM_FRONT = (
    "the default positions count X's first axis (np.arange(len(X)) or X.shape[0]), which is "
    "the batch once X has batch axes, not the tokens: take T from the end, X.shape[-2]."
)


def _axis_inserted(positions, said: str) -> int | None:
    """Where numpy's broadcast error shows ``positions`` with a new axis of size 1 put in
    before its last axis (positions[:, None] on per-batch positions), or None."""
    shape = np.shape(positions)
    if len(shape) < 2:
        return None
    for at in range(len(shape)):
        moved = (*shape[:at], 1, *shape[at:])
        if moved[-1] != 1 and "(" + ",".join(str(n) for n in moved) + ")" in said:
            return at
    return None


def rope(X, positions=None, base=10000.0, **how) -> np.ndarray:
    """RoPE in float64 with one mistake switched on by ``how`` (none: the contract's result)."""
    X = np.asarray(X, dtype=np.float64)
    T, d = X.shape[-2:]
    pos = np.arange(T) if positions is None or how.get("ignore_positions") else positions
    if how.get("wrapped"):  # an angle table of arange(T), looked up at positions % T
        pos = np.asarray(pos) % T
    pos = np.asarray(pos, dtype=np.float64) + (1 if how.get("from_one") else 0)
    if how.get("first_sequence"):  # the first T of the flattened positions, for every sequence
        pos = pos.reshape(-1)[:T]
    b = 10000.0 if how.get("ignore_base") else float(base)
    i = np.arange(d // 2)
    exponent = {
        "i": -i / d,
        "plus": 2 * i / d,
        "T": -2 * i / T,
        "linspace": -2 * i / max(d - 2, 1),
        "pairs_from_one": -2 * (i + 1) / d,
        "integer": -(2 * i // d),
        "doubled": -4 * i / d,  # i = np.arange(0, d, 2), already 2i, doubled again
    }.get(how.get("exponent"), -2 * i / d)
    angle = pos[..., None] * b**exponent  # (..., T, d/2)
    if how.get("degrees"):
        angle = np.deg2rad(angle)
    cos, sin = np.cos(angle), np.sin(angle)
    if how.get("swap"):
        cos, sin = sin, cos
    if how.get("clockwise"):
        sin = -sin
    if how.get("tiled"):  # tables [θ, θ] over d features, rotated as interleaved pairs
        angle = np.concatenate([angle, angle], axis=-1)
        rot = np.empty(X.shape)
        rot[..., 0::2], rot[..., 1::2] = -X[..., 1::2], X[..., 0::2]
        return X * np.cos(angle) + rot * np.sin(angle)
    if how.get("half_split"):
        x0, x1 = X[..., : d // 2], X[..., d // 2 :]
    else:
        x0, x1 = X[..., 0::2], X[..., 1::2]
    y0 = x0 * sin - x1 * cos if how.get("first_swap") else x0 * cos - x1 * sin
    y1 = (y0 if how.get("rotated_twice") else x0) * sin + x1 * cos
    if how.get("second_swap"):
        y1 = x0 * cos + x1 * sin
    if how.get("half_split") or how.get("halves_out"):
        return np.concatenate([y0, y1], axis=-1)
    out = np.empty(X.shape)
    out[..., 0::2], out[..., 1::2] = y0, y1
    if how.get("last_pair"):  # the loop over the pairs stops one short
        out[..., -2:] = X[..., -2:]
    return out


def mistakes(X, positions=None, base=10000.0) -> list:
    """``(hint, wrong output)`` for the known mistakes of RoPE (None where one cannot occur)."""
    T, d = np.shape(X)[-2:]
    given = positions is not None and not np.array_equal(
        np.broadcast_to(positions, np.shape(X)[:-1]),
        np.broadcast_to(np.arange(np.shape(X)[-2]), np.shape(X)[:-1]),
    )
    # per-sequence positions whose sequences differ: the first sequence's for all of them
    per_sequence = (
        np.ndim(positions) >= 2
        and np.size(positions) > T
        and not np.array_equal(
            np.broadcast_to(positions, np.shape(X)[:-1]),
            np.broadcast_to(np.reshape(positions, -1)[:T], np.shape(X)[:-1]),
        )
    )
    # positions past T that wrap around to others (p mod T) in an angle table of arange(T)
    wraps = positions is not None and not np.array_equal(np.asarray(positions) % T, positions)
    double = np.asarray(X).dtype != np.float32  # float32 inputs: float32 angles are the contract
    return [
        (HALF_SPLIT, rope(X, positions, base, half_split=True)),
        (THETA_FROM_I, rope(X, positions, base, exponent="i")),
        (CLOCKWISE, rope(X, positions, base, clockwise=True)),
        (POSITIONS_IGNORED, rope(X, positions, base, ignore_positions=True) if given else None),
        (BASE_IGNORED, rope(X, positions, base, ignore_base=True) if base != 10000.0 else None),
        (EXPONENT_SIGN, rope(X, positions, base, exponent="plus")),
        (ROTATED_TWICE, rope(X, positions, base, rotated_twice=True)),
        (FROM_ONE, rope(X, positions, base, from_one=True) if positions is None else None),
        (theta_over_T(T, d), rope(X, positions, base, exponent="T") if T != d else None),
        (COS_SIN_SWAPPED, rope(X, positions, base, swap=True)),
        (HALVES_OUT, rope(X, positions, base, halves_out=True) if d > 2 else None),
        (DEGREES, rope(X, positions, base, degrees=True)),
        (LINSPACE, rope(X, positions, base, exponent="linspace") if d > 2 else None),
        (INTEGER_EXPONENT, rope(X, positions, base, exponent="integer") if d > 2 else None),
        (pairs_from_one(base, d), rope(X, positions, base, exponent="pairs_from_one")),
        (
            first_sequence_positions(np.size(positions) // T, T),
            rope(X, positions, base, first_sequence=True) if per_sequence else None,
        ),
        (SECOND_LINE_SWAPPED, rope(X, positions, base, second_swap=True)),
        (FIRST_LINE_SWAPPED, rope(X, positions, base, first_swap=True)),
        (TABLES_TILED, rope(X, positions, base, tiled=True) if d > 2 else None),
        (DOUBLED_EXPONENT, rope(X, positions, base, exponent="doubled") if d > 2 else None),
        (angle_table(T), rope(X, positions, base, wrapped=True) if wraps else None),
        (LAST_PAIR, rope(X, positions, base, last_pair=True) if d > 2 else None),
        (FLOAT32_ANGLES, float32_angles(X, positions, base) if double else None),
    ]


def _args(call) -> tuple:
    """``(X, positions, base)`` of a call, whether given by position or by keyword."""
    X, positions, base = (
        (*call.args, None, 10000.0)[:3]
        if len(call.args) < 2
        else (
            *call.args,
            10000.0,
        )[:3]
    )
    positions = call.kwargs.get("positions", positions)
    return X, positions, call.kwargs.get("base", base)


class RotaryEmbedding(Check):
    name = "rotary_embedding"
    passed = (
        "each pair (x[2i], x[2i+1]) turns counter-clockwise by p·base^(−2i/d): default, offset, "
        "random and per-batch positions, another base, d = 2, positions up to 8191, float32; "
        "norms kept, scores depend on m − n only, odd d refused."
    )
    passed_hidden = matches_on_random("batch axes, positions, bases and float32")

    def visible(self):
        rng = np.random.default_rng(1111)
        # one token at positions 0, 1, 2, 3; x[2i+1] ≠ 0, so that cos and sin swapped do not
        # look like the pair's two outputs swapped, as they would for (1, 0, 1, 0)
        token = np.tile([1.0, 0.5, 1.0, 0.5], (4, 1))
        X = rng.normal(size=(5, 6))
        q, k = rng.normal(size=(2, 8))
        shifts = np.array([0, 1, 7, 100, 1000])
        pair = np.broadcast_to(np.stack([q, k]), (len(shifts), 2, 8)).copy()  # (S, 2, d)
        return [
            Call((token,), context={"what": "the token (1, 0.5, 1, 0.5) at positions 0 … 3"}),
            Call((X,)),
            Call((X, np.arange(5) + 10), context={"what": "positions 10 … 14"}),
            Call((X, np.array([3, 0, 9, 9, 2])), context={"what": "positions [3, 0, 9, 9, 2]"}),
            Call((X, None, 100.0), context={"what": "base = 100"}),
            Call((X,), {"base": 500.0}, context={"what": "base = 500"}),
            Call((rng.normal(size=(3, 2)),), context={"what": "d = 2"}),
            Call((rng.normal(size=(2, 5, 6)), rng.integers(0, 20, size=(2, 5)))),
            Call((rng.normal(size=(2, 3, 4, 6)), rng.integers(0, 20, size=(2, 1, 4)))),
            Call(
                (rng.normal(size=(4, 8)), np.array([0, 1, 4096, 8191])),
                context={"what": "positions up to 8191"},
            ),
            Call((rng.normal(size=(1, 6)),), context={"identity": True}),
            Call((rng.normal(size=(3, 7, 10)), rng.integers(0, 50, size=(3, 7))), context={}),
            Call(
                (pair, np.stack([[5 + s, 2 + s] for s in shifts])),
                context={"relative": shifts},
            ),
            Call((rng.normal(size=(2, 5, 8)).astype(np.float32),)),
            Call(
                (rng.normal(size=(3, 4)).astype(np.float32), np.array([2, 0, 5]), 50.0),
            ),
            Call((np.arange(12).reshape(3, 4),), context={"what": "an integer X"}),
            Call((rng.normal(size=(3, 5)),), raises="ValueError", context={"why": "an odd d (5)"}),
        ]

    def hidden(self, rng):
        calls = []
        for k in range(6):
            lead = random_shape(rng)
            T, d = int(rng.integers(1, 9)), 2 * int(rng.integers(1, 9))
            X = rng.normal(size=(*lead, T, d))
            if k % 3 == 2:
                X = X.astype(np.float32)
            kind = k % 3
            if kind == 0:
                positions = None
            elif kind == 1 or len(lead) < 2:
                shape = (T,) if k % 2 else (*lead, T)
                positions = rng.integers(0, 100, size=shape)
            else:
                positions = rng.integers(0, 100, size=(lead[0], 1, T))
            base = float(rng.choice([10000.0, 500.0, 10.0]))
            calls.append(Call((X, positions, base)))
        T, d = int(rng.integers(2, 9)), 2 * int(rng.integers(1, 5))
        calls.append(Call((rng.integers(-9, 10, size=(*random_shape(rng), T, d)),)))  # integers
        d = 2 * int(rng.integers(1, 5)) + 1
        calls.append(
            Call(
                (rng.normal(size=(3, d)),), raises="ValueError", context={"why": f"an odd d ({d})"}
            )
        )
        return calls

    def catalogue(self, call):
        if call.raises is not None:
            return None, []
        X, positions, base = _args(call)
        return ref.rotary_embedding(X, positions, base), mistakes(X, positions, base)

    def explain_error(self, call, outcome):
        """As :meth:`Check.explain_error`; a broadcast error with positions flattened (np.outer
        of per-batch positions) names the flattening."""
        X, positions, _ = _args(call)
        error = outcome.error or ""
        T = np.shape(X)[-2]
        past = positions is not None and np.size(positions) and np.max(positions) >= T
        if (outcome.code or "") == "raised:IndexError" and past and f"size {T}" in error:
            return CheckFailed(
                f"{self.name}: {angle_table(T, past_its_end=True)} ({error})",
                public=f"{self.name}: {redact(angle_table(T, past_its_end=True))}",
            )
        flat = np.ndim(positions) >= 2 and f"({np.size(positions)}," in error.replace(" ", "")
        if (outcome.code or "") == "raised:ValueError" and "broadcast" in error and flat:
            shape, n = np.shape(positions), np.size(positions)
            return CheckFailed(
                f"{self.name}: the positions of shape {shape} were flattened into {n} rows: "
                "np.outer(positions, θ) ravels both of its inputs, so per-batch positions lose "
                f"their batch axes. Use positions[..., None] * θ, of shape {shape} + (d/2,), "
                f"which lines up with X's pairs ({error})",
                public=f"{self.name}: per-batch positions were flattened (np.outer ravels its "
                "inputs): use positions[..., None] * θ.",
            )
        half = np.shape(X)[-1] // 2
        said = "".join(error.split()).replace(",)", ")")
        is_broadcast = (outcome.code or "") == "raised:ValueError" and "broadcast" in error
        lead = np.shape(X)[:-2]
        if is_broadcast and positions is None and lead and lead[0] != T:
            if f"({lead[0]},{half})" in said:  # arange(len(X)): the batch size, not T
                return CheckFailed(
                    f"{self.name}: {default_positions_from_front(lead[0], T)} ({error})",
                    public=f"{self.name}: {DEFAULT_POSITIONS_FROM_FRONT}",
                )
        moved = _axis_inserted(positions, said)
        if is_broadcast and moved is not None:
            hint = positions_axis_misplaced(np.shape(positions), moved, half)
            return CheckFailed(
                f"{self.name}: {hint} ({error})",
                public=f"{self.name}: {POSITIONS_AXIS_MISPLACED}",
            )
        shape = np.shape(positions)
        bare_shape = "".join(str(shape).split()).replace(",)", ")")
        no_axis = (bare_shape + f"({half})", f"({half})" + bare_shape)  # p·θ or θ·p
        bare = "".join(error.split()).replace(",)", ")")
        raised = (outcome.code or "") == "raised:ValueError" and "broadcast" in error
        if raised and shape and any(pair in bare for pair in no_axis):  # no feature axis
            return CheckFailed(
                f"{self.name}: {POSITIONS_NO_AXIS} Positions of shape {shape} meet θ of "
                f"shape ({half},): multiply positions[..., None] by θ, "
                f"of shape {shape} + (d/2,) = {(*shape, half)}, lined up with X's pairs "
                f"({error})",
                public=f"{self.name}: {POSITIONS_NO_AXIS} Multiply positions[..., None] "
                "by θ, of shape (..., T, d/2).",
            )
        return super().explain_error(call, outcome)

    def judge(self, call, got):
        X, _, _ = _args(call)
        out = as_result(self.name, got, "the rotated X")
        if not np.issubdtype(out.dtype, np.floating):
            made = (
                " for an integer X: a result allocated like X (np.empty_like(X), np.zeros_like(X))"
                " holds integers and truncates the rotated values; allocate floats"
                if np.issubdtype(np.asarray(X).dtype, np.integer)
                else ""
            )
            raise CheckFailed(
                f"{self.name} should return a floating array, not dtype {out.dtype}{made}.",
                public=f"{self.name} should return a floating array{made and ' for an integer X'}.",
            )
        if out.shape != np.shape(X):
            raise CheckFailed(
                f"{self.name}: the result should have the shape of X, {np.shape(X)}, but has "
                f"shape {out.shape}."
            )
        expected, known = self.catalogue(call)
        what = call.context.get("what")
        what = f"the rotated X (for {what})" if what else "the rotated X"
        contract = precision(call.args)
        try:
            compare(self.name, out, expected, what, known, contract=contract)
        except CheckFailed as exc:
            if any(hint in str(exc) for hint, _ in known):  # a catalogued mistake
                raise
            double = contract == "float64" and out.dtype == np.float64  # else: the dtype said
            if double and within_float32_angles(X, _args(call)[1], out, expected):
                raise CheckFailed(
                    f"{self.name}: {FLOAT32_ANGLES}", named=("hint", self.name, FLOAT32_ANGLES)
                ) from None
            lengths = np.linalg.norm(np.asarray(X, float), axis=-1)
            if not close(np.linalg.norm(out.astype(float), axis=-1), lengths, contract=contract):
                how = str(exc).split(": ", 1)[-1]
                raise CheckFailed(
                    f"{self.name}: the tokens' lengths changed; a rotation keeps each pair's "
                    f"length (cos² + sin² = 1), so only the angles may change ({how})",
                    public=exc.public,
                ) from None
            raise
        if "relative" in call.context:  # the scores of q at m and k at n depend on m - n only
            dots = np.einsum("sd,sd->s", out[:, 0].astype(float), out[:, 1].astype(float))
            rel, tol = (1e-9, 0.0) if contract == "float64" else (2e-3, 2e-4)
            if np.any(np.abs(dots - dots[0]) > rel * abs(dots[0]) + tol):
                raise CheckFailed(
                    f"{self.name}: rope(q at m)·rope(k at n) should depend on m − n only, but "
                    f"shifting both positions changes it: {dots[0]:.10g} vs {dots[-1]:.10g}."
                )
