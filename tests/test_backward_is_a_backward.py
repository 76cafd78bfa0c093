"""A gradient computed by central differences of the forward earns nothing (issue 33, item 2).

Each backward check ends with one large input (thousands of numbers, few
rows) on which the call may make one Python function call per two numbers
of its inputs: central differences make two forward passes per number, a
backward pass a fixed number of calls (a few per row or head when it
loops). The count is of calls, never of seconds.

What the count cannot see (central differences batched into a few forward
calls on stacks of perturbed inputs, or hidden from the count by the answer's
own process) the grader's time budget holds on the hidden tests' last, larger
input of one head's and the layer's backward: there central differences need
minutes, a backward pass milliseconds, and the budget allows seconds. The
tests of that run real grading (the child process and the grader's budget);
the margin is two orders of magnitude either way.
"""

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers.budget import Budget
from mhsa_helpers.checks import CHECKS, hidden_seed, job, judge
from mhsa_helpers.checks.failures import CheckFailed
from mhsa_helpers.checks.step17_backward import CALLS_PER, WORK_SLOW
from mhsa_helpers.execution.child.contract import _Counted
from mhsa_helpers.execution.in_child import run_in_child
from tests.support.answers import load

#: The stable softmax an answer cell writes for itself (a notebook-level function of its own).
OWN_SOFTMAX = """def my_softmax(Z, axis=-1):
    m = np.max(Z, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=axis, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


"""

#: Central differences of the learner's own softmax (scores from log A; a masked entry,
#: A = 0, gets no gradient), one entry at a time.
FD_SOFTMAX_OWN = (
    OWN_SOFTMAX
    + """def softmax_backward(A, dA, axis=-1):
    A64 = np.asarray(A, dtype=np.float64)
    Z = np.where(A64 > 0, np.log(np.where(A64 > 0, A64, 1.0)), -np.inf)
    dZ = np.zeros_like(A64)
    h = 1e-6
    for idx in np.ndindex(Z.shape):
        if not np.isfinite(Z[idx]):
            continue
        old = Z[idx]
        Z[idx] = old + h
        up = np.sum(my_softmax(Z, axis) * dA)
        Z[idx] = old - h
        down = np.sum(my_softmax(Z, axis) * dA)
        Z[idx] = old
        dZ[idx] = (up - down) / (2 * h)
    return dZ.astype(np.result_type(A, dA))
"""
)

#: The same with the course's softmax, and every exception of the forward swallowed.
FD_SOFTMAX_MH = """def softmax_backward(A, dA, axis=-1):
    A64 = np.asarray(A, dtype=np.float64)
    Z = np.where(A64 > 0, np.log(np.where(A64 > 0, A64, 1.0)), -np.inf)
    dZ = np.zeros_like(A64)
    h = 1e-6
    for idx in np.ndindex(Z.shape):
        if not np.isfinite(Z[idx]):
            continue
        old = Z[idx]
        try:
            Z[idx] = old + h
            up = np.sum(mh.softmax(Z, axis) * dA)
            Z[idx] = old - h
            down = np.sum(mh.softmax(Z, axis) * dA)
        except Exception:
            up = down = 0.0
        Z[idx] = old
        dZ[idx] = (up - down) / (2 * h)
    return dZ.astype(np.result_type(A, dA))
"""


def _central_differences(header: str, names: str, forward: str, result: str) -> str:
    """A learner's backward by central differences of ``forward`` for each of ``names``."""
    return f"""{header}
    inputs = [np.array(M, dtype=np.float64) for M in ({names})]

    def loss():
        return np.sum({forward}[0] * dOut)

    grads = []
    for x, given in zip(inputs, ({names})):
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            old = x[idx]
            x[idx] = old + 1e-6
            up = loss()
            x[idx] = old - 1e-6
            down = loss()
            x[idx] = old
            g[idx] = (up - down) / 2e-6
        grads.append(g.astype(given.dtype))
    return {result}
"""


#: Central differences of mh.attention_head, for Q, K and V in turn.
FD_HEAD = _central_differences(
    "def attention_head_backward(Q, K, V, dOut, mask=None):",
    "Q, K, V",
    "mh.attention_head(*inputs, mask)",
    "tuple(grads)",
)

#: Central differences of mh.multi_head_self_attention, for X and the four weights.
FD_LAYER = _central_differences(
    "def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):",
    "X, W_q, W_k, W_v, W_o",
    "mh.multi_head_self_attention(*inputs, n_heads, mask)",
    "grads[0], tuple(grads[1:])",
)

