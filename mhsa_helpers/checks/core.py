"""The machinery of every check: run the learner's function, then judge what came back.

A check is two halves that never need to share a process:

* :func:`call_in_notebook` calls the learner's function on a check's inputs and
  returns one :class:`Outcome` per call: the value, or what went wrong
  (not implemented, raised, called the reference). It gives no verdict.
* :meth:`Check.judge` compares those outcomes with the reference and raises
  :class:`CheckFailed` whose message names the most likely mistake, from a
  catalogue of ``(hint, wrong_output)`` pairs computed from the reference.

In a notebook both halves run in the kernel (:func:`Check.run`); the
progress report and the grader run the first half in a child process
(:mod:`mhsa_helpers.execution.in_child`, which knows nothing of the checks) and judge in
the parent. Every failure also has a *public* sentence
(:attr:`CheckFailed.public`): what a hidden test may say, the property that
failed in the learner's terms, without the inputs, shapes or values.
"""

from __future__ import annotations

import contextvars
import dataclasses
import html
import re
import sys
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .. import reference as ref
from ..execution.child.contract import call_each
from ..execution.outcomes import Opaque, Outcome, outcomes_of
from ..exercises import exercise, forbidden
from ..reference.inputs import heads_mask
from .diagnose import diagnose
from .wording import agree, number, two_numbers

__all__ = [
    "AmbiguousMistake",
    "Call",
    "Check",
    "CheckFailed",
    "NotYet",
    "Opaque",
    "Outcome",
    "as_pair",
    "as_result",
    "batch_rng",
    "blind",
    "call_in_notebook",
    "close",
    "compare",
    "compare_head_outputs",
    "guard_numpy",
    "mistake_key",
    "number",
    "per_head",
    "precision",
    "random_shape",
    "redact",
    "where",
]


