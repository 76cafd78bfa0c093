"""A wrong output explained in the learner's terms, when no catalogued mistake matches.

:func:`diagnose` tries, in order: the shape (axes swapped, missing, extra), a
constant factor, a transpose, a permutation along one axis, one wrong slice,
masked cells that leak, weights causal where no causal mask was asked for, float32
precision (first of all where every value is a float32 cast back). The first that
holds gives the sentence.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from .hints import ADD_MASK, MASK_ARGUMENT_ONLY, NO_CAUSAL_ASKED
from .wording import agree, number

__all__ = ["diagnose", "diagnose_order", "diagnosis"]

_F32 = "float32 precision: compute in float64 (or return float32 if the inputs are float32)."


def diagnose(
    got, expected, what: str, axes: dict | None = None, quantities: dict | None = None
) -> str | None:
    """One sentence saying how ``got`` differs from ``expected``, or None if no test explains it.

    Parameters
    ----------
    got, expected : array_like
        The learner's output and the reference's; their shapes may differ.
    what : str
        What the output is, as a sentence names it (e.g. "the attention weights").
    axes : dict, optional
        Names of the axes of ``expected``, by index from the end, e.g.
        ``{-1: "column (feature)", -2: "row (token)", -3: "head"}``. Slices of
        an axis whose name starts with "head" are counted from 1, others from 0.
    quantities : dict, optional
        Numbers that may explain a constant factor, by name, e.g. ``{"√d_k": 2.0}``.

    Returns
    -------
    str or None
        The sentence (no name prefix); None when ``got`` matches ``expected``,
        when no structural test explains the difference, or on inputs it
        cannot read. It never raises.
    """
    return diagnosis(got, expected, what, axes, quantities)[1]


def diagnosis(
    got, expected, what: str, axes: dict | None = None, quantities: dict | None = None
) -> tuple[str | None, str | None]:
    """:func:`diagnose`'s sentence and the name of the test that gave it (``"transpose"`` …).

    The name is the diagnosis's id in the class report (``diagnose:transpose``);
    ``(None, None)`` where :func:`diagnose` gives None.
    """
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return _diagnosis(got, expected, str(what), axes or {}, quantities or {})
    except Exception:  # a last resort: each test handles NaN, inf, 0-d and empty itself
        return None, None


def _real(x) -> np.ndarray | None:
    """``x`` as a float64 array, or None if it is not real numbers."""
    a = np.asarray(x)
    if a.dtype.kind == "c" and not np.any(a.imag != 0):
        a = a.real
    return a.astype(np.float64) if a.dtype.kind in "biuf" else None


class _Case:
    """One comparison: the two arrays, their names, and the tolerance's scale."""

    def __init__(self, got, exp, what, axes, quantities):
        self.got, self.exp, self.what = got, exp, what
        # the verbs and pronoun that agree with it: "the heads are", "the output is"
        self.be, self.have, self.its = (agree(what, w) for w in ("is", "has", "its"))
        finite = np.abs(exp[np.isfinite(exp)])
        self.scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        self.names = {
            int(k) % exp.ndim: str(v)
            for k, v in axes.items()
            if isinstance(k, int | np.integer) and -exp.ndim <= k < exp.ndim and str(v).split()
        }
        self.q = {}
        for name, v in quantities.items():
            try:
                v = abs(float(v))
            except (TypeError, ValueError, OverflowError):
                continue
            if np.isfinite(v) and v > 0:
                self.q[str(name)] = v
        self.order = sorted(self.names) + [k for k in range(exp.ndim) if k not in self.names]

    def eq(self, a, b, rtol=1e-7, atol=1e-9) -> bool:
        """Same shape and equal up to rounding (``atol`` scaled to the reference's size)."""
        return a.shape == b.shape and bool(
            np.allclose(a, b, rtol=rtol, atol=atol * self.scale, equal_nan=True)
        )

    def axis(self, k: int) -> str:
        """Axis ``k`` in a sentence: "the head axis", or "axis 0" where unnamed."""
        return f"the {self.names[k]} axis" if k in self.names else f"axis {k}"

    def plural(self, k: int) -> str:
        """The slices along axis ``k``: "heads", "rows", "entries" …"""
        if k not in self.names:
            return f"slices along axis {k}"
        word = self.names[k].split()[0]
        return (
            f"{word[:-1]}ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else f"{word}s"
        )

    def label(self, k: int, i: int) -> str:
        """Slice ``i`` along axis ``k``: "head 1" (from 1), "row 0", "index 0 along axis 0"."""
        if k not in self.names:
            return f"index {i} along axis {k}"
        word = self.names[k].split()[0]
        return f"{word} {i + 1 if word.startswith('head') else i}"


