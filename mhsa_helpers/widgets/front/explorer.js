// The explorer (anywidget): every step, query and view of one data state drawn in the page.
// The kernel (mhsa_helpers/widgets/explorer.py) or the book (book/static/mhsa-widgets.js)
// sends the arrays of one state {example, layer, heads, mask, length} and the words for each step;
// a change of step, query or view is answered here, without the kernel.
import { SIZE, decode, fmt, ink, scaleOf } from "./picture.js";
import { canvas, grid, interact, legend, measure, panel, scalesFor, svgEl } from "./draw.js";
import { button, control, frame, room, screenHeight, show } from "./frame.js";

export const STEPS = [
  "1. Input embeddings X",
  "2. Learnable parameters W_Q, W_K, W_V, W_O",
  "3. Queries, keys, values: Q = X\u00b7W_Q, K = X\u00b7W_K, V = X\u00b7W_V",
  "4. Dividing into heads",
  "5. Scores Z = Q\u00b7K\u1d40/\u221ad_k, per head",
  "6. Masking: Z + M",
  "7. Attention A = softmax(Z + M), per head",
  "8. Output of each head: A\u00b7V",
  "9. Concatenate the heads, project with W_O",
];
const MASKS = [["none", "none"], ["causal", "causal"], ["padding", "padding"]];
const MASK_TIPS = [
  "no mask: every query reads every key",
  "causal: a query reads only itself and the keys before it",
  "padding: keys past the sentence's length are blocked",
];

/** Head `i`'s blocks of columns in a (T, h·d_k) matrix. */
const blocksOf = (h, dk, colours) => Array.from({ length: h }, (_, i) => [i * dk, (i + 1) * dk, colours[i % colours.length], `head ${i + 1}`]);
const hstack = (Ms) => Ms[0].map((_, r) => Ms.flatMap((M) => M[r]));

/** Step `step`'s picture of data `d` (decoded arrays `a`) with query `q`: panels and scales. */
export function stepPicture(d, a, step, q, style) {
  const { tokens: tok, features: feat, h } = d;
  const dk = feat.length / h;
  const qk = ["query", "key"];
  const heads = Array.from({ length: h }, (_, i) => [`head ${i + 1}`, style.heads[i % style.heads.length]]);
  const P = (M, title, rows, cols, kinds, more = {}) => ({ M, title, rows, cols, kinds, links: more.links || linksOf(kinds), highlight: q, meaning: d.meaning[more.m] || more.meaning || "", ...more });
  let panels, fixed = null, bar = "value";
  if (step === 1) panels = [P(a.X, "X (input)", tok, feat, ["token", "column"], { meaning: d.meaning.X })], bar = "X";
  else if (step === 2) {
    panels = ["W_Q", "W_K", "W_V", "W_O"].map((n) => P(a[n], n, feat, feat, ["feature", "column"], { highlight: null, meaning: d.meaning.W }));
    bar = "W";
  } else if (step === 3 || step === 4) {
    panels = ["Q", "K", "V"].map((n) => P(step === 4 ? hstack(a[`${n}h`]) : a[n], n, tok, feat, ["token", "column"], { m: n, blocks: step === 4 ? blocksOf(h, dk, style.heads) : [] }));
    bar = "Q, K, V";
  } else if (step === 5) {
    panels = heads.map(([t, c], i) => P(a.Z[i], `Z, ${t}`, tok, tok, qk, { colour: c, m: "Z" })), bar = "score";
  } else if (step === 6) {
    panels = [P(a.M, "mask M", tok, tok, qk, { neutral: true, m: "M" }), ...heads.map(([t, c], i) => P(a.ZM[i], `Z + M, ${t}`, tok, tok, qk, { colour: c, m: "ZM" }))];
    bar = "score";
  } else if (step === 7) {
    const blocked = a.M.map((row) => row.map((v) => v === -Infinity));
    panels = heads.map(([t, c], i) => P(a.A[i], `A, ${t}`, tok, tok, qk, { colour: c, blocked, m: "A" }));
    fixed = [0, 1], bar = "weight";
  } else if (step === 8) {
    const cols = Array.from({ length: dk }, (_, j) => `v${j + 1}`);
    panels = heads.map(([t, c], i) => P(a.heads[i], `A\u00b7V, ${t}`, tok, cols, ["token", "value column"], { colour: c, m: "AV" }));
  } else {
    panels = [
      P(a.concat, "concatenated heads", tok, feat, ["token", "column"], { blocks: blocksOf(h, dk, style.heads), m: "concat" }),
      P(a.out, "output = concat \u00b7 W_O", tok, feat, ["token", "column"], { m: "out" }),
      P([a.X[q], a.out[q]], `'${tok[q]}': input vs output`, ["input", "output"], feat, ["vector", "column"], { highlight: null, links: null }),
    ];
  }
  return { label: `${d.title}, step ${step}`, panels, scales: scalesFor(panels, fixed, bar) };
}

