"""Test-wide settings: property tests draw the same examples on every run (CI included)."""

from hypothesis import settings

settings.register_profile("course", derandomize=True, deadline=None)
settings.load_profile("course")
