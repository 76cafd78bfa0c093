"""Feedback that shows students which checks failed and why, not the hidden tests.

Stock ``nbgrader generate_feedback`` renders the autograded notebook, whose
test cells hold the hidden tests again (nbgrader restores them for grading).
This preprocessor, added to the feedback pipeline by the course's nbgrader
configuration, removes the hidden blocks from the test cells and reduces
each error to its last line: the check's one-sentence hint. Every cell is
scrubbed, graded or not.
"""

from __future__ import annotations

import re

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*$", re.S | re.M)
NOTE = "# (hidden tests: not shown)"


def hide(source: str) -> str:
    """``source`` with every hidden-test block replaced by a one-line note."""
    return HIDDEN.sub(NOTE, source)


class HideHiddenTests(Preprocessor):
    """Remove hidden tests and tracebacks from every cell before rendering feedback."""

    enabled = Bool(True, help="nbconvert preprocessors are off unless enabled").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        """Hide hidden-test blocks in the source and reduce errors to their last line."""
        cell.source = hide(cell.source)
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                out["traceback"] = [hide(f"{out.get('ename', 'Error')}: {out.get('evalue', '')}")]
        return cell, resources
