"""Class-scale grading with real nbgrader: hostile submissions, parallel = serial, resuming."""

from __future__ import annotations

import contextlib
import copy
import csv
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.plugins import LateSubmissionPlugin

from autograders.limits import MAX_CELLS
from autograders.private import close
from tests.support import hostile_pages as hp
from tests.support import lab_harness as lab
from tests.support import nbgrader_course as nc
from tests.support.classes import LOOP, SOME, STUCK_LIMIT, honest_class, stuck_class_reference
from tests.support.mistakes import HOSTILE

pytestmark = pytest.mark.slow  # real nbgrader and grading kernels

SOFTMAX = "07_softmax"
WRONG = "def softmax(Z, axis=-1):\n    return np.zeros_like(Z)\n"
RIGHT = nc.answer_cells(nbformat.read(str(nc.SOLUTIONS / f"{SOFTMAX}.ipynb"), 4))[
    "softmax_answer"
].source


def softmax_nb(answer=WRONG):
    return nc.student_notebook(SOFTMAX, {"softmax": answer})


def softmax_test_cell(nb):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))


def edited():
    nb = softmax_nb()
    softmax_test_cell(nb).source = "assert True"
    return nb


def deleted():
    nb = softmax_nb()
    nb.cells.remove(softmax_test_cell(nb))
    return nb


def recreated():
    nb = softmax_nb()
    cell = softmax_test_cell(nb)
    cell.metadata = {}
    cell.source = "pass"
    return nb


def retyped():
    nb = softmax_nb()
    cell = softmax_test_cell(nb)
    cell.cell_type = "markdown"
    for key in ("outputs", "execution_count"):
        cell.pop(key, None)
    return nb


def foreign_kernel():
    nb = softmax_nb(RIGHT)
    nb.metadata["kernelspec"] = {"name": "julia-1.9", "display_name": "Julia", "language": "julia"}
    return nb


PATCH_CHECKS = (
    "from mhsa_helpers import checks as _c\n"
    "_c.check = lambda *a, **k: None\n"
    "_c.check_hidden = lambda *a, **k: None\n" + WRONG
)
# Address space reserved in 1 GiB blocks without touching it: the 3 GiB limit
# is reached in microseconds, long before any time limit however busy the
# machine is (a bomb that touches its pages raced the cell time limit on a
# loaded CI machine).
BOMB = (
    "def softmax(Z, axis=-1):\n    hog = []\n    while True:\n        hog.append(np.empty(2**27))\n"
)
TOP_BOMB = "hog = [np.empty(2**27) for _ in range(64)]\n" + RIGHT
FLOOD = RIGHT.replace("### BEGIN SOLUTION", "### BEGIN SOLUTION\n    print('flood' * 10**6)")
STDERR = "import sys\n\n" + RIGHT.replace(
    "### BEGIN SOLUTION", "### BEGIN SOLUTION\n    print('debug', file=sys.stderr)"
)
RAW_WRITE = "import os\nos.write(1, b'x' * 40_000_000)\n" + RIGHT
EXIT = "import os\nos._exit(0)\n" + RIGHT
MH_SELF = "def softmax(Z, axis=-1):\n    return mh.softmax(Z, axis)\n"
PRIVATE = "def softmax(Z, axis=-1):\n    return mh.reference._softmax_inplace(Z.copy(), axis)\n"


def gradebook_writer(course):
    return (
        "import sqlite3\n"
        f"db = sqlite3.connect({str(course / 'gradebook.db')!r})\n"
        "db.execute('UPDATE grade SET manual_score = 100, extra_credit = 1')\n"
        "db.commit()\n" + WRONG
    )


def code_writer():
    target = nc.ROOT / "autograders" / "WRITTEN_BY_SUBMISSION.txt"
    return f"open({str(target)!r}, 'w').write('pwned')\n" + WRONG


