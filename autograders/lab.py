"""Which side of nbgrader JupyterLab shows: the learner's, or on request the instructor's.

Installing the course (``pip install -r requirements.txt``, or Binder's
postBuild) puts ``jupyter-config/`` into the environment's prefix:

* ``etc/jupyter/labconfig/page_config.d/mhsa-course.json``: nbgrader's
  instructor plugins (:data:`INSTRUCTOR_PLUGINS`) disabled *and locked*, so
  JupyterLab's Plugin Manager cannot turn them back on;
* ``etc/jupyter/jupyter_server_config.d/nbgrader.mhsa-course.json``: the
  instructor's server extensions (:data:`INSTRUCTOR_SERVER_EXTENSIONS`) off;
  it is read after nbgrader's own ``nbgrader.json``, which turns them on, and
  before what ``jupyter server extension enable --sys-prefix`` writes;
* ``share/jupyter/lab/settings/overrides.d/mhsa-course.json``: no news
  pop-up, no update check, and widget state saved with the notebook (a
  notebook reopened the next day shows each widget's last picture,
  tests/test_day_two.py);
* ``etc/jupyter/nbgrader_config.py``: every nbgrader of the environment (the
  formgrader of a server started in any folder too) shows a student's
  notebook as text or sanitized HTML (:mod:`autograders.pages`).

Validate and the Assignments list stay. ``python -m autograders instructor-ui``
gives an instructor the other side back in this environment (``student-ui``
takes it away again), through JupyterLab's and Jupyter Server's own commands
at the environment's level, where the course put it.
"""

from __future__ import annotations

import sys

__all__ = ["INSTRUCTOR_PLUGINS", "INSTRUCTOR_SERVER_EXTENSIONS", "set_instructor_ui"]

INSTRUCTOR_PLUGINS = (
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:course-list",
)
INSTRUCTOR_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.course_list",
)
LEVEL = "sys_prefix"  # this environment, where the course's own files are


def set_instructor_ui(on: bool) -> None:
    """Show (``on``) or hide and lock nbgrader's instructor side in this environment.

    What ``jupyter labextension unlock/enable --level=sys_prefix`` (or
    ``disable/lock``) and ``jupyter server extension enable/disable
    --sys-prefix`` do, for the instructor's plugins and server extensions.
    """
    from jupyter_server.extension.serverextension import toggle_server_extension_python
    from jupyterlab.commands import (
        disable_extension,
        enable_extension,
        lock_extension,
        unlock_extension,
    )

    for plugin in INSTRUCTOR_PLUGINS:
        if on:
            unlock_extension(plugin, level=LEVEL)
            enable_extension(plugin, level=LEVEL)
        else:
            disable_extension(plugin, level=LEVEL)
            lock_extension(plugin, level=LEVEL)
    for extension in INSTRUCTOR_SERVER_EXTENSIONS:
        toggle_server_extension_python(extension, enabled=on, sys_prefix=True)


def main(argv: list[str], on: bool) -> int:
    """``python -m autograders instructor-ui`` (``on``) or ``student-ui``."""
    if argv:
        name = "instructor-ui" if on else "student-ui"
        print(f"usage: python -m autograders {name}", file=sys.stderr)
        return 2
    set_instructor_ui(on)
    if on:
        print(
            "nbgrader's instructor side (Formgrader, Create Assignment, Course List) is on "
            "in this environment: restart JupyterLab. `python -m autograders student-ui` "
            "turns it off again."
        )
    else:
        print("JupyterLab shows nbgrader's student side only in this environment.")
    return 0
