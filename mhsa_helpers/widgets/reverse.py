"""Try your own input (notebook 18): the trained model on 8 letters the learner types.

The course's trained model (:mod:`mhsa_helpers.training`, shipped in
``mhsa_helpers/data/trained.npz``) reverses sequences of
:data:`~mhsa_helpers.training.task.SEQ_LEN` letters from
:data:`~mhsa_helpers.training.task.VOCAB`. :class:`TryReversal` sends its parameters to
the page once; ``front/reverse.js`` runs it there on the letters the learner types
(``forward.js``: ``parseLetters`` and ``reversal``, equal to :func:`parse_letters` and
:func:`reverse_on` within 1e-9) and draws each head's weights, the output against the
reversed input and its probabilities, with no kernel: the notebook and the book run the
same module. :func:`parse_letters` and :func:`reverse_on` are the kernel's same rules,
run by :func:`mhsa_helpers.training.model.forward`.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import traitlets

from ..training import heads, model, saved, task
from .base import PictureWidget, encode, esm

__all__ = ["PARAMS", "TryReversal", "parse_letters", "reverse_on"]

#: What the learner may type between letters: spaces and commas, ignored.
SEPARATORS = re.compile(r"[\s,]+")
_RANGE = f"{task.VOCAB[0]}–{task.VOCAB[-1]}"  # "A–P"
#: The model's parameters the page needs (``forward.js`` ``reversal``).
PARAMS = ("E", "P", "W_q", "W_k", "W_v", "W_o", "W_u", "b_u")


def parse_letters(text: str) -> list[str]:
    """The learner's letters: exactly ``SEQ_LEN`` of them, each in ``VOCAB``.

    Spaces, commas and case are ignored: ``"ABCDEFGH"``, ``"a b c d e f g h"``
    and ``"A,B,C,D,E,F,G,H"`` are the same input.

    Parameters
    ----------
    text : str

    Returns
    -------
    letters : list of str
        ``SEQ_LEN`` upper-case letters of ``VOCAB``.

    Raises
    ------
    ValueError
        With a one-line reason in the learner's terms: the first character
        that is not one of the letters (and its position, counting from 1
        among what was typed, separators left out), else how many letters
        there were.
    """
    chars = list(SEPARATORS.sub("", str(text)).upper())
    for n, c in enumerate(chars, start=1):
        if c in task.VOCAB:
            continue
        what = "a letter" if not c.isalpha() else f"one of the letters {_RANGE}"
        raise ValueError(f"'{c}' is not {what} (position {n}, counting from 1).")
    if len(chars) != task.SEQ_LEN:
        got = "none" if not chars else f"{len(chars)} letter{'s' if len(chars) > 1 else ''}"
        raise ValueError(f"{task.SEQ_LEN} letters {_RANGE} please: got {got}.")
    return chars


@functools.lru_cache(maxsize=1)
def _shipped() -> dict:
    """The shipped trained model, read once."""
    return saved.load_trained()


def reverse_on(letters, params: dict | None = None) -> tuple:
    """Run the trained model on ``letters``: each head's attention and the output letters.

    Parameters
    ----------
    letters : sequence of str
        Letters of ``VOCAB`` (as :func:`parse_letters` returns them).
    params : dict, optional
        The model's parameters; by default the shipped trained model.

    Returns
    -------
    weights : ndarray of shape (n_heads, T, T)
        ``weights[k, i, j]``: how much query ``i`` of head ``k`` takes from key ``j``.
    output : list of str
        The letter the model puts first at every position, (T,).
    probabilities : ndarray of shape (T,)
        The model's probability of its output letter at every position.
    """
    params = _shipped() if params is None else params
    n_heads = int(params.get("n_heads", model.N_HEADS))
    x = np.array([task.VOCAB.index(c) for c in letters])  # (T,) token ids
    acts = model.forward(params, x, n_heads)
    probs = np.exp(acts.logits - acts.logits.max(axis=-1, keepdims=True))  # (T, V)
    probs /= probs.sum(axis=-1, keepdims=True)
    best = acts.logits.argmax(axis=-1)  # (T,)
    return acts.weights, task.letters(best), probs[np.arange(len(best)), best]


class TryReversal(PictureWidget):
    """The trained model on letters the learner types: each head's attention and the output.

    The page's text box takes ``SEQ_LEN`` letters of ``VOCAB`` (spaces, commas and case
    ignored), read on Enter or when it loses focus. A good input draws one attention panel
    per head (query letters as rows, key letters as columns, weights on a fixed 0–1 scale,
    in the explorer's head colours) and the probability of each output letter; the status
    line gives the output against the reversed input, the notes which key each head mostly
    attends to (:data:`~mhsa_helpers.training.heads.PATTERNS`). A bad input gets its
    one-line reason, and the picture keeps the last good input.

    Parameters
    ----------
    text : str, optional
        The first input; by default the shipped held-out sequence.
    params : dict, optional
        The model's parameters; by default the shipped trained model.

    Attributes
    ----------
    params : dict
        The model as the page runs it: :data:`PARAMS` encoded, ``n_heads``, ``vocab``,
        ``patterns`` (the words of each head pattern).
    text : str
        What the learner typed (the page sets it).
    """

    _esm = esm("reverse.js")
    params = traitlets.Dict().tag(sync=True)
    text = traitlets.Unicode().tag(sync=True)
    where = "The trained model on your letters: run this cell to draw it (it runs in the page)."

    def __init__(self, text: str | None = None, params: dict | None = None):
        shipped = _shipped()
        p = shipped if params is None else params
        super().__init__(
            text=" ".join(shipped["tokens"]) if text is None else text,
            params={
                **{k: encode(p[k]) for k in PARAMS},
                "n_heads": int(p.get("n_heads", model.N_HEADS)),
                "vocab": task.VOCAB,
                "patterns": heads.PATTERNS,
            },
        )
