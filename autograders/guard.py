"""A grading cluster's member, guarded: ``dask scheduler|worker --preload autograders.guard``.

The members of a cluster of several machines (the README's ``dask
scheduler`` and ``dask worker`` lines) listen on the network, where any
account can open a connection. Dask's TLS refuses a peer without the
cluster's certificate, but only once the peer has finished a handshake, for
which Dask waits with no time limit and with no limit on how many. Loaded
as a preload (``--preload autograders.guard``, and ``--preload-nanny`` for a
worker's nanny), this module, imported before the member listens:

* replaces Dask's ``tls://`` listener in this process by
  :class:`GuardedTLSListener`: a peer has :data:`HANDSHAKE_SECONDS` to
  complete its TLS handshake; at most :data:`PER_ADDRESS` connections from
  one address, and :data:`PENDING` in all, may be waiting for theirs (the
  oldest is closed to make room for a new one); every
  connection refused (no or a wrong certificate, no handshake in time, over
  a limit, closed before its handshake) is kept, with its time, where it
  came from, the listener and why (:func:`refusals`);
* ends a member whose scratch folder (Dask's ``temporary-directory``,
  where it puts its work and which it puts first on ``sys.path``) or any
  folder on ``sys.path`` another account can write or replace
  (:func:`exposures`) as it starts, saying why; else sends its temporary
  files there.

The grade command asks every member for :func:`report` when it starts
(it refuses a member without the guard or with an exposure) and again when
it ends (the summary names every refused connection since it started).
"""

from __future__ import annotations

import asyncio
import collections
import os
import stat
import sys
import tempfile
import time
from pathlib import Path

import dask
from distributed.comm import registry
from distributed.comm.addressing import parse_host_port
from distributed.comm.tcp import TLSBackend, TLSListener

__all__ = [
    "HANDSHAKE_SECONDS",
    "PENDING",
    "PER_ADDRESS",
    "GuardedTLSListener",
    "dask_setup",
    "exposures",
    "refusals",
    "report",
]

#: Seconds a peer has to complete its TLS handshake.
HANDSHAKE_SECONDS = 10.0
#: Connections from one address that may wait for their handshake at once.
PER_ADDRESS = 8
#: Connections that may wait for their handshake at once, from anywhere.
PENDING = 64
#: Refused connections kept in this process (the oldest go first); the count is kept in full.
KEEP = 1000

_refused: collections.deque = collections.deque(maxlen=KEEP)
_counted = [0]
_waiting: list = []  # (host, stream) of the connections waiting for their handshake, oldest first
_dropped: dict = {}  # id(stream): why it was closed while waiting
_marks: dict = {}  # a grade run's token: when it started, by this member's clock


def _refuse(listener: str, remote: str, reason: str) -> None:
    _refused.append((time.time(), listener, remote, reason))
    _counted[0] += 1


def refusals(since: tuple = (0.0, 0)) -> dict:
    """The connections this process refused since ``since``.

    Parameters
    ----------
    since : (float, int)
        A ``time.time()`` and how many refusals had been counted by then.

    Returns
    -------
    dict
        ``{"kept": [(time, listener, remote, reason), …], "all": n}``: the
        refusals since then that are still kept (the last :data:`KEEP`) and
        how many there were in all.
    """
    kept = [r for r in _refused if r[0] >= since[0]]
    return {"kept": kept, "all": _counted[0] - since[1]}


class GuardedTLSListener(TLSListener):
    """Dask's TLS listener with a handshake time limit and limits on waiting connections.

    A connection over a limit does not shut out the next one: the oldest
    waiting connection from that address (or, over :data:`PENDING`, from
    anywhere) is closed instead, so a peer with the cluster's credentials,
    whose handshake takes milliseconds, still gets in beside idle ones.
    """

    async def _prepare_stream(self, stream, address):
        here = self.listen_address  # while it listens: it may stop during the handshake
        host = parse_host_port(address.split("://", 1)[-1])[0]
        same = [s for h, s in _waiting if h == host]
        if len(same) >= PER_ADDRESS:
            _drop(same[0], f"more than {PER_ADDRESS} connections from one address waiting")
        elif len(_waiting) >= PENDING:
            _drop(_waiting[0][1], f"more than {PENDING} connections waiting")
        entry = (host, stream)
        _waiting.append(entry)
        try:
            await asyncio.wait_for(stream.wait_for_handshake(), HANDSHAKE_SECONDS)
        except TimeoutError:
            why = f"no TLS handshake within {HANDSHAKE_SECONDS:g} s"
        except Exception as exc:  # every way a handshake fails is a refusal, named
            why = _dropped.pop(id(stream), None) or _failed(exc)
        else:
            return stream
        finally:
            _waiting.remove(entry)
            _dropped.pop(id(stream), None)
        _refuse(here, address, why)
        stream.close()
        return None


