"""The grade command's own cluster: Dask over Unix sockets in a folder only its account can open.

A Dask scheduler or worker runs whatever a connected peer sends it, as the
account that started it, and writes its scratch space where it is told
(by default a fixed name in the world-writable ``/tmp``, which it puts
first on every worker's ``sys.path``). So the cluster the grade command
starts on its own machine (:func:`private_cluster`) shares nothing with
another account:

* one run folder, made fresh by :func:`tempfile.mkdtemp` (a new, unguessable
  name, mode 0700, created atomically: no account can make it first or
  swap it) and removed when the run ends (one that a killed run left is
  removed by the next, :func:`sweep`);
* every connection of the cluster (client, scheduler, nannies, workers) is a
  Unix socket in that folder (the ``unix://`` scheme of :class:`UnixBackend`),
  so no other account can open one, let alone send a byte: no port
  listens, on loopback or anywhere. A listener refuses a folder that is not
  its account's own with mode 0700;
* the HTTP servers Dask starts beside every scheduler and worker (plain
  HTTP: task names, logs, metrics) are never bound (:class:`PrivateScheduler`,
  :class:`PrivateWorker`);
* the scratch space (``local_directory``: the folder Dask puts on
  ``sys.path``) and the temporary folder of every process (``TMPDIR``,
  Dask's ``temporary-directory``, Python's :mod:`tempfile`) are in it.

The workers are the same single-threaded processes as a stock
``LocalCluster``'s, under one nanny each, so grading is as parallel as
before and a worker that dies is replaced the same way.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import socket
import stat
import tempfile
import uuid
import weakref
from pathlib import Path

import dask
from distributed import Nanny, Scheduler, SpecCluster, Worker
from distributed.comm import registry
from distributed.comm.core import BaseListener, Comm, CommClosedError, Connector
from distributed.comm.tcp import MAX_BUFFER_SIZE, TCP, _close_comm
from tornado import netutil
from tornado.iostream import IOStream, StreamClosedError
from tornado.tcpserver import TCPServer

__all__ = [
    "SCHEME",
    "PrivateFolderError",
    "PrivateScheduler",
    "PrivateWorker",
    "UnixBackend",
    "private_cluster",
    "run_folder",
    "sweep",
]

#: The address scheme of the cluster's Unix sockets: ``unix:///run/folder/NAME.sock``.
SCHEME = "unix"
#: The longest socket path Linux takes (``sun_path`` is 108 bytes, the last a NUL).
MAX_PATH = 107
#: A run folder's name begins so; it holds the id of the process that made it in PID_FILE.
PREFIX = "mhsa-grading-"
PID_FILE = "pid"


class PrivateFolderError(RuntimeError):
    """The run folder is not this account's own with mode 0700: nothing listens there."""


def run_folder(parent: str | None = None) -> Path:
    """A new folder for one grade run: unguessable name, mode 0700, this account's.

    Parameters
    ----------
    parent : str, optional
        Where to make it (default: :func:`tempfile.gettempdir`). A parent
        whose path would leave no room for a socket's name gives way to
        ``/tmp``. The folders that killed runs of this account left there
        are removed first (:func:`sweep`).

    Returns
    -------
    Path
        The folder, holding ``PID_FILE`` (this process's id); the caller
        removes it.
    """
    parent = parent or tempfile.gettempdir()
    if len(os.fsencode(parent)) > MAX_PATH - 60:
        parent = "/tmp"
    sweep(Path(parent))
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    (folder / PID_FILE).write_text(f"{os.getpid()}\n")
    return folder


def sweep(parent: Path) -> list:
    """Remove the run folders in ``parent`` that runs of this account left when killed.

    A run folder is this account's own (mode 0700, not a link) and names
    the process that made it (``PID_FILE``); it is left when that process
    still lives, or when it names none.

    Returns
    -------
    list of Path
        The folders removed.
    """
    removed = []
    for folder in parent.glob(f"{PREFIX}*"):
        try:
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            pid = int((folder / PID_FILE).read_text())
            os.kill(pid, 0)  # alive (ours or not): its folder stays
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        except (OSError, ValueError):
            continue  # not a run folder, or not ours to judge
    return removed


def check_private(folder: Path, what: str = "the grading cluster's sockets") -> Path:
    """``folder`` if it is a real folder of this account with mode 0700, else refuse.

    Raises
    ------
    PrivateFolderError
        Missing, not a folder (a link included), another owner, or any
        access for group or others; the message names ``what`` it is for.
    """
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        raise PrivateFolderError(
            f"{folder}: expected a folder of uid {os.geteuid()} with mode 0700 for {what}, "
            "found none."
        ) from None
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or mode & 0o077:
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a folder"
        raise PrivateFolderError(
            f"{folder}: expected a folder of uid {os.geteuid()} with mode 0700 for {what}, "
            f"found {kind} of uid {info.st_uid} with mode {mode:04o}."
        )
    return folder


def _folder_of(loc: str) -> Path:
    """The run folder named by a listen address's location (``/run/folder`` or ``…:0``)."""
    return Path(re.sub(r":\d+$", "", loc))


class UnixComm(TCP):
    """Dask's stream comm over a connected Unix socket (no TCP options to set)."""

    def __init__(self, stream: IOStream, local_addr: str, peer_addr: str, deserialize=True):
        # TCP.__init__ without set_nodelay and the TCP keep-alive options, which a Unix
        # socket has not (Dask would log an error for each connection).
        Comm.__init__(self, deserialize=deserialize)
        self._closed = False
        self._local_addr = local_addr
        self._peer_addr = peer_addr
        self.stream = stream
        self._finalizer = weakref.finalize(self, self._get_finalizer())
        self._finalizer.atexit = False
        self._extra: dict = {}
        stream.set_close_callback(functools.partial(_close_comm, weakref.ref(self)))


