"""Which checkout's course runs: a stop, in one sentence, when it is not the expected one.

The development environment installs the course's package in editable mode: it imports
the checkout it was installed from. A kernel, the tests or a build started in a second
clone with the first clone's environment would run the first clone's ``mhsa_helpers``
(seen: ``module 'mhsa_helpers' has no attribute …`` in a notebook of the second). A
checkout is a folder with ``course/`` and ``mhsa_helpers/exercises.toml``. Where this
package is imported from a checkout (an editable install, or the source tree itself) and
the expected checkout is another, importing the package stops (:class:`WrongCheckout`,
raised by this module, which the package's ``__init__`` imports first), naming both and
the command that fixes it.

The expected checkout is :data:`VARIABLE`'s, where set (the builds set it to their own),
else the one holding the working directory. An installed package (site-packages: a
learner's, Colab's) is in no checkout, and a working directory outside every checkout
(a learner's notebooks anywhere, nbgrader's course directories, the grading sandbox)
expects none: neither ever stops.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from pathlib import Path

__all__ = ["VARIABLE", "WrongCheckout", "checkout_of", "environment_package", "guard", "wrong"]

#: The environment variable naming the checkout whose package must be imported.
VARIABLE = "MHSA_CHECKOUT"

#: This package's folder.
PACKAGE = Path(__file__).resolve().parent


class WrongCheckout(RuntimeError):
    """The course's package came from another checkout than the expected one.

    Not an ``ImportError``: ``from . import checkout`` would turn one into "cannot import
    name", losing the sentence.
    """

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the sentence."""
        return [f"\u2717 {self}"]


def is_checkout(folder: Path) -> bool:
    """Whether ``folder`` is a checkout of the course: ``course/`` and the registry."""
    return (folder / "course").is_dir() and (folder / "mhsa_helpers" / "exercises.toml").is_file()


def checkout_of(path: Path) -> Path | None:
    """The checkout holding ``path`` (itself or a parent), resolved; None outside any."""
    path = Path(path).resolve()
    for folder in (path, *path.parents):
        if is_checkout(folder):
            return folder
    return None


def wrong(package: Path, expected: Path | None, python: str = sys.executable) -> str | None:
    """The sentence saying that ``package`` is another checkout's than ``expected``, or None.

    Parameters
    ----------
    package : Path
        The folder of the ``mhsa_helpers`` imported (or that would be).
    expected : Path or None
        A folder of the checkout expected (None: none is).
    python : str
        The environment's Python, for the command that fixes it.

    Returns
    -------
    str or None
        None where ``package`` is in no checkout (installed), where none is expected, or
        where it is the expected checkout's own.
    """
    package = Path(package).resolve()
    imported = package.parent if is_checkout(package.parent) else None
    expected = checkout_of(expected) if expected is not None else None
    if imported is None or expected is None or imported == expected:
        return None
    return (
        f"This environment imports mhsa_helpers from the checkout {imported}, but the "
        f"checkout here is {expected}: use {expected}'s own environment "
        f"({expected}/.venv/bin/python), or point this one at it with "
        f"`{python} -m pip install --no-deps -e {expected}`."
    )


def expected_checkout(cwd: Path | None = None) -> Path | None:
    """:data:`VARIABLE`'s checkout where set, else the one holding ``cwd`` (or None)."""
    named = os.environ.get(VARIABLE)
    return checkout_of(Path(named)) if named else checkout_of(cwd or Path.cwd())


def environment_package(skip: tuple = ()) -> Path | None:
    """The ``mhsa_helpers`` a process of this environment imports outside any checkout.

    ``sys.path`` without its working-directory entries and ``skip`` (the processes the
    tests start in a temporary folder import this one), except those on ``PYTHONPATH``,
    which a child inherits; None where there is none.
    """
    inherited = {p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    away = {"", ".", os.getcwd(), *map(str, skip)} - inherited  # children inherit PYTHONPATH
    spec = importlib.machinery.PathFinder.find_spec(
        "mhsa_helpers", [p for p in sys.path if p not in away]
    )
    origin = spec and spec.origin
    return Path(origin).parent if origin else None


def guard(package: Path = PACKAGE, expected: Path | None = None) -> None:
    """Stop (:class:`WrongCheckout`) where ``package`` is not the expected checkout's."""
    said = wrong(package, expected if expected is not None else expected_checkout())
    if said:
        raise WrongCheckout(said)


guard()  # importing the course's package: this module is its first import
