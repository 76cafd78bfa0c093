"""Who submitted: the account behind each collected submission, named when it is not the student's.

nbgrader's exchange keeps one folder per ``nbgrader submit`` in
``inbound/{student}+{assignment}+{timestamp}+…``, owned by the account
that ran it; the student id in the name is whatever that account chose
(``--student``, or by default its own login name). The course's collect
step (:class:`autograders.collect.CourseCollect`) writes a record into each
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

import json
from pathlib import Path

from autograders.collect import RECORD
from autograders.ids import shown

__all__ = ["identity_notes"]


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
        notes.append(f"submitted from account {shown(collected)}, not {shown(student)}: review it")
    others = sorted({a for a in accounts if a not in (None, collected)})
    if collected is not None and others:
        notes.append(
            f"replaces a submission from account(s) {', '.join(map(shown, others))} "
            f"by account {shown(collected)}: review it"
        )
    return notes
