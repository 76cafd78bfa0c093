"""The system-call filter of a notebook's process (seccomp, assembled here).

:func:`refuse_outside_memory` refuses every notebook's process the memory and
channels that escape its limits (anonymous files, System V and POSIX IPC,
keys, shared mappings); :func:`seal` refuses a fresh, memory-measured process
any new process and any file opened to write. Both raise OSError where the
machine or the kernel cannot filter (the other limits still hold).

Imports nothing of the course: it runs inside the child's sandbox.
"""

from __future__ import annotations

import ctypes
import os

#: Per machine: seccomp's audit architecture and the system calls' numbers (None: it has none).
_SYSCALLS = {
    "x86_64": {
        "arch": 0xC000003E,
        "seccomp": 317,
        "mmap": 9,
        "clone": 56,
        "fork": 57,
        "vfork": 58,
        "clone3": 435,
        "open": 2,
        "creat": 85,
        "openat": 257,
        "openat2": 437,
        "memfd_create": 319,
        "memfd_secret": 447,
        "shmget": 29,
        "msgget": 68,
        "semget": 64,
        "mq_open": 240,
        "add_key": 248,
        "request_key": 249,
        "keyctl": 250,
    },
    "aarch64": {
        "arch": 0xC00000B7,
        "seccomp": 277,
        "mmap": 222,
        "clone": 220,
        "fork": None,
        "vfork": None,
        "clone3": 435,
        "open": None,
        "creat": None,
        "openat": 56,
        "openat2": 437,
        "memfd_create": 279,
        "memfd_secret": 447,
        "shmget": 194,
        "msgget": 186,
        "semget": 190,
        "mq_open": 180,
        "add_key": 217,
        "request_key": 218,
        "keyctl": 219,
    },
}
#: Memory and channels outside every limit: anonymous files, System V and POSIX IPC, keys.
#: Refused to every notebook's process (they outlive a process, or escape its address space).
_OUTSIDE = ("memfd_create", "memfd_secret", "shmget", "msgget", "semget", "mq_open")
_OUTSIDE += ("add_key", "request_key", "keyctl")
#: Opening flags that write or create: O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND.
_WRITING = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000
_EPERM, _ENOSYS, _ALLOW = 0x00050001, 0x00050026, 0x7FFF0000


def _refuse(rules: list) -> None:
    """Install a seccomp filter, for every thread of this process and all it starts.

    ``rules`` holds ``(system call, errno action, condition)``; the
    condition is None (always), ``("set", arg, mask)`` (refused when the
    low word of argument ``arg`` has a bit of ``mask``) or ``("clear", arg,
    mask)`` (refused when it has none). A system call of another
    architecture's numbering (the 32-bit entry points, x32) is refused too.
    Raises OSError where the machine or the kernel cannot.
    """
    numbers = _SYSCALLS.get(os.uname().machine)
    if numbers is None:
        raise OSError(f"no seccomp numbers for {os.uname().machine}")
    load, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    program = [
        (load, 0, 0, 4),  # the architecture
        (jeq, 1, 0, numbers["arch"]),
        (ret, 0, 0, _EPERM),
        (load, 0, 0, 0),  # the system call's number
        (jge, 0, 1, 0x40000000),  # x32's numbering
        (ret, 0, 0, _EPERM),
    ]
    for call, action, condition in rules:
        number = numbers[call]
        if number is None:
            continue
        if condition is None:
            program += [(load, 0, 0, 0), (jeq, 0, 1, number), (ret, 0, 0, action)]
            continue
        kind, arg, mask = condition
        program += [
            (load, 0, 0, 0),
            (jeq, 0, 3, number),
            (load, 0, 0, 16 + 8 * arg),  # the argument's low word (little-endian)
            (jset, 0, 1, mask) if kind == "set" else (jset, 1, 0, mask),
            (ret, 0, 0, action),
        ]
    program.append((ret, 0, 0, _ALLOW))

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte)]
        _fields_ += [("k", ctypes.c_uint)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*f) for f in program])
    libc = ctypes.CDLL(None, use_errno=True)
    prog = Program(len(program), filters)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "no_new_privs refused")
    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC: every thread, prog)
    if libc.syscall(numbers["seccomp"], 1, 1, ctypes.byref(prog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter refused")


def refuse_outside_memory() -> None:
    """Refuse :data:`_OUTSIDE`, and shared mappings, to this process and all it starts.

    Pages of a shared mapping outlive what resident memory counts of the
    process (``madvise`` drops them from it, the data stays).
    """
    rules = [(call, _EPERM, None) for call in _OUTSIDE]
    _refuse([*rules, ("mmap", _EPERM, ("set", 3, 0x01))])  # MAP_SHARED (and _VALIDATE)


def seal() -> None:
    """Refuse this process (and its threads) any new process and any file opened to write.

    ``fork``, ``vfork`` and a ``clone`` without ``CLONE_THREAD`` fail with
    EPERM, ``clone3`` and ``openat2`` with ENOSYS (the C library falls back
    to ``clone`` and ``openat``), ``open``, ``openat`` and ``creat`` with a
    writing flag with EPERM. Threads may still be made: they share this
    process's memory, which is measured.
    """
    thread, writing = 0x00010000, _WRITING
    _refuse(
        [
            ("clone3", _ENOSYS, None),
            ("openat2", _ENOSYS, None),
            ("fork", _EPERM, None),
            ("vfork", _EPERM, None),
            ("creat", _EPERM, None),
            ("clone", _EPERM, ("clear", 0, thread)),
            ("open", _EPERM, ("set", 1, writing)),
            ("openat", _EPERM, ("set", 2, writing)),
        ]
    )
