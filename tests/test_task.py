"""Grading one submission as a pure function of bytes (the unit a Dask worker runs)."""

import pytest

from autograders.task import judge_submission, notebooks_of
from tests import nbgrader_course as nc

pytestmark = pytest.mark.slow  # real answers in real child processes


def test_the_solutions_pass_and_an_empty_submission_is_judged_without_files():
    source = notebooks_of(nc.SOLUTIONS)
    verdicts = judge_submission(source, source, sandboxed=False)
    assert set(verdicts) == {name.removesuffix(".ipynb") for name in source} - {"00_start_here"}
    for stem, v in verdicts.items():
        assert v["grades"] and all(ok for ok, _ in v["grades"].values()), (stem, v)
    student = notebooks_of(nc.STUDENT)
    verdicts = judge_submission(source, student, sandboxed=False)
    assert all(not ok for v in verdicts.values() for ok, _ in v["grades"].values())


def test_names_must_be_plain_file_names():
    with pytest.raises(ValueError, match="plain file names"):
        judge_submission({"../x.ipynb": b"{}"}, {})
