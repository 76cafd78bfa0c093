"""Step 2: Glorot-uniform initialisation.

Every size is drawn five times (:func:`_twice`): twice from two generators
of the same seed, once from another seed, twice from one shared generator.
Reproducibility is judged first (drawing from ``np.random`` is the likelier
mistake behind wrong values), then every large draw: not half made of
repeated values, a one-sample Kolmogorov–Smirnov test against Glorot-uniform,
then no correlation between neighbouring entries; last the bound
``|W| <= a`` on every draw. Properties alone do not suffice: the two values
``±a/√3`` have the right bound, mean and variance, and are not uniform. A
draw that fails the test is described in the learner's terms
(:func:`diagnose`): the few values it takes, the interval it fills evenly
(naming wrong bounds such as ``sqrt(6 / d_in)``), a normal's bell shape, or
else its histogram against the flat one expected.

False alarms
------------
Each Kolmogorov–Smirnov test rejects a correct draw with probability at
most :data:`ALPHA` = 1e-6, for every size ``n`` (the critical value comes
from the Dvoretzky–Kiefer–Wolfowitz inequality with Massart's constant,
which bounds the exact finite-``n`` tail). A run tests :data:`KS_PER_RUN`
= 4 independent large draws (the "same seed" draw equals the first and is
not tested again), so a correct implementation fails a run with probability
at most 4e-6 (union bound). The visible run uses fixed seeds, so an answer
that draws like the reference (``rng.uniform(-a, a, size=(d_in, d_out))``)
gets the very same numbers and passes every time; the hidden run's seed is
unknown in advance, and there each run is one trial at the 4e-6 bound. The
other two properties add next to nothing: a correct float64 draw repeats a
value with probability about ``n**2 / 2**53``, and its neighbours' correlation
exceeds :data:`NEIGHBOURS` standard errors with probability about 1e-15.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .comparison import as_result
from .core import Call, Check
from .failures import CheckFailed

#: Matrices with at least this many entries are judged on their distribution too.
LARGE = 5000
#: False-alarm rate of one goodness-of-fit test of a correct draw (an upper bound, any n).
ALPHA = 1e-6
#: Large draws tested per run (visible or hidden): seed, other seed, shared, shared again.
KS_PER_RUN = 4
#: Level at which a rejected draw is said to fit a named wrong distribution (diagnosis only).
FIT_ALPHA = 1e-3
#: Bins of the histogram a message describes, over [-a, a].
BINS = 8
#: A large draw with at most this many distinct values is described value by value.
FEW = 16
#: Neighbours correlated beyond this many standard errors (1/sqrt(n)) are not independent:
#: a correct draw gets there with probability about 1e-15 per axis (normal tail, n >= 5000).
NEIGHBOURS = 8.0

__all__ = [
    "ALPHA",
    "KS_PER_RUN",
    "InitWeights",
    "describe_histogram",
    "diagnose",
    "ks_critical",
    "ks_statistic",
    "neighbour_correlation",
    "normal_cdf",
    "uniform_cdf",
]


# --------------------------------------------------------------------------
# the Kolmogorov–Smirnov test, in numpy
# --------------------------------------------------------------------------
def ks_statistic(x, cdf: Callable[[np.ndarray], np.ndarray]) -> float:
    """The one-sample Kolmogorov–Smirnov statistic ``D = sup |F_n(t) - F(t)|``.

    Parameters
    ----------
    x : array_like
        The sample, any shape (flattened); finite values.
    cdf : callable
        The hypothesised cumulative distribution function ``F``, vectorised.

    Returns
    -------
    D : float
        The largest distance between the empirical distribution function of
        ``x`` and ``F``, reached just at or just before a sample point.
    """
    x = np.sort(np.asarray(x, dtype=float).ravel())  # (n,)
    n = x.size
    F = np.clip(cdf(x), 0.0, 1.0)  # (n,)
    i = np.arange(1, n + 1)  # (n,) the ECDF is i/n at x_(i), (i-1)/n just before it
    d_plus = np.max(i / n - F)  # ties: the last of equal values attains it
    d_minus = np.max(F - (i - 1) / n)  # ties: the first of equal values attains it
    return float(max(d_plus, d_minus))


def ks_critical(n: int, alpha: float) -> float:
    """The critical value of ``D`` for a sample of ``n``: ``P(D > c) <= alpha`` under ``F``.

    From the Dvoretzky–Kiefer–Wolfowitz inequality with Massart's constant,
    ``P(sup |F_n - F| > c) <= 2 exp(-2 n c**2)``, valid for every ``n`` and
    continuous ``F``. It is also the leading term of the asymptotic
    Kolmogorov tail ``2 Σ (-1)**(k-1) exp(-2 k**2 n c**2)``, whose next term
    (``2 exp(-8 n c**2)``, 2e-25 at ``alpha = 1e-6``) it drops; so the
    bound is tight for small ``alpha``.

    Parameters
    ----------
    n : int
        Sample size.
    alpha : float
        The false-alarm rate, in (0, 1).

    Returns
    -------
    c : float
        ``sqrt(log(2 / alpha) / (2 n))``.
    """
    return math.sqrt(math.log(2 / alpha) / (2 * n))


def neighbour_correlation(W: np.ndarray) -> tuple[float, float]:
    """The correlation of each entry of ``W`` with its right and with its lower neighbour.

    Parameters
    ----------
    W : ndarray of shape (rows, cols)
        Finite values, not all equal.

    Returns
    -------
    along_rows, down_columns : float
        For independent entries each is about normal with standard error
        ``1 / sqrt(n)``; sorted or smooth matrices give values near 1.
    """
    w = np.asarray(W, dtype=float)
    w = (w - w.mean()) / w.std()  # (rows, cols) standardised
    along_rows = float(np.mean(w[:, :-1] * w[:, 1:])) if w.shape[1] > 1 else 0.0
    down_columns = float(np.mean(w[:-1, :] * w[1:, :])) if w.shape[0] > 1 else 0.0
    return along_rows, down_columns


def uniform_cdf(lo: float, hi: float) -> Callable[[np.ndarray], np.ndarray]:
    """The distribution function of ``U(lo, hi)``, vectorised."""
    return lambda x: np.clip((np.asarray(x, dtype=float) - lo) / (hi - lo), 0.0, 1.0)


_erf = np.vectorize(math.erf, otypes=[float])


def normal_cdf(mean: float, std: float) -> Callable[[np.ndarray], np.ndarray]:
    """The distribution function of ``N(mean, std**2)``, vectorised."""
    return lambda x: 0.5 * (1.0 + _erf((np.asarray(x, dtype=float) - mean) / (std * math.sqrt(2))))


def _fits(x: np.ndarray, cdf, alpha: float) -> bool:
    """Whether the sample ``x`` passes the Kolmogorov–Smirnov test of ``cdf`` at ``alpha``."""
    return ks_statistic(x, cdf) <= ks_critical(x.size, alpha)


# --------------------------------------------------------------------------
# what a draw that is not Glorot-uniform looks like, in the learner's terms
# --------------------------------------------------------------------------
def _num(x: float) -> str:
    """A number as a learner reads it (3 significant digits, no numpy repr)."""
    return f"{float(x):.3g}"


def _values(v: np.ndarray) -> str:
    """Up to four distinct values, then how many more."""
    shown = ", ".join(_num(x) for x in v[:4])
    return shown + (f", … ({v.size} in all)" if v.size > 4 else "")


def describe_histogram(W: np.ndarray, a: float) -> str:
    """How the histogram of ``W`` over ``[-a, a]`` differs from the flat one expected.

    Parameters
    ----------
    W : ndarray
        The learner's weights, finite.
    a : float
        The Glorot bound.

    Returns
    -------
    sentence : str
        The share of values in each of :data:`BINS` equal bins from ``-a`` to
        ``a`` (and beyond ±a, if any), what a flat histogram holds, and the
        shape in words (peaked, heavy at the edges, lopsided).
    """
    w = np.asarray(W, dtype=float).ravel()  # (n,)
    n = w.size
    inside = np.histogram(np.clip(w, -a, a), bins=BINS, range=(-a, a))[0] / n  # (BINS,)
    beyond = float(np.mean(np.abs(w) > a))
    shares = ", ".join(f"{100 * p:.0f}%" for p in inside)
    centre = float(inside[BINS // 4 : 3 * BINS // 4].sum())  # the middle half, (-a/2, a/2)
    left = float(np.mean(w < 0))
    shape = []
    if centre > 0.55:
        shape.append("more values near 0 than near ±a")
    elif centre < 0.45:
        shape.append("more values near ±a than near 0")
    if abs(2 * left - 1) > 0.1:
        shape.append(
            "more negative than positive values"
            if left > 0.5
            else "more positive than negative values"
        )
    said = "; ".join(shape) if shape else "an uneven histogram"
    out = f" ({100 * beyond:.0f}% of all values lie beyond ±a)" if beyond else ""
    return (
        f"from -a to a, {BINS} equal bins hold {shares} of the values{out}, where "
        f"Glorot-uniform is flat ({100 / BINS:g}% in each): {said}"
    )


def _named_bound(b: float, d_in: int, d_out: int) -> str:
    """The words after "b = <number>" for a symmetric uniform bound ``b``: a known wrong formula."""
    both = ": Glorot's bound has both sizes under the root"
    named = [
        (math.sqrt(6 / d_in), " = sqrt(6 / d_in)" + both),
        (math.sqrt(6 / d_out), " = sqrt(6 / d_out)" + both),
        (
            math.sqrt(2 / (d_in + d_out)),
            " = sqrt(2 / (d_in + d_out)), the standard deviation of Glorot-uniform, not its bound",
        ),
        (
            math.sqrt(6 / (d_in * d_out)),
            " = sqrt(6 / (d_in * d_out)): the sizes are multiplied under the root, where "
            "Glorot's bound adds them",
        ),
        (
            1 / math.sqrt(d_in),
            f", which is 1/√d_in (d_in = {d_in}), the default bound of PyTorch's nn.Linear, not "
            "Glorot's" + both,
        ),
        (
            1 / math.sqrt(d_out),
            f", which is 1/√d_out (d_out = {d_out}), a bound from one size only" + both,
        ),
        (1.0, ": rng.uniform(-1, 1) is not scaled"),
        (
            6 / math.sqrt(d_in + d_out),
            " = 6 / sqrt(d_in + d_out): the square root covers only the denominator, where it "
            "belongs over the whole fraction",
        ),
        (
            math.sqrt(6) / (d_in + d_out),
            " = sqrt(6) / (d_in + d_out): the square root covers only the 6, where it belongs "
            "over the whole fraction",
        ),
        (
            6 / (d_in + d_out),
            " = 6 / (d_in + d_out): the square root over the fraction is missing",
        ),
        *(
            (
                math.sqrt(v),
                f" = sqrt(6 / {a} + {b}): the parentheses around d_in + d_out are missing, so "
                f"{b} is added to 6 / {a} instead of dividing 6 with it",
            )
            for v, a, b in (
                (6 / d_in + d_out, "d_in", "d_out"),
                (6 / d_out + d_in, "d_out", "d_in"),
            )
        ),
    ]
    for value, said in named:
        if abs(b / value - 1) < 0.01:
            return said
    return ""


def diagnose(W: np.ndarray, d_in: int, d_out: int) -> str:
    """The likeliest mistake behind a large draw ``W`` that is not Glorot-uniform.

    Tried in order: a few distinct values (the two values ±a/√3 among them),
    no negative values, a uniform distribution over another interval (with
    the wrong bounds named), a bell-shaped normal distribution, and else a
    description of the histogram. The fits use :data:`FIT_ALPHA` and only
    pick the words of the message; the verdict itself is the test at
    :data:`ALPHA`.

    Parameters
    ----------
    W : ndarray of shape (d_in, d_out)
        The learner's weights, finite.
    d_in, d_out : int
        The call's sizes.

    Returns
    -------
    sentence : str
        The hint, without the function's name.
    """
    a = math.sqrt(6 / (d_in + d_out))
    w = np.asarray(W, dtype=float).ravel()  # (n,)
    distinct = np.unique(w)  # (k,)
    if distinct.size <= FEW:
        if distinct.size == 2 and np.allclose(distinct, [-a / math.sqrt(3), a / math.sqrt(3)]):
            return (
                f"the weights are not spread uniformly over (-a, a): the two values ±a/√3 = "
                f"±{_num(a / math.sqrt(3))} have the right variance a**2 / 3, but "
                "Glorot-uniform takes every value in between, each as likely; draw with "
                "rng.uniform(-a, a, size=(d_in, d_out))."
            )
        return (
            f"the weights take only {distinct.size} distinct values ({_values(distinct)}) "
            f"instead of being spread uniformly over (-a, a) with a = {_num(a)}; draw with "
            "rng.uniform(-a, a, size=(d_in, d_out))."
        )
    lo, hi = float(w.min()), float(w.max())
    if lo >= 0:
        return "no value is negative; rng.random() gives [0, 1), scale it to [-a, a]."
    if _fits(w, uniform_cdf(lo, hi), FIT_ALPHA):
        if abs(lo + hi) < 0.05 * (hi - lo):
            b = (hi - lo) / 2
            size = "too narrow" if b < a else "too wide"
            return (
                f"the values are spread evenly over (-b, b) with b = {_num(b)}"
                f"{_named_bound(b, d_in, d_out)}; that is {_num(b / a)} times the Glorot "
                f"bound ({size}): draw from (-a, a) with a = sqrt(6 / (d_in + d_out)) = "
                f"{_num(a)}."
            )
        return (
            f"the values are spread evenly over ({_num(lo)}, {_num(hi)}), not centred on 0; "
            f"draw from (-a, a) with a = sqrt(6 / (d_in + d_out)) = {_num(a)}."
        )
    mean, std = float(w.mean()), float(w.std())
    if std > 0 and _fits(w, normal_cdf(mean, std), FIT_ALPHA):
        glorot = abs(std / (a / math.sqrt(3)) - 1) < 0.02
        which = " = sqrt(2 / (d_in + d_out)), Glorot-normal's" if glorot else ""
        reach = max(-lo, hi)
        beyond = (
            f" and reach {_num(reach)}, beyond the Glorot limit a = {_num(a)}" if reach > a else ""
        )
        return (
            f"the values are bell-shaped like a normal distribution (standard deviation "
            f"{_num(std)}{which}){beyond}; draw uniformly from [-a, a] (rng.uniform), "
            "not from a normal distribution."
        )
    return (
        f"the weights are not spread uniformly over (-a, a) with a = {_num(a)}: "
        f"{describe_histogram(w, a)}; draw with rng.uniform(-a, a, size=(d_in, d_out))."
    )


# --------------------------------------------------------------------------
# the check
# --------------------------------------------------------------------------
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


def tested(call: Call) -> bool:
    """Whether ``call``'s draw gets the Kolmogorov–Smirnov test (large, and not a repeat)."""
    d_in, d_out, _ = call.args
    return d_in * d_out >= LARGE and call.context.get("role") != "same seed"


