r"""Build the course's notebooks from their text sources.

``python course/build.py`` (from the repository root) turns every
``course/NN_name.py`` (jupytext py:percent) into the instructor version
``solutions/mhsa/NN_name.ipynb`` and then runs ``nbgrader generate_assignment``
to make the student versions ``notebooks/mhsa/``. Both are generated: edit
the sources, never the notebooks.

A source marks its special cells in the cell header, and the build fills in
the rest from the exercise registry (:mod:`mhsa_helpers.exercises`):

* ``# %% setup``: the read-only setup cell: ``course/_setup.py``, then the
  cell's own lines;
* ``# %% answer="softmax"``: the answer cell of an exercise: the ``def`` line
  (it must be the registry's signature, ``def softmax(Z, axis=-1):``) and the
  body, without a docstring: the build puts in the registry's, the exercise's
  contract (:meth:`mhsa_helpers.exercises.Exercise.docstring`);
* ``# %% tests="softmax"``: its test cell (left empty in the source): the
  registry's docstring, grade id and points, the visible check and, hidden
  from students, the hidden one; tagged ``raises-exception`` so that "Run
  All" goes on past a failing check (nbgrader still scores it 0);
* ``# %% [markdown] generated="exercise_table"``: the table of exercises.

Before the setup cell (the notebook's first code cell) the build puts the install
cell (:data:`INSTALL`): where the course's package cannot be imported (Colab), it
installs it with pip from the repository (``MHSA_COURSE_PACKAGE``, if set, names
another requirement: a wheel's path, a local folder); where it can (the course's
JupyterLab, Binder, the grader), it does nothing.

Display equations (``$$ … $$``) are numbered per notebook, in order: the third of
step 5 gets ``\tag{5.3}``, which MathJax shows in JupyterLab and in the book alike.
One that the text refers to carries a label, ``\label{scores}`` inside it, and the
text refers to it as ``\eqref{scores}`` (from any notebook), which the build
replaces with the number, ``(5.1)`` (:func:`equation_numbers`, :func:`number_equations`).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if __name__ == "__main__":  # run as the build: this checkout's package, here and in every
    # process it starts (kernels, nbgrader); another's stops them in one sentence
    os.environ["MHSA_CHECKOUT"] = str(ROOT)  # (mhsa_helpers/checkout.py)

from mhsa_helpers.exercises import NOTEBOOKS, exercise, exercise_table, stem_number  # noqa: E402

SOURCES = Path(__file__).resolve().parent
ASSIGNMENT = "mhsa"
#: The repository on GitHub (the README's Binder badge and ``book.pages`` name it too).
REPOSITORY = "mhsa-course/mhsa-course"
#: The install cell: the course's package where it is missing (Colab), nothing elsewhere.
#: ``MHSA_COURSE_PACKAGE`` names another pip requirement (tests: a locally built wheel).
INSTALL = f"""\
# On Colab (or any Python without the course's package), install it. Elsewhere: nothing.
try:
    import mhsa_helpers
except ImportError:
    import os, subprocess, sys

    course = "mhsa-course @ git+https://github.com/{REPOSITORY}"
    course = os.environ.get("MHSA_COURSE_PACKAGE", course)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", course], check=True)\
"""
#: A display equation of a markdown cell, the label it may carry, a reference to a label.
DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
LABEL = re.compile(r"\s*\\label\{([\w-]+)\}")
REFERENCE = re.compile(r"\\eqref\{([\w-]+)\}")


def _markdown(path: Path) -> list[str]:
    """The markdown cells' texts of the source ``path``, in order."""
    source = jupytext.read(path, fmt="py:percent")
    return [c.source for c in source.cells if c.cell_type == "markdown"]


