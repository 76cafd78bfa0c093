"""The static web edition's frozen widgets (book/freeze.py), read back without a browser."""

import base64
import gzip
import itertools
import json
import re

import pytest

import mhsa_helpers.reference as course
from book.freeze import BUDGET, UID, freeze, freeze_all
from mhsa_helpers.widgets.cross import CrossWidget
from mhsa_helpers.widgets.explorer import Explorer
from mhsa_helpers.widgets.gqa import GQAWidget
from mhsa_helpers.widgets.kv_cache import DecodeWidget
from mhsa_helpers.widgets.live import REFERENCE, REFERENCE_STATUS
from mhsa_helpers.widgets.reverse import TryReversal
from mhsa_helpers.widgets.rope import RopeWidget
from mhsa_helpers.widgets.sliding_window import SlidingWindowWidget
from mhsa_helpers.widgets.tiled import TiledWidget
from tests.support.pictures import without_ids

#: The learner's functions as a notebook's kernel has them: every one there (the course's own
#: code, which each check refuses as "calls the course's reference"), so that a widget left
#: alone would say "Why not yours".
LEARNER = vars(course)


def unpack(html: str) -> dict:
    """The states a frozen widget carries, decoded as the page's script does.

    Parameters
    ----------
    html : str
        :func:`book.freeze.freeze`'s output.

    Returns
    -------
    states : dict
        ``{values: (figure, status, notes, title)}``, ``values`` a tuple of the
        controls' values as text (n_controls,), in the order of ``states["controls"]``
        (kept under that key, a list of names).
    """
    blob = re.search(r"class='mhsa-frozen-states'[^>]*>([^<]+)</script>", html).group(1)
    data = json.loads(gzip.decompress(base64.b64decode(blob)))
    texts = ["".join(data["fragments"][i] for i in seq) for seq in data["strings"]]
    out = {tuple(s[0]): tuple(texts[i] for i in s[1:5]) for s in data["states"]}
    out["controls"] = data["controls"]
    return out


def parts(w) -> tuple[str, ...]:
    """``w``'s picture (its ids left out), status, notes and title, as drawn now."""
    return (without_ids(w.figure.value), w.status_w.value, w.notes_w.value, w.title_w.value)


def frozen_parts(state: tuple[str, ...]) -> tuple[str, ...]:
    """A frozen state's parts, the picture's id placeholder left out as ``without_ids`` does."""
    figure, *rest = state
    return (without_ids(figure.replace(UID, "1-00000000")), *rest)


