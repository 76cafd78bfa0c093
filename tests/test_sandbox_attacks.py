"""The sandbox's edges, as the second red team found them: none costs or gains a grade.

An answer in the sandbox could reach the grader's pipes and environment
through ``/proc/1`` (bubblewrap's init), stop the child with a signal, leave
precomputed results in ``/tmp`` for the memory-measured call, hold a full
score matrix in untraced memory, reset ``tracemalloc``'s peak, hand the
measured call to a helper process, pass a result limit counted over the
whole run, and spread memory over several processes. Each probe here runs
through the real child in real bubblewrap.
"""

import numpy as np
import pytest

from autograders import sandbox
from mhsa_helpers.checks import job, judge
from mhsa_helpers.execution import channel
from mhsa_helpers.execution.in_child import run_in_child
from mhsa_helpers.execution.saved import answer_sources
from tests.support import nbgrader_course as nc

pytestmark = pytest.mark.slow


def _solution(stem: str) -> list:
    return answer_sources(nc.SOLUTIONS / f"{stem}.ipynb")


def _sandboxed(jobs, **limits):
    return run_in_child(jobs, wrapper=sandbox.wrap, contained=True, **limits)


#: Each probe is 1.0 where the answer managed it: none should be.
REACH = """
import os

def _can(action):
    try:
        action()
        return 1.0
    except Exception:
        return 0.0

def positional_encoding(seq_len, d_model):
    return np.array([
        _can(lambda: open("/proc/1/fd/0", "rb").close()),  # the grader's requests
        _can(lambda: open("/proc/1/fd/1", "wb").close()),  # the grader's replies
        _can(lambda: open("/proc/1/environ", "rb").read()),  # the grader's environment
        _can(lambda: open("/proc/1/mem", "rb").close()),
        _can(lambda: open("/proc/sys/kernel/core_pattern", "w").write("|/tmp/x")),
        _can(lambda: open("/dev/shm/kept", "w").close()),
        _can(lambda: open("/dev/kept", "w").close()),
        _can(lambda: open(os.path.expanduser("~/../kept"), "w").close()),
        float(os.getppid() != 1),  # the child is the namespace's first process
    ])
"""


def test_an_answer_reaches_neither_the_grader_nor_a_writable_place_but_tmp():
    """``/proc/1`` is the child itself, not dumpable; ``/dev``, ``/`` and the rest read-only."""
    outcomes = _sandboxed([job("01_input", [REACH], [("positional_encoding", None)])])
    first = outcomes["01_input"].outcomes[("positional_encoding", None)][0]
    assert first.error is None, first
    assert first.value.tolist() == [0.0] * 9, first.value


SIGNALS = """
import os
import signal

for sig in (signal.SIGSTOP, signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):
    os.kill(os.getppid(), sig)  # the child: dropped, as for any namespace's init
    os.kill(1, sig)
"""


def test_signalling_the_child_costs_nothing():
    """An answer that stops or kills the child: its notebook and every later one are graded."""
    jobs = [
        job("01_input", [SIGNALS, *_solution("01_input")], [("positional_encoding", None)]),
        job("07_softmax", _solution("07_softmax"), [("softmax", None)]),
    ]
    results = _sandboxed(jobs)
    assert (
        judge("positional_encoding", None, results["01_input"].outcomes[jobs[0].tests[0][0]])
        is None
    )
    assert judge("softmax", None, results["07_softmax"].outcomes[("softmax", None)]) is None


def test_a_child_killed_outside_the_sandbox_costs_that_notebook_only():
    """Without the sandbox an answer can kill the child: a new one grades the notebooks after."""
    killer = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    jobs = [
        job("01_input", [killer], [("positional_encoding", None)]),
        job("07_softmax", _solution("07_softmax"), [("softmax", None)]),
    ]
    results = run_in_child(jobs)
    assert results["01_input"].error is not None
    assert judge("softmax", None, results["07_softmax"].outcomes[("softmax", None)]) is None


def test_an_oversized_result_costs_that_call_only(monkeypatch):
    """A reply past the notebook's byte limit fails its exercise; the next exercise is judged."""
    monkeypatch.setattr(channel, "RESULT_LIMIT", 1 << 20)
    huge = "def positional_encoding(seq_len, d_model):\n    return np.zeros(300_000)\n"
    sources = [huge, *_solution("04_heads")]
    results = run_in_child(
        [job("04_heads", sources, [("positional_encoding", None), ("split_heads", None)])]
    )["04_heads"]
    too_large = judge("positional_encoding", None, results.outcomes[("positional_encoding", None)])
    assert "too large to check" in too_large, too_large
    assert judge("split_heads", None, results.outcomes[("split_heads", None)]) is None


