"""How a learner's code runs: each way named for what it does, one module a job.

Four ways, none of which judges (the checks do, :mod:`mhsa_helpers.checks`):

* **in the notebook, one function on a check's inputs**:
  :func:`mhsa_helpers.checks.core.call_in_notebook` calls the learner's
  function in the notebook's kernel under the call contract
  (:mod:`.child.contract`), watching for calls of the reference;
* **a saved notebook's answer cells, in this process**:
  :func:`.saved.run_answers_here` runs them and returns the namespace they
  fill (the capstone, the explorer, the training notebook take the learner's
  own functions from it: :func:`.saved.learner_functions`);
* **answer cells in a child process, one call at a time**:
  :func:`.in_child.run_in_child` (the progress report, the grader) drives the
  child program (:mod:`.child`), which imports nothing else of the course and
  runs in the grader's sandbox (:mod:`autograders.sandbox`): values come back
  (:mod:`.outcomes`), never verdicts;
* **the grading kernel** (:mod:`autograders.kernel`): the kernel in which
  ``nbgrader autograde`` runs a whole submission.

Modules: :mod:`.saved` (saved notebooks: read, run here), :mod:`.in_child`
(the parent's side of the child), :mod:`.channel` (its pipe),
:mod:`.outcomes` (what a call gave, checked), :mod:`.child` (the child
program: :mod:`.child.contract`, :mod:`.child.wire`, :mod:`.child.main`,
:mod:`.child.supervisor`, :mod:`.child.notebook`, :mod:`.child.seccomp`).
This package imports nothing itself: the child runs ``child`` without it.
"""
