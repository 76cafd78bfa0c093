"""A learner's function that never returns is stopped, with one sentence; an interrupt is one line.

In the kernel, the course runs learner code in four places: a check's calls
(``checks.check`` → ``call_in_notebook`` → ``call_each``), a saved notebook's answer
cells (``run_answers_here``: the capstone, the explorer), the capstone's layer on the
examples, and the widgets' own calls (``panels.attempt``). Each is bounded by the same
limit (``budget.kernel_call_s``, from the reference's time, or the cells' allowance) and
says the same sentence (``budget.ran_long``).

No test here depends on timing: every function below never returns (a ``while True``
loop) and the limit is set small through ``budget.SECONDS_VARIABLE``; no test asserts
how fast anything runs. An interrupt is simulated by a function that raises
``KeyboardInterrupt``, as the kernel's stop button does in the running code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import traceback
from pathlib import Path

import numpy as np
import pytest

from mhsa_helpers import checks
from mhsa_helpers.budget import (
    CALL_ALLOWANCE,
    CELLS_ALLOWANCE,
    FACTOR,
    SECONDS_VARIABLE,
    duration,
    kernel_call_s,
    kernel_cells_s,
)
from mhsa_helpers.capstone import compare_saved_layer
from mhsa_helpers.execution.child.contract import (
    Interrupted,
    TimedOut,
    TimeLimit,
    call_each,
    call_one,
)
from mhsa_helpers.execution.saved import CellsRanLong, learner_functions, run_answers_here
from mhsa_helpers.exercises import names
from mhsa_helpers.widgets.explorer import Explorer
from mhsa_helpers.widgets.sliding_window import SlidingWindowWidget

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "notebooks" / "mhsa"
NOW = 1_800_000_000.0  # a fixed present: no dependence on the clock
#: The small limit the tests set (seconds): a loop without end is stopped at once.
SMALL = "0.05"
#: The limit of the tests where only the endless function runs under it (a check's calls).
TINY = "0.01"

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "setitimer"), reason="no SIGALRM timer on this platform"
)


@pytest.fixture
def small_limit(monkeypatch):
    """Every in-kernel limit set to :data:`SMALL` seconds."""
    monkeypatch.setenv(SECONDS_VARIABLE, SMALL)


@pytest.fixture
def tiny_limit(monkeypatch):
    """Every in-kernel limit set to :data:`TINY` seconds (nothing but the loop runs under it)."""
    monkeypatch.setenv(SECONDS_VARIABLE, TINY)


def forever(*args, **kwargs):
    """A learner's function whose loop's condition never changes."""
    while True:
        pass


def stopped_by_hand(*args, **kwargs):
    """A learner's function the learner stops (the kernel's stop button raises this in it)."""
    raise KeyboardInterrupt


def one_line(exc: BaseException) -> str:
    """What IPython shows of ``exc``: its ``_render_traceback_``, which must be one line."""
    shown = exc._render_traceback_()
    assert len(shown) == 1 and "\n" not in shown[0], shown
    assert shown[0].startswith("\u2717 "), shown
    return shown[0]


def saved(tmp_path, stem: str, answer: str) -> Path:
    """The student's ``stem`` notebook saved in tmp_path with its first answer cell ``answer``."""
    path = tmp_path / f"{stem}.ipynb"
    shutil.copy(STUDENT / f"{stem}.ipynb", path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = [
        c
        for c in nb["cells"]
        if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("solution")
    ]
    cells[0]["source"] = answer
    path.write_text(json.dumps(nb), encoding="utf-8")
    os.utime(path, (NOW - 180, NOW - 180))
    return path


# --------------------------------------------------------------------------
# the limit itself
# --------------------------------------------------------------------------
def test_the_limit_stops_a_loop_and_restores_the_previous_handler_and_timer():
    def before(signum, frame):  # someone else's handler and timer, set before the limit
        raise AssertionError("the previous timer fired inside the limit")

    old = signal.signal(signal.SIGALRM, before)
    try:
        signal.setitimer(signal.ITIMER_REAL, 3600.0)
        limit = TimeLimit(0.05)
        with pytest.raises(TimedOut), limit:
            forever()
        assert limit.fired
        assert signal.getsignal(signal.SIGALRM) is before
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 3600.0  # re-armed, still running
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_a_previous_timer_due_during_the_limit_is_served_once_by_its_own_handler():
    served = []
    old = signal.signal(signal.SIGALRM, lambda signum, frame: served.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.01)  # one-shot, due long before the limit
        with pytest.raises(TimedOut), TimeLimit(0.2):
            forever()
        assert served == [signal.SIGALRM]
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # served: nothing left to re-arm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_an_outer_limit_stops_the_code_inside_an_inner_one():
    outer, inner = TimeLimit(0.05), TimeLimit(600.0)
    with pytest.raises(TimedOut), outer, inner:
        forever()
    assert outer.fired and not inner.fired
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_a_stop_caught_by_the_learners_code_comes_again():
    def stubborn():
        try:
            forever()
        except BaseException:  # a bare except around the loop
            pass
        forever()  # and a second loop

    limit = TimeLimit(0.05)
    with pytest.raises(TimedOut), limit:
        stubborn()
    assert limit.fired


def test_without_a_limit_nothing_is_armed():
    with TimeLimit(None) as limit:
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    assert not limit.fired


def test_the_limit_scales_with_the_references_time_as_the_grader_does(monkeypatch):
    monkeypatch.delenv(SECONDS_VARIABLE, raising=False)
    assert kernel_call_s(0.0) == CALL_ALLOWANCE  # the floor: a slow machine never fails
    assert kernel_call_s(0.5) == CALL_ALLOWANCE + FACTOR * 0.5
    assert kernel_call_s(0.5, memory=True) == CALL_ALLOWANCE + FACTOR * 0.5 + CELLS_ALLOWANCE
    assert kernel_cells_s() == CELLS_ALLOWANCE
    monkeypatch.setenv(SECONDS_VARIABLE, "0.25")
    assert kernel_call_s(10.0) == 0.25 and kernel_cells_s() == 0.25


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(5.0, "5 s"), (1.5, "1.5 s"), (12.3, "12 s"), (1e-4, "0.1 ms"), (2.7e-4, "0.27 ms"),
     (0.2, "200 ms"), (4e-5, "40 \u00b5s"), (0.999, "1 s")],
)  # fmt: skip
def test_a_time_is_said_in_plain_units(seconds, said):
    assert duration(seconds) == said


