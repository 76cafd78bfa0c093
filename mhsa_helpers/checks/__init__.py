"""The check behind every exercise: ``checks.check("softmax", softmax)`` in a test cell.

One module per step (``step01_input`` … ``step10_capstone``) defines the
check of each exercise of that step: its inputs on the worked examples
(visible) and on random shapes drawn from the registry's seed (hidden), and
how to judge the learner's outputs against the reference, naming the most
likely mistake. On success a check prints one line starting with a tick; on
failure it raises :class:`CheckFailed` (an ``AssertionError``) with one
sentence.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..exercises import exercise
from .core import Check, CheckFailed

for _module in pkgutil.iter_modules(__path__):
    if _module.name.startswith("step"):
        importlib.import_module(f"{__name__}.{_module.name}")

#: The check of each exercise, by the exercise's function name.
CHECKS: dict[str, Check] = Check.registry

__all__ = ["CHECKS", "Check", "CheckFailed", "check", "check_hidden"]


def check(name: str, fn) -> None:
    """The visible test of exercise ``name`` on the learner's function ``fn``."""
    CHECKS[name].run(fn)


def check_hidden(name: str, fn) -> None:
    """The hidden test of exercise ``name``: random inputs from the registry's seed."""
    CHECKS[name].run(fn, seed=exercise(name).hidden_seed)
