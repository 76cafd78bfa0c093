"""Answers run in a child that returns values; progress and the grader judge them here."""

import copy
import shutil

import nbformat
import pytest

from autograders import integrity
from mhsa_helpers.checks import job as Job
from mhsa_helpers.checks import judge
from mhsa_helpers.execution.in_child import run_in_child
from mhsa_helpers.execution.saved import answer_sources
from mhsa_helpers.exercises import exercise
from mhsa_helpers.progress import progress
from tests.conftest import TEST_KEY
from tests.support import nbgrader_course as nc
from tests.support.oracles import hidden

MH_HEAD = """
def attention_head(Q, K, V, mask=None):
    Z = mh.attention_scores(Q, K)
    A = mh.softmax(Z if mask is None else Z + mask)
    return A @ V, A
"""
WRONG_SOFTMAX = "def softmax(Z, axis=-1):\n    return np.zeros_like(Z)\n"


def run_one(source, name="attention_head", seed=None, **limits):
    result = run_in_child([Job("nb", [source], [(name, seed)])], **limits)["nb"]
    return result


@pytest.mark.slow  # a real child process
def test_an_answer_using_mh_passes_visible_and_hidden():
    e = exercise("attention_head")
    for seed in (None, hidden(e.name)):
        result = run_one(MH_HEAD, seed=seed)
        assert result.error is None
        assert judge(e.name, seed, result.outcomes[(e.name, seed)]) is None


@pytest.mark.slow  # a real child process
def test_a_wrong_answer_is_judged_in_the_parent():
    result = run_one(WRONG_SOFTMAX, "softmax")
    verdict = judge("softmax", None, result.outcomes[("softmax", None)])
    assert verdict is not None and verdict.startswith("softmax: ")


@pytest.mark.slow  # a real child process
def test_a_missing_function_is_named():
    result = run_one("x = 1", "softmax")
    assert "softmax is not defined" in judge("softmax", None, result.outcomes[("softmax", None)])


@pytest.mark.slow  # a real child process
def test_answer_cells_that_raise_are_reported():
    result = run_one("def softmax(Z, axis=-1):\n    return Z\nundefined_name", "softmax")
    assert result.error.startswith("the answer cells raise NameError")


@pytest.mark.slow  # a real child process
def test_an_endless_loop_is_stopped():
    result = run_one("while True:\n    pass\n", "softmax", timeout=2)
    assert "timed out after 2 s" in result.error


@pytest.mark.slow  # a real child process
def test_a_process_exit_costs_only_its_notebook():
    jobs = [
        Job("exits", ["import os\nos._exit(0)"], [("softmax", None)]),
        Job("honest", [MH_HEAD], [("attention_head", None)]),
    ]
    results = run_in_child(jobs)
    assert "ended their process" in results["exits"].error
    assert (
        judge("attention_head", None, results["honest"].outcomes[("attention_head", None)]) is None
    )


@pytest.mark.slow  # a real child process
def test_the_memory_limit_holds():
    # np.empty reserves address space without touching it: over the limit at once.
    bomb = "hog = np.empty(2**28)\n" + WRONG_SOFTMAX  # 2 GiB against a 1 GiB limit
    result = run_one(bomb, "softmax", memory=2**30)
    assert result.error.startswith("the answer cells raise MemoryError")


@pytest.mark.slow  # a real child process
def test_printing_does_not_reach_the_results():
    noisy = "print('x' * 10**6)\nimport sys\nsys.stdout.write('garbage')\n" + WRONG_SOFTMAX
    assert run_one(noisy, "softmax").error is None


@pytest.mark.slow  # a real child process
def test_returned_objects_come_back_as_plain_data():
    weird = "def softmax(Z, axis=-1):\n    return {'not': 'an array'}\n"
    result = run_one(weird, "softmax")
    assert "returned dict" in judge("softmax", None, result.outcomes[("softmax", None)])


def course_copy(tmp_path, stems, answers=None):
    for stem in stems:
        nb = nc.student_notebook(stem, answers)
        nbformat.write(nb, str(tmp_path / f"{stem}.ipynb"))
    return tmp_path


@pytest.mark.slow  # a real child process
def test_progress_of_a_finished_course_and_an_untouched_one(tmp_path):
    done = tmp_path / "done"
    shutil.copytree(nc.SOLUTIONS, done)
    rows = progress(done)
    assert rows and all(status == "pass" for *_, status in rows), rows
    untouched = tmp_path / "untouched"
    shutil.copytree(nc.STUDENT, untouched)
    assert all("not implemented yet" in status for *_, status in progress(untouched))


