"""Every notebook brings what its kind must: a missing piece fails the quick loop, named.

What each notebook must bring is the registry's (``exercises.toml``: its kind's ``brings``,
and the notebook's own ``widgets``, ``tests`` and ``answers``), read by :func:`brought` only.
The pieces every exercise brings whatever its kind are proven elsewhere, once: a check
(``tests/test_checks.py``), a reference with the registry's signature
(``tests/test_registry.py``), the notebook's answer and test cells with their grade ids
(``tests/test_registry.py`` in the source, ``tests/test_course.py`` in the built notebooks);
the README's prose against the registry: ``tests/test_readme.py``.
"""

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from mhsa_helpers import exercises
from mhsa_helpers.checks import CHECKS
from mhsa_helpers.exercises import NOTEBOOKS, of_notebook

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Pieces:
    """What one notebook must bring, as the registry says it."""

    stem: str
    kind: str
    brings: tuple[str, ...]
    widgets: tuple[str, ...]
    tests: tuple[str, ...]
    answers: str


def brought(nb) -> Pieces:
    """What notebook ``nb`` of the registry must bring: the one place reading those fields."""
    return Pieces(
        nb.stem, nb.kind, tuple(exercises.KINDS[nb.kind].brings), nb.widgets, nb.tests, nb.answers
    )


def _defines_tests(path: Path) -> bool:
    """Whether the module at ``path`` defines a test function."""
    tree = ast.parse(path.read_text())
    return any(
        isinstance(n, ast.FunctionDef) and n.name.startswith("test_") for n in ast.walk(tree)
    )


def _catalogued(name: str) -> bool:
    """Whether the check of exercise ``name`` judges by a catalogue of mistakes."""
    check = CHECKS.get(name)
    return check is not None and check.catalogue(check.calls()[0]) is not None


def missing(p: Pieces, names: list[str], root: Path = ROOT) -> list[str]:
    """One sentence for each piece notebook ``p`` (asking for exercises ``names``) lacks."""
    said = []
    where = f"notebook {p.stem} (kind {p.kind or 'not given'})"
    entry = "its [[notebook]] entry in mhsa_helpers/exercises.toml"
    if "tests" in p.brings and not p.tests:
        said.append(
            f"{where} must bring its own test module: name it in {entry} "
            f'(tests = ["test_ext_<name>"]) and write tests/test_ext_<name>.py; it names none.'
        )
    for module in p.tests:
        path = root / "tests" / f"{module}.py"
        if not path.is_file():
            said.append(f"{where} names the test module {module}, but tests/{module}.py is absent.")
        elif not _defines_tests(path):
            said.append(f"{where}'s test module tests/{module}.py defines no test_ function.")
    if "catalogue" in p.brings:
        for name in names:
            if not _catalogued(name):
                said.append(
                    f"{where} must judge {name} by a catalogue of mistakes: its check's "
                    "catalogue() should return (expected, [(hint, wrong_output), …]), "
                    "but it returns None."
                )
    if p.answers:
        path = root / "tests" / "support" / f"{p.answers}.py"
        if not path.is_file():
            said.append(
                f"{where} names the answers module {p.answers}, but "
                f"tests/support/{p.answers}.py is absent."
            )
        else:
            module = importlib.import_module(f"tests.support.{p.answers}")
            extension = getattr(module, "EXTENSION", None)
            if extension is None or not extension.mistakes:
                said.append(
                    f"{where}'s answers module tests/support/{p.answers}.py must define "
                    "EXTENSION = Extension(...) with at least one slip in its mistakes; "
                    f"it has {'no EXTENSION' if extension is None else 'no mistakes'}."
                )
    if "widgets" in p.brings and not p.widgets:
        said.append(f"{where} must bring a widget: name it in {entry} (widgets = [...]).")
    source = root / "course" / f"{p.stem}.py"
    for widget in p.widgets:
        if not (root / "mhsa_helpers" / "widgets" / f"{widget}.py").is_file():
            said.append(
                f"{where} shows the widget {widget}, but mhsa_helpers/widgets/{widget}.py "
                "is absent."
            )
        elif source.is_file() and f"mhsa_helpers.widgets.{widget} import" not in source.read_text():
            said.append(
                f"{where} shows the widget {widget}, but course/{p.stem}.py never imports it "
                f"(from mhsa_helpers.widgets.{widget} import ...)."
            )
    return said


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_each_notebook_brings_what_its_kind_must(nb):
    said = missing(brought(nb), [e.name for e in of_notebook(nb.stem)])
    assert not said, "\n".join(said)


def test_a_notebook_missing_each_piece_is_told_each_one(tmp_path):
    """An extension without its pieces: every one of them named, in its own sentence."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ext_empty.py").write_text("def helper():\n    pass\n")
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "16a_alibi.py").write_text("# no widget imported here\n")
    (tmp_path / "mhsa_helpers" / "widgets").mkdir(parents=True)
    (tmp_path / "mhsa_helpers" / "widgets" / "rope.py").write_text("")
    bare = Pieces("16a_alibi", "extension", ("tests", "catalogue", "widgets"), (), (), "")
    said = missing(bare, ["init_weights"], tmp_path)  # a check without a catalogue
    assert len(said) == 3, said
    assert "own test module" in said[0] and "catalogue" in said[1] and "widget" in said[2]
    named = Pieces(
        "16a_alibi",
        "extension",
        ("tests",),
        ("alibi", "rope"),
        ("test_ext_alibi", "test_ext_empty"),
        "ext_alibi",
    )
    said = missing(named, ["init_weights"], tmp_path)
    assert [s.split(", but ")[-1].split(" defines ")[-1] for s in said] == [
        "tests/test_ext_alibi.py is absent.",
        "no test_ function.",
        "tests/support/ext_alibi.py is absent.",
        "mhsa_helpers/widgets/alibi.py is absent.",
        "course/16a_alibi.py never imports it (from mhsa_helpers.widgets.rope import ...).",
    ], said


def test_the_course_s_own_pieces_are_found_where_the_registry_says():
    """The real files satisfy the test above: a right notebook is not told anything."""
    rope = Pieces("11_rope", "extension", ("tests", "catalogue"), ("rope",), ("test_ext_rope",), "")
    assert missing(rope, ["rotary_embedding"]) == []
