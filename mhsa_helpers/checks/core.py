"""A check: its calls, running them on the learner's function here, and its verdict.

A check is two halves that never need to share a process:

* :func:`call_in_notebook` calls the learner's function on a check's inputs and
  returns one :class:`Outcome` per call: the value, or what went wrong
  (not implemented, raised, called the reference). It gives no verdict.
* :meth:`Check.verdict` judges those outcomes against the reference and raises
  :class:`~.failures.CheckFailed` whose message names the most likely mistake,
  from a catalogue of ``(hint, wrong_output)`` pairs computed from the reference.

In a notebook both halves run in the kernel (:func:`Check.run`); the
progress report and the grader run the first half in a child process
(:mod:`mhsa_helpers.execution.in_child`, which knows nothing of the checks) and judge in
the parent. What the verdict rests on lives beside this module: comparing a
result (:mod:`.comparison`), the failures and their public sentences
(:mod:`.failures`), masks (:mod:`.masks`), batch axes (:mod:`.batches`).
"""

from __future__ import annotations

import contextvars
import functools
import sys
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .. import reference as ref
from ..budget import CHECK_LOOP, kernel_call_s, ran_long, reference_seconds_here, said_input
from ..execution.child.contract import call_each, interrupts_said
from ..execution.outcomes import Opaque, Outcome, outcomes_of
from ..exercises import exercise, forbidden
from .batches import batch_axes, batch_axes_error, one_batch_axis, reversed_by_dot_t
from .comparison import JUDGED_ARGS, guard_numpy, precision, same
from .failures import (
    A_MESSAGE,
    AmbiguousMistake,
    CheckFailed,
    NotYet,
    blind,
    mistake_key,
    said_publicly,
)
from .hints import EINSUM_SCORES, INT_CANNOT_HOLD_INFINITY, warned_on_the_way
from .masks import (
    HEAD_AXIS_TWICE,
    NO_HEAD_AXIS,
    WARNED,
    batched_mask_error,
    head_axis_reshaped,
    mask_has_head_axis,
    mask_lacks_head_axis,
    no_head_axis_in,
)
from .relayed import broadcast_shapes

__all__ = ["Call", "Check", "Opaque", "Outcome", "call_in_notebook"]


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
    #: What the check computed of this call once (its catalogue), kept with it: a check's
    #: calls are drawn once per process (:meth:`Check.calls`), so a second run judges at once.
    #: Never passed on: a call made from this one (``dataclasses.replace``) starts empty.
    memo: dict = field(default_factory=dict, init=False, compare=False, repr=False)


def frozen(value):
    """``value`` with every array in it (in tuples, lists and dicts too) made read-only.

    A check's calls and catalogues are kept and read again: an array that something writes
    into by mistake would change every later verdict, so writing into one raises at once.
    """
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, tuple | list):
        for item in value:
            frozen(item)
    elif isinstance(value, dict):
        for item in value.values():
            frozen(item)
    return value


def _memoized(catalogue):
    """A check's ``catalogue`` computed once per call (kept in :attr:`Call.memo`)."""

    @functools.wraps(catalogue)
    def once(self, call):
        key = ("catalogue", catalogue.__qualname__)
        if key not in call.memo:
            call.memo[key] = frozen(catalogue(self, call))
        return call.memo[key]

    return once


#: How many draws of calls (visible, or hidden from one seed) each check keeps.
KEPT_DRAWS = 8


def elementwise_for_matmul(call_args, said: str) -> str | None:
    """The sentence for ``*`` used for a matrix product, from numpy's broadcast error ``said``.

    Only where the two shapes numpy names are two of the call's arrays' and the second
    could multiply the first as a matrix, (..., n, m) @ (m, p); else None.
    """
    found = broadcast_shapes(said)
    if len(found) < 2:
        return None
    a, b = found[:2]
    shapes = {np.shape(x) for x in call_args if isinstance(x, np.ndarray)}
    if a not in shapes or b not in shapes or len(a) < 2 or len(b) != 2 or a[-1] != b[0]:
        return None
    return (
        f"`*` multiplies entry by entry, so its two arrays of shapes {a} and {b} would have to "
        "match; a product of matrices (row times column) is A @ B (np.matmul)."
    )


#: Set while the calls before the measured ones are judged (:meth:`Check.outcomes_here`): the
#: verdict then stops after its last call, deciding nothing it could still learn later.
_OPEN_ENDED: contextvars.ContextVar[bool] = contextvars.ContextVar("open_ended", default=False)


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


