"""``python -m course new-exercise NAME --after STEM``: a new notebook with one exercise.

It writes, for the instructor to fill in (README, "Add your own exercise"):

* the registry entries in ``mhsa_helpers/exercises.toml``: a ``[[notebook]]`` and
  its ``[[exercise]]``, the contract's text marked ``TODO``;
* the reference stub ``mhsa_helpers/reference/<name>.py`` (the formula);
* the check ``mhsa_helpers/checks/step<number>_<slug>.py``: its inputs, its
  catalogue of ``(hint, wrong output)`` mistakes, its verdict by comparison;
* the notebook source ``course/<stem>.py``: the text, the answer cell, the test cell;
* for a kind that brings tests (``[kinds]`` of the registry), ``tests/<module>.py``:
  the notebook's own answer passes both checks (the catalogue is proven by
  ``tests/test_catalogue.py`` with no wiring).

Numbering never renumbers: after the last notebook comes the next number
(``19_induction`` after ``18_training``); between two, the number of the one before
with the next letter (``16a_alibi`` after ``16_sliding_window``, then ``16b_…``). A
notebook keeps its name for good: nbgrader's gradebook, the class report's slip ids
(``step17_softmax_backward:…``), the book's pages and every link name it.

The pure parts (:func:`new_stem`, :func:`notebook_entry`, :func:`exercise_entry`,
:func:`insert_entries`, :func:`paths`) are tested in ``tests/test_scaffold.py``;
the whole, run in a copy of the repository and filled in, in its slow test.
"""

from __future__ import annotations

import ast
import string
from pathlib import Path

from mhsa_helpers.exercises import STEM, stem_key

ROOT = Path(__file__).resolve().parents[1]
TOML = Path("mhsa_helpers") / "exercises.toml"


def new_stem(after: str, stems: list[str], slug: str) -> str:
    """The stem of a notebook named ``slug`` put after ``after``, renumbering nothing.

    Parameters
    ----------
    after : str
        The notebook it follows: its stem (``"16_sliding_window"``) or the number its
        stem begins with (``"16"``, ``"16a"``).
    stems : list of str
        The course's stems, in course order.
    slug : str
        The new notebook's name after its number, e.g. ``"alibi"``.

    Returns
    -------
    str
        After the last notebook, the next number (``"19_alibi"``); between two, the
        number of the one before with the next letter (``"16a_alibi"``).

    Raises
    ------
    ValueError
        ``after`` names no notebook; the next letter is taken or past ``z``; the slug
        is not a lowercase name.
    """
    by_number = {s.split("_")[0]: s for s in stems}
    before = by_number.get(after, after)
    if before not in stems:
        raise ValueError(
            f"--after {after!r} names no notebook; the notebooks are {', '.join(stems)}."
        )
    n, letter = stem_key(before)
    k = stems.index(before)
    if k == len(stems) - 1:
        candidate = f"{n + 1:02d}_{slug}"
    else:
        if letter == "z":
            raise ValueError(f"no letter follows {before!r}'s z: put the notebook elsewhere.")
        candidate = f"{n:02d}{chr(ord(letter) + 1) if letter else 'a'}_{slug}"
    if STEM.fullmatch(candidate) is None:
        raise ValueError(
            f"the notebook's name {slug!r} must be lowercase letters, digits and '_' "
            f"(its stem would be {candidate!r})."
        )
    nxt = stems[k + 1] if k + 1 < len(stems) else None
    if nxt is not None and stem_key(candidate) >= stem_key(nxt):
        raise ValueError(
            f"{candidate!r} would not come before {nxt!r}: add the new notebook after "
            f"{nxt!r} instead, or rename by hand."
        )
    return candidate


def paths(name: str, stem: str, tests: bool) -> dict[str, Path]:
    """The files the scaffold writes for exercise ``name`` in notebook ``stem``, by role."""
    number, _, slug = stem.partition("_")
    out = {
        "registry": TOML,
        "reference": Path("mhsa_helpers") / "reference" / f"{name}.py",
        "check": Path("mhsa_helpers") / "checks" / f"step{number}_{slug}.py",
        "source": Path("course") / f"{stem}.py",
    }
    if tests:
        out["tests"] = Path("tests") / f"{test_module(name)}.py"
    return out


def test_module(name: str) -> str:
    """The test module an exercise's notebook brings: ``test_ext_<name>``."""
    return f"test_ext_{name}"


def _parameters(signature: str) -> list[str]:
    """The parameter names of ``"(seq_len, n_heads=8)"``."""
    try:
        args = ast.parse(f"def f{signature}: pass").body[0].args
    except SyntaxError as exc:
        raise ValueError(
            f"--signature must be a parameter list such as '(X, n_heads)', but got {signature!r}."
        ) from exc
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _literal(text: str) -> str:
    """``text`` as a TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def notebook_entry(stem: str, title: str, kind: str, tests: tuple[str, ...] = ()) -> str:
    """The ``[[notebook]]`` entry of a new notebook, as the registry's text."""
    listed = "[" + ", ".join(f'"{t}"' for t in tests) + "]"
    return "\n".join(
        [
            "[[notebook]]",
            f'stem = "{stem}"',
            f"title = {_literal(title)}",
            f'kind = "{kind}"',
            "widgets = []",
            f"tests = {listed}",
        ]
    )


