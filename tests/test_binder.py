"""The launch paths: Binder's environment and the README's first command, on fresh copies."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.support.environments import ROOT, fresh_copy, pins, readme_first_command, sh
from tests.support.lab_harness import free_port, stop

pytestmark = pytest.mark.slow  # fresh environments, repo2docker, JupyterLab

BADGE = re.compile(r"https://mybinder\.org/v2/gh/[\w.-]+/[\w.-]+/HEAD\?urlpath=lab/tree/(\S+?)\)")
NBGRADER_LAB = "@jupyter/nbgrader"
INSTRUCTOR_PLUGINS = ("formgrader", "create-assignment", "course-list")
STUDENT_PLUGINS = ("assignment-list", "validate-assignment")


def test_binder_pins_match_requirements():
    assert pins(ROOT / "binder" / "requirements.txt") == pins(ROOT / "requirements.txt")
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    post = (ROOT / "binder" / "postBuild").read_text()
    assert "set -e" in post and os.access(ROOT / "binder" / "postBuild", os.X_OK)


def test_badge_opens_lab_on_the_start_here_notebook():
    m = BADGE.search((ROOT / "README.md").read_text())
    assert m, "no Binder badge with urlpath=lab/tree/... in the README"
    assert (ROOT / m.group(1)).name == "00_start_here.ipynb"
    assert (ROOT / m.group(1)).exists()


def test_repo2docker_dockerfile_uses_our_files(tmp_path):
    repo = fresh_copy(tmp_path / "repo")
    out = sh(
        [sys.executable, "-m", "repo2docker", "--no-build", "--no-run", "--debug", str(repo)],
        tmp_path,
        dict(os.environ),
    )
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in out
    assert "./binder/postBuild" in out
    assert "python=3.11" in out


@pytest.mark.parametrize("which", ["readme", "binder"])
def test_student_side_only(which, request):
    """nbgrader's student side in both environments: instructor plugins disabled and locked."""
    repo, venv, env = request.getfixturevalue(f"{which}_env")
    labs = re.sub(r"\x1b\[[0-9;]*m", "", sh(["jupyter", "labextension", "list"], repo, env))
    disabled = labs.split("Disabled extensions:")[-1] if "Disabled extensions:" in labs else ""
    nbgrader = next(line for line in labs.splitlines() if f"{NBGRADER_LAB} v" in line)
    locked = nbgrader.split("(plugins:")[-1] if "locked)" in nbgrader else ""
    for plugin in INSTRUCTOR_PLUGINS:
        assert f"{NBGRADER_LAB}:{plugin}" in disabled, plugin
        assert f"{NBGRADER_LAB}:{plugin}" in locked, plugin
    for plugin in STUDENT_PLUGINS:
        assert f"{NBGRADER_LAB}:{plugin}" not in disabled, plugin
        assert f"{NBGRADER_LAB}:{plugin}" not in locked, plugin
    assert re.search(r"@jupyter-widgets/jupyterlab-manager\S* v[\d.]+ \S*enabled", labs)
    servers = re.sub(
        r"\x1b\[[0-9;]*m", "", sh(["jupyter", "server", "extension", "list"], repo, env)
    )
    assert re.search(r"nbgrader\.server_extensions\.formgrader\s+disabled", servers)
    assert re.search(r"nbgrader\.server_extensions\.course_list\s+disabled", servers)
    assert re.search(r"nbgrader\.server_extensions\.validate_assignment\s+enabled", servers)
    assert re.search(r"nbgrader\.server_extensions\.assignment_list\s+enabled", servers)
    settings = venv / "share/jupyter/lab/settings/overrides.d/mhsa-course.json"
    overrides = json.loads(settings.read_text())
    assert overrides["@jupyterlab/notebook-extension:tracker"]["autoStartDefaultKernel"]
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    assert overrides["@jupyterlab/apputils-extension:notification"]["checkForUpdates"] is False
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"]["saveState"] is True


def jupyterlab_side(environment) -> dict:
    """What JupyterLab started from ``environment`` loads: its packages and Jupyter's files.

    ``{"packages": pip's list (the course's own line without its path), "files":
    {path: bytes} of the configuration, settings and lab extensions under etc/jupyter
    and share/jupyter}``.
    """
    repo, venv, env = environment
    frozen = sh(["pip", "list", "--format=freeze", "--exclude-editable"], repo, env).split()
    editable = sh(["pip", "list", "--editable", "--format=freeze"], repo, env).split()
    files = {}
    for top in ("etc/jupyter", "share/jupyter/lab", "share/jupyter/labextensions"):
        for path in sorted((venv / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                files[str(path.relative_to(venv))] = path.read_bytes()
    return {"packages": sorted(frozen), "editable": sorted(editable), "files": files}


def test_binder_gives_jupyterlab_what_the_readme_gives_it(readme_env, binder_env):
    """Check that both launch paths install the same packages and the same Jupyter files.

    JupyterLab and its kernels then behave alike in both, so what tests/test_student_lab.py
    proves in a browser on the README's environment holds for Binder's.
    """
    readme, binder = jupyterlab_side(readme_env), jupyterlab_side(binder_env)
    assert readme["packages"] == binder["packages"]
    assert readme["editable"] == binder["editable"] and readme["editable"], readme["editable"]
    assert readme["files"].keys() == binder["files"].keys()
    differ = [p for p in readme["files"] if readme["files"][p] != binder["files"][p]]
    assert not differ, differ
    assert "etc/jupyter/labconfig/page_config.d/mhsa-course.json" in readme["files"]


def test_binder_env_runs_the_start_here_notebook(binder_env, tmp_path):
    repo, _, env = binder_env
    out = tmp_path / "executed.ipynb"
    sh(
        [
            "jupyter",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--output",
            str(out),
            "notebooks/mhsa/00_start_here.ipynb",
        ],
        repo,
        env,
        timeout=600,
    )
    nb = json.loads(out.read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    assert "exercises pass" in text


def test_readme_first_command_starts_jupyterlab(readme_env, tmp_path):
    """The README's first command, exactly as written, on the fresh copy it installed.

    ``readme_env`` ran the command up to ``jupyter lab``; here all of it runs again
    (pip finds everything installed), and JupyterLab must answer.
    """
    first = readme_first_command()
    repo, env = readme_env.repo, {k: v for k, v in readme_env.env.items() if k != "PATH"}
    env["PATH"] = os.environ["PATH"]  # the learner's shell: no environment active
    port = free_port()
    conf = tmp_path / "jupyter-config"
    conf.mkdir()
    # The test's own settings, not the command's: a free port, no browser, no
    # token, and (CI runs as root) allow_root.
    (conf / "jupyter_server_config.py").write_text(
        f"c.ServerApp.port = {port}\nc.ServerApp.port_retries = 0\n"
        "c.ServerApp.open_browser = False\nc.IdentityProvider.token = ''\n"
        "c.ServerApp.allow_root = True\nc.ServerApp.ip = '127.0.0.1'\n"
    )
    env["JUPYTER_CONFIG_DIR"] = str(conf)
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(
        ["bash", "-c", first],
        cwd=repo,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 900
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=5) as r:
                    status = json.loads(r.read())
                break
            except OSError:
                time.sleep(1)
        assert status is not None, (tmp_path / "lab.log").read_text()[-3000:]
        assert "started" in status
    finally:
        stop(proc)
        log.close()
