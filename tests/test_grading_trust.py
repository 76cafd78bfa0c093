"""Issue 22 through the grade command, with real nbgrader and bubblewrap.

A class where one student returns an absurd number, one submits a lookup
table of every input the learner package can rebuild, and one tries to carry
the hidden inputs into the feedback: each loses the exercise it touches and
nothing else, the hidden tests' feedback carries no input, and an honest
student's grades are untouched.
"""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

from mhsa_helpers import reference
from mhsa_helpers.checks import CHECKS, hidden_seed
from mhsa_helpers.checks.failures import RAISED_HIDDEN
from mhsa_helpers.exercises import NOTEBOOKS, exercise
from tests.support import nbgrader_course as nc

pytestmark = pytest.mark.slow  # real nbgrader, Dask and the sandbox

#: The exercises the attacks below answer.
ATTACKED = ("kv_cache_size", "softmax", "attention_scores")
#: The notebooks each student submits: those of the attacks and one they do not touch (01),
#: so that "nothing else" is seen in other notebooks as well as in the other exercises of
#: the same notebook (every notebook is graded by itself; the honest student's full course
#: is graded in tests/test_course.py).
STEMS = sorted({"01_input", *(exercise(name).notebook for name in ATTACKED)})

HUGE = "def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):\n    return 10**400\n"

#: attention_scores right on the visible inputs (public), and on hidden ones it raises
#: with their shape, or returns a type named after it: neither may reach the feedback.
VISIBLE_SHAPES = sorted({c.args[0].shape for c in CHECKS["attention_scores"].calls()})
EXFILTRATE = f"""
def attention_scores(Q, K):
    if Q.shape in {VISIBLE_SHAPES!r}:
        return Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    raise ValueError("LEAK" + "x".join(str(n) for n in Q.shape) + repr(float(Q.ravel()[0])))
"""


def lookup_table() -> str:
    """softmax as a table of the outputs for every input a student can compute."""
    seeds = [None] + [hidden_seed(k, "softmax") for k in (b"", b"mhsa", bytes(32))]
    table = {}
    for seed in seeds:
        for call in CHECKS["softmax"].calls(seed):
            table[np.asarray(call.args[0]).tobytes()] = reference.softmax(*call.args, **call.kwargs)
    return (
        f"import pickle\nTABLE = pickle.loads({pickle.dumps(table)!r})\n"
        "def softmax(Z, axis=-1):\n    return TABLE[np.asarray(Z).tobytes()]\n"
    )


def solutions(**answers) -> dict:
    """The :data:`STEMS` notebooks with the instructor's answers, but ``answers`` in theirs."""
    out = {s: nc.student_notebook(s, "solution") for s in STEMS}
    for name, source in answers.items():
        stem = exercise(name).notebook
        nc.answer_cells(out[stem])[exercise(name).answer_id].source = source
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = nc.make_course(tmp_path_factory.mktemp("trust"))
    nc.generate(course)
    nc.submit(course, "honest", solutions())
    nc.submit(course, "huge", solutions(kv_cache_size=HUGE))
    nc.submit(course, "table", solutions(softmax=lookup_table()))
    nc.submit(course, "leak", solutions(attention_scores=EXFILTRATE))
    proc = nc.grade(course, "--workers", "2")
    return course, nc.scores(course), proc.stdout


def _lost(scores: dict, student: str) -> dict:
    """The notebooks of :data:`STEMS` where ``student`` scored below the maximum, and by how
    much (nbgrader gives the notebooks nobody submitted 0)."""
    full, got = scores["_max"], scores[student]
    assert set(STEMS) <= set(got), (student, sorted(got))
    return {nb: full[nb] - got[nb][0] for nb in STEMS if got[nb][0] < full[nb]}


def test_the_honest_student_gets_full_marks(graded):
    _, scores, summary = graded
    assert _lost(scores, "honest") == {}
    # the one note: the notebooks this class leaves out (STEMS)
    left_out = ", ".join(
        f"{stem}.ipynb" for stem in sorted({nb.stem for nb in NOTEBOOKS} - set(STEMS))
    )
    notes = re.findall(r"^! honest: (.*)$", summary, re.M)
    assert notes == [f"missing notebook(s): {left_out}"], summary


def test_an_absurd_number_costs_its_exercise_only(graded):
    course, scores, _ = graded
    assert _lost(scores, "huge") == {"10_capstone": 1}  # kv_cache_size's point, nothing else
    page = (course / "feedback" / "huge" / nc.ASSIGNMENT / "10_capstone.html").read_text()
    assert "kv_cache_size" in page and "whole number of 401 digits" in page


def test_a_lookup_table_passes_the_visible_test_and_fails_the_hidden_one(graded):
    course, scores, _ = graded
    assert _lost(scores, "table") == {"07_softmax": 3}
    page = (course / "feedback" / "table" / nc.ASSIGNMENT / "07_softmax.html").read_text()
    assert f"softmax {RAISED_HIDDEN} (hidden tests)" in page


def test_hidden_inputs_never_reach_the_feedback(graded):
    course, scores, _ = graded
    assert _lost(scores, "leak") == {"05_scores": 2}
    page = (course / "feedback" / "leak" / nc.ASSIGNMENT / "05_scores.html").read_text()
    assert f"attention_scores {RAISED_HIDDEN} (hidden tests)" in page
    assert not re.search(r"LEAK\d", page)  # the answer's source shows "LEAK", never a shape
    autograded = nc.cell_outputs_text(course, "leak", "05_scores")
    assert "LEAK" not in autograded and f"attention_scores {RAISED_HIDDEN}" in autograded
