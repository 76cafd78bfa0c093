"""``python -m course new-exercise``: its pure parts, and the whole in a copy of the repository.

The slow test is the README's "Add your own exercise" done as an instructor does it:
scaffold ALiBi's bias after notebook 16, fill in only the TODOs of the four files the
README names (the contract, the formula, the inputs and one catalogued mistake, the text
and the solution), build, write the README, and run the quick loop's tests of the registry,
the catalogue, the README and the new test module in that copy: they pass.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from course import scaffold

ROOT = Path(__file__).resolve().parents[1]
#: A course to place notebooks in (the pure parts are given the stems, whatever the registry's).
STEMS = ["00_start_here", "01_input", "15_cross", "16_sliding_window", "17_backward", "18_training"]
REGISTRY = """# a registry, its comments kept

[[notebook]]
stem = "15_cross"
kind = "extension"

[[exercise]]
name = "cross_attention"
notebook = "15_cross"

[[notebook]]
stem = "16_sliding_window"
kind = "extension"

[[exercise]]
name = "sliding_window_mask"
notebook = "16_sliding_window"

[[notebook]]
stem = "17_backward"
kind = "backward"
"""


# --------------------------------------------------------------------------
# the pure parts
# --------------------------------------------------------------------------
def test_after_the_last_notebook_comes_the_next_number():
    assert scaffold.new_stem("18_training", STEMS, "induction") == "19_induction"
    assert scaffold.new_stem("18", STEMS, "induction") == "19_induction"


def test_between_two_notebooks_a_letter_renumbers_nothing():
    assert scaffold.new_stem("16", STEMS, "alibi") == "16a_alibi"
    assert scaffold.new_stem("16_sliding_window", STEMS, "alibi") == "16a_alibi"
    stems = [*STEMS[:4], "16a_alibi", *STEMS[4:]]
    assert scaffold.new_stem("16a", stems, "more") == "16b_more"
    with pytest.raises(ValueError, match=r"'16a_x' would not come before '16a_alibi'"):
        scaffold.new_stem("16", stems, "x")


def test_a_place_or_name_off_the_course_is_refused():
    with pytest.raises(ValueError, match=r"--after '99' names no notebook; the notebooks are"):
        scaffold.new_stem("99", STEMS, "x")
    with pytest.raises(ValueError, match=r"lowercase letters, digits and '_'"):
        scaffold.new_stem("16", STEMS, "ALiBi")


def test_the_files_are_named_after_the_stem_and_the_exercise():
    files = scaffold.paths("alibi_bias", "16a_alibi", tests=True)
    assert {k: str(v) for k, v in files.items()} == {
        "registry": "mhsa_helpers/exercises.toml",
        "reference": "mhsa_helpers/reference/alibi_bias.py",
        "check": "mhsa_helpers/checks/step16a_alibi.py",
        "source": "course/16a_alibi.py",
        "tests": "tests/test_ext_alibi_bias.py",
    }
    assert "tests" not in scaffold.paths("f", "05a_f", tests=False)


def test_the_entries_go_between_their_neighbours_and_load():
    text = REGISTRY
    entries = scaffold.notebook_entry(
        "16a_alibi", 'extension: ALiBi, "a bias"', "extension", ("test_ext_alibi_bias",)
    )
    entries += "\n\n" + scaffold.exercise_entry("alibi_bias", "16a_alibi", "(seq_len, n_heads=2)")
    new = scaffold.insert_entries(text, "16_sliding_window", entries)
    assert new.replace(entries.rstrip("\n") + "\n\n", "", 1) == text  # nothing else changed
    data = tomllib.loads(new)
    stems = [nb["stem"] for nb in data["notebook"]]
    assert stems[stems.index("16_sliding_window") + 1] == "16a_alibi"
    (added,) = [nb for nb in data["notebook"] if nb["stem"] == "16a_alibi"]
    assert added["title"] == 'extension: ALiBi, "a bias"'
    assert added["tests"] == ["test_ext_alibi_bias"]
    (exercise,) = [e for e in data["exercise"] if e["name"] == "alibi_bias"]
    assert exercise["signature"] == "(seq_len, n_heads=2)"
    assert exercise["parameters"].count(": TODO type") == 2
    names = [e["name"] for e in data["exercise"]]
    assert names[names.index("sliding_window_mask") + 1] == "alibi_bias"


def test_an_entry_after_the_last_notebook_goes_at_the_end():
    new = scaffold.insert_entries(REGISTRY, "17_backward", "[[notebook]]\nstem = 'x'")
    assert new == REGISTRY.rstrip("\n") + "\n\n[[notebook]]\nstem = 'x'\n"
    with pytest.raises(ValueError, match="no \\[\\[notebook\\]\\] entry whose stem is '14_tiled'"):
        scaffold.insert_entries(REGISTRY, "14_tiled", "")


def test_what_the_scaffold_writes_passes_ruff_before_any_edit(tmp_path):
    """The files as written, TODOs and all, pass ``ruff check`` and ``ruff format --check``
    with the course's settings: the quick loop's lint never fails on the scaffold's lines."""
    for folder in ("mhsa_helpers/reference", "mhsa_helpers/checks", "course", "tests"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").touch()  # packages, as in the course: first-party
    for path in ("pyproject.toml", "mhsa_helpers/exercises.toml"):
        shutil.copy(ROOT / path, tmp_path / path)
    last = tomllib.loads((ROOT / "mhsa_helpers" / "exercises.toml").read_text())["notebook"][-1]
    said = scaffold.new_exercise(
        "grouped_temperature_softmax_backward", after=last["stem"], root=tmp_path,
        signature="(Z, tau, n_heads, mask=None, axis=-1)", title="extension: a long name",
    )  # fmt: skip
    written = [ln.removeprefix("wrote ") for ln in said if ln.startswith("wrote ")]
    python = [p for p in written if p.endswith(".py")]
    assert len(python) == 4, said
    for args in (["check", "--no-cache"], ["format", "--check", "--no-cache"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *args, *python],
            cwd=tmp_path, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, f"ruff {args[0]} on the scaffold's files:\n{done.stdout}"
    data = tomllib.loads((tmp_path / "mhsa_helpers" / "exercises.toml").read_text())
    (entry,) = [e for e in data["exercise"] if e["name"] == "grouped_temperature_softmax_backward"]
    assert "raises" not in entry  # the refusal's form is there, commented out


def test_the_readme_s_example_command_works_as_written_and_writes_the_files_it_names(tmp_path):
    """The README's scaffold command (written from the registry) is accepted by the scaffold
    on today's course, and writes the very files the README's sentence under it names."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    part = text.split("<!-- BEGIN registry: example -->", 1)[1].split("<!-- END registry", 1)[0]
    (line,) = [ln for ln in part.splitlines() if "-m course new-exercise" in ln]
    argv = shlex.split(line)[3:]  # after `.venv/bin/python -m course`
    assert argv[0] == "new-exercise", line
    options = dict(zip(argv[2::2], argv[3::2], strict=True))
    for folder in ("mhsa_helpers/reference", "mhsa_helpers/checks", "course", "tests"):
        (tmp_path / folder).mkdir(parents=True)
    shutil.copy(ROOT / "mhsa_helpers" / "exercises.toml", tmp_path / "mhsa_helpers")
    said = scaffold.new_exercise(
        argv[1], after=options.pop("--after"), root=tmp_path,
        **{k.removeprefix("--"): v for k, v in options.items()},
    )  # fmt: skip
    written = {ln.removeprefix("wrote ") for ln in said if ln.startswith("wrote ")}
    named = set(re.findall(r"`([\w/.]+\.py)`", part))
    assert named and named <= written, (named, written)
    assert all((tmp_path / path).is_file() for path in named)


# --------------------------------------------------------------------------
# the whole: an instructor's afternoon, in a copy of the repository
# --------------------------------------------------------------------------
IGNORED = shutil.ignore_patterns(
    ".git", ".venv", ".site-venv", "build", "node_modules", "__pycache__", ".pytest_cache",
    "gradebook.db", "test-output", ".ruff_cache", ".import_linter_cache",
)  # fmt: skip


def fill(path: Path, *edits: tuple[str, str]) -> None:
    """Replace each ``old`` (which must be there) by ``new`` in ``path``: an instructor's edit."""
    text = path.read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, (path, old)
        text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")


REFERENCE = """\
    slopes = 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)  # (h,): head h from 0
    i = np.arange(seq_len)
    distance = np.abs(i[:, None] - i[None, :])  # (T, T)
    return -slopes[:, None, None] * distance"""

SOLUTION = """\
    slopes = 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)
    i = np.arange(seq_len)
    return -slopes[:, None, None] * np.abs(i[:, None] - i[None, :])"""

MISTAKE = (
    "the slopes start at 1: head h (counting from 0) has slope 2^(−8(h + 1)/n_heads), "
    "so the first head's is 2^(−8/n_heads), not 2^0."
)


def alibi(root: Path) -> None:
    """Fill in the TODOs the scaffold left for ``alibi_bias``: the README's four files."""
    fill(
        root / "mhsa_helpers" / "exercises.toml",
        ('meaning = "TODO: one line, what it computes."', 'meaning = "ALiBi\'s bias per head."'),
        (
            "seq_len : TODO type (an array says its shape)\n    TODO.",
            "seq_len : int\n    Number of positions T.",
        ),
        (
            "n_heads : TODO type (an array says its shape)\n    TODO.",
            "n_heads : int\n    Number of heads h.",
        ),
        (
            "out : TODO type (an array says its shape)\n    TODO.",
            "B : ndarray of shape (n_heads, seq_len, seq_len)\n    −slope_h · |i − j|.",
        ),
        ('checks = "Check that alibi_bias TODO."', 'checks = "Check that alibi_bias is ALiBi."'),
    )
    fill(
        root / "mhsa_helpers" / "reference" / "alibi_bias.py",
        ("annotations\n", "annotations\n\nimport numpy as np\n"),
        ('"""TODO: how it computes, in a sentence or two."""', '"""Slopes times distance."""'),
        ('    raise NotImplementedError("TODO: the formula, in this file.")', REFERENCE),
    )
    fill(
        root / "mhsa_helpers" / "checks" / "step16a_alibi_bias.py",
        ("import numpy as np\n\n", ""),
        (
            'TODO_MISTAKE = "TODO: the mistake, and what to do instead."',
            f"FROM_ONE = (\n    {MISTAKE[:60]!r}\n    {MISTAKE[60:]!r}\n)",
        ),
        (
            "def mistakes(*args) -> list:",
            "def mistakes(seq_len, n_heads) -> list:",
        ),
        (
            "        (TODO_MISTAKE, None),  # TODO: a wrong output, computed from args",
            "        (FROM_ONE, ref.alibi_bias(seq_len, n_heads) * 2.0 ** (8.0 / n_heads)),",
        ),
        ('"TODO: what passed, on which inputs (the line under a tick)."', '"ALiBi, 1 to 8 heads."'),
        ('"TODO: what passed on random inputs."', '"ALiBi on random sizes."'),
        ("        rng = np.random.default_rng(0)\n", ""),
        (
            "        return [Call(todo_arguments(rng)) for _ in range(3)]",
            "        return [Call((4, 2)), Call((6, 8)), Call((1, 1))]",
        ),
        (
            "        return [Call(todo_arguments(rng)) for _ in range(4)]",
            "        return [Call((int(rng.integers(2, 9)), int(rng.integers(1, 9))))]",
        ),
    )
    check = root / "mhsa_helpers" / "checks" / "step16a_alibi_bias.py"
    text = check.read_text(encoding="utf-8")
    check.write_text(text[: text.index("\n\ndef todo_arguments")] + "\n", encoding="utf-8")
    fill(
        root / "course" / "16a_alibi_bias.py",
        ("# TODO: what this notebook teaches, and why it matters.", "# A bias instead of PE."),
        ("# ## 1. TODO: the idea", "# ## 1. The bias"),
        ("# TODO: the text, and the formula", "# The bias, the formula"),
        ("# $$\\text{TODO}$$", "# $$B_{hij} = -m_h\\,|i - j|$$"),
        ('    raise NotImplementedError("TODO: the solution")', SOLUTION),
    )


def run(args: list, cwd: Path) -> str:
    """Run ``args`` in ``cwd``, the copy's own package first; its output, or a failure with it."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.mark.slow
def test_an_instructor_adds_an_exercise_by_filling_in_four_files(tmp_path):
    copy = tmp_path / "course-copy"
    shutil.copytree(ROOT, copy, ignore=IGNORED, symlinks=True)
    python = sys.executable
    said = run(
        [python, "-m", "course", "new-exercise", "alibi_bias", "--after", "16",
         "--signature", "(seq_len, n_heads)", "--title", "extension: ALiBi, a bias per head"],
        copy,
    )  # fmt: skip
    written = [ln.removeprefix("wrote ") for ln in said.splitlines() if ln.startswith("wrote")]
    assert written == [
        "mhsa_helpers/exercises.toml",
        "mhsa_helpers/reference/alibi_bias.py",
        "mhsa_helpers/checks/step16a_alibi_bias.py",
        "course/16a_alibi_bias.py",
        "tests/test_ext_alibi_bias.py",
    ], said
    alibi(copy)
    run([python, "course/build.py"], copy)
    run([python, "-m", "course", "readme"], copy)
    assert (copy / "notebooks" / "mhsa" / "16a_alibi_bias.ipynb").exists()
    assert "`11` → `16a`, seven extensions" in (copy / "README.md").read_text(encoding="utf-8")
    out = run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
         "tests/test_registry.py", "tests/test_catalogue.py", "tests/test_readme.py",
         "tests/test_ext_alibi_bias.py", "tests/test_one_voice.py", "tests/test_check_coverage.py",
         "tests/test_layers.py", "tests/test_scaffold.py"],
        copy,
    )  # fmt: skip
    assert " passed" in out and "failed" not in out, out
    run([python, "-m", "ruff", "check", "course", "mhsa_helpers", "tests"], copy)
