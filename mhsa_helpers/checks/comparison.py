"""Comparing a learner's result with the reference: tolerances, and a wrong result described.

:func:`compare` passes a result within the tolerance of its precision
(:func:`close`; the extensions' :data:`CONTRACT`) and otherwise fails naming
the catalogued mistake it matches, or the structure that explains it
(:func:`~.diagnose.diagnose`), or its first wrong entry. numpy's comparison
functions are taken as they were when the checks were imported
(:func:`guard_numpy`): a verdict never rests on a replaced function.
"""

from __future__ import annotations

import contextvars

import numpy as np

from ..execution.outcomes import Opaque
from .diagnose import diagnosis
from .failures import AmbiguousMistake, CheckFailed, redact
from .masks import fully_blocked_rows
from .wording import agree, two_numbers

__all__ = [
    "CONTRACT",
    "JUDGED_ARGS",
    "as_pair",
    "as_result",
    "close",
    "compare",
    "compare_head_outputs",
    "guard_numpy",
    "head_weights",
    "precision",
    "same",
    "tolerance",
    "where",
]


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


def same(a, b) -> bool:
    """Whether two results agree, however nested (tuples of arrays); NaN equals NaN."""
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return close(a, b)


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
            named=("result", "not_one_ndarray"),
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
                named=("result", "complex"),
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
            named=("result", "not_numeric"),
        )
    return arr


#: The arguments of the call being judged (set by :meth:`Check.verdict`): the precision a
#: result must keep is the precision of its float inputs.
JUDGED_ARGS: contextvars.ContextVar[tuple] = contextvars.ContextVar("judged_args", default=())


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

    Raises
    ------
    TypeError
        ``axes`` that is not a dict from axis (a negative index) to its name: a check's
        own slip, e.g. ``axes=("query", "key")`` for ``{-2: "row (query)", -1: "column (key)"}``.
    """
    if axes is not None and not (
        isinstance(axes, dict) and all(isinstance(k, int) and k < 0 for k in axes)
    ):
        raise TypeError(
            f"compare(axes=...) names the axes of {what} by negative index, e.g. "
            f'{{-2: "row (query)", -1: "column (key)"}}, but got {axes!r}.'
        )
    got = as_result(name, got, what)
    expected = np.asarray(expected)
    if contract is None and precision(JUDGED_ARGS.get()) == "float32":
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
    double = _float_inputs(JUDGED_ARGS.get()) == {np.dtype(np.float64)}
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
        raise CheckFailed(f"{name}: {matching[0]}", named=("hint", name, matching[0]))
    if matching:  # these inputs cannot tell the mistakes apart; later inputs may
        raise AmbiguousMistake(name, matching)
    if axes is None:
        axes = {-2: "row", -1: "column"} if expected.ndim >= 2 else {-1: "entry"}
    test, said = diagnosis(got, expected, what, axes, quantities)
    named = ("diagnose", test) if said else ("unnamed",)
    if got.shape != expected.shape:
        raise CheckFailed(
            f"{name}: {said}"
            if said
            else f"{name}: {what} should have shape {expected.shape}, but {agree(what, 'has')} "
            f"shape {got.shape}.",
            public=f"{name}: the shape of {redact(what, True)} is wrong (check the axes).",
            named=named,
        )
    if said and ":" in said:  # the structure, and what it comes from
        raise CheckFailed(
            f"{name}: {said}",
            public=f"{name}: {redact(what, bare=True)} {agree(what, 'differs')} from the "
            "reference.",
            named=named,
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
        named=named,
    )


def head_weights(heads: str = "h", q: str = "T", k: str = "T") -> str:
    """A layer's attention weights as a sentence names them: "the attention weights (..., h, T, T)".

    Parameters
    ----------
    heads, q, k : str
        The names of the head, query and key axes' sizes.

    Returns
    -------
    str
    """
    return f"the attention weights (..., {heads}, {q}, {k})"


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


def as_pair(name: str, got, first: str = "output", second: str = "weights") -> tuple:
    """``got`` as a pair ``(first, second)``, or fail asking for one."""
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise CheckFailed(f"{name}: return a tuple ({first}, {second}).")
    return got
