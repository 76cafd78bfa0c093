"""A real Dask cluster for the tests: TLS certificates, a scheduler and two workers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support import nbgrader_course as nc

DASK = str(Path(sys.executable).parent / "dask")


#: As the README says: Dask's HTTP servers (plain HTTP, outside TLS) serve no pages.
NO_HTTP = {
    "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES": "[]",
    "DASK_DISTRIBUTED__WORKER__HTTP__ROUTES": "[]",
}


def _start(
    args, cwd: Path, log: Path, env: dict | None = None, guarded: bool = True
) -> subprocess.Popen:
    """``dask ARGS`` as the README starts a member: guarded, its scratch in a 0700 folder."""
    cwd.mkdir(parents=True, exist_ok=True)
    scratch = cwd / "scratch"
    scratch.mkdir(mode=0o700, exist_ok=True)
    private = {"DASK_TEMPORARY_DIRECTORY": str(scratch)}
    guard = ["--preload", "autograders.guard"] if guarded else []
    return subprocess.Popen(
        [DASK, *args[:1], *guard, *args[1:]],
        cwd=cwd,
        env={**nc.env(), **NO_HTTP, **private, **(env or {})},
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def scheduler(tmp: Path, tls: list, env: dict | None = None, guarded: bool = True):
    """A TLS ``dask scheduler`` on loopback, as the README starts it: (process, address)."""
    info = tmp / "scheduler.json"
    args = ["scheduler", "--host", "127.0.0.1", "--protocol", "tls", "--port", "0"]
    args += ["--no-dashboard", "--scheduler-file", str(info), *tls]
    proc = _start(args, tmp / "scheduler", tmp / "scheduler.log", env, guarded)
    deadline = time.monotonic() + 120
    while not info.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    if not info.exists():
        proc.kill()
        raise AssertionError(f"no scheduler: {(tmp / 'scheduler.log').read_text()}")
    return proc, json.loads(info.read_text())["address"]


def certificates(folder: Path) -> list:
    """Make the cluster's certificates with ``cluster-certs``; the TLS options that name them."""
    subprocess.run(
        [sys.executable, "-m", "autograders", "cluster-certs", str(folder)],
        check=True,
        capture_output=True,
        env=nc.env(),
    )
    return [
        "--tls-ca-file",
        str(folder / "ca.pem"),
        "--tls-cert",
        str(folder / "cluster.pem"),
        "--tls-key",
        str(folder / "cluster-key.pem"),
    ]


def security(tls: list):
    """A client's Security from the TLS options :func:`certificates` returns."""
    from distributed.security import Security

    ca, cert, key = tls[1::2]
    return Security(
        require_encryption=True, tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key
    )


@contextlib.contextmanager
def cluster(tmp: Path, allowed_failures: int = 3):
    """A TLS ``dask scheduler`` and two single-threaded ``dask worker`` processes.

    Yields (address, worker processes, TLS options, scheduler process). ``allowed_failures``:
    how many workers may die running one task before Dask gives up on it
    (3 is Dask's default).
    """
    tmp.mkdir(parents=True, exist_ok=True)
    tls = certificates(tmp / "certs")
    first, address = scheduler(
        tmp, tls, {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(allowed_failures)}
    )
    procs = [first]
    try:
        workers = [
            _start(
                [
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--nworkers",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    *tls,
                ],
                tmp / f"worker{k}",
                tmp / f"worker{k}.log",
            )
            for k in (1, 2)
        ]
        procs += workers
        from distributed import Client

        assert address.startswith("tls://"), address
        with Client(address, timeout=120, security=security(tls)) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, workers, tls, procs[0]
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
