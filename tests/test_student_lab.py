"""A learner's JupyterLab in Chromium: nbgrader's student side only, and Validate works.

In the environment the README's first command builds (once per session,
from a fresh copy, tests/conftest.py), JupyterLab is started from the
repository copy, as a learner starts it, and driven through Playwright with
Debian's Chromium (Binder's environment gives JupyterLab the same packages and
the same Jupyter files, tests/test_binder.py, so this holds for it too):

* the Nbgrader menu has the Assignment List and nothing of the instructor's;
  the Plugin Manager shows the instructor's plugins off and locked (and the
  server refuses to turn them on); the instructor's server extensions answer
  404; no news pop-up;
* the notebook toolbar's Validate, on an untouched notebook, reports the
  failing tests (no traceback, no missing grading kernel) and, on a finished
  one, success.

And ``python -m autograders instructor-ui`` gives the instructor side back.
Screenshots go to test-output/student-lab/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from autograders.lab import INSTRUCTOR_PLUGINS
from tests.support import lab_harness as lab
from tests.support import nbgrader_course as nc
from tests.support.environments import README, sh

pytestmark = pytest.mark.slow  # fresh environments, JupyterLab in Chromium

OUT = lab.ROOT / "test-output" / "student-lab"
STEM = "07_softmax"
UNTOUCHED = f"notebooks/mhsa/{STEM}.ipynb"
FINISHED = f"finished/{STEM}.ipynb"  # the learner's notebook with every answer written
STUDENT_PLUGINS = ("@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:validate-assignment")
INSTRUCTOR_MENU = ("Formgrader", "Create assignment", "Course List")
NOTIFICATION = "/lab/api/settings/@jupyterlab/apputils-extension:notification"


@pytest.fixture(scope="module")
def browser():
    if not Path(lab.CHROMIUM).exists():
        pytest.fail(f"{lab.CHROMIUM} is missing: .ci/run installs Debian's chromium")
    OUT.mkdir(parents=True, exist_ok=True)
    with lab.chromium_browser() as b:
        yield b


@pytest.fixture
def page(browser):
    p = browser.new_page(viewport={"width": 1600, "height": 1000})
    yield p
    p.close()


@pytest.fixture(scope="module")
def student_lab(readme_env, tmp_path_factory):
    """(which, base URL) of JupyterLab started from the README's environment."""
    which, environment = "readme", readme_env
    finished = environment.repo / FINISHED
    finished.parent.mkdir(exist_ok=True)
    nbformat.write(nc.student_notebook(STEM, "solution"), str(finished))
    tmp = tmp_path_factory.mktemp(f"lab-{which}")
    with lab.lab_in_environment(environment.python, environment.repo, environment.env, tmp) as base:
        yield which, base


def page_config(page) -> dict:
    """The page configuration JupyterLab gave this page."""
    return json.loads(page.locator("#jupyter-config-data").text_content())


def assert_no_news(page) -> None:
    """No news question or update notice: not configured, not shown."""
    status, text = lab.lab_fetch(page, NOTIFICATION)
    assert status == 200, text
    props = json.loads(text)["schema"]["properties"]
    assert props["fetchNews"]["default"] == "false"  # 'none' would ask the learner
    assert props["checkForUpdates"]["default"] is False
    assert not [t for t in lab.toasts(page) if "news" in t.lower()], lab.toasts(page)
    assert lab.notification_count(page) == 0


def record_validate(which: str, what: str, seconds: float) -> None:
    with open(OUT / "validate-seconds.txt", "a") as f:
        f.write(f"{which} {what}: click to result dialog {seconds:.1f} s\n")
    print(f"\nValidate ({which}, {what}): {seconds:.1f} s")


