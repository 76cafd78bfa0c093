"""The course's exercises: the one list that everything else reads.

Every exercise is one function the learner writes. Its contract (signature,
parameters and returns with their shapes, a one-line meaning) and how it is
graded are written once, in ``exercises.toml`` next to this module, and read
into :data:`EXERCISES`. From there come the reference's exports and
docstrings (:mod:`mhsa_helpers.reference`), the answer stubs' docstrings and
the test cells of the notebooks (``course/build.py``), the checks, the
progress report, the explorer, the grading (which test cell grades which
function, for how many points) and the tables of the README and of the
start-here notebook; ``tests/test_registry.py`` proves that they agree.

Adding an exercise means: an entry in ``exercises.toml``, a reference
function, a check (``mhsa_helpers/checks/``) and its cells in a notebook
source (``course/``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CONTRACTS",
    "EXERCISES",
    "NOTEBOOKS",
    "Exercise",
    "Notebook",
    "by_grade_id",
    "exercise",
    "exercise_table",
    "forbidden",
    "function_table",
    "names",
    "of_notebook",
]

#: The data file every exercise is written in, once.
CONTRACTS = Path(__file__).resolve().parent / "exercises.toml"


@dataclass(frozen=True)
class Notebook:
    """One notebook of the course.

    Attributes
    ----------
    stem : str
        File name without ``.ipynb``, e.g. ``"07_softmax"``.
    step : str
        What the notebook teaches, as the tables list it.
    """

    stem: str
    step: str


@dataclass(frozen=True)
class Exercise:
    """One function the learner writes: its contract, and how it is graded.

    Attributes
    ----------
    name : str
        The function's name, as the learner defines it and ``mh`` exports it.
    notebook : str
        Stem of the notebook that asks for it.
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

    The hidden tests' inputs are not here: they come from a key that only
    the instructor's course directory holds
    (:func:`mhsa_helpers.checks.hidden_seed`).
    """

    name: str
    notebook: str
    signature: str
    meaning: str
    parameters: str
    returns: str
    grade_id: str
    points: int
    checks: str
    details: str = ""

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
            The meaning, the details, ``notes``, then the ``Parameters`` and
            ``Returns`` sections.
        """
        parts = [self.meaning, self.details, notes.strip()]
        parts += [f"Parameters\n----------\n{self.parameters}"]
        parts += [f"Returns\n-------\n{self.returns}"]
        return "\n\n".join(p for p in parts if p)


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
    "signature",
    "meaning",
    "parameters",
    "returns",
    "grade_id",
    "points",
    "checks",
)


def _load(path: Path = CONTRACTS) -> tuple[Exercise, ...]:
    """The exercises of ``path`` (``exercises.toml``), in file order."""
    entries = tomllib.loads(path.read_text(encoding="utf-8"))["exercise"]
    exercises = []
    for k, entry in enumerate(entries):
        missing = [f for f in _REQUIRED if f not in entry]
        unknown = sorted(set(entry) - set(_REQUIRED) - {"details"})
        if missing or unknown:
            raise ValueError(
                f"{path.name}: exercise {k + 1} ({entry.get('name', '?')}) must have the "
                f"fields {', '.join(_REQUIRED)} (and optionally details), but it misses "
                f"{missing or 'none'} and has unknown {unknown or 'none'}."
            )
        text = {f: v.strip() for f, v in entry.items() if isinstance(v, str)}
        exercises.append(Exercise(**{**entry, **text}))
    return tuple(exercises)


NOTEBOOKS: tuple[Notebook, ...] = (
    Notebook("00_start_here", "what the course is, how to check your work, your progress"),
    Notebook("01_input", "1. the input: token vectors + positional encoding"),
    Notebook("02_parameters", "2. the learnable parameters $W_Q, W_K, W_V, W_O$"),
    Notebook("03_qkv", "3. queries, keys and values"),
    Notebook("04_heads", "4. dividing into heads"),
    Notebook("05_scores", "5. the score matrix $Z = QK^\\top/\\sqrt{d_k}$"),
    Notebook("06_masking", "6. masking"),
    Notebook("07_softmax", "7. the attention matrix"),
    Notebook("08_head_output", "8. the output of a head"),
    Notebook("09_multi_head", "9. concatenating the heads, output projection"),
    Notebook("10_capstone", "the whole layer, an explorer, multi-query attention"),
    Notebook("11_rope", "extension: rotary position embeddings (RoPE)"),
    Notebook("12_gqa", "extension: grouped-query attention"),
    Notebook("13_kv_cache", "extension: decoding with a KV cache"),
    Notebook("14_tiled", "extension: tiled attention with an online softmax"),
    Notebook("15_cross", "extension: cross-attention"),
    Notebook("16_sliding_window", "extension: sliding-window masks"),
    Notebook("17_backward", "the backward pass: gradients of the softmax, a head, the layer"),
    Notebook(
        "18_training", "training a tiny transformer with your backward pass: what its heads learn"
    ),
)

#: Every exercise of the course, in course order, as ``exercises.toml`` writes it.
EXERCISES: tuple[Exercise, ...] = _load()


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
