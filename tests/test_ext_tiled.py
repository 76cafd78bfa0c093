"""tiled_attention's check: each typical mistake, written as a learner would, gets its own hint.

Correct but unusual answers (float32, einsum, explicit loops) pass the
visible and the hidden checks; the memory bound at T = 4096 fails a function
that builds a (T, T) array, and the contract's strict rules fail when broken.
"""

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers.checks.comparison import compare
from mhsa_helpers.checks.core import call_in_notebook
from mhsa_helpers.checks.failures import CheckFailed
from mhsa_helpers.checks.step14_tiled import MEMORY_PUBLIC, SUM_NOT_RESCALED
from tests.support.ext_tiled import FULL_MATRIX, NAME, tiled
from tests.support.extensions import fails, load
from tests.support.oracles import CATALOGUED


def passes(fn, capsys) -> None:
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


def test_the_check_is_catalogued():
    assert NAME in CATALOGUED


@pytest.mark.slow  # calls at full size (T = 4096): tests/support/marks.py
def test_the_full_matrix_fails_the_memory_bound_in_learner_terms():
    message = fails(NAME, FULL_MATRIX)
    assert "MiB at its peak, more than 32 MiB" in message, message
    assert "(T_q, block_size)" in message and "causal" not in message.split("MiB")[0], message


@pytest.mark.slow  # calls at full size (T = 4096): tests/support/marks.py
def test_a_full_causal_mask_fails_the_memory_bound():
    """Blocks right, but the mask of the whole sequence is built first: only the causal call."""
    source = tiled(
        before="full = mh.causal_mask(T_q) if causal else None",
        blocked="full[:, s:e] == -np.inf",
    )
    message = fails(NAME, source)
    assert "causal, the call used" in message and "more than 32 MiB" in message, message


@pytest.mark.slow  # calls at full size (T > 2048): tests/support/marks.py
@pytest.mark.parametrize("key", [bytes([k]) * 32 for k in range(3)], ids=["key0", "key1", "key2"])
@pytest.mark.parametrize("where", ["scores", "causal mask"])
def test_a_full_matrix_fails_the_hidden_test_too(where, key):
    """The hidden test measures memory as the visible one does (issue 47), saying so without
    the input's size: full scores, or blocks right but the whole causal mask built first."""
    source = (
        FULL_MATRIX
        if where == "scores"
        else tiled(
            before="full = mh.causal_mask(T_q) if causal else None",
            blocked="full[:, s:e] == -np.inf",
        )
    )
    fn = load(source, NAME)
    with pytest.raises(CheckFailed) as told:
        checks.CHECKS[NAME].run(fn, seed=checks.hidden_seed(key, NAME), hidden=True)
    assert str(told.value) == f"{MEMORY_PUBLIC} (hidden tests)"


@pytest.mark.slow  # calls at full size (T = 4096): tests/support/marks.py
def test_a_function_wrong_on_small_inputs_is_told_so_without_the_measured_calls():
    """The T = 4096 calls run only when the calls before them leave the verdict open; the
    verdict is then the one the outcomes of every call give."""
    wrong = load(tiled(l_old="l"), NAME)  # the running sum not rescaled
    lengths = []

    def watched(Q, K, V, block_size, causal=False):
        lengths.append(Q.shape[-2])
        return wrong(Q, K, V, block_size, causal)

    check = checks.CHECKS[NAME]
    calls = check.calls()
    every = call_in_notebook(NAME, watched, calls)
    assert len(every) == len(calls) and max(lengths) == 4096
    lengths.clear()
    with pytest.raises(CheckFailed) as told:
        checks.check(NAME, watched)
    assert max(lengths) < 4096, "the measured calls ran on a function already wrong"
    with pytest.raises(CheckFailed) as judged:
        check.verdict(calls, every)
    assert str(told.value) == str(judged.value)
    assert SUM_NOT_RESCALED in str(told.value)


def test_a_difference_outside_the_contract_is_located():
    """Inside numpy's default tolerance but outside the contract's: the entry is named."""
    expected = np.linspace(1.0, 2.0, 6).reshape(2, 3)
    got = expected.copy()
    got[1, 2] *= 1 + 5e-7
    with pytest.raises(CheckFailed, match=r"first at index \(1, 2\)"):
        compare(NAME, got, expected, "the output", contract="float64")
