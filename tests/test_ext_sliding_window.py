"""The check of sliding_window_mask (extension 16): real learner code, right and wrong.

Masks are compared exactly (``np.array_equal``), as the contract says; each
buggy version makes one catalogued mistake and must be told that mistake, and
no other; correct versions written differently must pass.
"""

import numpy as np
import pytest
from nbclient import NotebookClient

from tests.support import nbgrader_course as nc
from tests.support.ext_sliding_window import BUGGY, CORRECT, NAME, source
from tests.support.extensions import load, verdict


def test_an_unknown_mistake_is_located():
    text = source(RESULT="np.where(keep | ((i == 5) & (j == 0)), 0.0, -np.inf)")
    said = verdict(NAME, load(text, NAME))
    assert said is not None and "first at query 5, key 0: got 0, expected -inf" in said, said


def test_window_at_least_seq_len_is_the_causal_mask():
    fn = load(CORRECT["tril_triu"], NAME)
    for T in (1, 4, 9):
        for w in (T, T + 3):
            assert np.array_equal(fn(T, w), np.where(np.triu(np.ones((T, T)), 1) > 0, -np.inf, 0))


def test_a_version_with_a_runtime_warning_fails():
    fn = load(source(RESULT="np.log(keep.astype(float))"), NAME)  # log(0) = -inf, with a warning
    with np.errstate(all="ignore"):
        assert np.array_equal(fn(6, 3), load(source(), NAME)(6, 3))  # the right mask
    said = verdict(NAME, fn)
    assert said is not None and "RuntimeWarning" in said, said


def test_a_negative_window_must_be_refused_too():
    said = verdict(NAME, load(source().replace("if window < 1:", "if window == 0:"), NAME))
    assert said is not None and "a negative window" in said, said


def test_a_pair_or_a_wrong_shape_is_refused():
    said = verdict(NAME, lambda T, w: (np.zeros((T, T)), w))
    assert said is not None and "one ndarray" in said
    said = verdict(NAME, lambda T, w: np.zeros((T, T + 1)))
    assert said is not None and "should have shape" in said, said
    said = verdict(NAME, load(source(RESULT="np.where(keep, 0, -1)"), NAME))  # integers
    assert said is not None and "float array" in said, said


@pytest.mark.slow
def test_in_the_notebook_an_off_by_one_window_loses_the_marks(tmp_path):
    text, hint = BUGGY["window_plus_one"]
    nb = nc.student_notebook("16_sliding_window", {NAME: text})
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    (error,) = [o for o in graded[0].outputs if o.output_type == "error"]
    assert hint in error.traceback[0]
    others = [c for c in nb.cells if c.cell_type == "code" and c not in graded]
    assert not any(o.output_type == "error" for c in others for o in c.get("outputs", []))
