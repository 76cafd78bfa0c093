"""The exercise registry is the one list: exports, checks, tables and sources agree with it."""

import ast
import builtins
import importlib.util
import inspect
from pathlib import Path

import jupytext
import nbformat
import pytest

import mhsa_helpers as mh
from mhsa_helpers import reference
from mhsa_helpers.checks import CHECKS
from mhsa_helpers.execution.saved import answer_namespace
from mhsa_helpers.exercises import (
    EXERCISES,
    NOTEBOOKS,
    _load,
    exercise,
    forbidden,
    function_table,
    names,
    of_notebook,
)

ROOT = Path(__file__).resolve().parents[1]


def _course_build():
    """``course/build.py``, a script, loaded as a module."""
    spec = importlib.util.spec_from_file_location("course_build", ROOT / "course" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


answer_cell_source = _course_build().answer_cell_source


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


# --------------------------------------------------------------------------
# the contract, written once (exercises.toml): everything else agrees with it
# --------------------------------------------------------------------------
SHAPED = ("ndarray of shape ", "ndarray of the same shape as ", "ndarray of the shape of ")


def _parameters(signature: str) -> list[str]:
    """The parameter names of a signature such as ``"(Z, axis=-1)"``."""
    tree = ast.parse(f"def f{signature}: pass")
    return [a.arg for a in tree.body[0].args.args]


def _plain_signature(function) -> str:
    """``function``'s parameter list as a ``def`` line writes it, without annotations."""
    sig = inspect.signature(function)
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=bare, return_annotation=inspect.Signature.empty))


def test_every_contract_documents_each_parameter_and_return_with_its_shape():
    for e in EXERCISES:
        assert "\n" not in e.meaning and e.meaning.endswith("."), e.name
        assert list(e.parameter_names) == _parameters(e.signature), e.name
        assert e.return_entries, e.name
        entries = [t for _, t in e.return_entries] + [
            line.partition(" : ")[2] for line in e.parameters.splitlines() if " : " in line
        ]
        for type_ in entries:  # sklearn style: every array says its shape
            if type_.startswith("ndarray"):
                assert type_.startswith((*SHAPED, "ndarray broadcastable to ")), (e.name, type_)
        for text in (e.meaning, e.details, e.parameters, e.returns):
            assert '"""' not in text and "\\" not in text, e.name  # fits in a docstring as is


def test_the_registry_refuses_an_entry_with_a_missing_or_unknown_field(tmp_path):
    path = tmp_path / "exercises.toml"
    path.write_text('[[exercise]]\nname = "f"\nnotebook = "01_input"\nshape = "(T,)"\n')
    with pytest.raises(ValueError, match=r"misses \['reference', 'signature'.*unknown \['shape'\]"):
        _load(path)


def test_reference_functions_have_the_registrys_signatures():
    for e in EXERCISES:
        assert _plain_signature(getattr(reference, e.name)) == e.signature, e.name


def _own_docstring(function) -> str:
    """The docstring ``function`` has in its source file (before the contract is put in)."""
    tree = ast.parse(Path(inspect.getsourcefile(function)).read_text())
    node = next(n for n in tree.body if getattr(n, "name", None) == function.__name__)
    return ast.get_docstring(node) or ""


def test_reference_docstrings_are_the_contracts():
    """``help(mh.softmax)``: the meaning, the reference's own note, the contract's sections."""
    for e in EXERCISES:
        function = getattr(mh, e.name)
        assert inspect.getdoc(function) == e.docstring(notes=_own_docstring(function)), e.name
        raises = f"\n\nRaises\n------\n{e.raises}" if e.raises else ""
        assert inspect.getdoc(function).endswith(
            f"Parameters\n----------\n{e.parameters}\n\nReturns\n-------\n{e.returns}{raises}"
        ), e.name


