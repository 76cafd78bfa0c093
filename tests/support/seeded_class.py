"""A class seeded with the course's own catalogued mistakes: who made which slip is known.

Each slip is one of :data:`tests.support.mistakes.MISTAKES`, with the id the
class report must give it written here by hand from the name of the
sentence it says in the check modules (``step07_softmax.COLUMNS`` is
``step07_softmax:columns``; the sentence a function of numbers makes,
``hints.by_length``, is ``hints:by_length``). :func:`expected` counts what the
report must say from the seeds alone, without the code under test.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from mhsa_helpers.exercises import EXERCISES

#: A slip: the mistake's key in MISTAKES, and the id the report names it by.
SLIPS = {
    "scale_sqrt_T": "hints:by_length",
    "no_scale": "hints:not_scaled",
    "softmax_wrong_axis": "step07_softmax:columns",
    "softmax_overflow": "step07_softmax:overflow",
    "mask_after_softmax": "step08_head_output:mask_after",
    "forgot_W_o": "hints:w_o_missing",
    "scale_sqrt_d_model": "hints:by_d_model",
}

#: The notebooks the seeded students submit (one exercise each).
NOTEBOOKS = ["05_scores", "07_softmax", "08_head_output", "09_multi_head"]

#: Each student's notebooks: "solution", "empty" (the released stubs) or a slip of SLIPS;
#: a notebook not listed is not submitted. The first run grades FIRST; the second, SECOND.
FIRST = {
    "perfect": dict.fromkeys(NOTEBOOKS, "solution"),
    "empty": dict.fromkeys(NOTEBOOKS, "empty"),
    "ada": {
        "05_scores": "scale_sqrt_T",
        "07_softmax": "softmax_wrong_axis",
        "08_head_output": "solution",
        "09_multi_head": "solution",
    },
    "bob": {
        "05_scores": "no_scale",
        "07_softmax": "softmax_overflow",
        "08_head_output": "mask_after_softmax",
        "09_multi_head": "forgot_W_o",
    },
    "cy": {
        "05_scores": "scale_sqrt_T",
        "07_softmax": "solution",
        "08_head_output": "mask_after_softmax",
        "09_multi_head": "scale_sqrt_d_model",
    },
}
SECOND = {"dee": {"05_scores": "solution", "07_softmax": "softmax_wrong_axis"}}


def expected(classes: dict) -> dict:
    """What the report must count, from the seeds: per exercise, outcomes and slips.

    Returns
    -------
    dict
        ``{exercise: {"counts": {outcome: n}, "slips": {id: [students]}}}``
        for every exercise of the course; an exercise whose notebook a student
        did not submit, or left empty, is not attempted.
    """
    from tests.support.mistakes import MISTAKES

    out = {}
    for e in EXERCISES:
        counts = Counter({"passed": 0, "failed": 0, "hidden": 0, "not attempted": 0})
        slips = defaultdict(list)
        for student, plan in sorted(classes.items()):
            seed = plan.get(e.notebook, "empty")
            if seed == "empty":
                counts["not attempted"] += 1
            elif seed == "solution":
                counts["passed"] += 1
            else:
                assert MISTAKES[seed][1] == e.name, (seed, e.name)
                counts["failed"] += 1
                slips[SLIPS[seed]].append(student)
        out[e.name] = {"counts": dict(counts), "slips": dict(slips)}
    return out


def submit_class(course, classes: dict) -> None:
    """Submit every student of ``classes`` into ``course`` (see :data:`FIRST`)."""
    from tests.support import nbgrader_course as nc
    from tests.support.mistakes import MISTAKES

    for student, plan in classes.items():
        notebooks = {}
        for stem, seed in plan.items():
            if seed == "solution":
                notebooks[stem] = nc.student_notebook(stem, "solution")
            elif seed == "empty":
                notebooks[stem] = nc.student_notebook(stem)
            else:
                _, name, source, _ = MISTAKES[seed]
                notebooks[stem] = nc.student_notebook(stem, {name: source})
        nc.submit(course, student, notebooks)
