"""The grader's sandbox: what an answer can see, reach and leave behind."""

import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from autograders import sandbox
from mhsa_helpers.checks import job as Job
from mhsa_helpers.checks import judge
from mhsa_helpers.execution.in_child import run_in_child
from tests.support import nbgrader_course as nc

REPORT = """
def softmax(Z, axis=-1):
    raise ValueError(repr(FOUND))
"""


def probe(source: str) -> str:
    """Run ``source`` (which sets FOUND) in the sandbox; return what it found."""
    result = run_in_child(
        [Job("07_softmax", [source + REPORT], [("softmax", None)])], wrapper=sandbox.wrap
    )
    assert result["07_softmax"].error is None, result["07_softmax"].error
    verdict = judge("softmax", None, result["07_softmax"].outcomes[("softmax", None)])
    return verdict.split("raised ValueError: ", 1)[1]


@pytest.mark.slow  # a real child process
def test_the_course_is_invisible():
    paths = [
        nc.SOLUTIONS / "07_softmax.ipynb",
        nc.ROOT / "mhsa_helpers" / "reference" / "steps.py",
        nc.ROOT / "autograders" / "grade.py",
        nc.ROOT / "README.md",
    ]
    assert all(p.exists() for p in paths)  # outside the sandbox, every one is there
    found = probe(
        "import os\n"
        f"FOUND = [os.path.exists(p) for p in {[str(p) for p in paths]!r}]\n"
        "try:\n    import mhsa_helpers\n    FOUND.append('imported')\n"
        "except ImportError:\n    FOUND.append('no import')\n"
    )
    assert found == repr([False, False, False, False, "no import"])


@pytest.mark.slow  # a real child process
def test_the_network_is_out_of_reach():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        found = probe(
            "import socket\ns = socket.socket()\ns.settimeout(5)\n"
            f"FOUND = s.connect_ex(('127.0.0.1', {port}))\n"
        )
    finally:
        server.close()
    assert found != "0"  # refused inside: the sandbox's loopback is its own


@pytest.mark.slow  # a real child process
def test_scratch_space_is_private_and_the_system_read_only():
    host_file = Path("/tmp") / f"host-{uuid.uuid4().hex}"
    host_file.write_text("another user's file")
    try:
        found = probe(
            "import os\nopen('/tmp/mine', 'w').write('x')\n"
            f"FOUND = ['mine' in os.listdir('/tmp'), os.path.exists({str(host_file)!r})]\n"
            "try:\n    open('/usr/evil', 'w')\n    FOUND.append('wrote /usr')\n"
            "except OSError:\n    FOUND.append('read-only')\n"
        )
    finally:
        host_file.unlink()
    assert found == repr([True, False, "read-only"])
    assert not Path("/tmp/mine").exists()


@pytest.mark.slow  # a real child process
def test_no_process_outlives_the_sandbox():
    marker = f"sandbox-daemon-{uuid.uuid4().hex}"
    probe(
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)  # {marker}'],"
        " start_new_session=True)\nFOUND = 'started'\n"
    )
    # The namespace's processes are killed as it ends; wait for the kernel to finish.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        alive = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
        if alive.stdout.strip() == "":
            break
        time.sleep(0.2)
    assert alive.stdout.strip() == "", "a process started by an answer outlived its sandbox"


@pytest.mark.slow  # a real child process
def test_the_childs_own_channels_are_out_of_reach():
    """No answer can reopen the child's stdin (later jobs) or stdout (results) through /proc."""
    found = probe(
        "import os\nFOUND = []\n"
        "for n in range(8):\n"
        "    try:\n"
        "        os.close(os.open(f'/proc/{os.getppid()}/fd/{n}', os.O_RDONLY | os.O_NONBLOCK))\n"
        "        FOUND.append(n)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    assert found == "[]"
