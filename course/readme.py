"""The README's parts written from the registry, between markers.

Each part sits between ``<!-- BEGIN registry: NAME -->`` and ``<!-- END registry:
NAME -->``; :func:`render` rewrites what is between them from
``mhsa_helpers/exercises.toml`` and leaves every other line as it is.
``python -m course readme`` writes the README so; ``tests/test_readme.py`` fails
when the README differs from what it writes, or when its prose outside the parts
counts notebooks or names a range of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from course.scaffold import new_stem, paths
from mhsa_helpers.exercises import EXERCISES, KINDS, NOTEBOOKS, function_table, of_notebook

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
#: What each piece a kind may bring asks of an instructor (``[kinds]``' ``brings``).
PIECES = {
    "tests": "its own test module (`tests` in its `[[notebook]]` entry; the scaffold writes it)",
    "catalogue": (
        "a catalogue of mistakes for each exercise (`catalogue = true`, the default: "
        "at least one `(hint, wrong output)` entry that tests/test_catalogue.py proves)"
    ),
    "widgets": "a widget (`widgets` in its entry: a module of `mhsa_helpers/widgets/`)",
}


def number_words(n: int) -> str:
    """``n`` as the prose says it: a word up to twelve, digits beyond."""
    return WORDS[n] if n < len(WORDS) else str(n)


def _runs() -> list[tuple[str, list]]:
    """The notebooks after the start, in runs of one kind: ``[(kind, [notebook, ...]), ...]``."""
    runs: list[tuple[str, list]] = []
    for nb in NOTEBOOKS:
        if nb.kind == "start":
            continue
        if runs and runs[-1][0] == nb.kind:
            runs[-1][1].append(nb)
        else:
            runs.append((nb.kind, [nb]))
    return runs


def _short(title: str) -> str:
    """A notebook's title without its step number or kind: ``"1. the input"`` → ``"the input"``."""
    return re.sub(r"^(\d+[a-z]?\. |extension: )", "", title)


def _number(nb) -> str:
    """The notebook's number as its file name begins: ``"05"``, ``"16a"``."""
    return nb.stem.split("_")[0]


def route() -> str:
    """The route through the course: each run of notebooks of one kind, its range and titles."""
    lines = []
    for kind, nbs in _runs():
        label = KINDS[kind].label.format(n=number_words(len(nbs)))
        if len(nbs) == 1:
            title = _short(nbs[0].title)
            also = "" if title.startswith(label) else f" ({label})"
            lines.append(f"* `{_number(nbs[0])}`: {title}{also}.")
            continue
        titles = "; ".join(_short(nb.title) for nb in nbs)
        lines.append(f"* `{_number(nbs[0])}` → `{_number(nbs[-1])}`, {label}: {titles}.")
    return "\n".join(lines)


def brings() -> str:
    """What a notebook of each kind must bring, besides its exercises, with its notebooks."""
    rows = ["| kind | notebooks | must bring besides its exercises |", "|---|---|---|"]
    for kind in KINDS.values():
        nbs = [nb for nb in NOTEBOOKS if nb.kind == kind.name]
        where = ", ".join(f"`{nb.stem}`" for nb in nbs) or "none yet"
        pieces = [PIECES[p] for p in kind.brings] or ["nothing more"]
        if kind.brings and "widgets" not in kind.brings:
            pieces.append("a widget is welcome, not required")
        rows.append(f"| {kind.name} | {where} | {'; '.join(pieces)} |")
    return "\n".join(rows)


def places() -> str:
    """Where ``new-exercise --after`` puts a notebook: after the last one, and between two.

    The stems are the scaffold's own (:func:`course.scaffold.new_stem`), not typed again.
    """
    stems = [nb.stem for nb in NOTEBOOKS]
    last = stems[-1]
    extensions = [nb.stem for nb in NOTEBOOKS if nb.kind == "extension"]
    between = extensions[-1] if extensions and extensions[-1] != last else stems[-2]
    after = stems[stems.index(between) + 1]

    def new(stem: str, stems: list[str]) -> str:
        return _number_of(new_stem(_number_of(stem), stems, "x"))

    first = new(between, stems)
    then = new(
        f"{first}_x", [*stems[: stems.index(after)], f"{first}_x", *stems[stems.index(after) :]]
    )
    return "\n".join(
        [
            f"* after the last notebook, `{last}` (`--after {_number_of(last)}`): the next "
            f"number, `{new(last, stems)}_<name>`;",
            f"* between two, e.g. after `{between}` and before `{after}` "
            f"(`--after {_number_of(between)}`): the number before with the next free letter, "
            f"`{first}_<name>`, then `{then}_…`.",
        ]
    )


