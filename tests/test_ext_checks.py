"""What every extension's check must do, on real learner code: pass a right answer and right
answers written unusually (float32, einsum, loops, lists), name each catalogued slip by its own
hint (and no other's), fail it in the hidden check too, and fail an answer that breaks a
clause of the contract (an input changed in place, a warning, no ValueError), saying so.

The answers are in ``tests/support/ext_*.py``; each extension's own properties are tested in
its ``tests/test_ext_*.py``.
"""

import importlib

import pytest

from mhsa_helpers import checks
from mhsa_helpers.exercises import NOTEBOOKS, of_notebook
from tests.support.extensions import fails, load
from tests.support.marks import right_answer

#: Each extension's answers, from the modules the registry names (a notebook's ``answers``).
ANSWERS = [importlib.import_module(f"tests.support.{nb.answers}") for nb in NOTEBOOKS if nb.answers]
EXTENSIONS = {e.EXTENSION.name: e.EXTENSION for e in ANSWERS}


def test_each_answers_module_holds_its_notebook_s_exercise():
    """A notebook's ``answers`` module (the registry's) holds its exercise's answers."""
    for nb in NOTEBOOKS:
        if nb.answers:
            module = importlib.import_module(f"tests.support.{nb.answers}")
            assert [module.EXTENSION.name] == [e.name for e in of_notebook(nb.stem)], nb.stem


def cases(part: str, right: bool = False) -> list:
    """``(exercise, key)`` of every entry of ``part`` of every extension, with readable ids;
    ``right``: right answers (:func:`~tests.support.marks.right_answer`)."""
    param = right_answer if right else lambda _, *values, id: pytest.param(*values, id=id)
    return [
        param(name, name, key, id=f"{name}-{key}")
        for name, e in EXTENSIONS.items()
        for key in sorted(getattr(e, part))
    ]


def passes(name: str, source: str, capsys) -> None:
    """The answer passes the visible and the hidden check of ``name``, each with its tick."""
    fn = load(source, name)
    checks.check(name, fn)
    checks.check_hidden(name, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


@pytest.mark.parametrize("name", [right_answer(n, n, id=n) for n in sorted(EXTENSIONS)])
def test_the_right_answer_passes(name, capsys):
    passes(name, EXTENSIONS[name].right, capsys)


@pytest.mark.parametrize(("name", "variant"), cases("variants", right=True))
def test_correct_unusual_answers_pass(name, variant, capsys):
    passes(name, EXTENSIONS[name].variants[variant], capsys)


@pytest.mark.parametrize(("name", "mistake"), cases("mistakes"))
def test_each_mistake_fails_with_its_own_hint(name, mistake):
    mistakes = EXTENSIONS[name].mistakes
    source, hint = mistakes[mistake]
    said = fails(name, source)
    assert hint in said, said
    others = [h for _, h in mistakes.values() if h != hint and h in said]
    assert not others, said


@pytest.mark.parametrize(("name", "mistake"), cases("mistakes"))
def test_each_mistake_fails_the_hidden_check(name, mistake):
    fails(name, EXTENSIONS[name].mistakes[mistake][0], hidden=True)


@pytest.mark.parametrize(("name", "clause"), cases("breaches"))
def test_breaking_a_clause_of_the_contract_fails_saying_so(name, clause):
    source, words = EXTENSIONS[name].breaches[clause]
    said = fails(name, source)
    assert all(w in said for w in words), said
