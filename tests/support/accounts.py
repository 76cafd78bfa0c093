"""Other accounts on the grading machine, for tests that play a student against the instructor.

The suite runs as root (the instructor); a student is a real, unprivileged
system account (``nobody``, ``daemon``, ``bin`` …) whose commands run with
``setpriv`` under that account's uid and gid, with no capabilities. pytest's
own temporary folders are private to root, so what a student must reach
(their home, the exchange) lives in a folder made here, under ``/tmp``,
that every account can traverse.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

__all__ = ["home_of", "need_root", "run_as", "shared_folder", "start_as"]


def need_root() -> None:
    """Skip the calling test unless it runs as root (it must act as other accounts)."""
    if os.geteuid() != 0:
        pytest.skip("acting as another account needs root")


@contextlib.contextmanager
def shared_folder(prefix: str = "mhsa-shared-"):
    """A new folder under ``/tmp`` that every account can traverse (mode 0755), removed after."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def home_of(account: str, parent: Path) -> Path:
    """A home folder for ``account`` in ``parent`` (a :func:`shared_folder`), owned by it."""
    entry = pwd.getpwnam(account)
    home = parent / f"home-{account}"
    home.mkdir(exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)
    return home


def _setpriv(entry, *flags: str) -> list:
    return ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", *flags, "--"]


def run_as(
    account: str,
    argv: list,
    home: Path,
    cwd: Path | None = None,
    env: dict | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    """Run ``argv`` as ``account`` (its uid, gid and groups; no capabilities); text output.

    ``home`` is the account's home (:func:`home_of`); the environment is
    this one's ``PATH`` with this interpreter's folder first, plus ``env``.
    """
    command, environment = _as(account, argv, home, env)
    return subprocess.run(
        command,
        cwd=cwd or home,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_as(account: str, argv: list, home: Path, env: dict | None = None) -> subprocess.Popen:
    """Start ``argv`` as ``account``, as :func:`run_as` runs it, without waiting for it.

    Its output goes to pipes (text); the caller waits for it, or ends it
    by its process id.
    """
    command, environment = _as(account, argv, home, env)
    return subprocess.Popen(
        command,
        cwd=home,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _as(account: str, argv: list, home: Path, env: dict | None) -> tuple[list, dict]:
    """The command line that runs ``argv`` as ``account``, and its environment."""
    entry = pwd.getpwnam(account)
    python = Path(sys.executable)
    probe = subprocess.run(
        [*_setpriv(entry, "--clear-groups"), str(python), "-c", "pass"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise AssertionError(
            f"account {account!r} cannot run this interpreter ({python}): {probe.stderr.strip()}; "
            "the checkout and its .venv must be readable by every account."
        )
    environment = {
        "HOME": str(home),
        "USER": account,
        "LOGNAME": account,
        "PATH": str(python.parent) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        **(env or {}),
    }
    drop = _setpriv(entry, "--init-groups", "--inh-caps=-all", "--bounding-set=-all")
    return [*drop, *map(str, argv)], environment
