"""The checks' sentences read as English: verbs agree with what they name, no doubled words.

The sentences come from every catalogued mistake (``tests/oracles.py``, on the
visible and the hidden inputs), from the buggy answers of ``tests/mistakes.py``,
and from structural slips the catalogue does not know (a factor, a transpose,
an extra axis, heads in reverse order, all zeros, NaN, float32 …), which the
checks describe through ``diagnose`` with the output's name as the subject.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from mhsa_helpers.checks import CHECKS
from mhsa_helpers.checks.wording import agree, is_plural
from tests.support.mistakes import MISTAKES
from tests.support.oracles import CATALOGUED, hidden, keys, oracle, verdict

#: Plural nouns of this course that a sentence may make its subject.
PLURALS = (
    "weights",
    "heads",
    "values",
    "outputs",
    "scores",
    "gradients",
    "rows",
    "columns",
    "keys",
    "queries",
    "entries",
    "masks",
    "caches",
    "tokens",
)
#: A plural subject with a singular verb: "the heads has", "the attention weights is" …
SLIP = re.compile(  # (not after "of": "every entry of the weights is" is right)
    rf"(?<!\bof )\b(?:the|its|their)\s+(?:\w+\s+)?({'|'.join(PLURALS)})"
    rf"(?:\s*\([^)]*\))?\s+(is|has|was|differs|contains|agrees|comes)\b"
)
DOUBLED = re.compile(r"\b(a|an|the|is|are|of|to|and|in|it|its)\s+\1\b", re.IGNORECASE)


def _mutants():
    """Wrong results the catalogue does not name: each part of the reference's result, changed."""

    def swap(a):
        return np.swapaxes(a, -1, -2) if a.ndim >= 2 else a[::-1]

    return {
        "doubled": lambda a: 2.0 * a,
        "transposed": swap,
        "zeros": np.zeros_like,
        "extra axis": lambda a: np.stack([a, a]),
        "first axis reversed": lambda a: a[::-1] if a.ndim else a,
        "third axis from the end reversed": lambda a: a[..., ::-1, :, :] if a.ndim >= 3 else -a,
        "float32": lambda a: a.astype(np.float32),
        "one NaN": lambda a: np.where(np.arange(a.size).reshape(a.shape) == 0, np.nan, a),
        "masked cells leak": lambda a: np.where(a == 0, 0.01, a),
    }


def _mutated(name: str, part: int, change):
    right = oracle(name, "no such mistake")

    def fn(*args, **kwargs):
        result = right(*args, **kwargs)
        if isinstance(result, tuple | list):
            parts = list(result)
            if part < len(parts) and isinstance(parts[part], np.ndarray):
                parts[part] = change(np.asarray(parts[part], dtype=float))
            return type(result)(parts)
        return change(np.asarray(result, dtype=float)) if part == 0 else result

    return fn


@pytest.fixture(scope="module")
def sentences() -> set[str]:
    said = set()
    for name in CATALOGUED:
        for key in keys(name):
            for seed in (None, hidden(name)):
                said.add(verdict(name, oracle(name, key), seed))
        for change in _mutants().values():
            for part in range(2):
                said.add(verdict(name, _mutated(name, part, change)))
    for _, name, source, _ in MISTAKES.values():
        if name in CHECKS:
            namespace = {"np": np}
            exec(source, namespace)
            said.add(verdict(name, namespace[name]))
    return {s for s in said if s}


@pytest.mark.slow  # about a minute: every check, many wrong answers
def test_there_are_sentences_with_plural_subjects(sentences):
    """Not vacuous: the slips this file looks for could be made."""
    assert len(sentences) > 150
    plural = [s for s in sentences if re.search(r"\bthe (attention weights|heads)\b", s)]
    assert len(plural) >= 5, plural


@pytest.mark.slow  # about a minute: every check, many wrong answers
def test_no_plural_subject_takes_a_singular_verb(sentences):
    slips = sorted(s for s in sentences if SLIP.search(s))
    assert not slips, slips[:5]


@pytest.mark.slow  # about a minute: every check, many wrong answers
def test_no_word_is_doubled(sentences):
    doubled = sorted(s for s in sentences if DOUBLED.search(s))
    assert not doubled, doubled[:5]


@pytest.mark.slow  # about a minute: every check, many wrong answers
def test_no_plural_is_made_by_a_bare_s(sentences):
    """ "entry" makes "entries", not "entrys"."""
    bare = sorted(s for s in sentences if re.search(r"\b\w*[^aeiou\W]ys\b", s))
    assert not bare, bare[:5]


@pytest.mark.slow  # about a minute: every check, many wrong answers
def test_the_plural_outputs_take_plural_verbs(sentences):
    """Where the heads or the weights are the subject, the verb is plural."""
    for s in sentences:
        for m in re.finditer(r"(?<!\bof )\bthe (heads|attention weights)(?: \([^)]*\))? (\w+)", s):
            assert m.group(2) not in {"is", "has", "was", "differs", "contains"}, s


@pytest.mark.parametrize(
    ("what", "plural"),
    [
        ("the heads", True),
        ("the attention weights (..., h, T, T)", True),
        ("the output rows [0, 3] on Q, K and V of shape (8, 4)", True),
        ("Q, K and V", True),
        ("the output", False),
        ("the causal mask", False),
        ("the cache K' after step 3 (shape (..., n_heads, 4, d_k))", False),
        ("Z", False),
        ("dQ", False),
        ("softmax(Z, axis=0)", False),
        ("merge_heads(split_heads(M))", False),
        ("the rotated X (for the keys)", False),
    ],
)
def test_what_is_plural(what, plural):
    assert is_plural(what) is plural
    assert agree(what, "is") == ("are" if plural else "is")
    assert agree(what, "has") == ("have" if plural else "has")
    assert agree(what, "differs") == ("differ" if plural else "differs")
    assert agree(what, "its") == ("their" if plural else "its")
