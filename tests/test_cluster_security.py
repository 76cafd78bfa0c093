"""Issues 31 and 45: only the grade command reaches its Dask workers, and a run shares nothing.

A Dask scheduler, nanny or worker runs whatever a connected peer sends, as
the account that started it. The grade command's own cluster has no port:
Unix sockets in a fresh folder of mode 0700, where its scratch and
temporary files go too, so another account (here ``nobody``) can neither
connect nor plant a module on its path, while a stock LocalCluster does
both (the controls). Every listening port of a cluster set up as the README
says is Dask's TLS with both ends showing a certificate of the cluster's
authority, each member guarded (``--preload autograders.guard``): a peer
without the credentials is refused each way it tries
(:mod:`tests.support.dask_attack`) and named, while the very same attack
with the credentials gets in. Dask's HTTP servers (plain HTTP, outside TLS)
serve nothing. The grade command refuses a ``tcp://`` cluster and an
unguarded member, and ``cluster-certs`` writes files only their owner reads.
A real grade run beside ``nobody`` is inventoried: sockets, files, module
paths, processes (:mod:`tests.support.exposure`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support import nbgrader_course as nc
from tests.support.accounts import home_of, need_root, run_as, shared_folder
from tests.support.dask_attack import attack
from tests.support.exposure import (
    attempts_as,
    exposed,
    holding,
    probe_env,
    process_tree,
    reports,
    sockets,
)

slow = pytest.mark.slow  # real Dask processes (and, for the grade run, real grading)
#: The attack's refused Clients are collected unclosed (their loop has ended): Dask warns.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


# --------------------------------------------------------------------------
# what listens: the sockets of a process tree, as root (or its owner) sees them
# --------------------------------------------------------------------------
def listening(pids: list) -> set:
    """Every TCP port in LISTEN state that one of ``pids`` holds, by the kernel's tables."""
    return set(sockets(pids)["tcp listening"])


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


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
# the grade command's own cluster, from this account and from another
# --------------------------------------------------------------------------
#: Planted by another account where Dask made its scratch space before issue 45: a package
#: named like the course's, which says so when imported.
PLANTED = 'open(__file__ + ".IMPORTED", "w").close()\n'


def plant(folder: Path) -> Path:
    """As ``nobody``: make ``folder/dask-scratch-space/autograders`` (Dask's fixed name) first."""
    scratch = folder / "dask-scratch-space"
    script = (
        "import os, sys\n"
        "p = os.path.join(sys.argv[1], 'dask-scratch-space', 'autograders')\n"
        "os.makedirs(p)\n"
        "os.chmod(os.path.dirname(p), 0o777)\n"
        f"open(os.path.join(p, '__init__.py'), 'w').write({PLANTED!r})\n"
    )
    home = home_of("nobody", folder)
    proc = run_as("nobody", [sys.executable, "-c", script, folder], home)
    assert proc.returncode == 0, proc.stderr
    return scratch / "autograders" / "__init__.py"


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
def test_a_stock_local_cluster_imports_another_accounts_package_and_the_grade_commands_does_not(
    tmp_path,
):
    """Issue 45's first attack, as a control and against the grade command's cluster.

    ``nobody`` makes Dask's scratch folder first in a temporary folder that
    every account can write (as ``/tmp``): a stock LocalCluster then
    imports its ``autograders`` on the workers, as this account; the grade
    command's cluster, given the same temporary folder, never looks there.
    """
    import dask
    from distributed import Client, LocalCluster

    from autograders.grade import dask_client

    def where_autograders_comes_from() -> str:  # sent by value: it imports nothing of ours
        import importlib

        return importlib.import_module("autograders").__file__

    need_root()
    with shared_folder() as shared:
        shared.chmod(0o1777)  # as /tmp
        planted = plant(shared)
        with (
            dask.config.set({"temporary-directory": str(shared)}),
            LocalCluster(n_workers=1, processes=True, dashboard_address=None) as stock,
            Client(stock) as client,
        ):
            found = client.submit(where_autograders_comes_from, pure=False).result(timeout=120)
        assert found == str(planted), found  # the control: the attack is real
        Path(f"{planted}.IMPORTED").unlink()
        saved = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = str(shared)
        tempfile.tempdir = None  # read TMPDIR again
        try:
            with dask_client(2) as client:
                found = client.gather(
                    [client.submit(where_autograders_comes_from, pure=False) for _ in range(4)]
                )
        finally:
            os.environ.pop("TMPDIR") if saved is None else os.environ.update(TMPDIR=saved)
            tempfile.tempdir = None
        assert set(found) == {str(nc.ROOT / "autograders" / "__init__.py")}, found
        assert not Path(f"{planted}.IMPORTED").exists()


