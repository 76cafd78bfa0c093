"""The whole suite on several workers (the README's ``pytest -n auto --dist loadgroup``).

A module's slow tests share fixtures built once per worker (a graded class, a
JupyterLab): tests/conftest.py puts them in one pytest-xdist group, and this
checks that pytest-xdist really keeps such a group in one worker (it cannot with
every pytest: requirements-dev.txt pins a pair that fits).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # pytest itself, with two workers, in a child process

PROBE = """
import os

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("i", range(6))
def test_probe(i):
    with open(os.environ["PROBE_LOG"], "a") as f:
        f.write(f"{__name__} {os.environ.get('PYTEST_XDIST_WORKER', 'no worker')}\\n")
"""


def test_a_modules_slow_tests_run_in_one_worker(tmp_path):
    """Check that under ``--dist loadgroup`` each module's six slow tests share one worker."""
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n"
    )
    modules = ["test_probe_a", "test_probe_b"]
    for module in modules:
        (tmp_path / f"{module}.py").write_text(PROBE)
    log = tmp_path / "workers.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            *(str(tmp_path / f"{m}.py") for m in modules),
        ],
        cwd=tmp_path,
        env={**env, "PROBE_LOG": str(log), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = [line.split() for line in log.read_text().splitlines()]
    assert sorted(m for m, _ in ran) == sorted(modules * 6), ran
    for module in modules:
        workers = {w for m, w in ran if m == module}
        assert len(workers) == 1 and workers != {"no worker"}, (module, ran)
