"""The course's sources and the instructor's commands: ``python -m course --help``.

``course/NN_name.py`` are the notebooks' sources (jupytext py:percent) and
``course/build.py`` builds the notebooks from them; ``python -m course readme``
writes the README's parts that come from the registry (:mod:`course.readme`),
``python -m course new-exercise`` adds an exercise (:mod:`course.scaffold`).
"""
