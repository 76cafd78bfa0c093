// Hand-worked cases of book/static/mhsa-search.js, the book's search (node --test tests/js/,
// run by tests/test_front.py). The script is a plain script for the page: it is run here in a
// context of its own with no document, where it only sets window.mhsaSearch. Every expected
// value is worked out from the rules the header of mhsa-search.js states, on small made-up
// pages, never taken from a run of the code.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import vm from "node:vm";

const SOURCE = new URL("../../book/static/mhsa-search.js", import.meta.url);
const box = {};
box.window = box;
vm.runInNewContext(readFileSync(SOURCE, "utf8"), box);
const S = box.mhsaSearch;

/** A site of made-up pages: [url, title, [[anchor, heading, [sentences]], ...]] each. */
const site = (...pages) => S.prepare({
  pages: pages.map(([url, title]) => [url, title]),
  sections: pages.flatMap(([, title, sections], i) => [
    [i, "", title, []],
    ...sections.map(([anchor, heading, sentences]) => [i, anchor, heading, sentences]),
  ]),
});
const urls = (hits) => plain(hits.map((h) => h.url));
const plain = (x) => JSON.parse(JSON.stringify(x)); // out of the script's context

test("stems: plurals, -ing, -ed and a final e go; short words stay", () => {
  for (const w of ["mask", "masks", "masking", "masked", "Masks"]) assert.equal(S.stem(w), "mask");
  assert.equal(S.stem("heads"), "head");
  assert.equal(S.stem("queries"), S.stem("query"));
  assert.equal(S.stem("padding"), S.stem("pad"));
  assert.equal(S.stem("scores"), S.stem("score"));
  assert.equal(S.stem("cached"), S.stem("cache"));
  assert.equal(S.stem("tiles"), S.stem("tiled"));
  assert.equal(S.stem("cross"), "cross");
  assert.equal(S.stem("axis"), "axis");
  assert.equal(S.stem("kv"), "kv");
  assert.notEqual(S.stem("head"), S.stem("heat"));
});

test("words: underscores, hyphens and apostrophes separate; where each is", () => {
  const toks = plain(S.tokenize("causal_mask’s Cross-attention"));
  assert.deepEqual(toks.map((t) => t.word), ["causal", "mask", "s", "cross", "attention"]);
  assert.deepEqual([toks[3].start, toks[3].end], [14, 19]);
  assert.deepEqual(plain(S.parseQuery("the causal masks")), ["causal", "mask"]);
  assert.deepEqual(plain(S.parseQuery("the")), ["the"]); // nothing but stopwords: kept
  assert.deepEqual(plain(S.parseQuery("  ")), []);
});

test("a word in the title ranks above one in a heading, above one in the text", () => {
  const index = site(
    ["pages/a.html", "Gamma rays", []],
    ["pages/b.html", "Beta", [["about", "About gamma", ["Nothing here."]]]],
    ["pages/c.html", "Delta", [["more", "More", ["One gamma here."]]]],
    ["pages/d.html", "Epsilon", [["none", "None", ["No match."]]]],
  );
  assert.deepEqual(urls(S.rank(index, "gamma")), ["pages/a.html", "pages/b.html", "pages/c.html"]);
});

test("the page's name (its file) counts as its title", () => {
  const index = site(
    ["pages/b.html", "Beta", [["about", "About gamma", []]]],
    ["pages/03_gamma.html", "Step 3 — Something", []],
  );
  assert.deepEqual(urls(S.rank(index, "gamma")), ["pages/03_gamma.html", "pages/b.html"]);
});

test("a title of many words counts less than a title of one", () => {
  const index = site(
    ["pages/a.html", "Tiled attention with an online softmax", []],
    ["pages/b.html", "Softmax", []],
  );
  assert.deepEqual(urls(S.rank(index, "softmax")), ["pages/b.html", "pages/a.html"]);
});

test("more mentions in the text rank higher", () => {
  const index = site(
    ["pages/a.html", "A", [["x", "X", ["A mask."]]]],
    ["pages/b.html", "B", [["x", "X", ["A mask.", "Masks, masked.", "Masking."]]]],
  );
  assert.deepEqual(urls(S.rank(index, "mask")), ["pages/b.html", "pages/a.html"]);
});

test("the words side by side (a phrase) rank above the same words apart", () => {
  const index = site(
    ["pages/a.html", "A", [["x", "X", ["A mask, in causal order."]]]],
    ["pages/b.html", "B", [["x", "X", ["The causal mask is added."]]]],
  );
  assert.deepEqual(urls(S.rank(index, "causal mask")), ["pages/b.html", "pages/a.html"]);
  // causal_mask, a function's name, is the phrase too
  const named = site(
    ["pages/a.html", "A", [["x", "X", ["A mask, in causal order."]]]],
    ["pages/b.html", "B", [["x", "X", ["Write causal_mask now."]]]],
  );
  assert.deepEqual(urls(S.rank(named, "causal mask")), ["pages/b.html", "pages/a.html"]);
});