@pytest.mark.slow  # a real child process
def test_progress_passes_mh_using_answers_and_names_missing_notebooks(tmp_path):
    course_copy(tmp_path, ["08_head_output"], {"attention_head": MH_HEAD})
    rows = {name: status for _, name, status in progress(tmp_path)}
    assert rows["attention_head"] == "pass"
    assert rows["softmax"] == "notebook not found"


@pytest.fixture
def submission(tmp_path):
    shutil.copytree(nc.SOLUTIONS, tmp_path / "source")
    return tmp_path / "source", tmp_path / "submission"


@pytest.mark.slow  # a real child process
def test_verify_passes_honest_work_and_fails_patched_checks(submission):
    source, sub = submission
    sub.mkdir()
    patched = "from mhsa_helpers import checks as _c\n_c.check = _c.check_hidden = print\n"
    course_copy(sub, ["08_head_output"], {"attention_head": MH_HEAD})
    course_copy(sub, ["07_softmax"], {"softmax": patched + WRONG_SOFTMAX})
    result = integrity.verify(source, sub, TEST_KEY)
    passed, message = result["08_head_output"]["grades"]["attention_head_weights_then_values"]
    assert passed and message.startswith("attention_head: output and weights match")
    passed, message = result["07_softmax"]["grades"]["softmax_rows_sum_to_one"]
    assert not passed and message.startswith("softmax: ")
    assert set(result) == {"07_softmax", "08_head_output"}  # the others were not submitted


def test_staging_leaves_out_the_corrupt_notebook_and_names_duplicated_cells(tmp_path):
    from autograders.task import stage

    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "timestamp.txt").write_text("2026-11-23 05:00:00")
    (sub / "07_softmax.ipynb").write_text("{not json")
    nb = nc.student_notebook("08_head_output", {"attention_head": MH_HEAD})
    test_cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    nb.cells.append(copy.deepcopy(test_cell))  # an honest copy-paste of a graded cell
    nbformat.write(nb, str(sub / "08_head_output.ipynb"))
    bad, duplicates = stage(sub, tmp_path / "staged", nc.SOLUTIONS, "mhsa-grader", STUB)
    assert bad == ["07_softmax.ipynb"]
    assert duplicates == [
        "08_head_output: cell attention_head_weights_then_values appears twice "
        "(the copy is not graded)"
    ]
    staged = sorted(p.name for p in (tmp_path / "staged").iterdir())
    assert staged == ["08_head_output.ipynb", "timestamp.txt"]
    ids = [
        c.metadata.get("nbgrader", {}).get("grade_id")
        for c in nbformat.read(str(tmp_path / "staged" / "08_head_output.ipynb"), 4).cells
    ]
    assert ids.count("attention_head_weights_then_values") == 1


def test_staging_keeps_notebooks_and_nbgraders_files_only(tmp_path):
    """A student's own page would be released as feedback: it is left out, and named."""
    from autograders.task import stage

    sub = tmp_path / "sub"
    sub.mkdir()
    for name in ("timestamp.txt", "submission_secret.txt", "evil.html", "notes.py", ".hidden.svg"):
        (sub / name).write_text("<script>alert(1)</script>")
    nbformat.write(nc.student_notebook("07_softmax"), str(sub / "07_softmax.ipynb"))
    bad, notes = stage(sub, tmp_path / "staged", nc.SOLUTIONS, "mhsa-grader", STUB)
    staged = sorted(p.name for p in (tmp_path / "staged").iterdir())
    assert staged == ["07_softmax.ipynb", "submission_secret.txt", "timestamp.txt"]
    assert bad == [] and notes == [
        "evil.html is not a notebook (left out of grading and feedback)",
        "notes.py is not a notebook (left out of grading and feedback)",
    ]


#: nbgrader's stub of a cleared answer cell.
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"


def tampering(source, sub) -> list:
    """What restoring undoes in each notebook of ``sub``, as the grader names it."""
    found = []
    for path in sorted(sub.glob("*.ipynb")):
        src, got = integrity.read(source / path.name), integrity.read(path)
        found += integrity.restore(src, got, path.stem, "mhsa-grader", STUB)[1]
    return found


