"""A shipped notebook opens in JupyterLab unmodified: no dirty mark before the learner acts.

JupyterLab writes the kernel's ``language_info`` into the notebook's metadata as
soon as the kernel answers; where the shipped metadata differs from it in any
key, the notebook shows as modified (the tab's dot, ``jp-mod-dirty``) the moment
it opens. A copy with the old, partial ``language_info`` is the control: it
must show as modified, or this test could not tell.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from tests.support import lab_harness as lab

pytestmark = pytest.mark.slow  # JupyterLab in Chromium

SHIPPED = ["09_multi_head.ipynb", "17_backward.ipynb"]
CONTROL = "control_partial_language_info.ipynb"


@pytest.fixture(scope="module")
def lab_page(tmp_path_factory):
    """JupyterLab on a copy of the student notebooks, and a page in Chromium."""
    if not Path(lab.CHROMIUM).exists():
        pytest.fail(f"{lab.CHROMIUM} is missing: .ci/run installs Debian's chromium")
    root = tmp_path_factory.mktemp("notebooks") / "mhsa"
    shutil.copytree(lab.ROOT / "notebooks" / "mhsa", root)
    nb = nbformat.read(str(root / SHIPPED[0]), as_version=4)
    nb.metadata["language_info"] = {"name": "python"}  # what course/build.py used to write
    nbformat.write(nb, str(root / CONTROL))
    with (
        lab.jupyterlab(tmp_path_factory.mktemp("lab"), root) as base,
        lab.chromium_page(viewport=lab.LAPTOP) as page,
    ):
        yield page, base


def dirty_after_the_kernel_answers(page, base: str, path: str) -> dict:
    """Open ``path``; once the kernel has answered and is idle, is the notebook modified?"""
    lab.open_notebook(page, base, path)
    # JupyterLab copies the kernel's language_info on kernel.info; awaiting the same
    # promise resumes after its handler has run, so the check sees its effect.
    page.evaluate("""async () => {
        const w = window.jupyterapp.shell.currentWidget;
        await w.sessionContext.ready;
        await w.sessionContext.session.kernel.info;
    }""")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext"
        ".session.kernel.status === 'idle'",
        timeout=60_000,
    )
    return page.evaluate("""() => {
        const w = window.jupyterapp.shell.currentWidget;
        const tab = document.querySelector(`.lm-TabBar-tab[data-id='${w.id}']`);
        return {
            model: w.model.dirty,
            tab: tab !== null && tab.classList.contains('jp-mod-dirty'),
            tab_found: tab !== null,
            language_info: w.model.getMetadata('language_info'),
        };
    }""")


@pytest.mark.parametrize("path", SHIPPED)
def test_a_shipped_notebook_opens_unmodified(lab_page, path):
    page, base = lab_page
    state = dirty_after_the_kernel_answers(page, base, path)
    assert state["tab_found"], state
    assert not state["model"] and not state["tab"], state
    shipped = nbformat.read(str(lab.ROOT / "notebooks" / "mhsa" / path), as_version=4)
    assert state["language_info"] == shipped.metadata["language_info"]


def test_the_control_with_a_partial_language_info_opens_modified(lab_page):
    page, base = lab_page
    state = dirty_after_the_kernel_answers(page, base, CONTROL)
    assert state["tab_found"], state
    assert state["model"] and state["tab"], state
