# Installed with the course into the environment's prefix (etc/jupyter): every nbgrader
# of this environment reads it, wherever it runs. Its formgrader, whatever folder the
# Jupyter server was started in, and its feedback pages show a student's notebook as text
# or sanitized HTML, never run (autograders/pages.py; the course's own configuration,
# autograders/nbgrader_config.py, says the same).
from autograders.pages import configure

configure(get_config())  # noqa: F821 (provided by traitlets when nbgrader loads this file)