class UnixConnector(Connector):
    """Connects to a listener's socket path."""

    async def connect(self, address: str, deserialize=True, **connection_args):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stream = IOStream(sock, max_buffer_size=MAX_BUFFER_SIZE)
        try:
            await stream.connect(address)
        except StreamClosedError as exc:  # not (yet) listening: Dask's connect tries again
            raise CommClosedError(f"cannot reach {SCHEME}://{address}: {exc}") from exc
        return UnixComm(stream, f"{SCHEME}://{address}", f"{SCHEME}://{address}", deserialize)


class UnixListener(BaseListener):
    """Listens on a new socket, mode 0600, in the run folder the address names."""

    prefix = f"{SCHEME}://"

    def __init__(self, loc: str, comm_handler, deserialize=True, **connection_args):
        super().__init__()
        self.folder = _folder_of(loc)
        self.path = self.folder / f"{uuid.uuid4().hex[:16]}.sock"
        self.comm_handler = comm_handler
        self.deserialize = deserialize
        self.server = None

    async def start(self):
        check_private(self.folder)
        sock = netutil.bind_unix_socket(str(self.path), mode=0o600)
        self.server = TCPServer(max_buffer_size=MAX_BUFFER_SIZE)
        self.server.handle_stream = self._handle_stream
        self.server.add_socket(sock)

    def stop(self):
        server, self.server = self.server, None
        if server is not None:
            server.stop()
        with contextlib.suppress(OSError):
            self.path.unlink()

    async def _handle_stream(self, stream, address):
        if self.server is None:  # stopped after the accept: the peer would wait forever
            stream.close()
            return
        comm = UnixComm(stream, self.contact_address, f"{SCHEME}://peer", self.deserialize)
        try:
            await self.on_connection(comm)
        except CommClosedError:  # a peer that left before Dask's own handshake
            comm.abort()
            return
        await self.comm_handler(comm)

    @property
    def listen_address(self) -> str:
        return f"{SCHEME}://{self.path}"

    @property
    def contact_address(self) -> str:
        return self.listen_address


class UnixBackend(registry.Backend):
    """Dask's ``unix://`` scheme: the location is a socket's path in a private folder."""

    def get_connector(self):
        return UnixConnector()

    def get_listener(self, loc, handle_comm, deserialize, **connection_args):
        return UnixListener(loc, handle_comm, deserialize, **connection_args)

    def get_address_host(self, loc):
        return "localhost"  # one machine: the cluster's members share it

    def resolve_address(self, loc):
        return loc

    def get_local_address_for(self, loc):
        return str(Path(loc).parent)


def _register() -> None:
    """Make ``unix://`` known to Dask in this process (the workers' import does it too)."""
    known = registry.backends.get(SCHEME)
    if known is None:
        registry.backends[SCHEME] = UnixBackend()
    elif not isinstance(known, UnixBackend):
        raise RuntimeError(f"Dask already has another {SCHEME}:// backend: {known!r}")


_register()


def _no_http_server(self, routes, dashboard_address, default_port=0, ssl_options=None):
    """Dask's HTTP server for this node, never bound: nothing of it listens anywhere."""
    from distributed.http.routing import RoutingApplication
    from tornado.httpserver import HTTPServer

    self.http_application = RoutingApplication(routes)
    self.http_server = HTTPServer(self.http_application)
    self.http_server.address, self.http_server.port = None, None


class PrivateScheduler(Scheduler):
    """A scheduler whose HTTP server is never bound."""

    start_http_server = _no_http_server


class PrivateWorker(Worker):
    """A worker whose HTTP server is never bound (imported, so registering ``unix://``)."""

    start_http_server = _no_http_server


@contextlib.contextmanager
def private_cluster(workers: int):
    """A client of a cluster of ``workers`` processes that only this account can reach.

    Parameters
    ----------
    workers : int
        Single-threaded worker processes, each under a nanny.

    Yields
    ------
    distributed.Client
        The client. Meanwhile this process's temporary files go to the run
        folder too (:data:`tempfile.tempdir`, ``TMPDIR``); both are restored,
        and the folder removed, when the block ends.
    """
    from distributed import Client

    folder = run_folder()
    scratch, temporary = folder / "dask", folder / "tmp"
    scratch.mkdir(mode=0o700)
    temporary.mkdir(mode=0o700)
    where = {"host": str(folder), "protocol": SCHEME}
    config = {"temporary-directory": str(temporary)}
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    try:
        tempfile.tempdir = str(temporary)
        os.environ["TMPDIR"] = str(temporary)
        with dask.config.set(config):
            spec = {
                i: {
                    "cls": Nanny,
                    "options": {
                        **where,
                        "nthreads": 1,
                        "worker_class": PrivateWorker,
                        "local_directory": str(scratch),
                        "env": {"TMPDIR": str(temporary)},
                        "dashboard": False,
                        "silence_logs": logging.ERROR,
                    },
                }
                for i in range(max(1, workers))
            }
            scheduler = {
                "cls": PrivateScheduler,
                "options": {
                    **where,
                    "dashboard": False,
                    "dashboard_address": None,
                    "local_directory": str(scratch),
                },
            }
            with (
                SpecCluster(workers=spec, scheduler=scheduler, silence_logs=logging.ERROR) as c,
                Client(c) as client,
            ):
                yield client
    finally:
        tempfile.tempdir = saved[0]
        if saved[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[1]
        shutil.rmtree(folder, ignore_errors=True)
