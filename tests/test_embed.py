"""The static edition's widgets (book/embed.py): their traits in the page, read back without a
browser; the book's explorer computes every data state in the page (``local.js``, under Node)
as the kernel's explorer does. tests/test_site.py draws them in Chromium."""

import gzip
import itertools
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import mhsa_helpers.reference as course
from book.embed import STATIC_LINE, embed, embed_all, entry_of, html, traits_of
from mhsa_helpers.examples import EXAMPLES, get_example
from mhsa_helpers.widgets.base import REFERENCE, REFERENCE_STATUS, PictureWidget, esm
from mhsa_helpers.widgets.explorer import Explorer
from mhsa_helpers.widgets.reverse import TryReversal
from mhsa_helpers.widgets.sliding_window import SlidingWindowWidget
from tests.support.node import run_json

#: The learner's functions as a notebook's kernel has them: every one there (the course's own
#: code, which each check refuses as "calls the course's reference"), so that a widget left
#: alone would say "Why not yours".
LEARNER = vars(course)
#: The explorer's data for one page, compressed (issue 46): at most this many bytes.
EXPLORER_BUDGET = 150_000
CASES = Path(__file__).parent / "js" / "book_cases.mjs"


def capstone(functions=LEARNER) -> Explorer:
    """Notebook 10's explorer: every control, the learner's functions from saved notebooks."""
    return Explorer(functions=functions, step=7, saved=True)


@pytest.mark.parametrize(
    ("make", "entry"),
    [
        (capstone, "explorer.js"),
        (lambda f: Explorer(functions=f, step=6, controls=("mask", "query")), "explorer.js"),
        (lambda f: TryReversal(), "reverse.js"),
        (SlidingWindowWidget, "panels.js"),
    ],
)
def test_a_widget_is_embedded_as_its_module_and_its_own_synced_traits(make, entry):
    w = make(REFERENCE)  # drawn as the book draws it: its traits are those embedded
    assert entry_of(w) == entry and esm(entry) == w._esm
    got = embed(w)
    assert got["entry"] == entry
    base = PictureWidget.class_trait_names()  # anywidget's and ipywidgets' own, and "look"
    own = {n for n in w.trait_names(sync=True) if n not in base and not n.startswith("_")}
    assert set(got["traits"]) == own | {"look"} and own
    for name in got["traits"]:
        assert json.dumps(got["traits"][name]) == json.dumps(w.get_state(name)[name]), name
    assert ("book" in got) == isinstance(w, Explorer)


def test_a_widget_is_embedded_drawn_with_the_courses_functions_then_draws_its_own_again():
    for w in (capstone(), SlidingWindowWidget(LEARNER)):
        got = embed(w)["traits"]
        statuses = [t["status"] for t in got.get("texts", [])]
        statuses += [s["status"] for s in got.get("states", [])]
        notes = json.dumps([got.get("texts"), got.get("states")])
        assert statuses and all(REFERENCE_STATUS in s for s in statuses)
        assert "yours" not in notes and "Why not" not in notes
        assert w._source is LEARNER
        again = json.dumps([w.get_state().get("texts"), w.get_state().get("states")])
        assert "Why not" in again  # the learner's own words again, after the build's


