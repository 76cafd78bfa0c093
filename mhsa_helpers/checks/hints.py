"""The sentences that more than one check says, each written once.

A check module imports the sentence it shares with another instead of writing it
out again: rewording it here rewords it everywhere. ``tests/test_one_voice.py``
fails when a string of 30 characters or more is written in two check modules.
"""

from __future__ import annotations