def test_nbgrader_student_side_only(student_lab, page):
    which, base = student_lab
    lab.open_lab(page, f"{base}/lab")

    menu = lab.menu_items(page, "Nbgrader", screenshot=OUT / f"{which}_nbgrader_menu.png")
    assert menu == ["Assignment List"]
    commands = page.evaluate(
        "() => window.jupyterapp.commands.listCommands().filter(c => c.startsWith('nbgrader:'))"
    )
    assert commands == ["nbgrader:open-assignment-list"]

    config = page_config(page)
    for plugin in INSTRUCTOR_PLUGINS:
        assert plugin in config["disabledExtensions"], plugin
    for plugin in STUDENT_PLUGINS:
        assert plugin not in config["disabledExtensions"], plugin

    rows = lab.plugin_manager_rows(page, "nbgrader")
    page.screenshot(path=str(OUT / f"{which}_plugin_manager.png"))
    for plugin in INSTRUCTOR_PLUGINS:
        assert rows[plugin] == {"enabled": False, "toggleable": False, "locked": True}, plugin
    for plugin in STUDENT_PLUGINS:
        assert rows[plugin] == {"enabled": True, "toggleable": True, "locked": False}, plugin
    # what the Plugin Manager would ask the server: refused, the plugins stay off
    for plugin in INSTRUCTOR_PLUGINS:
        status, text = lab.lab_fetch(
            page, "/lab/api/plugins", "POST", {"cmd": "enable", "plugin_name": plugin}
        )
        assert status == 500 and "locked" in text, (plugin, status, text)
    status, text = lab.lab_fetch(page, "/lab/api/plugins")
    assert set(INSTRUCTOR_PLUGINS) <= set(json.loads(text)["lockRules"])

    for path in ("/formgrader", "/formgraders"):  # the formgrader and course list servers
        assert lab.lab_fetch(page, path)[0] == 404, path
    assert_no_news(page)


def test_validate_untouched_notebook_reports_the_failing_tests(student_lab, page):
    which, base = student_lab
    panel = lab.open_notebook(page, base, UNTOUCHED)
    text, seconds = lab.click_validate(page, panel)
    page.screenshot(path=str(OUT / f"{which}_validate_untouched.png"))
    record_validate(which, "untouched", seconds)
    assert "Validation Results" in text, text
    assert "The following cell failed" in text, text
    assert 'checks.check("softmax", softmax)' in text, text  # its test, worth 0 for now
    for bad in ("NoSuchKernel", "Traceback", "There was an error"):
        assert bad not in text, text
    lab.close_dialog(page)
    assert_no_news(page)


def test_validate_finished_notebook_passes(student_lab, page):
    which, base = student_lab
    panel = lab.open_notebook(page, base, FINISHED)
    text, seconds = lab.click_validate(page, panel)
    page.screenshot(path=str(OUT / f"{which}_validate_finished.png"))
    record_validate(which, "finished", seconds)
    assert "Success! Your notebook passes all the tests." in text, text
    for bad in ("failed", "NoSuchKernel", "Traceback", "There was an error"):
        assert bad not in text, text
    lab.close_dialog(page)


def see_instructor_side(page, base: str) -> None:
    """The instructor's menu items, plugins on and unlocked, the formgrader serving."""
    lab.open_lab(page, f"{base}/lab")
    items = lab.menu_items(page, "Nbgrader", screenshot=OUT / "readme_instructor_nbgrader_menu.png")
    assert "Assignment List" in items
    for item in INSTRUCTOR_MENU:
        assert item in items, items
    rows = lab.plugin_manager_rows(page, "nbgrader")
    page.screenshot(path=str(OUT / "readme_instructor_plugin_manager.png"))
    for plugin in (*INSTRUCTOR_PLUGINS, *STUDENT_PLUGINS):
        assert rows[plugin] == {"enabled": True, "toggleable": True, "locked": False}, plugin
    assert lab.lab_fetch(page, "/formgrader")[0] == 200
    assert lab.lab_fetch(page, "/formgraders")[0] != 404
    page.evaluate("() => window.jupyterapp.commands.execute('nbgrader:open-formgrader')")
    frame = page.frame_locator("iframe").first
    frame.get_by_text("Manage Assignments").first.wait_for(state="visible", timeout=60_000)
    page.screenshot(path=str(OUT / "readme_instructor_formgrader.png"))


def test_instructor_ui_gives_the_instructor_side_back(readme_env, browser, tmp_path):
    """The README's one command, in the README's environment; ``student-ui`` takes it back."""
    repo, _, env = readme_env
    python = str(readme_env.python)
    command = README.read_text().split("<!-- instructor-ui -->", 1)[1]
    command = re.search(r"```bash\n(.*?)\n```", command, re.S).group(1)
    assert command == ".venv/bin/python -m autograders instructor-ui"
    try:
        out = sh(["bash", "-c", command], repo, env)
        assert "restart JupyterLab" in out
        with lab.lab_in_environment(readme_env.python, repo, env, tmp_path / "lab") as base:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            try:
                see_instructor_side(page, base)
            finally:
                page.close()
    finally:
        sh([python, "-m", "autograders", "student-ui"], repo, env)
    labs = sh(["jupyter", "labextension", "list"], repo, env)
    for plugin in INSTRUCTOR_PLUGINS:
        assert plugin in labs.split("Disabled extensions:")[-1], plugin