def _explain(got, expected, what, axes, quantities) -> str | None:
    """:func:`diagnose` without its last resort."""
    return _diagnosis(got, expected, what, axes, quantities)[1]


def _diagnosis(got, expected, what, axes, quantities) -> tuple[str | None, str | None]:
    """:func:`diagnosis` without its last resort."""
    got, exp = _real(got), _real(expected)
    if got is None or exp is None or got.size == 0 or exp.size == 0:
        return None, None
    c = _Case(got, exp, what, axes, quantities)
    if got.shape != exp.shape:
        said = _shape(c)
        return ("shape" if said else None), said
    if c.eq(got, exp):
        return None, None
    near = c.eq(got, exp, rtol=1e-5, atol=1e-6)  # everywhere within float32's rounding
    finite = got[np.isfinite(got)]
    f32 = f"{what} {agree(what, 'agrees')} only to {_F32}"
    if near and np.array_equal(finite, finite.astype(np.float32).astype(np.float64)):
        return "float32", f32  # float32 values, cast back
    for test in (_factor, _transpose, _permutation, _one_slice, _leak, _causal):
        said = _factor(c, got, exp, what) if test is _factor else test(c)
        if said:
            return test.__name__.strip("_"), said
    return ("float32", f32) if near else (None, None)


def _shape(c: _Case) -> str | None:
    """Test 1: the same entries with axes swapped or reordered, an axis missing or extra."""
    got, exp, what = c.got, c.exp, c.what
    shapes = f" (shape {got.shape}, expected {exp.shape})"
    if got.ndim == exp.ndim and got.size == exp.size and exp.ndim <= 6:
        for perm in itertools.permutations(range(exp.ndim)):
            if not c.eq(got, exp.transpose(perm)):
                continue
            moved = [k for k in range(exp.ndim) if perm[k] != k]
            if moved == [exp.ndim - 2, exp.ndim - 1]:
                pair = f"{c.axis(moved[0])} and {c.axis(moved[1])}"
                return (
                    f"{what} {c.be} transposed: {c.its} last two axes ({pair}) are swapped{shapes}."
                )
            if len(moved) == 2:
                pair = f"{c.axis(moved[0])} and {c.axis(moved[1])}"
                return f"{what} {c.have} {pair} swapped{shapes}: swap them back (np.swapaxes)."
            order = ", ".join(c.axis(k) for k in perm)
            return (
                f"{what} {c.have} the right entries, {c.its} axes in the "
                f"wrong order: {order}{shapes}."
            )
    if got.ndim == exp.ndim - 1:  # an axis missing
        ks = [k for k in range(exp.ndim) if exp.shape[:k] + exp.shape[k + 1 :] == got.shape]
        for k in ks:
            for i in range(exp.shape[k]):
                if c.eq(got, np.take(exp, i, axis=k)):
                    held = f", it holds only {c.label(k, i)}" if exp.shape[k] > 1 else ""
                    return f"{what}: {c.axis(k)} is missing{held}{shapes}."
            for how, reduce in (("summed", np.sum), ("averaged", np.mean)):
                if c.eq(got, reduce(exp, axis=k)):
                    return f"{what} {c.be} {how} over {c.axis(k)}, which should stay{shapes}."
        if ks:
            return f"{what}: {c.axis(ks[0])} is missing{shapes}."
    if got.ndim == exp.ndim + 1:  # an extra axis
        ks = [k for k in range(got.ndim) if got.shape[:k] + got.shape[k + 1 :] == exp.shape]
        for k in ks:
            if all(c.eq(np.take(got, i, axis=k), exp) for i in range(got.shape[k])):
                return (
                    f"{what} {c.have} an extra axis {k} of size {got.shape[k]}, each slice "
                    "along it "
                    f"the expected result{shapes}."
                )
        if ks:
            return f"{what} {c.have} an extra axis {ks[0]} of size {got.shape[ks[0]]}{shapes}."
    return None


