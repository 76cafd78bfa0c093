"""Issue 31: no answer stalls grading; each call has a time budget, each student a pool.

Every answer that stalls here waits or loops for ever, so it is over any
budget whatever the machine: no test reads a duration, and every honest
answer here takes milliseconds against budgets of seconds. The answers run
through the real child in real bubblewrap (module fixtures, run once), and
once through real nbgrader and the grade command.
"""

import re

import nbformat
import pytest

from autograders import integrity, sandbox
from mhsa_helpers import budget as budgets
from mhsa_helpers import reference
from mhsa_helpers.budget import Budget, reference_seconds
from mhsa_helpers.checks import CHECKS, job, judge
from mhsa_helpers.execution.in_child import SPENT, run_in_child
from mhsa_helpers.execution.saved import answer_sources
from mhsa_helpers.exercises import exercise, of_notebook
from tests.conftest import TEST_KEY
from tests.support import nbgrader_course as nc

SLEEPS = "import time\n\ndef causal_mask(seq_len):\n    time.sleep(10**6)\n"
SPINS = "def split_heads(M, n_heads):\n    while True:\n        pass\n"
SPINNING_CELL = "while True:\n    pass\n"
#: Right on the visible inputs; on any other (the hidden ones) it never returns.
VISIBLE_SHAPES = sorted({c.args[0].shape for c in CHECKS["attention_scores"].calls()})
HIDDEN_ONLY = f"""
import time

def attention_scores(Q, K):
    if Q.shape not in {VISIBLE_SHAPES!r}:
        time.sleep(10**6)
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
"""
BUDGET_SENTENCE = "took longer than its time budget"


def _solution(stem: str) -> list:
    return answer_sources(nc.SOLUTIONS / f"{stem}.ipynb")


def _job(stem: str, sources: list, seed: int = 31):
    return job(stem, sources, [(e.name, s) for e in of_notebook(stem) for s in (None, seed)])


def _verdicts(result, seed: int = 31) -> dict:
    """``{(exercise, "visible" or "hidden"): None if passed, else the sentence}``."""
    return {
        (name, "hidden" if key_seed else "visible"): judge(
            name, key_seed, outcomes, hidden=key_seed is not None
        )
        for (name, key_seed), outcomes in result.outcomes.items()
    }


@pytest.fixture(scope="module")
def stalled():
    """One run, one student: a call that sleeps, one that spins, cells that spin, a hidden stall."""
    jobs = [
        _job("04_heads", [*_solution("04_heads"), SPINS]),
        _job("06_masking", [*_solution("06_masking"), SLEEPS]),
        _job("07_softmax", [*_solution("07_softmax"), SPINNING_CELL]),
        _job("05_scores", [HIDDEN_ONLY]),
        _job("08_head_output", _solution("08_head_output")),
    ]
    budget = Budget.of_jobs(jobs)
    results = run_in_child(jobs, timeout=60, wrapper=sandbox.wrap, contained=True, budget=budget)
    return results


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stem", "stalls", "graded"),
    [("04_heads", "split_heads", "merge_heads"), ("06_masking", "causal_mask", "padding_mask")],
)
def test_a_call_that_never_returns_loses_its_exercise_only(stalled, stem, stalls, graded):
    """Sleeping or spinning for ever: that exercise fails with the budget's sentence, the
    notebook's other exercise is graded in a new process, and the notebook names the call."""
    result = stalled[stem]
    verdicts = _verdicts(result)
    assert result.error is None, result.error
    assert BUDGET_SENTENCE in verdicts[(stalls, "visible")], verdicts
    assert verdicts[(stalls, "hidden")] is not None
    assert verdicts[(graded, "visible")] is None and verdicts[(graded, "hidden")] is None, verdicts
    assert any(e.startswith(f"{stalls}: a call ran over its time budget") for e in result.events)


@pytest.mark.slow
def test_cells_that_never_end_cost_their_notebook_only(stalled):
    """A cell that loops for ever at the top level: its notebook fails, the next ones are graded."""
    assert stalled["07_softmax"].error.startswith("the answer cells took longer than their time")
    assert _verdicts(stalled["05_scores"])[("attention_scores", "visible")] is None
    assert all(v is None for v in _verdicts(stalled["08_head_output"]).values())


@pytest.mark.slow
def test_a_stall_on_hidden_inputs_says_so_and_nothing_of_them(stalled):
    verdicts = _verdicts(stalled["05_scores"])
    assert verdicts[("attention_scores", "visible")] is None
    said = verdicts[("attention_scores", "hidden")]
    assert said == "attention_scores took longer than its time budget on a hidden input."
    assert not re.search(r"\d", said)  # no size, no seconds: nothing of the hidden inputs


#: Every exercise of these notebooks waits for ever.
STALLED_STEMS = [
    "01_input",
    "04_heads",
    "06_masking",
    "07_softmax",
    "10_capstone",
    "16_sliding_window",
]


def _sleeper(name: str) -> str:
    return f"import time\n\ndef {name}(*args, **kwargs):\n    time.sleep(10**6)\n"


