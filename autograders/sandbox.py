"""Bubblewrap around the child process that runs a submission's answers.

What a submission sees inside (:func:`wrap`): the operating system's
programs and libraries and the Python environment, read-only; the child
program (its parts only, :data:`mhsa_helpers.execution.in_child.CHILD_PARTS`,
read-only in :data:`INSIDE`); an empty private ``/tmp`` of :data:`TMP_SIZE` bytes, the only
place it can write (``/dev`` and ``/proc`` are read-only too: a grader
running as root would otherwise leave ``/proc/sys`` writable). Not the
course directory (gradebook, sources, solutions, other students'
submissions), not the course's package (reference, checks), not the
network (a network namespace of its own with only loopback), not the
grader's processes or environment (a PID namespace of its own), and no
capabilities.

The child program is the namespace's first process (``--as-pid-1``): no
other process in the sandbox can stop or kill it (the kernel drops such
signals to a namespace's init), and it is not dumpable, so none can read
its pipes or memory through ``/proc``. Every process it starts dies with it
(``--die-with-parent``, and the PID namespace ends with its first process).

If bubblewrap is missing or cannot create the namespaces, grading refuses
(:func:`check`) unless the instructor asks for ``--no-sandbox``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["SandboxUnavailable", "check", "wrap"]

#: Where the child program appears inside the sandbox (the folder Python runs).
INSIDE = "/sandbox"
#: Bytes the sandbox's ``/tmp`` may hold (the child empties it before each notebook).
TMP_SIZE = 64 << 20


class SandboxUnavailable(RuntimeError):
    """Bubblewrap is missing or cannot create the sandbox on this machine."""


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):  # merged /usr: a symlink such as /lib -> usr/lib
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for conf in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"):
        args += ["--ro-bind-try", conf, conf]
    return args


def _python_binds() -> list[str]:
    """The Python environment, read-only, with the course's own packages hidden in it."""
    import autograders
    import mhsa_helpers

    roots = sorted({str(Path(p).resolve()) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)})
    args = []
    for root in roots:
        args += ["--ro-bind", root, root]
    for package in (mhsa_helpers, autograders):
        where = str(Path(package.__path__[0]).resolve())
        if any(where == r or where.startswith(r + os.sep) for r in roots):
            # an installed copy: hidden under an empty folder nothing can write to
            args += ["--tmpfs", where, "--remount-ro", where]
    return args


def _program_binds(program: Path) -> list[str]:
    """The child program's parts (``program`` is its folder), read-only in :data:`INSIDE`."""
    from mhsa_helpers.execution.in_child import CHILD_PARTS

    args = []
    for part in CHILD_PARTS:
        args += ["--ro-bind", str(program / part), f"{INSIDE}/{part}"]
    return args


def wrap(program: Path) -> list[str]:
    """The command that runs the child program (the folder ``program``) inside the sandbox."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap`, "
            "or grade with --no-sandbox on a trusted machine."
        )
    return [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--cap-drop",
        "ALL",
        "--size",
        str(TMP_SIZE),
        "--tmpfs",  # first: what is bound below may itself live under /tmp (a CI clone)
        "/tmp",
        *_system_binds(),
        *_python_binds(),
        *_program_binds(program),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--remount-ro",
        "/proc",
        "--remount-ro",
        "/dev",
        "--remount-ro",  # the sandbox's own root, where the folders above are made
        "/",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "OPENBLAS_NUM_THREADS",
        "1",
        "--setenv",
        "MPLBACKEND",
        "agg",
        "--chdir",
        "/tmp",
        sys.executable,
        "-I",
        INSIDE,
    ]


def check() -> None:
    """Raise :class:`SandboxUnavailable`, saying why, unless a sandbox can be made here."""
    from mhsa_helpers.execution.in_child import CHILD

    argv = wrap(CHILD)
    argv = [*argv[: argv.index(sys.executable)], sys.executable, "-I", "-c", "import numpy"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"bubblewrap could not start: {exc}") from exc
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise SandboxUnavailable(
            f"bubblewrap cannot create the sandbox here ({why}); grade with --no-sandbox "
            "only on a trusted machine."
        )
