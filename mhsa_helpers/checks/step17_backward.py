"""What the backward checks share: a gradient judged whole, against central differences, and
as a backward pass (a bound on its calls, a large input timed by the grader).

The checks of the backward pass (after the extensions) are one module each:
:mod:`.step17_softmax_backward`, :mod:`.step17_head_backward` and
:mod:`.step17_layer_backward`; one head's slips, which the layer's check names
too, are in :mod:`.step17_head_slips`.

Each check compares the learner's gradients with the reference's and names
the catalogued mistake; on the calls marked ``fd`` it also holds them to
central differences of the scalar loss ``sum(output * G)`` (LEARNING.md: step
1e-6, relative error at most 1e-5), the way the notebook teaches to check a
gradient, so that a gradient is judged by its definition as well.

A gradient must come from a backward pass, not from central differences of
the forward (two forward passes per entry of the input). Each check ends
with one large input (thousands of numbers, few rows) on which the call may
make at most one Python function call per :data:`CALLS_PER` numbers of its
inputs (:func:`call_bound`): the child counts every call, the answer's own,
the course's ``mh`` functions and numpy's, in the threads the call starts
too, and stops the call past the bound (:class:`mhsa_helpers.execution.child.contract._Counted`).
No time is measured: a backward pass makes a fixed number of calls whatever
the size (a loop over heads or rows a few per head or row), central
differences at least two per number.

What the count does not see: a forward copied inline that makes no Python
call per entry (only ufuncs and their ``reduce``, no ``np.max``, ``.sum()``
or ``np.einsum``), central differences batched into a few forward calls on
a stack of perturbed inputs (the forward takes batch axes), work handed to
a thread or a process started before the call, or a profiler taken down and
put back by the answer itself; each takes a deliberate effort to hide from
the check, and the answer's code can do it because it runs in the process
that counts.

So the hidden tests of one head's and of the layer's backward end with a
larger input still (:func:`work`: heads of 256 tokens, a layer of width 256),
on which the grader's time budget, kept by its own clock outside the
answer's process, holds what the count cannot: central differences, batched
or hidden however, need a forward pass's worth of work per number of the
input, minutes there, where a backward pass takes milliseconds. The
softmax's backward has no such input: central differences of one row cost
what its full Jacobian costs, a correct way to write it, so only the count
tells them apart there.
"""

from __future__ import annotations

import numpy as np

from ..gradcheck import relative_error
from .comparison import close
from .core import Call
from .diagnose import diagnose_order
from .failures import CheckFailed
from .hints import CHAIN_RULE
from .wording import agree

#: The finite-difference bound of LEARNING.md.
FD_STEP, FD_BOUND = 1e-6, 1e-5

#: Numbers of the inputs per Python function call a backward pass may make on the large input.
CALLS_PER = 2


def call_bound(*arrays) -> int:
    """The function calls a backward on ``arrays`` may make: one per :data:`CALLS_PER` numbers.

    Central differences make two forward passes, each at least one call,
    per number they differentiate: at least twice the bound (the bound
    counts ``dA`` or ``dOut`` too); a backward pass, even one that loops
    over the rows or heads of the large input, makes a few per row.
    """
    return sum(int(np.size(a)) for a in arrays) // CALLS_PER


def not_a_backward(name: str, error: str, numbers: int, rule: str) -> str:
    """The sentence for a backward stopped past its bound of function calls.

    ``error`` is the child's word (how many calls), ``numbers`` the input's
    size, ``rule`` the chain rule the function should compute instead.
    """
    said = (
        error.removeprefix(f"{name} ")
        .rstrip(".")
        .replace(" in one call,", f" in one call on an input of {numbers} numbers,")
    )
    return (
        f"{name} {said}: that is central differences (two forward passes per entry) or "
        f"another loop over every entry, not a backward pass; {CHAIN_RULE}, with array "
        f"operations over whole axes: {rule} A backward pass makes a fixed "
        "number of array operations whatever the size of its input; central differences are "
        "only for checking it on small inputs. (The check counts the function calls of one "
        f"call on a large input: at most one per {CALLS_PER} numbers of its inputs.)"
    )


def work(call: Call) -> Call:
    """``call`` as a hidden test's last call, whose input is large enough that no central
    differences fit in the grader's time budget for it.

    A backward pass costs a few forward passes whatever the size of its input;
    central differences cost at least one forward pass (or, cleverly, the part of
    one that an entry touches: a key's entry touches every query's row) per number
    of the input, batched into stacks or not. On these inputs (heads of 256 tokens;
    a layer of width 256) that is 10^11 operations or more, minutes where the budget
    (:mod:`mhsa_helpers.budget`: 50 times the reference's time, plus 5 s) allows
    seconds. The budget is kept by the grader's clock, outside the answer's process,
    so nothing the answer does there can change it, unlike the count of its calls.
    Its catalogue is not computed (the size would make it slow): the reference
    alone judges it.
    """
    return Call(call.args, call.kwargs, {**call.context, "work": True}, calls=call.calls)


#: What a hidden test says of a backward that ran out of time on its large input.
WORK_SLOW = (
    "{name} took far longer than a backward pass on a large hidden input: central "
    "differences, batched or not, make forward passes for every number of the input, and no "
    f"time budget fits them: {CHAIN_RULE}, with array operations over whole axes."
)


def work_error(name: str, call: Call, outcome) -> CheckFailed | None:
    """The failure of a :func:`work` call that ran out of time, or None for any other."""
    if call.context.get("work") and outcome.code == "slow":
        said = WORK_SLOW.format(name=name)
        return CheckFailed(said, public=said)
    return None


def whole_mistake(name: str, got: tuple, expected: tuple, known: list) -> None:
    """Name the one catalogued mistake whose every part ``got`` matches, if just one does.

    A mistake in one gradient (dQ without its scale) and one in several (dQ and
    dK without it) agree on that gradient: only all the parts together tell them
    apart.
    """
    if all(close(g, e) for g, e in zip(got, expected, strict=True)):
        return
    whole = {
        h
        for h, w in known
        if w is not None and all(close(g, x) for g, x in zip(got, w, strict=True))
    }
    if len(whole) == 1:
        raise CheckFailed(f"{name}: {whole.pop()}")


def swapped_parts(name: str, got, expected, names) -> None:
    """Fail, naming the swap, where the returned parts are right but in each other's places."""
    said = diagnose_order(got, expected, names)
    if said is not None:
        raise CheckFailed(f"{name}: {said}")


def against_differences(name: str, what: str, got, numeric) -> None:
    """Fail unless ``got`` is within LEARNING.md's bound of the central differences."""
    err = relative_error(got, numeric)
    if not err <= FD_BOUND:
        raise CheckFailed(
            f"{name}: {what} {agree(what, 'differs')} from central differences of sum(output·G) "
            f"(step {FD_STEP:g}) by a relative error of {err:.2g}, more than {FD_BOUND:g}.",
            public=f"{name}: {what} {agree(what, 'differs')} from central differences.",
        )


def as_triple(name: str, got, names=("dQ", "dK", "dV")) -> tuple:
    """``got`` as a tuple of the three gradients ``names``, or fail asking for one."""
    if not isinstance(got, tuple | list) or len(got) != len(names):
        raise CheckFailed(f"{name}: return a tuple ({', '.join(names)}).")
    return tuple(got)
