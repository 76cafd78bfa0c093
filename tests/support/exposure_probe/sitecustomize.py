"""The exposure test's probe: every Python process of a grade run reports what it did.

Put on ``PYTHONPATH`` with ``MHSA_PROBE_DIR`` set (:func:`tests.support.exposure.probe_env`),
Python imports this module at start-up in each process the grade command
starts (the command, its worker processes; the sandbox clears the
environment, so not the answers' children). Each process appends JSON lines
to ``MHSA_PROBE_DIR/PID.jsonl``: itself, every ``sys.path`` an import
searched (a finder that finds nothing, first on ``sys.meta_path``), and every
file it opened to write, folder it made and socket it bound (audit hooks).
It writes with ``os.write`` on a descriptor opened once, so its own writes
raise no audit event; it never raises.
"""

import json
import os
import sys

_FOLDER = os.environ.get("MHSA_PROBE_DIR")
_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _start():
    fd = os.open(
        os.path.join(_FOLDER, f"{os.getpid()}.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
    )
    seen = set()

    def note(kind, value):
        try:
            os.write(fd, (json.dumps({"kind": kind, "value": value}) + "\n").encode())
        except Exception:
            pass

    def absolute(path):
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)

    class Searched:
        """Finds nothing; notes each new ``sys.path`` a top-level import searches."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            if path is None:
                key = tuple(map(str, sys.path))
                if key not in seen:
                    seen.add(key)
                    note("sys.path", list(key))
            return None

    def hook(event, args):
        try:
            if event == "open" and isinstance(args[0], (str, bytes)):
                mode, flags = args[1], args[2] or 0
                if (isinstance(mode, str) and set(mode) & set("wax+")) or flags & _WRITING:
                    note("write", absolute(args[0]))
            elif event == "os.mkdir":
                note("mkdir", absolute(args[0]))
            elif event == "socket.bind":
                note("bind", repr(args[1]))
        except Exception:
            pass

    note("process", {"pid": os.getpid(), "ppid": os.getppid()})
    sys.meta_path.insert(0, Searched)
    sys.addaudithook(hook)


if _FOLDER:
    try:
        _start()
    except Exception:
        pass
