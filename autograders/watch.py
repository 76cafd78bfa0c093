"""Connections the grading cluster refused, counted where they were refused, for the summary.

Every listener of the grading cluster speaks Dask's TLS and asks each peer
for a certificate of the cluster's authority (:mod:`autograders.cluster`):
a peer without one is refused during the TLS handshake, and Dask logs it
("Listener on …: TLS handshake failed with remote …"). :func:`watch`,
run in the scheduler's and every nanny's and worker's process, keeps those
lines; :func:`refused` reads them back from each process at the end of a
grade run, so that the summary names every attempt to reach the workers
without the credentials (from where, to which member).
"""

from __future__ import annotations

import contextlib
import logging
import re

__all__ = ["cluster_refusals", "refused", "summary_lines", "watch", "watch_cluster"]

#: Dask's logger for TCP and TLS listeners.
LOGGER = "distributed.comm.tcp"
_FAILED = re.compile(r"Listener on '?([^' ]+)'?: TLS handshake failed with remote '?([^' ]+)'?")
_SEEN: list = []
#: At most this many refusals are kept per process (a scan could make thousands).
KEEP = 1000


class _Refusals(logging.Handler):
    """Keeps the listener's handshake failures; hands on to Dask's handlers what is an error."""

    def emit(self, record: logging.LogRecord) -> None:
        match = _FAILED.search(record.getMessage())
        if match and len(_SEEN) < KEEP:
            _SEEN.append((match.group(1), match.group(2)))
        if record.levelno >= logging.ERROR:
            logging.getLogger("distributed").handle(record)


def watch() -> bool:
    """Start keeping, in this process, the connections Dask's listeners refuse (idempotent).

    Returns
    -------
    bool
        True (so that ``Client.run`` has a value to return).
    """
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(h, _Refusals) for h in logger.handlers):
        logger.addHandler(_Refusals(logging.WARNING))
        logger.setLevel(logging.WARNING)  # the cluster's silenced logs would drop them
        logger.propagate = False  # kept here, not printed; errors are handed on
    return True


def refused() -> list:
    """``[(listener address, remote address), …]`` this process refused since :func:`watch`."""
    return list(_SEEN)


def _everywhere(client, fn) -> list:
    """``fn()`` in the scheduler's, every worker's and every nanny's process (where it runs)."""
    out = []
    for kwargs in ({}, {"nanny": True}):
        with contextlib.suppress(Exception):  # a member that cannot run it says nothing
            out += list(client.run(fn, **kwargs).values())
    with contextlib.suppress(Exception):
        out.append(client.run_on_scheduler(fn))
    return out


def watch_cluster(client) -> None:
    """:func:`watch` in every member of ``client``'s cluster (this process too)."""
    watch()
    _everywhere(client, watch)


def cluster_refusals(client) -> list:
    """Every connection the members of ``client``'s cluster refused, each once, sorted."""
    found = {tuple(pair) for pairs in _everywhere(client, refused) for pair in pairs}
    return sorted(found | set(refused()))


def summary_lines(found: list) -> list[str]:
    """The summary's lines for the refusals ``found`` (``(listener, remote)`` pairs), grouped.

    Parameters
    ----------
    found : list of (str, str)
        Every refused connection, from every member of the cluster.

    Returns
    -------
    list of str
        One line per remote host: how many connections without the
        cluster's credentials it tried, and to which members' ports.
    """
    from autograders.ids import shown

    by_host: dict = {}
    for listener, remote in found:
        host = str(remote).split("://")[-1].rsplit(":", 1)[0]
        by_host.setdefault(host, []).append(str(listener).rsplit(":", 1)[-1])
    return [
        f"{len(ports)} connection(s) from {shown(host)} to the grading cluster without its "
        f"credentials (refused: TLS handshake failed), to port(s) "
        f"{', '.join(sorted(set(ports), key=str))}: someone tried to reach the workers"
        for host, ports in sorted(by_host.items())
    ]
