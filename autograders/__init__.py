"""The instructor's package: grading a class with nbgrader, safely and at scale.

What a notebook imports lives in :mod:`mhsa_helpers`; this package is the
other side, never needed to learn:

* :mod:`autograders.course` and :mod:`autograders.secret`: a course directory
  apart from the repository, with the secret key the hidden tests' inputs
  are drawn from;
* :mod:`autograders.grade` (the coordinator, on Dask; with
  :mod:`autograders.roster`, who is graded, :mod:`autograders.handoff`,
  what goes to a worker and what comes back, :mod:`autograders.summary`,
  what the instructor is told) and :mod:`autograders.task` (one student's
  grading on a worker): the answers run in a bubblewrap sandbox
  (:mod:`autograders.sandbox`) one call at a time, the checks judge the
  values they return (:mod:`autograders.integrity`), and stock nbgrader
  records the verdicts (:mod:`autograders.verdicts`,
  :mod:`autograders.gradebook`) and renders the feedback. This is the
  primary grading path; ``docs/grading.md`` says why;
* :mod:`autograders.nbgrader_config`, :mod:`autograders.kernel` and
  :mod:`autograders.execute`: the course's nbgrader configuration and the
  grading kernel that stock ``nbgrader autograde`` is forced to use;
* :mod:`autograders.lab`: which side of nbgrader JupyterLab shows.
"""