def call_in_notebook(name: str, fn, calls: list[Call], hidden: bool = False) -> list[Outcome]:
    """Call ``fn`` (the learner's ``name``) on every call's inputs, here; stop at the first error.

    The same calls as in the child process (:func:`mhsa_helpers.execution.child.contract.call_one`);
    here, where ``mh`` is the whole course package, calls to reference
    functions the exercise may not use are caught and reported as errors.
    Each call may run as long as the grader would let it
    (:func:`~mhsa_helpers.budget.kernel_call_s`, from the reference's own
    time on the same inputs); past it, it is stopped (code "slow") with one
    sentence (:func:`~mhsa_helpers.budget.ran_long`), and the learner's
    interrupt is one line (:class:`~mhsa_helpers.execution.child.contract.Interrupted`).
    With ``hidden`` that line says nothing of the inputs or times.
    """
    codes = {getattr(ref, n).__code__: n for n in forbidden(name)}
    requests = Check.registry[name].requests(calls)
    timed = [_reference_seconds(name, c) for c in calls]
    seconds = [kernel_call_s(t, c.memory) for t, c in zip(timed, calls, strict=True)]

    def said(index: int, ran_s: float, interrupted: bool) -> str:
        if hidden:  # the verdict says "slow" publicly; an interrupt says as little
            return f"{name} was interrupted on a hidden input: an endless loop? {CHECK_LOOP}"
        call = calls[index]
        on = said_input(name, call.args, call.kwargs)
        return ran_long(name, ran_s, CHECK_LOOP, on, timed[index], interrupted)

    raw = call_each(name, fn, requests, lambda: _ReferenceWatch(codes), seconds, said)
    return outcomes_of(raw)