def test_the_grader_child_contract_has_no_time_limit_of_its_own():
    """The child's call (call_one) is bounded by the grader's budget, never by a timer here."""
    outcome = call_one("softmax", lambda Z: Z, ((np.ones(2),), {}))
    assert outcome[0] == "value"
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_call_each_stops_a_call_past_its_limit_with_the_code_slow():
    calls = [((np.zeros((2, 2)),), {}), ((np.zeros((2, 2)),), {})]
    raw = call_each("softmax", forever, calls, seconds=[0.05, 0.05])
    assert len(raw) == 1  # the first error stops the calls
    kind, sentence, code = raw[0]
    assert (kind, code) == ("error", "slow")
    assert sentence.startswith("softmax ran for more than") and "an endless loop?" in sentence


# --------------------------------------------------------------------------
# the visible check, the hidden check, and an interrupt in a check
# --------------------------------------------------------------------------
def test_a_softmax_that_never_returns_is_stopped_by_its_check_with_one_sentence(small_limit):
    with pytest.raises(checks.CheckFailed) as failed:
        checks.check("softmax", forever)
    said = str(failed.value)
    assert said.startswith("softmax ran for more than 50 ms on Z of shape (6, 6), where ")
    assert ", where the reference takes " in said
    assert said.endswith(": an endless loop? Check the loop's condition, then run the cell again.")
    assert "array(" not in said and "Traceback" not in said
    assert one_line(failed.value) == f"\u2717 {said}"


def test_a_hidden_test_says_the_time_budget_and_nothing_of_the_inputs(tiny_limit):
    with pytest.raises(checks.CheckFailed) as failed:
        checks.check_hidden("softmax", forever)
    said = str(failed.value)
    assert said == "softmax took longer than its time budget on a hidden input. (hidden tests)"


@pytest.mark.parametrize("name", names())
def test_every_exercise_is_stopped_the_same_way(tiny_limit, name):
    with pytest.raises(checks.CheckFailed) as failed:
        checks.check(name, forever)
    said = str(failed.value)
    assert re.match(rf"{name} ran for more than 10 ms (on \w+ of shape|with \w+ = )", said), said
    assert ", where the reference takes " in said and "an endless loop?" in said


