"""Where ``nbgrader autograde`` runs a notebook: nbgrader's ``Execute``, in the grading kernel.

The course's configuration puts :class:`GradingExecute` in ``Autograde``'s
pipeline in place of ``Execute`` and forces the grading kernel on it alone
(``c.GradingExecute.kernel_name``), whatever kernelspec a submission names.
Everything else that executes notebooks keeps nbgrader's ``Execute`` and the
notebook's own kernel: above all ``Validate``, which a learner clicks in
JupyterLab, in an environment where the grading kernel (an instructor's
``python -m autograders install-kernel``) does not exist.
"""

from __future__ import annotations

from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute

__all__ = ["GradingExecute", "autograde_preprocessors"]


class GradingExecute(Execute):
    """nbgrader's ``Execute``, configured apart from it: only autograding uses this one."""


def autograde_preprocessors() -> list:
    """nbgrader's own autograde pipeline with :class:`GradingExecute` where ``Execute`` is."""
    default = Autograde.class_traits()["autograde_preprocessors"].default()
    steps = [GradingExecute if step is Execute else step for step in default]
    if GradingExecute not in steps:  # a future nbgrader that executes otherwise: say so
        raise RuntimeError(f"nbgrader's Autograde pipeline has no Execute step: {default}")
    return steps
