// The book's search, with context (book/search.py writes its data after Sphinx runs).
//
// On the search page (search.html?q=…, where the theme's search box leads), this script takes
// the place of Sphinx's search: it loads _static/mhsa-search-data.js (each page's sections and
// their sentences) with a <script> tag, ranks the pages and shows, for each, the sentence that
// matched with the words marked, the section it is in, and links to the sections whose heading
// has the words. A result's link carries ?highlight=, so the page opened marks the words (that
// is Sphinx's sphinx_highlight.js, on every page). A plain script, no fetch: it works from a
// page opened from disk (file://) as from a server.
//
// Ranking (rank): the pages holding every word of the query first, then by score. A word in
// the page's name (its file, 07_softmax) or its title counts most, scaled down by how many
// words the name or title has; in a section heading next (at most 3 headings); in the text by
// the log of its count. The words side by side, as typed (a phrase), add a bonus in each place.
// Words are compared by a light stem (masks, masking, masked → mask); a word found nowhere
// matches the words it begins (soft → softmax). The pure functions are window.mhsaSearch,
// tested by node --test (tests/js/search.test.mjs).
(() => {
  "use strict";

  /** Words a query ignores (unless it has no other). */
  const STOPWORDS = new Set(
    ("a an and are as at be by for from has have how in into is it its not of on or so that "
      + "the their then there these this to was what when where which why with you your").split(" "),
  );
  /** The weights of the ranking (see the header). */
  const WEIGHTS = {
    name: 10, title: 10, heading: 4, headings: 3, text: 2,
    phraseTitle: 10, phraseHeading: 4, phraseHeadings: 2, phraseText: 2,
  };
  /** How many characters of a long sentence a snippet shows around its first match. */
  const SNIPPET = 220;

  /** A word's stem: plural, -ing, -ed and a final e taken off (masking, masks → mask). */
  function stem(word) {
    let w = word.toLowerCase();
    if (w.length <= 3) return w;
    if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`;
    else if (w.endsWith("sses")) w = w.slice(0, -2);
    else if (/[^su]s$/.test(w) && !w.endsWith("is")) w = w.slice(0, -1);
    if (w.endsWith("ing") && w.length >= 6) w = w.slice(0, -3);
    else if (w.endsWith("ed") && w.length >= 5) w = w.slice(0, -2);
    if (/([^aeiouls])\1$/.test(w)) w = w.slice(0, -1); // padd → pad, runn → run
    if (w.endsWith("e") && w.length >= 4) w = w.slice(0, -1);
    return w;
  }

  /** The words of a text with where they are: [{word, stem, start, end}]. Underscores,
   * hyphens and apostrophes separate words (causal_mask, cross-attention, mask's). */
  function tokenize(text) {
    const out = [];
    for (const m of text.matchAll(/[\p{L}\p{N}]+/gu)) {
      out.push({ word: m[0].toLowerCase(), stem: stem(m[0]), start: m.index, end: m.index + m[0].length });
    }
    return out;
  }

  /** The query's words to look for: stems, stopwords left out (kept if nothing else). */
  function parseQuery(query) {
    const words = tokenize(query || "");
    const kept = words.filter((t) => !STOPWORDS.has(t.word));
    return (kept.length ? kept : words).map((t) => t.stem);
  }

  /** The data (window.mhsaSearchData) made ready to search: every text tokenized once. */
  function prepare(data) {
    const vocab = new Set();
    const tok = (text) => {
      const t = tokenize(text);
      for (const x of t) vocab.add(x.stem);
      return t;
    };
    const pages = data.pages.map(([url, title]) => {
      const name = url.split("/").pop().replace(/\.html$/, "");
      return { url, title, name: tok(name), titleToks: tok(title), sections: [] };
    });
    data.sections.forEach(([page, anchor, heading, sentences], order) => {
      pages[page].sections.push({
        anchor, heading, order, headingToks: tok(heading),
        sentences: sentences.map((text) => ({ text, toks: tok(text) })),
      });
    });
    return { pages, vocab };
  }

  /** What each query stem matches: itself where the data has it, else the stems it begins. */
  function matchers(stems, vocab) {
    return stems.map((s) => {
      if (vocab.has(s) || s.length < 3) return new Set([s]);
      return new Set([...vocab].filter((v) => v.startsWith(s)));
    });
  }

  /** How many times each matcher matches in toks, and how many times they match side by
   * side in the query's order (the phrase). */
  function counts(toks, match) {
    const per = match.map(() => 0);
    let phrase = 0;
    toks.forEach((t, i) => {
      match.forEach((m, k) => { if (m.has(t.stem)) per[k] += 1; });
      if (match.length > 1 && match.every((m, k) => i + k < toks.length && m.has(toks[i + k].stem))) phrase += 1;
    });
    return { per, phrase };
  }

  /** Content words of a name or title: not a stopword, not a number. */
  const contentWords = (toks) => Math.max(1, toks.filter((t) => !STOPWORDS.has(t.word) && !/^\d+$/.test(t.word)).length);

  /** How well a sentence shows the query (0: it has none of its words): every word it has
   * counts most, then the words side by side, then how often (at most 3), then a word among
   * its first four (the sentence is about it: "The softmax turns each row …"). */
  function sentenceScore(toks, c, match) {
    const distinct = c.per.filter((x) => x).length;
    if (!distinct) return 0;
    const first = toks.findIndex((t) => match.some((m) => m.has(t.stem)));
    const total = c.per.reduce((a, b) => a + b, 0);
    return 10 * distinct + 5 * (c.phrase ? 1 : 0) + Math.min(total, 3) + (first < 4 ? 3 : 0);
  }

  /** A page's score for the matchers, the number of query words it holds and its best
   * sentence: {score, matched, best: {section, sentence, toks} | null, sections: [headings
   * that match]}. */
  function scorePage(page, match) {
    const W = WEIGHTS;
    const name = counts(page.name, match);
    const title = counts(page.titleToks, match);
    const found = match.map((_, k) => name.per[k] + title.per[k] > 0);
    let score = 0;
    match.forEach((_, k) => {
      if (name.per[k]) score += W.name / Math.sqrt(contentWords(page.name));
      if (title.per[k]) score += W.title / Math.sqrt(contentWords(page.titleToks));
    });
    if (name.phrase || title.phrase) score += W.phraseTitle;
    const headingHits = match.map(() => 0);
    const textHits = match.map(() => 0);
    let headingPhrases = 0;
    let textPhrases = 0;
    const matchingSections = [];
    let best = null;
    page.sections.forEach((section, n) => {
      if (n > 0) { // the first section's heading is the title, counted above
        const h = counts(section.headingToks, match);
        h.per.forEach((c, k) => { if (c) { headingHits[k] += 1; found[k] = true; } });
        headingPhrases += h.phrase ? 1 : 0;
        if (h.per.some((c) => c)) matchingSections.push(section);
      }
      for (const sentence of section.sentences) {
        const c = counts(sentence.toks, match);
        c.per.forEach((x, k) => { textHits[k] += x; if (x) found[k] = true; });
        textPhrases += c.phrase;
        const s = sentenceScore(sentence.toks, c, match);
        if (s && (!best || s > best.score)) best = { score: s, section, sentence };
      }
    });
    match.forEach((_, k) => {
      score += W.heading * Math.min(headingHits[k], W.headings);
      score += W.text * Math.log(1 + textHits[k]);
    });
    score += W.phraseHeading * Math.min(headingPhrases, W.phraseHeadings);
    score += W.phraseText * Math.log(1 + textPhrases);
    const titled = name.per.some((x) => x) || title.per.some((x) => x);
    return { score, matched: found.filter((x) => x).length, best, titled, sections: matchingSections };
  }

  /** The pages that hold any word of the query, best first: [{url, title, titleMarks, name
   * (the page's file, 07_softmax), nameMarks, score, matched, section: {anchor, heading,
   * marks} | null, sentence: string | null, marks: [[start, end]], others: [{anchor,
   * heading}], terms: [words to highlight]}]; marks are [start, end] of the words matched. */
  function rank(index, query) {
    const stems = parseQuery(query);
    if (!stems.length) return [];
    const match = matchers(stems, index.vocab);
    const hits = [];
    for (const page of index.pages) {
      const s = scorePage(page, match);
      if (!s.matched) continue;
      // where the words are: the best sentence's section, else the page's top when its name or
      // title has them, else the first heading that has them; no sentence has them: the
      // section's first sentence (or the page's), unmarked
      const where = s.best ? s.best.section : s.titled ? page.sections[0] : s.sections[0];
      const sentence = s.best ? s.best.sentence
        : [where, ...page.sections].map((x) => x && x.sentences[0]).find((x) => x) || null;
      const marked = (toks) => toks.filter((t) => match.some((m) => m.has(t.stem))).map((t) => [t.start, t.end]);
      hits.push({
        url: page.url, title: page.title, titleMarks: marked(page.titleToks),
        name: page.name.length ? page.url.split("/").pop().replace(/\.html$/, "") : "", nameMarks: marked(page.name),
        score: s.score,
        matched: s.matched,
        section: where && { anchor: where.anchor, heading: where.heading, marks: marked(where.headingToks) },
        sentence: sentence ? sentence.text : null, marks: s.best ? marked(sentence.toks) : [],
        others: s.sections.filter((x) => x !== where).slice(0, 4).map((x) => ({ anchor: x.anchor, heading: x.heading })),
        terms: highlightTerms(page, match),
      });
    }
    return hits.sort((a, b) => b.matched - a.matched || b.score - a.score || a.url.localeCompare(b.url));
  }

  /** The words of the page that matched, as the page writes them, each once and none that
   * holds another (Sphinx highlights a word wherever it appears inside a longer one). */
  function highlightTerms(page, match) {
    const words = new Set();
    const add = (toks) => toks.forEach((t) => { if (match.some((m) => m.has(t.stem))) words.add(t.word); });
    add(page.titleToks);
    for (const s of page.sections) {
      add(s.headingToks);
      s.sentences.forEach((x) => add(x.toks));
    }
    const all = [...words].sort((a, b) => a.length - b.length || a.localeCompare(b));
    return all.filter((w, i) => !all.slice(0, i).some((v) => w.includes(v)));
  }

  /** A sentence as parts to show, [{text, mark}], the marked ranges marked; a sentence longer
   * than `width` cut at word boundaries around its first mark, with "…" where cut. */
  function snippet(text, marks, width = SNIPPET) {
    let from = 0;
    let to = text.length;
    if (text.length > width) {
      const first = marks.length ? marks[0][0] : 0;
      from = Math.max(0, first - Math.floor(width / 3));
      to = Math.min(text.length, from + width);
      from = Math.max(0, to - width);
      if (from > 0) { const sp = text.indexOf(" ", from); if (sp >= 0 && sp < first) from = sp + 1; }
      if (to < text.length) { const sp = text.lastIndexOf(" ", to); if (sp > from) to = sp; }
    }
    const parts = [];
    if (from > 0) parts.push({ text: "…", mark: false });
    let at = from;
    for (const [s, e] of marks) {
      if (e <= from || s >= to) continue;
      const a = Math.max(s, from);
      const b = Math.min(e, to);
      if (a > at) parts.push({ text: text.slice(at, a), mark: false });
      parts.push({ text: text.slice(a, b), mark: true });
      at = b;
    }
    if (at < to) parts.push({ text: text.slice(at, to), mark: false });
    if (to < text.length) parts.push({ text: "…", mark: false });
    return parts;
  }

  /** A result's link: the page, ?highlight= with its words, the section's anchor. */
  function pageLink(root, url, terms, anchor) {
    const query = terms.length ? `?highlight=${encodeURIComponent(terms.join(" "))}` : "";
    return `${root}${url}${query}${anchor ? `#${anchor}` : ""}`;
  }

  const api = { STOPWORDS, WEIGHTS, stem, tokenize, parseQuery, prepare, rank, snippet, highlightTerms, pageLink };
  window.mhsaSearch = api;
  if (typeof document === "undefined") return; // node --test: the pure functions only

  // ------------------------------------------------------------------ the search page

  const root = document.documentElement.dataset.content_root || "";

  function element(tag, className, text) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  /** `el` with `text` in it, the ranges `marks` as <mark> (snippet's parts; no HTML parsed). */
  function fill(el, text, marks, width) {
    for (const part of snippet(text, marks, width)) {
      el.append(part.mark ? element("mark", "", part.text) : document.createTextNode(part.text));
    }
    return el;
  }

  /** Draw the hits for `query` into the results box (Sphinx's #search-results). */
  function show(out, query, hits) {
    out.replaceChildren();
    out.append(element("h2", "", "Search results"));
    const words = `“${query.trim()}”`;
    const all = hits.filter((h) => h.matched === hits[0]?.matched);
    const summary = hits.length
      ? `${hits.length} page${hits.length > 1 ? "s" : ""} mention ${words}${all.length < hits.length ? ` (${all.length} with every word, first)` : ""}.`
      : `No page mentions ${words}. Try fewer words, or another form of one.`;
    out.append(element("p", "search-summary", summary));
    const list = element("ul", "search mhsa-search-results");
    list.setAttribute("role", "list");
    for (const hit of hits) {
      const item = element("li", "mhsa-search-hit");
      const head = element("p", "mhsa-search-head");
      const title = fill(element("a", "mhsa-search-title"), hit.title, hit.titleMarks, Infinity);
      title.href = pageLink(root, hit.url, hit.terms, hit.section ? hit.section.anchor : "");
      head.append(title);
      if (hit.nameMarks.length) { // found by the page's name (its notebook's): shown
        head.append(" ", fill(element("span", "mhsa-search-name"), hit.name, hit.nameMarks, Infinity));
      }
      if (hit.section && hit.section.anchor) {
        const section = element("span", "mhsa-search-section");
        head.append(element("span", "mhsa-search-in", " › "), fill(section, hit.section.heading, hit.section.marks, Infinity));
      }
      item.append(head);
      if (hit.sentence) item.append(fill(element("p", "context mhsa-search-context"), hit.sentence, hit.marks));
      if (hit.others.length) {
        const also = element("p", "mhsa-search-also", "Also: ");
        hit.others.forEach((o, i) => {
          const a = element("a", "", o.heading);
          a.href = pageLink(root, hit.url, hit.terms, o.anchor);
          also.append(...(i ? [document.createTextNode(" · ")] : []), a);
        });
        item.append(also);
      }
      list.append(item);
    }
    out.append(list);
  }

  /** Run the search of the page's ?q= once the data has loaded (a <script> tag: file:// too). */
  function run(query) {
    const out = document.getElementById("search-results");
    if (!out || !query) return;
    out.replaceChildren(element("p", "search-summary", "Searching…"));
    const style = document.createElement("link");
    style.rel = "stylesheet";
    style.href = `${root}_static/mhsa-search.css`;
    document.head.append(style);
    const ready = () => show(out, query, rank(window.mhsaSearchIndex, query));
    if (window.mhsaSearchIndex) { ready(); return; }
    const script = document.createElement("script");
    script.src = `${root}_static/mhsa-search-data.js`;
    script.onload = () => {
      window.mhsaSearchIndex = prepare(window.mhsaSearchData);
      ready();
    };
    script.onerror = () => {
      out.replaceChildren(element("p", "search-summary", `The search's data (${script.src}) could not be loaded: the site was built without book/search.py.`));
    };
    document.head.append(script);
  }

  // ------------------------------------------------------------------ the page opened

  /** Where the words are marked: the page's text, not its contents, widgets, code or math. */
  const SKIP = "script, style, svg, button, select, textarea, mjx-container, .MathJax, "
    + ".mhsa-book-widget, .headerlink, .math, nav";

  /** Mark each of `terms` in the text of `main` (Sphinx's span.highlighted, which the theme
   * styles and Esc removes). Returns how many were marked. */
  function highlight(main, terms) {
    const words = terms.map((t) => t.toLowerCase()).filter((t) => t);
    if (!words.length) return 0;
    const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.parentElement.closest(SKIP) || !n.data.trim()
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    const pattern = new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "gi");
    let marked = 0;
    for (const node of nodes) {
      const text = node.data;
      const parts = [];
      let at = 0;
      for (const m of text.matchAll(pattern)) {
        parts.push(document.createTextNode(text.slice(at, m.index)));
        parts.push(element("span", "highlighted", m[0]));
        at = m.index + m[0].length;
        marked += 1;
      }
      if (!parts.length) continue;
      parts.push(document.createTextNode(text.slice(at)));
      node.replaceWith(...parts);
    }
    return marked;
  }

  /** A page opened from a result (?highlight=…): its words marked in its text once its math
   * is typeset. Sphinx's own highlighter marks the whole page (contents, widgets' pictures,
   * math still to typeset) or, under a theme that loads its search on every page, nothing:
   * the words are taken from the address before it reads them. */
  function highlightOpened() {
    const url = new URL(window.location.href);
    const terms = (url.searchParams.get("highlight") || "").split(/\s+/).filter((t) => t);
    if (!terms.length || document.getElementById("search-results")) return;
    url.searchParams.delete("highlight");
    window.history.replaceState(window.history.state, "", url);
    const mark = () => {
      const main = ["article[role=main]", "[role=main] article", "article", "[role=main]"]
        .map((where) => document.querySelector(where)).find((el) => el);
      document.documentElement.dataset.mhsaHighlighted = String(highlight(main || document.body, terms));
    };
    const start = () => {
      const mathjax = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
      (mathjax || Promise.resolve()).then(mark, mark);
    };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
    else start();
  }
  highlightOpened();

  /** Take the place of Sphinx's search (searchtools.js's Search), whichever script runs
   * first; a page without Sphinx's search but with a results box is searched at load. */
  const takeOver = () => {
    if (typeof Search === "undefined" || Search.mhsa) return typeof Search !== "undefined";
    Search.performSearch = run; // Search.init calls it with ?q= once the page is parsed
    Search.mhsa = true;
    return true;
  };
  if (!takeOver()) {
    document.addEventListener("DOMContentLoaded", () => {
      if (takeOver()) return;
      const query = new URLSearchParams(window.location.search).get("q");
      if (query && document.getElementById("search-results")) run(query);
    });
  }
})();
