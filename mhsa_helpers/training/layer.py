"""Which attention layer to train with: the learner's where its check passes."""

from __future__ import annotations

from ..execution.saved import saved_hint
from ..learner import judge, learner_or_reference

__all__ = ["layer_functions"]


def layer_functions(functions=None, cache: dict | None = None, directory=None) -> tuple:
    """The attention layer to train with: the learner's where its check passes.

    Parameters
    ----------
    functions : mapping, optional
        The learner's functions by name (:func:`mhsa_helpers.execution.saved.learner_functions`).
    cache : dict, optional
        Checks already run (see :func:`mhsa_helpers.learner.learner_or_reference`).
    directory : str or Path, optional
        Where ``functions`` were read from (saved notebooks). Given, a function
        that is missing or not implemented yet is said to be read from its
        saved notebook, with when it was saved: it may be written but not saved.

    Returns
    -------
    attention, attention_backward : callable
        ``multi_head_self_attention`` and ``multi_head_self_attention_backward``,
        each the learner's where its check passes, else the reference's.
    status : str
        HTML: one sentence per function saying whose was used, and why.
    """
    cache = {} if cache is None else cache
    chosen, said = [], []
    for name in ("multi_head_self_attention", "multi_head_self_attention_backward"):
        fn, sentence = learner_or_reference(name, functions, cache)
        chosen.append(fn)
        sentence = sentence.replace("Drawn with", "Trains with")
        kind, _ = judge(name, dict(functions or {}).get(name), cache, anyway=False)
        unwritten = kind in ("absent", "unwritten")
        if directory is not None and unwritten:
            sentence += " " + saved_hint(name, directory)
        said.append(sentence)
    return chosen[0], chosen[1], "<br>".join(said)
