"""Issue 47's slips named by the checks (ext), as learners wrote them; the format of
:mod:`tests.support.fresh_mistakes` (merged into its ``FRESH``)."""

SLIPS47_EXT = {}