def _slack(W: np.ndarray) -> float:
    """Relative slack on the bound: a float32 draw may round just past a."""
    dtype = W.dtype if np.issubdtype(W.dtype, np.floating) else np.dtype(float)
    return max(1e-6, 4 * float(np.finfo(dtype).eps))


class InitWeights(Check):
    """Glorot-uniform, judged on shape, ``rng``, bounds and a goodness-of-fit test.

    Every draw of ``d_in * d_out >= LARGE`` numbers (except the repeat of a
    seed) must pass a one-sample Kolmogorov–Smirnov test against
    ``U(-a, a)``, ``a = sqrt(6 / (d_in + d_out))``, at the false-alarm rate
    :data:`ALPHA` = 1e-6 per test; a run has :data:`KS_PER_RUN` = 4 such
    tests, so a correct implementation fails a run with probability at most
    4e-6 (and never the visible run when it draws as the reference does).
    The same draws must not be half repeated values nor have correlated
    neighbours (sorted, tiled), which adds about 1e-15 to that rate.
    """

    name = "init_weights"
    passed = (
        "Glorot-uniform: shape, reproducible from rng, within [-a, a], and uniform by a "
        "Kolmogorov-Smirnov test."
    )
    passed_hidden = "Glorot-uniform on random shapes."

    def visible(self):
        return _twice(4, 4, 0) + _twice(200, 300, 1)

    def hidden(self, rng):
        calls = []
        for _ in range(3):
            d_in, d_out = (int(n) for n in rng.integers(1, 50, size=2))
            calls += _twice(d_in, d_out, int(rng.integers(1 << 30)))
        d_in, d_out = (int(n) for n in rng.integers(200, 300, size=2))  # 40000 to 89401 numbers
        return calls + _twice(d_in, d_out, int(rng.integers(1 << 30)))

    def judge(self, call, got):
        d_in, d_out, _ = call.args
        W = as_result(self.name, got, "W")
        if W.shape == (d_out, d_in) and d_in != d_out:
            raise CheckFailed(f"{self.name}: the shape is swapped; W must be (d_in, d_out).")
        if W.shape != (d_in, d_out):
            raise CheckFailed(
                f"{self.name}: W should have shape {(d_in, d_out)}, but has shape {W.shape}."
            )
        if not np.isfinite(W).all():
            raise CheckFailed(f"{self.name}: W contains NaN or infinite values.")
        if W.size and not W.any():
            raise CheckFailed(
                f"{self.name}: every weight is 0, as if the bound were 0: 6 // (d_in + d_out) is "
                f"floor division, 6 // {d_in + d_out} = {6 // (d_in + d_out)}; the Glorot bound "
                "is a = sqrt(6 / (d_in + d_out)), with a true division, and the values are drawn "
                "from U(-a, a)."
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
            if tested(call):
                self._judge_distribution(call, np.asarray(W))
        for call, W in zip(calls, results, strict=True):
            d_in, d_out, _ = call.args
            W = np.asarray(W)
            a = math.sqrt(6 / (d_in + d_out))
            top = float(np.abs(W).max())
            if top > a * (1 + _slack(W)):
                raise CheckFailed(
                    f"{self.name}: on a {W.shape} matrix values reach {_num(top)}, beyond the "
                    f"Glorot limit a = sqrt(6 / (d_in + d_out)) = {_num(a)}; every value must "
                    "lie in [-a, a]."
                )

    def _judge_distribution(self, call: Call, W: np.ndarray) -> None:
        """One large draw: no repeated values, and the Kolmogorov–Smirnov test at ALPHA."""
        d_in, d_out, _ = call.args
        a = math.sqrt(6 / (d_in + d_out))
        w = W.astype(float).ravel()  # (d_in * d_out,)
        k = np.unique(w).size
        # A correct float64 draw repeats a value with probability ~n**2 / 2**53; a float32
        # one repeats about 0.1% of its values. Half repeated is a copied row, not chance.
        if k > FEW and k < w.size / 2 and W.dtype.itemsize >= 4:
            raise CheckFailed(
                f"{self.name}: a {W.shape} matrix holds only {k} distinct values among "
                f"{w.size}: values repeat (copied rows or columns, or rounding?); draw every "
                "entry with rng.uniform(-a, a, size=(d_in, d_out))."
            )
        if ks_statistic(w, uniform_cdf(-a, a)) > ks_critical(w.size, ALPHA):
            raise CheckFailed(f"{self.name}: on a {W.shape} matrix, {diagnose(W, d_in, d_out)}")
        r = max(abs(c) for c in neighbour_correlation(W))
        if r > NEIGHBOURS / math.sqrt(w.size):
            raise CheckFailed(
                f"{self.name}: on a {W.shape} matrix the values are right but neighbouring "
                f"entries are alike (correlation {_num(r)}; independent draws give about 0): "
                "sorted or arranged? Draw every entry independently with "
                "rng.uniform(-a, a, size=(d_in, d_out))."
            )