@slow
def test_the_grade_commands_cluster_listens_on_no_port_and_no_other_account_connects(tmp_path):
    """Every socket of the grade command's cluster, found by the kernel, not by Dask.

    No TCP or UDP port; Unix sockets only, all in one folder of mode 0700
    that ``nobody`` cannot list, write into or connect through. The control:
    the same connection from this account runs code on a worker, so the
    folder's mode is what keeps the others out. The folder is gone after.
    """
    from autograders.grade import dask_client
    from tests.support.dask_attack import _wire

    need_root()
    before = sockets(process_tree(os.getpid()))
    with dask_client(2) as client, shared_folder() as shared:
        addresses = members(client)
        assert len(addresses) == 5, addresses  # a scheduler, two nannies, two workers
        held = sockets(process_tree(os.getpid()))
        assert held["tcp listening"] == before["tcp listening"], held
        assert held["udp bound"] == before["udp bound"], held
        paths = set(held["unix listening"]) - set(before["unix listening"])
        assert {f"unix://{p}" for p in paths} >= set(addresses.values()), (paths, addresses)
        (folder,) = {Path(p).parent for p in paths}
        info = folder.lstat()
        assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o700, os.geteuid())
        tried = attempts_as("nobody", [folder, *paths], shared)
        assert tried == {}, tried
        worker = next(iter(client.scheduler_info(n_workers=-1)["workers"]))
        control = asyncio.run(_wire(worker))
        assert control.startswith("BREACH: a PrivateWorker ran os.getuid"), control
    assert not folder.exists()


def members(client) -> dict:
    """``{port or path: address}`` of the cluster's scheduler, workers and nannies, as Dask says."""
    info = client.scheduler_info(n_workers=-1)
    addresses = [client.scheduler.address, *info["workers"]]
    addresses += [w["nanny"] for w in info["workers"].values() if w.get("nanny")]
    return {a if a.startswith("unix://") else port_of(a): a for a in addresses}


# --------------------------------------------------------------------------
# a cluster set up as the README says
# --------------------------------------------------------------------------
@slow
def test_a_tls_dask_cluster_refuses_every_peer_without_the_certificate_and_names_each(tmp_path):
    """The README's cluster: guarded members, every attempt refused and named at the end."""
    from autograders.watch import check_cluster, cluster_refusals
    from tests.support.dask_cluster import cluster, security

    with cluster(tmp_path / "dask") as (address, workers, tls, scheduler):
        from distributed import Client

        with Client(address, security=security(tls), timeout=60) as client:
            ports = members(client)
            token = check_cluster(client)  # guarded and private, or this raises
            found = listening([pid for p in (scheduler, *workers) for pid in process_tree(p.pid)])
            assert set(ports) <= set(found) and len(ports) == 3, (ports, found)
            assert all(a.startswith("tls://127.0.0.1:") for a in ports.values()), ports
            report = attack(sorted(found))
            control = attack(sorted(ports), security=security(tls))
            refused = cluster_refusals(client, token)
    assert len(found) == 6, found  # and the HTTP servers of the scheduler and each worker
    assert breaches(report) == [], "\n".join(breaches(report))
    for port in ports:
        (result,) = control[port]["attempts"].values()
        assert result.startswith("BREACH: ") and "ran os.getuid" in result, (port, result)
    # four ways over TLS or Dask's wire per member port, each refused during its handshake
    named = {
        port: sum(n for listener, _, _, n in refused if port_of(listener) == port) for port in ports
    }
    assert all(n >= 4 for n in named.values()), (named, refused)


@slow
def test_the_grade_command_refuses_a_cluster_member_without_the_guard(tmp_path):
    """A scheduler started without ``--preload autograders.guard``: not graded there, said why."""
    from tests.support.dask_cluster import certificates, scheduler

    course = nc.make_course(tmp_path / "course")
    nc.generate(course)
    nc.submit(course, "ada", {s: nc.student_notebook(s, "solution") for s in SOME[:1]})
    tls = certificates(tmp_path / "certs")
    unguarded, address = scheduler(tmp_path, tls, guarded=False)
    try:
        proc = nc.grade(course, "--scheduler", address, *tls, check=False)
    finally:
        unguarded.kill()
        unguarded.wait()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("not grading: the cluster is not private"), proc.stderr
    assert f"the scheduler at '{address}' was not started with --preload autograders.guard" in (
        proc.stderr
    ), proc.stderr
    assert not (course / "autograded").exists()