/** Link prefixes of a panel's rows and columns from what they are. */
function linksOf(kinds) {
  const k = { query: "q", key: "k", token: "t" };
  return [k[kinds[0]] || null, k[kinds[1]] || null];
}

/** The query's view's measures in room `r` ({width, height}): its Q, K, V cells `s`, the
 * heads' columns `ncol`, the space between two keys' lines `ls`, its width and height. */
export function queryMeasure(d, r) {
  const T = d.tokens.length, nf = d.features.length, h = d.h;
  const ncol = Math.min(h, Math.max(1, Math.floor(r.width / 220))), nrow = Math.ceil(h / ncol);
  const free = r.height - 58 - 64 - 40; // Q, K, V's title band, their column labels, the key
  let s = Math.min(44, (r.width - 20 - 3 * (SIZE.labels + SIZE.gap)) / (3 * nf));
  s = Math.max(12, Math.min(s, (free - nrow * (28 + 15 * T)) / T)); // no numbers: tooltips
  // a long sequence (the induction model's 16 tokens): Q, K, V give way, down to 6 px cells,
  // before the keys' lines (at least 12 px apart: their 11 px words) run off the screen
  s = Math.min(s, Math.max(6, (free - nrow * (28 + 12 * T)) / T));
  const ls = Math.max(12, Math.min(15, ((free - T * s) / nrow - 28) / T));
  const bandH = 28 + ls * T, top = 58 + T * s + 64;
  const width = Math.max(r.width, 10 + 3 * (nf * s + SIZE.labels + SIZE.gap), ncol * 220);
  return { s, ncol, nrow, bandH, top, width: Math.ceil(width), height: Math.ceil(top + nrow * bandH + 40) };
}

/** The query's view: Q, K, V by head, then for each head a line from the query to every key
 * as wide as its weight (a blocked key dashed grey, no number). */
export function queryPicture(d, a, q, r, style) {
  const { tokens: tok, features: feat, h } = d;
  const T = tok.length, dk = feat.length / h;
  const { s, ncol, bandH, top, width, height } = queryMeasure(d, r);
  const qkv = ["Q", "K", "V"].map((n) => ({ M: a[n], title: n, rows: tok, cols: feat, kinds: ["token", "column"], highlight: q, blocks: blocksOf(h, dk, style.heads), meaning: d.meaning[n], links: [n === "Q" ? "q" : "k", null] }));
  const svg = canvas(width, height, `${d.title}, the query's view`, style);
  qkv.forEach((p, k) => panel(svg, p, 10 + SIZE.labels + k * (feat.length * s + SIZE.labels + SIZE.gap), 58, s, scaleOf([p.M]), style, { digits: null, rowLabels: true, colLabels: true }));
  const pw = (width - 40) / ncol, kinds = new Set();
  for (let i = 0; i < h; i++) {
    const colour = style.heads[i % style.heads.length];
    const x0 = 20 + (i % ncol) * pw, y0 = top + Math.floor(i / ncol) * bandH;
    const xq = x0 + 8, xk = x0 + pw * 0.45;
    const ys = tok.map((_, j) => y0 + 22 + ((bandH - 28) * (j + 0.5)) / T);
    const yq = (ys[0] + ys[T - 1]) / 2;
    svgEl("rect", { x: x0, y: y0 - 4, width: pw - 12, height: 18, rx: 3, fill: colour }, svg);
    svgEl("text", { x: x0 + 6, y: y0 + 9, "font-size": 12, "font-weight": "bold", fill: ink(colour) }, svg, `head ${i + 1}: ${tok[q]} attends to`);
    const start = xq + 7.5 * tok[q].length + 12;
    tok.forEach((t, j) => {
      const w = a.A[i][q][j], z = a.ZM[i][q][j], blocked = z === -Infinity;
      if (Number.isNaN(w)) kinds.add("nan");
      const where = `head ${i + 1}: query '${tok[q]}' \u2192 key '${t}'`;
      const tip = blocked ? [`${where}: ${style.words.blocked}`] : [`${where}: weight ${fmt(w, 4)}, score ${fmt(z, 4)}`, `the share of the value row of '${t}' in the output of '${tok[q]}'`];
      const g = svgEl("g", { class: "link", tabindex: 0, "aria-label": tip.join(". ") }, svg);
      const ok = !blocked && Number.isFinite(w);
      svgEl("line", { class: "mhsa-attend", "data-weight": ok ? w.toFixed(4) : "", x1: start, y1: yq, x2: xk, y2: ys[j], stroke: blocked ? "#999999" : ok ? colour : style.nan, "stroke-width": ok ? 0.5 + 9 * Math.max(w, 0) : 1, "stroke-linecap": "round", "stroke-dasharray": ok ? null : "3 3" }, g);
      const text = svgEl("text", { x: xk + 6, y: ys[j] + 4, "font-size": 11, fill: blocked ? "#777" : "#000" }, g, `${t} `);
      svgEl("tspan", blocked ? { "font-style": "italic" } : { "font-weight": "bold" }, text, blocked ? "blocked" : fmt(w, 2));
      if (!blocked) svgEl("tspan", { fill: "#666" }, text, ` z ${fmt(z, 2)}`);
      g.tip = tip, g.box = [xk, ys[j] - 11, 7.5 * t.length + 90, 15], g.keys = [`q${q}h${i + 1}`, `k${j}h${i + 1}`];
      for (const k of g.keys) (svg.links.get(k) || svg.links.set(k, []).get(k)).push(g);
    });
    svgEl("text", { x: xq, y: yq + 4, "font-size": 12, "font-weight": "bold" }, svg, tok[q]);
  }
  svgEl("text", { x: 20, y: height - 12, "font-size": 12 }, svg, "line width = the query's attention weight for that key; z = its score (Z + M); dashed grey, no number = blocked by the mask");
  legend(svg, kinds, height - 30, style);
  return svg;
}

