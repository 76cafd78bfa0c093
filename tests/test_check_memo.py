"""A check's calls are drawn once per process and what it computes of them is kept with them.

What is kept must never change a later verdict: the calls' arrays are read-only (the
learner's function gets copies), and a call made from another starts with nothing kept.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers.checks import CHECKS, CheckFailed
from tests.support.answers import load

SOFTMAX_IN_PLACE = (  # right, but it writes into Z
    "def softmax(Z, axis=-1):\n"
    "    m = Z.max(axis=axis, keepdims=True)\n"
    "    m[~np.isfinite(m)] = 0\n"
    "    Z -= m\n"
    "    np.exp(Z, out=Z)\n"
    "    s = Z.sum(axis=axis, keepdims=True)\n"
    "    s[s == 0] = 1\n"
    "    Z /= s\n"
    "    return Z\n"
)
SOFTMAX = (
    "def softmax(Z, axis=-1):\n"
    "    m = Z.max(axis=axis, keepdims=True)\n"
    "    E = np.exp(Z - np.where(np.isfinite(m), m, 0))\n"
    "    s = E.sum(axis=axis, keepdims=True)\n"
    "    return E / np.where(s == 0, 1, s)\n"
)


def test_the_calls_are_drawn_once_and_their_arrays_cannot_be_written():
    first, again = CHECKS["softmax"].calls(), CHECKS["softmax"].calls()
    assert all(a is b for a, b in zip(first, again, strict=True))
    Z = first[0].args[0]
    with pytest.raises(ValueError, match="read-only"):
        Z[0, 0] = 0.0


def test_a_function_writing_into_its_input_is_told_so_and_changes_no_later_verdict(capsys):
    before = [np.array(c.args[0]) for c in CHECKS["softmax"].calls()]
    with pytest.raises(CheckFailed, match="modified an input in place"):
        checks.check("softmax", load(SOFTMAX_IN_PLACE, "softmax"))
    after = [c.args[0] for c in CHECKS["softmax"].calls()]
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    checks.check("softmax", load(SOFTMAX, "softmax"))
    assert "\u2713 softmax" in capsys.readouterr().out


def test_a_call_made_from_another_keeps_nothing_of_its_catalogue():
    check = CHECKS["softmax"]
    call = check.calls()[0]
    expected, _ = check.catalogue(call)
    single = dataclasses.replace(call, args=(np.asarray(call.args[0], dtype=np.float32),))
    assert single.memo == {}
    assert check.catalogue(single)[0].dtype == np.float32
    assert check.catalogue(call)[0].dtype == np.float64 and check.catalogue(call)[0] is expected
