"""Learner functions that make exactly one catalogued mistake, on any input.

``oracle(name, key)`` returns what a function with the mistake ``key`` returns
(the check's own catalogue computes it for each call), so a test can ask
whether the check names that mistake, and no other, wherever it runs.
"""

import builtins
import os
from functools import cache

import numpy as np

from mhsa_helpers.checks import CHECKS, KEY_VARIABLE, CheckFailed, hidden_seed
from mhsa_helpers.checks.core import call_in_notebook
from mhsa_helpers.checks.failures import blind, mistake_key

#: The exercises whose checks judge by a catalogue of wrong results.
CATALOGUED = [n for n, c in CHECKS.items() if c.catalogue(c.calls()[0]) is not None]


mistake = mistake_key


def hidden(name: str) -> int:
    """The seed of ``name``'s hidden inputs under the tests' key (as check_hidden draws them)."""
    return hidden_seed(bytes.fromhex(os.environ[KEY_VARIABLE]), name)


@cache
def all_calls(name: str) -> tuple:
    """The visible and the hidden calls of exercise ``name``'s check (drawn once per run)."""
    check = CHECKS[name]
    return tuple(check.calls() + check.calls(hidden(name)))


@cache
def catalogues(name: str) -> tuple:
    """``(expected, ((hint, wrong), …))`` of each of :func:`all_calls`, computed once per run."""
    return tuple(CHECKS[name].catalogue(call) for call in all_calls(name))


def visible_catalogues(name: str) -> tuple:
    """:func:`catalogues` of the visible calls only."""
    return catalogues(name)[: len(CHECKS[name].calls())]


@cache
def keys(name: str) -> tuple[str, ...]:
    """Every mistake the check of ``name`` catalogues on its visible calls.

    (The hidden calls depend on the course's key; a mistake that only they
    can show is not one the visible check could name.)
    """
    found = {}
    for _, known in visible_catalogues(name):
        for hint, _ in known:
            found.setdefault(mistake(hint), None)
    return tuple(found)


def _same(a, b) -> bool:
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return type(a) is type(b) and a == b


def _print(x) -> tuple:
    """A value's quick fingerprint: its type, and an array's shape, dtype and first entries."""
    if isinstance(x, tuple | list):
        return (type(x).__name__, *(_print(v) for v in x))
    if isinstance(x, dict):
        return ("dict", *((k, _print(v)) for k, v in sorted(x.items())))
    if isinstance(x, np.ndarray):
        return ("ndarray", x.shape, x.dtype.str, x.ravel()[:32].tobytes())
    return (type(x).__name__, repr(x))


@cache
def _prints(name: str) -> tuple:
    """:func:`_print` of the arguments of each of :func:`all_calls`."""
    return tuple((_print(c.args), _print(c.kwargs)) for c in all_calls(name))


def oracle(name: str, key: str):
    """The learner's ``name`` with mistake ``key``: right where the mistake changes nothing.

    Its answers are computed beforehand (the check catches a function that
    calls the reference while it runs), found again by the inputs (the check
    passes copies): by their fingerprints, then compared whole (:func:`_same`).
    """
    table: dict = {}
    for call, (expected, known), at in zip(
        all_calls(name), catalogues(name), _prints(name), strict=True
    ):
        wrong = [w for h, w in known if mistake(h) == key and w is not None]
        table.setdefault(at, []).append((call, wrong[0] if wrong else expected))

    def answer(*args, **kwargs):
        found = table[(_print(args), _print(kwargs))]
        call, result = next(
            (c, r) for c, r in found if _same(c.args, args) and _same(c.kwargs, kwargs)
        )
        if call.raises is not None:  # every mistake still refuses what the contract refuses
            raise getattr(builtins, call.raises)(f"{name} refuses these inputs, as it must.")
        return result

    answer.__name__ = name
    return answer


def failure(name: str, fn, seed=None) -> CheckFailed | None:
    """The check's failure for ``fn`` (None when it passes); with a ``seed``, the hidden test's,
    judged as the grader judges it (on the outcomes a hidden test may read, :func:`blind`)."""
    calls = CHECKS[name].calls(seed)
    try:
        with np.errstate(all="ignore"):
            outcomes = call_in_notebook(name, fn, calls, hidden=seed is not None)
            CHECKS[name].verdict(calls, outcomes if seed is None else [blind(o) for o in outcomes])
    except CheckFailed as exc:
        return exc
    return None


def verdict(name: str, fn, seed=None) -> str | None:
    """The check's message for ``fn`` (None when it passes)."""
    failed = failure(name, fn, seed)
    return None if failed is None else str(failed)
