"""The call contract: what one call of a learner's function returns.

:func:`call_one` calls a learner's function once on given inputs and
returns its raw outcome: the value reduced to plain data (:func:`plain`), or
what went wrong in a fixed vocabulary of codes; :func:`call_each` makes a
check's calls in turn. Inputs are copied, warnings, modified inputs, unstable
answers, memory and the number of Python calls are watched as the call's
options ask. The same contract holds wherever a learner's function is called:
in a notebook's process of the child (:mod:`.notebook`) and in the notebook
itself (:func:`mhsa_helpers.checks.core.call_in_notebook`).

Time is bounded differently in the two places: the child's process has its
budget from the grader, by the clock of the process that watches it; in the
notebook's kernel :func:`call_each` puts each call under a :class:`TimeLimit`
(a timer in the kernel's main thread) and turns the learner's interrupt into
one line (:class:`Interrupted`).

Imports nothing of the course: it runs inside the child's sandbox too.
"""

from __future__ import annotations

import sys
import time
import warnings

#: Characters of a learner's exception message kept in a result.
MESSAGE_LIMIT = 300
#: Numbers in one returned array sent back at most (every check's answer is far smaller).
ARRAY_LIMIT = 1 << 22


def clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters (a learner's message can be any size)."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + " … (cut)"


def plain(value):
    """``value`` reduced to arrays, numbers, strings, tuples and lists (safe to send back)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            return {"opaque": "ndarray of Python objects"}
        if value.size > ARRAY_LIMIT:
            return {"opaque": f"array of {value.size} numbers (far too large)"}
        return np.array(value, copy=True, subok=False)
    if isinstance(value, bool | int | float | complex | str | np.generic) or value is None:
        return value
    if type(value) in (tuple, list):
        return type(value)(plain(v) for v in value)
    return {"opaque": clip(type(value).__name__, 80)}


def copy_inputs(x):
    """``x`` with every array and random generator in it (also inside tuples and lists) copied."""
    import copy

    import numpy as np

    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, np.random.Generator):
        return copy.deepcopy(x)  # in the state it was given: a second call draws the same
    if type(x) in (tuple, list):
        return type(x)(copy_inputs(v) for v in x)
    if type(x) is dict:
        return {k: copy_inputs(v) for k, v in x.items()}
    return x


def _same(first, second) -> bool:
    """Whether two plain results (:func:`plain`) agree, to the last bits for floats."""
    import numpy as np

    if isinstance(first, np.ndarray) or isinstance(second, np.ndarray):
        a, b = np.asarray(first), np.asarray(second)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            with np.errstate(all="ignore"):
                return bool(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))
        return bool(np.array_equal(a, b))
    if type(first) in (tuple, list):
        return (
            type(first) is type(second)
            and len(first) == len(second)
            and all(_same(a, b) for a, b in zip(first, second, strict=True))
        )
    if isinstance(first, float) and isinstance(second, float) and first != first:
        return second != second  # NaN both times
    try:
        return bool(first == second)
    except Exception:  # an odd value that cannot be compared: the judge sees it anyway
        return True


def _changed(kept, given) -> bool:
    """Whether ``given`` (what the function received) differs from the copy ``kept``."""
    import numpy as np

    if isinstance(kept, np.ndarray):
        return not (
            isinstance(given, np.ndarray)
            and given.shape == kept.shape
            and np.array_equal(given, kept, equal_nan=kept.dtype.kind in "fc")
        )
    if type(kept) in (tuple, list):
        return len(kept) != len(given) or any(
            _changed(k, g) for k, g in zip(kept, given, strict=False)
        )
    if type(kept) is dict:
        return any(_changed(kept[k], given.get(k)) for k in kept)
    return False


#: tracemalloc's functions as they were before any answer ran (an answer cannot swap them).
_TRACE = {}


def tracing() -> dict:
    """tracemalloc's start, peak, stop and is-tracing, looked up once (before any answer runs).

    Kept so that an answer that patches ``tracemalloc`` cannot change what a
    memory-measured call reports.
    """
    if not _TRACE:
        import tracemalloc

        _TRACE.update(
            start=tracemalloc.start,
            peak=tracemalloc.get_traced_memory,
            stop=tracemalloc.stop,
            on=tracemalloc.is_tracing,
        )
    return _TRACE


def _invoke(fn, args, kwargs, guard, memory: bool):
    """``(value, peak or None)`` of one call, around ``guard``.

    The peak, when ``memory``, is ``(traced bytes, None)``: what answer
    code can tell about its own memory it can also forge, so the resident
    growth that bounds it is measured from outside, by the child
    (:func:`.main._measured`).
    """
    trace = tracing() if memory else None
    if trace:
        trace["start"]()
    try:
        if guard is None:
            value = fn(*args, **kwargs)
        else:
            with guard:
                value = fn(*args, **kwargs)
        peak = None
        if trace:
            if not trace["on"]():
                raise RuntimeError("memory tracing was stopped during the call")
            peak = trace["peak"]()[1]  # the resident growth: the child's to measure
        return value, peak
    finally:
        if trace:
            trace["stop"]()


#: The flags of a generator's code (a resumed generator is a step of a loop, not a call).
_GENERATOR = 0x20 | 0x200  # CO_GENERATOR, CO_ASYNC_GENERATOR


class CallBound(Exception):
    """Raised into a counted call once it has made more Python function calls than its bound."""


class _Counted:
    """Around one call: counts the Python function calls it makes; past ``bound`` it stops it.

    Every function call counts (the answer's own functions, the course's
    ``mh`` functions, numpy's functions written in Python, comprehensions),
    whoever makes it, but a step of an iteration (a generator resumed, the
    next index of ``np.ndindex``): a backward pass makes a fixed number of
    them whatever the input's size (a loop over every entry, none per
    entry), central differences at least two per entry of the input.
    Past the bound the call is stopped (:class:`CallBound` is raised in
    it) and :attr:`error` says so, even if the answer catches the
    exception. Threads the call starts count too (``threading.setprofile``).
    ``inner`` (a guard such as the in-kernel reference watch) is entered
    first and still sees every event.
    """

    def __init__(self, inner, bound: int):
        self.inner, self.bound, self.count = inner, bound, 0
        self.over, self.changed, self.previous, self.hook = False, False, None, None
        self.threads = None
        import numpy as np

        self.steps = {np.ndindex.__next__.__code__}  # iteration, not a call of a function

    @property
    def error(self) -> str | None:
        """What the guarded call did wrong: the inner guard's word first, then the count's."""
        inner = getattr(self.inner, "error", None)
        if inner:
            return inner
        if self.over:
            return (
                f"made more than {self.bound} Python function calls (its own, the course's and "
                "numpy's) in one call, and the check stopped it"
            )
        if self.changed:
            return "changed the interpreter's profiler during the check."
        return None

    def _profile(self, frame, event, arg):
        code = frame.f_code
        if event == "call" and not code.co_flags & _GENERATOR and code not in self.steps:
            self.count += 1
            if self.count > self.bound and not self.over:
                self.over = True
                raise CallBound("too many function calls for a backward pass")
        if self.previous is not None:
            self.previous(frame, event, arg)

    def __enter__(self):
        if self.inner is not None:
            self.inner.__enter__()
        import threading

        self.previous, self.hook = sys.getprofile(), self._profile  # one bound method, kept
        self.threads = threading.getprofile()
        threading.setprofile(self.hook)  # the threads the call starts are counted too
        sys.setprofile(self.hook)

    def __exit__(self, *exc):
        import threading

        if sys.getprofile() is not self.hook and not self.over:
            self.changed = True
        sys.setprofile(self.previous)
        threading.setprofile(self.threads)
        if self.inner is not None:
            self.inner.__exit__(*exc)


def _out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` says the address space ran out (ENOMEM, from ``mmap`` for one)."""
    import errno

    return isinstance(exc, OSError) and exc.errno == errno.ENOMEM


def _over_bound(name: str) -> str:
    """What a memory-measured call that ran out of its address space is told."""
    return (
        f"{name} went far over the memory bound (a (T_q, T_k) matrix?); keep only one block "
        "of scores, (T_q, block_size), at a time."
    )


def raised_name(exc: BaseException) -> str:
    """The class name of ``exc`` if it is a built-in exception, else its nearest built-in base."""
    import builtins

    for cls in type(exc).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return cls.__name__
    return "Exception"


def call_one(name: str, fn, call, guard=None) -> tuple:
    """Call ``fn`` (the learner's ``name``) once on ``call = (args, kwargs[, options])``.

    Returns the raw outcome: ``("value", plain value)``, ``("measured",
    (plain value, peak bytes))``, ``("raised", "Name: message")`` (an
    exception the call was asked to raise) or ``("error", sentence, code)``
    where ``code`` names what went wrong in a fixed vocabulary
    (``not-implemented``, ``memory``, ``modified``, ``reference``,
    ``warning``, ``calls``, ``raised:<built-in exception name>``), so that a judge can
    say it without quoting the learner.

    Inputs are copied (arrays inside tuples too). By default numpy warnings
    are silenced; ``options`` may ask for the contract: ``strict`` (warnings
    are errors, a modified input is an error, and the function is called a
    second time on the same inputs, which must give the same answer: code
    ``unstable`` otherwise), ``raises`` (the name of
    the exception the call must raise) and ``memory`` (report the call's peak
    of traced allocations) and ``calls`` (the Python function calls the call
    may make: past it, it is stopped and the outcome's code is ``calls``,
    see :class:`_Counted`). ``guard``, if given, is a context manager
    wrapped around the call whose ``error`` attribute, if set after the
    call, is reported instead of the value (the in-kernel check uses it to
    catch calls to the reference).
    """
    import numpy as np

    args, kwargs = call[0], call[1]
    options = call[2] if len(call) > 2 else {}
    strict = options.get("strict", False)
    bound = options.get("calls")
    counted = _Counted(guard, int(bound)) if bound else None
    args, kwargs = copy_inputs(list(args)), copy_inputs(dict(kwargs))
    kept = copy_inputs((args, kwargs)) if strict else None
    # strict: overflow, invalid value and divide by zero warn (and fail); underflow
    # never does, as exp of a very negative score is 0 in correct code too
    errstate = {"all": "warn", "under": "ignore"} if strict else {"all": "ignore"}
    with warnings.catch_warnings(), np.errstate(**errstate):
        warnings.simplefilter("error" if strict else "ignore")
        try:
            value, peak = _invoke(fn, args, kwargs, counted or guard, options.get("memory"))
        except CallBound:
            return _stopped(name, guard, counted)
        except NotImplementedError:
            message = (
                f"{name} is not implemented yet: replace `raise NotImplementedError()` "
                "with your code."
            )
            return ("error", message, "not-implemented")
        except MemoryError:
            if not options.get("memory"):
                raise
            return ("error", _over_bound(name), "memory")
        except Exception as exc:  # the learner's error, reported with its message
            if counted is not None and counted.over:  # the bound's exception, caught and replaced
                return _stopped(name, guard, counted)
            failed = _failed(name, exc, args, kwargs, options)
            if failed[-1] == "warning":  # and what it gives when the warning is let pass
                failed += _quietly(fn, kept, guard)
            return failed
        if guard is not None and guard.error:
            return ("error", f"{name} {guard.error}", "reference")
        if counted is not None and counted.error:  # over its bound, or the profiler changed
            return _stopped(name, guard, counted)
        if strict and _changed(kept, (args, kwargs)):
            message = f"{name} modified an input in place; leave the inputs as they were."
            return ("error", message, "modified")
        if strict and not options.get("memory"):
            unstable = _again(name, fn, kept, guard, value)
            if unstable is not None:
                return unstable
    if peak is not None:
        return ("measured", (plain(value), int(peak)))
    return ("value", plain(value))


def _stopped(name: str, guard, counted: _Counted) -> tuple:
    """The raw outcome of a counted call a guard objects to: the reference first, then the count."""
    if guard is not None and guard.error:
        return ("error", f"{name} {guard.error}", "reference")
    if counted.over:
        return ("error", f"{name} {counted.error}", "calls")
    return ("error", f"{name} {counted.error}", "reference")  # the profiler was changed


def _failed(name: str, exc: Exception, args, kwargs, options: dict) -> tuple:
    """The raw outcome of a call that raised ``exc`` (asked for, or the learner's error)."""
    raises = options.get("raises")
    if options.get("memory") and _out_of_memory(exc):  # mmap refused by the bound
        return ("error", _over_bound(name), "memory")
    if raises and raises in [c.__name__ for c in type(exc).__mro__]:
        own = _raised_by_a_raise(exc, options.get("own", False))
        return ("raised", f"{raises}: {clip(exc)}", own)
    shown = ", ".join(_describe(a) for a in args)
    shown += "".join(f", {k}={_describe(v)}" for k, v in kwargs.items())
    message = f"{name}({clip(shown)}) raised {type(exc).__name__}: {clip(exc)}"
    code = f"raised:{raised_name(exc)}"
    if isinstance(exc, Warning):
        message += " (in these checks a warning counts as an error)"
        code = "warning"
    elif options.get("memory") and isinstance(exc, PermissionError):
        message += " (a memory-measured call may not start a process)"
    return ("error", message, code)


def _quietly(fn, kept, guard) -> tuple:
    """``(plain value,)`` of ``fn`` on a fresh copy of the inputs ``kept``, warnings let pass.

    ``()`` if it raises: the value behind a warning lets the judge name the
    mistake that warns (an overflow, a mask added after the softmax).
    """
    import numpy as np

    args, kwargs = copy_inputs(kept)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return (plain(_invoke(fn, args, kwargs, guard, False)[0]),)
        except Exception:
            return ()


#: Modules whose ``raise`` is not the learner's own check: the course's functions (``mh`` in
#: this process, ``mhsa_helpers`` in a kernel) and numpy's Python code.
_NOT_OWN = ("mh", "mhsa_helpers", "numpy")


def _raised_by_a_raise(exc: BaseException, own: bool = False) -> bool | None:
    """Whether ``exc`` came from a ``raise`` statement of Python code (a check of its own).

    Read from the bytecode of the innermost frame: the instruction that
    raised is a ``raise`` (``RAISE_VARARGS``), or numpy's or Python's error
    on the way (a call or an operator: a failed broadcast, ``range()`` with a
    step of 0). None when it cannot be told. With ``own`` (the call asked
    for a check of the function's own, ``options["own"]``), a ``raise``
    counts only outside :data:`_NOT_OWN`: not one of a course function it
    calls (``mh.attention_head`` refusing shapes), nor of numpy's Python code.
    """
    import dis

    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    code = tb.tb_frame.f_code.co_code
    if not 0 <= tb.tb_lasti < len(code):
        return None
    if dis.opname[code[tb.tb_lasti]] not in ("RAISE_VARARGS", "RERAISE"):
        return False
    module = str(tb.tb_frame.f_globals.get("__name__", ""))
    return not own or module.split(".", 1)[0] not in _NOT_OWN


def _again(name: str, fn, kept, guard, first) -> tuple | None:
    """None if ``fn`` gives ``first`` again on a fresh copy of the inputs ``kept``, else why not.

    Not for a call given a random generator: the check of such a function
    judges its draws itself (the same generator, the same weights).
    """
    import numpy as np

    if any(isinstance(a, np.random.Generator) for a in [*kept[0], *kept[1].values()]):
        return None
    args, kwargs = copy_inputs(kept)
    try:
        again, _ = _invoke(fn, args, kwargs, guard, False)
    except Exception as exc:
        message = (
            f"{name} raised {type(exc).__name__} when called a second time with the same "
            f"inputs: {clip(exc)}"
        )
        return ("error", message, "unstable")
    if _same(plain(first), plain(again)):
        return None
    message = (
        f"{name} gave a different answer when called a second time with the same inputs: "
        "keep nothing between calls (a global that changes, a default argument that is "
        "modified, a cache)."
    )
    return ("error", message, "unstable")


class TimedOut(BaseException):
    """Raised into a learner's function that runs past its time limit (:class:`TimeLimit`).

    A ``BaseException``, as ``KeyboardInterrupt`` is: an ``except Exception``
    in the learner's loop does not swallow it (and the limit raises it again
    every :data:`AGAIN` seconds where a bare ``except`` does).
    """


class Interrupted(KeyboardInterrupt):
    """The learner's interrupt (the kernel's stop button) while the course ran their code.

    Still a ``KeyboardInterrupt`` (the cell stops), but shown in IPython as
    its one sentence, never as a traceback through the course
    (:meth:`_render_traceback_`, as a failed check's ``CheckFailed``).
    """

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of the traceback: the sentence, marked as a failure."""
        return [f"\u2717 {self}"]


class interrupts_said:
    """Around course code that runs a learner's: an interrupt in it is one line, ``sentence``.

    A ``KeyboardInterrupt`` raised in the block (the learner stopped the
    kernel) is raised again as :class:`Interrupted` saying ``sentence``; one
    that already says more (an :class:`Interrupted` from a call) goes on as
    it is.
    """

    def __init__(self, sentence: str):
        self.sentence = sentence

    def __enter__(self) -> interrupts_said:
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            if not issubclass(kind, Interrupted):
                raise Interrupted(self.sentence) from None
        return False


#: Seconds after which a time limit raises :class:`TimedOut` again, if the code caught it.
AGAIN = 0.5


def _can_time() -> bool:
    """Whether a timer signal can stop code here: the main thread, on a platform with SIGALRM."""
    import signal
    import threading

    return (
        hasattr(signal, "SIGALRM")
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )


class TimeLimit:
    """Around code of the learner's, in the kernel's main thread: stop it after ``seconds``.

    A real-time timer (``signal.setitimer``) raises :class:`TimedOut` into
    the code once ``seconds`` have passed (and every :data:`AGAIN` seconds
    after, should the code catch it); :attr:`fired` says it did. That stops a
    loop written in Python; a single numpy call that runs long is bounded
    anyway by its size. The previous SIGALRM handler and timer are restored
    on exit; a previous timer due during the block is served on time by its
    own handler (a default or ignored disposition: on exit, at once). Outside the
    main thread, on a platform without SIGALRM, or with ``seconds`` None it
    only measures :attr:`elapsed`.

    Parameters
    ----------
    seconds : float or None
        The limit.
    """

    def __init__(self, seconds: float | None):
        self.seconds, self.fired, self.start, self.stop = seconds, False, None, None
        self._armed, self._handler_before, self._timer_before = False, None, None

    @property
    def elapsed(self) -> float:
        """Seconds from entering the block to leaving it (or to now, inside it)."""
        if self.start is None:
            return 0.0
        return (self.stop if self.stop is not None else time.monotonic()) - self.start

    def _alarm(self, signum, frame) -> None:
        if not self._armed:
            return
        now = time.monotonic()
        due = self._timer_before
        if due is not None and now >= due[0] and callable(self._handler_before):
            # the previous timer's turn, on time: served once (again after its interval)
            self._timer_before = (now + due[1], due[1]) if due[1] > 0 else None
            self._arm(now)
            self._handler_before(signum, frame)
        if now >= self.start + self.seconds:
            self.fired = True
            raise TimedOut(f"ran for more than {self.seconds} s")

    def _arm(self, now: float) -> None:
        """Set the timer for the nearer of this limit and a previous timer this one serves."""
        import signal

        until = self.start + self.seconds
        if self._timer_before is not None and callable(self._handler_before):
            until = min(until, self._timer_before[0])
        signal.setitimer(signal.ITIMER_REAL, max(until - now, 1e-6), AGAIN)

    def __enter__(self) -> TimeLimit:
        import signal

        self.start, self.stop, self.fired = time.monotonic(), None, False
        if self.seconds is None or not _can_time():
            return self
        self._handler_before = signal.signal(signal.SIGALRM, self._alarm)
        delay, interval = signal.setitimer(signal.ITIMER_REAL, 0)
        self._timer_before = (self.start + delay, interval) if delay > 0 else None
        self._armed = True
        self._arm(self.start)
        return self

    def __exit__(self, *exc) -> bool:
        import signal

        was, self._armed = self._armed, False
        self.stop = time.monotonic()
        if was:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._handler_before)
            if self._timer_before is not None:  # still to come (or due: it fires at once)
                due, interval = self._timer_before
                signal.setitimer(signal.ITIMER_REAL, max(due - self.stop, 1e-6), interval)
        return False


def _ran_long(name: str, index: int, seconds: float, interrupted: bool) -> str:
    """The default sentence of a call stopped by its time limit or by the learner's interrupt."""
    if interrupted:
        return f"{name} was interrupted after {seconds:.1f} s: an endless loop?"
    return f"{name} ran for more than {seconds:g} s: an endless loop?"


def call_each(name: str, fn, calls, around=None, seconds=None, said=None) -> list:
    """:func:`call_one` on each call in turn, here; stop after the first error.

    ``around()``, if given, makes a fresh guard for each call (see
    :func:`call_one`). ``seconds``, if given, holds each call's time limit
    (:class:`TimeLimit`, the contract's second call included): a call past
    it gives ``("error", sentence, "slow")``. A ``KeyboardInterrupt`` during
    a call (the learner stopped the kernel) is raised again as
    :class:`Interrupted`, one line. ``said(index, seconds, interrupted)`` is
    that sentence, for call ``index`` stopped after ``seconds`` (by default
    the function's name, the time and "an endless loop?").
    """
    said = said or (lambda i, s, interrupted: _ran_long(name, i, s, interrupted))
    outcomes = []
    for index, call in enumerate(calls):
        limit = TimeLimit(None if seconds is None else seconds[index])
        try:
            with limit:
                outcome = call_one(name, fn, call, around() if around else None)
        except TimedOut:
            outcome = None
        except KeyboardInterrupt:
            raise Interrupted(said(index, limit.elapsed, True)) from None
        if outcome is None or limit.fired:  # stopped, or stopped and the answer caught it
            outcome = ("error", said(index, limit.seconds, False), "slow")
        outcomes.append(outcome)
        if outcomes[-1][0] == "error":
            break
    return outcomes


def _describe(a) -> str:
    import numpy as np

    if isinstance(a, np.ndarray):
        return f"array of shape {a.shape}"
    if isinstance(a, np.random.Generator):
        return "rng"
    if isinstance(a, tuple | list):  # a cache (K, V): its arrays by shape, never by repr
        inner = ", ".join(_describe(x) for x in a)
        return f"({inner})" if isinstance(a, tuple) else f"[{inner}]"
    if isinstance(a, np.generic):
        return repr(a.item())
    return repr(a)