def equation_numbers(texts: dict) -> dict:
    """Every label's equation number: ``{"scores": "5.1", …}``.

    Parameters
    ----------
    texts : dict of str to list of str
        ``{stem: markdown cells' texts}``, the notebooks in course order.

    Returns
    -------
    dict of str to str
        The label's notebook number (``16`` for ``16_sliding_window``, ``16a`` for
        ``16a_alibi``), a dot, and its equation's place among that notebook's display
        equations, from 1.

    Raises
    ------
    ValueError
        A label used twice in the course, or an equation with two labels.
    """
    numbers = {}
    for stem, cells in texts.items():
        displays = [m.group(1) for text in cells for m in DISPLAY.finditer(text)]
        for n, display in enumerate(displays, 1):
            labels = LABEL.findall(display)
            if len(labels) > 1:
                raise ValueError(f"{stem}: equation {n} has two labels, {labels}; expected one.")
            for label in labels:
                if label in numbers:
                    raise ValueError(
                        f"{stem}: the label {label!r} is taken by equation {numbers[label]}; "
                        "a label names one equation of the course."
                    )
                numbers[label] = f"{stem_number(stem)}.{n}"
    return numbers


@functools.cache
def course_equation_numbers() -> dict:
    """:func:`equation_numbers` of the course's sources."""
    return equation_numbers({nb.stem: _markdown(SOURCES / f"{nb.stem}.py") for nb in NOTEBOOKS})


def number_equations(text: str, stem: str, first: int, numbers: dict) -> tuple[str, int]:
    r"""A markdown cell's text with its display equations tagged and its references resolved.

    Parameters
    ----------
    text : str
        The cell's text.
    stem : str
        Its notebook, e.g. ``"05_scores"``.
    first : int
        The number of the cell's first display equation in its notebook.
    numbers : dict of str to str
        Every label's number (:func:`equation_numbers`).

    Returns
    -------
    text : str
        Each ``$$ … $$`` ending in ``\tag{5.n}`` (its label removed), each
        ``\eqref{label}`` replaced by ``(5.n)``.
    next : int
        The number of the notebook's next display equation.

    Raises
    ------
    ValueError
        A reference to a label no equation carries.
    """
    count = first

    def tag(match: re.Match) -> str:
        nonlocal count
        body = LABEL.sub("", match.group(1)).rstrip()
        number = f"{stem_number(stem)}.{count}"
        count += 1
        return f"$${body} \\tag{{{number}}}$$"

    def reference(match: re.Match) -> str:
        label = match.group(1)
        if label not in numbers:
            raise ValueError(
                f"{stem}: \\eqref{{{label}}} refers to no equation; the labels are "
                f"{sorted(numbers)}."
            )
        return f"({numbers[label]})"

    text = DISPLAY.sub(tag, text)
    return REFERENCE.sub(reference, text), count


def _nbgrader(grade_id: str, *, grade=False, solution=False, locked=False, points=None) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return meta


def test_cell_source(name: str) -> str:
    """The test cell of exercise ``name``: docstring, visible check, hidden check."""
    e = exercise(name)
    return "\n".join(
        [
            f'"""{e.checks}"""',
            f'checks.check("{name}", {name})',
            "### BEGIN HIDDEN TESTS",
            f'checks.check_hidden("{name}", {name})',
            "### END HIDDEN TESTS",
        ]
    )


def answer_cell_source(name: str, text: str) -> str:
    """The answer cell of exercise ``name``: the source's ``def`` line, the contract, the body.

    Parameters
    ----------
    name : str
        The exercise.
    text : str
        The answer cell of its course source: the ``def`` line with the
        registry's signature, then the body, without a docstring.

    Returns
    -------
    source : str
        The cell with the registry's docstring after the ``def`` line.

    Raises
    ------
    ValueError
        If the ``def`` line is not the registry's signature, or the source
        has a docstring of its own.
    """
    e = exercise(name)
    first, _, body = text.partition("\n")
    want = f"def {name}{e.signature}:"
    if first != want:
        raise ValueError(
            f"the answer cell of {name} must begin with the registry's signature, {want!r}, "
            f"but begins with {first!r}."
        )
    if body.lstrip().startswith(('"""', "'''")):
        raise ValueError(
            f"the answer cell of {name} must have no docstring: the build writes the "
            "registry's (mhsa_helpers/exercises.toml) after the def line."
        )
    doc = textwrap.indent(e.docstring(), "    ")
    return f'{first}\n    """{doc.lstrip()}\n    """\n{body}'