def exercise_entry(name: str, stem: str, signature: str) -> str:
    """The ``[[exercise]]`` entry of a new exercise: the contract, marked ``TODO``."""
    params = "\n".join(
        f"{p} : TODO type (an array says its shape)\n    TODO." for p in _parameters(signature)
    )
    return "\n".join(
        [
            "[[exercise]]",
            f'name = "{name}"',
            f'notebook = "{stem}"',
            f'reference = "{name}"',
            f'signature = "{signature}"',
            'meaning = "TODO: one line, what it computes."',
            "parameters = '''",
            params,
            "'''",
            "returns = '''",
            "out : TODO type (an array says its shape)",
            "    TODO.",
            "'''",
            "# raises = '''  (optional: what it refuses; uncomment, or delete these lines)",
            "# ValueError",
            "#     If TODO (the condition, e.g. tau is not positive).",
            "# '''",
            f'grade_id = "{name}_is_right"',
            "points = 2",
            f'checks = "Check that {name} TODO."',
        ]
    )


def insert_entries(text: str, after: str, entries: str) -> str:
    """The registry's ``text`` with ``entries`` put after notebook ``after``'s entries.

    They go before the next ``[[notebook]]`` entry (or at the end), so that the
    notebooks and their exercises stay in course order; every other line is kept.
    """
    lines = text.splitlines(keepends=True)
    begins = [k for k, line in enumerate(lines) if line.strip() == "[[notebook]]"]
    stems = [ln.strip() for k in begins for ln in lines[k + 1 : k + 2]]
    mine = [k for k, s in zip(begins, stems, strict=True) if s == f'stem = "{after}"']
    if not mine:
        raise ValueError(f"the registry has no [[notebook]] entry whose stem is {after!r}.")
    later = [k for k in begins if k > mine[0]]
    if later:
        at = later[0]
        return "".join(lines[:at]) + entries.rstrip("\n") + "\n\n" + "".join(lines[at:])
    return text.rstrip("\n") + "\n\n" + entries.rstrip("\n") + "\n"


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


REFERENCE = '''\
"""The reference {name}.

Of notebook {stem}; its contract is in ``exercises.toml``.

Write the formula below; the docstring says only how it computes: the contract
(meaning, parameters, returns) is put in front of it at import, from the registry.
"""

from __future__ import annotations

__all__ = ["{name}"]


def {name}{signature}:
    """TODO: how it computes, in a sentence or two."""
    raise NotImplementedError("TODO: the formula, in this file.")
'''

CHECK = '''\
"""The check of {name}, notebook {number}.

Its inputs, its catalogue of mistakes and its verdict (README, "What every check expects").
"""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from .comparison import compare
from .core import Call, Check

#: Each mistake the check names: one sentence, what was done and what to do instead.
#: (A sentence another check module already says is imported from .hints, never
#: written again: tests/test_one_voice.py.)
TODO_MISTAKE = "TODO: the mistake, and what to do instead."


def mistakes(*args) -> list:
    """``(hint, wrong output)`` for each known mistake, computed from the call's arguments.

    A wrong output is what a function making that mistake returns (None where this
    input cannot show it); tests/test_catalogue.py proves that some visible input
    tells each one apart from the right answer and from every other mistake.
    """
    return [
        (TODO_MISTAKE, None),  # TODO: a wrong output, computed from args
    ]


class {cls}(Check):
    name = "{name}"
    passed = "TODO: what passed, on which inputs (the line under a tick)."
    passed_hidden = "TODO: what passed on random inputs."
    #: The axes of the first array argument without its batch axes, which lead: (..., T, d).
    core_ndim = 2

    def visible(self):
        """The visible test's calls: the worked examples and the edge cases."""
        rng = np.random.default_rng(0)
        # A refusal of the registry's `raises` is a call that must raise, visible and hidden:
        # Call(args, raises="ValueError", context={{"why": "a tau that is not positive",
        #      "names": "tau"}}, own=True)  # own: no mh function it may call refuses it
        return [Call(todo_arguments(rng)) for _ in range(3)]

    def hidden(self, rng):
        """The hidden test's calls, drawn from ``rng``."""
        return [Call(todo_arguments(rng)) for _ in range(4)]

    def catalogue(self, call):
        if call.raises is not None:  # a call that must raise: no value to compare
            return None, []
        expected = ref.{name}(*call.args, **call.kwargs)
        return expected, mistakes(*call.args, **call.kwargs)

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        compare(self.name, got, expected, "the output", known)


def todo_arguments(rng) -> tuple:
    """TODO: one call's arguments (replace this function).

    In the order of the registry's signature: {signature}
    """
    raise NotImplementedError("TODO: the check's inputs")
'''

