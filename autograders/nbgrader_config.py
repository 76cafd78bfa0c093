"""nbgrader configuration of the course.

Sources (instructor versions) are ``solutions/<assignment>/``, student
versions ``notebooks/<assignment>/``; the one assignment is ``mhsa``.
Use it from the repository root with ``--config autograders/nbgrader_config.py``.
"""

from pathlib import Path

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import GetGrades

from autograders.execute import autograde_preprocessors
from autograders.feedback import HideHiddenTests
from autograders.kernel import KERNEL_NAME
from autograders.pages import configure as sanitize_pages

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

ROOT = Path(__file__).resolve().parent.parent

c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
# The gradebook needs a course (PostgreSQL enforces it; the exchange uses it too).
c.CourseDirectory.course_id = "mhsa"

# Student versions: no outputs stored, and the stub every answer starts from.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearOutput.enabled = True

# Grading: autograding runs notebooks in the grading kernel (memory limit,
# output cap; install it with `python -m autograders install-kernel`) whatever
# kernelspec a submission names. Only autograding: GradingExecute stands in
# Autograde's pipeline for Execute, which Validate (a learner's button in
# JupyterLab, where there is no grading kernel) keeps with the notebook's own
# kernel. A per-cell time limit stops endless loops, in both; edited test cells
# are overwritten and deleted ones put back from the gradebook.
c.Autograde.autograde_preprocessors = autograde_preprocessors()
c.GradingExecute.kernel_name = KERNEL_NAME
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
c.Autograde.sanitize_ingested = True
c.CheckCellMetadata.enabled = True
c.OverwriteCells.enabled = True
c.OverwriteCells.add_missing_cells = True
c.ClearHiddenTests.enabled = True

# Collect: the course's (autograders.collect): safe ids only, arrival times from the file
# system (the latest change of what was copied), every student collected whatever one
# submission holds; it records the account behind every submission, so that the grade
# command can name one made from another id. One student id per submitting account: a
# class that shares one account (JupyterHub's jovyan, a lab's common login) sets, in the
# course directory's nbgrader_config.py, c.CourseCollect.shared_account = True
c.ExchangeFactory.collect = "autograders.exchange.SafeCollect"

# The exchange (autograders.exchange): release makes it so that no account can rename
# another's folders (root 1777, inbound sticky); release, release_feedback and collect
# refuse an exchange where one could.
c.ExchangeFactory.release_assignment = "autograders.exchange.SafeReleaseAssignment"
c.ExchangeFactory.release_feedback = "autograders.exchange.SafeReleaseFeedback"

# The course directory is the instructor's alone (autograders.private): nbgrader's
# converters write autograded notebooks and feedback pages readable by their owner
# only (nbgrader's own 444 and 644 let every account read them wherever the folders
# above let it in); the course's release_feedback gives each released page 0644.
c.Autograde.permissions = 400
c.GenerateFeedback.permissions = 600

# Export: nbgrader's CSV plus whether each student's grading succeeded.
c.ExportApp.plugin_class = "autograders.export.GradesCsv"

# Feedback: which checks failed and their hints, never the hidden tests.
c.GenerateFeedback.preprocessors = [GetGrades, HideHiddenTests, CSSHTMLHeaderPreprocessor]

# Feedback pages and the formgrader's view of a submission (every HTMLExporter nbgrader makes,
# which reads this file: on the grade command's workers, in `nbgrader generate_feedback` and
# in the instructor's Jupyter server): what a student wrote is shown as text or sanitized
# HTML, never run. The environment's etc/jupyter/nbgrader_config.py says so too.
sanitize_pages(c)
