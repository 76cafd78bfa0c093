"""What another account on the grading machine tries against the grade command's Dask cluster.

A Dask scheduler, nanny or worker runs the functions a connected peer
sends it (``run_function``, ``run``), as the account that started it: the
instructor's. This module tries that on every port it is given, each way a
student could: Dask's own ``Client`` over ``tcp://`` and over ``tls://``
with credentials of its own, and Dask's wire protocol directly (say who you
are, then run ``os.getuid``) over ``tcp://``, over ``tls://`` with no
certificate and with a self-signed one, never checking the server's. And,
as Dask also starts plain HTTP servers beside its schedulers and workers,
the pages they serve by default (the cluster's workers and tasks, metrics).

Imported, :func:`attack` reports on each port. Run as a script by another
account, ``python -c "$(cat tests/support/dask_attack.py)" PORTS_FILE``, it waits for
``PORTS_FILE`` (a JSON list of ports) to appear, attacks those ports on
127.0.0.1 and prints the report as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import sys
import tempfile
import time
from pathlib import Path

TIMEOUT = 5  # seconds to connect; an attempt gets twice that; all of them run at once


def live(port: int) -> bool:
    """True if a plain TCP connection to ``127.0.0.1:port`` is accepted (something listens)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT):
            return True
    except OSError:
        return False


def _contexts(folder: Path) -> dict:
    """TLS contexts a student can make: none checks the server; one shows a self-signed cert."""
    from distributed.security import Security

    own = Security.temporary()  # a certificate and key of the student's own
    (folder / "own.pem").write_text(own.tls_client_cert)
    (folder / "own-key.pem").write_text(own.tls_client_key)
    contexts = {}
    for name, cert in (("no certificate", False), ("own certificate", True)):
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if cert:
            ctx.load_cert_chain(folder / "own.pem", folder / "own-key.pem")
        contexts[name] = ctx
    return {"own": own, **contexts}


async def _wire(address: str, **connection_args) -> str:
    """Say who you are to ``address``, then have it run ``os.getuid``; what it answered."""
    from distributed.comm import connect
    from distributed.protocol.pickle import dumps

    comm = await connect(address, timeout=TIMEOUT, **connection_args)
    try:
        await comm.write({"op": "identity", "reply": True})
        who = await comm.read()
        kind = who.get("type") if isinstance(who, dict) else who
        op = "run_function" if kind == "Scheduler" else "run"
        await comm.write({"op": op, "function": dumps(os.getuid), "reply": True})
        return f"BREACH: a {kind} ran os.getuid: {await comm.read()!r}"
    finally:
        comm.abort()


async def _client(address: str, security=None) -> str:
    """Connect a ``distributed.Client`` to ``address``; have every worker run ``os.getuid``."""
    from distributed import Client

    async with Client(
        address, security=security, asynchronous=True, timeout=TIMEOUT, set_as_default=False
    ) as client:
        return f"BREACH: a Client ran os.getuid on the workers: {await client.run(os.getuid)!r}"


#: Pages Dask's HTTP servers serve by default: the scheduler's workers, its identity
#: (task counts, workers), Prometheus metrics (task names), and the health check.
PAGES = ("/info/main/workers.html", "/json/identity.json", "/metrics", "/health")


async def _http(port: int) -> str:
    """GET each of :data:`PAGES` on ``port``; which ones answered."""
    import urllib.error
    import urllib.request

    def get(path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=TIMEOUT) as r:
                return f"{path} {r.status}"
        except urllib.error.HTTPError as exc:
            return f"{path} {exc.code}"

    answers = [await asyncio.to_thread(get, path) for path in PAGES]
    served = [a for a in answers if a.endswith(" 200")]
    if served:
        return f"BREACH: HTTP pages served: {', '.join(served)}"
    return f"refused: HTTP {', '.join(answers)}"


async def _try(attempt) -> str:
    try:
        return await asyncio.wait_for(attempt, 2 * TIMEOUT)  # Dask on an HTTP port never ends
    except Exception as exc:  # every way of failing is a refusal
        return f"refused: {type(exc).__name__}: {str(exc)[:200]}"


async def _attack(ports: list, security) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="attack-"))
    ctx = _contexts(folder)
    attempts = {}
    for port in ports:
        tcp, tls = f"tcp://127.0.0.1:{port}", f"tls://127.0.0.1:{port}"
        if security is not None:  # the cluster's own credentials: the control
            attempts[port] = {
                "wire over tls://, the cluster's credentials": lambda tls=tls: _wire(
                    tls, **security.get_connection_args("client")
                )
            }
            continue
        attempts[port] = {
            "Client over tcp://": lambda tcp=tcp: _client(tcp),
            "Client over tls://, own credentials": lambda tls=tls: _client(tls, ctx["own"]),
            "wire over tcp://": lambda tcp=tcp: _wire(tcp),
            "wire over tls://, no certificate": lambda tls=tls: _wire(
                tls, ssl_context=ctx["no certificate"]
            ),
            "wire over tls://, own certificate": lambda tls=tls: _wire(
                tls, ssl_context=ctx["own certificate"]
            ),
            "HTTP": lambda port=port: _http(port),
        }
    names = [(port, name) for port in attempts for name in attempts[port]]
    results = await asyncio.gather(*(_try(attempts[p][n]()) for p, n in names))
    report = {port: {} for port in ports}
    for (port, name), result in zip(names, results, strict=True):
        report[port][name] = result
    return report


def attack(ports: list, security=None) -> dict:
    """Try to run code through every port in ``ports`` (on 127.0.0.1), each way at once.

    Parameters
    ----------
    ports : list of int
        The ports to attack.
    security : distributed.security.Security, optional
        If given, attack with these credentials only (the control: a peer
        that has the cluster's credentials gets in).

    Returns
    -------
    dict
        ``{port: {"live before": bool, "attempts": {way: "refused: …" or
        "BREACH: …"}, "live after": bool}}``; "live" is a plain TCP connect.
    """
    before = {port: live(port) for port in ports}
    results = asyncio.run(_attack(ports, security))
    return {
        port: {"live before": before[port], "attempts": results[port], "live after": live(port)}
        for port in ports
    }


def main(argv: list) -> int:
    """As a script: wait for the ports file ``argv[0]``, attack, print the JSON report.

    Parameters
    ----------
    argv : list of str
        The ports file (a JSON list of ports, written whole) and, optionally,
        how many seconds to wait for it (default 600).

    Returns
    -------
    int
        0, or 1 if the ports file never appeared.
    """
    ports_file = Path(argv[0])
    deadline = time.monotonic() + (float(argv[1]) if len(argv) > 1 else 600)
    while not ports_file.exists():
        if time.monotonic() > deadline:
            print(json.dumps({"error": f"{ports_file} never appeared"}))
            return 1
        time.sleep(0.05)
    report = attack(json.loads(ports_file.read_text()))
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