#: The grade id of 00's progress report: a test cell worth 0 points, so that Validate on 00
#: fails, as the report does, until every exercise of the course passes.
PROGRESS_ID = "course_progress"
PROGRESS_DOC = "Check that every exercise of the course passes (worth no points: your progress)."


def solution_notebook(path: Path) -> nbformat.NotebookNode:
    """The instructor version of the source ``path``, with nbgrader metadata."""
    source = jupytext.read(path, fmt="py:percent")
    setup = (SOURCES / "_setup.py").read_text()
    setup = "\n".join(ln for ln in setup.splitlines() if not ln.startswith("#")).strip()
    numbers, equation = course_equation_numbers(), 1
    cells = []
    for k, cell in enumerate(source.cells):
        meta = cell.metadata
        text = cell.source
        if cell.cell_type == "markdown":
            if meta.get("generated") == "exercise_table":
                text = exercise_table()
            text, equation = number_equations(text, path.stem, equation, numbers)
            new = nbformat.v4.new_markdown_cell(text)
        elif meta.get("title") == "setup":
            install = nbformat.v4.new_code_cell(INSTALL)
            install.metadata["nbgrader"] = _nbgrader("install", locked=True)
            install.id = f"{path.stem[:2]}-install"
            cells.append(install)
            new = nbformat.v4.new_code_cell(f"{setup}\n\n{text}".strip())
            new.metadata["nbgrader"] = _nbgrader("setup", locked=True)
        elif meta.get("title") == "progress":  # 00's report: a test worth no points
            new = nbformat.v4.new_code_cell(f'"""{PROGRESS_DOC}"""\n{text}'.strip())
            new.metadata["nbgrader"] = _nbgrader(PROGRESS_ID, grade=True, locked=True, points=0)
        elif "answer" in meta:
            new = nbformat.v4.new_code_cell(answer_cell_source(meta["answer"], text))
            new.metadata["nbgrader"] = _nbgrader(exercise(meta["answer"]).answer_id, solution=True)
        elif "tests" in meta:
            e = exercise(meta["tests"])
            new = nbformat.v4.new_code_cell(test_cell_source(e.name))
            new.metadata["nbgrader"] = _nbgrader(
                e.grade_id, grade=True, locked=True, points=e.points
            )
            # "Run All" goes on past a failing check, so every figure below still shows.
            new.metadata["tags"] = ["raises-exception"]
        else:
            new = nbformat.v4.new_code_cell(text)
        new.id = f"{path.stem[:2]}-{k:02d}"
        cells.append(new)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
            "name": "python3",
        },
        "language_info": language_info(),
    }
    return nb


def language_info() -> dict:
    """The ``language_info`` this environment's ipykernel reports when it starts.

    JupyterLab writes the kernel's ``language_info`` into a notebook as soon as
    the kernel is ready, and a notebook whose metadata differs from it in any
    key (its ``version`` too) shows as modified before the learner has done
    anything. Built with exactly what the kernel will report, it stays clean
    (in an environment of another Python version, JupyterLab updates it).
    """
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


def build(root: Path = ROOT) -> None:
    """Write ``root/solutions/mhsa/`` from the sources, then ``root/notebooks/mhsa/``."""
    out = root / "solutions" / ASSIGNMENT
    out.mkdir(parents=True, exist_ok=True)
    for nb in NOTEBOOKS:
        path = SOURCES / f"{nb.stem}.py"
        nbformat.write(solution_notebook(path), str(out / f"{nb.stem}.ipynb"))
    bindir = str(Path(sys.executable).parent)  # nbgrader runs alembic from this environment
    env = dict(os.environ)
    env["PATH"] = bindir + ":" + env.get("PATH", "")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nbgrader",
            "generate_assignment",
            ASSIGNMENT,
            "--force",
            f"--CourseDirectory.root={root}",
            "--log-level=WARN",
        ],
        cwd=ROOT,
        env=env,
        check=True,
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=ROOT, help="course directory to build into")
    build(p.parse_args(argv).root.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
