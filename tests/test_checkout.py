"""An environment installed from one checkout, used in another: one sentence, and a stop.

The decision (:mod:`mhsa_helpers.checkout`) on folders made here; then, slow, two real
copies of this checkout with an editable install of the first: a kernel and the tests of
the second stop saying so, its build runs its own package, the first's work as before.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mhsa_helpers import checkout

ROOT = Path(__file__).resolve().parents[1]


def _checkout(folder: Path) -> Path:
    """A folder that is a checkout of the course: ``course/`` and the registry."""
    (folder / "course").mkdir(parents=True)
    (folder / "mhsa_helpers").mkdir()
    (folder / "mhsa_helpers" / "exercises.toml").write_text("")
    return folder.resolve()


def test_a_checkout_is_found_from_any_folder_inside_it_and_none_outside(tmp_path):
    a = _checkout(tmp_path / "a")
    (a / "notebooks" / "mhsa").mkdir(parents=True)
    assert checkout.checkout_of(a / "notebooks" / "mhsa") == a
    assert checkout.checkout_of(tmp_path) is None


def test_another_checkout_s_package_is_named_with_the_expected_one_and_the_fix(tmp_path):
    a, b = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    said = checkout.wrong(a / "mhsa_helpers", b / "notebooks", python="/env/bin/python")
    assert said == (
        f"This environment imports mhsa_helpers from the checkout {a}, but the checkout here "
        f"is {b}: use {b}'s own environment ({b}/.venv/bin/python), or point this one at it "
        f"with `/env/bin/python -m pip install --no-deps -e {b}`."
    )
    assert checkout.wrong(a / "mhsa_helpers", a / "course") is None  # its own


def test_an_installed_package_or_a_folder_outside_every_checkout_never_stops(tmp_path):
    """A learner's (or Colab's) installed package anywhere; nbgrader's course directories,
    the grading sandbox, Binder's checkout with its own install: nothing is said."""
    b = _checkout(tmp_path / "b")
    installed = tmp_path / "venv" / "lib" / "site-packages" / "mhsa_helpers"
    installed.mkdir(parents=True)
    assert checkout.wrong(installed, b) is None
    assert checkout.wrong(b / "mhsa_helpers", None) is None
    assert checkout.wrong(b / "mhsa_helpers", checkout.checkout_of(tmp_path)) is None


def test_the_named_checkout_is_expected_over_the_working_directory(tmp_path, monkeypatch):
    a, b = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    monkeypatch.chdir(b)
    assert checkout.expected_checkout() == b
    monkeypatch.setenv(checkout.VARIABLE, str(a))
    assert checkout.expected_checkout() == a
    checkout.guard(a / "mhsa_helpers")  # a build of a, started from b: its own package
    with pytest.raises(checkout.WrongCheckout, match=f"from the checkout {b}"):
        checkout.guard(b / "mhsa_helpers")


def test_the_environment_s_package_is_the_one_a_process_outside_the_checkout_imports(
    tmp_path, monkeypatch
):
    a = _checkout(tmp_path / "a")
    (a / "mhsa_helpers" / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "path", ["", str(ROOT), str(a)])
    assert checkout.environment_package(skip=(ROOT,)) == a / "mhsa_helpers"
    monkeypatch.setattr(sys, "path", [str(ROOT)])
    assert checkout.environment_package(skip=(ROOT,)) is None


# --------------------------------------------------------------------------
# two real copies, the first installed in editable mode, used in the second
# --------------------------------------------------------------------------
def _copy(dest: Path) -> Path:
    """This checkout's files (git's, as they are in the working tree) copied to ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest.resolve()


@pytest.fixture(scope="module")
def clones(tmp_path_factory):
    """``(a, b, python)``: two copies, and an environment installed from ``a`` in editable
    mode (pip, as the README's install; its other packages are this environment's)."""
    base = tmp_path_factory.mktemp("clones")
    a, b = _copy(base / "a"), _copy(base / "b")
    subprocess.run([sys.executable, "-m", "venv", str(a / ".venv")], check=True)
    python = a / ".venv" / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = [p for p in sys.path if p.endswith("site-packages")]
    (Path(site) / "course-test-deps.pth").write_text("\n".join(ours) + "\n")
    install = ["install", "-q", "--no-deps", "-e", str(a)]  # as the README installs it
    subprocess.run([str(python), "-m", "pip", *install], check=True)
    return a, b, python


def _kernel_import(python: Path, cwd: Path) -> dict:
    """Run ``import mhsa_helpers`` in a real kernel of ``python`` started in ``cwd``."""
    script = (
        "import json, nbformat\n"
        "from nbclient import NotebookClient\n"
        "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("
        "'import mhsa_helpers as mh\\nprint(mh.__file__)', metadata={'tags': "
        "['raises-exception']})])\n"
        "NotebookClient(nb, kernel_name='python3', timeout=120).execute()\n"
        "print(json.dumps(nb.cells[0].outputs))\n"
    )
    out = subprocess.run(
        [str(python), "-c", script], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    (output,) = json.loads(out.stdout.splitlines()[-1])
    return output


@pytest.mark.slow  # two copies, an editable install, kernels, a build
def test_a_second_clone_s_kernel_tests_and_build_with_the_first_s_environment(clones):
    a, b, python = clones
    said = (
        f"This environment imports mhsa_helpers from the checkout {a}, but the checkout here is {b}"
    )
    env = {k: v for k, v in os.environ.items() if k != checkout.VARIABLE}
    # the environment's other packages are this one's: their commands too (nbgrader's alembic)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    # a kernel: its setup cell stops, saying so, in the second clone; runs in the first
    output = _kernel_import(python, b / "notebooks" / "mhsa")
    assert output["output_type"] == "error" and output["ename"] == "WrongCheckout", output
    assert output["evalue"].startswith(said), output["evalue"]
    assert _kernel_import(python, a / "notebooks" / "mhsa")["text"].strip() == str(
        a / "mhsa_helpers" / "__init__.py"
    )
    # the tests: one sentence, before collecting anything
    tests = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_registry.py"],
        cwd=b,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tests.returncode == 4 and f"ERROR: {said}" in tests.stderr, tests.stderr
    # the build: its own package, here and in nbgrader, and the notebooks it writes
    built = subprocess.run(
        [str(python), "course/build.py", "--root", str(b / "scratch")],
        cwd=b,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr
    assert sorted(p.name for p in (b / "scratch" / "notebooks" / "mhsa").glob("*.ipynb")) == sorted(
        p.name for p in (ROOT / "notebooks" / "mhsa").glob("*.ipynb")
    )
