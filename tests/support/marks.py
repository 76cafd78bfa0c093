"""Which right answers the quick loop leaves to the whole suite: those checked at full size.

tiled_attention's visible check ends with two calls at T = 4096 (its memory
bound), about a second for an answer that passes them, and its hidden check with
one above T = 2048. The quick loop proves
once that a right answer passes them (tests/test_checks.py); everything else
at that size runs in the whole suite only (marked ``slow``): every other right
answer of that exercise (unusual, float32, in a widget), a full matrix or a
full causal mask failing the bound, the bound skipped for a function already
wrong (tests/test_ext_tiled.py) and the reference's own peak memory
(tests/test_reference_extensions.py).
"""

from __future__ import annotations

import pytest

from mhsa_helpers.checks import CHECKS

#: Exercises whose visible check calls the learner's function at full size: those with a
#: call that measures memory (read from the checks, today tiled_attention alone).
FULL_SIZE = frozenset(
    name for name, check in CHECKS.items() if any(call.memory for call in check.calls())
)


def right_answer(name: str, *values, id: str | None = None):
    """A parametrization ``(*values)`` of a right answer of ``name``: ``slow`` if ``name``'s check
    runs at full size (:data:`FULL_SIZE`)."""
    return pytest.param(*values, marks=[pytest.mark.slow] if name in FULL_SIZE else [], id=id)