def _reference_seconds(name: str, call: Call) -> float:
    """:func:`~mhsa_helpers.budget.reference_seconds_here` of ``call``, kept with it."""
    if "reference seconds" not in call.memo:
        call.memo["reference seconds"] = reference_seconds_here(name, call.args, call.kwargs)
    return call.memo["reference seconds"]


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
        if "catalogue" in cls.__dict__:
            cls.catalogue = _memoized(cls.__dict__["catalogue"])
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
        """The visible calls (``seed`` None) or the hidden calls drawn from ``seed``.

        Drawn once per process and seed (the last :data:`KEPT_DRAWS` seeds), their arrays
        read-only: the learner's function is always given copies
        (:func:`~mhsa_helpers.execution.child.contract.copy_inputs`).
        """
        drawn = self.__dict__.setdefault("_drawn", {})
        if seed not in drawn:
            fresh = self.visible() if seed is None else self.hidden(np.random.default_rng(seed))
            for call in fresh:
                frozen(call.args)
                frozen(call.kwargs)
            if len(drawn) >= KEPT_DRAWS:
                drawn.pop(next(iter(drawn)))
            drawn[seed] = fresh
        return list(drawn[seed])

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
        learner's own code counts. With ``context={"names": "tau"}`` the message must
        name that parameter (the text asks for a message naming what is wrong): on the
        visible calls only, since a hidden test never reads the learner's words (:func:`blind`).
        """
        why = call.context.get("why", "these inputs")
        if outcome.raised is None:
            raise CheckFailed(
                f"{self.name} should raise {call.raises} for {why}, but returned a result."
            )
        message = outcome.raised.split(":", 1)[-1].strip()
        if len(message) < 10:
            said = (
                f"with only {message!r} as its message"
                if message
                else "without a message saying what is wrong"
            )
            raise CheckFailed(
                f"{self.name} raises {call.raises} for {why}, but {said}: say what "
                'is wrong, e.g. raise ValueError(f"... but got ...").'
            )
        names = call.context.get("names")
        if names is not None and message != A_MESSAGE and names not in message:
            raise CheckFailed(
                f"{self.name} raises {call.raises} for {why}, but its message ({message!r}) "
                f"does not name {names}: say which argument is wrong and what came, e.g. "
                f'raise {call.raises}(f"{names} must ..., but got {names}={{{names}!r}}").',
                public=f"{self.name} raises {call.raises}, but its message does not name {names}.",
                named=("relayed", "refusal_names_no_argument"),
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
        token = WARNED.set(warning)  # what made a NaN, for the sentence that names it
        try:
            self.judge(call, outcome.value)
        except AmbiguousMistake:
            raise
        except CheckFailed as exc:  # the mistake, and the warning it gave on the way
            warning = warning.split(" (in these checks", 1)[0]
            raise CheckFailed(
                f"{exc} {warned_on_the_way(warning)}",
                exc.public,
                named=exc.named,
            ) from None
        finally:
            WARNED.reset(token)
        raise CheckFailed(
            f"{self.name} gives the right values, but numpy warns on the way: "
            f"{warning}. Avoid the operation that warns (for "
            "example −∞ − (−∞) on a fully masked row) instead of silencing it or cleaning up "
            "the NaN afterwards.",
            public=f"{self.name} gives the right values, but numpy warns on the way.",
            named=("contract", "warning"),
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
            return CheckFailed(
                self.too_many_calls(call, error), public=public, named=("contract", code)
            )
        if call.raises is not None and code == "warning":  # it computed on: no check first
            why = call.context.get("why", "these inputs")
            return CheckFailed(
                f"{self.name} should raise {call.raises} for {why}, but computed on and numpy "
                f"warned: {said.split(' (in these checks', 1)[0]}. Check the argument first and "
                f"raise {call.raises}(...) saying what is wrong.",
                public=f"{self.name} should raise {call.raises} for a wrong argument, but "
                "computed on.",
                named=("relayed", "no_refusal"),
            )
        if not code.startswith("raised:"):
            return CheckFailed(error, public=public, named=("contract", code) if code else None)
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
                named=("relayed", "another_exception"),
            )
        slip = self.relayed(call, said) if call.raises is None else None
        if slip:  # the check's own reading of the error: the slip, the raw error after it
            return CheckFailed(
                f"{self.name}: {slip} ({error})", public=public, named=("hint", self.name, slip)
            )
        dot_t = reversed_by_dot_t(call.args, said) if code == "raised:ValueError" else None
        if dot_t is not None and call.raises is None:
            return CheckFailed(
                f"{self.name}: {dot_t[0]} ({error})",
                public=f"{self.name}: {dot_t[1]}",
                named=("relayed", "dot_t_reverses_batch_axes"),
            )
        lacking = self.mask_rule or mask_lacks_head_axis(call.args)
        if code == "raised:ValueError" and lacking and batched_mask_error(call.args, error):
            said = NO_HEAD_AXIS
            if self.mask_rule:  # X is the first array: a mask with fewer axes is said so
                twice = mask_has_head_axis(call.args)
                said = HEAD_AXIS_TWICE if twice else no_head_axis_in(call.args)
            return CheckFailed(
                f"{self.name}: {said} ({error})", public=public, named=("hint", self.name, said)
            )
        reshaped = head_axis_reshaped(call.args, said) if code == "raised:ValueError" else None
        if reshaped is not None and self.mask_rule:  # the mask's heads times the layer's
            return CheckFailed(
                f"{self.name}: {HEAD_AXIS_TWICE}{one_batch_axis(call.args[0], reshaped)} ({error})",
                public=public,
                named=("hint", self.name, HEAD_AXIS_TWICE),
            )
        if "truth value of an array with more than one element is ambiguous" in said:
            return CheckFailed(
                f"{self.name}: an array was tested as True or False (`if mask:`, `mask or …`, "
                "`and`): that is ambiguous for an array. To test for a missing argument, write "
                f"`if mask is not None:` ({error})",
                public=public,
                named=("relayed", "array_as_truth_value"),
            )
        if "output has more dimensions than subscripts given in einstein sum" in said:
            return CheckFailed(
                f"{self.name}: np.einsum cannot sum over '...': the batch axes that '...' "
                "stands for must appear in the output too. To sum over every batch axis (a "
                "weight's gradient), flatten them first, X.reshape(-1, d).T @ G.reshape(-1, d), "
                f"or use np.tensordot ({error})",
                public=public,
                named=("relayed", "einsum_sums_over_ellipsis"),
            )
        if "cannot be interpreted as an integer" in said and "float" in said:
            return CheckFailed(
                f"{self.name}: a size or a count is a float: in Python 3, d_model / n_heads is a "
                f"float even when it divides; use // for sizes ({error})",
                public=public,
                named=("relayed", "size_as_float"),
            )
        if code == "raised:OverflowError" and "cannot convert float infinity to integer" in said:
            return CheckFailed(
                f"{self.name}: {INT_CANNOT_HOLD_INFINITY} ({error})",
                public=public,
                named=("hint", self.name, INT_CANNOT_HOLD_INFINITY),
            )
        if call.raises is None:
            batch = batch_axes_error(call.args, error, self.core_ndim)
            if batch:
                return CheckFailed(
                    f"{self.name}: {batch} ({error})",
                    public=public,
                    named=("relayed", "batch_axes"),
                )
        if "more dimensions than subscripts" in said:
            return CheckFailed(
                f"{self.name}: an np.einsum names fewer axes than its array has: an array of "
                "heads (..., h, T, d_k) or with batch axes has more axes than one sequence's "
                f"(T, d). Write '...' for the leading axes, e.g. {EINSUM_SCORES}, or use @ "
                f"with np.swapaxes(K, -1, -2) ({error})",
                public=public,
                named=("relayed", "einsum_without_ellipsis"),
            )
        product = elementwise_for_matmul(call.args, said)
        if product:
            return CheckFailed(
                f"{self.name}: {product} ({error})",
                public=public,
                named=("relayed", "elementwise_for_matmul"),
            )
        return CheckFailed(error, public=public, named=("unnamed",))

    def relayed(self, call: Call, said: str) -> str | None:
        """The learner's slip behind an error ``call`` raised, read off its shapes; or None.

        ``said`` is the exception as the child gives it ("ValueError: Q and K must
        have ..."): often a course function's (``mh.attention_head``) or numpy's
        refusal of shapes that a slip made. A check that knows which slip the
        call's shapes point to returns its sentence; :meth:`explain_error` then
        says it, with the raw error after it in parentheses. By default None.
        """
        return None

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
        token = JUDGED_ARGS.set(())
        try:
            self._verdict(calls, outcomes)
        finally:
            JUDGED_ARGS.reset(token)

    def _verdict(self, calls: list[Call], outcomes: list[Outcome]) -> None:
        """:meth:`verdict`, with the judged call's arguments set for :func:`compare`."""
        results, ambiguous = [], None
        plain_passed = batched_passed = double_passed = False
        for call, outcome in zip(calls, outcomes, strict=False):
            batched = batch_axes(call.args, self.core_ndim)
            undecided = False  # this call failed with mistakes it cannot tell apart
            try:
                JUDGED_ARGS.set(call.args)
                if outcome.error is not None:
                    self.judge_warned(call, outcome)
                    raise self.explain_error(call, outcome)
                if call.raises is not None:
                    self.judge_raised(call, outcome)
                elif call.memory:
                    self.judge(call, outcome)
                else:
                    self.judge(call, outcome.value)
            except AmbiguousMistake as exc:  # the mistakes that this call, too, cannot tell apart
                ambiguous = self.both(ambiguous, exc)
                undecided = True
            except CheckFailed as exc:
                said = mistake_key(str(exc))
                if ambiguous is None or any(mistake_key(h) in said for h in ambiguous.hints):
                    generic = any(
                        w in str(exc)
                        for w in ("should have shape", "differs from the", "differ from the")
                    )
                    single = precision(call.args) == "float32"
                    if single and double_passed and generic and outcome.error is None:
                        raise CheckFailed(
                            f"{exc} It is right on float64 inputs and wrong on these float32 "
                            "ones: float32 keeps about 7 significant digits, so a computation "
                            "that subtracts nearly equal numbers (central differences with a "
                            "small step, for one) loses them all.",
                            public=exc.public,
                            named=("relayed", "float32_digits_lost"),
                        ) from None
                    first_batched = not batched_passed
                    if batched and plain_passed and first_batched and generic and not outcome.error:
                        raise CheckFailed(
                            f"{exc} It is right without batch axes and wrong with "
                            f"{batched}: count axes from the end (axis=-1, swapaxes(-2, -3), "
                            "X[..., i], concatenate(..., axis=-1)), never from the front.",
                            public=exc.public,
                            named=("relayed", "axes_counted_from_the_front"),
                        ) from None
                    raise
                raise ambiguous from None
            plain_passed = plain_passed or (batched is None and outcome.error is None)
            batched_passed = batched_passed or (batched is not None and outcome.error is None)
            double_passed = double_passed or (
                precision(call.args) == "float64" and outcome.error is None
            )
            passed = outcome.error is None and call.raises is None and not undecided
            if ambiguous is not None and passed:  # a call it failed rules out nothing
                ambiguous = self.narrow(ambiguous, call)
            results.append(outcome.value)
        if _OPEN_ENDED.get():
            return
        if ambiguous is not None:
            raise ambiguous
        if len(results) < len(calls):
            raise CheckFailed(f"{self.name}: the check stopped before all of its calls ran.")
        self.judge_all(calls, results)

    def both(self, ambiguous: AmbiguousMistake | None, new: AmbiguousMistake) -> AmbiguousMistake:
        """The mistakes that two ambiguous calls both name (by :func:`mistake_key`, whatever
        numbers each hint quotes), in the first's words; the first's if they share none."""
        if ambiguous is None:
            return new
        keys = {mistake_key(h) for h in new.hints}
        hints = [h for h in ambiguous.hints if mistake_key(h) in keys]
        if not hints or len(hints) == len(ambiguous.hints):
            return ambiguous
        return AmbiguousMistake(self.name, hints)

    def narrow(self, ambiguous: AmbiguousMistake, call: Call) -> AmbiguousMistake:
        """``ambiguous`` without the mistakes that ``call``, which the function passed, rules
        out: a mistake whose output on ``call`` differs from the reference would have failed
        it, so it is not the learner's."""
        entry = self.catalogue(call)
        if entry is None:
            return ambiguous
        expected, known = entry
        seen = {h for h, wrong in known if wrong is not None and not same(wrong, expected)}
        hints = [h for h in ambiguous.hints if h not in seen]
        if not hints or len(hints) == len(ambiguous.hints):
            return ambiguous
        return AmbiguousMistake(self.name, hints)

    def outcomes_here(self, fn, calls: list[Call], hidden: bool = False) -> list[Outcome]:
        """:func:`call_in_notebook` on ``calls``, the measured ones only if still needed.

        The calls that measure memory (at T = 4096) are the costly ones: they
        run only when the calls before them leave the verdict open, so that a
        function already wrong on a small input is told so at once. The
        verdict judges the calls in order and stops at the first failure, so
        it says the same with or without the outcomes it then never reads.
        """
        first = next((i for i, call in enumerate(calls) if call.memory), len(calls))
        with np.errstate(all="ignore"):
            outcomes = call_in_notebook(self.name, fn, calls[:first], hidden)
        if first == len(calls) or len(outcomes) < first:  # an error stops the calls anyway
            return outcomes
        token = _OPEN_ENDED.set(True)
        try:
            self.verdict(calls[:first], [blind(o) for o in outcomes] if hidden else outcomes)
        except CheckFailed:
            return outcomes  # decided: the verdict fails before the measured calls
        finally:
            _OPEN_ENDED.reset(token)
        with np.errstate(all="ignore"):
            return outcomes + call_in_notebook(self.name, fn, calls[first:], hidden)

    def interrupted(self) -> str:
        """What the learner is told of an interrupt during the check, between its calls."""
        return f"The check of {self.name} was interrupted: run the cell again."

    def run(self, fn, seed: int | None = None, hidden: bool = False) -> NotYet | None:
        """Run and judge here (the notebook's way); print a tick when ``fn`` passes.

        With ``hidden``, the outcomes are judged as a hidden test reads them
        (:func:`blind`) and a failure says only its public sentence. A
        function not written yet (its first call raises ``NotImplementedError``)
        is no failure of the learner's: the check returns :class:`NotYet`,
        which the notebook shows as ordinary output.
        """
        with interrupts_said(self.interrupted()):  # a call's own interrupt says which call
            return self._run(fn, seed, hidden)

    def _run(self, fn, seed: int | None, hidden: bool) -> NotYet | None:
        """:meth:`run`, whose interrupt is said in one line."""
        guard_numpy()
        calls = self.calls(seed)
        outcomes = self.outcomes_here(fn, calls, hidden)
        if outcomes and outcomes[0].code == "not-implemented":
            return NotYet(outcomes[0].error)
        try:
            self.verdict(calls, [blind(o) for o in outcomes] if hidden else outcomes)
        except CheckFailed as exc:
            if hidden:
                raise CheckFailed(f"{exc.public} (hidden tests)") from None
            raise
        print(f"\u2713 {self.name}: {self.passed if seed is None else self.passed_hidden}")
        return None