#: Central differences with the interpreter's profiler switched off first.
FD_PROFILER_OFF = "import sys\n\n" + FD_SOFTMAX_OWN.replace(
    "    A64 = np.asarray(A, dtype=np.float64)\n",
    "    sys.setprofile(None)\n    A64 = np.asarray(A, dtype=np.float64)\n",
)

#: Central differences of the layer, run in a thread of a pool (the threads are counted too).
FD_LAYER_THREAD = (
    "from concurrent.futures import ThreadPoolExecutor\n\n"
    + FD_LAYER.replace("def multi_head_self_attention_backward(", "def _fd_backward(", 1)
    + """

def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_fd_backward, X, W_q, W_k, W_v, W_o, n_heads, dOut, mask).result()
"""
)

FINITE_DIFFERENCES = {
    "softmax_own_forward": ("softmax_backward", FD_SOFTMAX_OWN),
    "softmax_course_forward": ("softmax_backward", FD_SOFTMAX_MH),
    "head": ("attention_head_backward", FD_HEAD),
    "layer": ("multi_head_self_attention_backward", FD_LAYER),
    "layer_in_a_thread": ("multi_head_self_attention_backward", FD_LAYER_THREAD),
}

#: Correct, and loops over rows with a helper of its own per row: a few calls per row.
ROW_LOOP_SOFTMAX = """def _row_backward(a, g):
    J = np.diag(a) - np.outer(a, a)  # the row's full Jacobian
    return J @ g


def softmax_backward(A, dA, axis=-1):
    a, g = np.moveaxis(A, axis, -1), np.moveaxis(dA, axis, -1)
    out = np.zeros(a.shape, dtype=np.result_type(A, dA))
    for idx in np.ndindex(a.shape[:-1]):
        out[idx] = _row_backward(a[idx], g[idx])
    return np.moveaxis(out, -1, axis)
"""

#: Correct, one entry at a time (np.ndindex over every entry: a step of a loop, not a call).
ENTRY_LOOP_SOFTMAX = """def softmax_backward(A, dA, axis=-1):
    s = np.sum(dA * A, axis=axis, keepdims=True)
    s = np.broadcast_to(s, A.shape)
    out = np.zeros(A.shape, dtype=np.result_type(A, dA))
    for idx in np.ndindex(A.shape):
        out[idx] = A[idx] * (dA[idx] - s[idx])
    return out
"""

#: Correct, one head and one sequence at a time, each through the learner's own helpers.
LOOP_HEAD = """def _one(q, k, v, g, m):
    s = np.sqrt(q.shape[-1])
    z = q @ k.T / s + (0.0 if m is None else m)
    z = z - np.max(z, axis=-1, keepdims=True, initial=-1e300, where=np.isfinite(z))
    e = np.where(np.isfinite(z), np.exp(np.where(np.isfinite(z), z, 0.0)), 0.0)
    tot = e.sum(axis=-1, keepdims=True)
    a = e / np.where(tot > 0, tot, 1.0)
    da = g @ v.T
    dz = a * (da - np.sum(da * a, axis=-1, keepdims=True)) / s
    return dz @ k, dz.T @ q, a.T @ g


def attention_head_backward(Q, K, V, dOut, mask=None):
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], dOut.shape[:-2])
    M = None if mask is None else np.asarray(mask, dtype=float)
    if M is not None:
        lead = np.broadcast_shapes(lead, M.shape[:-2])
    Qb, Kb, Vb, Gb = (np.broadcast_to(X, lead + X.shape[-2:]) for X in (Q, K, V, dOut))
    dQ, dK, dV = (np.zeros(X.shape, dtype=np.result_type(Q, K, V, dOut)) for X in (Qb, Kb, Vb))
    Mb = None if M is None else np.broadcast_to(M, lead + M.shape[-2:])
    for idx in np.ndindex(lead):
        m = None if Mb is None else np.broadcast_to(Mb[idx], (Q.shape[-2], K.shape[-2]))
        dQ[idx], dK[idx], dV[idx] = _one(Qb[idx], Kb[idx], Vb[idx], Gb[idx], m)

    def back_to(G, shape):  # sum the broadcast axes away
        G = G.sum(axis=tuple(range(G.ndim - len(shape))))
        keep = tuple(i for i, n in enumerate(shape) if n == 1 and G.shape[i] != 1)
        return G.sum(axis=keep, keepdims=True) if keep else G

    return back_to(dQ, Q.shape), back_to(dK, K.shape), back_to(dV, V.shape)
"""


