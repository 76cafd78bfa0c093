"""The child program's start: ``python <this folder>`` runs :func:`child.main.main`.

Started so by :func:`mhsa_helpers.execution.in_child.run_in_child` (and in the
grader's sandbox, where this file and the package ``child`` are all there is
of the course). Python puts this folder on ``sys.path``, so ``child`` is a
top-level package here: nothing of ``mhsa_helpers`` is imported. Not for
``python -m mhsa_helpers.execution``.
"""

from child.main import main

if __name__ == "__main__":
    main()
