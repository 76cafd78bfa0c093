"""Try your own input (notebook 18): the trained model on 8 letters the learner types.

The course's trained model (:mod:`mhsa_helpers.training`, shipped in
``mhsa_helpers/data/trained.npz``) reverses sequences of
:data:`~mhsa_helpers.training.task.SEQ_LEN` letters from
:data:`~mhsa_helpers.training.task.VOCAB`. :class:`TryReversal` runs it on the
learner's own letters and draws what each head attends to, with the model's
output against the reversed input; :func:`parse_letters` (the one-line reason
for a bad input) and :func:`reverse_on` (the model on good letters) hold the
logic and are testable without widgets. The model is run by
:func:`mhsa_helpers.training.model.forward`, never re-derived here.
"""

from __future__ import annotations

import functools
import re
from html import escape
from typing import NamedTuple

import ipywidgets as widgets
import numpy as np

from ..learner import warn
from ..plot_style import HEAD_COLOURS
from ..training import heads, model, saved, task
from . import svg
from .live import Frame, Framed, compact

__all__ = ["Reversal", "TryReversal", "head_lines", "parse_letters", "reverse_on"]

#: What the learner may type between letters: spaces and commas, ignored.
SEPARATORS = re.compile(r"[\s,]+")
_RANGE = f"{task.VOCAB[0]}–{task.VOCAB[-1]}"  # "A–P"


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


class Reversal(NamedTuple):
    """The trained model on one sequence.

    Attributes
    ----------
    weights : ndarray of shape (n_heads, T, T)
        ``weights[k, i, j]``: how much query ``i`` of head ``k`` takes from key ``j``.
    output : list of str
        The letter the model puts first at every position.
    probabilities : ndarray of shape (T,)
        The model's probability of its output letter at every position.
    """

    weights: np.ndarray
    output: list
    probabilities: np.ndarray


def reverse_on(letters, params: dict | None = None) -> Reversal:
    """Run the trained model on ``letters``: each head's attention and the output letters.

    Parameters
    ----------
    letters : sequence of str
        Letters of ``VOCAB`` (as :func:`parse_letters` returns them).
    params : dict, optional
        The model's parameters; by default the shipped trained model.

    Returns
    -------
    Reversal
        ``(weights (n_heads, T, T), output letters, probabilities (T,))``.
    """
    params = _shipped() if params is None else params
    n_heads = int(params.get("n_heads", model.N_HEADS))
    x = np.array([task.VOCAB.index(c) for c in letters])  # (T,) token ids
    acts = model.forward(params, x, n_heads)
    probs = np.exp(acts.logits - acts.logits.max(axis=-1, keepdims=True))  # (T, V)
    probs /= probs.sum(axis=-1, keepdims=True)
    best = acts.logits.argmax(axis=-1)  # (T,)
    return Reversal(acts.weights, task.letters(best), probs[np.arange(len(best)), best])


def head_lines(weights) -> list[str]:
    """Which key each head mostly attends to on one input, in words, every number measured.

    For each head: the pattern of :data:`~mhsa_helpers.training.heads.PATTERNS` it
    follows best on this input (:func:`~mhsa_helpers.training.heads.name_heads`),
    for how many queries that key is the one with the largest weight, and the
    average weight on it.

    Parameters
    ----------
    weights : ndarray of shape (n_heads, T, T)

    Returns
    -------
    lines : list of str
        One per head.
    """
    weights = np.asarray(weights)
    T = weights.shape[-1]
    lines = []
    for k, (pattern, share) in enumerate(heads.name_heads(weights)):
        top = weights[k].argmax(axis=-1)  # (T,): each query's strongest key
        if pattern is None:
            keys = " ".join(str(int(j)) for j in top)
            lines.append(
                f"head {k + 1}: no single pattern on your input; each query's strongest key "
                f"(positions from 0): {keys}"
            )
            continue
        hits = int((top == heads.pattern_keys(pattern, T)).sum())
        lines.append(
            f"head {k + 1}: mostly {heads.PATTERNS[pattern]}, the strongest key for {hits} of "
            f"{T} queries ({share:.2f} of its weight there on average)"
        )
    return lines