export default {
  render({ model, el }) {
    const f = frame(el);
    const shown = new Set(model.get("controls"));
    const ui = {};
    const state = () => ({ ...model.get("state") });
    const wait = document.createElement("div"); // said where no kernel answers (a reopened notebook)
    wait.className = "warn";
    wait.hidden = true;
    wait.textContent = "No kernel answered: run this cell again to change the example, layer, heads, mask or length (step, query and view work without it).";
    f.controls.after(wait);
    const ask = (key, value) => {
      const s = state();
      s[key] = value;
      const asked = model.get("data");
      model.set("state", s);
      model.save_changes();
      setTimeout(() => { if (model.get("data") === asked) wait.hidden = false; }, 3000);
    };
    let queued = false; // changes that come together (a kernel's arrays and words) draw once
    const later = () => { if (!queued) queued = true, queueMicrotask(() => { queued = false; draw(); }); };
    const set = (key, value) => { model.set(key, value); model.save_changes(); later(); };
    const add = (spec, input, row = f.controls) => { ui[spec.name] = control(spec, input); if (shown.has(spec.name)) row.appendChild(ui[spec.name]); };
    add({ name: "example", label: "example", kind: "select" }, (v) => ask("example", v));
    add({ name: "layer", label: "layer", kind: "toggle" }, (v) => ask("layer", Number(v)));
    add({ name: "heads", label: "heads", kind: "toggle" }, (v) => ask("heads", Number(v)));
    add({ name: "mask", label: "mask", kind: "toggle", options: MASKS, tips: MASK_TIPS }, (v) => ask("mask", v));
    add({ name: "length", label: "length", kind: "slider" }, (v) => ask("length", Number(v)));
    if (shown.has("mask")) f.controls.appendChild(ui.length);
    add({ name: "query", label: "query", kind: "select" }, (v) => set("query", Number(v)));
    add({ name: "view", label: "view", kind: "toggle", options: [["matrices", "matrices"], ["query", "query"]] }, (v) => set("view", v));
    const prev = button("\u25c0 Prev", () => set("step", Math.max(1, model.get("step") - 1)));
    const next = button("Next \u25b6", () => set("step", Math.min(9, model.get("step") + 1)));
    add({ name: "step", label: "step", kind: "slider", options: STEPS.map((_, i) => [String(i + 1), i + 1]) }, (v) => set("step", Number(v)));
    if (shown.has("step")) { // Prev, Next and the slider wrap as one on a narrow screen
      const group = document.createElement("span");
      group.className = "mhsa-control mhsa-stepper";
      ui.step.replaceWith(group);
      group.append(prev, next, ui.step);
    }
    const anyway = control({ name: "anyway", label: "draw my failing functions anyway", kind: "check" }, (v) => { model.set("anyway", v); model.save_changes(); });
    f.side.appendChild(anyway);
    let cache = null; // the decoded arrays of the data state drawn
    let fit = null; // the picture's room for this data state at this width: steady while stepping

    /** The title, status and notes of step `step` (or the query's view) with query `q`. */
    function say(d, view, step, q) {
      const st = d.state || model.get("state"), texts = model.get("texts");
      const words = texts[(view === "query" ? 7 : step) - 1] || { status: "", notes: [] };
      f.status.innerHTML = words.status;
      f.status.title = words.full || "";
      f.notes.innerHTML = words.notes.join("<br>");
      const h = d.h, mask = st.mask === "padding" ? `padding (length ${st.length} of ${d.tokens.length})` : st.mask;
      const layers = (d.layer_choices || [1]).length, layer = layers > 1 ? ` \u00b7 layer ${st.layer} of ${layers}` : "";
      const b = document.createElement("b");
      b.textContent = view === "query" ? "The query's view (steps 3\u20137)" : `Step ${STEPS[step - 1]}`;
      f.title.replaceChildren(b, `${layer} \u00b7 h = ${h} head${h > 1 ? "s" : ""} of d_k = ${d.features.length / h} \u00b7 mask: ${mask} \u00b7 query: '${d.tokens[q]}'`);
    }

    /** The room of this data state: the words of every step tried once, so that the tallest
     * keep their place; the picture's box as tall as the tallest picture that fits. */
    function prepare(d, a, q, style) {
      const parts = [f.title, f.status.parentElement, f.notes];
      parts.forEach((p) => { p.style.minHeight = ""; });
      f.box.style.minHeight = "";
      const most = parts.map(() => 0);
      for (let k = 1; k <= 10; k++) {
        say(d, k > 9 ? "query" : "matrices", Math.min(k, 9), q);
        parts.forEach((p, i) => { most[i] = Math.max(most[i], p.offsetHeight); });
      }
      parts.forEach((p, i) => { p.style.minHeight = `${most[i]}px`; });
      const sizes = (r) => [queryMeasure(d, r), ...STEPS.map((_, i) => measure(stepPicture(d, a, i + 1, q, style), r))];
      f.scroll.reserved = false;
      f.scroll.hidden = true;
      let r = room(f), all = sizes(r);
      if (all.some((m) => m.width > r.width + 1)) { // some picture scrolls: its sign keeps its place
        f.scroll.reserved = true;
        f.scroll.hidden = false;
        r = room(f), all = sizes(r);
      }
      // each picture fits the room; the box keeps the tallest's height whichever is shown
      f.box.style.minHeight = `${Math.min(r.height, Math.max(...all.map((m) => m.total || m.height)))}px`;
      return { width: r.width, height: r.height, screen: screenHeight(f), box: f.box.clientWidth };
    }

    function draw() {
      const d = model.get("data"), texts = model.get("texts");
      const st = d && (d.state || model.get("state")); // what the picture shows, not what was asked
      if (!d || !d.arrays) return;
      if (!cache || cache.d !== d || cache.texts !== texts) cache = { d, texts, a: decode(d.arrays) }, fit = null, wait.hidden = true;
      const a = cache.a, style = model.get("look");
      const view = model.get("view"), step = model.get("step");
      const q = Math.min(model.get("query"), d.tokens.length - 1);
      const seen = {};
      const tokens = d.tokens.map((t, i) => [(seen[t] = (seen[t] || 0) + 1) > 1 ? `${t} (${i + 1})` : t, i]);
      ui.example.set(st.example, d.examples);
      const layers = d.layer_choices || [1];
      ui.layer.set(st.layer || 1, layers.map((n) => [String(n), n]));
      ui.layer.hidden = layers.length < 2; // one layer: nothing to choose
      ui.heads.set(st.heads, d.head_choices.map((n) => [String(n), n]));
      ui.mask.set(st.mask, MASKS);
      ui.length.set(st.length, Array.from({ length: d.tokens.length }, (_, i) => [String(i + 1), i + 1]), st.mask !== "padding");
      ui.length.hidden = st.mask !== "padding";
      ui.query.set(q, tokens);
      ui.view.set(view);
      ui.step.set(step, null, view === "query");
      prev.disabled = view === "query" || step === 1;
      next.disabled = view === "query" || step === 9;
      anyway.set(model.get("anyway"));
      anyway.hidden = !texts.some((t) => t.failing) && !model.get("anyway");
      if (!fit) fit = prepare(d, a, q, style);
      say(d, view, step, q);
      const svg = view === "query" ? queryPicture(d, a, q, fit, style) : grid(stepPicture(d, a, step, q, style), fit, style);
      interact(svg, f.tip);
      show(f, svg);
    }
    const redraw = () => { if (fit && (f.box.clientWidth !== fit.box || screenHeight(f) !== fit.screen)) fit = null, draw(); };
    for (const k of ["data", "texts", "step", "query", "view", "anyway"]) model.on(`change:${k}`, later);
    const resize = new ResizeObserver(() => requestAnimationFrame(redraw));
    resize.observe(f.root);
    draw();
    return () => resize.disconnect();
  },
};