SOURCE = """\
# %% [markdown]
# # {title_cap}
#
# TODO: what this notebook teaches, and why it matters.

# %% setup

# %% [markdown]
# ## 1. TODO: the idea
#
# TODO: the text, and the formula as a display equation (numbered by the build):
#
# $$\\text{{TODO}}$$
#
# ### Exercise {number}.1 — `{name}`


# %% answer="{name}"
def {name}{signature}:
    ### BEGIN SOLUTION
    raise NotImplementedError("TODO: the solution")
    ### END SOLUTION


# %% tests="{name}"
"""

TESTS = '''\
"""The check of {name} on the notebook's own answer.

The notebook: course/{stem}.py.
Written by ``python -m course new-exercise``. Each catalogued mistake is proven by
tests/test_catalogue.py with no wiring, and each refusal of the registry by
tests/test_registry.py; the exercise's own properties go here.
"""

from pathlib import Path

import jupytext

from tests.support.extensions import load, verdict

NAME = "{name}"
ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "course" / "{stem}.py"


def solution() -> str:
    """The answer cell of the notebook's source, its solution markers dropped."""
    cells = jupytext.read(SOURCE, fmt="py:percent").cells
    (cell,) = [c for c in cells if c.metadata.get("answer") == NAME]
    return "\\n".join(ln for ln in cell.source.splitlines() if "### " not in ln)


def test_the_notebook_s_answer_passes_the_visible_and_the_hidden_check():
    fn = load(solution(), NAME)
    assert verdict(NAME, fn) is None, verdict(NAME, fn)
    assert verdict(NAME, fn, hidden=True) is None, verdict(NAME, fn, hidden=True)


def test_an_answer_that_returns_nothing_fails():
    said = verdict(NAME, lambda *args, **kwargs: None)
    assert said is not None and NAME in said, said
'''


def new_exercise(
    name: str,
    after: str,
    title: str | None = None,
    kind: str = "extension",
    signature: str = "(X)",
    slug: str | None = None,
    root: Path = ROOT,
) -> list[str]:
    """Write a new notebook with the exercise ``name`` after the notebook ``after``.

    Returns
    -------
    list of str
        One line per file written, then what to fill in.

    Raises
    ------
    ValueError
        A name that is not an identifier or is taken, a kind the registry does not
        know, a place :func:`new_stem` refuses, a file that exists already.
    """
    import tomllib

    if not name.isidentifier() or name != name.lower() or name.startswith("_"):
        raise ValueError(f"NAME must be a lowercase Python name, e.g. alibi_bias; got {name!r}.")
    data = tomllib.loads((root / TOML).read_text(encoding="utf-8"))
    if name in {e["name"] for e in data["exercise"]}:
        raise ValueError(f"the registry has an exercise {name!r} already.")
    if kind not in data["kinds"]:
        known = ", ".join(data["kinds"])
        raise ValueError(f"--kind {kind!r} is none of the registry's kinds: {known}.")
    _parameters(signature)
    stems = [nb["stem"] for nb in data["notebook"]]
    by_number = {s.split("_")[0]: s for s in stems}
    before = by_number.get(after, after)
    stem = new_stem(after, stems, slug or name)
    brings_tests = "tests" in data["kinds"][kind]["brings"]
    files = paths(name, stem, brings_tests)
    for role, path in files.items():
        if role != "registry" and (root / path).exists():
            raise ValueError(f"{path} exists already: the scaffold writes only new files.")
    number = stem.split("_")[0]
    title = title or f"{kind}: TODO what it teaches"
    shown = title.split(": ", 1)[-1] if title.startswith(f"{kind}: ") else title
    fields = {
        "name": name,
        "stem": stem,
        "number": number,
        "signature": signature,
        "cls": _class_name(name),
        "title_cap": shown[:1].upper() + shown[1:],
    }
    tests = (test_module(name),) if brings_tests else ()
    entries = notebook_entry(stem, title, kind, tests) + "\n\n"
    entries += exercise_entry(name, stem, signature)
    toml = root / TOML
    toml.write_text(insert_entries(toml.read_text(encoding="utf-8"), before, entries), "utf-8")
    texts = {"reference": REFERENCE, "check": CHECK, "source": SOURCE, "tests": TESTS}
    for role, path in files.items():
        if role in texts:
            (root / path).write_text(string.Formatter().vformat(texts[role], (), fields), "utf-8")
    written = [f"wrote {path}" for path in files.values()]
    return [
        *written,
        f"Now fill in, by hand: the TODOs of {files['registry']} (the contract), the formula in "
        f"{files['reference']}, the inputs and mistakes in {files['check']}, the text and the "
        f"solution in {files['source']}; then run `.venv/bin/python course/build.py` and "
        "`.venv/bin/python -m course readme`, and the quick loop.",
    ]
