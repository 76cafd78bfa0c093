"""A check's failures and what a hidden test may say of them.

:class:`CheckFailed` is a check's verdict (an ``AssertionError`` with one
sentence); :class:`AmbiguousMistake` one for an output that several catalogued
mistakes explain; :class:`NotYet` the answer for a function not written yet.
Every failure has a *public* sentence (:attr:`CheckFailed.public`), without the
inputs, shapes or values: :func:`redact` takes them out of a sentence,
:func:`said_publicly` says a failed call from its error code alone, and
:func:`blind` takes the learner's own text out of an outcome.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import re

from ..execution.outcomes import Opaque, Outcome
from .hints import CHAIN_RULE

__all__ = [
    "A_MESSAGE",
    "RAISED_HIDDEN",
    "AmbiguousMistake",
    "CheckFailed",
    "NotYet",
    "blind",
    "mistake_key",
    "redact",
    "said_publicly",
]


class CheckFailed(AssertionError):
    """A check's verdict: the learner's function is wrong, and the message says how.

    An ``AssertionError``, so that nbgrader and ``pytest.raises`` treat it as a
    failed test. In IPython it shows as its one sentence, not as a traceback
    through the checks (:meth:`_render_traceback_`). ``public`` is what a
    hidden test may say of it: the property that failed, without the
    inputs, shapes or values (by default the message with its numbers and
    quoted names taken out, :func:`redact`). ``named`` is what the failure
    names, for the class report's id (:func:`~.slips.slip_of`): ``("hint",
    exercise, hint)`` for a catalogued hint, ``("diagnose", test)``,
    ``("relayed", reading)`` or ``("contract", code)``; None: found from the
    message.
    """

    def __init__(self, message: str = "", public: str | None = None, named: tuple | None = None):
        super().__init__(message)
        self.public = redact(message) if public is None else public
        self.named = named

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of the traceback: the sentence, marked as a failure."""
        return [f"\u2717 {self}"]


class AmbiguousMistake(CheckFailed):
    """The output matches several catalogued mistakes on this input: it cannot tell which."""

    def __init__(self, name: str, hints: list[str]):
        super().__init__(f"{name}: " + " Or: ".join(hints), named=("hint", name, hints[0]))
        self.hints = hints


def redact(text: str, bare: bool = False) -> str:
    """``text`` without what could reveal an input: numbers, shapes, quoted names.

    Digits inside a word stay (``float32``, ``W_1``), and so do a bare 0 and
    1 (as in "divide 0 by 0") unless ``bare`` (a name for a part of the
    output, such as "y at step 1", where any number could be an input's);
    a size said as ``d_k = 4`` keeps its name only.
    """
    kept = () if bare else ("0", "1")
    # a quoted name, never an apostrophe ("each row's own maximum")
    text = re.sub(r"(?<!\w)'[^\n]*?'(?!\w)|\"[^\"]*\"", "…", str(text))
    text = re.sub(r"\s*=\s*√?[-+]?(?<![\w.])\d+(\.\d+)?([eE][-+]?\d+)?(?!\w)", "", text)
    text = re.sub(r"\((\s*[-+]?[\d.…]+\s*,?)*\s*\)", "(…)", text)
    number = r"(?<![\w.])√?[-+]?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w·])"  # 2·d_k: a formula
    text = re.sub(number, lambda m: m[0] if m[0] in kept else "…", text)
    return re.sub(r"(…[\s,]*)+…", "…", text)


@functools.lru_cache(maxsize=4096)
def mistake_key(hint: str) -> str:
    """The mistake a hint names, whatever numbers of its input it quotes.

    On another input the same mistake's hint may quote other sizes
    ("divided by d_k = 2" on one head, "d_k = 4" on another). A verdict asks it of the
    same few hints many times: each is worked out once.
    """
    return re.sub(r"\d+(\.\d+)?", "#", hint)


#: The style of printed output (JupyterLab's own variables, with fallbacks).
_PLAIN_OUTPUT = (
    "margin: 0; padding: 0; background: none; white-space: pre-wrap; "
    "font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 13px)"
)


class NotYet:
    """A check's answer for a function not written yet: a ✗ line shown as ordinary output.

    Returned by a test cell, it shows as its sentence (HTML, not an error
    box); its plain text is ``0``, which nbgrader reads as the test cell's
    partial grade, so Validate counts the exercise as not passing, as the
    progress report does. It is false in a condition.
    """

    def __init__(self, sentence: str):
        self.sentence = sentence

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "0"

    def __str__(self) -> str:
        return f"\u2717 {self.sentence}"

    def _repr_html_(self) -> str:
        """The ✗ line as the notebook shows printed text."""
        text = html.escape(str(self))
        return f'<pre style="{_PLAIN_OUTPUT}">{text}</pre>'


#: What a hidden test says of a call that went wrong, by the child's error code.
_PUBLIC = {
    "not-implemented": "{name} is not implemented yet.",
    "memory": "{name} went far over the memory bound (a full matrix of scores?).",
    "modified": "{name} modified an input in place; leave the inputs as they were.",
    "unstable": "{name} gave a different answer when called again with the same inputs.",
    "reference": "{name} calls the course's reference instead of implementing it.",
    "calls": "{name} makes far more function calls than a backward pass needs, as central "
    f"differences of the forward do: {CHAIN_RULE}.",
    "warning": "{name} gave a warning (in these checks a warning counts as an error).",
    "exit": "{name} tried to end its process.",
    "crashed": "{name}: its process ended during the call.",
    "garbled": "{name}: its result could not be read.",
    "slow": "{name} took longer than its time budget on a hidden input.",
    "spent": "{name} was not checked: the time budget for grading all the notebooks was used up.",
}


def said_publicly(name: str, code: str | None) -> str:
    """The sentence a hidden test shows for a call that failed with ``code``.

    Made from the code alone, never from the child's words: an answer's
    exception message could quote the hidden inputs.
    """
    if code in _PUBLIC:
        return _PUBLIC[code].format(name=name)
    # never which exception: an answer could choose it from the hidden inputs
    return f"{name} {RAISED_HIDDEN}"


#: What a hidden test says of any exception a call raised.
RAISED_HIDDEN = "raised an exception on a hidden input (a hidden test never says which)."


#: Type names a hidden test may say (any other is the learner's own, and could carry data).
_KNOWN_TYPES = frozenset({"dict", "set", "frozenset", "function", "generator", "NoneType", "str"})


def _blind_value(value):
    """``value`` with everything the learner could have written into it as text taken out."""
    if isinstance(value, str):
        return Opaque("str")
    if isinstance(value, Opaque):
        return Opaque(value.type_name if value.type_name in _KNOWN_TYPES else "an object")
    if type(value) in (tuple, list):
        return type(value)(_blind_value(v) for v in value)
    return value


#: What a hidden test reads of an exception's message: that there is one, never its words.
A_MESSAGE = "(a message)"


def blind(outcome):
    """An outcome as a hidden test may read it: no text of the learner's."""
    if not isinstance(outcome, Outcome):
        return outcome
    raised = outcome.raised
    if raised is not None:  # the judge reads whether there is a message, never the message
        kind, _, message = raised.partition(":")
        raised = f"{kind}: {A_MESSAGE}" if len(message.strip()) >= 10 else f"{kind}:"
    return dataclasses.replace(outcome, value=_blind_value(outcome.value), raised=raised)
