"""nbgrader configuration of the course.

Sources (instructor versions) are ``solutions/<assignment>/``, student
versions ``notebooks/<assignment>/``; the one assignment is ``mhsa``.
Use it from the repository root with ``--config autograders/nbgrader_config.py``.
"""

from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

ROOT = Path(__file__).resolve().parent.parent

c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"

# Student versions: no outputs stored, and the stub every answer starts from.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearOutput.enabled = True

# Grading: one kernel, forced; a per-cell time limit; deleted or edited
# test cells are put back from the source.
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True
c.Execute.kernel_name = "python3"
c.ExecutePreprocessor.kernel_name = "python3"
c.Autograde.sanitize_ingested = True
c.CheckCellMetadata.enabled = True
c.OverwriteCells.enabled = True
c.ClearHiddenTests.enabled = True
