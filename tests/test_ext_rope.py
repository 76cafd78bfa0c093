"""The check of rotary_embedding (extension 11): real learner code, right and wrong.

Each buggy version below is a function a learner could write, making one
mistake of the catalogue; it must fail the visible check with that mistake's
hint (and no other's) and fail the hidden check. Correct but unusual versions
(float32, complex numbers, explicit loops) must pass both.
"""

import numpy as np
import pytest
from nbclient import NotebookClient

from mhsa_helpers import checks
from mhsa_helpers.checks import step11_rope as rope_check
from mhsa_helpers.examples import get_example
from mhsa_helpers.widgets.rope import RopeWidget
from tests.support import nbgrader_course as nc
from tests.support.ext_rope import BUGGY, CORRECT, NAME, RIGHT, rotated, source
from tests.support.extensions import load, panels, verdict


def test_the_catalogue_lists_the_issues_mistakes():
    hints = [h for h, _ in rope_check.mistakes(np.ones((3, 4)), np.array([1, 2, 3]), 100.0)]
    assert {
        rope_check.HALF_SPLIT,
        rope_check.THETA_FROM_I,
        rope_check.CLOCKWISE,
        rope_check.POSITIONS_IGNORED,
        rope_check.BASE_IGNORED,
    } <= set(hints)


def test_float32_inputs_may_give_float32_results():
    fn = load(CORRECT["float32_in_float32_out"], NAME)
    X = np.random.default_rng(0).normal(size=(2, 5, 8)).astype(np.float32)
    assert fn(X).dtype == np.float32  # the variant really stays in single precision
    checks.check(NAME, fn)


def test_a_version_with_a_runtime_warning_fails():
    # np.where computes both branches: k / k is 0 / 0 for the first pair
    k = "np.arange(0, d, 2)"
    fn = load(source(BASE=f"np.where({k} > 0, base * {k} / {k}, base)"), NAME)
    X = np.random.default_rng(0).normal(size=(3, 4))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(fn(X), load(source(), NAME)(X))  # right values, with a warning
    said = verdict(NAME, fn)
    assert said is not None and "RuntimeWarning" in said, said


def test_a_list_or_a_wrong_shape_is_refused():
    said = verdict(NAME, lambda X, positions=None, base=10000.0: [X])
    assert said is not None and "one ndarray" in said
    said = verdict(NAME, load(source(JOIN="np.stack([y0, y1], axis=-1)"), NAME))
    assert said is not None and "should have the shape of X" in said, said


def test_a_scaled_result_is_told_that_lengths_change():
    fn = load(source(JOIN="1.5 * " + RIGHT["JOIN"]), NAME)
    said = verdict(NAME, fn)
    assert said is not None and "lengths changed" in said, said


def test_the_relative_position_property_is_checked():
    """Right values on every call but one: the pair call, where only the shift is off."""
    right = load(source(), NAME)

    def almost(X, positions=None, base=10000.0):
        out = right(X, positions, base)
        if X.shape == (5, 2, 8):  # the property's call: tokens q, k at (m + s, n + s)
            out = out.copy()
            out[-1, 1] *= 1 + 5e-8  # within the values' tolerance, not within 1e-9 relative
        return out

    said = verdict(NAME, almost)
    assert said is not None and "depend on m − n only" in said, said


@pytest.mark.slow
def test_in_the_notebook_a_clockwise_rotation_loses_the_marks(tmp_path):
    """The student notebook, its answer cell replaced, run by a real kernel to the test cell."""
    text, hint = BUGGY["clockwise"]
    nb = nc.student_notebook("11_rope", {NAME: text})
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    (error,) = [o for o in graded[0].outputs if o.output_type == "error"]
    assert hint in error.traceback[0]
    others = [c for c in nb.cells if c.cell_type == "code" and c not in graded]
    assert not any(o.output_type == "error" for c in others for o in c.get("outputs", []))


# --------------------------------------------------------------------------
# the live widget: the song slid along the positions
# --------------------------------------------------------------------------
SONG = get_example("song")


def test_the_offset_moves_the_tokens_not_the_scores():
    w = RopeWidget()
    assert [o[1] for o in w.controls[0]["options"]] == list(range(61))
    shown = {}
    for p in (0, 1, 17, 60):
        R, S = panels(w, offset=p)
        expected = rotated(SONG.X, p + np.arange(SONG.T), 100.0)
        np.testing.assert_allclose(R["M"], expected, atol=1e-12)
        np.testing.assert_allclose(S["M"], expected @ expected.T / 2.0, atol=1e-11)  # √d = 2
        assert (
            R["rows"]
            == S["rows"]
            == S["cols"]
            == [f"{t}@{p + i}" for i, t in enumerate(SONG.tokens)]
        )
        assert R["title"] == f"X rotated, positions {p} … {p + 5}"
        shown[p] = S["M"]
    for p in shown:  # what the words promise: the very numbers shown, at every offset
        assert np.array_equal(shown[p], shown[0]), p


def test_one_diverging_scale_holds_every_offset_and_each_cell_says_what_it_is():
    w = RopeWidget()
    low, high = w.states[0]["picture"]["fixed"]
    largest = max(np.abs(p["M"]).max() for s in w.states for p in panels(w, **s["key"]))
    assert low == -high and largest <= high
    assert all(s["picture"]["fixed"] == [low, high] for s in w.states)
    R, S = panels(w)
    assert R["links"] == [["q", "k"], None]  # a rotated row lights its query row and key column
    assert S["links"] == ["q", "k"] and S["kinds"] == ["query", "key"]
    assert "each pair turned" in R["meaning"] and "how far apart" in S["meaning"]


def test_a_failing_rotary_embedding_is_told_replaced_and_drawn_when_ticked():
    def negated(X, positions=None, base=10000.0):  # its check refuses it
        return rotated(X, -np.asarray(positions), base)

    w = RopeWidget(functions={NAME: negated}, offset=4)
    said = w.current()["status"] + " ".join(w.current()["notes"])
    assert w.failing and "instead of yours" in said and "check of your" in said
    expected = rotated(SONG.X, 4 + np.arange(SONG.T), 100.0)
    np.testing.assert_allclose(panels(w)[0]["M"], expected, atol=1e-12)
    w.anyway = True
    assert "Drawn with your failing <code>rotary_embedding</code>" in w.current()["status"]
    mine = rotated(SONG.X, -(4 + np.arange(SONG.T)), 100.0)
    np.testing.assert_allclose(panels(w)[0]["M"], mine, atol=1e-12)