EXTENSIONS = [
    (RopeWidget, ["offset"], [(str(p),) for p in range(61)]),
    (GQAWidget, ["kv"], [("1",), ("2",), ("4",)]),
    (DecodeWidget, ["step"], [(str(t),) for t in range(1, 7)]),
    (
        TiledWidget,
        ["size", "block"],
        [(str(b), str(k)) for b in (1, 2, 3, 4) for k in range(1, -(-6 // b) + 1)],
    ),
    (CrossWidget, ["length"], [(str(n),) for n in range(1, 7)]),
    (SlidingWindowWidget, ["window"], [(str(n),) for n in range(1, 7)]),
]


@pytest.mark.slow  # whole widgets frozen: seconds each
@pytest.mark.parametrize(
    ("cls", "names", "keys"), EXTENSIONS, ids=lambda x: getattr(x, "__name__", "")
)
def test_an_extension_is_frozen_over_its_sliders_whole_range(cls, names, keys):
    got = unpack(freeze(cls(functions=LEARNER)))
    assert got.pop("controls") == names
    assert sorted(got) == sorted(keys)  # tiled: every block size with each of its blocks


def test_a_restricted_explorer_is_frozen_over_the_controls_it_shows_only():
    """Notebook 07's explorer: heads, mask (none, causal), query and view at its step 7."""
    ex = Explorer(functions=LEARNER, step=7, controls=("heads", "mask", "query", "view"))
    got = unpack(freeze(ex))
    assert got.pop("controls") == ["heads", "mask", "query", "view"]
    expected = itertools.product(
        ("1", "2", "4"), ("none", "causal"), map(str, range(6)), ("matrices", "query")
    )
    assert sorted(got) == sorted(expected)
    assert all("Step 7." in title for _, _, _, title in got.values() if "query's view" not in title)


def test_the_query_view_is_drawn_once_for_every_step_and_found_under_each():
    """The step does not change the query view (its control is disabled there): one drawing."""
    ex = Explorer(functions=LEARNER, step=3, controls=("view", "step"))
    got = unpack(freeze(ex))
    assert got.pop("controls") == ["view", "step"]
    assert sorted(got) == sorted(itertools.product(("matrices", "query"), map(str, range(1, 10))))
    assert len({got["query", str(s)] for s in range(1, 10)}) == 1
    assert len({got["matrices", str(s)][0] for s in range(1, 10)}) == 9


@pytest.mark.slow  # whole widgets frozen: seconds each
@pytest.mark.parametrize(
    ("make", "values"),
    [
        (
            lambda f: Explorer(functions=f, step=7, controls=("heads", "mask", "query", "view")),
            {"heads_w": 4, "mask_w": "causal", "query_w": 3, "view_w": "query"},
        ),
        (
            lambda f: Explorer(functions=f, step=6, controls=("mask", "query")),
            {"mask_w": "causal", "query_w": 5},
        ),
        (lambda f: TiledWidget(functions=f), {"size_w": 3, "block_w": 2}),
        (lambda f: DecodeWidget(functions=f), {"step_w": 4}),
    ],
    ids=["explorer-07", "explorer-06", "tiled", "kv_cache"],
)
def test_a_frozen_state_is_what_the_widget_draws_at_those_values(make, values):
    got = unpack(freeze(make(LEARNER)))
    names = got.pop("controls")
    fresh = make(REFERENCE)
    for attr, value in values.items():
        getattr(fresh, attr).value = value
    key = tuple(str(getattr(fresh, f"{n}_w").value) for n in names)
    assert frozen_parts(got[key]) == parts(fresh)


def test_the_frozen_status_names_the_courses_reference_and_never_yours():
    """Built on a learner's kernel whose every function fails its check, as in the site's."""
    for w in (Explorer(functions=LEARNER, step=7, controls=("mask", "query")), RopeWidget(LEARNER)):
        html = freeze(w)
        for _figure, status, notes, _ in (v for k, v in unpack(html).items() if k != "controls"):
            assert REFERENCE_STATUS in status
            assert "yours" not in status + notes and "Why not" not in notes
        assert REFERENCE_STATUS in html.split("mhsa-frozen-states")[0]  # inline, with JS off


def test_the_widget_draws_with_the_learners_functions_again_after_freezing():
    ex = Explorer(functions=LEARNER, step=6, controls=("mask", "query"))
    ex.query_w.value = 2
    before = parts(ex)
    freeze(ex)
    assert ex._source is LEARNER and ex.query_w.value == 2
    assert parts(ex) == before and "Why not your" in ex.notes_w.value


def test_the_current_state_is_inline_and_the_controls_labelled_as_the_widgets():
    ex = Explorer(functions=LEARNER, step=4, controls=("heads", "query", "view"), query=1)
    html = freeze(ex)
    inline = html.split("<script")[0]
    assert "<svg class='mhsa-figure'" in inline and "query: 'new'" in inline
    for name in ("heads", "query", "view"):
        assert re.search(rf"<span>{name}</span><select data-control='{name}' disabled>", inline)
    assert "<style>@keyframes mhsa-in" in inline  # the frame's own style
    decode = freeze(DecodeWidget(LEARNER))
    assert "data-button-for='step' data-move='1' disabled>Next token</button>" in decode
    assert "<span>tokens decoded</span><input type='range' data-control='step'" in decode


def test_the_reversal_is_frozen_as_its_picture_and_an_invitation_to_the_notebook():
    w = TryReversal()
    html = freeze(w)
    assert w.figure.value in html and "mhsa-frozen-states" not in html
    assert "open the notebook to try your own letters" in html


@pytest.mark.slow  # whole widgets frozen: seconds each
@pytest.mark.parametrize(
    "make",
    [
        lambda: RopeWidget(LEARNER),
        lambda: Explorer(functions=LEARNER, step=7, controls=("heads", "mask", "query", "view")),
    ],
)
def test_a_frozen_widget_stays_within_its_budget(make):
    assert len(freeze(make()).encode()) <= BUDGET


@pytest.mark.slow  # every state of the full explorer: about 20 s
def test_the_full_explorer_has_every_state_required_within_its_budget():
    """Notebook 10's: both examples, every heads, mask none and causal, step, view and query."""
    ex = Explorer(functions=LEARNER, step=7, saved=True)
    html = freeze(ex)
    assert len(html.encode()) <= BUDGET
    got = unpack(html)
    names = got.pop("controls")
    assert names == ["example", "heads", "mask", "query", "view", "step"]
    for example, heads, tokens in (("song", (1, 2, 4), 6), ("trained", (2,), 8)):
        for h, m, q, v, s in itertools.product(
            heads, ("none", "causal"), range(tokens), ("matrices", "query"), range(1, 10)
        ):
            assert (example, str(h), m, str(q), v, str(s)) in got


@pytest.mark.slow  # whole widgets frozen: seconds each
def test_freeze_all_writes_every_live_widget_by_its_views_model_id(tmp_path, monkeypatch):
    """The kernel's objects, as ``gc`` lists them (here: two widgets, one twice, and others;
    every widget an earlier test made is alive in ipywidgets' registry and is left out)."""
    import book.freeze

    ex = Explorer(functions=LEARNER, step=6, controls=("mask", "query"))
    tiled = TiledWidget(LEARNER)
    closed = TiledWidget(LEARNER)
    closed.widget.close()  # no view to freeze for
    kernel = [ex, "text", tiled, ex.widget, tiled, closed, {"a": 1}]
    monkeypatch.setattr(book.freeze.gc, "get_objects", lambda: kernel)
    written = freeze_all(tmp_path / "frozen.json")
    frozen = json.loads((tmp_path / "frozen.json").read_text())
    assert frozen == written and set(frozen) == {ex.widget.model_id, tiled.widget.model_id}
    assert without_ids(frozen[tiled.widget.model_id]) == without_ids(freeze(tiled))