def test_tampering_names_edited_deleted_retyped_cells_and_foreign_kernels(submission):
    source, sub = submission
    sub.mkdir()
    nb = nc.student_notebook("07_softmax")
    test_cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    test_cell.source = "assert True"
    nb.metadata["kernelspec"] = {"name": "julia-1.9", "display_name": "Julia", "language": "julia"}
    nbformat.write(nb, str(sub / "07_softmax.ipynb"))
    nb = nc.student_notebook("04_heads")
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    nb.cells.remove(graded[0])
    graded[1].cell_type = "markdown"
    for key in ("outputs", "execution_count"):
        graded[1].pop(key, None)
    nbformat.write(nb, str(sub / "04_heads.ipynb"))
    found = tampering(source, sub)
    assert found == [
        "04_heads: test cell merge_heads_undoes_split_heads turned into markdown (restored)",
        "04_heads: test cell split_heads_head_i_owns_its_columns deleted (restored)",
        "07_softmax: test cell softmax_rows_sum_to_one edited (restored)",
        "07_softmax: kernelspec 'julia-1.9' replaced by the grading kernel",
    ]
    course_copy(sub, ["07_softmax", "04_heads"])
    assert tampering(source, sub) == []


@pytest.mark.parametrize("name", [e.name for e in __import__("mhsa_helpers").exercises.EXERCISES])
def test_the_childs_mh_holds_only_what_the_exercise_may_use(name):
    """The child never receives the reference of the exercise itself or of a later step."""
    from mhsa_helpers.execution.in_child import _mh_of
    from mhsa_helpers.exercises import forbidden

    source, blocked = _mh_of([name])
    defined = {}
    exec(source, defined)
    assert blocked == forbidden(name)
    assert not blocked & set(defined), blocked & set(defined)
    assert set(exercise(name).may_use) <= set(defined)


@pytest.mark.slow  # a real child process
def test_asking_mh_for_the_exercise_itself_is_named():
    cheat = "def softmax(Z, axis=-1):\n    return mh.softmax(Z, axis)\n"
    result = run_one(cheat, "softmax")
    verdict = judge("softmax", None, result.outcomes[("softmax", None)])
    assert "instead of implementing it" in verdict
    assert "called the reference implementation" in result.events


@pytest.mark.slow  # a real child process
def test_a_numpy_patch_in_the_answers_changes_no_verdict():
    patch = "np.allclose = lambda *a, **k: True\nnp.asarray = lambda *a, **k: 0.0\n"
    result = run_one(patch + WRONG_SOFTMAX, "softmax")
    assert judge("softmax", None, result.outcomes[("softmax", None)]) is not None
    assert any("numpy monkeypatched" in e for e in result.events)


@pytest.mark.slow  # a real child process
def test_an_answer_that_ignores_its_alarm_is_still_stopped():
    stubborn = (
        "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass\n"
    )
    assert "timed out" in run_one(stubborn, "softmax", timeout=2).error


