"""The notebooks' install cell: the course's package where it is missing (Colab), else nothing.

The quick tests run the cell with ``subprocess.run`` recording the command it is given.
The slow test is the real thing: a bare virtual environment with a kernel and the
package's dependencies, the course's wheel built from this checkout, and pip allowed no
index, only that wheel.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import nbformat
import pytest

from mhsa_helpers.exercises import NOTEBOOKS
from tests.support import nbgrader_course as nc

ROOT = Path(__file__).resolve().parents[1]
STEMS = [nb.stem for nb in NOTEBOOKS]
#: What Colab installs: the repository named by the README's Binder badge.
FROM_GITHUB = "mhsa-course @ git+https://github.com/mhsa-course/mhsa-course"


def _first_code_cell(path: Path):
    nb = nbformat.read(str(path), as_version=4)
    return next(c for c in nb.cells if c.cell_type == "code"), nb


def _install_source(stem: str = "07_softmax") -> str:
    return _first_code_cell(nc.STUDENT / f"{stem}.ipynb")[0].source


def _commands(source: str, monkeypatch) -> list:
    """The commands the cell runs (recorded, not run)."""
    ran = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: ran.append((cmd, kw)))
    exec(compile(source, "<install cell>", "exec"), {})
    return ran


@pytest.mark.parametrize("stem", STEMS)
def test_every_notebook_starts_its_code_with_the_install_cell(stem):
    """Student and instructor versions alike: the first code cell installs, locked, just
    before the setup cell, and the two versions' cells are the same."""
    for folder in (nc.STUDENT, nc.SOLUTIONS):
        cell, nb = _first_code_cell(folder / f"{stem}.ipynb")
        assert "import mhsa_helpers" in cell.source and '"pip", "install"' in cell.source, folder
        meta = cell.metadata["nbgrader"]
        assert meta["grade_id"] == "install" and meta["locked"] and not meta["grade"], meta
        codes = [c for c in nb.cells if c.cell_type == "code"]
        assert codes[1].metadata["nbgrader"]["grade_id"] == "setup", (folder, stem)
    assert _install_source(stem) == _first_code_cell(nc.SOLUTIONS / f"{stem}.ipynb")[0].source


def test_the_install_cell_does_nothing_where_the_package_is_there(monkeypatch):
    assert importlib.util.find_spec("mhsa_helpers") is not None
    assert _commands(_install_source(), monkeypatch) == []


def test_the_install_cell_installs_from_github_where_the_package_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "mhsa_helpers", None)  # import mhsa_helpers: ImportError
    monkeypatch.delenv("MHSA_COURSE_PACKAGE", raising=False)
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    ran = _commands(_install_source(), monkeypatch)
    assert ran == [([*pip, FROM_GITHUB], {"check": True})], ran
    wheel = "/wheels/mhsa_course-0.1.0-py3-none-any.whl"
    monkeypatch.setenv("MHSA_COURSE_PACKAGE", wheel)
    assert _commands(_install_source(), monkeypatch) == [([*pip, wheel], {"check": True})]


# --------------------------------------------------------------------------
# the real thing, offline
# --------------------------------------------------------------------------
RUN_FIRST_CELL = textwrap.dedent(
    """
    import sys
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(sys.argv[1], as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    probe = nbformat.v4.new_code_cell(
        "import mhsa_helpers, importlib.metadata\\n"
        "print('imported', mhsa_helpers.__name__, importlib.metadata.version('mhsa-course'))"
    )
    nb.cells = [first, probe]
    NotebookClient(nb, timeout=600, kernel_name="python3").execute()
    for cell in nb.cells:
        for out in cell.outputs:
            print(out.get("output_type"), out.get("name"), out.get("text") or out.get("evalue"))
    """
)


def _sh(cmd, env, cwd=None) -> str:
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_install_cell_installs_the_package_in_a_bare_environment(tmp_path):
    """Colab's situation: a Python with a kernel and the course's dependencies, without the
    course's package. Its first cell installs the wheel built here, with pip refused every
    index (``PIP_NO_INDEX``: nothing comes from the network); then ``import mhsa_helpers``
    works in the same kernel."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "VIRTUAL_ENV", "PYTHONPATH", "JUPYTER"))
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheels = tmp_path / "wheels"
    _sh(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), "."], env, ROOT
    )
    (wheel,) = wheels.glob("mhsa_course-*.whl")

    venv = tmp_path / "bare"
    _sh([sys.executable, "-m", "venv", str(venv)], env)
    python = venv / "bin" / "python"
    # the kernel and the runner, and the package's dependencies, as Colab has them
    deps = _project()["dependencies"]
    _sh([str(python), "-m", "pip", "install", "-q", "ipykernel", "nbclient", *deps], env)
    gone = subprocess.run(
        [str(python), "-c", "import mhsa_helpers"], env=env, cwd=tmp_path, capture_output=True
    )
    assert gone.returncode != 0, "the bare environment already has the course's package"

    offline = dict(
        env,
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheels),
        MHSA_COURSE_PACKAGE=f"mhsa-course @ {wheel.as_uri()}",
        PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}",
    )
    script = tmp_path / "run_first_cell.py"
    script.write_text(RUN_FIRST_CELL)
    out = _sh([str(python), str(script), str(nc.STUDENT / "07_softmax.ipynb")], offline, tmp_path)
    version = _project()["version"]
    assert f"imported mhsa_helpers {version}" in out, out
    assert "error" not in out.lower(), out
    # and run again, now that it is there: nothing to do, nothing printed
    again = subprocess.run(
        [str(python), str(script), str(nc.STUDENT / "07_softmax.ipynb")],
        env=offline,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    shown = again.stdout.strip().splitlines()  # the cells' outputs (stderr: the kernel's log)
    assert shown == [f"stream stdout imported mhsa_helpers {version}"], (shown, again.stderr)


def _project() -> dict:
    """pyproject.toml's ``[project]``: the package's version and dependencies."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
