"""The launch paths: Binder's environment and the README's first command, on fresh copies."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.lab_harness import free_port, stop

pytestmark = pytest.mark.slow  # fresh environments, repo2docker, JupyterLab

ROOT = Path(__file__).resolve().parents[1]
TRACKED = [
    "binder",
    "mhsa_helpers",
    "autograders",
    "notebooks",
    "solutions",
    "pyproject.toml",
    "README.md",
    "requirements.txt",
    "nbgrader_config.py",
]
BADGE = re.compile(r"https://mybinder\.org/v2/gh/[\w.-]+/[\w.-]+/HEAD\?urlpath=lab/tree/(\S+?)\)")


def fresh_copy(dest: Path) -> Path:
    for name in TRACKED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(
                src,
                dest / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".ipynb_checkpoints"),
            )
        else:
            shutil.copy(src, dest / name)
    return dest


def pins(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[name.lower()] = version
    return out


def sh(cmd, cwd, env, timeout=900):
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        shell=isinstance(cmd, str),
    )
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def isolated_env(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV"))}
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), PIP_DISABLE_PIP_VERSION_CHECK="1"
    )
    return env


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


@pytest.fixture(scope="module")
def binder_env(tmp_path_factory):
    """A fresh virtual environment built exactly as binder/ says."""
    tmp = tmp_path_factory.mktemp("binder")
    repo = fresh_copy(tmp / "repo")
    env = isolated_env(tmp)
    venv = tmp / "venv"
    sh([sys.executable, "-m", "venv", str(venv)], tmp, env)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    sh(["pip", "install", "-q", "-r", "binder/requirements.txt"], repo, env)
    sh(["bash", "binder/postBuild"], repo, env)
    return repo, venv, env


def test_binder_student_side_only(binder_env):
    repo, venv, env = binder_env
    labs = sh(["jupyter", "labextension", "list"], repo, env)
    disabled = labs.split("Disabled extensions:")[-1] if "Disabled extensions:" in labs else ""
    for plugin in ("formgrader", "create-assignment", "course-list"):
        assert f"@jupyter/nbgrader:{plugin}" in disabled, plugin
    for plugin in ("assignment-list", "validate-assignment"):
        assert f"@jupyter/nbgrader:{plugin}" not in disabled, plugin
    assert re.search(r"@jupyter-widgets/jupyterlab-manager\S* v[\d.]+ \S*enabled", labs)
    servers = re.sub(
        r"\x1b\[[0-9;]*m", "", sh(["jupyter", "server", "extension", "list"], repo, env)
    )
    assert re.search(r"nbgrader\.server_extensions\.formgrader\s+disabled", servers)
    assert re.search(r"nbgrader\.server_extensions\.validate_assignment\s+enabled", servers)
    assert re.search(r"nbgrader\.server_extensions\.assignment_list\s+enabled", servers)
    overrides = json.loads((venv / "share/jupyter/lab/settings/overrides.json").read_text())
    assert overrides["@jupyterlab/notebook-extension:tracker"]["autoStartDefaultKernel"]
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


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


def test_readme_first_command_starts_jupyterlab(tmp_path):
    readme = (ROOT / "README.md").read_text()
    first = re.search(
        r"```bash\n(python3 -m venv .venv && .*requirements\.txt.*jupyter lab.*)\n", readme
    ).group(1)
    repo = fresh_copy(tmp_path / "repo")
    env = isolated_env(tmp_path)
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
