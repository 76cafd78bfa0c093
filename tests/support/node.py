"""The ``node`` command for the tests of the page's JavaScript (``mhsa_helpers/widgets/front``)."""

import json
import re
import shutil
import subprocess

import pytest

#: Module syntax detection: a plain ``.js`` ES module loads without a ``package.json``.
NODE_AT_LEAST = (20, 19)


def node() -> str:
    """The ``node`` command, or a test failure that says what is missing."""
    found = shutil.which("node")
    if found is None:
        pytest.fail(
            "node is not on PATH: the pictures are drawn in the page by JavaScript, and these "
            "tests run it with Node.js 20.19 or newer (https://nodejs.org, or NodeSource's "
            "packages)."
        )
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout.strip()
    if tuple(int(n) for n in re.findall(r"\d+", version)[:2]) < NODE_AT_LEAST:
        pytest.fail(f"Node.js 20.19 or newer is needed (ES modules as .js), but found {version}.")
    return found


def run_json(script, payload, timeout: float = 120):
    """What ``script`` (a ``.mjs`` file) writes as JSON on stdout for ``payload`` on stdin."""
    run = subprocess.run(
        [node(), str(script)], input=json.dumps(payload), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert run.returncode == 0, f"node {getattr(script, 'name', script)} failed:\n{run.stderr}"
    return json.loads(run.stdout)
