"""The class report's logic without nbgrader: slip ids, counting, ranking, merging, escaping.

The real class, graded by the grade command, is tests/test_class_report.py.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import stat
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

from autograders import report as rp
from autograders.integrity import exercise_record
from autograders.report_page import CSP, page
from autograders.results import RESULTS, RunLog, load
from mhsa_helpers.checks import CHECKS, hidden_seed, judgement
from mhsa_helpers.checks.slips import sentence_of
from mhsa_helpers.checks.step07_softmax import COLUMNS
from tests.support.answers import load as load_answer
from tests.support.mistakes import MISTAKES
from tests.support.nbgrader_course import SOLUTIONS
from tests.support.seeded_class import SLIPS

EXERCISES = rp.exercises_of(SOLUTIONS)


def judged(name, fn, hidden=False):
    """``(sentence, slip)`` of ``fn`` as the grader judges exercise ``name``."""
    seed = hidden_seed(b"a test key", name) if hidden else None
    outcomes = CHECKS[name].outcomes_here(fn, CHECKS[name].calls(seed), hidden)
    return judgement(name, seed, outcomes, hidden)


# -- 1. every failed check keeps the id of the slip it named -----------------------------
@pytest.mark.parametrize("mistake", sorted(SLIPS))
def test_a_catalogued_mistake_is_named_by_its_sentences_id_visible_and_hidden(mistake):
    _, name, source, _ = MISTAKES[mistake]
    fn = load_answer(source, name)
    visible, hidden = judged(name, fn), judged(name, fn, hidden=True)
    assert visible[0] is not None and hidden[0] is not None
    assert (visible[1], hidden[1]) == (SLIPS[mistake], SLIPS[mistake])


def test_a_learners_own_words_never_become_an_id():
    def softmax(Z, axis=-1):
        raise ValueError(f"{COLUMNS} step07_softmax:columns <script>")

    sentence, slip = judged("softmax", softmax)
    assert COLUMNS in sentence  # the learner is told their own error …
    assert slip == "unnamed"  # … and it names no slip

    def returns_text(Z, axis=-1):
        return COLUMNS

    assert judged("softmax", returns_text)[1] == "result:not_one_ndarray"


def test_a_function_not_written_yet_is_not_attempted():
    def softmax(Z, axis=-1):
        raise NotImplementedError("write softmax")

    visible = judged("softmax", softmax)
    assert visible[1] == "not attempted"
    record = exercise_record("softmax", visible, judged("softmax", softmax, hidden=True))
    assert record["outcome"] == "not attempted" and record["hidden"] is None


def test_slip_ids_are_the_same_in_another_process():
    from mhsa_helpers.checks.slips import index

    code = (
        "from mhsa_helpers.checks.slips import index\n"
        "t, p = index()\n"
        "print('\\n'.join(sorted({*map(str, t.values()), *(str(x[3]) for x in p)})))\n"
    )
    there = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "1"},
    ).stdout.split()
    texts, patterns = index()
    here = sorted({*map(str, texts.values()), *(str(p[3]) for p in patterns)})
    assert there == here and "step07_softmax:columns" in here and "hints:by_length" in here


# -- 2. counting ---------------------------------------------------------------------------
def seeded_results(n=40, seed=7):
    """Results of ``n`` students drawn at random, and what a report must count of them."""
    rng = random.Random(seed)
    slips = ["step07_softmax:columns", "hints:by_length", "hints:w_o_missing", "unnamed"]
    students, want = {}, defaultdict(lambda: {"counts": Counter(), "slips": defaultdict(list)})
    for i in range(n):
        sid = f"s{i:02d}"
        notebooks = {}
        for e in EXERCISES:
            nb = notebooks.setdefault(e["notebook"], {"exercises": {}, "submitted": True})
            w = want[e["exercise"]]
            kind = rng.choice(["passed", "failed", "hidden", "absent"])
            slip = rng.choice(slips)
            if kind == "absent":
                w["counts"]["not attempted"] += 1
                continue
            w["counts"][kind] += 1
            if kind == "passed":
                rec = exercise_record(e["exercise"], (None, None), (None, None))
            elif kind == "failed":
                rec = exercise_record(e["exercise"], ("x: told", slip), ("x: public", slip))
            else:
                rec = exercise_record(e["exercise"], (None, None), ("x: public", slip))
            if kind != "passed" and slip != "unnamed":
                w["slips"][slip].append(sid)
            nb["exercises"][e["grade_id"]] = rec
        students[sid] = {"ok": True, "notes": [], "notebooks": notebooks}
    return {"students": students, "refused": [], "at_door": {}, "runs": 1}, want


def test_the_counts_per_exercise_and_per_slip_are_the_seeded_ones():
    results, want = seeded_results()
    report = rp.build("mhsa", results, EXERCISES)
    assert report["students"] == 40
    for e in report["exercises"]:
        w = want[e["exercise"]]
        for outcome in ("passed", "failed", "hidden", "not attempted"):
            assert e["counts"][outcome] == w["counts"][outcome], (e["exercise"], outcome)
        assert {s["id"]: s["students"] for s in e["slips"]} == dict(w["slips"])
        assert sum(e["counts"].values()) == 40
        unnamed = e["counts"]["failed"] + e["counts"]["hidden"] - sum(map(len, w["slips"].values()))
        assert e["unnamed"]["count"] == unnamed
        for s in e["slips"]:
            assert s["share"] == pytest.approx(s["count"] / 40)


def test_scores_without_a_gradebook_are_the_points_passed_and_with_one_the_gradebooks():
    results, _ = seeded_results(n=6)
    report = rp.build("mhsa", results, EXERCISES)
    for s, entry in results["students"].items():
        points = sum(
            e["points"]
            for e in EXERCISES
            if entry["notebooks"][e["notebook"]]["exercises"].get(e["grade_id"], {}).get("outcome")
            == "passed"
        )
        assert report["totals"][s] == points
    gb = {"scores": {"s00": {EXERCISES[0]["grade_id"]: 0.5}}, "totals": {"s00": 0.5}, "late": {}}
    report = rp.build("mhsa", results, EXERCISES, {**gb, "max_score": 56.0})
    assert report["totals"]["s00"] == 0.5 and report["exercises"][0]["scores"]["0.5"] == 1


def one_exercise_results(plan: dict) -> dict:
    """Results from ``{student: {exercise: (outcome, slip)}}`` (others not submitted)."""
    by_name = {e["exercise"]: e for e in EXERCISES}
    students = {}
    for sid, mine in plan.items():
        notebooks = {}
        for name, (outcome, slip) in mine.items():
            e = by_name[name]
            test = ("x: y", slip)
            visible, hidden = {
                "passed": ((None, None), (None, None)),
                "failed": (test, test),
                "hidden": ((None, None), test),
            }[outcome]
            nb = notebooks.setdefault(e["notebook"], {"exercises": {}, "submitted": True})
            nb["exercises"][e["grade_id"]] = exercise_record(name, visible, hidden)
        students[sid] = {"ok": True, "notes": [], "notebooks": notebooks}
    return {"students": students, "refused": [], "at_door": {}, "runs": 1}


def test_the_slips_worth_a_lecture_count_each_student_once_across_exercises():
    shared = "hints:w_o_missing"  # said by two exercises
    plan = {
        "a": {
            "multi_head_self_attention": ("failed", shared),
            "multi_query_attention": ("failed", shared),
        },
        "b": {"multi_query_attention": ("hidden", shared)},
        "c": {"softmax": ("failed", "step07_softmax:columns")},
        "d": {"softmax": ("failed", "step07_softmax:columns")},
        "e": {
            "softmax": ("failed", "step07_softmax:overflow"),
            "attention_scores": ("failed", "unnamed"),
        },
        "f": {"attention_scores": ("failed", "unnamed")},
        "g": {"attention_scores": ("failed", "unnamed")},
    }
    report = rp.build("mhsa", one_exercise_results(plan), EXERCISES)
    top = [(t["id"], t["count"], len(t["where"])) for t in report["top"]]
    # w_o_missing: a and b (2 students, 2 exercises) before columns (2 students, 1 exercise);
    # unnamed failures (3 students) are never ranked
    assert top == [
        (shared, 2, 2),
        ("step07_softmax:columns", 2, 1),
        ("step07_softmax:overflow", 1, 1),
    ]
    assert report["top"][0]["students"] == ["a", "b"]
    assert report["top"][0]["where"][0]["section"].startswith("Exercise")


def test_who_may_need_help_and_why():
    everything = {e["exercise"]: ("passed", None) for e in EXERCISES}
    plan = {
        "fine": everything,
        "behind": {"softmax": ("passed", None)},
        "repeats": {
            **everything,
            "multi_head_self_attention": ("failed", "hints:w_o_missing"),
            "multi_query_attention": ("failed", "hints:w_o_missing"),
        },
    }
    results = one_exercise_results(plan)
    results["students"]["fine"]["ok"] = False
    report = rp.build("mhsa", results, EXERCISES, sentence_of=sentence_of)
    got = {h["student"]: h["why"] for h in report["help"]}
    assert set(got) == {"behind", "repeats", "fine"}
    assert got["behind"] == [
        f"passed 1 of {len(EXERCISES)} exercises (0 failed, {len(EXERCISES) - 1} not attempted)"
    ]
    assert len(got["repeats"]) == 1 and got["repeats"][0].startswith(
        "the same slip in 2 exercises: the output projection W_O is missing"
    )
    assert got["fine"] == ["grading failed (see the submissions below)"]


def test_every_submission_to_look_at_is_listed_with_its_reason():
    results = one_exercise_results({"a": {}, "b": {}, "c": {}})
    results["students"]["a"]["notes"] = [
        "07_softmax: softmax: a call ran over its time budget (3.1 s)"
    ]
    results["students"]["b"]["notes"] = ["05_scores.ipynb is over 1000 cells: not graded, scored 0"]
    results["students"]["c"].update(ok=False, notes=["grading failed: KilledWorker: x"])
    results["at_door"] = {"d": ["a submission was not collected: larger than 100 MB"]}
    results["refused"] = [
        "submitted/'<x>' not graded: its student id is not one the course accepts"
    ]
    gb = {"scores": {}, "totals": {}, "max_score": 56.0, "late": {"a": 7500.0, "zz": 5.0}}
    got = [
        (s["student"], s["kind"]) for s in rp.build("mhsa", results, EXERCISES, gb)["submissions"]
    ]
    assert got == [
        ("a", "late"),
        ("a", "over budget"),
        ("b", "not graded"),
        ("c", "grading failed"),
        ("d", "not collected"),
        (None, "refused"),
    ]
    assert (
        rp.build("mhsa", results, EXERCISES, gb)["submissions"][0]["reason"] == "late by 2 h 5 min"
    )


# -- 5. several runs --------------------------------------------------------------------
def test_runs_merge_to_the_latest_result_per_student_and_notebook(tmp_path):
    stems = ["05_scores", "07_softmax"]
    passed = {"g": exercise_record("softmax", (None, None))}
    failed = {"g": exercise_record("softmax", ("softmax: x", "step07_softmax:columns"))}
    first = RunLog(tmp_path, "mhsa", stems)
    first.at = 0
    first.student("a", True, ["old note"], {"07_softmax": failed, "05_scores": passed})
    first.student("b", True, [], {"07_softmax": failed})
    first.run(["old refusal"], {})
    first.close()
    second = RunLog(tmp_path, "mhsa", stems)
    second.student("a", True, [], {"07_softmax": passed})
    second.student("c", False, ["grading failed: KilledWorker"], None)
    second.run(["new refusal"], {"d": ["not collected"]})
    second._file.write('{"kind": "student", "student": "b", "at": 9e99, "no')  # killed mid-line
    second.close()
    merged = load(tmp_path, "mhsa")
    assert merged["runs"] == 2 and merged["refused"] == ["new refusal"]
    a = merged["students"]["a"]
    assert a["notes"] == [] and a["notebooks"]["07_softmax"]["exercises"] == passed
    assert a["notebooks"]["05_scores"] == {
        **a["notebooks"]["05_scores"],
        "exercises": {},
        "submitted": False,
    }
    assert merged["students"]["b"]["notebooks"]["07_softmax"]["exercises"] == failed
    assert merged["students"]["c"] == {**merged["students"]["c"], "ok": False, "notebooks": {}}
    folder = tmp_path / RESULTS / "mhsa"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {0o600}


# -- 4. escaping, offline, private ------------------------------------------------------
HOSTILE = [
    "<script>alert(1)</script>",
    '"onload="alert(1)',
    "x'><img src=x onerror=alert(1)>",
    "=cmd|' /C calc'!A0",
]


def hostile_report():
    plan = {h: {"softmax": ("failed", "step07_softmax:columns")} for h in HOSTILE}
    plan[HOSTILE[3]]["attention_scores"] = ("failed", "hints:by_length")
    results = one_exercise_results(plan)
    results["students"][HOSTILE[0]]["notes"] = ['<b>note</b> & "quote"']
    results["refused"] = ["submitted/<iframe src=//evil> not graded"]
    return rp.build("mhsa", results, EXERCISES)


@pytest.fixture(scope="module")
def hostile_page():
    """The page of :func:`hostile_report`, drawn once."""
    return page(hostile_report())


def test_every_students_text_is_escaped_on_the_page(hostile_page):
    text = hostile_page
    for tag in ("<script", "<img", "<iframe", "<b>note"):
        assert tag not in text, tag
    assert '"onload=' not in text
    for tag in re.findall(r"<[^>]*>", text.split("<svg", 1)[0]):  # every tag outside the figures
        assert not re.search(r"\son\w+\s*=", tag), tag  # no event handler attribute
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    for href in re.findall(r' href="([^"#]*)"', text):  # the figures' own links are #ids
        assert href.startswith("../../feedback/") and re.fullmatch(r"[A-Za-z0-9%._/\-]+", href), (
            href
        )


def test_the_page_asks_for_nothing_off_the_page(hostile_page):
    text = hostile_page
    assert f'content="{CSP}"' in text.replace("&#x27;", "'")
    assert "<script" not in text and "<link" not in text and "@import" not in text
    assert not re.search(r"(src|href)=\"(https?:)?//", text)
    assert set(re.findall(r"https?://[^\s\"')]+", text)) <= {
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/1999/xlink",
        "http://purl.org/dc/elements/1.1/",
        "http://creativecommons.org/ns#",
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
        "http://purl.org/dc/dcmitype/StillImage",
        "https://matplotlib.org/",
    }


def test_the_csv_has_the_jsons_numbers_and_no_formula():
    report = hostile_report()
    rows = list(csv.DictReader(io.StringIO(rp._csv(report))))
    softmax = [r for r in rows if r["exercise"] == "softmax"]
    e = next(e for e in report["exercises"] if e["exercise"] == "softmax")
    assert {r["slip"]: int(r["count"]) for r in softmax if r["row"] == "outcome"} == e["counts"]
    (slip,) = [r for r in softmax if r["row"] == "slip"]
    assert (slip["slip"], int(slip["count"])) == ("step07_softmax:columns", len(HOSTILE))
    (alone,) = [r for r in rows if r["exercise"] == "attention_scores" and r["row"] == "slip"]
    assert alone["students"] == "'=cmd|' /C calc'!A0"  # a spreadsheet shows it, never runs it
    assert json.loads(json.dumps(report)) == report


def test_the_files_are_written_for_the_owner_only(tmp_path):
    old = os.umask(0o022)
    try:
        rp._private_write(tmp_path / "index.html", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "index.html").stat().st_mode) == 0o600