def test_what_a_function_refuses_is_in_the_registry_and_its_check_asks_for_it():
    """``raises`` in the registry: each exception a builtin one, and the check has a visible and
    a hidden call raising it; a check's call that must raise is one the registry names."""
    for e in EXERCISES:
        assert all(isinstance(getattr(builtins, x, None), type) for x in e.raised), e.raised
        visible = {c.raises for c in CHECKS[e.name].calls()} - {None}
        hidden = {c.raises for seed in (0, 1) for c in CHECKS[e.name].calls(seed)} - {None}
        said = f"{e.name}: the registry's raises names {sorted(e.raised)}, but"
        assert visible == set(e.raised), f"{said} the visible calls raise {sorted(visible)}"
        assert hidden == set(e.raised), f"{said} the hidden calls raise {sorted(hidden)}"
        for call in CHECKS[e.name].calls():  # the reference refuses them too: the rule's code
            if call.raises is not None:
                with pytest.raises(getattr(builtins, call.raises)):
                    getattr(reference, e.name)(*call.args, **call.kwargs)


def test_a_refusal_reaches_the_docstring_as_its_raises_section(tmp_path):
    """The registry's ``raises`` becomes a numpydoc ``Raises`` section after ``Returns``."""
    entry = dict(
        name="f", notebook="01_input", reference="steps", signature="(tau)", meaning="F.",
        parameters="tau : float", returns="out : float", grade_id="f_is_right", points=1,
        checks="Check that f.",
    )  # fmt: skip
    text = "".join(f"{k} = {v!r}\n" for k, v in entry.items()).replace("'", '"')
    refusal = "ValueError\n    If tau is not positive."
    path = tmp_path / "exercises.toml"
    path.write_text(
        '[kinds.step]\nlabel = "s"\nbrings = []\n[[notebook]]\nstem = "01_input"\ntitle = "t"\n'
        f'kind = "step"\nwidgets = []\ntests = []\n[[exercise]]\n{text}'
        f"raises = '''\n{refusal}\n'''\n"
    )
    (e,) = _load(path)
    assert e.raised == ("ValueError",)
    assert e.docstring().endswith(f"Returns\n-------\nout : float\n\nRaises\n------\n{refusal}")


def _answer_cells(directory: Path) -> dict[str, str]:
    """``{exercise: source}`` of the answer cells of every notebook in ``directory``."""
    cells = {}
    for nb in NOTEBOOKS:
        notebook = nbformat.read(directory / f"{nb.stem}.ipynb", as_version=4)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            if cell.metadata.get("nbgrader", {}).get("solution"):
                cells[grade_id.removesuffix("_answer")] = cell.source
    return cells


def test_answer_stubs_carry_the_contract_in_both_versions():
    """Instructor and student notebooks: the registry's ``def`` line and docstring, verbatim."""
    for directory in (ROOT / "solutions" / "mhsa", ROOT / "notebooks" / "mhsa"):
        cells = _answer_cells(directory)
        assert sorted(cells) == sorted(names()), directory
        for e in EXERCISES:
            source = cells[e.name]
            assert source.startswith(f'def {e.name}{e.signature}:\n    """'), (directory, e.name)
            function = ast.parse(source).body[0]
            assert ast.get_docstring(function) == e.docstring(), (directory, e.name)


def test_course_sources_leave_the_docstring_to_the_build():
    for nb in NOTEBOOKS:
        source = jupytext.read(ROOT / "course" / f"{nb.stem}.py", fmt="py:percent")
        for cell in source.cells:
            if "answer" in cell.metadata:
                e = exercise(cell.metadata["answer"])
                assert cell.source.startswith(f"def {e.name}{e.signature}:\n"), e.name
                assert ast.get_docstring(ast.parse(cell.source).body[0]) is None, e.name


def test_the_build_refuses_a_stub_off_the_registry():
    right = "def softmax(Z, axis=-1):\n    return Z\n"
    assert '"""Numerically stable softmax' in answer_cell_source("softmax", right)
    with pytest.raises(ValueError, match=r"registry's signature, 'def softmax\(Z, axis=-1\):'"):
        answer_cell_source("softmax", "def softmax(Z, dim=-1):\n    return Z\n")
    with pytest.raises(ValueError, match="must have no docstring"):
        answer_cell_source("softmax", 'def softmax(Z, axis=-1):\n    """Mine."""\n    return Z\n')
