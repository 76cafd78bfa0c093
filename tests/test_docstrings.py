"""Every public module, class and function of the two packages has a docstring."""

import importlib
import inspect
import pkgutil

import pytest

import autograders
import mhsa_helpers

MODULES = sorted(
    m.name
    for package in (mhsa_helpers, autograders)
    for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    if m.name != "autograders.nbgrader_config"  # a traitlets config file, run by nbgrader
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
    assert not missing, f"{module_name}: {missing}"
