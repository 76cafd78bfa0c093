"""The course directory's secret: the key every hidden test's inputs are drawn from.

``python -m autograders init-course DIR`` writes a fresh random key to
``DIR/.mhsa-hidden-key`` (readable by its owner only). The grade command
reads it there and sends it to the Dask workers with the course, as data;
:func:`mhsa_helpers.checks.hidden_seed` turns it into each exercise's seed.
Nothing in the learner's package or in a released notebook holds it, so no
student can rebuild a hidden input, and two course directories grading the
same released course draw different ones.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

__all__ = ["KEY_FILE", "MissingKey", "find_key", "make_key", "read_key"]

#: The key's file in a course directory.
KEY_FILE = ".mhsa-hidden-key"


class MissingKey(SystemExit):
    """The course directory has no hidden-test key (made before keys existed, or copied)."""


def make_key(directory: Path) -> Path:
    """Write a new random key (256 bits, hex) to ``directory``; refuse to replace one."""
    path = Path(directory) / KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # FileExistsError if any
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path


def read_key(directory: Path) -> bytes:
    """The key of the course directory ``directory``, or :class:`MissingKey` saying what to do."""
    path = Path(directory) / KEY_FILE
    try:
        text = path.read_text().strip()
        key = bytes.fromhex(text)
    except FileNotFoundError:
        raise MissingKey(
            f"{directory} has no hidden-test key ({KEY_FILE}): `python -m autograders "
            f"init-course` makes one; for a course directory made before, run "
            f"`python -m autograders new-key {directory}` once."
        ) from None
    except ValueError:
        raise MissingKey(f"{path} is not a hidden-test key (expected 64 hex digits).") from None
    if len(key) < 16:
        raise MissingKey(f"{path} is too short for a hidden-test key (expected 64 hex digits).")
    return key


def find_key(start: Path) -> bytes | None:
    """The key of the course directory ``start`` lies in (searching upwards), or None."""
    for folder in [Path(start).resolve(), *Path(start).resolve().parents]:
        if (folder / KEY_FILE).is_file():
            try:
                return read_key(folder)
            except MissingKey:
                return None
    return None


def main(argv: list[str]) -> int:
    """``python -m autograders new-key DIR``: give an older course directory its key."""
    if len(argv) != 1:
        print("usage: python -m autograders new-key DIR", file=sys.stderr)
        return 2
    try:
        path = make_key(Path(argv[0]))
    except FileExistsError:
        print(f"{argv[0]} has a hidden-test key already; it is kept.", file=sys.stderr)
        return 2
    print(f"hidden-test key written to {path}")
    return 0