class _Parts(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.script, self.text, self.tags, self._in = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        (self.script if self._in == "script" else self.text).append(data)


def test_the_page_carries_the_traits_and_one_line_for_a_reader_without_javascript():
    ex = capstone()
    ex.texts = [{"status": "</script><!-- a", "notes": [], "failing": False}] * 9  # escaped
    got = {"entry": "explorer.js", "traits": traits_of(ex)}
    page = html(got)
    parts = _Parts()
    parts.feed(page)
    assert page.count("</script>") == 1 and "<!--" not in page
    assert json.loads("".join(parts.script)) == got
    assert parts.tags[0] == ("div", {"class": "mhsa-book-widget", "data-entry": "explorer.js"})
    assert parts.tags[1] == ("script", {"type": "application/json"})
    assert "".join(parts.text) == STATIC_LINE  # what shows without JavaScript: one line
    assert "notebook" in STATIC_LINE and "JavaScript" in STATIC_LINE and "\n" not in STATIC_LINE


def test_the_full_explorers_page_data_stays_within_its_budget():
    """Notebook 10's explorer, every example's data and every state's words: compressed."""
    page = html(embed(capstone()))
    size = len(gzip.compress(page.encode(), 9))
    assert size <= EXPLORER_BUDGET, f"{size} bytes compressed"
    book = embed(capstone())["book"]
    assert sorted(book["examples"]) == sorted(EXAMPLES)  # the trained one included
    restricted = embed(Explorer(functions=LEARNER, step=6, controls=("mask", "query")))["book"]
    assert sorted(restricted["examples"]) == ["song"]  # no example control: its own only


def tour() -> list[dict]:
    """Changes of the data state that reach every example × layer × heads × mask, padding at
    every length, and the trained examples' mask reset (said until the mask is changed)."""
    changes = []
    for name in EXAMPLES:
        e = get_example(name)
        changes.append({"example": name})
        for layer, h in itertools.product(e.layer_choices, e.head_choices):
            changes += [{"layer": layer, "heads": h}, {"mask": "none"}, {"mask": "causal"}]
            changes += [{"mask": "padding", "length": n} for n in range(1, e.T + 1)]
    changes += [
        {"example": "song", "mask": "causal"},
        {"example": "trained"},  # the mask set aside, and said
        {"heads": 2},
        {"example": "simple"},
        {"mask": "none"},
        {"example": "trained", "mask": "padding", "length": 2},
        {"example": "question"},
        {"example": "induction", "layer": 2},  # the causal mask it learned with, said
        {"example": "trained"},  # layer 1, its only one; the mask set aside is none's
        {"example": "induction", "mask": "padding"},  # layer 1 (the one kept), padding
        {"layer": 2},  # padding kept: a layer is no new example
    ]
    return changes


def _floats(a) -> np.ndarray:
    return np.asarray(a, dtype=float)


def test_the_books_explorer_reaches_every_state_and_computes_what_the_kernel_does():
    """Driven through :func:`tour` in the page's way (``local.js`` under Node) and in the
    kernel's (``Explorer.change_state``, the course's functions): the same state, query,
    words and arrays (within 1e-9) after every change."""
    start = Explorer(functions=LEARNER, step=7, saved=True)
    start.query = 3
    embedded = embed(start)
    page = run_json(CASES, {**embedded, "changes": tour()})
    kernel = Explorer(functions=REFERENCE, step=7)
    kernel.query = 3
    reached = set()
    for change, got in zip(tour(), page, strict=True):
        kernel.change_state(**change)
        st = kernel.state
        assert got["state"] == st and got["query"] == kernel.query, change
        assert got["texts"] == kernel.texts, change
        data = got["data"]
        arrays = data.pop("arrays")
        want = dict(kernel.data)
        want_arrays = want.pop("arrays")
        assert data == want, change
        assert set(arrays) == set(want_arrays), change
        for key, value in want_arrays.items():
            np.testing.assert_allclose(
                _floats(arrays[key]), _floats(value), rtol=1e-9, atol=1e-9, err_msg=key
            )
        length = st["length"] if st["mask"] == "padding" else None
        reached.add((st["example"], st["layer"], st["heads"], st["mask"], length))
    every = {
        (name, layer, h, mask, n)
        for name in EXAMPLES
        for layer in get_example(name).layer_choices
        for h in get_example(name).head_choices
        for mask, n in [("none", None), ("causal", None)]
        + [("padding", n) for n in range(1, get_example(name).T + 1)]
    }
    assert reached == every
    notes = [t["notes"] for got in page for t in got["texts"]]
    assert any(any("Mask set to none (it was padding)" in n for n in ns) for ns in notes)
    assert any(any("Mask set to causal (it was none)" in n for n in ns) for ns in notes)


def test_embed_all_writes_every_picture_widget_by_its_model_id(tmp_path, monkeypatch):
    """The kernel's objects, as ``gc`` lists them: widgets (one twice, one closed) and others."""
    import book.embed

    ex, reverse = Explorer(functions=LEARNER, step=6, controls=("mask",)), TryReversal()
    closed = SlidingWindowWidget(LEARNER)
    closed.close()
    kernel = [ex, "text", reverse, ex, closed, {"a": 1}]
    monkeypatch.setattr(book.embed.gc, "get_objects", lambda: kernel)
    written = embed_all(tmp_path / "embedded.json")
    assert json.loads((tmp_path / "embedded.json").read_text()) == written
    assert set(written) == {ex.model_id, reverse.model_id}
    assert written[reverse.model_id] == embed(reverse)


def test_a_module_not_of_the_front_is_refused():
    w = TryReversal()
    w._esm = "export default { render() {} }"
    with pytest.raises(ValueError, match="no module of"):
        entry_of(w)
    assert re.fullmatch(r"[a-z_]+\.js", entry_of(TryReversal()))
