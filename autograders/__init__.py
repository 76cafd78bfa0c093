"""Checks behind every exercise of the course, and its nbgrader configuration."""
