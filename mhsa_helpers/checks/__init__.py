"""The check behind every exercise: ``checks.check("softmax", softmax)`` in a test cell.

One module per step (``step01_input`` … ``step16_sliding_window``; the
backward pass's ``step17_*``, one per check) defines the check of each
exercise of that step: its inputs on the worked examples (visible) and on
random shapes drawn from a seed (hidden), and how to judge the learner's
outputs against the reference, naming the most likely mistake. What they
share: :mod:`.core` (a check, running it, its verdict), :mod:`.comparison`,
:mod:`.failures`, :mod:`.masks`, :mod:`.batches`, :mod:`.diagnose` and
:mod:`.wording`; :mod:`.slips` gives each failure the stable id of the slip
it named, for the instructor's class report. On success a check prints one
line starting with a tick; on failure it raises :class:`CheckFailed` (an
``AssertionError``) with one sentence.

The hidden tests' seed comes from a key that only the instructor's course
directory holds (``python -m autograders init-course``): :func:`hidden_seed`
turns the key and an exercise's name into the seed, so nothing in this
package can rebuild a hidden input. The progress report and the grader run
the learner's functions elsewhere (:mod:`mhsa_helpers.execution.in_child`) on the requests
of :func:`job` and judge what came back here, with :func:`judge`.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import os
import pkgutil
import secrets

from ..execution.in_child import Job
from .core import Check
from .failures import CheckFailed, NotYet, blind

for _module in pkgutil.iter_modules(__path__):
    if _module.name.startswith("step"):
        importlib.import_module(f"{__name__}.{_module.name}")

#: The check of each exercise, by the exercise's function name.
CHECKS: dict[str, Check] = Check.registry

#: The environment variable that hands the course's hidden-test key (hex) to a grading kernel.
KEY_VARIABLE = "MHSA_HIDDEN_KEY"
#: How :func:`judge` begins the sentence of an exercise it could not judge at all.
GRADING_ERROR = "could not be graded automatically (a grading error, for the instructor to review)"

__all__ = [
    "CHECKS",
    "GRADING_ERROR",
    "KEY_VARIABLE",
    "Check",
    "CheckFailed",
    "check",
    "check_hidden",
    "hidden_seed",
    "job",
    "judge",
    "judgement",
    "readable_output",
]

#: JupyterLab wraps plain output (ticks, a failed check's sentence) anywhere, mid-word
#: included (``word-break: break-all``); this makes it wrap between words, as prose does.
READABLE_OUTPUT = (
    "<style>.jp-OutputArea-output pre{word-break:normal;overflow-wrap:break-word}</style>"
)


def readable_output() -> None:
    """Make the notebook's plain output (the checks' sentences) wrap between words.

    Called by every notebook's setup cell; outside a notebook it does nothing visible.
    """
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:  # no IPython: nothing is displayed anyway
        return
    if get_ipython() is not None:  # elsewhere display() would print the object's repr
        display(HTML(READABLE_OUTPUT))


def check(name: str, fn) -> NotYet | None:
    """The visible test of exercise ``name`` on the learner's function ``fn``.

    Prints a ✓ line when ``fn`` passes; raises :class:`CheckFailed` naming the
    mistake when it does not; returns :class:`~.failures.NotYet` (shown as a ✗
    line, worth 0 points) when ``fn`` is not written yet.
    """
    return CHECKS[name].run(fn)


def hidden_seed(key: bytes, name: str) -> int:
    """The seed of exercise ``name``'s hidden inputs under the course's secret ``key``.

    HMAC-SHA256 of the name, 128 bits: without the key, no seed can be told.
    """
    return int.from_bytes(hmac.new(key, name.encode(), hashlib.sha256).digest()[:16], "little")


def check_hidden(name: str, fn) -> NotYet | None:
    """The hidden test of exercise ``name``: random inputs from the course's key.

    The key comes from :data:`KEY_VARIABLE` (the grading kernel sets it from
    the course directory); without one, from a fresh random seed, so the
    inputs are new on every run. A failure says what a hidden test may say
    (:attr:`CheckFailed.public`): the feedback shows it.
    """
    key = os.environ.get(KEY_VARIABLE)
    seed = hidden_seed(bytes.fromhex(key), name) if key else secrets.randbits(128)
    return CHECKS[name].run(fn, seed=seed, hidden=True)


def job(stem: str, sources: list, tests: list) -> Job:
    """The child's work for one notebook: its answer cells and the calls of ``tests``.

    ``tests`` holds ``(exercise, seed)`` pairs: the visible calls (seed None)
    or the hidden ones drawn from ``seed``; each is filed under that pair.
    Every visible call runs before any hidden one: a visible test's
    feedback quotes the learner's error messages, and a notebook's process
    must not have seen a hidden input that it could quote there.
    """
    ordered = sorted(tests, key=lambda test: test[1] is not None)  # stable: visible first
    return Job(
        stem,
        list(sources),
        [
            ((name, seed), name, CHECKS[name].requests(CHECKS[name].calls(seed)))
            for name, seed in ordered
        ],
    )


def judge(name: str, seed: int | None, outcomes, hidden: bool = False) -> str | None:
    """None if the outcomes of exercise ``name`` pass its check, else the check's sentence.

    With ``hidden``, the sentence says which property failed and nothing of
    the inputs, shapes or values (:attr:`CheckFailed.public`). It never
    raises: an exercise the judge cannot decide (an odd value the check did
    not foresee) gets a sentence containing :data:`GRADING_ERROR`, so it
    costs that exercise only and is named for review.
    """
    return judgement(name, seed, outcomes, hidden)[0]


def judgement(name: str, seed: int | None, outcomes, hidden: bool = False) -> tuple:
    """:func:`judge`'s sentence, and the id of the slip it names (:mod:`.slips`).

    Returns
    -------
    sentence : str or None
        As :func:`judge` gives it (None: passed).
    slip : str or None
        None where it passed or where the function is not written yet (not
        defined, or its stub raising ``NotImplementedError``: ``"not attempted"``);
        else the slip's stable id (:func:`~.slips.slip_of`), found from the
        whole failure, a hidden test's too, though its sentence is the public one;
        ``"grading error"`` where the judge failed.
    """
    from .slips import slip_of

    if outcomes == "not defined":
        return f"{name} is not defined: run its cell, and keep its name.", "not attempted"
    if outcomes and getattr(outcomes[0], "code", None) == "not-implemented":
        attempted = False
    else:
        attempted = True
    if hidden:
        outcomes = [blind(o) for o in outcomes]
    try:
        check = CHECKS[name]
        check.verdict(check.calls(seed), outcomes)
    except CheckFailed as exc:
        sentence = exc.public if hidden else str(exc)
        return sentence, str(slip_of(name, exc)) if attempted else "not attempted"
    except Exception as exc:  # the judge's own failure: named for review, never fatal
        return f"{name} {GRADING_ERROR} ({type(exc).__name__}).", "grading error"
    return None, None
