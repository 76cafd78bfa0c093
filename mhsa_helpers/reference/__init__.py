"""Reference implementation of multi-head self-attention, one function per exercise.

These are the functions the learner writes in the course notebooks; the
checks in :mod:`mhsa_helpers.checks` compare the learner's versions with these.
Weights act on the right, as in the course articles: ``Q = X @ W_q`` with
``W_q`` of shape ``(d_model, d_model)``; the head at index ``i`` owns the
columns ``i*d_k:(i+1)*d_k``. Leading batch axes (``...``) are allowed throughout.

One module a job: the steps (:mod:`.steps`), the capstone's variant and
the extensions (:mod:`.extensions`), the backward pass (:mod:`.backward`), and
the input checks and the layers' mask rule they share (:mod:`.inputs`); each
exercise's entry in the registry names its module (``reference = "steps"``), and
this package exports the function under the exercise's name.

Each function's docstring is its contract from the registry
(:class:`mhsa_helpers.exercises.Exercise`, written in ``exercises.toml``):
the meaning, then the function's own note on how it computes, then the
parameters and returns with their shapes. It is set here, at import, so that
``help(mh.softmax)`` in a notebook shows the same contract as the answer stub.
"""

from __future__ import annotations

import importlib
import inspect

from ..exercises import EXERCISES

#: One function per exercise of the course, in course order, named as in the registry.
__all__ = [e.name for e in EXERCISES]

# Each exercise's function, from the module of this package its entry names
# (``reference = "steps"``): a real attribute of this module, ``help()`` showing its contract.
for _e in EXERCISES:
    _function = getattr(importlib.import_module(f".{_e.reference}", __name__), _e.name)
    _function.__doc__ = _e.docstring(notes=inspect.cleandoc(_function.__doc__ or ""))
    globals()[_e.name] = _function
del _e, _function
