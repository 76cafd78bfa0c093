"""One voice: a sentence that several checks say is written once (issue 47).

Every string of :data:`LENGTH` characters or more that a check module writes
out (docstrings aside) appears in one check module only; a sentence two
checks share lives in :mod:`mhsa_helpers.checks.hints` and both import it.
"""

import ast
from pathlib import Path

import mhsa_helpers.checks

LENGTH = 30
CHECKS = Path(mhsa_helpers.checks.__file__).parent


def said(path: Path) -> list[str]:
    """The texts ``path`` writes out: string constants and f-strings' literal parts, no
    docstrings."""
    tree = ast.parse(path.read_text())
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def test_no_sentence_is_written_in_two_check_modules():
    where: dict[str, set[str]] = {}
    for path in sorted(CHECKS.glob("*.py")):
        for text in said(path):
            for i in range(len(text) - LENGTH + 1):
                where.setdefault(text[i : i + LENGTH], set()).add(path.name)
    twice = {piece: sorted(files) for piece, files in where.items() if len(files) > 1}
    # one line per group of modules, with the first piece they share
    groups: dict[tuple, str] = {}
    for piece, files in sorted(twice.items()):
        groups.setdefault(tuple(files), piece)
    assert not groups, "\n".join(f"{', '.join(f)}: {p!r}" for f, p in groups.items())


def test_the_test_sees_a_copied_sentence(tmp_path):
    """The detector itself: a copy in an f-string's literal part is found, a docstring is not."""
    path = tmp_path / "m.py"
    path.write_text(
        '"""the scores are not scaled: divide Q·Kᵀ by √d_k."""\n'
        'x = f"a {1} the scores are not scaled: divide"\n'
    )
    assert said(path) == ["a ", " the scores are not scaled: divide"]