class TryReversal(Framed):
    """The trained model on letters the learner types: each head's attention and the output.

    The text box takes ``SEQ_LEN`` letters of ``VOCAB`` (spaces, commas and
    case ignored) and is read on Enter or when it loses focus. A good input
    draws one attention panel per head (query letters as rows, key letters
    as columns, weights on a fixed 0–1 scale, in the explorer's head
    colours); the status line gives the model's output against the reversed
    input and the notes say which key each head mostly attends to. A bad
    input gets its one-line reason in the status line, and the picture keeps
    the last good input (its letters are in the picture's title, and the
    status line says so).

    Parameters
    ----------
    text : str, optional
        The first input; by default the shipped held-out sequence.
    params : dict, optional
        The model's parameters; by default the shipped trained model.

    Attributes
    ----------
    text_w : ipywidgets.Text
        The learner's letters.
    status_w, figure, notes_w : ipywidgets.HTML
        The status line (the output, or why the input is refused), the
        picture and the notes under it.
    letters : list of str or None
        The last good input (drawn in the picture).
    result : Reversal or None
        The model on it.
    widget : ipywidgets.VBox
        The whole widget.
    """

    def __init__(self, text: str | None = None, params: dict | None = None):
        self._params = params
        held = list(_shipped()["tokens"])
        self.letters = self.result = None
        self.text_w = widgets.Text(
            value=" ".join(held) if text is None else text,
            placeholder=f"{task.SEQ_LEN} letters {_RANGE}, e.g. {' '.join(held)}",
            description="letters",
            continuous_update=False,
        )
        self.frame = Frame([[compact(self.text_w, "420px")]])
        self.text_w.observe(lambda _: self.update(), names="value")
        self.update()

    def update(self) -> None:
        """Read the text box: draw the model on a good input, say why a bad one is refused."""
        try:
            letters = parse_letters(self.text_w.value)
        except ValueError as exc:
            self._refuse(str(exc))
            return
        self.letters, self.result = letters, reverse_on(letters, self._params)
        self._draw()

    def _refuse(self, reason: str) -> None:
        if self.letters is None:
            keep = "Nothing is drawn yet."
            self.figure.value = ""
        else:
            keep = f"The picture still shows your last good input, {''.join(self.letters)}."
        self.frame.status(warn(escape(reason, quote=False)) + " " + keep, f"{reason} {keep}")
        self.frame.notes(
            [
                f"Type {task.SEQ_LEN} letters from {_RANGE}, e.g. ABCDEFGH or a b c d e f g h "
                "(spaces, commas and lower case are fine), then press Enter."
            ]
        )

    def _draw(self) -> None:
        letters, (A, output, probs) = self.letters, self.result
        expected = letters[::-1]
        right = [o == e for o, e in zip(output, expected, strict=True)]
        T = len(letters)
        panels = [
            svg.Panel(
                A[k],
                f"head {k + 1}: attention weights",
                letters,
                letters,
                "query",
                "key",
                colour=HEAD_COLOURS[k % len(HEAD_COLOURS)],
                meaning="how much the query takes from the key",
            )
            for k in range(A.shape[0])
        ]
        word = "".join(letters)
        self.figure.value = svg.grid(
            panels,
            svg.step_scale(list(A), fixed=(0.0, 1.0)),
            "weight",
            f"the trained model's attention on {word}",
            axes=("query (the letter at position i)", "key (the letter at position j)"),
        )
        n = sum(right)
        verdict = (
            "the reverse of your input" if n == T else warn("not quite the reverse of your input")
        )
        line = f"{word} → output {' '.join(output)}: {verdict}, {n} of {T} letters right"
        if n < T:
            where = ", ".join(str(i) for i, ok in enumerate(right) if not ok)
            line += f" (wrong at position {where}, counting from 0: see below)"
        line += "."
        self.frame.status(line)
        if n == T:
            first = (
                "Every output letter is its mirror input letter: position i gets the letter "
                f"at position {T - 1}−i."
            )
        else:
            wrong = [
                f"position {i} gave {o} (want {e})"
                for i, (o, e, ok) in enumerate(zip(output, expected, right, strict=True))
                if not ok
            ]
            first = warn(f"Wrong letters (positions from 0): {'; '.join(wrong)}.")
        sure = (
            "Each output letter has, in the model's eyes, a probability of "
            f"{np.floor(probs.min() * 1000) / 1000:.3f} or more."
        )
        self.frame.notes([f"{first} {sure}", *head_lines(A)])
