"""Day two: a notebook reopened the next day shows its widgets' last pictures, not an error.

A learner runs a widget, saves, closes JupyterLab; the next day JupyterLab
starts again (same home, a new kernel) and reopens the notebook without running
anything. The course's settings (``jupyter-config/.../overrides.d/mhsa-course.json``)
turn on ``@jupyter-widgets/jupyterlab-manager:plugin`` ``saveState``: every save
writes the widgets' state into the notebook's metadata, and the widget manager
rebuilds the models from it when the notebook opens (``restoreWidgets`` →
``_loadFromNotebook`` in jupyterlab_widgets' ``manager.ts``). Without it the
output's widget view finds no model and JupyterLab writes "Error displaying
widget: model not found" (``WidgetRenderer.renderModel``, ``renderer.ts``).

Which of an output's mime types is shown is decided before any model is looked
up (``RenderMimeRegistry.preferredMimeType``: the widget view's renderer ranks
first, and it is "unsafe", so it is chosen for trusted outputs only). A widget's
own ``text/plain`` line is therefore shown only where the output is not trusted
(a copy changed outside the JupyterLab that signed it: a ``git pull``, an upload
to a fresh Binder): this test's widget makes that line "run this cell again".

Measured with a tiny anywidget (its ES module a string in ``_esm``, saved with
its state). Screenshots go to ``test-output/day-two/``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest

from tests.support import lab_harness as lab

OUT = lab.ROOT / "test-output" / "day-two"
OVERRIDES = "share/jupyter/lab/settings/overrides.d/mhsa-course.json"
WIDGETS = "@jupyter-widgets/jupyterlab-manager:plugin"
STATE = "application/vnd.jupyter.widget-state+json"
LINE = "Run this cell again to see the widget."
NOTEBOOK = "day.ipynb"
COPY = "day_copy.ipynb"  # the same notebook changed outside JupyterLab: not trusted

ESM = """
function render({ model, el }) {
  const p = document.createElement("p");
  p.className = "day-two-picture";
  const draw = () => { p.textContent = `tally: ${model.get("count")}`; };
  draw();
  model.on("change:count", draw);
  el.appendChild(p);
}
export default { render };
"""
CELLS = (
    f'''import anywidget
import traitlets


class Tally(anywidget.AnyWidget):
    """A tiny widget whose picture is its count."""

    _esm = {ESM!r}
    count = traitlets.Int(0).tag(sync=True)

    def _repr_mimebundle_(self, **kwargs):
        data, metadata = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = {LINE!r}
        return data, metadata


tally = Tally(count=41)
tally''',
    "tally.count = 42  # the last picture is the one saved",
)

#: What the first output of the notebook in front shows, once it is final: its widget's
#: picture, the error, or another mime type's text ("Loading widget..." is not final).
SHOWN = """(current) => {
    const out = document.querySelector(current + ' .jp-OutputArea-output');
    if (!out) return null;
    const picture = out.querySelector('.day-two-picture');
    if (picture) return {what: 'picture', text: picture.textContent};
    const text = out.innerText.trim();
    if (text.startsWith('Error displaying widget')) return {what: 'error', text};
    const mime = out.getAttribute('data-mime-type');
    if (mime && mime !== 'application/vnd.jupyter.widget-view+json') return {what: mime, text};
    return null;
}"""


def test_course_settings_save_widget_state():
    """The course's JupyterLab settings save widget state, beside their other keys."""
    overrides = json.loads((lab.ROOT / "jupyter-config" / OVERRIDES).read_text())
    assert overrides[WIDGETS] == {"saveState": True}
    assert overrides["@jupyterlab/notebook-extension:tracker"]["autoStartDefaultKernel"] is True
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


def shown(page) -> dict:
    """What the first output of the notebook in front shows, waited for until it is final."""
    handle = page.wait_for_function(SHOWN, arg=lab.CURRENT, timeout=60_000)
    return handle.json_value()


def save(page) -> None:
    """Save the notebook in front, as Ctrl+S does; wait until it is saved."""
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")