test("a page with every word ranks above pages with some, however often", () => {
  const index = site(
    ["pages/a.html", "Mask", [["x", "Masks", ["Mask mask mask mask mask mask."]]]],
    ["pages/b.html", "B", [["x", "X", ["A causal order.", "A mask."]]]],
    ["pages/c.html", "C", [["x", "X", ["Nothing."]]]],
  );
  const hits = S.rank(index, "causal mask");
  assert.deepEqual(urls(hits), ["pages/b.html", "pages/a.html"]);
  assert.deepEqual(plain(hits.map((h) => h.matched)), [2, 1]);
});

test("a word found nowhere matches the words it begins", () => {
  const index = site(["pages/a.html", "A", [["x", "X", ["The softmax of a row."]]]]);
  const [hit] = S.rank(index, "soft");
  assert.equal(hit.url, "pages/a.html");
  assert.equal(hit.sentence, "The softmax of a row.");
  assert.deepEqual(plain(hit.marks), [[4, 11]]);
  assert.deepEqual(plain(S.rank(index, "zebra")), []);
});

test("a hit: its best sentence with the words marked, its section, the other headings", () => {
  const index = site([
    "pages/06_masking.html", "Step 6 — Masking", [
      ["intro", "Why", ["Sometimes a token must not look.", "Causal: only the past."]],
      ["the-causal-mask", "The causal mask", ["Rows are queries."]],
      ["song", "The song", ["Head 1's scores with the causal mask added."]],
      ["try", "Try it: none, causal, padding", ["Switch it."]],
    ],
  ]);
  const [hit] = plain(S.rank(index, "causal mask"));
  assert.equal(hit.sentence, "Head 1's scores with the causal mask added.");
  assert.deepEqual(hit.marks, [[25, 31], [32, 36]]); // "Head 1's scores with the " is 25 characters
  assert.deepEqual(hit.section, { anchor: "song", heading: "The song", marks: [] });
  assert.deepEqual(hit.titleMarks, [[9, 16]]); // "Step 6 — " is 9 characters
  assert.deepEqual(hit.others.map((o) => o.anchor), ["the-causal-mask", "try"]);
  assert.deepEqual(hit.terms, ["mask", "causal"]);
});

test("a page found by its title alone shows its first sentence, unmarked, at its top", () => {
  const index = site(["pages/12_gqa.html", "Grouped-query attention", [["one", "One", ["Share K and V."]]]]);
  const [hit] = plain(S.rank(index, "gqa"));
  assert.equal(hit.sentence, "Share K and V.");
  assert.deepEqual(hit.marks, []);
  assert.equal(hit.section.anchor, "");
});

test("the words to highlight: each as the page writes it, none inside another", () => {
  const index = site(["pages/a.html", "Masking", [["x", "X", ["Masks are masked.", "The mask."]]]]);
  assert.deepEqual(plain(S.rank(index, "masks")[0].terms), ["mask"]);
  const two = site(["pages/a.html", "Masking", [["x", "X", ["Masks."]]]]);
  assert.deepEqual(plain(S.rank(two, "mask")[0].terms), ["masks", "masking"]);
});

test("a snippet marks the ranges; a long sentence is cut at words around its first mark", () => {
  assert.deepEqual(plain(S.snippet("aaa bbb ccc", [[4, 7]])), [
    { text: "aaa ", mark: false },
    { text: "bbb", mark: true },
    { text: " ccc", mark: false },
  ]);
  const words = Array.from({ length: 60 }, (_, i) => `w${String(i).padStart(2, "0")}`);
  const text = words.join(" "); // "w00 w01 … w59": word i starts at 4 i
  const parts = plain(S.snippet(text, [[120, 123]], 40)); // w30, in 40 characters
  assert.equal(parts[0].text, "…");
  assert.equal(parts.at(-1).text, "…");
  const shown = parts.slice(1, -1).map((p) => p.text).join("");
  assert.ok(shown.length <= 40, shown);
  assert.match(shown, /^w\d\d( w\d\d)*$/); // whole words only
  assert.ok(shown.includes("w30"));
  assert.deepEqual(parts.filter((p) => p.mark).map((p) => p.text), ["w30"]);
  // the mark sits a third of the way in: 13 characters (3 words) of context before it
  assert.ok(shown.startsWith("w27 w28 w29 w30"), shown);
});

test("a result's link carries the words to highlight and the section", () => {
  assert.equal(
    S.pageLink("", "pages/06_masking.html", ["causal", "mask"], "the-causal-mask"),
    "pages/06_masking.html?highlight=causal%20mask#the-causal-mask",
  );
  assert.equal(S.pageLink("../", "index.html", [], ""), "../index.html");
});
