"""Running the page's modules (``mhsa_helpers/widgets/front/*.js``) under Node.js in tests."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

NODE_AT_LEAST = (20, 19)  # module syntax detection: a .js ES module without "type": "module"


def node() -> str:
    """The ``node`` command, or a failure that says what is missing."""
    found = shutil.which("node")
    if found is None:
        pytest.fail(
            "node is not on PATH: the static book's widgets are JavaScript, and these tests run "
            "them with Node.js 20.19 or newer (https://nodejs.org, or NodeSource's packages)."
        )
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout.strip()
    if tuple(int(n) for n in re.findall(r"\d+", version)[:2]) < NODE_AT_LEAST:
        pytest.fail(f"Node.js 20.19 or newer is needed (ES modules as .js), but found {version}.")
    return found


def run_json(script: Path, payload, timeout: float = 120):
    """What ``script`` writes (JSON on stdout) for ``payload`` (JSON on stdin)."""
    run = subprocess.run(
        [node(), str(script)], input=json.dumps(payload), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert run.returncode == 0, f"node {script.name} failed:\n{run.stderr}"
    return json.loads(run.stdout)