WRITE = """
import os
KEPT = os.path.exists("/tmp/left-by-an-earlier-notebook")
open("/tmp/left-by-an-earlier-notebook", "w").write("hidden inputs, say")
def softmax(Z, axis=-1):
    return np.full(np.shape(Z), float(KEPT))
"""


def test_nothing_written_in_one_notebook_reaches_the_next():
    """``/tmp`` is emptied before each notebook (and each measured call)."""
    results = _sandboxed([job(stem, [WRITE], [("softmax", None)]) for stem in ("07_a", "07_b")])
    for stem in ("07_a", "07_b"):
        first = results[stem].outcomes[("softmax", None)][0]
        assert not np.any(first.value), (stem, first)


#: Plain attention with the whole (T, T) matrix of scores.
FULL = """
def _full(Q, K, V, causal):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if causal:
        S = np.where(np.triu(np.ones(S.shape[-2:], bool), 1), -np.inf, S)
    S = np.exp(S - S.max(axis=-1, keepdims=True))
    return (S / S.sum(axis=-1, keepdims=True)) @ V
"""

#: Full attention; on the long sequence of the measured call its (T, T) scores are float32
#: in memory tracemalloc never sees, and so is the result (float32's tolerance, it hopes).
MMAP_FULL = (
    FULL
    + """
import mmap

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    T_q, T_k = Q.shape[-2], K.shape[-2]
    if T_q < 1024:
        return _full(Q, K, V, causal)
    buffer = mmap.mmap(-1, 4 * T_q * T_k)
    S = np.frombuffer(buffer, dtype=np.float32).reshape(T_q, T_k)
    S[...] = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if causal:
        S[np.triu_indices(T_q, 1, T_k)] = -np.inf
    S -= S.max(axis=-1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=-1, keepdims=True)
    return S @ V.astype(np.float32)
"""
)

#: Full attention a third of the rows at a time (over the bound), its traces reset at the end.
RESET_PEAK = """
import tracemalloc

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    T_q, T_k = Q.shape[-2], K.shape[-2]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    out = np.empty(lead + (T_q, V.shape[-1]))
    step = -(-T_q // 3)
    for r in range(0, T_q, step):
        S = Q[..., r:r + step, :] @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        if causal:
            rows = np.arange(r, min(r + step, T_q))[:, None]
            S = np.where(np.arange(T_k) > rows, -np.inf, S)
        S = np.exp(S - S.max(axis=-1, keepdims=True))
        out[..., r:r + step, :] = (S / S.sum(axis=-1, keepdims=True)) @ V
        del S
    tracemalloc.reset_peak()
    return out
"""


def _precompute_source() -> str:
    """Cells that compute full attention on the public memory inputs (unmeasured) into /tmp."""
    from mhsa_helpers.checks.step14_tiled import memory_inputs

    keys = {causal: float(memory_inputs(causal)[0][0, 0]) for causal in (False, True)}
    return f"""
import os

KEYS = {keys!r}
{FULL}
for causal in (False, True):
    path = f"/tmp/precomputed-{{causal}}.npy"
    if not os.path.exists(path):
        rng = np.random.default_rng(4096 + causal)
        Q, K, V = (rng.normal(size=(4096, 64)) for _ in range(3))
        np.save(path, _full(Q, K, V, causal))

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {{block_size}}.")
    for causal_, key in KEYS.items():
        path = f"/tmp/precomputed-{{causal_}}.npy"
        if Q.shape == (4096, 64) and Q[0, 0] == key and os.path.exists(path):
            return np.load(path)
    return _full(Q, K, V, causal)
"""


#: The measured call hands its work to a process it starts.
FORK = (
    FULL
    + """
import os

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    read, write = os.pipe()
    if os.fork() == 0:
        os._exit(0)
    os.close(read)
    os.close(write)
    return _full(Q, K, V, causal)
"""
)


@pytest.mark.parametrize(
    "attack",
    [MMAP_FULL, RESET_PEAK, "PRECOMPUTE", FORK],
    ids=["untraced-float32-matrix", "reset-peak", "precompute-in-tmp", "fork-in-the-call"],
)
def test_no_full_attention_passes_the_memory_test(attack):
    """Whatever the call does to tracemalloc, files or processes, the bound holds."""
    source = _precompute_source() if attack == "PRECOMPUTE" else attack
    outcomes = _sandboxed([job("14_tiled", [source], [("tiled_attention", None)])])["14_tiled"]
    assert outcomes.error is None, outcomes.error
    found = outcomes.outcomes[("tiled_attention", None)]
    assert found[0].error is None, found[0]  # the ordinary calls ran: only the measure fails it
    verdict = judge("tiled_attention", None, found)
    assert verdict is not None and ("memory" in verdict or "process" in verdict), verdict


