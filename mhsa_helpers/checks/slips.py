"""Which slip a failed check named: a stable id for each sentence the checks can say.

A check's failure is one sentence for the learner. For the instructor's
class report (``python -m autograders report``) each failure also has an
id, the same on every run and for every student who made the same slip,
derived from the checks' own data, never from a list position or from any
text the learner wrote:

* a catalogued hint or any other sentence a check module holds as a
  constant: ``module:constant`` (``step07_softmax:columns``,
  ``hints:add_mask``); a sentence a function of the call's numbers makes
  (``hints.by_d_model``): ``module:function`` (``hints:by_d_model``); any
  other string literal of a check module's source (an f-string with its
  fields as holes): ``module:its_first_words-digest``;
* the result's type (``result:not_one_ndarray`` …);
* a wrong output no hint names but whose structure
  :func:`~.diagnose.diagnose` explains: ``diagnose:<test>``
  (``diagnose:transpose``);
* an error read back into the slip that caused it
  (:meth:`~.core.Check.explain_error`): ``relayed:<reading>``; a broken
  part of the call contract (slow, modified an input …): ``contract:<code>``;
* a catalogued hint that is none of those (a sentence computed from the
  input's arrays): ``<exercise>:hint-<digest>``, a digest of the hint's
  words with its numbers and shapes taken out (:func:`~.failures.redact`);
* anything else, such as a first wrong entry or the learner's own
  exception: :data:`UNNAMED`.

:func:`slip_of` finds the id of a failure, :func:`sentence_of` the course's
own sentence for an id (numbers a function quotes shown as ``…``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import pkgutil
import re

from .failures import redact, said_publicly

__all__ = ["UNNAMED", "Slip", "hint_slip", "index", "sentence_of", "slip_of"]

#: The id of a failure no check could name.
UNNAMED = "unnamed"
#: Shortest text indexed as a sentence: shorter constants are names and fragments.
MIN_CHARS = 24
#: The course's words for the slips named by reading a wrong output's structure
#: (:func:`~.diagnose.diagnosis`) or an error (:meth:`~.core.Check.explain_error`).
READINGS = {
    "diagnose:shape": "the result has the wrong shape: axes swapped, missing or extra.",
    "diagnose:factor": "the result is off by a constant factor (a scale, a sign, all zeros).",
    "diagnose:transpose": "the result is transposed: its last two axes are swapped.",
    "diagnose:permutation": "rows, columns or heads of the result are in the wrong order.",
    "diagnose:one_slice": "one slice of the result (a row, a column, a head) is wrong.",
    "diagnose:leak": "masked cells leak: the mask is applied after the softmax, not before.",
    "diagnose:causal": "the weights are causal where no causal mask was asked for.",
    "diagnose:float32": "the result agrees only to float32 precision.",
    "result:not_one_ndarray": "returns something else than one ndarray (a tuple, None …).",
    "result:complex": "returns complex numbers whose imaginary parts are not all 0.",
    "result:not_numeric": "returns an array that is not numbers (booleans, objects).",
    "relayed:another_exception": "a wrong argument is refused with the wrong kind of exception.",
    "relayed:no_refusal": "a wrong argument is not refused: the function computes on.",
    "relayed:refusal_names_no_argument": "a wrong argument is refused, its message not naming it.",
    "relayed:array_as_truth_value": "an array used as a condition (`if mask:`, `and`, `or`).",
    "relayed:einsum_sums_over_ellipsis": "np.einsum asked to sum over '...'.",
    "relayed:size_as_float": "a size computed with / is a float: use //.",
    "relayed:batch_axes": "batch axes break the function: axes counted from the front.",
    "relayed:einsum_without_ellipsis": "np.einsum without '...' on an array with more axes.",
    "relayed:elementwise_for_matmul": "`*` used for a matrix product (`@`).",
    "relayed:float32_digits_lost": "right on float64 inputs, wrong on float32 ones (digits "
    "lost to cancellation).",
    "relayed:axes_counted_from_the_front": "right without batch axes, wrong with them: axes "
    "counted from the front.",
}
#: Marks where a function's argument goes in its sentence (see :func:`_template`).
_HOLE = "\x00"


class Slip(str):
    """A failure's id (a ``str``) that remembers the course's sentence it stands for."""

    sentence: str

    def __new__(cls, slip_id: str, sentence: str = ""):
        self = super().__new__(cls, slip_id)
        self.sentence = sentence
        return self


def _modules() -> list:
    """The check modules whose constants and functions are sentences (``hints`` first)."""
    from . import __path__ as path

    names = ["hints", *sorted(m.name for m in pkgutil.iter_modules(path) if m.name != "hints")]
    return [importlib.import_module(f"{__package__}.{n}") for n in names if n != "slips"]


def _template(fn) -> str | None:
    """``fn``'s sentence with :data:`_HOLE` where each argument goes, or None if it is none.

    Called with a marker for every required argument; a function that does not
    return a ``str`` holding its text around them (one computing from arrays,
    one that raises) is no sentence.
    """
    try:
        params = inspect.signature(fn).parameters.values()
        required = [
            p
            for p in params
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if len(required) != len(
            [
                p
                for p in params
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
        ):
            return None
        said = fn(*[_HOLE] * len(required))
    except Exception:  # not a sentence of its arguments
        return None
    if not isinstance(said, str) or len(said.replace(_HOLE, "")) < MIN_CHARS:
        return None
    return said


#: Check modules whose sentences are generic (a first wrong entry, a wrong shape, the
#: contract): their literals name no slip.
_GENERIC = frozenset({"comparison", "core", "failures", "wording", "relayed"})


@functools.cache
def index() -> tuple[dict, list]:
    """The sentences of the check modules: ``({text: Slip}, [(regex, key, length, Slip)])``.

    Found in each module's own source: a constant of at least
    :data:`MIN_CHARS` characters (``module:constant``; one imported into
    another module keeps the id of the module that defines it); a function
    of numbers that makes a sentence (``module:function``, see
    :func:`_template`); and every other string literal, an f-string as a
    pattern with anything where its fields go (``module:first_words-digest``).
    Searched longest first. Built once per process (about a second).
    """
    texts, patterns, seen_fn = {}, [], set()

    def add(parts: list[str], slip: Slip) -> None:
        if sum(len(p) for p in parts) < MIN_CHARS:
            return
        if len(parts) == 1:
            texts.setdefault(parts[0], slip)
        else:
            patterns.append(_pattern(parts, slip))

    for module in _modules():
        short = module.__name__.rsplit(".", 1)[-1]
        source = inspect.getsource(module)
        for name, value in vars(module).items():
            if name.startswith("_") or name != name.upper() or not isinstance(value, str):
                continue
            if not re.search(rf"^{name}\s*(:[^=]*)?=", source, re.M):
                continue  # imported here, defined elsewhere
            parts = re.split(r"\{[a-z_]*\}", value)  # a str.format template: its fields, holes
            add(parts, Slip(f"{short}:{name.lower()}", "…".join(parts)))
        for name, fn in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn in seen_fn:
                continue
            if fn.__module__ != module.__name__:
                continue
            seen_fn.add(fn)
            said = _template(fn)
            if said is not None:
                parts = said.split(_HOLE)
                add(parts, Slip(f"{short}:{name}", "…".join(parts)))
        if short not in _GENERIC:
            for parts in _literals(source):
                text = "…".join(parts)
                add(parts, Slip(f"{short}:{_slug(text)}", text))
    patterns.sort(key=lambda p: -p[2])
    return texts, patterns


def _literals(source: str) -> list[list[str]]:
    """Every string literal of a module's ``source``, an f-string as its literal parts."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append([node.value])
        elif isinstance(node, ast.JoinedStr):
            parts, text = [], ""
            for value in node.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    text += value.value
                else:
                    parts.append(text)
                    text = ""
            found.append([*parts, text])
    return found