def test_a_plain_count_of_calls_bounds_a_call_and_says_how_many():
    """The guard itself: calls counted, the call stopped past the bound, whatever it catches."""

    def helper():
        return 1

    def loop(n):
        total = 0
        for _ in range(n):
            try:
                total += helper()
            except Exception:  # the bound's exception, swallowed: the count still tells
                pass
        return total

    few = _Counted(None, 10)
    with few:
        loop(5)
    assert few.count >= 6 and few.error is None  # loop itself and five helpers (and __exit__)
    many = _Counted(None, 10)
    with many:
        loop(100)
    assert many.over and "more than 10 Python function calls" in many.error


@pytest.mark.slow  # a sweep: many examples per exercise
@pytest.mark.parametrize("case", sorted(FINITE_DIFFERENCES))
def test_central_differences_fail_the_visible_check_and_say_why(case):
    name, source = FINITE_DIFFERENCES[case]
    with pytest.raises(CheckFailed) as info:
        checks.check(name, load(source, name))
    said = str(info.value)
    assert "central differences" in said and "not a backward pass" in said, said
    assert "chain rule" in said and f"at most one per {CALLS_PER} numbers" in said, said
    assert "array([" not in said


@pytest.mark.slow  # a sweep: many examples per exercise
def test_central_differences_are_right_on_the_small_inputs():
    """What the new call catches: every earlier call (small inputs) passes them."""
    name, source = FINITE_DIFFERENCES["layer"]
    check = CHECKS[name]
    calls = check.visible()[:-1]
    outcomes = checks.core.call_in_notebook(name, load(source, name), calls)
    check.verdict(calls, outcomes)  # no CheckFailed: right values, from the forward only


def test_switching_the_profiler_off_is_no_way_around_the_count():
    name = "softmax_backward"
    with pytest.raises(CheckFailed, match="changed the interpreter's profiler"):
        checks.check(name, load(FD_PROFILER_OFF, name))


@pytest.mark.slow  # a real child process
@pytest.mark.parametrize("case", sorted(FINITE_DIFFERENCES))
def test_central_differences_earn_nothing_when_graded(case):
    """Through the child process, as the grader runs it: visible and hidden fail, and the
    hidden test's sentence says why without a number of its input."""
    name, source = FINITE_DIFFERENCES[case]
    seed = hidden_seed(b"a key of some course directory", name)
    result = run_in_child([job("17_backward", [source], [(name, None), (name, seed)])])
    outcomes = result["17_backward"].outcomes
    visible = judge(name, None, outcomes[(name, None)])
    assert visible is not None and "not a backward pass" in visible, visible
    public = judge(name, seed, outcomes[(name, seed)], hidden=True)
    assert public == (
        f"{name} makes far more function calls than a backward pass needs, as central "
        "differences of the forward do: compute the gradient by the chain rule."
    )


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("softmax_backward", ROW_LOOP_SOFTMAX),
        ("softmax_backward", ENTRY_LOOP_SOFTMAX),
        ("attention_head_backward", LOOP_HEAD),
    ],
)
@pytest.mark.slow  # a real child process
def test_a_backward_that_loops_over_rows_heads_or_entries_passes(name, source, capsys):
    fn = load(source, name)
    checks.check(name, fn)
    checks.check_hidden(name, fn)
    assert capsys.readouterr().out.count("\u2713") == 2
    seed = hidden_seed(b"a key of some course directory", name)
    result = run_in_child([job("17_backward", [source], [(name, None), (name, seed)])])
    outcomes = result["17_backward"].outcomes
    assert judge(name, None, outcomes[(name, None)]) is None
    assert judge(name, seed, outcomes[(name, seed)], hidden=True) is None


#: How many leading arguments of each backward are differentiated (A; Q, K, V; X and weights).
DIFFERENTIATED = {
    "softmax_backward": 1,
    "attention_head_backward": 3,
    "multi_head_self_attention_backward": 5,
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIATED))
def test_the_counted_call_is_large_and_its_bound_far_below_central_differences(name):
    """Central differences need two forward passes per number of the differentiated inputs:
    at least twice the bound; the bound is a thousand calls at least."""
    for calls in (CHECKS[name].visible(), CHECKS[name].hidden(np.random.default_rng(0))):
        calls = [c for c in calls if not c.context.get("work")]  # see the tests below
        counted = [c for c in calls if c.calls is not None]
        assert len(counted) == 1 and counted[0] is calls[-1]
        call = counted[0]
        numbers = sum(np.size(a) for a in call.args[: DIFFERENTIATED[name]])
        assert call.calls >= 1000 and 2 * numbers >= 2 * call.calls


