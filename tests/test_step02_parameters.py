"""The init_weights check: its Kolmogorov–Smirnov test, its false alarms, its messages."""

import math

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers.checks import step02_parameters as s02
from mhsa_helpers.checks.core import call_in_notebook
from tests.support.answers import load

# The start of every answer below: the Glorot bound, as the exercise defines it.
HEAD = "def init_weights(d_in, d_out, rng):\n    a = np.sqrt(6 / (d_in + d_out))\n"


def answer(body: str):
    """An ``init_weights`` answer cell whose body follows the line computing ``a``."""
    return load(HEAD + body, "init_weights")


# --------------------------------------------------------------------------
# the statistic and its critical value
# --------------------------------------------------------------------------
def brute_force_ks(x, cdf) -> float:
    """sup |F_n - F| from the definition: at every sample point and just before it."""
    x = [float(v) for v in np.ravel(x)]
    n, worst = len(x), 0.0
    for t in x:
        at = sum(v <= t for v in x) / n  # F_n(t)
        before = sum(v < t for v in x) / n  # F_n(t-)
        F = float(cdf(np.array([t]))[0])
        worst = max(worst, abs(at - F), abs(before - F))
    return worst


@pytest.mark.parametrize("seed", range(20))
def test_ks_statistic_is_the_largest_distance_of_the_two_distribution_functions(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    x = rng.uniform(-1.5, 1.0, size=n)  # also outside the support, and lopsided
    if seed % 2:
        x = np.round(x, 1)  # ties
    cdf = s02.uniform_cdf(-1.0, 1.0)
    assert s02.ks_statistic(x, cdf) == pytest.approx(brute_force_ks(x, cdf), abs=1e-12)


@pytest.mark.parametrize(
    "x, D",
    [([0.0], 0.5), ([1.0], 1.0), ([-1.0], 1.0), ([-0.5, 0.5], 0.25), ([0.0, 0.0], 0.5)],
)
def test_ks_statistic_by_hand(x, D):
    assert s02.ks_statistic(np.array(x), s02.uniform_cdf(-1.0, 1.0)) == pytest.approx(D)


@pytest.mark.parametrize("alpha, table", [(0.10, 1.2238), (0.05, 1.3581), (0.01, 1.6276)])
def test_critical_value_is_the_kolmogorov_tables_for_large_n(alpha, table):
    """sqrt(n) * c matches the asymptotic Kolmogorov quantiles, and 2 exp(-2 n c**2) = alpha."""
    n = 10_000
    c = s02.ks_critical(n, alpha)
    assert math.sqrt(n) * c == pytest.approx(table, abs=2e-4)
    assert 2 * math.exp(-2 * n * c * c) == pytest.approx(alpha)


@pytest.mark.slow  # a sweep: 2000 draws
@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_false_alarm_rate_on_correct_draws(alpha):
    """2000 correct draws (n = 1000) rejected at alpha: the rate within 4 binomial sigmas.

    A one-sided statistic would reject about alpha / 2, a wrong distribution
    function or critical value far more or far less; both fail here.
    """
    trials, n, a = 2000, 1000, 0.3
    cdf = s02.uniform_cdf(-a, a)
    c = s02.ks_critical(n, alpha)
    rejected = sum(
        s02.ks_statistic(np.random.default_rng(seed).uniform(-a, a, size=n), cdf) > c
        for seed in range(trials)
    )
    sigma = math.sqrt(alpha * (1 - alpha) / trials)
    assert abs(rejected / trials - alpha) < 4 * sigma, rejected / trials


def test_the_test_has_power_against_the_two_point_matrix_at_the_checks_alpha():
    a, n = 0.1, 5000
    two_point = a / math.sqrt(3) * np.random.default_rng(0).choice([-1.0, 1.0], size=n)
    D = s02.ks_statistic(two_point, s02.uniform_cdf(-a, a))
    assert D == pytest.approx(0.5 - (1 - 1 / math.sqrt(3)) / 2, abs=0.02)  # ≈ 0.29
    assert D > 5 * s02.ks_critical(n, s02.ALPHA)


# --------------------------------------------------------------------------
# the false-alarm rate the check states
# --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [None, 1, 2, 3, 2202])
def test_each_run_tests_the_stated_number_of_large_draws(seed):
    check = checks.CHECKS["init_weights"]
    assert sum(s02.tested(c) for c in check.calls(seed)) == s02.KS_PER_RUN == 4


def test_the_false_alarm_rate_is_stated_in_the_code_and_the_docstring():
    assert s02.ALPHA == 1e-6
    assert s02.ALPHA * s02.KS_PER_RUN == pytest.approx(4e-6)
    for doc in (s02.__doc__, s02.InitWeights.__doc__):
        assert "1e-6" in doc and "4e-6" in doc


def reference_like(d_in, d_out, rng):
    a = np.sqrt(6 / (d_in + d_out))
    return rng.uniform(-a, a, size=(d_in, d_out))


@pytest.mark.slow  # a sweep: 60 seeds
def test_a_correct_answer_passes_the_hidden_check_on_many_seeds():
    """Every seed is an independent trial at <= 4e-6: 60 must all pass."""
    check = checks.CHECKS["init_weights"]
    for seed in range(60):
        calls = check.calls(seed)
        check.verdict(calls, call_in_notebook("init_weights", reference_like, calls))


# --------------------------------------------------------------------------
# answers that are right (they pass) and mistakes (named in the learner's terms)
# --------------------------------------------------------------------------
CORRECT = {
    "rng.uniform": "    return rng.uniform(-a, a, size=(d_in, d_out))\n",
    "float32": "    return rng.uniform(-a, a, size=(d_in, d_out)).astype(np.float32)\n",
    "float32 from rng.random": (
        "    r = rng.random((d_in, d_out), dtype=np.float32)\n"
        "    return (2 * r - 1) * np.float32(a)\n"
    ),
    "transposed draw": "    return rng.uniform(-a, a, size=(d_out, d_in)).T\n",
    "reshaped draw": "    return rng.uniform(-a, a, size=d_in * d_out).reshape(d_in, d_out)\n",
    "scaled rng.random": "    return a * (2 * rng.random((d_in, d_out)) - 1)\n",
}


@pytest.mark.parametrize("case", sorted(CORRECT))
def test_correct_answers_pass(case, capsys):
    fn = answer(CORRECT[case])
    checks.check("init_weights", fn)
    checks.check_hidden("init_weights", fn)
    assert capsys.readouterr().out.count("\u2713") == 2


MISTAKES = {
    "two values ±a/√3": (
        "    return a / np.sqrt(3) * rng.choice([-1.0, 1.0], size=(d_in, d_out))\n",
        "the two values ±a/√3 = ±0.0632 have the right variance",
    ),
    "three values": (
        "    return rng.choice([-a, 0.0, a], size=(d_in, d_out))\n",
        "take only 3 distinct values (-0.11, 0, 0.11)",
    ),
    "triangular": (
        "    return (rng.uniform(-a, a, (d_in, d_out)) + rng.uniform(-a, a, (d_in, d_out))) / 2\n",
        "8 equal bins hold 3%, 9%, 15%, 22%, 22%, 16%, 9%, 3% of the values, where "
        "Glorot-uniform is flat (12.5% in each): more values near 0 than near ±a",
    ),
    "triangular, right variance": (
        "    u = rng.uniform(-a, a, (2, d_in, d_out))\n    return (u[0] + u[1]) / np.sqrt(2)\n",
        "lie beyond ±a), where Glorot-uniform is flat (12.5% in each): more values near 0",
    ),
    "arcsine": (
        "    return a * np.sin(rng.uniform(-np.pi / 2, np.pi / 2, (d_in, d_out)))\n",
        "more values near ±a than near 0",
    ),
    "normal, right variance": (
        "    return rng.normal(0, a / np.sqrt(3), (d_in, d_out))\n",
        "bell-shaped like a normal distribution (standard deviation 0.063 = sqrt(2 / (d_in + "
        "d_out)), Glorot-normal's) and reach",
    ),
    "normal N(0, 1)": (
        "    return rng.normal(0, 1, (d_in, d_out))\n",
        "not from a normal distribution",
    ),
    "bound sqrt(6 / d_in)": (
        "    b = np.sqrt(6 / d_in)\n    return rng.uniform(-b, b, (d_in, d_out))\n",
        "spread evenly over (-b, b) with b = 0.173 = sqrt(6 / d_in)",
    ),
    "bound sqrt(6 / d_out)": (
        "    b = np.sqrt(6 / d_out)\n    return rng.uniform(-b, b, (d_in, d_out))\n",
        "b = 0.141 = sqrt(6 / d_out): Glorot's bound has both sizes under the root",
    ),
    "bound sqrt(6 / (d_in * d_out))": (
        "    b = np.sqrt(6 / (d_in * d_out))\n    return rng.uniform(-b, b, (d_in, d_out))\n",
        "b = 0.01 = sqrt(6 / (d_in * d_out)): the sizes are multiplied under the root, where "
        "Glorot's bound adds them; that is 0.0913 times the Glorot bound (too narrow)",
    ),
    "the standard deviation as the bound": (
        "    b = np.sqrt(2 / (d_in + d_out))\n    return rng.uniform(-b, b, (d_in, d_out))\n",
        "the standard deviation of Glorot-uniform, not its bound",
    ),
    "not scaled": (
        "    return rng.uniform(-1, 1, (d_in, d_out))\n",
        "b = 1: rng.uniform(-1, 1) is not scaled",
    ),
    "rng.random": ("    return rng.random((d_in, d_out))\n", "no value is negative"),
    "not centred": (
        "    return rng.uniform(-a / 2, a, (d_in, d_out))\n",
        "spread evenly over (-0.0548, 0.11), not centred on 0",
    ),
    "one row copied": (
        "    return np.tile(rng.uniform(-a, a, (1, d_out)), (d_in, 1))\n",
        "holds only 300 distinct values among 60000",
    ),
    "sorted": (
        "    return np.sort(rng.uniform(-a, a, d_in * d_out)).reshape(d_in, d_out)\n",
        "neighbouring entries are alike",
    ),
    "one value beyond a": (
        "    W = rng.uniform(-a, a, (d_in, d_out))\n    W[0, 0] = 2 * a\n    return W\n",
        "on a (4, 4) matrix values reach 1.73, beyond the Glorot limit a = sqrt(6 / (d_in + "
        "d_out)) = 0.866; every value must lie in [-a, a]",
    ),
    "NaN": (
        "    W = rng.uniform(-a, a, (d_in, d_out))\n    W[-1, -1] = np.nan\n    return W\n",
        "W contains NaN or infinite values",
    ),
    "swapped shape": (
        "    return rng.uniform(-a, a, (d_out, d_in))\n",
        "the shape is swapped",
    ),
    "a fresh generator": (
        "    return np.random.default_rng().uniform(-a, a, (d_in, d_out))\n",
        "two calls with the same rng seed differ",
    ),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_mistakes_are_named_in_the_learners_terms(case):
    body, hint = MISTAKES[case]
    fn = answer(body)
    with pytest.raises(AssertionError) as info:
        checks.check("init_weights", fn)
    message = str(info.value)
    assert hint in message, message
    assert "np.float" not in message and "array(" not in message, message
    with pytest.raises(AssertionError):
        checks.check_hidden("init_weights", fn)


def test_a_uniform_with_the_bound_sqrt_6_over_d_in_is_not_called_normal():
    """The bug report: U(-sqrt(6/d_in), sqrt(6/d_in)) was told "not from a normal distribution"."""
    body, _ = MISTAKES["bound sqrt(6 / d_in)"]
    with pytest.raises(AssertionError) as info:
        checks.check("init_weights", answer(body))
    assert "normal" not in str(info.value)


def test_each_mistake_gets_its_own_hint():
    """No two catalogued mistakes here are told the same sentence."""
    said = {}
    for case, (body, _) in MISTAKES.items():
        with pytest.raises(AssertionError) as info:
            checks.check("init_weights", answer(body))
        said.setdefault(str(info.value), []).append(case)
    assert all(len(cases) == 1 for cases in said.values()), said