def saved_anywidgets(path: Path) -> list[dict]:
    """The saved states of the notebook's anywidgets (in its metadata's widget state)."""
    saved = json.loads(path.read_text())["metadata"].get("widgets", {})
    models = saved.get(STATE, {}).get("state", {})
    return [m["state"] for m in models.values() if m["model_name"] == "AnyModel"]


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    """Day one, then day two, in JupyterLab started from this environment; what each showed.

    Day one runs the notebook and saves it. Day two is a new JupyterLab (same home, so
    the same notary: the notebook it saved is trusted) and a new kernel: it opens the
    notebook without running it, then a changed copy, then saves the notebook unrun.
    """
    pytest.importorskip("anywidget", reason="the course's widgets move to anywidget 0.11")
    installed = Path(sys.prefix) / OVERRIDES
    assert installed.exists() and json.loads(installed.read_text()) == json.loads(
        (lab.ROOT / "jupyter-config" / OVERRIDES).read_text()
    ), f"{installed} is not the course's: install the course again (pip install -e .)"
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("day-two")
    root = tmp / "root"
    root.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(root / NOTEBOOK))
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    seen = {}
    with lab.chromium_browser() as browser:
        with lab.lab_in_environment(Path(sys.executable), root, env, tmp) as base:
            page = browser.new_page(viewport={"width": 1200, "height": 700})
            lab.open_and_run_all(page, base, NOTEBOOK)
            page.wait_for_selector(f"{lab.CURRENT} .day-two-picture:has-text('tally: 42')")
            seen["day one"] = shown(page)
            save(page)
            page.screenshot(path=str(OUT / "day-one.png"))
            seen["setting"] = json.loads(lab.lab_fetch(page, f"/lab/api/settings/{WIDGETS}")[1])
            page.close()
        seen["saved on day one"] = saved_anywidgets(root / NOTEBOOK)
        copy = nbformat.read(str(root / NOTEBOOK), as_version=4)
        copy.cells.insert(0, nbformat.v4.new_markdown_cell("Changed outside JupyterLab."))
        nbformat.write(copy, str(root / COPY))
        with lab.lab_in_environment(Path(sys.executable), root, env, tmp) as base:
            page = browser.new_page(viewport={"width": 1200, "height": 700})
            lab.open_notebook(page, base, NOTEBOOK)
            seen["day two"] = shown(page)
            page.screenshot(path=str(OUT / "day-two.png"))
            lab.open_notebook(page, base, COPY)
            seen["copy"] = shown(page)
            page.screenshot(path=str(OUT / "day-two-changed-copy.png"))
            lab.open_notebook(page, base, NOTEBOOK)
            save(page)
            page.close()
        seen["saved on day two"] = saved_anywidgets(root / NOTEBOOK)
    return seen


@pytest.mark.slow  # JupyterLab in Chromium, twice
def test_day_two_shows_the_last_picture(days):
    assert days["day one"] == {"what": "picture", "text": "tally: 42"}
    assert days["day two"] == {"what": "picture", "text": "tally: 42"}, days["day two"]
    (tally,) = days["saved on day one"]
    assert tally["count"] == 42 and tally["_esm"] == ESM  # the module travels with the state
    setting = days["setting"]
    assert setting["schema"]["properties"]["saveState"]["default"] is True  # the course's
    assert setting["raw"] in ("", "{}")  # no user setting involved


@pytest.mark.slow  # JupyterLab in Chromium, twice
def test_a_changed_copy_shows_the_line(days):
    """Not trusted, the output's widget view is not chosen: its text/plain line is shown."""
    assert days["copy"] == {"what": "text/plain", "text": LINE}, days["copy"]


@pytest.mark.slow  # JupyterLab in Chromium, twice
def test_a_save_on_day_two_keeps_the_picture(days):
    """JupyterLab saves only live widgets (ipywidgets#3888): the course's pre-save hook
    (mhsa_helpers/lab_state.py) keeps the state the notebook was opened with."""
    assert days["saved on day two"] == days["saved on day one"], "day two's save dropped it"
