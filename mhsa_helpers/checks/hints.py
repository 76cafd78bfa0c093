"""The sentences that more than one check says, each written once.

A check module imports the sentence it shares with another instead of writing it
out again: rewording it here rewords it everywhere. ``tests/test_one_voice.py``
fails when a string of 30 characters or more is written in two check modules.
"""

from __future__ import annotations

#: A mask made by multiplying 0/1 by −∞: 0 · (−∞) is NaN (causal, padding, sliding-window masks).
ZERO_TIMES_INF = (
    "the allowed positions are NaN, not 0: 0 · (−∞) is NaN. Build the mask with "
    "np.where(blocked, -np.inf, 0.0) instead of multiplying 0s and 1s by −∞."
)
