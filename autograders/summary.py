"""What the grade command tells the instructor once the class is graded (the bar is tqdm's).

* :func:`summarize`: the totals from the course's gradebook, the failures
  and their reasons, as a dict.
* :func:`print_summary`: that dict printed, every line escaped (no text a
  student chose reaches the terminal as it is).
"""

from __future__ import annotations

import statistics
import sys

__all__ = ["print_summary", "summarize"]


def summarize(config, course, assignment, students, outcomes, skipped, seconds) -> dict:
    """The class's summary: totals from the gradebook, failures and their reasons."""
    from nbgrader.api import Gradebook
    from nbgrader.coursedir import CourseDirectory

    totals = {}
    with Gradebook(CourseDirectory(config=config).db_url) as gb:
        max_score = gb.find_assignment(assignment).max_score
        for s in students:
            try:
                totals[s] = gb.find_submission(assignment, s).score
            except Exception:
                totals[s] = None
    failures = {s: notes for s, (ok, notes) in outcomes.items() if not ok or notes}
    return dict(
        students=len(students),
        graded=len(outcomes),
        skipped=skipped,
        failed=sum(not ok for ok, _ in outcomes.values()),
        seconds=seconds,
        max_score=max_score,
        totals=totals,
        failures=failures,
    )


def print_summary(summary: dict, out=None) -> None:
    """Print the summary: counts, scores, every student with a note, then the commonest slips.

    It ends with the class report's three most common slips and where the
    report is (:func:`autograders.report.top_lines`).

    Every line is printed escaped (:func:`autograders.ids.printable`): no text a
    student chose (an id, a file name, a stamp) puts a line break, a
    control character or a terminal escape on the instructor's terminal.
    """
    from autograders.ids import printable

    target = out or sys.stdout

    class _Escaped:  # what print() writes, escaped; only its own line end passes as it is
        def write(self, text: str) -> None:
            target.write(text if text == "\n" else printable(text, backslashes=False))

    out = _Escaped()
    scores = [v for v in summary["totals"].values() if v is not None]
    print(
        f"students: {summary['students']} · graded now: {summary['graded']} · "
        f"already done: {summary['skipped']} · failed: {summary['failed']} · "
        f"{summary['seconds']:.1f} s",
        file=out,
    )
    if not summary.get("sandboxed", True):
        print("! graded WITHOUT the sandbox (--no-sandbox): submissions ran unconfined", file=out)
    if scores:
        m = summary["max_score"] or 1
        print(
            f"scores out of {summary['max_score']:g}: min {min(scores):g} · median "
            f"{statistics.median(scores):g} · max {max(scores):g}",
            file=out,
        )
        bins = [0] * 5
        for v in scores:
            bins[min(4, int(5 * v / m))] += 1
        for k, count in enumerate(bins):
            lo, hi = 20 * k, 20 * (k + 1)
            print(f"  {lo:>3}-{hi:<3}% {'#' * count} {count}", file=out)
    for line in summary.get("refused", []):
        print(f"! refused: {line}", file=out)
    for student, reasons in sorted(summary["failures"].items()):
        print(f"! {student}: " + "; ".join(reasons or ["failed"]), file=out)
    for line in summary.get("slips", []):  # the class report's three most common slips, its path
        print(line, file=out)