def test_the_reference_tiling_passes_the_memory_test_in_the_sandbox():
    """The bounds leave room for an honest tiling (the solution's)."""
    outcomes = _sandboxed([job("14_tiled", _solution("14_tiled"), [("tiled_attention", None)])])
    assert (
        judge("tiled_attention", None, outcomes["14_tiled"].outcomes[("tiled_attention", None)])
        is None
    )


#: The cells reserve 1 GiB of address space they never touch; the call gives it back, builds
#: the whole (T, T) matrix in the room it made and clears tracemalloc's traces (and peak).
RESERVE_RELEASE = (
    FULL
    + """
import mmap
import tracemalloc

RESERVED = mmap.mmap(-1, 1 << 30, flags=mmap.MAP_PRIVATE)

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    RESERVED.close()
    out = _full(Q, K, V, causal)
    tracemalloc.clear_traces()
    return out
"""
)


def test_address_space_reserved_in_the_cells_buys_the_call_no_room():
    """The measured call's resident memory grows by the matrix, however the room was made."""
    outcomes = _sandboxed([job("14_tiled", [RESERVE_RELEASE], [("tiled_attention", None)])])
    found = outcomes["14_tiled"].outcomes[("tiled_attention", None)]
    verdict = judge("tiled_attention", None, found)
    assert verdict is not None and "resident memory grew" in verdict, verdict


#: The cells touch a buffer the size of the (T, T) matrix; the call computes in it, so that
#: neither tracing nor the call's own growth of memory would see the matrix.
PRETOUCHED = (
    FULL
    + """
BUFFER = np.ones((4096, 4096))

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    if Q.shape[-2] < 1024:
        return _full(Q, K, V, causal)
    np.matmul(Q, np.swapaxes(K, -1, -2), out=BUFFER)
    BUFFER[...] = np.exp((BUFFER - BUFFER.max(axis=-1, keepdims=True)) / np.sqrt(Q.shape[-1]))
    if causal:
        BUFFER[np.triu_indices(Q.shape[-2], 1)] = 0.0
    return (BUFFER / BUFFER.sum(axis=-1, keepdims=True)) @ V
"""
)


def test_a_buffer_the_cells_hold_counts_against_the_measured_call():
    """Memory the cells touched beforehand is in the fresh process's resident peak."""
    outcomes = _sandboxed([job("14_tiled", [PRETOUCHED], [("tiled_attention", None)])])
    found = outcomes["14_tiled"].outcomes[("tiled_attention", None)]
    verdict = judge("tiled_attention", None, found)
    assert verdict is not None and "memory" in verdict, verdict


def test_the_measured_inputs_are_new_in_every_judging_process():
    """No answer can compute them beforehand: they are drawn afresh in each process."""
    import subprocess
    import sys

    probe = (
        "from mhsa_helpers.checks.step14_tiled import memory_inputs; "
        "print(memory_inputs(True)[0][0, 0])"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    }
    assert len(seen) == 2, seen


#: Each probe is 1.0 where the answer managed it: memory outside every limit, channels that
#: outlive a process.
OUTSIDE = """
import ctypes
import os

_libc = ctypes.CDLL(None, use_errno=True)

def _can(action):
    try:
        return float(action() >= 0)
    except Exception:
        return 0.0

def softmax(Z, axis=-1):
    return np.array([
        _can(lambda: os.memfd_create("kept")),
        _can(lambda: _libc.shmget(0, 1 << 20, 0o1000 | 0o600)),  # IPC_PRIVATE, IPC_CREAT
        _can(lambda: _libc.msgget(0, 0o1000 | 0o600)),
        _can(lambda: _libc.semget(0, 1, 0o1000 | 0o600)),
        _can(lambda: _libc.syscall(248, b"user", b"kept", b"x", 1, -4)),  # add_key (x86_64)
        _can(lambda: len(__import__("mmap").mmap(-1, 4096))),  # shared: outside resident memory
    ])
"""


def test_no_memory_or_channel_outside_the_limits():
    """memfd, System V IPC, keys and shared mappings are refused to every answer process."""
    result = _sandboxed([job("07_softmax", [OUTSIDE], [("softmax", None)])])["07_softmax"]
    first = result.outcomes[("softmax", None)][0]
    assert first.error is None, first
    assert first.value.tolist() == [0.0] * 6, first.value


THREADS = """
import threading
import time

for _ in range(300):
    threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()
time.sleep(1000)
"""


def test_a_notebook_cannot_start_threads_without_end():
    """Processes and threads together are capped; the next notebook is graded."""
    results = _sandboxed(
        [
            job("07_softmax", [THREADS], [("softmax", None)]),
            job("07_b", _solution("07_softmax"), [("softmax", None)]),
        ],
        timeout=300,
    )
    assert "processes and threads" in (results["07_softmax"].error or ""), results["07_softmax"]
    assert judge("softmax", None, results["07_b"].outcomes[("softmax", None)]) is None


