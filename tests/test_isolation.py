"""One call at a time: answer code never reaches another call's inputs.

The red team walked ``sys._getframe()`` up to the child's list of calls and
saw every input, hidden ones included, and computed full attention for the
memory-measured call before it was measured. Here the same probes run
against the child: each call's process holds its own inputs only, and a
measured call runs in a process that has seen no other.
"""

import numpy as np
import pytest

from mhsa_helpers.checks import job, judge
from mhsa_helpers.execution.in_child import Job, run_in_child
from mhsa_helpers.execution.saved import answer_sources
from tests.support import nbgrader_course as nc

#: Marker inputs: call k gets np.full(7, BASE + k).
BASE = 1000.0

PROBE = """
import gc
import struct
import sys

def _arrays(obj, depth=0):
    if isinstance(obj, np.ndarray):
        yield obj
    elif depth < 5 and isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _arrays(o, depth + 1)
    elif depth < 5 and isinstance(obj, dict):
        for o in list(obj.values()):
            yield from _arrays(o, depth + 1)

def _markers(objects, calls):
    found = set()
    for obj in objects:
        if isinstance(obj, (bytes, bytearray, memoryview)):
            raw = bytes(obj)
            found |= {k for k in range(calls) if struct.pack("<d", BASE + k) * 7 in raw}
            continue
        for a in _arrays(obj):
            if a.shape == (7,) and a.dtype == np.float64 and a[0] >= BASE and np.all(a == a[0]):
                found.add(int(a[0] - BASE))
    return found

def _everything():
    seen, frame = [], sys._getframe()
    while frame is not None:  # every frame of this process, the child's own included
        seen += list(frame.f_locals.values()) + list(frame.f_globals.values())
        frame = frame.f_back
    return seen + gc.get_objects()

AT_START = _markers(_everything(), CALLS)  # what the cells could see before any call

def softmax(x):
    mine = int(x[0] - BASE)
    return np.array(sorted((_markers(_everything(), CALLS) | AT_START) - {mine}), dtype=float)
"""


def _probe_job(calls: int, measured: set) -> Job:
    requests = [
        ((np.full(7, BASE + k),), {}, {"memory": k in measured, "strict": True})
        for k in range(calls)
    ]
    source = f"BASE = {BASE}\nCALLS = {calls}\n" + PROBE
    return Job("probe", [source], [("probe", "softmax", requests)])


@pytest.mark.slow  # a real child process
def test_no_call_sees_another_calls_inputs_frames_gc_or_bytes():
    """Frames (the child's own too), gc.get_objects() and raw bytes: only the call's inputs."""
    calls, measured = 8, {3, 6}
    result = run_in_child([_probe_job(calls, measured)])["probe"]
    assert result.error is None, result.error
    outcomes = result.outcomes["probe"]
    assert len(outcomes) == calls and all(o.error is None for o in outcomes), outcomes
    for k, o in enumerate(outcomes):
        assert o.value.tolist() == [], f"call {k} saw the inputs of calls {o.value.tolist()}"
    assert [o.peak is not None for o in outcomes] == [k in measured for k in range(calls)]


@pytest.mark.slow  # a real child process
def test_the_probe_would_see_inputs_that_were_there():
    """The probe works: inputs a call keeps in a global are seen by the next call."""
    calls = 3
    job_ = _probe_job(calls, set())
    job_.sources[0] += (
        "\n_probe = softmax\nKEPT = []\ndef softmax(x):\n    KEPT.append(x)\n    return _probe(x)\n"
    )
    outcomes = run_in_child([job_])["probe"].outcomes["probe"]
    assert [o.value.tolist() for o in outcomes] == [[], [0.0], [0.0, 1.0]]


PRECOMPUTE = '''
import gc
import sys

CACHE = {}

def _scan():
    """Look everywhere for the measured call's inputs and compute their answer early."""
    frame, seen = sys._getframe(), []
    while frame is not None:
        seen += list(frame.f_locals.values())
        frame = frame.f_back
    for obj in seen + gc.get_objects():
        items = obj if isinstance(obj, (tuple, list)) else ()
        arrays = [a for a in items if isinstance(a, np.ndarray) and a.shape[0] >= 2048]
        if len(arrays) >= 3:
            Q, K, V = arrays[:3]
            CACHE[Q.shape] = mh.attention_head(Q, K, V)[0]

_scan()  # at cell time

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    if Q.shape in CACHE:
        return CACHE[Q.shape]  # precomputed: no memory used now
    _scan()  # and at every call
    T_q, T_k = Q.shape[-2], K.shape[-2]
    mask = np.triu(np.full((T_q, T_k), -np.inf), 1) if causal else None
    return mh.attention_head(Q, K, V, mask)[0]
'''