def solutions_reader():
    path = nc.SOLUTIONS / "07_softmax.ipynb"
    return (
        "import json\n"
        f"cells = json.load(open({str(path)!r}))['cells']\n"
        "sources = [''.join(c['source']) for c in cells]\n"
        "exec(next(src for src in sources if 'BEGIN SOLUTION' in src))\n"
    )


def daemon(course):
    """A process meant to outlive grading and zero everybody's grades afterwards."""
    script = (
        "import sqlite3, time; time.sleep(20); "
        f"sqlite3.connect({str(course / 'gradebook.db')!r}).execute("
        "'UPDATE grade SET manual_score = 0').connection.commit()"
    )
    return (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', {script!r}], start_new_session=True)\n" + RIGHT
    )


def duplicated():
    """An honest copy-paste of the (correct) answer cell and of the test cell."""
    nb = softmax_nb(RIGHT)
    for cell in [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")][-2:]:
        twin = copy.deepcopy(cell)
        twin.id = twin.id + "-copy"
        nb.cells.append(twin)
    return nb


def bad_metadata():
    """A graded cell nbgrader itself would reject (negative points): left out, not fatal."""
    nb = softmax_nb(RIGHT)
    cell = nbformat.v4.new_code_cell("pass")
    cell.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "invented",
        "locked": False,
        "points": -5,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    nb.cells.append(cell)
    return nb


def many_cells():
    """A correct softmax in a notebook one cell over the course's limit: not graded."""
    nb = softmax_nb(RIGHT)
    nb.cells += [
        nbformat.v4.new_code_cell(f"x = {i}") for i in range(MAX_CELLS + 1 - len(nb.cells))
    ]
    return nb


def with_first(nb):
    """The notebook plus a correct 01_input: the crash of one notebook must not cost it."""
    return {SOFTMAX: nb, "01_input": nc.student_notebook("01_input", "solution")}


# student -> (notebooks, the note the summary must give or None, does softmax keep its points?)
def hostile_class(course):
    return {
        "h_assert_true": (lambda: {SOFTMAX: edited()}, "edited (restored)", False),
        "h_deleted": (lambda: {SOFTMAX: deleted()}, "deleted (restored)", False),
        "h_recreated": (lambda: {SOFTMAX: recreated()}, "(all of it removed) (restored)", False),
        "h_retyped": (lambda: {SOFTMAX: retyped()}, "turned into markdown", False),
        "h_patch_allclose": (
            lambda: {SOFTMAX: softmax_nb(HOSTILE["patches_allclose"][2])},
            "numpy monkeypatched",
            False,
        ),
        "h_patch_testing": (
            lambda: {SOFTMAX: softmax_nb(HOSTILE["patches_testing"][2])},
            "numpy monkeypatched",
            False,
        ),
        "h_patch_checks": (
            lambda: {SOFTMAX: softmax_nb(PATCH_CHECKS)},
            "No module named 'mhsa_helpers'",
            False,
        ),
        "h_imports_reference": (
            lambda: {SOFTMAX: softmax_nb(HOSTILE["calls_reference"][2])},
            "No module named 'mhsa_helpers'",
            False,
        ),
        "h_mh_itself": (lambda: {SOFTMAX: softmax_nb(MH_SELF)}, "called the reference", False),
        "h_private_helper": (lambda: {SOFTMAX: softmax_nb(PRIVATE)}, "called the reference", False),
        "h_reads_solutions": (
            lambda: {SOFTMAX: softmax_nb(solutions_reader())},
            "FileNotFoundError",
            False,
        ),
        "h_gradebook": (
            lambda: {SOFTMAX: softmax_nb(gradebook_writer(course))},
            "the answer cells raise",
            False,
        ),
        "h_writes_code": (
            lambda: {SOFTMAX: softmax_nb(code_writer())},
            "the answer cells raise",
            False,
        ),
        "h_daemon": (lambda: {SOFTMAX: softmax_nb(daemon(course))}, None, True),
        "h_endless_loop": (lambda: {SOFTMAX: softmax_nb(LOOP)}, "over its time budget", False),
        "h_memory_bomb": (lambda: {SOFTMAX: softmax_nb(BOMB)}, "memory limit reached", False),
        "h_top_bomb": (lambda: with_first(softmax_nb(TOP_BOMB)), "memory limit reached", False),
        "h_exit": (lambda: with_first(softmax_nb(EXIT)), "ended their process", False),
        "h_raw_write": (lambda: {SOFTMAX: softmax_nb(RAW_WRITE)}, None, True),
        "h_output_flood": (lambda: {SOFTMAX: softmax_nb(FLOOD)}, None, True),
        "h_stderr": (lambda: {SOFTMAX: softmax_nb(STDERR)}, None, True),
        "h_duplicated": (lambda: {SOFTMAX: duplicated()}, "appears twice", True),
        "h_corrupt_json": (
            lambda: {SOFTMAX: "{not json", "01_input": nc.student_notebook("01_input", "solution")},
            "unreadable notebook(s), scored 0: 07_softmax",
            False,
        ),
        "h_missing": (
            lambda: {"01_input": nc.student_notebook("01_input", "solution")},
            "missing notebook(s)",
            False,
        ),
        "h_bad_metadata": (
            lambda: {SOFTMAX: bad_metadata()},
            "extra graded cell 'invented' added (not graded)",
            True,
        ),
        "h_kernelspec": (
            lambda: {SOFTMAX: foreign_kernel()},
            "replaced by the grading kernel",
            True,
        ),
        "h_many_cells": (
            lambda: with_first(many_cells()),
            f"{SOFTMAX}.ipynb is a notebook over the course's limit of {MAX_CELLS} cells "
            f"(it has {MAX_CELLS + 1}): not graded, scored 0",
            False,
        ),
        # script in every part of a notebook, in a notebook's name and in a page of its own
        # (HOSTILE_PAGE): none reaches a page that runs it (test_feedback_pages_...)
        "h_script": (
            lambda: {SOFTMAX: hp.hostile_notebook(softmax_nb(RIGHT)), SCRIPT_NAME: softmax_nb()},
            f"{HOSTILE_PAGE} is not a notebook (left out of grading and feedback)",
            True,
        ),
    }


#: A notebook's name and a page a student adds to the submission, script in each.
SCRIPT_NAME = f"<img src=x onerror={hp.js('notebook-name')}>"
HOSTILE_PAGE = "feedback.html"


HOSTILE_STUDENTS = sorted(hostile_class(nc.ROOT))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    course = nc.make_course(tmp_path_factory.mktemp("hostile"), "c.Execute.timeout = 8\n")
    nc.generate(course)
    # the honest student's notebooks: the one every attack is in, and two beside it
    nc.submit(course, "perfect", {s: nc.student_notebook(s, "solution") for s in SOME})
    for student, (make, _, _) in hostile_class(course).items():
        nc.submit(course, student, make())
    page = course / "submitted" / "h_script" / nc.ASSIGNMENT / HOSTILE_PAGE
    page.write_text(hp.script("own-page"))
    close(page)  # private, as collect writes it
    proc = nc.grade(course, "--workers", "2")
    # No wait for the daemon's wake-up (20 s): test_nothing_outlives_grading_or_escapes_the_sandbox
    # finds no process of it once grading is over, so none is left to write later.
    return course, nc.grades(course), proc.stdout


def test_an_honest_student_in_a_hostile_class_gets_full_marks(hostile):
    course, grades, _ = hostile
    mine = {k: v for k, v in grades.items() if k[0] == "perfect" and k[1] in SOME}
    assert mine and all(v > 0 for v in mine.values())
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        sub = gb.find_submission(nc.ASSIGNMENT, "perfect")
        full = {nb.name: (nb.score, nb.max_score) for nb in sub.notebooks if nb.name in SOME}
        assert sorted(full) == sorted(SOME) and all(s == m > 0 for s, m in full.values()), full
        assert sub.score == sum(m for _, m in full.values())  # and nothing anywhere else
        for student in gb.students:
            try:
                s = gb.find_submission(nc.ASSIGNMENT, student.id)
            except Exception:  # no submission
                continue
            assert s.score <= s.max_score, student.id
    assert grades == nc.grades(course), "something changed the gradebook after grading"


@pytest.mark.parametrize("student", HOSTILE_STUDENTS)
def test_hostile_submission_gets_no_credit_and_is_named(hostile, student):
    course, grades, summary = hostile
    _, note, keeps_points = hostile_class(course)[student]
    line = next((ln for ln in summary.splitlines() if ln.startswith(f"! {student}:")), "")
    if note is not None:
        assert note in line, f"summary line for {student}: {line!r}"
    score = grades.get((student, SOFTMAX, "softmax_rows_sum_to_one"), 0)
    if keeps_points:
        assert score > 0, student
    else:
        assert score == 0, (student, score)


def test_nothing_outlives_grading_or_escapes_the_sandbox(hostile):
    assert not (nc.ROOT / "autograders" / "WRITTEN_BY_SUBMISSION.txt").exists()
    alive = subprocess.run(["pgrep", "-f", "time.sleep(20)"], capture_output=True, text=True)
    assert alive.stdout.strip() == "", "a submission's process outlived grading"


def test_no_submission_of_the_hostile_class_fails_grading(hostile):
    """Metadata edits and extra graded cells are undone, not fatal: every student is graded.

    (A grading that does fail, a worker that keeps dying, is marked FAILED in the
    CSV: tests/test_dask.py.)
    """
    course, _, summary = hostile
    assert "failed: 0 " in summary.splitlines()[0] + " ", summary.splitlines()[0]
    nc.nbgrader(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    capped = rows.pop("h_many_cells")["grading"]  # graded but for the notebook over the limit
    assert capped == (
        f"PARTLY GRADED: {SOFTMAX}.ipynb is a notebook over the course's limit of {MAX_CELLS} "
        f"cells (it has {MAX_CELLS + 1}): not graded, scored 0"
    )
    assert {r["grading"] for r in rows.values()} == {"ok"}, rows
    most = nc.scores(course)["_max"]  # full marks in each notebook the honest student submitted
    assert float(rows["perfect"]["raw_score"]) == sum(most[s] for s in SOME) > 0


def test_grading_output_stays_small(hostile):
    _, _, summary = hostile
    assert len(summary) < 20_000


def test_a_notebook_over_the_cell_limit_is_never_rendered_and_its_page_says_why(hostile):
    course, _, _ = hostile
    page = course / "feedback" / "h_many_cells" / nc.ASSIGNMENT / f"{SOFTMAX}.html"
    text = page.read_text()
    assert "this notebook was not graded" in text and f"limit of {MAX_CELLS} cells" in text
    assert len(text) < 2000  # a sentence: nbgrader's page of the notebook would be 100s of kB
    graded = course / "autograded" / "h_many_cells" / nc.ASSIGNMENT
    assert not (graded / f"{SOFTMAX}.ipynb").exists() and (graded / "01_input.ipynb").exists()


def test_a_crashing_notebook_costs_only_that_notebook(hostile):
    _, grades, _ = hostile
    for student in ("h_top_bomb", "h_exit", "h_corrupt_json", "h_many_cells"):
        first = {k: v for k, v in grades.items() if k[:2] == (student, "01_input")}
        assert first and all(v > 0 for v in first.values()), student


def test_feedback_hides_hidden_tests_and_shows_hints(hostile):
    course, _, _ = hostile
    nc.nbgrader(course, "generate_feedback", nc.ASSIGNMENT, "--student", "h_patch_allclose")
    html = course / "feedback" / "h_patch_allclose" / nc.ASSIGNMENT / f"{SOFTMAX}.html"
    text = html.read_text()
    assert "check_hidden" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "hidden tests: not shown" in text
    assert "softmax(Z) is all zeros" in text  # the parent's verdict, as the test's output


@pytest.fixture(scope="module")
def browser():
    if not Path(lab.CHROMIUM).exists():
        pytest.fail(f"{lab.CHROMIUM} is missing: .ci/run installs Debian's chromium")
    if not hp.MATHJAX.is_dir():
        pytest.fail(f"{hp.MATHJAX} is missing: .ci/run installs Debian's libjs-mathjax")
    with lab.chromium_browser() as b:
        yield b


def verdicts(notebook: Path) -> list[str]:
    """The check sentences of a graded notebook, as its test cells' outputs hold them."""
    lines = []
    for cell in nbformat.read(str(notebook), 4).cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("points"):
            for out in cell.outputs:
                text = out.get("text") or f"{out.get('ename')}: {out.get('evalue')}"
                lines.append(text.strip())
    return lines


def assert_runs_nothing(seen: hp.Seen, sentences: list, where: str) -> None:
    """Nothing ran, nothing can, the check sentences and the math are shown, and so is the text."""
    assert seen.ran == [], f"{where}: student script ran: {seen.ran}"
    assert seen.live == [], f"{where}: could run: {seen.live}"
    assert seen.offsite == [], f"{where}: requests off this machine: {seen.offsite}"
    assert sentences and all(s in seen.text for s in sentences), (where, sentences)
    assert hp.script("md-script") in seen.text, f"{where}: the student's markdown is not shown"
    assert seen.typeset > 10, f"{where}: the math is not typeset ({seen.typeset})"


def test_feedback_pages_and_the_formgrader_run_no_student_script(hostile, browser, tmp_path):
    """Each page a student's notebook reaches, opened in Chromium: no payload runs.

    The grade command's feedback page; then, in a copy of the course whose
    autograded notebook also holds outputs of every type (as stock ``nbgrader
    autograde``, the formgrader's button, leaves the outputs of the student's
    code), ``nbgrader generate_feedback``'s page and the formgrader's view of
    the submission, in a Jupyter server started in the course directory.
    """
    course, _, _ = hostile
    out = lab.ROOT / "test-output" / "feedback-pages"
    out.mkdir(parents=True, exist_ok=True)
    folder = course / "feedback" / "h_script" / nc.ASSIGNMENT
    assert sorted(p.name for p in folder.iterdir()) == [f"{SOFTMAX}.html"]  # nothing of theirs
    graded = course / "autograded" / "h_script" / nc.ASSIGNMENT / f"{SOFTMAX}.ipynb"
    sentences = verdicts(graded)
    seen = hp.look(browser, (folder / f"{SOFTMAX}.html").as_uri(), screenshot=out / "grade.png")
    assert_runs_nothing(seen, sentences, "the grade command's feedback page")

    copy_ = tmp_path / "course"
    shutil.copytree(course, copy_)
    config = copy_ / "nbgrader_config.py"
    config.write_text(config.read_text().replace(repr(str(course)), repr(str(copy_))))
    planted = copy_ / "autograded" / "h_script" / nc.ASSIGNMENT / f"{SOFTMAX}.ipynb"
    graded_nb = nbformat.read(str(graded), 4)
    # GetGrades reads a grade id from the gradebook: no invented one for generate_feedback
    nbformat.write(hp.hostile_notebook(graded_nb, marked=False), str(planted))
    nc.nbgrader(copy_, "generate_feedback", nc.ASSIGNMENT, "--student", "h_script", "--force")
    page = copy_ / "feedback" / "h_script" / nc.ASSIGNMENT / f"{SOFTMAX}.html"
    seen = hp.look(browser, page.as_uri(), screenshot=out / "generate_feedback.png")
    assert_runs_nothing(seen, sentences, "nbgrader generate_feedback's page")

    nbformat.write(hp.hostile_notebook(graded_nb), str(planted))
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{copy_ / 'gradebook.db'}") as gb:
        sid = gb.find_submission_notebook(SOFTMAX, nc.ASSIGNMENT, "h_script").id
    with lab.formgrader_server(copy_, tmp_path / "server") as base:
        url = f"{base}/formgrader/submissions/{sid}/"
        seen = hp.look(browser, url, screenshot=out / "formgrader.png")
    assert_runs_nothing(seen, sentences, "the formgrader's view")


def gradebook_rows(course) -> dict:
    """Every field autograding writes, per student, notebook and cell, from the gradebook."""
    from nbgrader.api import Gradebook

    rows = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "mhsa") as gb:
        for student in gb.students:
            sub = gb.find_submission(nc.ASSIGNMENT, student.id)
            rows[student.id] = (sub.timestamp, sub.total_seconds_late, sub.score)
            for nb in sub.notebooks:
                rows[(student.id, nb.name)] = (nb.late_submission_penalty, nb.score)
                for g in nb.grades:
                    rows[(student.id, nb.name, g.name)] = (
                        g.auto_score,
                        g.manual_score,
                        g.needs_manual_grade,
                        g.score,
                    )
                for c in nb.comments:
                    rows[(student.id, nb.name, c.name)] = c.auto_comment
    return rows


class HourlyLatePenalty(LateSubmissionPlugin):
    """A course's own late rule: a point per started hour late; student "half" is forgiven.

    Its raw penalties fall on every side of nbgrader's limits: below a
    notebook's score (kept), above it (nbgrader lowers it to the score) and
    below zero (nbgrader raises it to 0).
    """

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        """The penalty before nbgrader's limits: hours late, rounded up; -1 for "half"."""
        if student_id == "half":
            return -1.0
        return float(math.ceil(total_seconds_late / 3600))


def test_the_grade_commands_gradebook_is_nbgrader_autogrades_field_by_field(tmp_path):
    """One late class graded twice, by stock ``nbgrader autograde`` and by the grade command.

    Real nbgrader on both sides, no mock, every field of the gradebook
    compared: the scores; the late penalties of a course's own plugin
    (``AssignLatePenalties.plugin_class``, which nbgrader and the Dask
    workers both import); and, after a grader overrides one cell and both
    grade again, the manual score kept and flagged.
    """
    from nbgrader.api import Gradebook

    plugin = f"{HourlyLatePenalty.__module__}.{HourlyLatePenalty.__qualname__}"
    late = (  # the plugin is this module's: nbgrader and the Dask workers import it
        f"import sys\nsys.path.insert(0, {str(nc.ROOT)!r})\n"
        f"c.AssignLatePenalties.plugin_class = {plugin!r}\n"
    )
    courses = [nc.make_course(tmp_path / name, late) for name in ("serial", "dask")]
    stamps = {
        "perfect": "2026-01-01 00:30:00",
        "partial": "2026-01-01 04:10:00",
        "half": "2026-01-02",
    }
    for course in courses:
        honest_class(course)
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "mhsa") as gb:
            gb.update_or_create_assignment(nc.ASSIGNMENT, duedate="2026-01-01 00:00:00 UTC")
        for student, stamp in stamps.items():
            (course / "submitted" / student / nc.ASSIGNMENT / "timestamp.txt").write_text(stamp)
        close(course / "submitted")  # private, as collect writes it
    nc.nbgrader(courses[0], "autograde", nc.ASSIGNMENT, "--force")
    out = nc.grade(courses[1], "--workers", "2").stdout
    assert "students: 4" in out and "failed: 0" in out
    serial, ours = (gradebook_rows(c) for c in courses)
    assert serial == ours
    assert serial[("partial", SOFTMAX, "softmax_rows_sum_to_one")][0] == 0
    assert serial[("perfect", SOFTMAX, "softmax_rows_sum_to_one")][0] > 0
    penalty = {k: v[0] for k, v in serial.items() if len(k) == 2}  # (student, notebook)
    score = {k: v[1] for k, v in serial.items() if len(k) == 2}
    assert all(penalty[("perfect", s)] == 1.0 < score[("perfect", s)] for s in SOME)  # kept
    assert penalty[("partial", "01_input")] == score[("partial", "01_input")] == 2.0  # 5 > 2
    assert penalty[("partial", SOFTMAX)] == score[("partial", SOFTMAX)] == 0.0  # 5 > 0
    assert all(penalty[("half", s)] == 0.0 for s in SOME[:2])  # -1 raised to 0
    assert penalty[("untouched", SOFTMAX)] is None  # on time: no penalty
    assert serial["partial"][1] > 0 and serial["untouched"][1] == 0  # seconds late

    for course in courses:  # a grader overrides one cell of the "half" student's
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "mhsa") as gb:
            cell = gb.find_grade("softmax_rows_sum_to_one", SOFTMAX, nc.ASSIGNMENT, "half")
            cell.manual_score = 1
            gb.db.commit()
    nc.nbgrader(courses[0], "autograde", nc.ASSIGNMENT, "--force")
    nc.grade(courses[1], "--workers", "2", "--force")
    serial, ours = (gradebook_rows(c) for c in courses)
    assert serial == ours
    assert serial[("half", SOFTMAX, "softmax_rows_sum_to_one")][1:3] == (1.0, True)


