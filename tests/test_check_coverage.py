"""What every visible check runs (issue 33, deliverable 5).

The contract's ``(..., T, d)`` means zero, one or two leading axes: every check whose
exercise takes such an input runs all three, so code written for exactly one batch
axis (``B, T, d = X.shape``, ``transpose(0, 2, 1, 3)``) cannot pass. Every check whose
exercise takes a mask runs one where some query has every key blocked, so code that
gives NaN there, or weights that sum to 1 (−1e9 for −∞), cannot pass either.
"""

import inspect

import numpy as np
import pytest

from mhsa_helpers import reference as ref
from mhsa_helpers.checks import CHECKS


def _bound(name: str, call) -> dict:
    """The call's arguments by the reference's parameter names."""
    params = inspect.signature(getattr(ref, name)).parameters
    bound = dict(zip(params, call.args, strict=False))
    bound.update(call.kwargs)
    return bound


def _leading(name: str, call) -> int | None:
    """The number of leading (batch) axes of the call's first array, or None without one."""
    first = call.args[0] if call.args else None
    if not isinstance(first, np.ndarray | int):  # an int: one length, no leading axis
        return None
    return np.ndim(first) - CHECKS[name].core_ndim


#: The exercises whose first argument is an array with leading axes, ``(..., T, d)``.
BATCHED = sorted(
    n for n, c in CHECKS.items() if any((_leading(n, call) or 0) > 0 for call in c.visible())
)
#: The exercises that take a mask.
MASKED = sorted(n for n in CHECKS if "mask" in inspect.signature(getattr(ref, n)).parameters)


def test_the_lists_are_the_course_s():
    """The two lists are found, not typed in: they hold the exercises one would expect."""
    assert {"softmax", "attention_head", "multi_head_self_attention", "padding_mask"} <= set(
        BATCHED
    )
    assert {"attention_head", "grouped_query_attention", "cross_attention"} <= set(MASKED)
    assert "multi_head_self_attention_backward" in set(BATCHED) & set(MASKED)


@pytest.mark.parametrize("name", BATCHED)
def test_every_batched_check_runs_zero_one_and_two_leading_axes(name):
    leads = {_leading(name, call) for call in CHECKS[name].visible() if call.raises is None}
    assert {0, 1, 2} <= leads, (
        f"{name}: leading axes run: {sorted(x for x in leads if x is not None)}"
    )


@pytest.mark.parametrize("name", MASKED)
def test_every_masked_check_runs_a_query_whose_every_key_is_blocked(name):
    def fully_blocked(call) -> bool:
        mask = _bound(name, call).get("mask")
        if mask is None or call.raises is not None:
            return False
        blocked = np.isneginf(np.asarray(mask, dtype=np.float64))
        return bool(blocked.all(axis=-1).any())  # a row (query) of keys all blocked

    assert any(fully_blocked(call) for call in CHECKS[name].visible()), name
