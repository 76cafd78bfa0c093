"""The wire protocol between the parent and the child: frames, safe unpickling, fixed words.

Every message is a frame: its size (8 bytes, little-endian, the kind byte
included), one kind byte, a pickle (:func:`pack_frame`, :func:`read_frame`).
What comes from a notebook's process is untrusted and read with
:class:`SafeUnpickler` only. The words a notebook's process may report
(:data:`NOTEBOOK_EVENTS`) and the one that marks a call of the reference
(:data:`REFERENCE_CALL`) are the protocol's too: the parent keeps no other.

Imports nothing of the course: it runs inside the child's sandbox too.
"""

from __future__ import annotations

import io
import os
import pickle
import struct

#: The words of the error a notebook's ``mh`` raises when asked for a forbidden function.
REFERENCE_CALL = "instead of implementing it"
#: The events a notebook's process may report (the parent drops any other words of it).
NUMPY_PATCHED = "numpy monkeypatched (no effect: the checks run elsewhere)"
MEMORY_EVENT = "memory limit reached"
NOTEBOOK_EVENTS = frozenset({NUMPY_PATCHED, MEMORY_EVENT})


class SafeUnpickler(pickle.Unpickler):
    """Loads arrays, numbers, strings, tuples, lists and dicts, and nothing else.

    Whatever an answer's process sends back is read with this: a crafted
    pickle cannot run code in the process that reads it.
    """

    ALLOWED = frozenset(
        {
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "scalar"),
            ("numpy.core.multiarray", "_reconstruct"),
            ("numpy.core.multiarray", "scalar"),
            ("numpy", "ndarray"),
            ("numpy", "dtype"),
            ("builtins", "complex"),
        }
    )

    def find_class(self, module, name):
        """Only the numpy and builtin names of :attr:`ALLOWED`."""
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refused to load {module}.{name}")
        return super().find_class(module, name)


def safe_loads(data: bytes):
    """Unpickle ``data`` with :class:`SafeUnpickler`."""
    return SafeUnpickler(io.BytesIO(data)).load()


#: Bytes of one reply of a notebook's process at the most (the parent reads no more either).
REPLY_LIMIT = 64 << 20


def pack_frame(kind: bytes, payload: bytes) -> bytes:
    """One frame: its length (8 bytes, little-endian, counting ``kind``), ``kind``, ``payload``."""
    return struct.pack("<Q", len(payload) + 1) + kind + payload


def write_frame(stream, kind: bytes, obj) -> None:
    """One frame on ``stream``: size, kind byte, ``obj`` pickled (read by :func:`read_frame`)."""
    stream.write(pack_frame(kind, pickle.dumps(obj)))


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``, however many ``os.write`` calls it takes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send_reply(fd: int, message) -> None:
    """Send ``message`` (pickled) as one ``R`` frame on ``fd``."""
    write_all(fd, pack_frame(b"R", pickle.dumps(message)))


def read_exact(fd: int, size: int) -> bytes:
    """Exactly ``size`` bytes from ``fd`` (fewer only at the end): no read-ahead."""
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> tuple[bytes, bytes] | None:
    """The next frame on ``fd`` as ``(kind, payload)``, unbuffered; None at the end."""
    header = read_exact(fd, 9)
    if len(header) < 9:
        return None
    (size,) = struct.unpack("<Q", header[:8])
    return header[8:9], read_exact(fd, size - 1)


def skip(fd: int, size: int) -> None:
    """Read and drop ``size`` bytes of ``fd``."""
    while size > 0:
        size -= len(read_exact(fd, min(size, 1 << 20))) or size