def _pattern(parts: list[str], slip: Slip) -> tuple:
    """A sentence's pattern: its literal ``parts`` in order, anything between them.

    With the longest part, looked for first (a plain ``in``), and the literal length.
    """
    regex = re.compile(".+?".join(re.escape(p) for p in parts), re.S)
    return regex, max(parts, key=len), sum(len(p) for p in parts), slip


def _best(text: str) -> tuple[int, Slip | None]:
    """The indexed sentence in ``text`` with the most characters of its own, and how many."""
    texts, patterns = index()
    best, found = 0, None
    for said, slip in texts.items():
        if len(said) > best and said in text:
            best, found = len(said), slip
    for regex, key, length, slip in patterns:
        if length <= best:
            break  # sorted longest first: no pattern left can beat it
        if key in text and regex.search(text):
            best, found = length, slip
    return best, found


def hint_slip(exercise: str, hint: str) -> Slip:
    """The id of a catalogued ``hint`` of ``exercise``: its sentence's, or its digest's.

    A hint that is (or holds, for most of its length) an indexed sentence takes
    that sentence's id; any other (computed from the input's arrays) a digest
    of its words without numbers, the same on every input: no word of it
    becomes part of the id.
    """
    length, found = _best(hint)
    if found is not None and length >= len(hint) // 2:
        return found
    return Slip(f"{exercise}:hint-{_slug(hint).rsplit('-', 1)[-1]}", hint)


def _slug(hint: str) -> str:
    """A sentence's first words, without its numbers or shapes, and a digest of all of them."""
    words = [w.strip("_") for w in re.findall(r"[a-z_]+", redact(hint, bare=True).lower())]
    words = [w for w in words if w]
    digest = hashlib.sha256(" ".join(words).encode()).hexdigest()[:6]
    return "_".join(words[:6]) + f"-{digest}"


def slip_of(exercise: str, failure) -> Slip:
    """The id of the slip a failed check named (a :class:`~.failures.CheckFailed`), or unnamed.

    What the failure carries (``CheckFailed.named``, set where it was
    raised) comes first; else the longest sentence of the check modules that
    its message holds; else :data:`UNNAMED`. Only the checks' own text can
    become an id: the learner's words in a message (an exception's) are
    never one.
    """
    named = getattr(failure, "named", None)
    if named:
        kind, *what = named
        if kind == "hint":
            return hint_slip(*what)
        if kind in ("diagnose", "relayed", "result"):
            return Slip(f"{kind}:{what[0]}", READINGS.get(f"{kind}:{what[0]}", ""))
        if kind == "contract":
            return Slip(f"contract:{what[0]}", said_publicly("the function", what[0]))
        return Slip(UNNAMED)
    message = str(failure)
    length, found = _best(message)
    if found is None or 3 * length < len(message):  # a fragment of a sentence names nothing
        return Slip(UNNAMED)
    return found


def sentence_of(slip_id: str) -> str:
    """The course's own sentence for ``slip_id`` ("" for one this process has not indexed)."""
    if slip_id in READINGS:
        return READINGS[slip_id]
    texts, patterns = index()
    for slip in (*texts.values(), *(p[3] for p in patterns)):
        if slip == slip_id:
            return slip.sentence
    return ""
