"""What a hidden test's sentence must never carry: anything that could come from its inputs."""

import re

__all__ = ["leaked", "leaks"]


def leaks(text: str) -> list:
    """What in ``text`` could come from a hidden input: numbers (but 0 and 1) and LEAK.

    A number inside a word (``float32``, ``4i``) or a formula's factor (``2·j``) is no input.
    """
    numbers = re.findall(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?![\w·])", text)
    return [n for n in numbers if n not in ("0", "1")] + re.findall(r"LEAK\w*", text)


def leaked(name: str, said: dict) -> dict:
    """The sentences of ``said`` (``{kind: sentence or None}``) that a hidden test of exercise
    ``name`` may not say: not beginning with ``name``, or quoting an input (:func:`leaks`)."""
    return {
        kind: sentence
        for kind, sentence in said.items()
        if sentence is not None and (not sentence.startswith(name) or leaks(sentence))
    }