def test_an_interrupt_during_a_check_is_one_line_naming_the_call():
    with pytest.raises(KeyboardInterrupt) as stopped:
        checks.check("softmax", stopped_by_hand)
    assert isinstance(stopped.value, Interrupted)
    shown = one_line(stopped.value)
    assert shown.startswith("\u2717 softmax was interrupted after ")
    assert " on Z of shape (6, 6), where the reference takes " in shown
    assert stopped.value.__cause__ is None and stopped.value.__suppress_context__


def test_an_interrupt_during_a_hidden_check_says_nothing_of_the_inputs():
    with pytest.raises(Interrupted) as stopped:
        checks.check_hidden("softmax", stopped_by_hand)
    assert one_line(stopped.value) == (
        "\u2717 softmax was interrupted on a hidden input: an endless loop? Check the loop's "
        "condition, then run the cell again."
    )


def test_ipython_shows_an_interrupted_check_as_one_line(capsys):
    """A cell of IPython's own shell whose check is interrupted: one line, no course frame."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.user_ns.update(checks=checks, stopped_by_hand=stopped_by_hand)
        capsys.readouterr()
        result = shell.run_cell('checks.check("softmax", stopped_by_hand)')
        shown = capsys.readouterr()
    finally:
        InteractiveShell.clear_instance()
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    text = (shown.out + shown.err).strip()
    assert text.startswith("\u2717 softmax was interrupted after "), text
    assert len(text.splitlines()) == 1, text
    assert "mhsa_helpers" not in text and "Traceback" not in text


# --------------------------------------------------------------------------
# saved answers: the capstone, the explorer, their cells
# --------------------------------------------------------------------------
def test_the_capstone_stops_a_saved_layer_that_never_returns(tmp_path, small_limit):
    saved(
        tmp_path,
        "09_multi_head",
        "def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):\n"
        "    i = 0\n"
        "    while i < n_heads:  # i never grows\n"
        "        pass\n",
    )
    rows, sentence = compare_saved_layer(tmp_path, now=NOW)
    assert rows == []
    assert sentence.startswith(
        "Your multi_head_self_attention, as saved in 09_multi_head.ipynb (saved 3 minutes ago), "
        "ran for more than 50 ms on the song example, h=1, no mask, where the reference takes "
    ), sentence
    assert sentence.endswith(
        ": an endless loop? Check the loop's condition in 09_multi_head, save it "
        "(Ctrl+S / \u2318S) and run this cell again."
    ), sentence


def test_saved_answer_cells_that_never_end_are_stopped_and_named(tmp_path, small_limit):
    looping = (
        "def softmax(Z, axis=-1):\n    return Z\n\n" + "while True:  # a test left here\n    pass\n"
    )

    path = saved(tmp_path, "07_softmax", looping)
    with pytest.raises(CellsRanLong) as stopped:
        run_answers_here(path)
    assert str(stopped.value) == (
        "Answer cell 1 of your saved 07_softmax.ipynb ran for more than 50 ms: an endless loop? "
        "An answer cell only defines functions: check the loop's condition, save 07_softmax "
        "(Ctrl+S / \u2318S) and run this cell again."
    )
    assert "softmax" not in learner_functions(tmp_path)  # skipped: the reference stands in
    saved(tmp_path, "09_multi_head", looping)
    rows, sentence = compare_saved_layer(tmp_path, now=NOW)
    assert rows == [] and sentence.startswith("Answer cell 1 of your saved 09_multi_head.ipynb")


def test_a_saved_cells_traceback_quotes_its_code_not_the_notebooks_json(tmp_path):
    path = saved(tmp_path, "07_softmax", "x = 1\ny = np.zeros(2) @ np.zeros(3)\n")
    with pytest.raises(ValueError) as raised:
        run_answers_here(path)
    text = "".join(traceback.format_exception(raised.value))
    assert '"<07_softmax.ipynb, answer cell 1>", line 2' in text.replace("File ", "")
    assert "y = np.zeros(2) @ np.zeros(3)" in text
    assert '"cell_type"' not in text and '"source"' not in text


def test_an_interrupt_in_saved_cells_is_one_line(tmp_path):
    path = saved(tmp_path, "07_softmax", "raise KeyboardInterrupt\n")
    with pytest.raises(Interrupted) as stopped:
        run_answers_here(path)
    assert one_line(stopped.value).startswith(
        "\u2717 Answer cell 1 of your saved 07_softmax.ipynb was interrupted after "
    )


def test_the_explorer_replaces_a_softmax_that_never_returns_and_says_why(small_limit):
    ex = Explorer(functions={"softmax": forever}, step=7)
    notes = " ".join(ex.texts[6]["notes"])
    assert "Why not your <code>softmax</code>: its check fails: softmax ran for more than" in notes
    assert "an endless loop?" in notes
    assert "the course's <code>softmax</code> instead of yours" in ex.texts[6]["status"]


def test_the_capstones_explorer_on_a_saved_softmax_that_never_returns(tmp_path, small_limit):
    saved(tmp_path, "07_softmax", "def softmax(Z, axis=-1):\n    while True:\n        pass\n")
    functions = learner_functions(tmp_path)
    assert "softmax" in functions
    ex = Explorer(functions=functions, step=7, saved=True)
    notes = " ".join(ex.texts[6]["notes"])
    assert "Why not your <code>softmax</code> (the copy saved in notebook 07): its check " in notes
    assert "softmax ran for more than 50 ms on Z of shape (6, 6)" in notes
    # the check's "then run the cell again" is not the explorer's cell: it says what to do
    assert "an endless loop? Check the loop's condition. Fix it, save it, then run this " in notes
    assert "run the cell again" not in notes


def test_drawn_anyway_a_function_that_never_returns_is_stopped_once_and_named(small_limit):
    ex = Explorer(functions={"softmax": forever}, step=7)
    ex.anyway = True  # the box "draw my failing functions anyway"
    notes = " ".join(ex.texts[6]["notes"])
    assert "Why not your <code>softmax</code>: it ran for more than 50 ms, where the " in notes
    assert "an endless loop? Check the loop's condition, run its cell, then this one." in notes


def test_an_extension_widget_stops_a_function_that_never_returns_once(small_limit):
    made = []

    def sliding_window_mask(seq_len, window):  # loops once its check has been passed by hand
        made.append(1)
        forever()

    widget = SlidingWindowWidget(functions={"sliding_window_mask": sliding_window_mask})
    assert "ran for more than 50 ms" in " ".join(widget.current()["notes"])  # its check
    made.clear()
    widget.anyway = True  # every state drawn with it: called once, then known to run long
    assert len(made) == 1, len(made)
    (note,) = [n for n in widget.current()["notes"] if "Why not yours" in n]
    assert "your failing <code>sliding_window_mask</code> ran for more than 50 ms " in note
    assert "an endless loop? Check the loop's condition, run its cell, then run this cell" in note


def test_an_interrupt_in_a_widget_is_one_line():
    with pytest.raises(Interrupted) as stopped:
        Explorer(functions={"softmax": stopped_by_hand}, step=7)
    assert one_line(stopped.value).startswith("\u2717 softmax was interrupted after ")


# --------------------------------------------------------------------------
# in real kernels (slow)
# --------------------------------------------------------------------------
LOOPING_SOFTMAX = "def softmax(Z, axis=-1):\n    while True:  # nothing changes\n        pass\n"


def _graded_error(nb) -> list:
    """The traceback lines of the error output of the notebook's graded test cell."""
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    (error,) = [o for o in graded[0].outputs if o.output_type == "error"]
    return error.traceback


