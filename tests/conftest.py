"""Test-wide settings and the learner's environments, each built once per test session.

Property tests draw the same examples on every run (CI included).
"""

import os
import sys
import tempfile

#: Compiled modules are kept (``__pycache__``, ignored by git) even where the environment
#: says not to write them (PYTHONDONTWRITEBYTECODE): the suite starts hundreds of Python
#: processes (children, kernels, nbgrader), each of which would otherwise compile the
#: course's package and the rewritten tests again (about 15 s of a quick run's collection).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

#: One BLAS thread in the test process itself: OpenBLAS reads this once, when numpy loads
#: (just below). The tests' arrays are small, and OpenBLAS's threads, spinning beside a
#: second test worker (``pytest -n``) or a child process on two cores, cost more than they
#: give (the quick loop took 74 s with them, 64 s without, 40 s on two workers). The
#: processes the tests start keep the learner's default: the variable is restored here.
_BLAS_THREADS = os.environ.get("OPENBLAS_NUM_THREADS")
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import numpy  # noqa: E402, F401

if _BLAS_THREADS is None:
    os.environ.pop("OPENBLAS_NUM_THREADS")
else:
    os.environ["OPENBLAS_NUM_THREADS"] = _BLAS_THREADS

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402


def _wrong_checkout() -> str | None:
    """Why these tests would run another checkout's course package, or None.

    This process imports this checkout's (pytest puts it first on ``sys.path``); the
    processes the tests start (kernels, children, nbgrader) in a folder of their own import
    the environment's, which an editable install may have taken from another clone.
    """
    root = Path(__file__).resolve().parents[1]
    try:
        from mhsa_helpers import checkout
    except RuntimeError as exc:  # the package's own guard, on import
        if type(exc).__name__ == "WrongCheckout":
            return str(exc)
        raise
    return checkout.wrong(checkout.PACKAGE, root) or checkout.wrong(
        checkout.environment_package(skip=(root,)) or root, root
    )


#: Set where the tests would run another checkout's package: they stop before collecting.
WRONG_CHECKOUT = _wrong_checkout()
if WRONG_CHECKOUT is None:
    from mhsa_helpers.checks import KEY_VARIABLE
else:
    KEY_VARIABLE = "MHSA_HIDDEN_KEY"  # unused: pytest_configure stops the run


def pytest_configure(config):
    """Stop with one sentence where the tests would run another checkout's package."""
    if WRONG_CHECKOUT is not None:
        raise pytest.UsageError(WRONG_CHECKOUT)


settings.register_profile("course", derandomize=True, deadline=None)
settings.load_profile("course")

#: Matplotlib's font cache, private to this environment (inside it, built by the first run
#: and kept): the shared one in ~/.cache can be rebuilt by another environment's matplotlib
#: while that environment is being deleted (seen: a list without matplotlib's own fonts, and
#: a notebook's figure cell then writes findfont warnings). A fresh folder per run cost each
#: worker about 1.6 s of CPU to rebuild the list.
_MPL = Path(sys.prefix) / "mhsa-tests-mpl"
try:
    _MPL.mkdir(mode=0o700, exist_ok=True)
except OSError:  # a read-only environment: a folder of this run's own
    _MPL = Path(tempfile.mkdtemp(prefix="mhsa-tests-mpl-"))
os.environ.setdefault("MPLCONFIGDIR", str(_MPL))

#: The tests' own hidden-test key: check_hidden draws the same inputs on every run.
TEST_KEY = b"the test suite's hidden-test key"
os.environ.setdefault(KEY_VARIABLE, TEST_KEY.hex())


@pytest.fixture(scope="session")
def learner_envs(tmp_path_factory) -> dict:
    """Both learner environments, built at the same time: ``{"readme": future, "binder": future}``.

    Each is a pip install of the same pins into a fresh copy with a home of its
    own (so an empty pip cache: about 80 s each, mostly waiting on the registry
    and the disk). A build that fails raises in its own fixture only.
    """
    from concurrent.futures import ThreadPoolExecutor

    from tests.support.environments import build_binder_env, build_readme_env

    builds = {"readme": build_readme_env, "binder": build_binder_env}
    with ThreadPoolExecutor(len(builds)) as pool:
        return {
            name: pool.submit(build, tmp_path_factory.mktemp(name))
            for name, build in builds.items()
        }


@pytest.fixture(scope="session")
def readme_env(learner_envs):
    """A fresh copy installed with the README's first command (without starting JupyterLab)."""
    return learner_envs["readme"].result()


@pytest.fixture(scope="session")
def binder_env(learner_envs):
    """A fresh copy and a fresh virtual environment built exactly as binder/ says."""
    return learner_envs["binder"].result()


#: Test modules whose slow tests share what one test process builds once and keeps
#: (tests/support/classes.py's stuck-class reference; the learner environments above; the
#: site environment, .site-venv):
#: under ``pytest -n … --dist loadgroup`` each group runs in one worker, so that is built once.
SHARED_WORK = {
    "test_grading": "the stuck class's nbgrader reference",
    "test_dask": "the stuck class's nbgrader reference",
    "test_binder": "the learner environments",
    "test_student_lab": "the learner environments",
    "test_book": "the site environment",  # made by the README's site command, once
    "test_site": "the site environment",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the groups
def pytest_collection_modifyitems(config, items):
    """Keep each module's slow tests in one worker under ``--dist loadgroup``.

    A module's fixtures (a graded class, a JupyterLab) are built once per worker
    that runs one of its tests, so the slow tests of a module go to one worker
    together (modules in :data:`SHARED_WORK` with the others of their group).
    The quick tests stay free to go to any worker.
    """
    for item in items:
        if item.get_closest_marker("slow") is None or item.get_closest_marker("xdist_group"):
            continue
        module = item.module.__name__.rsplit(".", 1)[-1]
        item.add_marker(pytest.mark.xdist_group(SHARED_WORK.get(module, module)))
