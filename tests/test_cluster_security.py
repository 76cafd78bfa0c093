"""Issue 31: only the grade command reaches its Dask workers.

A Dask scheduler, nanny or worker runs whatever a connected peer sends, as
the account that started it. Every listening port of the grade command's
LocalCluster, and of a cluster set up as the README says, is Dask's TLS
with both ends showing a certificate of the cluster's authority: a peer
without the credentials (another account during a grade run, here
``nobody``) is refused each way it tries (:mod:`tests.support.dask_attack`), while
the very same attack with the credentials gets in (the control: the attack
is real), as it does on a LocalCluster set up as before. Dask's HTTP servers
(plain HTTP, outside TLS) serve nothing. The grade command refuses a
``tcp://`` cluster, and ``cluster-certs`` writes files only their owner reads.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support import nbgrader_course as nc
from tests.support.accounts import home_of, need_root, run_as, shared_folder
from tests.support.dask_attack import attack

ATTACK = Path(__file__).parent / "support" / "dask_attack.py"
slow = pytest.mark.slow  # real Dask processes (and, for the grade run, real grading)
#: The attack's refused Clients are collected unclosed (their loop has ended): Dask warns.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


# --------------------------------------------------------------------------
# what listens: the sockets of a process tree, as root (or its owner) sees them
# --------------------------------------------------------------------------
def process_tree(pid: int) -> list:
    """``pid`` and every process it started, as pids."""
    import psutil

    with contextlib.suppress(psutil.NoSuchProcess):
        return [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
    return []


def listening(pids: list) -> dict:
    """``{port: pid}`` for every TCP socket in LISTEN state that one of ``pids`` holds.

    A socket is matched by its inode: the links of ``/proc/PID/fd`` against
    ``/proc/net/tcp`` and ``tcp6``, so another program's port never counts.
    """
    inodes = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        inodes[link[len("socket:[") : -1]] = pid
    ports = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports[int(fields[1].rsplit(":", 1)[1], 16)] = inodes[fields[9]]
    return ports


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def members(client) -> dict:
    """``{port: address}`` of the cluster's scheduler, workers and nannies, as Dask says."""
    info = client.scheduler_info(n_workers=-1)
    addresses = [client.scheduler.address, *info["workers"]]
    addresses += [w["nanny"] for w in info["workers"].values() if w.get("nanny")]
    return {port_of(a): a for a in addresses}


def breaches(report: dict) -> list:
    """Every attempt of an :func:`tests.support.dask_attack.attack` report that was not refused."""
    return [
        f"port {port}, {way}: {result}"
        for port, entry in report.items()
        for way, result in entry["attempts"].items()
        if not result.startswith("refused: ")
    ]


