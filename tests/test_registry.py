"""The exercise registry is the one list: exports, checks, tables and sources agree with it."""

from pathlib import Path

import jupytext

import mhsa_helpers as mh
from mhsa_helpers import reference
from mhsa_helpers.execution.saved import answer_namespace
from mhsa_helpers.exercises import (
    EXERCISES,
    NOTEBOOKS,
    exercise,
    forbidden,
    function_table,
    names,
    of_notebook,
)

ROOT = Path(__file__).resolve().parents[1]


def test_reference_and_package_export_every_exercise():
    assert reference.__all__ == names()
    for name in names():
        assert getattr(mh, name) is getattr(reference, name)
        assert name in mh.__all__


def test_grade_ids_and_answer_ids_are_unique():
    for attr in ("name", "grade_id", "answer_id"):
        values = [getattr(e, attr) for e in EXERCISES]
        assert len(set(values)) == len(values), attr


def test_every_exercise_belongs_to_a_notebook_in_course_order():
    stems = [nb.stem for nb in NOTEBOOKS]
    assert [stems.index(e.notebook) for e in EXERCISES] == sorted(
        stems.index(e.notebook) for e in EXERCISES
    )


def test_an_answer_may_use_earlier_notebooks_only():
    assert exercise("positional_encoding").may_use == ()
    assert "softmax" in exercise("attention_head").may_use
    assert {"attention_head", "multi_head_self_attention"} <= forbidden("attention_head")
    assert "split_heads" in forbidden("merge_heads")  # same notebook: not earlier
    assert "multi_head_self_attention" in exercise("multi_query_attention").may_use
    for e in EXERCISES:
        assert e.name in forbidden(e.name)


def test_readme_table_is_the_registry():
    assert function_table() in (ROOT / "README.md").read_text()


def test_each_source_has_the_cells_of_its_exercises():
    for nb in NOTEBOOKS:
        source = jupytext.read(ROOT / "course" / f"{nb.stem}.py", fmt="py:percent")
        answers = [c.metadata["answer"] for c in source.cells if "answer" in c.metadata]
        tests = [c.metadata["tests"] for c in source.cells if "tests" in c.metadata]
        wanted = [e.name for e in of_notebook(nb.stem)]
        assert answers == wanted and tests == wanted, nb.stem
        assert [c.metadata.get("title") for c in source.cells].count("setup") == 1, nb.stem


def test_the_setup_cell_gives_answers_their_namespace():
    setup = {}
    exec((ROOT / "course" / "_setup.py").read_text(), setup)
    for name, value in answer_namespace().items():
        if not name.startswith("__"):
            assert setup[name] is value, name
