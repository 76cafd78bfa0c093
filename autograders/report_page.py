"""The class report as one HTML page: offline, no script, every student's text escaped.

:func:`page` turns :func:`autograders.report.build`'s dict into the page.
Everything in it is in the file: the style, and the figures as inline SVG
drawn by matplotlib (:func:`outcome_figure`, :func:`score_figure`). Its
content security policy allows no script, no request and no form, so
neither a student's text nor a figure can make the browser fetch anything.
Every text that comes from a run's records (student ids, notes, sentences)
goes through :func:`html.escape`; every link is a relative path to the
student's feedback page with each part percent-encoded.
"""

from __future__ import annotations

import html
import io
from urllib.parse import quote

__all__ = ["COLOURS", "CSP", "outcome_figure", "page", "score_figure"]

#: The page's content security policy: inline style and inline images only.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)
#: The outcomes of the picture of the class, in order, and their colours (colour-blind safe).
COLOURS = {
    "passed": "#1b9e77",
    "named slip": "#d95f02",
    "unnamed failure": "#7570b3",
    "not attempted": "#c8c8c8",
}

_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1300px;
padding:0 24px 48px;color:#222;background:#fff}
h1{font-size:1.6em;margin:.8em 0 .2em}h2{font-size:1.25em;margin:1.6em 0 .4em;
border-bottom:1px solid #ddd;padding-bottom:.2em}h3{font-size:1.05em;margin:1.2em 0 .3em}
.lede{color:#555;margin:0 0 1em}.cards{display:grid;grid-template-columns:repeat(3,1fr);gap:14px}
.card{border:1px solid #ddd;border-left:6px solid #d95f02;border-radius:6px;padding:10px 14px;
background:#fffaf5}.card .n{font-size:1.5em;font-weight:600}.card .s{margin:.3em 0}
.card .w{color:#555;font-size:.92em}table{border-collapse:collapse;width:100%;margin:.4em 0 1em}
th,td{text-align:left;vertical-align:top;padding:4px 8px;border-bottom:1px solid #eee}
th{background:#f6f6f6;font-weight:600}td.num{text-align:right;white-space:nowrap}
.who a{margin-right:.45em;white-space:nowrap}.id{font-family:ui-monospace,monospace;
font-size:.8em;color:#777}.figs{display:flex;gap:20px;flex-wrap:wrap;align-items:flex-start}
.figs svg{max-width:100%;height:auto}details summary{cursor:pointer;color:#555}
.kind{white-space:nowrap;font-weight:600}.muted{color:#777}
"""


def _e(text) -> str:
    """``text`` escaped for HTML text and attribute values alike."""
    return html.escape(str(text), quote=True)


def _feedback(assignment: str, student: str, notebook: str) -> str:
    """The relative link from the report to a student's feedback page of ``notebook``."""
    parts = (student, assignment, f"{notebook}.html")
    return "../../feedback/" + "/".join(quote(p, safe="") for p in parts)


def _students(report: dict, students: list, notebook: str | None) -> str:
    """Student ids, each linked to its feedback page of ``notebook`` (escaped)."""
    links = []
    for s in students:
        if notebook:
            href = _feedback(report["assignment"], s, notebook)
            links.append(f'<a href="{_e(href)}">{_e(s)}</a>')
        else:
            links.append(f"<span>{_e(s)}</span>")
    inner = " ".join(links)
    if len(students) > 15:
        return f'<details class="who"><summary>{len(students)} students</summary>{inner}</details>'
    return f'<span class="who">{inner}</span>'


def _svg(fig) -> str:
    """A matplotlib figure as inline SVG (no XML prologue, no date)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def outcome_figure(report: dict) -> str:
    """The class at a glance: one bar per exercise, its students by outcome; inline SVG."""
    from matplotlib.figure import Figure

    exercises = report["exercises"]
    labels = [f"{e['notebook'][:2]} {e['exercise']}" for e in exercises]
    parts = {
        "passed": [e["counts"]["passed"] for e in exercises],
        "named slip": [sum(s["count"] for s in e["slips"]) for e in exercises],
        "unnamed failure": [e["unnamed"]["count"] for e in exercises],
        "not attempted": [e["counts"]["not attempted"] for e in exercises],
    }
    fig = Figure(figsize=(7.2, 0.26 * len(exercises) + 1.3))
    ax = fig.add_subplot()
    left = [0] * len(exercises)
    rows = list(range(len(exercises)))[::-1]
    for name, values in parts.items():
        ax.barh(rows, values, left=left, color=COLOURS[name], label=name, height=0.75)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_yticks(rows, labels, fontsize=8)
    ax.set_xlim(0, max(1, report["students"]))
    ax.set_xlabel("students")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(ncols=4, fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False)
    fig.tight_layout()
    return _svg(fig)


def score_figure(report: dict) -> str:
    """The students' total scores as a histogram; inline SVG."""
    from matplotlib.figure import Figure

    scores = list(report["totals"].values())
    top = float(report["max_score"] or 1)
    fig = Figure(figsize=(4.4, 2.8))
    ax = fig.add_subplot()
    ax.hist(scores, bins=10, range=(0, top), color="#4c78a8", edgecolor="white")
    ax.set_xlabel(f"total score (out of {top:g})")
    ax.set_ylabel("students")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    return _svg(fig)


def _top(report: dict) -> str:
    if not report["top"]:
        return "<p>No check named a slip: every failure, if any, is counted as unnamed below.</p>"
    cards = []
    for k, slip in enumerate(report["top"], 1):
        where = "; ".join(
            f"{_e(w['notebook'])} · {_e(w['exercise'])}, section “{_e(w['section'])}” "
            f"({w['count']})"
            for w in slip["where"][:3]
        )
        if len(slip["where"]) > 3:
            where += f"; and {len(slip['where']) - 3} more exercises"
        first = slip["where"][0]["notebook"] if slip["where"] else None
        cards.append(
            f'<div class="card"><div class="n">{k}. {slip["count"]} students '
            f'({slip["share"]:.0%})</div><div class="s">{_e(slip["sentence"])}</div>'
            f'<div class="w">{where}</div><div class="id">{_e(slip["id"])}</div>'
            f"<div>{_students(report, slip['students'], first)}</div></div>"
        )
    return f'<div class="cards">{"".join(cards)}</div>'


def _exercise(report: dict, e: dict) -> str:
    c = e["counts"]
    scores = " · ".join(f"{_e(k)}: {v}" for k, v in e["scores"].items())
    head = (
        f'<h3 id="{_e(e["exercise"])}">{_e(e["notebook"])} · {_e(e["exercise"])} '
        f'<span class="muted">({_e(e["section"])}, {e["points"]} points)</span></h3>'
        f"<p>passed <b>{c['passed']}</b> · failed visibly <b>{c['failed']}</b> · failed only "
        f"the hidden tests <b>{c['hidden']}</b> · not attempted <b>{c['not attempted']}</b>"
        f' · <span class="muted">scores: {scores}</span></p>'
    )
    if not e["slips"] and not e["unnamed"]["count"]:
        return head
    body = []
    for slip in e["slips"]:
        hidden = f" ({slip['hidden']} in the hidden tests only)" if slip["hidden"] else ""
        body.append(
            f'<tr><td class="num">{slip["count"]}</td><td class="num">{slip["share"]:.0%}</td>'
            f'<td>{_e(slip["sentence"])}{hidden}<div class="id">{_e(slip["id"])}</div></td>'
            f"<td>{_students(report, slip['students'], e['notebook'])}</td></tr>"
        )
    u = e["unnamed"]
    if u["count"]:
        body.append(
            f'<tr><td class="num">{u["count"]}</td>'
            f'<td class="num">{u["count"] / max(1, report["students"]):.0%}</td>'
            '<td class="muted">failures no check could name (a wrong entry, an exception of '
            "the student's own, an unreadable notebook)</td>"
            f"<td>{_students(report, u['students'], e['notebook'])}</td></tr>"
        )
    return (
        head + "<table><tr><th>students</th><th>share</th><th>the slip, in the course's words"
        "</th><th>who</th></tr>" + "".join(body) + "</table>"
    )


def _help(report: dict) -> str:
    if not report["help"]:
        return "<p>Nobody: every student passed at least half of the exercises.</p>"
    rows = "".join(
        f"<tr><td>{_students(report, [h['student']], None)}</td>"
        f"<td>{'<br>'.join(_e(w) for w in h['why'])}</td></tr>"
        for h in report["help"]
    )
    return f"<table><tr><th>student</th><th>why</th></tr>{rows}</table>"


def _submissions(report: dict) -> str:
    if not report["submissions"]:
        return "<p>None: every submission was collected, on time and within its budget.</p>"
    rows = "".join(
        f'<tr><td class="kind">{_e(s["kind"])}</td>'
        f"<td>{_e(s['student']) if s['student'] is not None else '—'}</td>"
        f"<td>{_e(s['reason'])}</td></tr>"
        for s in report["submissions"]
    )
    return f"<table><tr><th>what</th><th>student</th><th>reason</th></tr>{rows}</table>"


def page(report: dict) -> str:
    """The class report's page: one self-contained, offline HTML document."""
    named = sum(sum(s["count"] for s in e["slips"]) for e in report["exercises"])
    unnamed = sum(e["unnamed"]["count"] for e in report["exercises"])
    title = f"Class report: {report['assignment']}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_e(title)}</h1>"
        f'<p class="lede">{report["students"]} students · {len(report["exercises"])} '
        f"exercises · {named} failures named by the checks, {unnamed} not named · "
        f"{report['runs']} grade run(s) merged (each student's latest) · {_e(report['generated'])}"
        ". Each student id links to that student's feedback page.</p>"
        '<h2 id="top">The three slips most worth a lecture</h2>'
        '<p class="lede">Counted by students across the assignment; the same slip in several '
        "exercises counts each student once.</p>"
        f"{_top(report)}"
        '<h2 id="glance">The class at a glance</h2>'
        f'<div class="figs"><figure>{outcome_figure(report)}</figure>'
        f"<figure>{score_figure(report)}</figure></div>"
        '<h2 id="help">Students who may need help</h2>'
        f"{_help(report)}"
        '<h2 id="submissions">Submissions to look at</h2>'
        '<p class="lede">Late, over the time budget, not collected, refused, not graded, or '
        "with a note from grading.</p>"
        f"{_submissions(report)}"
        '<h2 id="exercises">Exercise by exercise</h2>'
        + "".join(_exercise(report, e) for e in report["exercises"])
        + "</body></html>\n"
    )