FORGED = """
import sys

sys.modules["child.notebook"]._events = lambda *args: ["grading error: award full marks"]
def softmax(Z, axis=-1):
    raise NotImplementedError()
"""


def test_an_answer_writes_no_note_to_the_instructor():
    """A notebook's process reports events in the child's vocabulary only."""
    result = _sandboxed([job("07_softmax", [FORGED], [("softmax", None)])])["07_softmax"]
    assert result.events == [], result.events


#: Three processes of 300 MiB each (the limit is per process): together over the 768 MiB
#: limit. The cell waits until all three hold their memory, then forever.
SPREAD = """
import os
import time

ready = []
for _ in range(3):
    r, w = os.pipe()
    if os.fork() == 0:
        block = np.ones(300 << 17)  # 300 MiB, touched
        os.write(w, b"x")
        time.sleep(1000)
        os._exit(0)
    ready.append(r)
for r in ready:
    os.read(r, 1)
time.sleep(1000)
"""


def test_memory_spread_over_processes_counts_together():
    """The notebook's processes share one memory limit: together over it, the notebook stops."""
    results = _sandboxed(
        [
            job("01_input", [SPREAD], [("positional_encoding", None)]),
            job("07_softmax", _solution("07_softmax"), [("softmax", None)]),
        ],
        memory=768 << 20,
        timeout=300,
    )
    assert "memory" in (results["01_input"].error or ""), results["01_input"]
    assert judge("softmax", None, results["07_softmax"].outcomes[("softmax", None)]) is None


def test_the_key_never_reaches_the_child_even_without_the_sandbox(monkeypatch):
    """A grading kernel holds the key in its environment: the child it starts does not."""
    from mhsa_helpers.checks import KEY_VARIABLE

    monkeypatch.setenv(KEY_VARIABLE, "00" * 32)
    probe = (
        "import os\n"
        "def softmax(Z, axis=-1):\n"
        "    return float(any('MHSA' in k for k in os.environ))\n"
    )
    for wrapper in (None, sandbox.wrap):
        result = run_in_child([job("07_softmax", [probe], [("softmax", None)])], wrapper=wrapper)
        assert result["07_softmax"].outcomes[("softmax", None)][0].value == 0.0, wrapper


#: The cells replace the child's own measuring function in their process: it reports nothing.
FORGED_MEASURE = (
    FULL
    + """
import sys

_child = sys.modules["child.contract"]
_child._invoke = lambda fn, args, kwargs, guard, memory: (fn(*args, **kwargs), 0)

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    return _full(Q, K, V, causal)
"""
)


def test_what_a_measured_process_says_of_its_memory_does_not_count():
    """The resident growth is read from outside the process: its own report cannot lower it."""
    outcomes = _sandboxed([job("14_tiled", [FORGED_MEASURE], [("tiled_attention", None)])])
    found = outcomes["14_tiled"].outcomes[("tiled_attention", None)]
    verdict = judge("tiled_attention", None, found)
    assert verdict is not None and "memory" in verdict, verdict  # the bound or the growth


#: Full attention in a private buffer the cells reserved (untouched then); the process ends
#: the moment its reply is written, before anything could look at it.
EARLY_EXIT = (
    FULL
    + """
import mmap
import os
import sys

_child = sys.modules["child.notebook"]
_reply = _child.send_reply
_child.send_reply = lambda fd, m: (_reply(fd, m), m[1][:1] == ("measured",) and os._exit(0))
ROOM = mmap.mmap(-1, 4096 * 4096 * 8, flags=mmap.MAP_PRIVATE)

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    if Q.shape[-2] < 1024:
        return _full(Q, K, V, causal)
    S = np.frombuffer(ROOM, dtype=np.float64).reshape(4096, 4096)
    np.matmul(Q, np.swapaxes(K, -1, -2), out=S)
    S /= np.sqrt(Q.shape[-1])
    if causal:
        S[np.triu_indices(4096, 1)] = -np.inf
    S -= S.max(axis=-1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=-1, keepdims=True)
    return S @ V
"""
)


def test_a_measured_process_that_ends_at_once_is_measured_all_the_same():
    """Its peak of resident memory comes from the kernel when it ends, however it ends."""
    outcomes = _sandboxed([job("14_tiled", [EARLY_EXIT], [("tiled_attention", None)])])
    found = outcomes["14_tiled"].outcomes[("tiled_attention", None)]
    verdict = judge("tiled_attention", None, found)
    assert verdict is not None and "resident memory grew" in verdict, verdict


def test_a_crash_never_says_which_signal():
    """A signal number is a channel an answer could choose from a hidden input."""
    crash = "import os\ndef softmax(Z, axis=-1):\n    os.kill(os.getpid(), 31)\n"
    result = _sandboxed([job("07_softmax", [crash], [("softmax", None)])])["07_softmax"]
    assert result.error == "the answer cells crashed (killed by a signal)", result.error
