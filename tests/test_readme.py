"""The README says what the registry says: its tables, counts and ranges are written from it.

``python -m course readme`` writes the parts between ``<!-- BEGIN registry: NAME -->``
markers (:mod:`course.readme`); here the README must be exactly what it writes, and its
prose outside those parts may not count the course's notebooks or name a range of them,
which the next notebook added would make wrong.
"""

import re
from pathlib import Path

import pytest

from course import readme
from mhsa_helpers.exercises import EXERCISES, NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "README.md").read_text(encoding="utf-8")

#: A count of the course's parts ("the six extensions", "19 notebooks"), or a range of
#: notebooks ("00 → 10", "11 to 16", "00_start_here.ipynb … 10_capstone.ipynb").
COUNT = re.compile(
    rf"\b({'|'.join(readme.WORDS[2:])}|\d+)\s+(steps|extensions|notebooks|exercises|widgets)\b",
    re.I,
)
RANGE = re.compile(r"\b\d\d[a-z]?(_\w+(\.ipynb)?)?`?\s*(→|…|->|\bto\b)\s*`?\d\d[a-z]?\b")


def test_the_readme_is_what_the_registry_writes():
    assert readme.render(TEXT) == TEXT, "README.md differs: run `python -m course readme`."


def test_the_prose_outside_the_registry_s_parts_counts_no_notebooks():
    prose = readme.outside_parts(TEXT)
    counts = [m.group(0) for m in COUNT.finditer(prose)]
    ranges = [m.group(0) for m in RANGE.finditer(prose)]
    assert not counts and not ranges, (
        f"the README's prose counts {counts} and names the ranges {ranges}; write them from "
        "the registry (a part of course/readme.py) or leave them out."
    )


def test_the_check_catches_what_it_is_for():
    """The two patterns find the sentences issue 49 found wrong, and the parts hold them."""
    wrong = "go through 00 → 10, then the six extensions 11 → 16, 19 notebooks"
    assert len(COUNT.findall(wrong)) == 2 and len(RANGE.findall(wrong)) == 2
    kept = readme.render(TEXT)
    assert f"{len(NOTEBOOKS)} notebooks, {len(EXERCISES)} exercises" in kept.replace(
        readme.number_words(len(NOTEBOOKS)).capitalize(), str(len(NOTEBOOKS))
    )


def test_a_part_without_its_markers_is_refused():
    broken = TEXT.replace("<!-- END registry: route -->", "")
    with pytest.raises(ValueError, match=r"misses \['route'\]"):
        readme.render(broken)


def test_the_route_follows_the_registry():
    route = readme.route()
    extensions = [nb for nb in NOTEBOOKS if nb.kind == "extension"]
    first, last = (nb.stem.split("_")[0] for nb in (extensions[0], extensions[-1]))
    words = readme.number_words(len(extensions))
    assert f"`{first}` → `{last}`, {words} extensions" in route, route


def test_where_a_new_notebook_goes_is_the_registry_s_next_number_and_letter():
    """The README's "Where it goes" names the last notebook, the number after it, and the
    letter after the last extension's number: what a new notebook's stem would be today."""
    places = readme.places()
    last = NOTEBOOKS[-1].stem
    assert f"`{last}`" in places and f"`{int(last[:2]) + 1:02d}_<name>`" in places, places
    number = [nb.stem for nb in NOTEBOOKS if nb.kind == "extension"][-1].split("_")[0]
    letter = chr(ord(number[2]) + 1) if len(number) > 2 else "a"
    assert f"`{number[:2]}{letter}_<name>`" in places, places