def _factor(c: _Case, got, exp, what: str) -> str | None:
    """Test 2: ``got`` is a constant multiple of ``exp``, named by a quantity where one fits."""
    fin = np.isfinite(exp)
    big = fin & (np.abs(exp) > 1e-6 * c.scale)
    if not big.any() or not np.array_equal(fin, np.isfinite(got)):
        return None
    e, g = exp[big], got[big]
    k = float(g @ e / (e @ e))
    tol = 1e-9 * c.scale * max(1.0, abs(k))
    if (
        not np.isfinite(k)
        or abs(k - 1) <= 1e-4
        or not np.allclose(got[fin], k * exp[fin], 1e-7, tol)
    ):
        return None
    if abs(k) <= 1e-12:
        return f"{what} {agree(what, 'is')} all zeros."
    flip = "the sign is flipped" if k < 0 else ""
    m = abs(k)
    if abs(m - 1) <= 1e-6:
        return f"{flip}: every entry of {what} is the negative of the reference's."
    f, large = (m, True) if m > 1 else (1 / m, False)
    named = [n for n, v in c.q.items() if abs(v - f) <= 1e-6 * f]
    named += [f"1/{n}" for n, v in c.q.items() if abs(1 / v - f) <= 1e-6 * f]
    if not named and big.sum() < 2:  # any two numbers are multiples: one entry says nothing
        return None
    said = f"every entry of {what} is {number(f)} times too {'large' if large else 'small'}"
    said = f"{flip} and {said}" if flip else said
    if not named:
        return said + "."
    first, alias = named[0], " or ".join(named)
    why = (
        "not divided by {}, or multiplied by it once too often?",
        "divided by {} once too often, or not multiplied by it?",
    )[not large]
    return f"{said} ({alias} = {number(f)} here): {why.format(first)}"


def _transpose(c: _Case) -> str | None:
    """Test 3: the last two axes transposed (square, so the shape cannot tell)."""
    square = c.exp.ndim >= 2 and c.exp.shape[-1] == c.exp.shape[-2]
    if not square or not c.eq(c.got, np.swapaxes(c.exp, -1, -2)):
        return None
    pair = f"{c.axis(c.exp.ndim - 2)} and {c.axis(c.exp.ndim - 1)}"
    return f"{c.what} {c.be} transposed: {c.its} last two axes ({pair}) are swapped."


def _permutation(c: _Case) -> str | None:
    """Test 4: the slices along one axis in another order (reversed, two swapped, rolled)."""
    for k in c.order:
        n = c.exp.shape[k]
        if not 2 <= n <= 64:
            continue
        gs = [np.take(c.got, i, axis=k) for i in range(n)]
        es = [np.take(c.exp, i, axis=k) for i in range(n)]
        perm: list[int] = []
        for i in range(n):  # greedy: a slice keeps its place where it can
            free = [j for j in range(n) if j not in perm and c.eq(gs[i], es[j])]
            if not free:
                break
            perm.append(i if i in free else free[0])
        if len(perm) < n or perm == list(range(n)):
            continue
        moved = [i for i in range(n) if perm[i] != i]
        swap = f"{c.label(k, moved[0])} and {c.label(k, moved[-1])}"
        if perm == list(range(n))[::-1]:
            also = f" ({swap} are swapped)" if len(moved) == 2 else ""
            return f"the {c.plural(k)} of {c.what} are in reverse order{also}."
        if len(moved) == 2:
            return f"{swap} of {c.what} are swapped."
        if all(perm[i] == (i + perm[0]) % n for i in range(n)):
            return f"the {c.plural(k)} of {c.what} are shifted cyclically (as by np.roll)."
        got = ", ".join(c.label(k, j) for j in perm)
        return f"the {c.plural(k)} of {c.what} are in the wrong order: {got}."
    return None


def _one_slice(c: _Case) -> str | None:
    """Test 5: one slice along one axis wrong, all the others right."""
    for k in c.order:
        n = c.exp.shape[k]
        bad = [i for i in range(n) if not c.eq(np.take(c.got, i, k), np.take(c.exp, i, k))]
        if n >= 2 and len(bad) == 1:
            i = bad[0]
            said = f"only {c.label(k, i)} of {c.what} differs; the other {c.plural(k)} match"
            why = _factor(c, np.take(c.got, i, k), np.take(c.exp, i, k), c.label(k, i))
            return f"{said}: {why}" if why else f"{said}."
    return None


