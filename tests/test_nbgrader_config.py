"""The course's nbgrader configuration, as nbgrader loads it from the repository root.

The grading kernel (``mhsa-grader``) exists only where an instructor installed
it, so only autograding may force it; Validate, which a learner clicks in
JupyterLab, runs a notebook in the notebook's own kernel. The real runs are in
tests/test_course.py (``nbgrader autograde``) and tests/test_student_lab.py
(Validate in JupyterLab).
"""

from __future__ import annotations

import sys
from pathlib import Path

from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute
from nbgrader.validator import Validator

from autograders.execute import GradingExecute
from autograders.kernel import KERNEL_NAME
from tests.support.nbgrader_course import course_config


def execute_steps(steps) -> list:
    return [step for step in steps if isinstance(step, type) and issubclass(step, Execute)]


def test_autograde_executes_in_the_grading_kernel():
    config = course_config()
    steps = Autograde(config=config).autograde_preprocessors
    assert execute_steps(steps) == [GradingExecute]
    # the rest of nbgrader's pipeline, unchanged and in its order
    default = Autograde().autograde_preprocessors
    assert [GradingExecute if s is Execute else s for s in default] == steps
    step = GradingExecute(config=config)
    assert step.kernel_name == KERNEL_NAME
    assert step.timeout == 60 and step.interrupt_on_timeout


def test_validate_executes_in_the_notebooks_own_kernel():
    config = course_config()
    validator = Validator(config=config)
    assert execute_steps(validator.preprocessors) == [Execute]
    step = Execute(parent=validator)
    assert step.kernel_name == ""  # nbclient then starts the kernel the notebook names
    assert step.timeout == 60  # the course's cell time limit holds here too


def test_installing_the_grading_kernel_again_leaves_the_installed_one_in_place(tmp_path):
    """Check that a second install touches nothing (a grader may be starting that kernel) and
    that an install whose spec differs replaces it."""
    from autograders.kernel import install_kernel

    folder = Path(install_kernel(prefix=str(tmp_path)))
    spec = folder / "kernel.json"
    marker = folder / "left-by-the-first-install"
    marker.write_text("")
    assert Path(install_kernel(prefix=str(tmp_path))) == folder
    assert marker.exists(), "the second install deleted the installed kernel's folder"
    spec.write_text(spec.read_text().replace(sys.executable, "/elsewhere/python"))
    install_kernel(prefix=str(tmp_path))
    assert not marker.exists() and sys.executable in spec.read_text()