def test_a_counted_call_that_also_calls_the_reference_is_told_the_reference_first():
    """Two guards around one call: the reference watch's word is not lost in the count's."""
    source = FD_SOFTMAX_OWN.replace(
        "    dZ = np.zeros_like(A64)\n",
        "    dZ = np.zeros_like(A64)\n    if A.size > 1000:  # the large input only\n"
        "        mh.softmax_backward(A, dA, axis)\n",
    )
    with pytest.raises(CheckFailed) as info:
        checks.check("softmax_backward", load(source, "softmax_backward"))
    assert str(info.value).startswith("softmax_backward calls the course's reference")
    assert "backward pass" not in str(info.value)


#: Central differences batched into a few forward calls on stacks of perturbed inputs (a red
#: team's answer): no entry loop, a few thousand function calls, below any count's bound.
BATCHED_FD = """def _fd(f, x, G, h=1e-6, cap=1 << 21):
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    grad = np.zeros(n)
    c = max(1, cap // max(1, x.size, np.size(G)))
    for start in range(0, n, c):
        k = min(n, start + c) - start
        P = np.zeros((k, n))
        P[np.arange(k), np.arange(start, start + k)] = h
        P = P.reshape((k,) + x.shape)
        d = f(x[None] + P) - f(x[None] - P)
        grad[start:start + k] = (d * G[None]).reshape(k, -1).sum(axis=1) / (2 * h)
    return grad.reshape(x.shape)


def _softmax(Z):
    m = np.maximum.reduce(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = np.add.reduce(E, axis=-1, keepdims=True)
    return E / np.where(s > 0, s, 1.0)


def _head(Q, K, V, mask):
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return _softmax(Z if mask is None else Z + mask) @ V


def attention_head_backward(Q, K, V, dOut, mask=None):
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    Q64, K64, V64 = (np.broadcast_to(np.asarray(M, dtype=np.float64), lead + M.shape[-2:])
                     for M in (Q, K, V))  # a K or V shared by the batch: one copy per sequence
    G = np.asarray(dOut, dtype=np.float64)
    grads = (
        _fd(lambda q: _head(q, K64, V64, mask), Q64, G),
        _fd(lambda k: _head(Q64, k, V64, mask), K64, G),
        _fd(lambda v: _head(Q64, K64, v, mask), V64, G),
    )
    grads = [g.sum(axis=tuple(range(g.ndim - M.ndim))) for g, M in zip(grads, (Q, K, V))]
    grads = (  # and over the axes of size 1 that were broadcast
        g.sum(axis=tuple(k for k, n in enumerate(M.shape) if n == 1 and g.shape[k] != 1),
              keepdims=True)
        for g, M in zip(grads, (Q, K, V))
    )
    return tuple(g.astype(np.result_type(Q, K, V, dOut)) for g in grads)
"""


def _graded(name: str, source: str):
    """The visible and hidden verdicts of ``source`` as the grader gets them: in the child
    process, each call within the grader's time budget."""
    seed = hidden_seed(b"a key of some course directory", name)
    jobs = [job("17_backward", [source], [(name, None), (name, seed)])]
    result = run_in_child(jobs, timeout=120.0, budget=Budget.of_jobs(jobs))["17_backward"]
    return (
        judge(name, None, result.outcomes[(name, None)]),
        judge(name, seed, result.outcomes[(name, seed)], hidden=True),
    )


@pytest.mark.parametrize("name", ["attention_head_backward", "multi_head_self_attention_backward"])
def test_the_hidden_test_ends_with_an_input_no_central_differences_fit(name):
    """Heads of 256 tokens, or a layer of width 256: central differences need a forward pass's
    worth of work for each of a hundred thousand numbers or more."""
    calls = CHECKS[name].hidden(np.random.default_rng(0))
    assert calls[-1].context.get("work") and not any(c.context.get("work") for c in calls[:-1])
    numbers = sum(np.size(a) for a in calls[-1].args[: DIFFERENTIATED[name]])
    assert numbers >= 100_000
    assert not any(c.context.get("work") for c in CHECKS[name].visible())


@pytest.mark.slow
def test_batched_central_differences_earn_nothing_when_graded():
    """Below the count's bound, they pass the visible check (no budget in the learner's own
    kernel) and run out of the grader's time on the hidden one, told why."""
    name = "attention_head_backward"
    visible, hidden = _graded(name, BATCHED_FD)
    assert visible is None, visible  # what the count cannot see, as the module says
    assert hidden == WORK_SLOW.format(name=name)


@pytest.mark.slow
def test_a_backward_that_loops_over_heads_and_rows_fits_the_grader_s_budget():
    """The large input costs an honest backward pass milliseconds, loops over heads included."""
    assert _graded("attention_head_backward", LOOP_HEAD) == (None, None)
