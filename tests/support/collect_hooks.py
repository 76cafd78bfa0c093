"""The course's collect with a pause between listing ``inbound/`` and copying, for race tests.

A student who owns their inbound folder can change it after collect has
listed it and before collect copies it; on a real machine that is a race
the student wins some of the time (5 ms was enough in issue 45). To test
what collect does when the student wins, without timing,
:class:`PausedCollect` is the course's own collect
(:class:`autograders.exchange.SafeCollect`), unchanged but for a wait, at
the one point between the two: after the listing, it waits for the file
``resume_when`` to appear (the student's own process writes it once its
change is made) before copying anything. Run it with ``nbgrader collect
… --ExchangeFactory.collect=tests.support.collect_hooks.PausedCollect
--PausedCollect.resume_when=PATH`` and the repository on ``PYTHONPATH``.
"""

from __future__ import annotations

import time
from pathlib import Path

from traitlets import Float, Unicode

from autograders.exchange import SafeCollect

__all__ = ["PausedCollect"]


class PausedCollect(SafeCollect):
    """The course's collect, paused after listing until the file ``resume_when`` exists."""

    resume_when = Unicode("", help="copy once this file exists").tag(config=True)
    patience = Float(120.0, help="seconds to wait for it before failing").tag(config=True)

    def init_dest(self):
        """Between the listing (``init_src``) and the copy (``copy_files``): wait."""
        super().init_dest()
        if not self.resume_when:
            return
        deadline = time.monotonic() + self.patience
        while not Path(self.resume_when).exists():
            if time.monotonic() > deadline:
                self.fail(f"{self.resume_when} did not appear within {self.patience:g} s")
            time.sleep(0.02)
