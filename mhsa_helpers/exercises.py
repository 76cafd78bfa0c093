"""The course's notebooks and exercises: the one list that everything else reads.

The notebooks, in course order, with what each must bring (its kind, widgets and
test modules), and every exercise, one function the learner writes, are written
once, in ``exercises.toml`` next to this module, and read into :data:`NOTEBOOKS`
and :data:`EXERCISES` (what each kind of notebook must bring: :data:`KINDS`). An
exercise's contract (signature, parameters and returns with their shapes, a
one-line meaning) and how it is graded are its entry. From there come the reference's exports and
docstrings (:mod:`mhsa_helpers.reference`), the answer stubs' docstrings and
the test cells of the notebooks (``course/build.py``), the checks, the
progress report, the explorer, the grading (which test cell grades which
function, for how many points) and the tables of the README and of the
start-here notebook; ``tests/test_registry.py`` proves that they agree.

Adding an exercise: ``python -m course new-exercise NAME --after STEM`` writes
its entry, a reference stub, a check and a notebook source to fill in (the
README's "Add your own exercise").
"""

from __future__ import annotations

import re
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CONTRACTS",
    "EXERCISES",
    "KINDS",
    "NOTEBOOKS",
    "Exercise",
    "Kind",
    "Notebook",
    "by_grade_id",
    "exercise",
    "exercise_table",
    "forbidden",
    "function_table",
    "names",
    "notebook",
    "of_notebook",
    "stem_key",
    "stem_number",
]

#: The data file every exercise is written in, once.
CONTRACTS = Path(__file__).resolve().parent / "exercises.toml"


#: A notebook's stem: two digits, an optional letter (one added between two), ``_``, a name.
STEM = re.compile(r"(\d\d)([a-z]?)_([a-z0-9_]+)")


def stem_key(stem: str) -> tuple[int, str]:
    """The place of ``stem`` in course order: ``"16a_alibi"`` → ``(16, "a")``.

    Raises
    ------
    ValueError
        A stem that is not two digits, an optional letter, ``_`` and a name.
    """
    match = STEM.fullmatch(stem)
    if match is None:
        raise ValueError(
            f"a notebook's stem is two digits, an optional letter, '_' and a lowercase name "
            f"(e.g. '16_sliding_window', '16a_alibi'), but got {stem!r}."
        )
    return int(match.group(1)), match.group(2)


def stem_number(stem: str) -> str:
    """The notebook's number as the text says it: ``"5"`` (``05_scores``), ``"16a"``."""
    n, letter = stem_key(stem)
    return f"{n}{letter}"


@dataclass(frozen=True)
class Kind:
    """What a notebook of one kind must bring.

    Attributes
    ----------
    name : str
        The kind, e.g. ``"extension"``.
    label : str
        How the README's route names a run of such notebooks (``{n}``: their count).
    brings : tuple of str
        What each must bring: ``"tests"`` (its own test modules), ``"catalogue"``
        (every exercise judged by a catalogue of mistakes), ``"widgets"``.
    """

    name: str
    label: str
    brings: tuple[str, ...]


@dataclass(frozen=True)
class Notebook:
    """One notebook of the course.

    Attributes
    ----------
    stem : str
        File name without ``.ipynb``, e.g. ``"07_softmax"``.
    title : str
        What the notebook teaches, as the tables list it.
    kind : str
        Its kind, a key of :data:`KINDS` (what it must bring).
    widgets : tuple of str
        The modules of ``mhsa_helpers/widgets/`` it shows.
    tests : tuple of str
        Its own test modules, ``tests/<name>.py``.
    answers : str
        ``tests/support/<answers>.py``: an extension's answers as a learner writes
        them (``tests/test_ext_checks.py`` runs them), or ``""``.
    """

    stem: str
    title: str
    kind: str = "step"
    widgets: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    answers: str = ""

    @property
    def step(self) -> str:
        """The title (the name the tables have long used)."""
        return self.title

    @property
    def number(self) -> str:
        """Its number as the text says it: ``"5"`` (``05_scores``), ``"16a"`` (``16a_alibi``)."""
        return stem_number(self.stem)


