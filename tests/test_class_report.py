"""The class report of a seeded class graded for real: its counts are the seeds', exactly.

A class built from the course's catalogued mistakes (tests/support/seeded_class.py)
is graded by the grade command in two runs (a student who submits late is
graded by the second), then the report is read back: per exercise and per slip
its numbers equal what the seeds say, the terminal summary ends with the
commonest slips and the report's path, its files are the instructor's alone,
and the page opens in Chromium with no console error and no request off the
machine.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from autograders.private import check, close
from autograders.report import REPORT
from autograders.results import RESULTS
from tests.support import nbgrader_course as nc
from tests.support import seeded_class as sc

pytestmark = pytest.mark.slow  # real nbgrader, the grade command, Chromium

HOSTILE = '<script>alert(1)"onload=x'


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The seeded class graded in two runs: ``(course, first run's output, second's)``."""
    course = nc.make_course(tmp_path_factory.mktemp("seeded") / "course")
    nc.generate(course)
    sc.submit_class(course, sc.FIRST)
    first = nc.grade(course, "--workers", "2").stdout
    sc.submit_class(course, sc.SECOND)
    (course / "submitted" / HOSTILE / nc.ASSIGNMENT).mkdir(parents=True)
    close(course / "submitted")
    second = nc.grade(course, "--workers", "2").stdout
    return course, first, second


def report_of(course: Path) -> dict:
    return json.loads((course / REPORT / nc.ASSIGNMENT / "report.json").read_text())


def test_the_counts_are_the_seeds_per_exercise_and_per_slip(graded):
    course, _, _ = graded
    report = report_of(course)
    want = sc.expected({**sc.FIRST, **sc.SECOND})
    assert report["students"] == len(sc.FIRST) + len(sc.SECOND)
    assert report["runs"] == 2
    got = {
        e["exercise"]: {
            "counts": e["counts"],
            "slips": {s["id"]: sorted(s["students"]) for s in e["slips"]},
        }
        for e in report["exercises"]
    }
    assert got == want
    assert all(e["unnamed"]["count"] == 0 for e in report["exercises"])


def test_the_three_commonest_slips_end_the_summary(graded):
    course, first, second = graded
    report = report_of(course)
    # by students across the assignment: columns (ada, dee), mask_after (bob, cy),
    # by_length (ada, cy) tie at 2 students each, one exercise each: by id
    assert [t["id"] for t in report["top"]] == [
        "hints:by_length",
        "step07_softmax:columns",
        "step08_head_output:mask_after",
    ]
    lines = second.strip().splitlines()
    assert lines[-5] == "most common slips:"
    assert lines[-4].startswith("  1. 2 student(s), 33% (05_scores attention_scores): the scores")
    assert lines[-1] == f"class report: {course.resolve() / REPORT / nc.ASSIGNMENT / 'index.html'}"
    assert "class report: " in first  # the first run's summary says where, too


def test_the_report_is_the_instructors_alone(graded):
    course, _, _ = graded
    check(course)  # the course directory, the results and the report included: private
    for folder in (course / REPORT, course / RESULTS):
        for path in [folder, *folder.rglob("*")]:
            mode = stat.S_IMODE(path.stat().st_mode)
            assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def test_the_report_command_writes_the_same_numbers_again(graded):
    course, _, _ = graded
    before = report_of(course)
    proc = subprocess.run(
        [sys.executable, "-m", "autograders", "report", nc.ASSIGNMENT],
        cwd=course,
        env=nc.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    after = report_of(course)
    before.pop("generated"), after.pop("generated")
    assert after == before
    assert proc.stdout.splitlines()[-1].startswith("class report: ")


def test_the_page_opens_offline_with_no_console_error_and_escapes_a_refused_name(graded):
    from playwright.sync_api import sync_playwright

    from tests.support.lab_harness import CHROMIUM, CHROMIUM_ARGS

    course, _, _ = graded
    page_path = course / REPORT / nc.ASSIGNMENT / "index.html"
    text = page_path.read_text()
    assert "<script" not in text and "&lt;script&gt;alert(1)&quot;onload=x" in text
    for href in re.findall(r' href="([^"#]+)"', text):  # every link: a feedback page that exists
        target = (page_path.parent / unquote(href)).resolve()
        assert target.is_file() and (course / "feedback") in target.parents, href
    console, off_machine = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda exc: console.append(f"pageerror: {exc}"))

            def route(r):
                if r.request.url.startswith("file://"):
                    r.continue_()
                else:
                    off_machine.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.goto(page_path.as_uri())
            assert page.locator("h1").inner_text() == "Class report: mhsa"
            assert page.locator("svg").count() == 2
            assert page.locator(".card").count() == 3
        finally:
            browser.close()
    assert [c for c in console if c.startswith(("error", "pageerror"))] == []
    assert off_machine == []
    assert os.stat(page_path).st_uid == os.geteuid()