@pytest.mark.slow
def test_in_a_kernel_the_test_cell_of_a_looping_softmax_says_one_sentence(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    from tests.support import nbgrader_course as nc

    monkeypatch.setenv(SECONDS_VARIABLE, "1")  # the kernel inherits it
    nb = nc.student_notebook("07_softmax", {"softmax": LOOPING_SOFTMAX})
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    (shown,) = _graded_error(nb)
    assert shown.startswith("\u2717 softmax ran for more than 1 s on Z of shape (6, 6), where ")
    assert shown.endswith("an endless loop? Check the loop's condition, then run the cell again.")


@pytest.mark.slow
def test_in_a_kernel_an_interrupted_check_shows_one_line(monkeypatch):
    """The stop button during a check: the kernel's error message is one line, no frames."""
    from jupyter_client.manager import start_new_kernel

    monkeypatch.setenv(SECONDS_VARIABLE, "600")  # the interrupt comes first
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        define = (
            "from mhsa_helpers import checks\n"
            "def softmax(Z, axis=-1):\n"
            "    print('looping', flush=True)\n"
            "    while True:\n"
            "        pass\n"
        )
        kc.execute_interactive(define, timeout=120)
        msg_id = kc.execute('checks.check("softmax", softmax)')
        error = None
        while error is None:
            msg = kc.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            content = msg["content"]
            if msg["msg_type"] == "stream" and "looping" in content["text"]:
                km.interrupt_kernel()  # the learner's stop button, while softmax loops
            elif msg["msg_type"] == "error":
                error = content
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert error["ename"] == "Interrupted"
    (shown,) = error["traceback"]
    assert shown.startswith("\u2717 softmax was interrupted after "), shown
    assert " on Z of shape (6, 6), where the reference takes " in shown


@pytest.mark.slow
def test_in_a_kernel_the_capstone_runs_past_a_saved_softmax_that_loops(tmp_path, monkeypatch):
    """The capstone's explorer cell, with 07 saved with a softmax that never returns: the cell
    ends, the explorer draws the course's softmax and says why, in its words."""
    from tests.support.kernels import execute_notebooks

    folder = tmp_path / "saved"
    folder.mkdir()
    for path in STUDENT.glob("*.ipynb"):
        shutil.copy(path, folder / path.name)
    saved(folder, "07_softmax", LOOPING_SOFTMAX)
    monkeypatch.setenv(SECONDS_VARIABLE, "1")
    ((nb, error),) = execute_notebooks([("10", folder / "10_capstone.ipynb", folder)]).values()
    assert error is None, error
    state = json.dumps(nb.metadata.get("widgets", {}))
    assert "softmax ran for more than 1 s on Z of shape (6, 6)" in state
    assert "(the copy saved in notebook 07): its check fails" in state


@pytest.mark.slow
def test_in_jupyterlab_an_interrupted_check_shows_one_line(tmp_path, monkeypatch):
    """The stop button in a real JupyterLab while a check's call loops: the cell's output is
    one line (the screenshot: test-output/time_limit/interrupted.png)."""
    from tests.support import lab_harness as lab

    if not Path(lab.CHROMIUM).exists():
        pytest.fail(f"{lab.CHROMIUM} is missing: .ci/run installs Debian's chromium")
    root = tmp_path / "notebooks"
    root.mkdir()
    saved(
        root,
        "07_softmax",
        "def softmax(Z, axis=-1):\n    print('looping')\n    while True:\n        pass\n",
    )
    monkeypatch.setenv(SECONDS_VARIABLE, "600")  # the kernel inherits it: the interrupt first
    out = ROOT / "test-output" / "time_limit"
    out.mkdir(parents=True, exist_ok=True)
    test = 'checks.check("softmax", softmax)'
    with (
        lab.jupyterlab(tmp_path / "lab", root) as base,
        lab.chromium_page(viewport=lab.LAPTOP) as page,
    ):
        page.goto(f"{base}/lab/tree/07_softmax.ipynb?reset")
        page.wait_for_function(
            "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
            " return w && w.sessionContext && w.sessionContext.session"
            " && w.sessionContext.session.kernel; }",
            timeout=180_000,
        )
        page.evaluate(  # run all, not awaited: the test cell loops until the interrupt
            """async () => { const w = window.jupyterapp.shell.currentWidget;
            await w.sessionContext.ready;
            window.jupyterapp.commands.execute('notebook:run-all-cells'); }"""
        )
        cell = page.locator(".jp-Cell").filter(has_text=test).first
        cell.locator(".jp-OutputArea-output", has_text="looping").wait_for(timeout=120_000)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:interrupt-kernel')")
        shown = cell.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']")
        shown.wait_for(timeout=120_000)
        cell.scroll_into_view_if_needed()
        cell.screenshot(path=str(out / "interrupted.png"))
        text = shown.inner_text().strip()
    assert text.startswith("\u2717 softmax was interrupted after "), text
    assert len(text.splitlines()) == 1 and "Traceback" not in text, text