#: The README's worked example of the scaffold: an exercise the course does not have.
EXAMPLE = ('"(seq_len, n_heads)"', '"extension: ALiBi, a linear bias per head"')
#: Its name: the first the registry does not have (an instructor may have added ALiBi).
EXAMPLE_NAMES = ("alibi_bias", "alibi_slopes", "alibi_example")


def example() -> str:
    """The scaffold's command for the README's example, put after the last extension.

    Its ``--after`` and the files it writes are the scaffold's own numbering
    (:func:`course.scaffold.new_stem` and :func:`course.scaffold.paths`), so the command
    works as written on today's course.
    """
    signature, title = EXAMPLE
    taken = {e.name for e in EXERCISES}
    name = next(n for n in EXAMPLE_NAMES if n not in taken)
    stems = [nb.stem for nb in NOTEBOOKS]
    extensions = [nb.stem for nb in NOTEBOOKS if nb.kind == "extension"]
    after = extensions[-1]
    stem = new_stem(_number_of(after), stems, name)
    files = paths(name, stem, tests=True)
    return "\n".join(
        [
            "```bash",
            f".venv/bin/python -m course new-exercise {name} "
            f"--after {_number_of(after)} --signature {signature} --title {title}",
            "```",
            "",
            f"puts notebook `{stem}` after `{after}`, the last extension, and writes each "
            "marked `TODO` where you write: the registry entries (a `[[notebook]]` and its "
            f"`[[exercise]]`), the reference stub `{files['reference']}`, the check "
            f"`{files['check']}`, the notebook source `{files['source']}` and, for a kind that "
            f"brings tests (below), `{files['tests']}`.",
        ]
    )


def _number_of(stem: str) -> str:
    """The number a stem begins with: ``"16a"`` of ``"16a_alibi"``."""
    return stem.split("_")[0]


def counts() -> str:
    """How many notebooks and exercises the course has."""
    graded = sum(e.points for e in EXERCISES)
    with_exercises = sum(1 for nb in NOTEBOOKS if of_notebook(nb.stem))
    return (
        f"{number_words(len(NOTEBOOKS)).capitalize()} notebooks, {len(EXERCISES)} exercises in "
        f"{number_words(with_exercises)} of them, {graded} points in all."
    )


#: Each part of the README written from the registry, by its marker's name.
PARTS: dict[str, Callable[[], str]] = {
    "route": route,
    "counts": counts,
    "functions": function_table,
    "brings": brings,
    "places": places,
    "example": example,
}
BLOCK = re.compile(
    r"(<!-- BEGIN registry: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- END registry: (?P=name) -->)",
    re.S,
)


def render(text: str) -> str:
    """``text`` (the README) with every part between markers written from the registry.

    Raises
    ------
    ValueError
        A part of :data:`PARTS` without its markers, or markers naming no part.
    """
    found = [m.group("name") for m in BLOCK.finditer(text)]
    unknown = sorted(set(found) - set(PARTS))
    missing = [name for name in PARTS if name not in found]
    if unknown or missing:
        raise ValueError(
            f"the README must hold each part {', '.join(PARTS)} once between "
            "'<!-- BEGIN registry: NAME -->' and '<!-- END registry: NAME -->', but misses "
            f"{missing or 'none'} and has unknown {unknown or 'none'}."
        )
    return BLOCK.sub(lambda m: f"{m.group(1)}{PARTS[m.group('name')]()}\n{m.group(4)}", text)


def outside_parts(text: str) -> str:
    """The README's prose outside the registry's parts (what a person writes)."""
    return BLOCK.sub("", text)


def main(check: bool = False, path: Path = README) -> int:
    """Write the README's parts from the registry (with ``check``: only say whether it would)."""
    text = path.read_text(encoding="utf-8")
    new = render(text)
    if check:
        if new != text:
            print(f"{path} differs from the registry: run `python -m course readme`.")
            return 1
        print(f"{path} agrees with the registry.")
        return 0
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"wrote {path}'s parts from the registry.")
    else:
        print(f"{path} already agrees with the registry.")
    return 0