@pytest.mark.slow  # a real child process
def test_grading_refuses_without_a_sandbox(tmp_path):
    """No bubblewrap on PATH: the grade command says so and grades nothing."""
    import subprocess
    import sys
    from pathlib import Path

    env = dict(nc.env(), PATH=str(Path(sys.executable).parent))  # no /usr/bin: no bwrap
    proc = subprocess.run(
        [sys.executable, "-m", "autograders", "grade", "mhsa", "--course-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "not grading: bubblewrap (bwrap) is not installed" in proc.stderr
    assert "--no-sandbox" in proc.stderr


def test_the_summary_says_when_the_sandbox_was_off(capsys):
    from autograders.summary import print_summary

    summary = dict(students=1, graded=1, skipped=0, failed=0, seconds=1.0, max_score=30)
    print_summary({**summary, "totals": {"a": 30.0}, "failures": {}, "sandboxed": False})
    assert "WITHOUT the sandbox" in capsys.readouterr().out


@pytest.mark.slow  # a real child process
def test_oversized_results_stay_outside():
    """A huge array or a huge type name never reaches the parent or the message."""
    huge = "def softmax(Z, axis=-1):\n    return np.zeros(2**23)\n"
    verdict = judge("softmax", None, run_one(huge, "softmax").outcomes[("softmax", None)])
    assert "far too large" in verdict
    named = "def softmax(Z, axis=-1):\n    return type('x' * 10**6, (), {})()\n"
    verdict = judge("softmax", None, run_one(named, "softmax").outcomes[("softmax", None)])
    assert len(verdict) < 500


@pytest.mark.slow  # a real child process
def test_messages_from_the_child_are_one_clipped_line():
    inject = (
        "def softmax(Z, axis=-1):\n"
        "    raise RuntimeError('x\\n! honest: framed\\x1b[2K' + 'y' * 10**5)\n"
    )
    verdict = judge("softmax", None, run_one(inject, "softmax").outcomes[("softmax", None)])
    assert "\n" not in verdict and "\x1b" not in verdict and len(verdict) < 800


def test_a_result_bomb_is_refused_not_expanded():
    from mhsa_helpers.execution.outcomes import NODE_LIMIT, outcomes_of

    bomb = [0]
    for _ in range(60):  # 2**60 leaves if expanded; a few hundred bytes pickled
        bomb = [bomb, bomb]
    with pytest.raises(ValueError, match="too deep or too large"):
        outcomes_of([("value", bomb)])
    assert NODE_LIMIT <= 100_000


def test_staging_leaves_out_symbolic_links(tmp_path):
    """A link to the solutions (or to another student's work) is not sent, nor graded."""
    from autograders.task import files_of, stage

    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "07_softmax.ipynb").symlink_to(nc.SOLUTIONS / "07_softmax.ipynb")
    files, left_out = files_of(sub, recursive=False)
    assert files == {} and left_out == {"07_softmax.ipynb": "a symbolic link"}
    bad, notes = stage(sub, tmp_path / "staged", nc.SOLUTIONS, "mhsa-grader", STUB, left_out)
    assert bad == []  # it is not unreadable: it is not there, and scores 0 as not there
    assert notes[0] == "07_softmax.ipynb is a symbolic link: not graded, scored 0"
    assert not (tmp_path / "staged" / "07_softmax.ipynb").exists()


TILED_FULL_MATRIX = """
import tracemalloc
tracemalloc.get_traced_memory = lambda: (0, 0)  # attack 1: report no memory at all

def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    T_q, T_k = Q.shape[-2], K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError(f"causal needs T_q == T_k, but got {T_q} and {T_k}.")
    mask = np.triu(np.full((T_q, T_k), -np.inf), 1) if causal else None
    out = mh.attention_head(Q, K, V, mask)[0]  # the full (T_q, T_k) matrix
    del mask
    import _tracemalloc
    _tracemalloc.reset_peak()  # attack 2: forget the peak, through the C module
    return out
"""


@pytest.mark.slow  # a real child process
def test_the_memory_bound_holds_when_tracemalloc_is_patched():
    """Grading measures memory apart, with tracemalloc's own functions and a hard bound."""
    sources = answer_sources(nc.SOLUTIONS / "14_tiled.ipynb")
    honest = next(s for s in sources if "def tiled_attention" in s)
    result = run_one(honest, "tiled_attention")
    assert judge("tiled_attention", None, result.outcomes[("tiled_attention", None)]) is None
    result = run_one(TILED_FULL_MATRIX, "tiled_attention")
    verdict = judge("tiled_attention", None, result.outcomes[("tiled_attention", None)])
    assert verdict is not None and "memory bound" in verdict, verdict


@pytest.mark.slow  # a real child process
def test_an_error_of_a_course_function_is_no_check_of_the_answers_own_in_the_child():
    """Where no course function checks the argument (n_kv_heads of 12), mh's error is not one.

    Run in the child, whose ``mh`` is a module of its own: relying on mh.attention_head's
    error fails, and leaving d_model to mh.split_heads (which checks just that) passes.
    """
    from tests.support.named_slips import NAMED, NAMED_CORRECT

    name = "grouped_query_attention"
    wrong = NAMED["grouped_query_attention_no_own_kv_check"][2]
    right = NAMED_CORRECT["grouped_query_attention_d_model_left_to_split_heads"][2]
    for seed in (None, hidden(name)):
        said = [
            judge(
                name,
                seed,
                run_in_child([Job("12_gqa", [s], [(name, seed)])])["12_gqa"].outcomes[(name, seed)],
            )
            for s in (wrong, right)
        ]
        assert "not from a check of its own" in said[0], said[0]
        assert said[1] is None, said[1]
