"""The search's data (book/search.py): a built page read as its sections and sentences, inline
math as plain text, the code cells and widgets left out; the script it writes.

Hand-written pages in Sphinx's shape (``<section id>``, a heading with its ``#`` link, myst-nb's
``div.cell``); the built site's data is checked in Chromium by tests/test_site.py.
"""

from __future__ import annotations

import json

import pytest

from book import search

SECTION = '<section id="{id}"><{h}>{title}<a class="headerlink" href="#{id}">#</a></{h}>{body}'

PAGE = """<html><head><title>x</title><script>var x = "causal";</script></head><body>
<nav class="bd-docs-nav"><ul><li><p>Step 6 — Masking</p></li></ul></nav>
<main role="main"><article>
<section class="tex2jax_ignore" id="step-6-masking">
<h1>Step 6 — Masking<a class="headerlink" href="#step-6-masking">#</a></h1>
<p>Sometimes a token must not look at some others. Scores are
<span class="math notranslate nohighlight">\\(Z = QK^\\top/\\sqrt{d_k}\\)</span>, e.g. the first
0.5 of them.</p>
<ul><li><p>causal: only the past;</p></li><li><p>padding: only real tokens.</p></li></ul>
<div class="mhsa-book-links"><p>Download the notebook.</p></div>
<div class="cell docutils container"><div class="cell_input"><pre>def causal_mask(): pass</pre>
</div><div class="cell_output"><p>printed output</p></div></div>
<section id="the-causal-mask">
<h2>The causal mask<a class="headerlink" href="#the-causal-mask">#</a></h2>
<div class="math notranslate nohighlight">\\[M_{ij} = -\\infty\\]</div>
<p>Rows are queries <span class="math notranslate nohighlight">\\(i\\)</span>: the
<span class="math notranslate nohighlight">\\(-\\infty\\)</span> fill the triangle.</p>
<section id="exercise-6-1-causal-mask">
<h3>Exercise 6.1 — <code class="docutils literal"><span class="pre">causal_mask</span></code>
<a class="headerlink" href="#exercise-6-1-causal-mask">#</a></h3>
<div class="cell docutils container"><pre>raise NotImplementedError()</pre></div>
</section>
<p>Back in the causal mask's section.</p>
</section>
<section id="try-it"><h3>Try it<a class="headerlink" href="#try-it">#</a></h3>
<div class="mhsa-book-widget" data-entry="explorer.js"><p class="mhsa-book-static">The picture.</p>
<script type="application/json">{"traits": 1}</script></div>
<table><tr><th><p>notebook</p></th><td><p>the score matrix
<span class="math notranslate nohighlight">\\(Z\\)</span></p></td></tr></table>
</section>
</section>
</article></main></body></html>"""


@pytest.mark.parametrize(
    ("tex", "text"),
    [
        (r"\(Z = QK^\top/\sqrt{d_k}\)", "Z = QKᵀ/√d_k"),
        (r"-\infty", "−∞"),
        (r"R' = \operatorname{softmax}(R/\sqrt{7})", "R' = softmax(R/√7)"),
        (r"\frac{a}{b} + \frac{x + 1}{2}", "a/b + (x + 1)/2"),
        (r"d_{model} = 4", "d_model = 4"),
        (r"e^{m - m'}", "e^(m − m')"),
        (r"x_0, x_1, \ldots, x_{T-1}", "x_0, x_1, …, x_(T−1)"),
        (r"j < \text{length}", "j < length"),
        (r"dz_i = \sum_j dA_j\, \partial a_j / \partial z_i", "dz_i = Σ_j dA_j ∂a_j / ∂z_i"),
        (r"j \le i \quad\text{(past)}", "j ≤ i (past)"),
        (r"\sqrt{T}", "√T"),
        (r"\weird{x}", "weirdx"),
    ],
)
def test_inline_math_reads_as_plain_text(tex, text):
    assert search.tex_to_text(tex) == text


def test_a_paragraph_is_cut_into_sentences_at_their_ends_only():
    text = "Scores are small, e.g. the first 0.5 of them.  Why?\nBecause. (Not here.) “Quoted.”"
    assert search.sentences(text) == [
        "Scores are small, e.g. the first 0.5 of them.",
        "Why?",
        "Because.",
        "(Not here.)",
        "“Quoted.”",
    ]
    assert search.sentences("  ") == []


def test_a_page_reads_as_its_sections_with_the_prose_in_each():
    found = search.page_sections(PAGE)
    assert [(s.anchor, s.heading) for s in found] == [
        ("step-6-masking", "Step 6 — Masking"),
        ("the-causal-mask", "The causal mask"),
        ("exercise-6-1-causal-mask", "Exercise 6.1 — causal_mask"),
        ("try-it", "Try it"),
    ]
    assert found[0].sentences == [
        "Sometimes a token must not look at some others.",
        "Scores are Z = QKᵀ/√d_k, e.g. the first 0.5 of them.",
        "causal: only the past;",
        "padding: only real tokens.",
    ]
    assert found[1].sentences == [
        "Rows are queries i: the −∞ fill the triangle.",
        "Back in the causal mask's section.",
    ]
    assert found[2].sentences == []  # a code cell only
    assert found[3].sentences == ["notebook", "the score matrix Z"]


def test_code_widgets_links_box_navigation_and_display_math_are_left_out():
    text = json.dumps([s.__dict__ for s in search.page_sections(PAGE)])
    for absent in ("def causal_mask", "printed output", "NotImplementedError", "The picture",
                   "traits", "Download", "M_", "var x", "#"):  # fmt: skip
        assert absent not in text, absent


def _site(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (tmp_path / "_static").mkdir()
    (tmp_path / "index.html").write_text(SECTION.format(id="top", h="h1", title="Home", body=""))
    (pages / "b.html").write_text(
        SECTION.format(id="b", h="h1", title="Bee", body="<p>A bee. Two.</p>")
        + SECTION.format(id="more", h="h2", title="More", body="<p>Three.</p></section>")
        + "</section>"
    )
    ant = SECTION.format(id="a", h="h1", title="Ant", body="")
    (pages / "a.html").write_text(ant + "</section>")
    for skipped in ("search.html", "genindex.html", "_static/x.html"):
        (tmp_path / skipped).write_text(SECTION.format(id="s", h="h1", title="No", body=""))
    return tmp_path


def test_the_data_has_every_page_front_page_first_and_its_sections(tmp_path):
    got = search.data(_site(tmp_path))
    assert got == {
        "pages": [["index.html", "Home"], ["pages/a.html", "Ant"], ["pages/b.html", "Bee"]],
        "sections": [
            [0, "", "Home", []],
            [1, "", "Ant", []],
            [2, "", "Bee", ["A bee.", "Two."]],
            [2, "more", "More", ["Three."]],
        ],
    }


def test_the_data_is_a_plain_script_setting_one_global(tmp_path):
    site = _site(tmp_path)
    said = search.write(site)
    code = (site / search.DATA).read_text(encoding="utf-8")
    prefix = f"window.{search.GLOBAL} = "
    assert code.startswith(prefix) and code.endswith(";\n"), code[:80]
    assert json.loads(code[len(prefix) : -2]) == search.data(site)
    assert said.startswith("search data: 3 pages, 4 sections, 3 sentences, 0 kB ("), said
