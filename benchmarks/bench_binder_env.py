"""Size and install time of the environment Binder builds, and what a learner does not need.

Builds a fresh virtual environment exactly as binder/ says (requirements,
then postBuild), then prints the install time, the environment's size and
its largest packages, marking those a learner working through the notebooks
never uses. Run: python benchmarks/bench_binder_env.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Installed for nbgrader's instructor side or for development, never used by a learner.
NOT_FOR_LEARNERS = {
    "sqlalchemy": "nbgrader gradebook (instructor side)",
    "alembic": "nbgrader gradebook migrations (instructor side)",
    "mako": "alembic templates (instructor side)",
    "rapidfuzz": "nbgrader's formgrader search (instructor side)",
    "debugpy": "the JupyterLab debugger",
    "notebook": "the classic Notebook 7 front end (JupyterLab is used)",
    "jupyter_lsp": "language-server integration",
    "jupyter_server_terminals": "terminals",
    "terminado": "terminals",
    "fonttools": "font subsetting for vector output (PNG figures only)",
    "babel": "translations",
}


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        repo = tmp / "repo"
        for name in (
            "binder",
            "jupyter-config",
            "mhsa_helpers",
            "autograders",
            "pyproject.toml",
            "README.md",
        ):
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, repo / name)
        venv = tmp / "venv"
        env = dict(
            os.environ,
            PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
            HOME=str(tmp),
            PIP_DISABLE_PIP_VERSION_CHECK="1",
        )
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            ["pip", "install", "-q", "--no-cache-dir", "-r", "binder/requirements.txt"],
            cwd=repo,
            env=env,
            check=True,
        )
        t_pip = time.perf_counter() - t0
        subprocess.run(
            ["bash", "binder/postBuild"], cwd=repo, env=env, check=True, capture_output=True
        )
        t_all = time.perf_counter() - t0
        site = next((venv / "lib").glob("python*/site-packages"))
        sizes = {}
        for p in site.iterdir():
            if p.suffix in (".dist-info", ".pth") or p.name.startswith(("_", ".")):
                continue
            sizes[p.name.lower()] = du(p) if p.is_dir() else p.stat().st_size
        total = du(venv)
        share = du(venv / "share")
    print(f"install time (no pip cache): requirements {t_pip:.0f} s, with postBuild {t_all:.0f} s")
    print(
        f"environment size: {total / 2**20:.0f} MiB (of which share/jupyter "
        f"{share / 2**20:.0f} MiB)"
    )
    print(f"{'package':<28} {'MiB':>6}  learner needs it?")
    unneeded = 0
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:25]:
        why = NOT_FOR_LEARNERS.get(name)
        unneeded += size if why else 0
        print(f"{name:<28} {size / 2**20:>6.1f}  {'no: ' + why if why else 'yes'}")
    print(f"not needed by a learner among these: {unneeded / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
