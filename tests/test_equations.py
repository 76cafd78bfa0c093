"""The course text: numbered equations and references to them; promises the pages keep.

Equations are numbered by ``course/build.py`` (``\\tag{N.n}``), in the order they
come in each notebook; a text refers to a labelled one with ``\\eqref{label}``,
which the build turns into its number.
"""

from __future__ import annotations

import importlib.util
import re

import nbformat
import pytest

from mhsa_helpers.exercises import NOTEBOOKS, stem_number
from tests.support import nbgrader_course as nc

STEMS = [nb.stem for nb in NOTEBOOKS]
DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)


def _course_build():
    spec = importlib.util.spec_from_file_location("course_build", nc.ROOT / "course" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _markdown(stem: str, folder=nc.STUDENT) -> list[str]:
    nb = nbformat.read(str(folder / f"{stem}.ipynb"), as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def _text(stem: str) -> str:
    return "\n\n".join(_markdown(stem))


def _equation(number: str) -> str:
    """The display equation tagged ``number`` in its notebook (``"13.1"``: 13's first)."""
    stem = next(s for s in STEMS if stem_number(s) == number.split(".")[0])
    found = [d for d in DISPLAY.findall(_text(stem)) if d.rstrip().endswith(f"\\tag{{{number}}}")]
    assert len(found) == 1, f"{stem}: {len(found)} equations tagged {number}"
    return found[0]


@pytest.mark.parametrize("folder", [nc.STUDENT, nc.SOLUTIONS], ids=["student", "instructor"])
def test_every_display_equation_is_numbered_in_order_per_notebook(folder):
    counted = 0
    for stem in STEMS:
        displays = [d for text in _markdown(stem, folder) for d in DISPLAY.findall(text)]
        tags = [re.search(r"\\tag\{([^}]*)\}\s*$", d) for d in displays]
        assert all(tags), f"{stem}: an untagged equation: {displays[tags.index(None)]!r}"
        want = [f"{stem_number(stem)}.{n}" for n in range(1, len(displays) + 1)]
        assert [t.group(1) for t in tags] == want, stem
        text = "\n".join(_markdown(stem, folder))
        assert "\\label{" not in text and "\\eqref{" not in text, stem
        counted += len(displays)
    assert counted > 40, counted  # the course's display equations were found


@pytest.mark.parametrize(
    ("stem", "says", "number", "equation"),
    [
        ("01_input", "cosine columns ((1.1), kept", "1.1", "PE_{pos,\\,2i+1} = \\cos"),
        ("11_rope", "sinusoidal encoding (1.1) of step 1", "1.1", "PE_{pos,\\,2i}"),
        ("12_gqa", "as in (12.2) of section 2", "12.2", "g(i) = \\left\\lceil"),
        ("13_kv_cache", "as (13.1) of section 1 says", "13.1", "\\operatorname{MHSA}(X_{0..t})_t"),
        ("14_tiled", "sum of\n(14.1), and the output", "14.1", "\\ell' = e^{m - m'}"),
        ("16_sliding_window", "step 8's (8.1)", "8.1", "\\operatorname{head}(Q, K, V) = A\\,V"),
        ("17_backward", "backward is (17.3)", "17.3", "dZ = A \\odot"),
        ("18_training", "`multi_head_self_attention_backward` (17.9)", "17.9", "dX = dQ\\,W_Q"),
        ("18_training", "the loss (18.3) to every", "18.3", "\\mathcal{L} = "),
        ("18_training", "The readout of (18.2)", "18.2", "\\text{logits} = H\\, W_U"),
    ],
)
def test_a_reference_in_the_text_names_the_equation_it_means(stem, says, number, equation):
    assert says in _text(stem), stem
    assert equation in _equation(number), (number, _equation(number))


def test_a_reference_to_no_label_and_a_label_used_twice_stop_the_build():
    build = _course_build()
    with pytest.raises(ValueError, match=r"\\eqref\{nowhere\} refers to no equation"):
        build.number_equations("as \\eqref{nowhere} says", "05_scores", 1, {"scores": "5.1"})
    twice = {"05_scores": ["$$a \\label{x}$$"], "06_masking": ["$$b$$ and $$c \\label{x}$$"]}
    with pytest.raises(ValueError, match=r"06_masking: the label 'x' is taken by equation 5\.1"):
        build.equation_numbers(twice)
    assert build.equation_numbers({"06_masking": ["$$b$$", "$$c \\label{x}$$"]}) == {"x": "6.2"}


ANYWAY = re.compile(r"[^.]*draw (?:my )?(?:failing functions|a failing one) anyway[^.]*", re.S)


@pytest.mark.parametrize("stem", STEMS)
def test_the_draw_anyway_box_is_said_to_be_the_notebooks(stem):
    """The box shows only beside a failing function, which a page of the book never has: a
    sentence that promises it says it is the notebook's."""
    for sentence in ANYWAY.findall(" ".join(_text(stem).split())):
        assert "in the notebook" in sentence.lower(), (stem, sentence)


def test_18_draws_the_two_sequences_it_suggests_in_advance():
    """The text suggests AAAABBBB and PPPPPPPP; a code cell after the text box draws both
    (its outputs are in the book: tests/test_site.py)."""
    nb = nbformat.read(str(nc.STUDENT / "18_training.ipynb"), as_version=4)
    text = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "`AAAABBBB`" in text and "`PPPPPPPP`" in text
    codes = [c.source for c in nb.cells if c.cell_type == "code"]
    box = next(k for k, s in enumerate(codes) if s.startswith("TryReversal()"))
    drawn = codes[box + 1]
    assert '"AAAABBBB", "PPPPPPPP"' in drawn and "heads_figure(" in drawn, drawn
