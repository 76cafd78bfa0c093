"""What the grade command asks a grading cluster's members: guarded, private, what they refused.

Every member of a cluster of several machines runs :mod:`autograders.guard`
(the README's ``--preload autograders.guard``): it refuses and keeps every
connection without the cluster's credentials, or that waits too long or
comes too often, and knows whether its scratch folder and ``sys.path`` are
private. :func:`check_cluster` asks every member when a grade run starts
and refuses a cluster where one is not guarded or is exposed;
:func:`cluster_refusals` asks again at the end, so that the summary names
every connection the cluster refused meanwhile (from where, to which
member, why). (The cluster the grade command makes on its own machine has
no port: :mod:`autograders.private_cluster`.)
"""

from __future__ import annotations

import contextlib
import uuid

__all__ = ["check_cluster", "cluster_refusals", "summary_lines"]


def _reports(client, token: str) -> dict:
    """``{(kind, address): report or the error that replaced it}`` for every member."""
    from autograders import guard

    found = {}
    for kind, run in (
        ("worker", lambda: client.run(guard.report, token, on_error="return")),
        ("nanny", lambda: client.run(guard.report, token, nanny=True, on_error="return")),
    ):
        with contextlib.suppress(ValueError):  # a cluster without nannies
            found.update({(kind, a): r for a, r in run().items()})
    try:
        found[("scheduler", client.scheduler.address)] = client.run_on_scheduler(
            guard.report, token
        )
    except Exception as exc:
        found[("scheduler", client.scheduler.address)] = exc
    return found


def check_cluster(client) -> str:
    """Refuse a cluster with a member that is not guarded or is exposed; the run's token.

    Returns
    -------
    str
        The grade run's token, for :func:`cluster_refusals`.

    Raises
    ------
    autograders.cluster.InsecureCluster
        Naming each member and what is wrong with it.
    """
    from autograders.cluster import InsecureCluster
    from autograders.ids import shown

    token = uuid.uuid4().hex
    problems = []
    for (kind, address), report in sorted(_reports(client, token).items()):
        if isinstance(report, BaseException) or not isinstance(report, dict):
            problems.append(f"the {kind} at {shown(address)} cannot say ({report!r:.200})")
            continue
        if not report["guarded"]:
            problems.append(
                f"the {kind} at {shown(address)} was not started with --preload "
                "autograders.guard (a worker's nanny: --preload-nanny autograders.guard)"
            )
        problems += [f"the {kind} at {shown(address)}: {e}" for e in report["exposures"]]
    if problems:
        raise InsecureCluster(
            "the cluster is not private to the grading account: "
            + "; ".join(problems)
            + " (see the README, 'Grading on a cluster')."
        )
    return token


def cluster_refusals(client, token: str) -> list:
    """Every connection the cluster's members refused since :func:`check_cluster` gave ``token``.

    Returns
    -------
    list of (str, str, str, int)
        ``(listener, remote, reason, count)``, sorted; refusals a member no
        longer keeps (it keeps the last thousand) are counted under "(not
        kept)".
    """
    found = {}
    for report in _reports(client, token).values():
        if not isinstance(report, dict):
            continue
        kept = report["refused"]["kept"]
        for _, listener, remote, reason in kept:
            key = (listener, remote, reason)
            found[key] = found.get(key, 0) + 1
        lost = report["refused"]["all"] - len(kept)
        if lost > 0:
            key = ("(not kept)", "(not kept)", "refused, not kept in detail")
            found[key] = found.get(key, 0) + lost
    return sorted((*key, n) for key, n in found.items())


def summary_lines(found: list) -> list[str]:
    """The summary's lines for the refusals ``found`` (:func:`cluster_refusals`), grouped.

    Returns
    -------
    list of str
        One line per remote host and reason: how many connections it tried
        and to which members' ports.
    """
    from autograders.ids import shown

    groups: dict = {}
    for listener, remote, reason, n in found:
        host = str(remote).split("://")[-1].rsplit(":", 1)[0]
        entry = groups.setdefault((host, reason), [0, set()])
        entry[0] += n
        entry[1].add(str(listener).rsplit(":", 1)[-1])
    return [
        f"{n} connection(s) from {shown(host)} to the grading cluster refused ({reason}), "
        f"to port(s) {', '.join(sorted(ports))}: someone without the cluster's credentials "
        "tried to reach the workers"
        for (host, reason), (n, ports) in sorted(groups.items())
    ]
