"""The learner's environments, built from a fresh copy of the repository as a learner builds them.

* the README's: its first command up to ``jupyter lab`` (a ``.venv`` in the
  copy, ``pip install -r requirements.txt``);
* Binder's: ``binder/requirements.txt``, then ``binder/postBuild``.

tests/conftest.py builds each once per test session (``readme_env``,
``binder_env``); tests/test_binder.py and tests/test_student_lab.py share them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: What a clone holds that the environments or the notebooks use.
TRACKED = [
    "binder",
    "jupyter-config",
    "mhsa_helpers",
    "autograders",
    "notebooks",
    "solutions",
    "pyproject.toml",
    "README.md",
    "requirements.txt",
    "nbgrader_config.py",
]


class Environment(NamedTuple):
    """A repository copy, the environment built in it, and the process environment to use it."""

    repo: Path
    venv: Path
    env: dict

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def fresh_copy(dest: Path) -> Path:
    """The tracked parts of the repository, copied to ``dest`` without build or cache files."""
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
    """{package: version} of the ``==`` pins in a requirements file."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[name.lower()] = version
    return out


def sh(cmd, cwd, env, timeout=900) -> str:
    """Run ``cmd``; fail with the end of its output unless it succeeds; return its output."""
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
    """This process's environment without Jupyter or virtualenv settings, and a home in ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV"))}
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), PIP_DISABLE_PIP_VERSION_CHECK="1"
    )
    return env


def readme_first_command() -> str:
    """The README's first command: make the environment, install, start JupyterLab."""
    return re.search(
        r"```bash\n(python3 -m venv .venv && .*requirements\.txt.*jupyter lab.*)\n",
        README.read_text(),
    ).group(1)


def readme_install_command() -> str:
    """The README's first command up to (not including) ``jupyter lab``."""
    install, start = readme_first_command().rsplit(" && ", 1)
    assert start.startswith(".venv/bin/jupyter lab"), start
    return install


def with_venv(env: dict, venv: Path) -> dict:
    """``env`` with ``venv``'s programs first on the PATH."""
    return dict(env, PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")


def build_readme_env(tmp: Path) -> Environment:
    """A fresh copy in ``tmp/repo`` installed with the README's own command."""
    repo = fresh_copy(tmp / "repo")
    env = isolated_env(tmp)
    sh(["bash", "-c", readme_install_command()], repo, env)
    venv = repo / ".venv"
    return Environment(repo, venv, with_venv(env, venv))


def build_binder_env(tmp: Path) -> Environment:
    """A fresh copy in ``tmp/repo`` and a fresh virtual environment built as binder/ says."""
    repo = fresh_copy(tmp / "repo")
    env = isolated_env(tmp)
    venv = tmp / "venv"
    sh([sys.executable, "-m", "venv", str(venv)], tmp, env)
    env = with_venv(env, venv)
    sh(["pip", "install", "-q", "-r", "binder/requirements.txt"], repo, env)
    sh(["bash", "binder/postBuild"], repo, env)
    return Environment(repo, venv, env)