@pytest.mark.slow
def test_a_student_who_stalls_everywhere_is_stopped_by_the_pool():
    """Each stall costs at least the budget it is given, so a pool of one and a half calls'
    budgets is spent by the second notebook at the latest: every later notebook is not run,
    and says why."""
    jobs = [_job(stem, [_sleeper(e.name) for e in of_notebook(stem)]) for stem in STALLED_STEMS]
    budget = Budget.of_jobs(jobs)
    budget.pool_s = 1.5 * budgets.CALL_ALLOWANCE
    results = run_in_child(jobs, timeout=60, wrapper=sandbox.wrap, contained=True, budget=budget)
    for stem in STALLED_STEMS:
        result = results[stem]
        assert result.error or all(v is not None for v in _verdicts(result).values()), stem
    for stem in STALLED_STEMS[2:]:
        assert results[stem].error.startswith(SPENT), (stem, results[stem].error)
    assert budget.left_s() <= 0


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    """verify, sandboxed, on every notebook of the instructor's answers, softmax stalling."""
    tmp = tmp_path_factory.mktemp("verified")
    sub = tmp / "submission"
    sub.mkdir()
    for path in nc.SOLUTIONS.glob("*.ipynb"):
        nb = nc.student_notebook(path.stem, "solution")
        if path.stem == "07_softmax":
            cell = nc.answer_cells(nb)[exercise("softmax").answer_id]
            cell.source += "\n\ndef softmax(Z, axis=-1):\n    while True:\n        pass\n"
        nbformat.write(nb, str(sub / path.name))
    return integrity.verify(nc.SOLUTIONS, sub, TEST_KEY, timeout=60, wrapper=sandbox.wrap)


@pytest.mark.slow
def test_verify_names_the_stall_and_grades_everything_else(verified):
    failed = {gid: m for r in verified.values() for gid, (ok, m) in r["grades"].items() if not ok}
    assert list(failed) == [exercise("softmax").grade_id], failed
    assert BUDGET_SENTENCE in failed[exercise("softmax").grade_id]
    notes = [n for r in verified.values() for n in r["notes"] if "time budget" in n]
    assert len(notes) == 1, notes
    assert notes[0].startswith("07_softmax: softmax: a call ran over its time budget"), notes


def test_the_reference_is_timed_on_copies_and_a_call_that_must_raise_is_timed_too():
    import numpy as np

    Z = np.arange(6.0).reshape(2, 3)
    assert reference_seconds("softmax", [Z], {}) >= 0 and Z.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError):
        reference.positional_encoding(0, 4)
    assert reference_seconds("positional_encoding", [0, 4], {}) >= 0
    assert reference_seconds("not_a_course_function", [], {}) == 0.0


def test_the_pool_is_the_allowance_and_the_factor_times_the_references_time():
    budget = Budget({("07_softmax", "k", 0): 0.5, ("07_softmax", "k", 1): 1.5})
    assert budget.pool_s == budgets.STUDENT_ALLOWANCE + budgets.FACTOR * 2.0
    assert budget.call_s("07_softmax", "k", 1) == budgets.CALL_ALLOWANCE + budgets.FACTOR * 1.5
    assert budget.call_s("07_softmax", "other", 0) == budgets.CALL_ALLOWANCE
    budget.spend(budget.pool_s)
    assert budget.left_s() == 0


STALL_SOFTMAX = "import time\n\ndef softmax(Z, axis=-1):\n    time.sleep(10**6)\n"


@pytest.fixture(scope="module")
def class_graded(tmp_path_factory):
    """The grade command on an honest student and one whose softmax never returns."""
    course = nc.make_course(tmp_path_factory.mktemp("stall"))
    nc.generate(course)
    stems = sorted(p.stem for p in nc.SOLUTIONS.glob("*.ipynb"))
    honest = {s: nc.student_notebook(s, "solution") for s in stems}
    nc.submit(course, "honest", honest)
    stalling = dict(honest)
    stalling["07_softmax"] = nc.student_notebook("07_softmax", "solution")
    nc.answer_cells(stalling["07_softmax"])[exercise("softmax").answer_id].source = STALL_SOFTMAX
    nc.submit(course, "staller", stalling)
    proc = nc.grade(course, "--workers", "2")
    return course, nc.scores(course), proc.stdout


@pytest.mark.slow
def test_the_grade_command_names_the_staller_who_keeps_every_other_point(class_graded):
    course, scores, summary = class_graded
    full = scores["_max"]
    assert {nb: s for nb, (s, _) in scores["honest"].items()} == full
    lost = {nb: full[nb] - s for nb, (s, _) in scores["staller"].items() if s < full[nb]}
    assert lost == {"07_softmax": exercise("softmax").points}, lost
    assert not re.search(r"^! honest:", summary, re.M), summary
    line = re.search(r"^! staller: .*$", summary, re.M)
    assert line and "07_softmax: softmax: a call ran over its time budget" in line[0], summary
    page = (course / "feedback" / "staller" / nc.ASSIGNMENT / "07_softmax.html").read_text()
    assert BUDGET_SENTENCE in page