@dataclass(frozen=True)
class Exercise:
    """One function the learner writes: its contract, and how it is graded.

    Attributes
    ----------
    name : str
        The function's name, as the learner defines it and ``mh`` exports it.
    notebook : str
        Stem of the notebook that asks for it.
    reference : str
        The module of :mod:`mhsa_helpers.reference` holding its reference function.
    signature : str
        Its parameter list, exactly as the answer cell's ``def`` line has it,
        e.g. ``"(Z, axis=-1)"``.
    meaning : str
        One line: what it computes (its docstring's summary line).
    parameters : str
        The numpydoc ``Parameters`` entries, one per parameter, in order, with
        shapes in sklearn style (``X : ndarray of shape (..., T, d_model)``).
    returns : str
        The numpydoc ``Returns`` entries, with shapes.
    grade_id : str
        nbgrader id of the test cell that grades it (named after behaviour).
    points : int
        Points of that test cell.
    checks : str
        The test cell's docstring: ``"Check that …"``.
    details : str
        One more paragraph of the docstring, or ``""``.
    raises : str
        The numpydoc ``Raises`` entries: what it refuses (``ValueError`` on one line,
        the condition indented under it), or ``""``. Its check has, for each error, a
        visible and a hidden call that must raise it (``tests/test_registry.py``).
    catalogue : bool
        Whether its check judges by a catalogue of ``(hint, wrong output)`` mistakes.

    The hidden tests' inputs are not here: they come from a key that only
    the instructor's course directory holds
    (:func:`mhsa_helpers.checks.hidden_seed`).
    """

    name: str
    notebook: str
    reference: str
    signature: str
    meaning: str
    parameters: str
    returns: str
    grade_id: str
    points: int
    checks: str
    details: str = ""
    raises: str = ""
    catalogue: bool = True

    @property
    def answer_id(self) -> str:
        """nbgrader id of the answer cell."""
        return f"{self.name}_answer"

    @property
    def may_use(self) -> tuple[str, ...]:
        """Reference functions the answer may call through ``mh``: those of earlier notebooks."""
        earlier = [nb.stem for nb in NOTEBOOKS]
        earlier = earlier[: earlier.index(self.notebook)]
        return tuple(e.name for e in EXERCISES if e.notebook in earlier)

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The names the ``Parameters`` entries document, in order."""
        return _entry_names(self.parameters)

    @property
    def raised(self) -> tuple[str, ...]:
        """The exceptions its ``Raises`` entries name, in order (``("ValueError",)``)."""
        return tuple(line.strip() for line in _entry_lines(self.raises))

    @property
    def return_entries(self) -> tuple[tuple[str, str], ...]:
        """``(name, type)`` of each ``Returns`` entry, in order."""
        return tuple(_split_entry(line) for line in _entry_lines(self.returns))

    def docstring(self, notes: str = "") -> str:
        """The function's numpydoc docstring, unindented, without quotes.

        Parameters
        ----------
        notes : str, optional
            A paragraph of the implementation's own, put after the contract's
            details and before its ``Parameters`` (the reference's notes).

        Returns
        -------
        doc : str
            The meaning, the details, ``notes``, then the ``Parameters``, ``Returns``
            and (for a function that refuses some inputs) ``Raises`` sections.
        """
        prose = [
            textwrap.fill(p, DOC_WIDTH, break_on_hyphens=False)
            for p in (self.meaning, self.details)
        ]
        parts = [*prose, notes.strip()]
        parts += [f"Parameters\n----------\n{self.parameters}"]
        parts += [f"Returns\n-------\n{self.returns}"]
        if self.raises:
            parts += [f"Raises\n------\n{self.raises}"]
        return "\n\n".join(p for p in parts if p)


#: The width the registry's one-line meaning and details are wrapped to in a docstring:
#: an answer cell shows them whole at 1400 px, with no sideways scroll.
DOC_WIDTH = 88


def _entry_lines(section: str) -> list[str]:
    """The header lines (``name : type``) of a numpydoc section's entries."""
    return [line for line in section.splitlines() if line and not line[0].isspace()]


def _split_entry(line: str) -> tuple[str, str]:
    name, sep, type_ = line.partition(" : ")
    if not sep:
        raise ValueError(f"a numpydoc entry must read 'name : type', but got {line!r}.")
    return name, type_


def _entry_names(section: str) -> tuple[str, ...]:
    return tuple(
        part.strip() for line in _entry_lines(section) for part in _split_entry(line)[0].split(",")
    )


_REQUIRED = (
    "name",
    "notebook",
    "reference",
    "signature",
    "meaning",
    "parameters",
    "returns",
    "grade_id",
    "points",
    "checks",
)
_OPTIONAL = ("details", "raises", "catalogue")
_NOTEBOOK_REQUIRED = ("stem", "title", "kind", "widgets", "tests")
_NOTEBOOK_OPTIONAL = ("answers",)
_BRINGS = ("tests", "catalogue", "widgets")


def _fields(path: Path, what: str, entry: dict, required: tuple, optional: tuple) -> None:
    missing = [f for f in required if f not in entry]
    unknown = sorted(set(entry) - set(required) - set(optional))
    if missing or unknown:
        name = entry.get("name", entry.get("stem", "?"))
        also = f" (and optionally {', '.join(optional)})" if optional else ""
        raise ValueError(
            f"{path.name}: {what} ({name}) must have the fields {', '.join(required)}{also}, "
            f"but it misses {missing or 'none'} and has unknown {unknown or 'none'}."
        )


def _read(path: Path = CONTRACTS) -> tuple[dict, tuple, tuple]:
    """The kinds, notebooks and exercises of ``path`` (``exercises.toml``), in file order.

    Raises
    ------
    ValueError
        An entry with a missing or unknown field, a notebook of no kind, stems out of
        course order, an exercise of no notebook or out of its notebook's order.
    """
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    kinds = {}
    for name, entry in data.get("kinds", {}).items():
        _fields(path, f"kind {name}", {"name": name, **entry}, ("name", "label", "brings"), ())
        wrong = sorted(set(entry["brings"]) - set(_BRINGS))
        if wrong:
            raise ValueError(f"{path.name}: kind {name} brings {wrong}; each is one of {_BRINGS}.")
        kinds[name] = Kind(name, entry["label"], tuple(entry["brings"]))
    notebooks = []
    for k, entry in enumerate(data.get("notebook", [])):
        _fields(path, f"notebook {k + 1}", entry, _NOTEBOOK_REQUIRED, _NOTEBOOK_OPTIONAL)
        if entry["kind"] not in kinds:
            raise ValueError(
                f"{path.name}: notebook {entry['stem']} is of kind {entry['kind']!r}; the kinds "
                f"are {', '.join(kinds) or 'none'} ([kinds.NAME] tables)."
            )
        stem_key(entry["stem"])
        lists = {f: tuple(entry[f]) for f in ("widgets", "tests")}
        notebooks.append(Notebook(**{**entry, **lists}))
    stems = [nb.stem for nb in notebooks]
    if stems != sorted(stems, key=stem_key) or len(set(stems)) != len(stems):
        raise ValueError(
            f"{path.name}: the notebooks must be listed once each, in the order of their "
            f"numbers, but are listed {stems}."
        )
    exercises = []
    for k, entry in enumerate(data.get("exercise", [])):
        _fields(path, f"exercise {k + 1}", entry, _REQUIRED, _OPTIONAL)
        if entry["notebook"] not in stems:
            raise ValueError(
                f"{path.name}: exercise {entry['name']} is of notebook {entry['notebook']!r}, "
                "which no [[notebook]] entry names."
            )
        if exercises and stems.index(entry["notebook"]) < stems.index(exercises[-1].notebook):
            raise ValueError(
                f"{path.name}: exercise {entry['name']} (notebook {entry['notebook']}) comes "
                f"after {exercises[-1].name} (notebook {exercises[-1].notebook}); list each "
                "exercise under its notebook, in course order."
            )
        text = {f: v.strip() for f, v in entry.items() if isinstance(v, str)}
        exercises.append(Exercise(**{**entry, **text}))
    return kinds, tuple(notebooks), tuple(exercises)


def _load(path: Path = CONTRACTS) -> tuple[Exercise, ...]:
    """The exercises of ``path`` (``exercises.toml``), in file order."""
    return _read(path)[2]


#: What each kind of notebook must bring, by kind.
KINDS: dict[str, Kind]
#: Every notebook of the course, in course order, as ``exercises.toml`` lists them.
NOTEBOOKS: tuple[Notebook, ...]
#: Every exercise of the course, in course order, as ``exercises.toml`` writes it.
EXERCISES: tuple[Exercise, ...]
KINDS, NOTEBOOKS, EXERCISES = _read()


def notebook(stem: str) -> Notebook:
    """The notebook ``stem``."""
    for nb in NOTEBOOKS:
        if nb.stem == stem:
            return nb
    stems = ", ".join(n.stem for n in NOTEBOOKS)
    raise KeyError(f"no notebook {stem!r}; the notebooks are {stems}.")


def names() -> list[str]:
    """Every exercise's function name, in course order."""
    return [e.name for e in EXERCISES]


def exercise(name: str) -> Exercise:
    """The exercise whose function is ``name``."""
    for e in EXERCISES:
        if e.name == name:
            return e
    raise KeyError(f"no exercise named {name!r}; the exercises are {', '.join(names())}.")


def by_grade_id(grade_id: str) -> Exercise | None:
    """The exercise graded by the test cell ``grade_id``, or None."""
    return next((e for e in EXERCISES if e.grade_id == grade_id), None)


def of_notebook(stem: str) -> list[Exercise]:
    """The exercises of one notebook, in order."""
    return [e for e in EXERCISES if e.notebook == stem]


def forbidden(name: str) -> frozenset[str]:
    """Reference functions an answer for ``name`` may not call: all but the earlier ones."""
    return frozenset(names()) - set(exercise(name).may_use)


def exercise_table() -> str:
    """The start-here notebook's table: every notebook, its step and its exercises."""
    rows = ["| notebook | step | you write |", "|---|---|---|"]
    for nb in NOTEBOOKS[1:]:
        written = ", ".join(f"`{e.name}`" for e in of_notebook(nb.stem))
        rows.append(f"| `{nb.stem}` | {nb.step} | {written} |")
    return "\n".join(rows)


def function_table() -> str:
    """The README's table: each function the learner writes, where, what it computes, returns."""
    rows = ["| notebook | function | what it computes | returns |", "|---|---|---|---|"]
    for e in EXERCISES:
        returns = "; ".join(f"`{name}` : {type_}" for name, type_ in e.return_entries)
        rows.append(f"| `{e.notebook}` | `{e.name}{e.signature}` | {e.meaning} | {returns} |")
    return "\n".join(rows)