def _leak(c: _Case) -> str | None:
    """Test 6: masked cells (exactly 0 in the reference) not 0, the rest right or renormalised."""
    got, exp = c.got, c.exp
    if not (np.isfinite(exp).all() and exp.min() >= 0):  # weights, not a mask (0 = allowed)
        return None
    zero = exp == 0  # (..., T, T) for attention weights
    if exp.ndim < 1 or zero.all() or np.all(np.abs(got[zero]) <= 1e-9 * c.scale):
        return None
    if not np.isfinite(got[zero]).all():  # NaN or ±∞ is not a weight that leaked
        return None
    g, e = np.where(zero, 0.0, got), np.where(zero, 0.0, exp)
    said = f"{c.what} {c.be} not 0 where the reference is exactly 0 (masked cells): the mask leaks"
    if c.eq(g, e):
        return f"{said}; the rest matches: {ADD_MASK}, not after."
    den = e.sum(axis=-1, keepdims=True)  # (..., T, 1)
    r = np.where(den != 0, g.sum(axis=-1, keepdims=True) / np.where(den != 0, den, 1.0), 1.0)
    if c.eq(g, r * e):
        return (
            f"{said}; the rest matches after renormalising each row, as a softmax without "
            f"the mask gives: {ADD_MASK}."
        )
    return None


def _causal(c: _Case) -> str | None:
    """Test 7: weights 0 above the diagonal (keys after the query) where the reference's are not.

    Code written for a decoder often applies a causal mask of its own: right
    where a causal mask was given, wrong everywhere else.
    """
    got, exp = c.got, c.exp
    if exp.ndim < 2 or exp.shape[-1] != exp.shape[-2] or exp.shape[-1] < 2:
        return None
    if not (np.isfinite(exp).all() and exp.min() >= 0 and np.isfinite(got).all()):
        return None  # weights (≥ 0), not scores or a mask
    future = np.triu(np.ones(exp.shape[-2:], dtype=bool), k=1)  # (T, T): key j > query i
    if not np.any(exp[..., future] > 1e-9 * c.scale):
        return None  # the reference is causal too: no evidence
    if np.any(np.abs(got[..., future]) > 1e-12 * c.scale):
        return None
    return (
        f"{c.what} {c.be} 0 for every key after its query, as a causal mask makes, "
        f"{NO_CAUSAL_ASKED}: apply {MASK_ARGUMENT_ONLY}, never a causal mask of your own."
    )


def diagnose_order(got, expected, names) -> str | None:
    """One sentence when the parts of a returned tuple are right but in another place.

    Parameters
    ----------
    got, expected : sequence of array_like
        The learner's parts and the reference's, in the contract's order.
    names : sequence of str
        The parts' names in that order, e.g. ``("dQ", "dK", "dV")``.

    Returns
    -------
    str or None
        "dQ and dK are swapped: …" for two parts traded places, "the
        gradients come in another order …" for more; None when no part is
        another part's expected value (or on anything it cannot read). It
        never raises.
    """
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return _order(list(got), list(expected), [str(n) for n in names])
    except Exception:  # a last resort: the parts' own comparisons say what is wrong
        return None


def _order(got: list, expected: list, names: list[str]) -> str | None:
    """:func:`diagnose_order` without its last resort."""
    gots, exps = [_real(g) for g in got], [_real(e) for e in expected]
    if len(gots) != len(exps) or any(a is None for a in (*gots, *exps)):
        return None

    def same(a, b) -> bool:
        scale = float(np.abs(b[np.isfinite(b)]).max()) if np.isfinite(b).any() else 1.0
        return a.shape == b.shape and bool(
            np.allclose(a, b, rtol=1e-6, atol=1e-8 * max(scale, 1.0), equal_nan=True)
        )

    place = {}  # the learner's position i holds the expected part j (j != i)
    for i, g in enumerate(gots):
        if same(g, exps[i]):
            continue
        others = [j for j, e in enumerate(exps) if j != i and same(g, e)]
        if len(others) != 1:
            return None  # wrong, or equal to several parts: not a matter of order
        place[i] = others[0]
    if not place:
        return None
    if len(place) == 2 and all(place[j] == i for i, j in place.items()):
        i, j = sorted(place)
        return (
            f"{names[i]} and {names[j]} are swapped: each is right, in the other's place. "
            f"Return them in the order ({', '.join(names)})."
        )
    said = ", ".join(names[place.get(i, i)] for i in range(len(names)))
    return (
        f"the gradients are right but in another order: you return ({said}); return "
        f"({', '.join(names)})."
    )
