"""Who submitted: the account behind each collected submission, named when it is not the student's.

nbgrader's exchange keeps one folder per ``nbgrader submit`` in
``inbound/{student}+{assignment}+{timestamp}+…``, owned by the account
that ran it; the student id in the name is whatever that account chose
(``--student``, or by default its own login name). ``nbgrader collect``
copies the newest folder into ``submitted/`` and only logs a warning when
the two differ. :class:`OwnerCollect`, the course's collect step (set in
:mod:`autograders.nbgrader_config`), writes :data:`RECORD` into each
collected submission: the owning account of the collected folder and of
every submission of that student in the exchange. The grade command reads
it (:func:`identity_notes`) and names, for the instructor to review, a
submission that came from another account than its student id, or that
replaced one from another account. The grade is still given: nothing is
lost, and the review decides.

Where the operating system cannot tell (an account without a name, a
course where every submission belongs to one account, a submission folder
not made by collect), nothing is said.
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

from nbgrader.exchange.default.collect import ExchangeCollect

__all__ = ["RECORD", "OwnerCollect", "account_of", "identity_notes"]

#: The record of owners in a collected submission folder (left out of grading).
RECORD = ".mhsa-owners.json"


def account_of(path: str) -> str | None:
    """The login name of the account owning ``path``, or None if it has none."""
    import pwd

    try:
        return pwd.getpwuid(os.stat(path).st_uid).pw_name
    except (KeyError, OSError):
        return None


class OwnerCollect(ExchangeCollect):
    """nbgrader's collect, which also records who owned each of the student's submissions."""

    def do_copy(self, src, dest):
        """Copy as nbgrader does, then write :data:`RECORD` into ``dest``."""
        super().do_copy(src, dest)
        name = os.path.basename(src.rstrip("/"))
        student, assignment = name.split("+")[:2]
        pattern = os.path.join(os.path.dirname(src), f"{student}+{assignment}+*")
        every = sorted(glob.glob(pattern), key=lambda p: self._path_to_record(p)["timestamp"])
        record = {
            "student": student,
            "collected": {"folder": name, "account": account_of(src)},
            "all": [{"folder": os.path.basename(p), "account": account_of(p)} for p in every],
        }
        Path(dest, RECORD).write_text(json.dumps(record, indent=1))


def identity_notes(submission: Path, student: str) -> list[str]:
    """What the instructor should review about who made ``submission`` ([] if nothing)."""
    try:
        record = json.loads((Path(submission) / RECORD).read_text())
        collected = record["collected"]["account"]
        accounts = [entry["account"] for entry in record["all"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    notes = []
    if collected is not None and collected != student:
        notes.append(f"submitted from account {collected!r}, not {student!r}: review it")
    others = sorted({a for a in accounts if a not in (None, collected)})
    if collected is not None and others:
        notes.append(
            f"replaces a submission from account(s) {', '.join(map(repr, others))} "
            f"by account {collected!r}: review it"
        )
    return notes
