"""Check that every import points down the layers docs/ARCHITECTURE.md draws.

The contracts are import-linter's, in pyproject.toml: the learner's package
never imports the instructor's, the child program imports nothing else of the
course, and within the learner's package widgets sit over the learner's-or-
reference choice, over the checks, over what runs learner code, over the
reference, over the registry.
"""

from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]


def test_every_import_points_down_the_layers(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    status = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    report = capsys.readouterr().out
    assert status == 0, report
    assert "0 broken" in report and " KEPT" in report, report
