# nbgrader reads this file when run from the repository root; the course's
# configuration lives in autograders/nbgrader_config.py.
load_subconfig("autograders/nbgrader_config.py")  # noqa: F821