class CheckFailed(AssertionError):
    """A check's verdict: the learner's function is wrong, and the message says how.

    An ``AssertionError``, so that nbgrader and ``pytest.raises`` treat it as a
    failed test. In IPython it shows as its one sentence, not as a traceback
    through the checks (:meth:`_render_traceback_`). ``public`` is what a
    hidden test may say of it: the property that failed, without the
    inputs, shapes or values (by default the message with its numbers and
    quoted names taken out, :func:`redact`).
    """

    def __init__(self, message: str = "", public: str | None = None):
        super().__init__(message)
        self.public = redact(message) if public is None else public

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of the traceback: the sentence, marked as a failure."""
        return [f"\u2717 {self}"]


def _same(a, b) -> bool:
    """Whether two results agree, however nested (tuples of arrays); NaN equals NaN."""
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return close(a, b)


class AmbiguousMistake(CheckFailed):
    """The output matches several catalogued mistakes on this input: it cannot tell which."""

    def __init__(self, name: str, hints: list[str]):
        super().__init__(f"{name}: " + " Or: ".join(hints))
        self.hints = hints


def redact(text: str, bare: bool = False) -> str:
    """``text`` without what could reveal an input: numbers, shapes, quoted names.

    Digits inside a word stay (``float32``, ``W_1``), and so do a bare 0 and
    1 (as in "divide 0 by 0") unless ``bare`` (a name for a part of the
    output, such as "y at step 1", where any number could be an input's);
    a size said as ``d_k = 4`` keeps its name only.
    """
    kept = () if bare else ("0", "1")
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "…", str(text))
    text = re.sub(r"\s*=\s*√?[-+]?(?<![\w.])\d+(\.\d+)?([eE][-+]?\d+)?(?!\w)", "", text)
    text = re.sub(r"\((\s*[-+]?[\d.…]+\s*,?)*\s*\)", "(…)", text)
    number = r"(?<![\w.])√?[-+]?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w·])"  # 2·d_k: a formula
    text = re.sub(number, lambda m: m[0] if m[0] in kept else "…", text)
    return re.sub(r"(…[\s,]*)+…", "…", text)


@dataclass(frozen=True)
class Call:
    """One call of the learner's function: positional and keyword arguments.

    ``context`` is for the judge only (what the inputs came from, such as the
    example's d_model); the learner's function never sees it.
    """

    args: tuple
    kwargs: dict = field(default_factory=dict)
    context: dict = field(default_factory=dict)
    #: The exception the call must raise (e.g. "ValueError"); None: it must return.
    raises: str | None = None
    #: Measure the call's peak of traced memory (:attr:`Outcome.peak`).
    memory: bool = False
    #: The Python function calls the call may make (None: not counted); past it the call
    #: is stopped with the code "calls" (:class:`mhsa_helpers.execution.child.contract._Counted`).
    calls: int | None = None
    #: The exception must come from a check of the function's own (a ``raise`` in the
    #: learner's code), not from a course function it calls: where no course function checks
    #: what is wrong (n_kv_heads not dividing n_heads), such an error is incidental.
    own: bool = False


# --------------------------------------------------------------------------
# numpy as it was when the checks were imported (in the read-only setup cell,
# before any learner code ran): a verdict never rests on a replaced function
# --------------------------------------------------------------------------
_GENUINE = {
    "allclose": np.allclose,
    "isclose": np.isclose,
    "array_equal": np.array_equal,
    "testing.assert_allclose": np.testing.assert_allclose,
    "testing.assert_array_equal": np.testing.assert_array_equal,
}
_allclose, _isclose = np.allclose, np.isclose


def _lookup(path: str):
    obj = np
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def guard_numpy() -> None:
    """Fail when numpy's comparison functions have been replaced since the checks were imported."""
    for path, genuine in _GENUINE.items():
        if _lookup(path) is not genuine:
            raise CheckFailed(
                f"numpy.{path} has been replaced (monkeypatched); restart the kernel and "
                "run the notebook again: no check passes while numpy is patched."
            )


# --------------------------------------------------------------------------
# running the learner's function (in the kernel, or in a child process)
# --------------------------------------------------------------------------
class _ReferenceWatch:
    """Around one call: notes calls to reference functions the exercise may not use."""

    def __init__(self, codes: dict):
        self.codes, self.error, self.previous, self.hook = codes, None, None, None

    def _profile(self, frame, event, _arg):
        if event == "call" and frame.f_code in self.codes and self.error is None:
            self.error = (
                f"calls the course's reference mhsa_helpers.{self.codes[frame.f_code]} "
                "instead of implementing it: write the computation yourself."
            )

    def __enter__(self):
        self.previous, self.hook = sys.getprofile(), self._profile  # one bound method, kept
        sys.setprofile(self.hook)

    def __exit__(self, *exc):
        if sys.getprofile() is not self.hook and self.error is None:
            self.error = "changed the interpreter's profiler during the check."
        sys.setprofile(self.previous)


def call_in_notebook(name: str, fn, calls: list[Call]) -> list[Outcome]:
    """Call ``fn`` (the learner's ``name``) on every call's inputs, here; stop at the first error.

    The same calls as in the child process (:func:`mhsa_helpers.execution.child.contract.call_one`);
    here, where ``mh`` is the whole course package, calls to reference
    functions the exercise may not use are caught and reported as errors.
    """
    codes = {getattr(ref, n).__code__: n for n in forbidden(name)}
    requests = Check.registry[name].requests(calls)
    raw = call_each(name, fn, requests, lambda: _ReferenceWatch(codes))
    return outcomes_of(raw)


# --------------------------------------------------------------------------
# judging
# --------------------------------------------------------------------------
def tolerance(got, atol: float = 1e-8) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing a learner's ``got``: looser for single precision.

    A correct float32 implementation differs from the float64 reference by
    about 1e-7 relative (and sin/cos of angles near 60 by about 2e-6
    absolute), so float32 results get ``rtol=1e-4, atol=1e-5``.
    """
    dtype = np.asarray(got).dtype
    if np.issubdtype(dtype, np.floating) and dtype.itemsize < 8:
        return 1e-4, max(atol, 1e-5)
    return 1e-6, atol


#: The extensions' tolerance (EXTENSIONS.md): ``|got - expected| <= a * max(1, max|expected|)
#: + r * |expected|`` with ``(a, r)`` by the inputs' precision.
CONTRACT = {"float64": (1e-9, 1e-7), "float32": (2e-4, 2e-3)}


def precision(args) -> str:
    """ "float32" if any array among ``args`` (also inside tuples) is single precision."""
    for a in args:
        if isinstance(a, tuple | list) and precision(a) == "float32":
            return "float32"
        if isinstance(a, np.ndarray) and a.dtype == np.float32:
            return "float32"
    return "float64"


def close(a, b, atol=1e-8, contract: str | None = None) -> bool:
    """Same shape and equal within the tolerance of ``a``'s dtype (NaN equals NaN, −∞ −∞).

    With ``contract`` ("float64" or "float32", the precision of the inputs),
    the extensions' tolerance (:data:`CONTRACT`) instead.
    """
    try:
        a, b = np.asarray(a), np.asarray(b)
    except (ValueError, TypeError, OverflowError):  # ragged or unconvertible: not close
        return False
    if a.shape != b.shape or a.dtype.kind not in "biufc":
        return False
    with np.errstate(all="ignore"):
        if contract is not None:
            tol_a, tol_r = CONTRACT[contract]
            finite = np.isfinite(b)
            scale = max(1.0, float(np.abs(b[finite]).max(initial=0.0)))
            if not np.array_equal(a[~finite], b[~finite], equal_nan=True):
                return False
            err = np.abs(a[finite] - b[finite])
            return bool(np.all(err <= tol_a * scale + tol_r * np.abs(b[finite])))
        rtol, atol = tolerance(a, atol)
        return bool(_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def as_result(name: str, got, what: str) -> np.ndarray:
    """``got`` as a real numeric ndarray, or fail saying what came instead.

    Complex numbers whose imaginary parts are all zero count as real.
    """
    if isinstance(got, tuple | list) or got is None or isinstance(got, Opaque | str):
        kind = got.type_name if isinstance(got, Opaque) else type(got).__name__
        raise CheckFailed(
            f"{name} should return {what} as one ndarray, but returned {kind}.",
            public=f"{name} should return {what} as one ndarray, but returned something else.",
        )
    try:
        arr = np.asarray(got)
    except (OverflowError, ValueError, TypeError):  # e.g. an int too large for any dtype
        arr = np.asarray(None)
    if np.issubdtype(arr.dtype, np.complexfloating):
        if np.any(arr.imag != 0):
            raise CheckFailed(
                f"{name}: {what} {agree(what, 'has')} complex entries with a nonzero imaginary "
                "part; the result is real (take .real only if the imaginary part is zero by "
                "design).",
                public=f"{name}: {what} {agree(what, 'has')} complex entries on a hidden input.",
            )
        arr = arr.real
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.timedelta64):
        shown = (
            "booleans"
            if arr.dtype == bool
            else "Python objects"
            if arr.dtype == object
            else (f"dtype {arr.dtype}")
        )
        raise CheckFailed(
            f"{name} should return a numeric ndarray for {what}, but got {shown}.",
            public=f"{name} should return a numeric ndarray for {what}.",
        )
    return arr


#: The arguments of the call being judged (set by :meth:`Check.verdict`): the precision a
#: result must keep is the precision of its float inputs.
_JUDGED_ARGS: contextvars.ContextVar[tuple] = contextvars.ContextVar("judged_args", default=())


def _float_inputs(args) -> set:
    """The dtypes of the float arrays among ``args`` (also inside tuples)."""
    found = set()
    for a in args:
        if isinstance(a, tuple | list):
            found |= _float_inputs(a)
        elif isinstance(a, np.ndarray) and a.dtype.kind == "f":
            found.add(a.dtype)
    return found


def where(idx: tuple, labels=None) -> str:
    """An entry's place as a learner reads it: named rows and columns where known.

    ``labels`` is ``(row kind, row names, column kind, column names)`` for the
    last two axes, e.g. ``("query", tokens, "key", tokens)``.
    """
    if labels is None or len(idx) < 2:
        return f"at index {idx}"
    row_kind, rows, col_kind, cols = labels
    lead = f"at index {idx[:-2]}, " if len(idx) > 2 else "at "
    return f"{lead}{row_kind} {rows[idx[-2]]!r}, {col_kind} {cols[idx[-1]]!r}"


def compare(
    name: str,
    got,
    expected,
    what: str,
    mistakes=(),
    atol=1e-8,
    labels=None,
    contract=None,
    axes: dict | None = None,
    quantities: dict | None = None,
) -> None:
    """Pass if ``got`` matches ``expected``; else fail with the matching mistake's hint.

    ``mistakes`` is a sequence of ``(hint, wrong_output)`` pairs; a wrong
    output that ``got`` matches names the mistake. If several different
    hints match (the input cannot tell those mistakes apart), the failure is
    an :class:`AmbiguousMistake` carrying all of them. A mistake the
    catalogue does not know is described by its first wrong entry, named by
    ``labels`` (see :func:`where`) where the input is a worked example.
    ``contract`` (the inputs' precision) compares with the extensions'
    tolerance, and fails on NaN. A mistake the catalogue does not know is
    first described by its structure (:func:`~.diagnose.diagnose`: a
    factor, a transpose, heads in another order …), with ``axes`` naming
    the axes of ``expected`` (by default its last two are rows and columns)
    and ``quantities`` the numbers that may explain a factor
    (e.g. ``{"√d_k": 2.0}``); only when no structure explains it, by its
    first wrong entry.
    """
    got = as_result(name, got, what)
    expected = np.asarray(expected)
    if contract is None and precision(_JUDGED_ARGS.get()) == "float32":
        contract = "float32"  # single precision in: the contract's float32 tolerance
    if contract is not None and np.isnan(got).any() and not np.isnan(expected).any():
        said = redact(what, bare=True)  # a hidden test's sentence: no step number, no size
        contains = agree(what, "contains")
        raise CheckFailed(
            f"{name}: {what} {contains} NaN.", public=f"{name}: {said} {contains} NaN."
        )
    narrower = (
        got.dtype.kind == "f" == expected.dtype.kind
        and got.dtype.itemsize < expected.dtype.itemsize
    )
    double = _float_inputs(_JUDGED_ARGS.get()) == {np.dtype(np.float64)}
    if narrower and double and contract in (None, "float64") and close(got, expected, atol):
        raise CheckFailed(
            f"{name}: {what} {agree(what, 'comes')} out as {got.dtype} from {expected.dtype} "
            f"inputs: compute and return {expected.dtype} ({got.dtype} keeps only about 7 "
            "significant digits).",
            public=f"{name}: {redact(what, bare=True)} {agree(what, 'has')} a lower precision than "
            f"{agree(what, 'its')} inputs.",
        )
    if close(got, expected, atol, contract):
        return
    matching = [
        h for h, wrong in mistakes if wrong is not None and close(got, wrong, atol, contract)
    ]
    matching = list(dict.fromkeys(matching))
    if len(matching) == 1:
        raise CheckFailed(f"{name}: {matching[0]}")
    if matching:  # these inputs cannot tell the mistakes apart; later inputs may
        raise AmbiguousMistake(name, matching)
    if axes is None:
        axes = {-2: "row", -1: "column"} if expected.ndim >= 2 else {-1: "entry"}
    said = diagnose(got, expected, what, axes, quantities)
    if got.shape != expected.shape:
        raise CheckFailed(
            f"{name}: {said}"
            if said
            else f"{name}: {what} should have shape {expected.shape}, but {agree(what, 'has')} "
            f"shape {got.shape}.",
            public=f"{name}: the shape of {redact(what, True)} is wrong (check the axes).",
        )
    if said and ":" in said:  # the structure, and what it comes from
        raise CheckFailed(
            f"{name}: {said}",
            public=f"{name}: {redact(what, bare=True)} {agree(what, 'differs')} from the "
            "reference.",
        )
    if np.isnan(got).any() and not np.isnan(expected).any():
        message = f"{name}: {{}} {agree(what, 'contains')} NaN where the reference has none."
        raise CheckFailed(message.format(what), public=message.format(redact(what, bare=True)))
    rtol, atol = tolerance(got, atol)
    with np.errstate(all="ignore"):
        if contract is not None:  # the entries outside the contract's tolerance
            tol_a, tol_r = CONTRACT[contract]
            scale = max(1.0, float(np.abs(expected[np.isfinite(expected)]).max(initial=0.0)))
            wrong = ~(
                (np.abs(got - expected) <= tol_a * scale + tol_r * np.abs(expected))
                | (got == expected)
                | (np.isnan(got) & np.isnan(expected))
            )
        else:
            wrong = ~_isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    idx = tuple(int(i) for i in np.argwhere(wrong)[0])
    shown, wanted = two_numbers(got[idx], expected[idx])
    said = f"{said[:-1]}; " if said else f"{what} {agree(what, 'differs')} from the reference, "
    raise CheckFailed(
        f"{name}: {said}first {where(idx, labels)}: got {shown}, expected {wanted}.",
        public=f"{name}: {redact(what, bare=True)} {agree(what, 'differs')} from the reference.",
    )


#: A query whose every key is blocked, given weights that sum to 1 (a finite stand-in for −∞).
FINITE_WHEN_ALL_BLOCKED = (
    "a query whose every key is blocked gets weights that sum to 1 (it still reads the values, "
    "as if nothing were blocked or all equally): the mask is applied with a large finite number"
    " (such as −1e9, as masked_fill(mask, -1e9) puts in) instead of −∞. Add the course's −∞ "
    "mask to the scores and use the course's softmax (notebook 07, mh.softmax): a fully blocked"
    " row then has weights 0 and output 0."
)
#: A query whose every key is blocked, given NaN.
NAN_WHEN_ALL_BLOCKED = (
    "a query whose every key is blocked gets NaN: its scores are all −∞, and a softmax that "
    "subtracts the row's maximum computes −∞ − (−∞). The course's softmax (notebook 07, "
    "mh.softmax) gives that row weights 0 and output 0: use it, or handle an all −∞ row."
)


def fully_blocked(mask, scores_shape: tuple) -> np.ndarray | None:
    """The queries (rows) of scores of ``scores_shape`` whose every key ``mask`` blocks, of
    shape (..., T_q) as the mask and the scores broadcast; None without any."""
    if mask is None:
        return None
    blocked = np.isneginf(np.asarray(mask, dtype=np.float64))
    shape = np.broadcast_shapes(blocked.shape, scores_shape)
    rows = np.broadcast_to(blocked, shape).all(axis=-1)  # (..., T_q)
    return rows if rows.any() else None


def fully_blocked_rows(name: str, A, exp_A) -> None:
    """Fail naming how a fully blocked query's weights went wrong, if only they did.

    The reference gives a query whose every key is blocked weights 0 (no softmax of
    real scores is 0 everywhere), so such rows are read off ``exp_A``. NaN there only,
    or weights summing to 1 there with every other row right, name the slip.
    """
    exp_A = np.asarray(exp_A)
    if not isinstance(A, np.ndarray) or A.dtype.kind != "f":
        return  # not floats (ints, complex, objects, lists): the comparison says what it is
    if A.shape != exp_A.shape or exp_A.ndim < 2:
        return
    rows = ~(exp_A != 0).any(axis=-1)  # (..., T_q): every key blocked
    if not rows.any():
        return
    with np.errstate(all="ignore"):
        others_right = np.allclose(A[~rows], exp_A[~rows], rtol=1e-4, atol=1e-6)
        if np.isnan(A).any() and not np.isnan(A[~rows]).any():
            raise CheckFailed(f"{name}: {NAN_WHEN_ALL_BLOCKED}")
        sums = A[rows].sum(axis=-1)  # (n,)
        if others_right and np.isfinite(sums).all() and np.allclose(sums, 1.0, atol=1e-4):
            raise CheckFailed(f"{name}: {FINITE_WHEN_ALL_BLOCKED}")


def compare_head_outputs(
    name: str, got, expected, known, weights: str = "the attention weights", labels=(None, None)
) -> None:
    """Judge an attention ``(output, weights)`` pair: the weights first, then the output.

    ``expected`` is the reference's pair; ``known`` holds ``(hint, wrong output,
    wrong weights)`` triplets; ``labels`` name the rows and columns of the
    weights and of the output (see :func:`where`).
    """
    out, A = as_pair(name, got)
    exp_out, exp_A = expected
    fully_blocked_rows(name, A, exp_A)
    axes = {-2: "row (query)", -1: "column (key)"}
    if np.ndim(exp_A) >= 3 and "h," in weights:  # (..., h, T, T): the heads' weights
        axes[-3] = "head"
    compare(name, A, exp_A, weights, [(h, a) for h, _, a in known], labels=labels[0], axes=axes)
    compare(name, out, exp_out, "the output", [(h, o) for h, o, _ in known], labels=labels[1])


def per_head(mask, x_ndim: int, n_heads: int):
    """A layer's additive mask ready to add to scores of shape (..., h, T_q, T_k).

    The layer's one rule (:func:`mhsa_helpers.reference.inputs.heads_mask`): with at
    most ``x_ndim`` axes (the input's) the mask has no head axis and gets one;
    with one more, its axis -3 is the head axis. 0.0 for no mask.
    """
    if mask is None:
        return 0.0
    return heads_mask(mask, x_ndim, n_heads)  # (..., 1 or h, T_q, T_k)


#: The mistake of adding a batched mask (..., T, T) to scores (..., h, T, T) as it is.
NO_HEAD_AXIS = (
    "the mask has batch axes but no head axis: numpy lines its batch axis up with the heads "
    "(wrong when the batch size equals the number of heads, an error otherwise). A mask with "
    "at most as many axes as X is the same for every head: give it a head axis before adding "
    "it, np.expand_dims(mask, -3), shape (..., 1, T, T)."
)

#: The mistake of giving a head axis to a mask that already has one.
HEAD_AXIS_TWICE = (
    "the mask already has a head axis, and a second one is added: a mask with one axis more "
    "than X (shape (..., h, T, T) or (..., 1, T, T), such as a bias per head) carries its "
    "head axis at axis -3; add it to the scores as it is. Only a mask with at most as many "
    "axes as X gets np.expand_dims(mask, -3)."
)


def two_batch_axes_mask(T: int) -> np.ndarray:
    """A causal mask with padding for a batch of shape (2, 2), one sequence empty: (2, 2, T, T).

    Two leading batch axes, and every key of the sequence at [1, 0] is blocked (its
    length is 0), so each of its queries is a fully blocked row: weights 0, output 0.
    """
    lengths = np.array([[T, T - 1], [0, T - 2]])  # (2, 2)
    return ref.causal_mask(T) + ref.padding_mask(lengths, T)  # (2, 2, T, T)


def hidden_mask(rng: np.random.Generator, lead: tuple, T: int, h: int):
    """A hidden call's mask for X with batch axes ``lead``: causal, without or with its head
    axis ((..., T, T), (..., 1, T, T) or (..., h, T, T)), drawn by ``rng``."""
    form = int(rng.integers(3))
    if form == 2:
        return np.broadcast_to(per_head_mask(T, h), (*lead, h, T, T)).copy()  # (..., h, T, T)
    causal = np.broadcast_to(ref.causal_mask(T), (*lead, T, T)).copy()  # (..., T, T)
    return causal if form == 0 else causal[..., None, :, :]  # or (..., 1, T, T)


def per_head_mask(T: int, h: int) -> np.ndarray:
    """A mask with its head axis, shape (h, T, T): head 1 causal, the others a window."""
    windows = [ref.sliding_window_mask(T, w) for w in range(2, h + 1)]  # (T, T) each
    return np.stack([ref.causal_mask(T), *windows])  # (h, T, T)


def without_head_axis(mask, scores_shape: tuple):
    """The mask as a function that forgot its head axis adds it, or None where numpy refuses.

    ``scores_shape`` is the scores' ``(..., h, T, T)``, with one axis more
    than the input ``X``. None too for a mask without batch axes (it needs no
    head axis), for a mask that has its head axis already (one axis more than
    ``X``), and where adding the mask as it is gives the right result or
    another shape.
    """
    if mask is None or not 2 < np.ndim(mask) < len(scores_shape):
        return None
    mask = np.asarray(mask)
    if mask.shape[-3] == 1:
        return None  # the same as the right mask
    try:
        added = np.broadcast_shapes(tuple(scores_shape), mask.shape)
    except ValueError:
        return None  # numpy's error: the check explains it from the call's error
    if added != tuple(scores_shape):
        return None
    return mask  # added to (..., h, T, T) as (..., B, T, T): batch lined up with heads


def head_axis_twice(mask, scores_shape: tuple):
    """The mask as a function that always adds a head axis adds it, or None.

    The slip of a layer written only for masks without a head axis: a mask
    with its head axis already (one axis more than ``X``, that is as many as
    the scores ``(..., h, T, T)``) gets a second one, ``(..., h, 1, T, T)``.
    None where the mask has no head axis, and where numpy refuses to add it
    (the check then explains the call's error).
    """
    if mask is None or np.ndim(mask) != len(scores_shape):
        return None
    twice = np.expand_dims(np.asarray(mask), -3)  # (..., h, 1, T, T)
    try:
        np.broadcast_shapes(tuple(scores_shape), twice.shape)
    except ValueError:
        return None
    return twice


def mask_has_head_axis(call_args) -> bool:
    """Whether a layer call's mask has its head axis: one axis more than the input ``X``.

    ``X`` is the call's first array; the mask its last argument that is an
    additive mask (0 and -inf only) of more than 2 axes.
    """
    arrays = [a for a in call_args if isinstance(a, np.ndarray)]
    masks = [a for a in arrays[1:] if a.ndim > 2 and np.isin(a, (0.0, -np.inf)).all()]
    return bool(arrays) and bool(masks) and masks[-1].ndim == arrays[0].ndim + 1


def batched_mask_error(call_args, error: str) -> bool:
    """Whether ``error`` is numpy refusing to add a batched mask without a head axis."""
    masks = [
        a
        for a in call_args
        if isinstance(a, np.ndarray) and a.ndim > 2 and np.isin(a, (0.0, -np.inf)).all()
    ]
    return bool(masks) and "broadcast" in error.split(" raised ", 1)[-1]


#: The advice for a shape error on an input with batch axes, by the words of the error.
_BATCH_TIPS = (
    (
        ("mismatch in its core dimension",),
        "swap the last two axes, np.swapaxes(M, -1, -2), not M.T (which reverses every axis, "
        "the batch axes too)",
    ),
    (("axes don't match",), "M.swapaxes(-2, -3), not M.transpose(1, 0, 2)"),
    (("cannot reshape",), "reshape(*M.shape[:-1], h, d_k), not reshape(T, h, d_k)"),
    (("values to unpack",), "T, d = X.shape[-2:], not T, d = X.shape"),
    (("ellipsis",), "np.einsum('...td,de->...te', X, W), with '...' for the batch axes"),
    (("concatenation axis",), "concatenate along axis=-2 (the token axis), not axis=1"),
    (
        ("could not be broadcast", "out of bounds for array of dimension", "index out of range"),
        "index and sum along negative axes (axis=-1, X[..., i]), not axis=1 or X[:, i]",
    ),
)


def _batch_axes(call_args, core_ndim: int) -> str | None:
    """ "batch axes (shape …)" if the call's first array has batch axes, else None."""
    first = next((a for a in call_args if isinstance(a, np.ndarray)), None)
    if first is None or first.ndim <= core_ndim:
        return None
    return f"batch axes (an input of shape {first.shape})"


def batch_axes_error(call_args, error: str, core_ndim: int) -> str | None:
    """The sentence for a shape error on an input with batch axes, or None.

    ``core_ndim`` is the number of axes of the first array argument without
    batch axes (2 for X of shape (T, d_model)).
    """
    first = next((a for a in call_args if isinstance(a, np.ndarray)), None)
    said = error.split(" raised ", 1)[-1].lower()
    if first is not None and first.ndim == core_ndim and "not enough values to unpack" in said:
        return (
            f"it fails on an input without batch axes (shape {first.shape}): B, T, d = X.shape "
            "assumes one batch axis, but the contract is (..., T, d), zero, one or two leading "
            "axes: T, d = X.shape[-2:], and count axes from the end."
        )
    if first is None or first.ndim <= core_ndim:
        return None
    tips = [tip for words, tip in _BATCH_TIPS if any(w in said for w in words)]
    if not tips:
        return None
    lead = first.ndim - core_ndim
    one_axis = ("axes don't match", "cannot reshape", "values to unpack")
    if lead > 1 and any(w in said for w in one_axis):  # B, T, d = X.shape, transpose(0, 2, …)
        return (
            f"it fails on an input with {lead} batch axes (shape {first.shape}): code written "
            "for exactly one batch axis (B, T, d = X.shape, transpose(0, 2, 1, 3)) takes "
            "(B, T, d) but not (B1, B2, T, d); the contract is (..., T, d), zero, one or two "
            f"leading axes, so count axes from the end: {tips[0]}."
        )
    batch = f"{lead} batch axes" if lead > 1 else "batch axes"
    return (
        f"it fails on an input with {batch} (shape {first.shape}): the contract is "
        f"(..., T, d), zero, one or two leading axes, so count axes from the end: {tips[0]}."
    )


def as_pair(name: str, got, first: str = "output", second: str = "weights") -> tuple:
    """``got`` as a pair ``(first, second)``, or fail asking for one."""
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise CheckFailed(f"{name}: return a tuple ({first}, {second}).")
    return got


def mistake_key(hint: str) -> str:
    """The mistake a hint names, whatever numbers of its input it quotes.

    On another input the same mistake's hint may quote other sizes
    ("divided by d_k = 2" on one head, "d_k = 4" on another).
    """
    return re.sub(r"\d+(\.\d+)?", "#", hint)


class Check:
    """The check of one exercise: its inputs, and how to judge what came back.

    Subclasses set :attr:`name` (an exercise of the registry) and the two
    success sentences, and define :meth:`visible`, :meth:`hidden` and
    :meth:`judge` (and :meth:`judge_all` for properties across calls). Every
    subclass is registered by its name.
    """

    name: ClassVar[str]
    passed: ClassVar[str]
    passed_hidden: ClassVar[str]
    registry: ClassVar[dict[str, Check]] = {}
    #: The contract: warnings are errors, inputs must not change, and a second call on the
    #: same inputs gives the same answer.
    strict: ClassVar[bool] = True
    #: The number of axes of the first array argument without batch axes (X: (T, d_model)).
    core_ndim: ClassVar[int] = 2
    #: A layer that takes a mask by the layer's rule (a head axis at -3 if it has one axis
    #: more than X): a broadcast error on a mask with its head axis names a second one added.
    mask_rule: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        exercise(cls.name)  # a check belongs to an exercise of the registry
        Check.registry[cls.name] = cls()

    # -- inputs --------------------------------------------------------------
    def visible(self) -> list[Call]:
        """The calls of the visible test, on the worked examples."""
        raise NotImplementedError

    def hidden(self, rng: np.random.Generator) -> list[Call]:
        """The calls of the hidden test, drawn from ``rng``."""
        raise NotImplementedError

    def requests(self, calls: list[Call]) -> list[tuple]:
        """What the process running the learner's function needs of each call."""
        out = []
        for c in calls:
            options = {"strict": self.strict, "raises": c.raises, "memory": c.memory, "own": c.own}
            if c.calls is not None:
                options["calls"] = c.calls
            out.append((c.args, c.kwargs, options))
        return out

    def calls(self, seed: int | None = None) -> list[Call]:
        """The visible calls (``seed`` None) or the hidden calls drawn from ``seed``."""
        if seed is None:
            return self.visible()
        return self.hidden(np.random.default_rng(seed))

    # -- verdict -------------------------------------------------------------
    def catalogue(self, call: Call) -> tuple[Any, list[tuple[str, Any]]] | None:
        """The reference's result for ``call`` and the known mistakes' results.

        ``(expected, [(hint, wrong_result), ...])``, where ``wrong_result`` is
        what a function with that mistake returns for ``call`` (None where
        the mistake cannot occur on it); None for a check judged by
        properties rather than by a catalogue.
        """
        return None

    def judge(self, call: Call, got) -> None:
        """Fail (:class:`CheckFailed`) unless ``got`` is right for ``call``."""
        raise NotImplementedError

    def judge_raised(self, call: Call, outcome: Outcome) -> None:
        """A call that must raise ``call.raises`` with a message saying what is wrong.

        The exception must come from a ``raise`` (a check), not from numpy's or
        Python's error on the way. A course function's check counts where it
        checks the very thing the text asks about (``mh.split_heads`` refusing
        an ``n_heads`` that does not divide ``d_model``); where no course
        function checks it, the call says ``own`` and only a ``raise`` in the
        learner's own code counts.
        """
        why = call.context.get("why", "these inputs")
        if outcome.raised is None:
            raise CheckFailed(
                f"{self.name} should raise {call.raises} for {why}, but returned a result."
            )
        message = outcome.raised.split(":", 1)[-1].strip()
        if len(message) < 10:
            raise CheckFailed(
                f"{self.name} raises {call.raises} for {why}, but without a message: say what "
                'is wrong, e.g. raise ValueError(f"... but got ...").'
            )
        if outcome.raised_here is False:
            where = (
                "from a function it calls on the way (numpy's, Python's, or a course function "
                "such as mh.attention_head refusing the shapes it is given)"
                if call.own
                else "from numpy or Python on the way (a failed broadcast, range() with a step "
                "of 0 …)"
            )
            raise CheckFailed(
                f"{self.name} raises {call.raises} for {why}, but {where}, not from a check of "
                "its own: the next wrong input may not fail at all. Check the argument first and "
                f'say what is wrong, e.g. raise {call.raises}(f"... must ..., but got ...").',
                public=f"{self.name} raises {call.raises}, but not from a check of its own.",
            )

    def judge_warned(self, call: Call, outcome: Outcome) -> None:
        """A call that warned: the mistake behind the warning if the catalogue names it.

        Judges the value the call gives when the warning is let pass (a
        :class:`CheckFailed` naming the mistake); if that value is right, the
        warning itself is the failure, said as one.
        """
        if outcome.code != "warning" or outcome.value is None or call.raises or call.memory:
            return
        warning = outcome.error.split(" raised ", 1)[-1]
        try:
            self.judge(call, outcome.value)
        except AmbiguousMistake:
            raise
        except CheckFailed as exc:  # the mistake, and the warning it gave on the way
            warning = warning.split(" (in these checks", 1)[0]
            raise CheckFailed(
                f"{exc} (numpy warned on the way, and a warning counts as an error: {warning})",
                exc.public,
            ) from None
        raise CheckFailed(
            f"{self.name} gives the right values, but numpy warns on the way: "
            f"{warning}. Avoid the operation that warns (for "
            "example −∞ − (−∞) on a fully masked row) instead of silencing it or cleaning up "
            "the NaN afterwards.",
            public=f"{self.name} gives the right values, but numpy warns on the way.",
        )

    def explain_error(self, call: Call, outcome: Outcome) -> CheckFailed:
        """The failure for a call that went wrong (``outcome.error``), in the learner's terms.

        The child's sentence, with what most likely caused it where the error
        says: a batched mask without a head axis, axes counted from the front,
        a size computed with ``/``, another exception than the one asked for.
        """
        code, error = outcome.code or "", outcome.error or ""
        public = said_publicly(self.name, code)
        said = error.split(" raised ", 1)[-1]
        if code == "calls":
            return CheckFailed(self.too_many_calls(call, error), public=public)
        if not code.startswith("raised:"):
            return CheckFailed(error, public=public)
        if call.raises is not None and code != f"raised:{call.raises}":
            why = call.context.get("why", "these inputs")
            extra = (
                " (an assert is not an argument check: it stops with AssertionError, and "
                "python -O removes it)"
                if code == "raised:AssertionError"
                else ""
            )
            return CheckFailed(
                f"{self.name} should raise {call.raises} for {why}, but raised "
                f"{said}{extra}: check the argument first and raise {call.raises}(...) "
                "saying what is wrong.",
                public=f"{self.name} raises another exception than {call.raises} for a wrong "
                "argument.",
            )
        if code == "raised:ValueError" and batched_mask_error(call.args, error):
            said = HEAD_AXIS_TWICE if self.mask_rule and mask_has_head_axis(call.args) else None
            return CheckFailed(f"{self.name}: {said or NO_HEAD_AXIS} ({error})", public=public)
        if "truth value of an array with more than one element is ambiguous" in said:
            return CheckFailed(
                f"{self.name}: an array was tested as True or False (`if mask:`, `mask or …`, "
                "`and`): that is ambiguous for an array. To test for a missing argument, write "
                f"`if mask is not None:` ({error})",
                public=public,
            )
        if "output has more dimensions than subscripts given in einstein sum" in said:
            return CheckFailed(
                f"{self.name}: np.einsum cannot sum over '...': the batch axes that '...' "
                "stands for must appear in the output too. To sum over every batch axis (a "
                "weight's gradient), flatten them first, X.reshape(-1, d).T @ G.reshape(-1, d), "
                f"or use np.tensordot ({error})",
                public=public,
            )
        if "cannot be interpreted as an integer" in said and "float" in said:
            return CheckFailed(
                f"{self.name}: a size or a count is a float: in Python 3, d_model / n_heads is a "
                f"float even when it divides; use // for sizes ({error})",
                public=public,
            )
        if call.raises is None:
            batch = batch_axes_error(call.args, error, self.core_ndim)
            if batch:
                return CheckFailed(f"{self.name}: {batch} ({error})", public=public)
        return CheckFailed(error, public=public)

    def too_many_calls(self, call: Call, error: str) -> str:
        """The sentence for a call stopped past its bound of function calls (code "calls").

        ``error`` is the child's word (how many calls). A check that bounds
        its calls (:attr:`Call.calls`) says here what the function should
        compute instead.
        """
        return f"{error}."

    def judge_all(self, calls: list[Call], results: list) -> None:
        """Properties across all calls (by default none)."""

    def verdict(self, calls: list[Call], outcomes: list[Outcome]) -> None:
        """Judge the outcomes of ``calls`` in order: the first error or wrong value fails.

        An input on which the output matches several catalogued mistakes does
        not decide: a later input that names one of them does; if none does,
        the failure names them all.
        """
        token = _JUDGED_ARGS.set(())
        try:
            self._verdict(calls, outcomes)
        finally:
            _JUDGED_ARGS.reset(token)

    def _verdict(self, calls: list[Call], outcomes: list[Outcome]) -> None:
        """:meth:`verdict`, with the judged call's arguments set for :func:`compare`."""
        results, ambiguous = [], None
        plain_passed = batched_passed = double_passed = False
        for call, outcome in zip(calls, outcomes, strict=False):
            batched = _batch_axes(call.args, self.core_ndim)
            try:
                _JUDGED_ARGS.set(call.args)
                if outcome.error is not None:
                    self.judge_warned(call, outcome)
                    raise self.explain_error(call, outcome)
                if call.raises is not None:
                    self.judge_raised(call, outcome)
                elif call.memory:
                    self.judge(call, outcome)
                else:
                    self.judge(call, outcome.value)
            except AmbiguousMistake as exc:
                ambiguous = ambiguous or exc
            except CheckFailed as exc:
                said = mistake_key(str(exc))
                if ambiguous is None or any(mistake_key(h) in said for h in ambiguous.hints):
                    generic = any(w in str(exc) for w in ("should have shape", "differs from the"))
                    single = precision(call.args) == "float32"
                    if single and double_passed and generic and outcome.error is None:
                        raise CheckFailed(
                            f"{exc} It is right on float64 inputs and wrong on these float32 "
                            "ones: float32 keeps about 7 significant digits, so a computation "
                            "that subtracts nearly equal numbers (central differences with a "
                            "small step, for one) loses them all.",
                            public=exc.public,
                        ) from None
                    first_batched = not batched_passed
                    if batched and plain_passed and first_batched and generic and not outcome.error:
                        raise CheckFailed(
                            f"{exc} It is right without batch axes and wrong with "
                            f"{batched}: count axes from the end (axis=-1, swapaxes(-2, -3), "
                            "X[..., i], concatenate(..., axis=-1)), never from the front.",
                            public=exc.public,
                        ) from None
                    raise
                raise ambiguous from None
            plain_passed = plain_passed or (batched is None and outcome.error is None)
            batched_passed = batched_passed or (batched is not None and outcome.error is None)
            double_passed = double_passed or (
                precision(call.args) == "float64" and outcome.error is None
            )
            if ambiguous is not None and outcome.error is None and call.raises is None:
                ambiguous = self.narrow(ambiguous, call)
            results.append(outcome.value)
        if ambiguous is not None:
            raise ambiguous
        if len(results) < len(calls):
            raise CheckFailed(f"{self.name}: the check stopped before all of its calls ran.")
        self.judge_all(calls, results)

    def narrow(self, ambiguous: AmbiguousMistake, call: Call) -> AmbiguousMistake:
        """``ambiguous`` without the mistakes that ``call``, which the function passed, rules
        out: a mistake whose output on ``call`` differs from the reference would have failed
        it, so it is not the learner's."""
        entry = self.catalogue(call)
        if entry is None:
            return ambiguous
        expected, known = entry
        seen = {h for h, wrong in known if wrong is not None and not _same(wrong, expected)}
        hints = [h for h in ambiguous.hints if h not in seen]
        if not hints or len(hints) == len(ambiguous.hints):
            return ambiguous
        return AmbiguousMistake(self.name, hints)

    def run(self, fn, seed: int | None = None, hidden: bool = False) -> NotYet | None:
        """Run and judge here (the notebook's way); print a tick when ``fn`` passes.

        With ``hidden``, the outcomes are judged as a hidden test reads them
        (:func:`blind`) and a failure says only its public sentence. A
        function not written yet (its first call raises ``NotImplementedError``)
        is no failure of the learner's: the check returns :class:`NotYet`,
        which the notebook shows as ordinary output.
        """
        guard_numpy()
        calls = self.calls(seed)
        with np.errstate(all="ignore"):
            outcomes = call_in_notebook(self.name, fn, calls)
        if outcomes and outcomes[0].code == "not-implemented":
            return NotYet(outcomes[0].error)
        try:
            self.verdict(calls, [blind(o) for o in outcomes] if hidden else outcomes)
        except CheckFailed as exc:
            if hidden:
                raise CheckFailed(f"{exc.public} (hidden tests)") from None
            raise
        print(f"\u2713 {self.name}: {self.passed if seed is None else self.passed_hidden}")


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
    "differences of the forward do: compute the gradient by the chain rule.",
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


def blind(outcome):
    """An outcome as a hidden test may read it: no text of the learner's."""
    if not isinstance(outcome, Outcome):
        return outcome
    raised = outcome.raised
    if raised is not None:  # the judge reads whether there is a message, never the message
        kind, _, message = raised.partition(":")
        raised = f"{kind}: (a message)" if len(message.strip()) >= 10 else f"{kind}:"
    return dataclasses.replace(outcome, value=_blind_value(outcome.value), raised=raised)


def batch_rng() -> np.random.Generator:
    """The generator of the visible checks' batch cases (fixed: the same inputs every run)."""
    return np.random.default_rng(2024)


def random_shape(rng: np.random.Generator, max_lead: int = 2) -> tuple:
    """Zero to ``max_lead`` leading batch axes of sizes 1 to 3."""
    return tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(0, max_lead + 1)))