def _failed(exc: BaseException) -> str:
    """A failed handshake, in a few words: OpenSSL's reason (no certificate, unknown CA …)."""
    error = getattr(exc, "real_error", None) or exc
    reason = getattr(error, "reason", None) or type(error).__name__
    if "EOF" in str(reason) or (error is exc and "Closed" in type(exc).__name__):
        return "closed before its TLS handshake"
    return f"TLS handshake failed: {str(reason)[:80]}"


def _drop(stream, why: str) -> None:
    """Close a connection still waiting for its handshake; its listener names ``why``."""
    _dropped[id(stream)] = f"closed before its handshake: {why}, the oldest is closed"
    stream.close()


class GuardedTLSBackend(TLSBackend):
    """Dask's ``tls://`` scheme with :class:`GuardedTLSListener`."""

    _listener_class = GuardedTLSListener


registry.backends["tls"] = GuardedTLSBackend()


def _others_can_change(path: Path, info: os.stat_result) -> bool:
    """True if an account other than this one (or root) can write or replace ``path``."""
    if info.st_uid not in (0, os.geteuid()):
        return True
    return bool(stat.S_IMODE(info.st_mode) & 0o022)


def _ours(path: Path) -> bool:
    """True if ``path`` exists and belongs to this account or root."""
    try:
        return os.lstat(path).st_uid in (0, os.geteuid())
    except OSError:
        return False


def _exposure(path: Path) -> str | None:
    """Why another account could change what ``path`` holds, or None: it and its parents."""
    path = Path(os.path.abspath(path))
    chain = [path, *path.parents]
    for i, folder in enumerate(chain):
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            if i == 0:  # a missing entry: whoever can write its parent can make it
                continue
            return f"{folder} is missing"
        if stat.S_ISLNK(info.st_mode):
            info = os.stat(folder)
        if _others_can_change(folder, info):
            if info.st_mode & stat.S_ISVTX and i and _ours(chain[i - 1]):
                continue  # /tmp: others cannot rename or delete what is ours in it
            return (
                f"{folder} (owner uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):04o}) "
                "can be written by another account"
            )
    return None


def exposures(server=None) -> list[str]:
    """What of this process another account could change: its scratch folder, its ``sys.path``.

    Parameters
    ----------
    server : distributed.core.Server, optional
        The member (its ``local_directory``).

    Returns
    -------
    list of str
        One sentence per exposure; empty when there is none.
    """
    found = []
    scratch = dask.config.get("temporary-directory", None)
    if not scratch:
        found.append(
            "Dask's temporary-directory is not set: its scratch space would be a fixed "
            f"name in {tempfile.gettempdir()}, which any account can make first (set "
            "DASK_TEMPORARY_DIRECTORY to a folder of mode 0700)"
        )
    else:
        from autograders.private_cluster import PrivateFolderError, check_private

        try:
            check_private(Path(scratch), "Dask's temporary-directory")
        except PrivateFolderError as exc:
            found.append(f"{exc} (`mkdir -p -m 700 {scratch}`)")
    places = [getattr(server, "local_directory", None), *sys.path]
    for entry in dict.fromkeys(p for p in places if p):
        why = _exposure(Path(entry))
        if why:
            found.append(f"sys.path or scratch entry {entry}: {why}")
    return found


def dask_setup(server) -> None:
    """Dask's preload hook: an exposed member ends here; else its temporary files go private.

    Dask logs and goes past an exception raised in a preload's hook, so an
    exposed member (:func:`exposures`) writes why on its standard error and
    ends at once, with exit status 3, before it runs anything for anyone.
    """
    found = exposures(server)
    if found:
        print(
            "autograders.guard: not starting this grading cluster member, which other "
            "accounts could reach: " + "; ".join(found),
            file=sys.stderr,
            flush=True,
        )
        os._exit(3)
    private = Path(dask.config.get("temporary-directory")) / f"tmp-{os.getpid()}"
    private.mkdir(mode=0o700, exist_ok=True)
    tempfile.tempdir = str(private)
    os.environ["TMPDIR"] = str(private)


def report(token: str, dask_worker=None, dask_scheduler=None) -> dict:
    """What the grade command asks each member (``Client.run``): guarded, exposed, refused.

    Parameters
    ----------
    token : str
        The grade run's: its first report marks when the run began, by this
        member's clock; a later one counts the refusals since then.

    Returns
    -------
    dict
        ``{"guarded": bool, "exposures": [...], "refused": refusals(since)}``;
        ``guarded`` is True when every listener of the member is a
        :class:`GuardedTLSListener`.
    """
    since = _marks.setdefault(token, (time.time(), _counted[0]))
    server = dask_worker or dask_scheduler
    listeners = getattr(server, "listeners", [])
    return {
        "guarded": bool(listeners) and all(isinstance(x, GuardedTLSListener) for x in listeners),
        "exposures": exposures(server),
        "refused": refusals(since),
    }
