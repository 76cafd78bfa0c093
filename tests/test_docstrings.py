"""Every public module, class and function of the two packages has a docstring."""

import ast
import importlib
import importlib.util
import inspect
import pkgutil
from pathlib import Path

import pytest

import autograders
import mhsa_helpers

MODULES = sorted(
    m.name
    for package in (mhsa_helpers, autograders)
    for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    if m.name != "autograders.nbgrader_config"  # a traitlets config file, run by nbgrader
    and not m.name.endswith(".__main__")  # a program's start: read, not imported (below)
)
PROGRAMS = sorted(
    m.name
    for package in (mhsa_helpers, autograders)
    for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    if m.name.endswith(".__main__")
)


def public(module):
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj):
            yield name, obj
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and inspect.isfunction(member):
                    yield f"{name}.{attr}", getattr(obj, attr)
        elif inspect.isfunction(obj):
            yield name, obj


@pytest.mark.parametrize("module_name", MODULES)
def test_public_api_is_documented(module_name):
    module = importlib.import_module(module_name)
    assert inspect.getdoc(module), module_name
    missing = [name for name, obj in public(module) if not inspect.getdoc(obj)]
    assert not missing, (
        f"{module_name}: public functions without a docstring: {missing}; give each a "
        "numpydoc docstring, or make it private (_name)"
    )


@pytest.mark.parametrize("module_name", PROGRAMS)
def test_a_programs_start_is_documented(module_name):
    """``__main__`` modules, read without running them: the module and its public functions."""
    tree = ast.parse(Path(importlib.util.find_spec(module_name).origin).read_text())
    assert ast.get_docstring(tree), module_name
    missing = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
        and not ast.get_docstring(node)
    ]
    assert not missing, (
        f"{module_name}: public functions without a docstring: {missing}; give each a "
        "numpydoc docstring, or make it private (_name)"
    )