def test_a_second_grade_command_on_the_same_course_refuses_while_the_first_runs(tmp_path):
    import fcntl

    course = nc.make_course(tmp_path / "busy")
    with open(course / ".mhsa-grading.lock", "a+") as lock:  # as a running grade command holds it
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("pid 4242 on grader-1\n")
        lock.flush()
        busy = nc.grade(course, check=False)
    assert busy.returncode == 2, busy.stdout + busy.stderr
    assert "another grade command is grading this course (pid 4242 on grader-1)" in busy.stderr
    assert not (course / "autograded").exists()
    free = nc.grade(course, check=False)  # released: it goes on (and says what is missing)
    assert "another grade command" not in free.stderr
    assert "generate_assignment" in free.stdout + free.stderr


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = open(f"/proc/{entry}/stat").read()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_killed_then_resumed_loses_and_duplicates_nothing(tmp_path):
    """Killed while the second student (one worker, sorted order) is stuck in a loop.

    The first student's marker appears and the second one cannot finish
    before its endless loops have used up a call's and a notebook's cells'
    time budgets (5 s and 10 s, counted by the grader's clock, and
    nbgrader's own work after them), so the kill lands mid-class.
    """
    course = nc.make_course(tmp_path / "resume", STUCK_LIMIT)
    honest_class(course, stuck=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "autograders", "grade", nc.ASSIGNMENT, "--workers", "1"],
        cwd=course,
        env=nc.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    markers = lambda: sorted(course.glob("autograded/*/mhsa/.mhsa-graded"))  # noqa: E731
    deadline = time.monotonic() + 600
    while not markers() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    workers = children(proc.pid)
    assert workers, "the grade command has no worker processes"
    os.kill(proc.pid, signal.SIGKILL)  # the grade command alone: its workers must follow
    proc.wait()
    deadline = time.monotonic() + 120
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in workers), "workers outlived the grade command"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    done_first = markers()
    assert [m.parent.parent.name for m in done_first] == ["half"]
    stamps = {m: m.stat().st_mtime_ns for m in done_first}
    out = nc.grade(course, "--workers", "2").stdout
    assert f"already done: {len(done_first)}" in out
    assert len(markers()) == 4
    for m, t in stamps.items():
        assert m.stat().st_mtime_ns == t, f"{m.parent.parent.name} was graded again"
    assert nc.grades(course) == stuck_class_reference()
    again = nc.grade(course, "--workers", "2").stdout
    assert "graded now: 0" in again and "already done: 4" in again