# --------------------------------------------------------------------------
# cluster-certs and the grade command's refusals (no cluster needed)
# --------------------------------------------------------------------------
@pytest.mark.slow  # a real child process
def test_cluster_certs_makes_an_authority_and_a_member_certificate_only_the_owner_reads(tmp_path):
    from cryptography import x509

    folder = tmp_path / "certs"
    proc = subprocess.run(
        [sys.executable, "-m", "autograders", "cluster-certs", str(folder)],
        capture_output=True,
        text=True,
        env=nc.env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["ca.pem", "cluster-key.pem", "cluster.pem"]
    assert {oct(stat.S_IMODE((folder / n).stat().st_mode)) for n in names} == {"0o600"}
    ca = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    member = x509.load_pem_x509_certificate((folder / "cluster.pem").read_bytes())
    member.verify_directly_issued_by(ca)  # raises if the authority did not sign it
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not member.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for option in ("--tls-ca-file", "--tls-cert", "--tls-key"):
        assert option in proc.stdout
    written = {n: (folder / n).read_bytes() for n in names}
    again = subprocess.run(
        [sys.executable, "-m", "autograders", "cluster-certs", str(folder)],
        capture_output=True,
        text=True,
        env=nc.env(),
    )
    assert again.returncode == 2 and "expected a new or empty folder" in again.stderr
    assert {n: (folder / n).read_bytes() for n in names} == written  # nothing overwritten


@pytest.mark.parametrize(
    "args, said",
    [
        (["--scheduler", "tcp://127.0.0.1:8786"], "is not encrypted (tcp://); expected a tls://"),
        (["--scheduler", "127.0.0.1:8786"], "is not encrypted (no protocol); expected a tls://"),
        (
            ["--scheduler", "tls://127.0.0.1:8786"],
            "missing: --tls-ca-file, --tls-cert, --tls-key",
        ),
    ],
)
@pytest.mark.slow  # a real child process
def test_the_grade_command_refuses_a_cluster_without_tls(tmp_path, args, said):
    proc = nc.grade(tmp_path, *args, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"not grading: --scheduler {args[1]} "), proc.stderr
    assert said in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []  # refused before touching the course


@pytest.mark.slow  # a real child process
def test_the_grade_command_refuses_a_key_other_accounts_can_read(tmp_path):
    from autograders.cluster import make_certificates

    files = make_certificates(tmp_path / "certs")
    files["tls-key"].chmod(0o644)
    tls = [x for option, path in files.items() for x in (f"--{option}", str(path))]
    proc = nc.grade(tmp_path / "certs", "--scheduler", "tls://127.0.0.1:8786", *tls, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "is readable by other accounts (mode 0644); expected mode 0600" in proc.stderr


# --------------------------------------------------------------------------
# the grade command's LocalCluster, from this account
# --------------------------------------------------------------------------
@slow
def test_an_unprotected_local_cluster_runs_the_attackers_code(tmp_path):
    """The control: the LocalCluster as the grade command made it before issue 31."""
    from distributed import Client, LocalCluster

    before = set(listening(process_tree(os.getpid())))
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        ports = members(client)
        assert all(a.startswith("tcp://") for a in ports.values()), ports
        found = set(listening(process_tree(os.getpid()))) - before
        report = attack(sorted(found))
    for port in ports:
        assert report[port]["attempts"]["wire over tcp://"].startswith("BREACH: "), report[port]
    http = [report[p]["attempts"]["HTTP"] for p in sorted(found - set(ports))]
    assert any(h.startswith("BREACH: HTTP pages served: ") for h in http), http
    assert any(
        r.startswith("BREACH: a Client ran os.getuid")
        for entry in report.values()
        for r in entry["attempts"].values()
    ), report


@slow
def test_the_local_cluster_is_tls_and_refuses_every_peer_without_its_credentials(tmp_path):
    """Every port the grade command's cluster listens on, found by the kernel, not by Dask."""
    from autograders.grade import dask_client

    before = set(listening(process_tree(os.getpid())))
    with dask_client(2) as client:
        ports = members(client)
        assert len(ports) == 5, ports  # a scheduler, two nannies, two workers
        assert all(a.startswith("tls://127.0.0.1:") for a in ports.values()), ports
        found = {
            p: pid for p, pid in listening(process_tree(os.getpid())).items() if p not in before
        }
        http = sorted(set(found) - set(ports))
        assert set(ports) <= set(found), (ports, found)
        assert len(http) == 3, found  # Dask's HTTP servers: the scheduler's, each worker's
        report = attack(sorted(found))
        control = attack(sorted(ports), security=client.security)
    assert breaches(report) == [], "\n".join(breaches(report))
    for port, entry in report.items():
        assert entry["live before"] and entry["live after"], (port, entry)
    for port in ports:  # the attack is real: with the cluster's credentials it gets in
        (result,) = control[port]["attempts"].values()
        assert result.startswith("BREACH: ") and "ran os.getuid" in result, (port, result)


@slow
def test_the_local_clusters_credentials_touch_disk_only_in_a_folder_of_the_owner(tmp_path):
    """Dask loads in-memory credentials through files in a fresh 0700 folder, removed at once.

    Seen here for this process's listeners and connections (an audit hook
    sees every ``open``); the worker processes run the same code.
    """
    from autograders.grade import dask_client

    seen, recording = [], [True]

    def hook(event, args):
        if recording and event == "open" and isinstance(args[0], str):
            path = Path(args[0])
            if path.name in ("dask.crt", "dask.pem") and "w" in str(args[1]):
                try:
                    info = path.parent.stat()
                    seen.append((path, stat.S_IMODE(info.st_mode), info.st_uid))
                except OSError as exc:
                    seen.append((path, exc, None))

    sys.addaudithook(hook)
    try:
        with dask_client(1) as client:
            client.submit(sum, [1, 2]).result()
    finally:
        recording.clear()
    assert seen, "no credentials written: Dask loads them some other way now; recheck"
    for path, mode, uid in seen:
        assert (mode, uid) == (0o700, os.geteuid()), (path, oct(mode), uid)
        assert not path.parent.exists(), path


# --------------------------------------------------------------------------
# a cluster set up as the README says
# --------------------------------------------------------------------------
@slow
def test_a_tls_dask_cluster_refuses_every_peer_without_the_certificate(tmp_path):
    from tests.support.dask_cluster import cluster, security

    with cluster(tmp_path / "dask") as (address, workers, tls, scheduler):
        from distributed import Client

        with Client(address, security=security(tls), timeout=60) as client:
            ports = members(client)
        found = listening([pid for p in (scheduler, *workers) for pid in process_tree(p.pid)])
        assert set(ports) <= set(found) and len(ports) == 3, (ports, found)
        assert all(a.startswith("tls://127.0.0.1:") for a in ports.values()), ports
        report = attack(sorted(found))
        control = attack(sorted(ports), security=security(tls))
    assert len(found) == 6, found  # and the HTTP servers of the scheduler and each worker
    assert breaches(report) == [], "\n".join(breaches(report))
    for port in ports:
        (result,) = control[port]["attempts"].values()
        assert result.startswith("BREACH: ") and "ran os.getuid" in result, (port, result)


# --------------------------------------------------------------------------
# another account during a real grade run
# --------------------------------------------------------------------------
SOME = ["01_input", "07_softmax", "09_multi_head"]
#: Six notebooks whose answer cells loop: each holds the worker for its cells' time budget.
STALLED = ["01_input", "02_parameters", "03_qkv", "04_heads", "05_scores", "06_masking"]


def stalled_submission() -> dict:
    """The instructor's answers in :data:`STALLED`, each answer cell behind an endless loop."""
    out = {}
    for stem in STALLED:
        out[stem] = nc.student_notebook(stem, "solution")
        for cell in nc.answer_cells(out[stem]).values():
            cell.source = "while True:\n    pass\n" + cell.source
    return out


def wait_for_cluster(grade: subprocess.Popen, count: int, seconds: float = 600) -> dict:
    """The grade command's listening ports once there are ``count``; fails if it ends first."""
    deadline = time.monotonic() + seconds
    found = {}
    while len(found) < count:
        if grade.poll() is not None:
            out, err = grade.communicate()
            raise AssertionError(
                f"the grade command ended (exit {grade.returncode}) before its cluster's "
                f"{count} ports were seen listening (saw {found}):\n{out}\n{err}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(
                f"after {seconds} s, {count} listening ports expected, saw {found}"
            )
        time.sleep(0.05)
        found = listening(process_tree(grade.pid))
    return found


@slow
def test_another_account_cannot_reach_the_workers_during_a_grade_run(tmp_path):
    """``nobody`` attacks every port the grade command listens on, while it grades.

    The ports are found as root, from the sockets the grade command's
    process tree holds (``/proc/PID/fd`` against ``/proc/net/tcp``), and
    handed to the attacker: a student could list the same ports in
    ``/proc/net/tcp`` (it names their owner's uid), but a scan of every
    listening port would also hit other programs on a shared machine (their
    failure or success says nothing here, and attacking them is not this
    test's business). The attacker is started first and waits for the
    ports; they are handed over once all five listen (the scheduler and its
    HTTP server, the nanny, the worker and its HTTP server: ``--workers 1``).

    Not a race: the first student graded (``a-stuck``, first in sorted
    order; one worker grades one student at a time) has answer cells that
    loop in six notebooks, each held for its cells' time budget (10 s,
    counted by the grader's clock): the cluster outlives the attack (its
    attempts run at once, 10 s at most) by about a minute however fast the
    machine; and the attacker checks with a plain TCP connect, before and
    after its attempts, that the ports were listening all along. The grade
    summary names the refused connections.
    """
    need_root()
    course = nc.make_course(tmp_path / "course")
    nc.generate(course)
    nc.submit(course, "a-stuck", stalled_submission())
    nc.submit(course, "perfect", {s: nc.student_notebook(s, "solution") for s in SOME})
    nc.submit(course, "stub", {s: nc.student_notebook(s) for s in SOME})
    with shared_folder() as shared, ThreadPoolExecutor(1) as pool:
        home = home_of("nobody", shared)
        ports_file = shared / "ports.json"
        argv = [sys.executable, "-c", ATTACK.read_text(), ports_file, "900"]
        attacker = pool.submit(run_as, "nobody", argv, home, timeout=1200)
        grade = subprocess.Popen(
            [sys.executable, "-m", "autograders", "grade", nc.ASSIGNMENT, "--workers", "1"],
            cwd=course,
            env=nc.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        ports = []
        try:
            ports = sorted(wait_for_cluster(grade, 5))
        finally:  # the attacker stops waiting, with the ports or with none
            handover = shared / "ports.tmp"
            handover.write_text(json.dumps(ports))
            handover.chmod(0o644)
            handover.rename(ports_file)
            attacked = attacker.result()
            out, err = grade.communicate(timeout=1800)
    assert attacked.returncode == 0, attacked.stdout + attacked.stderr
    report = json.loads(attacked.stdout)
    assert sorted(map(int, report)) == ports
    assert all(e["live before"] and e["live after"] for e in report.values()), (
        f"a port of the grade command was closed before the attack ended: {report}"
    )
    assert breaches(report) == [], "\n".join(breaches(report))
    assert grade.returncode == 0, out + err
    assert "students: 3" in out and "failed: 0" in out, out
    (named,) = [ln for ln in out.splitlines() if "to the grading cluster without" in ln]
    assert named.startswith("! refused: ") and "from '127.0.0.1'" in named, named
    assert {int(p) for p in named.split("to port(s) ")[1].split(":")[0].split(", ")} <= set(ports)
    scores = nc.scores(course)
    full = scores.pop("_max")
    assert {nb: scores["perfect"][nb][0] for nb in SOME} == {nb: full[nb] for nb in SOME}, scores
    assert {nb: scores["stub"][nb][0] for nb in SOME} == dict.fromkeys(SOME, 0), scores
    assert {nb: scores["a-stuck"][nb][0] for nb in STALLED} == dict.fromkeys(STALLED, 0), scores
    for student in ("perfect", "stub"):  # the notebooks they did not submit, nothing else
        (line,) = [ln for ln in out.splitlines() if ln.startswith(f"! {student}: ")]
        assert re.fullmatch(rf"! {student}: missing notebook\(s\): [\w., ]+", line), line


@pytest.mark.slow  # a real child process
def test_the_readmes_cluster_commands_take_only_options_that_exist():
    """Every option of the README's cluster commands is in that command's ``--help``."""
    readme = (nc.ROOT / "README.md").read_text()
    block = readme.split("<!-- cluster-commands -->", 1)[1].split("```", 2)[1]
    dask = str(Path(sys.executable).parent / "dask")
    helps = {
        "dask scheduler": [dask, "scheduler", "--help"],
        "dask worker": [dask, "worker", "--help"],
        "python -m autograders grade": [sys.executable, "-m", "autograders", "grade", "x", "-h"],
        "python -m autograders cluster-certs": [
            *(sys.executable, "-m", "autograders", "cluster-certs", "-h")
        ],
    }
    seen = set()
    for line in block.replace("\\\n", " ").splitlines():
        command = next((c for c in helps if line.lstrip().startswith(c)), None)
        if command:
            seen.add(command)
            text = subprocess.run(helps[command], capture_output=True, text=True, env=nc.env())
            options = re.findall(r"(?<!\S)(--[a-z][a-z-]*)", line.split("#")[0])
            assert [o for o in options if o not in text.stdout] == [], (command, text.stdout)
    assert seen == set(helps), seen
