"""The grading kernel: ipykernel with a memory limit and a cap on output.

A submission that allocates without bound gets a MemoryError instead of
taking the grading machine down, and one that prints without end gets its
output cut instead of filling the grader's memory and the feedback. The
course's nbgrader configuration forces this kernel (``mhsa-grader``) for every
notebook ``nbgrader autograde`` runs, whatever kernelspec the submission names
(:mod:`autograders.execute`); a learner's Validate keeps the notebook's kernel.

Install it once per environment with ``python -m autograders install-kernel``
(again is harmless: an installed kernel is left as it is). The class-scale
``grade`` command runs notebooks in its own sandbox and needs no kernel.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
from pathlib import Path

KERNEL_NAME = "mhsa-grader"
#: Address space per grading kernel; numpy + matplotlib need well under 1 GiB.
MEMORY_LIMIT = int(os.environ.get("MHSA_GRADER_MEMORY", 3 * 2**30))
#: Characters of stdout/stderr kept per cell; the rest is replaced by a note.
OUTPUT_LIMIT = int(os.environ.get("MHSA_GRADER_OUTPUT", 100_000))


def install_kernel(prefix: str | None = None) -> str:
    """Install the ``mhsa-grader`` kernelspec into ``prefix`` (this environment by default)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = {
        "argv": [sys.executable, "-m", "autograders.kernel", "-f", "{connection_file}"],
        "display_name": "Python 3 (mhsa grader)",
        "language": "python",
        "metadata": {"debugger": False},
    }
    text = json.dumps(spec, indent=1)
    installed = Path(prefix or sys.prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME
    if (installed / "kernel.json").is_file() and (installed / "kernel.json").read_text() == text:
        # Already there: installing again would delete the folder first, and a grader
        # starting a kernel at that moment in this environment would find none.
        return str(installed)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "kernel.json").write_text(text)
        return KernelSpecManager().install_kernel_spec(
            tmp, KERNEL_NAME, prefix=prefix or sys.prefix
        )


def _cap_output() -> None:
    """Wrap the kernel's output streams so that one cell keeps at most OUTPUT_LIMIT characters."""
    from ipykernel.iostream import OutStream

    original_write = OutStream.write

    def write(self, text):
        used = getattr(self, "_mhsa_used", 0)
        if used >= OUTPUT_LIMIT:
            return len(text)
        room = OUTPUT_LIMIT - used
        self._mhsa_used = used + len(text)
        if len(text) > room:
            text = text[:room] + f"\n[output cut at {OUTPUT_LIMIT} characters by the grader]\n"
        return original_write(self, text)

    OutStream.write = write

    def reset(*_args, **_kwargs):
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, OutStream):
                stream._mhsa_used = 0

    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        shell.events.register("pre_run_cell", reset)


def _hidden_key() -> None:
    """Hand the course directory's hidden-test key to the checks (stock ``nbgrader autograde``).

    The kernel starts in the notebook's folder inside the course directory;
    the key lies at its root (:mod:`autograders.secret`). Stock autograding
    runs the submission in this kernel, where it could read the key as it
    could read the gradebook: ``python -m autograders grade`` never does.
    """
    from autograders.secret import find_key
    from mhsa_helpers.checks import KEY_VARIABLE

    key = find_key(Path.cwd())
    if key is not None:
        os.environ[KEY_VARIABLE] = key.hex()


def main() -> None:
    """Start the grading kernel: memory limit, one BLAS thread, output cap."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # graders run kernels side by side
    os.environ.setdefault("MPLBACKEND", "agg")
    _hidden_key()
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize([*sys.argv[1:], "--log-level=ERROR"])  # no TCP-encryption warning
    _cap_output()
    app.start()


if __name__ == "__main__":
    main()
