"""The code base passes ruff (lint and format) as configured in pyproject.toml."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_ruff(*args):
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_ruff_check():
    r = run_ruff("check", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format():
    r = run_ruff("format", "--check", ".")
    assert r.returncode == 0, r.stdout + r.stderr