@slow
def test_a_guarded_member_with_its_scratch_in_tmp_does_not_start(tmp_path):
    """``dask scheduler --preload autograders.guard``, no private scratch: it ends, saying why."""
    from tests.support.dask_cluster import DASK, certificates

    tls = certificates(tmp_path / "certs")
    env = {k: v for k, v in nc.env().items() if k != "DASK_TEMPORARY_DIRECTORY"}
    proc = subprocess.run(
        [
            DASK,
            "scheduler",
            "--protocol",
            "tls",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            *tls,
            "--no-dashboard",
            "--preload",
            "autograders.guard",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "autograders.guard: not starting this grading cluster member" in proc.stderr
    assert "set DASK_TEMPORARY_DIRECTORY to a folder of mode 0700" in proc.stderr, proc.stderr


# --------------------------------------------------------------------------
# another account during a real grade run: what the run exposes
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


def wait_for_sandbox(grade: subprocess.Popen, seconds: float = 600) -> None:
    """Return once the grade command's tree runs a sandbox (a student is being graded)."""
    import psutil

    deadline = time.monotonic() + seconds
    while True:
        if grade.poll() is not None:
            out, err = grade.communicate()
            raise AssertionError(
                f"the grade command ended (exit {grade.returncode}):\n{out}\n{err}"
            )
        names = []
        for pid in process_tree(grade.pid):
            with contextlib.suppress(psutil.NoSuchProcess):
                names.append(psutil.Process(pid).name())
        if "bwrap" in names:
            return
        assert time.monotonic() < deadline, f"no sandbox after {seconds} s: {names}"
        time.sleep(0.1)


def _file_or_folder(path: Path) -> bool:
    """True for a file or folder that exists (not a device such as ``/dev/null``, nor a link)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def files_under(folder: Path) -> set:
    """Every path under ``folder`` (itself included), not following links."""
    out = {folder}
    for root, dirs, files in os.walk(folder):
        out.update(Path(root) / n for n in dirs + files)
    return out


@slow
def test_a_grade_run_exposes_nothing_to_another_account(tmp_path):
    """Issue 45's exposure test: a real grade run, beside ``nobody``, inventoried as root.

    The course lies in a folder every account can traverse (only its own
    modes protect it), the grade command's temporary folder is one every
    account can write (as ``/tmp``), and ``nobody`` has made Dask's scratch
    folder there first, with a package named ``autograders`` in it. While
    the first student (``a-stuck``, whose answer cells loop in six
    notebooks, each held for its cells' time budget: about a minute however
    fast the machine) is graded, root takes the inventory: every socket the
    run's processes hold, every file and folder they wrote or made (the
    probe's audit hooks, and everything new under the course and the
    temporary folder), every ``sys.path`` entry an import of theirs searched
    (the probe). ``nobody`` then tries to read, list, write into and connect
    to each path; the rule of :func:`tests.support.exposure.exposed` judges
    the module paths. After the run: no process of it is alive, its own
    folder is gone, the planted package was never imported, and the honest
    students have their fair scores.
    """
    import uuid

    need_root()
    token = uuid.uuid4().hex
    with shared_folder() as shared, shared_folder() as attacker:  # nobody's own things apart
        temporary = shared / "tmp"
        temporary.mkdir()
        temporary.chmod(0o1777)
        planted = plant(temporary)
        report = tmp_path / "probe"
        report.mkdir()
        course = nc.make_course(shared / "course")
        nc.generate(course)
        nc.submit(course, "a-stuck", stalled_submission())
        nc.submit(course, "perfect", {s: nc.student_notebook(s, "solution") for s in SOME})
        nc.submit(course, "stub", {s: nc.student_notebook(s) for s in SOME})
        before = files_under(shared)
        env = {**nc.env(), **probe_env(report, token), "TMPDIR": str(temporary)}
        grade = subprocess.Popen(
            [sys.executable, "-m", "autograders", "grade", nc.ASSIGNMENT, "--workers", "2"],
            cwd=course,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for_sandbox(grade)
            tree = process_tree(grade.pid)
            held = sockets(tree)
            seen = reports(report)
            made = (files_under(shared) - before) | {  # written or made: files and folders
                Path(p) for p in seen["write"] | seen["mkdir"] if _file_or_folder(Path(p))
            }
            paths = [p for p in made if not str(p).startswith(str(report))]
            tried = attempts_as("nobody", [*paths, *held["unix listening"]], attacker)
            # every sys.path an import has searched so far, judged while its folders exist
            module_paths = {e: exposed(Path(e), os.geteuid()) for e in seen["sys.path"] if e}
        finally:
            out, err = grade.communicate(timeout=1800)
        seen = reports(report)
        left = holding(token)
        after = files_under(shared) - before
        tried_after = attempts_as("nobody", sorted(after), attacker)
        scores = nc.scores(course) if grade.returncode == 0 else {}
        later = {e for e in seen["sys.path"] if e and e not in module_paths and Path(e).exists()}
        module_paths.update({e: exposed(Path(e), os.geteuid()) for e in later})
    assert grade.returncode == 0, out + err
    assert held["tcp listening"] == [] and held["udp bound"] == [], held
    assert not [p for p in held["unix listening"] if not p.startswith("/")], held  # abstract
    assert tried == {}, tried
    assert tried_after == {}, tried_after
    assert {e: why for e, why in module_paths.items() if why} == {}, module_paths
    assert len(seen["process"]) >= 3, seen["process"]  # the command and its two workers
    assert left == [], f"processes of the grade run still alive: {left}"
    assert not [p for p in after if "mhsa-grading-" in str(p)], after  # the run's folder
    assert not Path(f"{planted}.IMPORTED").exists(), "the planted package was imported"
    assert "students: 3" in out and "failed: 0" in out, out
    full = scores.pop("_max")
    assert {nb: scores["perfect"][nb][0] for nb in SOME} == {nb: full[nb] for nb in SOME}, scores
    assert {nb: scores["stub"][nb][0] for nb in SOME} == dict.fromkeys(SOME, 0), scores
    assert {nb: scores["a-stuck"][nb][0] for nb in STALLED} == dict.fromkeys(STALLED, 0), scores


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