@pytest.mark.slow  # a real child process
def test_a_measured_call_cannot_be_computed_before_it_is_measured():
    """Precomputing full attention at cell time or in an earlier call finds nothing to use."""
    seed = None  # the visible test measures memory
    result = run_in_child([job("14_tiled", [PRECOMPUTE], [("tiled_attention", seed)])])
    outcomes = result["14_tiled"].outcomes[("tiled_attention", seed)]
    verdict = judge("tiled_attention", seed, outcomes)
    assert verdict is not None and "memory bound" in verdict, verdict
    honest = next(
        s for s in answer_sources(nc.SOLUTIONS / "14_tiled.ipynb") if "def tiled_attention" in s
    )
    result = run_in_child([job("14_tiled", [honest], [("tiled_attention", seed)])])
    assert (
        judge("tiled_attention", seed, result["14_tiled"].outcomes[("tiled_attention", seed)])
        is None
    )


FORGER = """
import os
import sys
frame = sys._getframe()
while frame is not None and frame.f_code.co_name != "_serve_parent":
    frame = frame.f_back
m = sys.modules["child.wire"]
stolen = []
try:
    while (request := m.read_frame(frame.f_locals["stdin"])) is not None:
        stolen.append(request)
except Exception as exc:
    stolen.append(type(exc).__name__)
try:
    forged = ("outcome", ("value", 0.0))
    os.write(frame.f_locals["out"], m.pack_frame(b"R", __import__("pickle").dumps(forged)))
    stolen.append("wrote")
except Exception as exc:
    stolen.append(type(exc).__name__)
STOLEN = stolen
def positional_encoding(seq_len, d_model):
    raise ValueError(repr(STOLEN)[:200])
"""


@pytest.mark.slow  # a real child process
def test_an_answer_can_neither_read_later_requests_nor_forge_replies():
    """Walk to the child's main loop: its stdin and stdout are closed in the notebook's process."""
    jobs = [
        job("01_input", [FORGER], [("positional_encoding", None)]),
        job(
            "07_softmax",
            ["def softmax(Z, axis=-1):\n    raise NotImplementedError()\n"],
            [("softmax", None)],
        ),
    ]
    results = run_in_child(jobs)
    first = judge(
        "positional_encoding", None, results["01_input"].outcomes[("positional_encoding", None)]
    )
    assert "OSError" in first and "wrote" not in first, first  # neither channel was reachable
    verdict = judge("softmax", None, results["07_softmax"].outcomes[("softmax", None)])
    assert "not implemented yet" in verdict  # job 2's own result, not a forged one


#: A helper started by the notebook's own process (detached, so a group kill misses it)
#: computes full attention for the measured call, which reaches it through a unix socket.
OFFLOAD = """
import os
import pickle
import socket

PATH = "/tmp/helper.sock"

def _serve():
    server = socket.socket(socket.AF_UNIX)
    server.bind(PATH)
    server.listen()
    while True:
        conn, _ = server.accept()
        data = b""
        while chunk := conn.recv(1 << 20):
            data += chunk
            if data.endswith(b"END"):
                break
        Q, K, V, causal = pickle.loads(data[:-3])
        mask = np.triu(np.full((Q.shape[-2],) * 2, -np.inf), 1) if causal else None
        conn.sendall(pickle.dumps(mh.attention_head(Q, K, V, mask)[0]))
        conn.close()

if not os.path.exists(PATH) and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        _serve()
    os._exit(0)

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    for _ in range(100):
        try:
            conn = socket.socket(socket.AF_UNIX)
            conn.connect(PATH)
            break
        except OSError:
            __import__("time").sleep(0.05)
    conn.sendall(pickle.dumps((Q, K, V, causal)) + b"END")
    conn.shutdown(socket.SHUT_WR)
    data = b""
    while chunk := conn.recv(1 << 20):
        data += chunk
    return pickle.loads(data)
"""


@pytest.mark.slow  # a real child process
def test_a_helper_process_cannot_compute_a_measured_call_in_the_sandbox():
    """In the sandbox, every process but the child's own is gone before a measured call."""
    from autograders import sandbox

    outcomes = run_in_child(
        [job("14_tiled", [OFFLOAD], [("tiled_attention", None)])],
        wrapper=sandbox.wrap,
        contained=True,
    )["14_tiled"].outcomes[("tiled_attention", None)]
    verdict = judge("tiled_attention", None, outcomes)
    assert verdict is not None, "the helper computed the measured call"
    assert [o.peak for o in outcomes if o.peak is not None] == [], outcomes  # no measured value
