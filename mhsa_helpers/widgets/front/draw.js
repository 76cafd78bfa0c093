// Drawing a picture of panels in the page: cells, labels, head blocks, colour bars, the legend
// of special values, and what pointing at or focusing a cell does (its tooltip, linked cells
// lit). One module for every widget, in JupyterLab and in the book.
import {
  SIZE, colourAt, digitsFor, finiteOf, fmt, ink, layout, linkKeys, placeTip, rowsOf, scaleOf, textWidth, washedOut,
} from "./picture.js";

const NS = "http://www.w3.org/2000/svg";
let drawings = 0;

/** An SVG element `tag` with `attrs`, in `parent`, with `text`. */
export function svgEl(tag, attrs = {}, parent = null, text = null) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

/** A new SVG picture, `width` × `height`, with its own hatching and dots (ids unique in the
 * page: two views of one widget never share a definition a hidden tab would blank). */
export function canvas(width, height, label, style) {
  const uid = `mhsa-${++drawings}-${Math.random().toString(36).slice(2, 8)}`;
  const svg = svgEl("svg", {
    class: "mhsa-figure", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": label, "font-family": "DejaVu Sans, Arial, sans-serif",
  });
  const defs = svgEl("defs", {}, svg);
  const hatch = svgEl("pattern", {
    id: `${uid}-blocked`, width: 6, height: 6, patternUnits: "userSpaceOnUse",
    patternTransform: "rotate(45)",
  }, defs);
  svgEl("rect", { width: 6, height: 6, fill: style.blocked.fill }, hatch);
  svgEl("rect", { width: 2.5, height: 6, fill: style.blocked.stripes }, hatch);
  const dots = svgEl("pattern", { id: `${uid}-notyet`, width: 8, height: 8, patternUnits: "userSpaceOnUse" }, defs);
  svgEl("rect", { width: 8, height: 8, fill: "#f4f4f4" }, dots);
  svgEl("circle", { cx: 4, cy: 4, r: 1.4, fill: "#8c8c8c" }, dots);
  svgEl("rect", { width, height, fill: "#ffffff" }, svg);
  svg.uid = uid;
  svg.links = new Map(); // link key -> the cells that carry it
  return svg;
}

/** Where the number in a cell and its words come from: [fill, mark, tip lines, special]. */
function cellLook(p, v, r, c, scale, style, digits) {
  const where = `${p.title}: ${p.kinds[0]} '${p.rows[r]}', ${p.kinds[1]} '${p.cols[c]}'`;
  const blocked = p.blocked ? p.blocked[r][c] : false;
  if (Number.isNaN(v)) return [style.nan, "NaN", [`${where} = NaN`, style.words.nan], "nan"];
  if (v === Infinity) return [style.inf, "\u221e", [`${where} = \u221e`, style.words.inf], "inf"];
  if (p.pending && v === -Infinity && !blocked) return ["notyet", null, [`${where}: ${p.pending}`], null];
  if (blocked || v === -Infinity) return ["blocked", null, [`${where}: ${style.words.blocked}`], "blocked"];
  const fill = p.neutral ? "#ffffff" : colourAt(scale, v, style.luts[scale.kind]);
  const mark = digits != null && !p.neutral ? fmt(v, digits) : null;
  return [fill, mark, [`${where} = ${fmt(v, 4)}`, p.meaning], null];
}

/** Panel `p`'s cells, labels, head blocks, frame and highlight at (x, y), cells `s` px. */
export function panel(svg, p, x, y, s, scale, style, opt) {
  const g = svgEl("g", { class: "panel" }, svg);
  const head = [];
  (p.blocks || []).forEach(([first, end], k) => { for (let c = first; c < end; c++) head[c] = k + 1; });
  const font = s < 42 ? 11 : s < 52 ? 12 : 13;
  const kinds = new Set();
  p.M.forEach((row, r) => row.forEach((v, c) => {
    const [fill, mark, tip, special] = cellLook(p, v, r, c, scale, style, opt.digits);
    if (special) kinds.add(special);
    const cx = x + c * s, cy = y + r * s;
    const cell = svgEl("g", { class: "cell", tabindex: 0, "aria-label": tip.filter(Boolean).join(". ") }, g);
    const url = fill === "blocked" || fill === "notyet" ? `url(#${svg.uid}-${fill})` : fill;
    svgEl("rect", { x: cx, y: cy, width: s, height: s, fill: url }, cell);
    if (mark) {
      svgEl("text", {
        x: cx + s / 2, y: cy + s / 2 + font / 3, "font-size": font, "text-anchor": "middle",
        fill: ink(url), "pointer-events": "none",
      }, cell, mark);
    }
    cell.tip = tip.filter(Boolean);
    cell.box = [cx, cy, s, s];
    cell.keys = p.links ? linkKeys(p.links, r, c, head[c]) : [];
    for (const k of cell.keys) (svg.links.get(k) || svg.links.set(k, []).get(k)).push(cell);
  }));
  const nr = p.M.length, nc = p.M[0].length;
  const every = Math.max(1, Math.ceil(13 / s));
  if (opt.rowLabels) p.rows.forEach((label, r) => r % every || svgEl("text", {
    x: x - 8, y: y + (r + 0.5) * s + 4, "font-size": 11, "text-anchor": "end",
  }, g, label));
  if (opt.colLabels) {
    const level = bandOf(p.cols) <= 22;
    const widest = Math.max(...p.cols.map((c) => textWidth(c, 11) * 1.08));
    const step = Math.max(1, Math.ceil((level ? widest + 3 : 18) / s));
    p.cols.forEach((label, c) => {
      if (c % step) return;
      const lx = x + (c + 0.5) * s, ly = y + nr * s + 10;
      svgEl("text", level
        ? { x: lx, y: ly + 8, "font-size": 11, "text-anchor": "middle" }
        : { x: lx, y: ly, "font-size": 11, "text-anchor": "end", transform: `rotate(-40 ${lx} ${ly})` }, g, label);
    });
  }
  for (const [first, end, colour, label] of p.blocks || []) {
    const w = (end - first) * s, bx = x + first * s;
    svgEl("rect", { x: bx + 1.5, y: y + 1.5, width: w - 3, height: nr * s - 3, fill: "none", stroke: colour, "stroke-width": 3, "pointer-events": "none" }, g);
    svgEl("rect", { x: bx, y: y - 15, width: w, height: 13, fill: colour }, g);
    const text = w < 7 * label.length + 4 ? label.split(" ").pop() : label;
    svgEl("text", { x: bx + w / 2, y: y - 5, "font-size": 11, "text-anchor": "middle", fill: ink(colour) }, g, text);
  }
  const frame = p.colour ? { stroke: p.colour, "stroke-width": 4 } : p.neutral ? { stroke: "#555" } : null;
  if (frame) svgEl("rect", { x: x - 2, y: y - 2, width: nc * s + 4, height: nr * s + 4, fill: "none", "pointer-events": "none", ...frame }, g);
  if (p.highlight != null) {
    const box = { x, y: y + p.highlight * s, width: nc * s, height: s, fill: "none", "pointer-events": "none" };
    svgEl("rect", { ...box, stroke: "#ffffff", "stroke-width": 4 }, g);
    svgEl("rect", { ...box, class: "mhsa-highlight", stroke: "#000000", "stroke-width": 2.5, "stroke-dasharray": "6 3" }, g);
  }
  const ty = y - (p.blocks && p.blocks.length ? 22 : 8);
  let title = p.title;
  if (p.colour) {
    if (7 * title.length + 12 > nc * s + SIZE.gap) title = title.split(", ").pop();
    svgEl("rect", { x: x - 2, y: ty - 13, width: 7 * title.length + 12, height: 18, rx: 3, fill: p.colour }, g);
  }
  svgEl("text", { x: p.colour ? x + 4 : x, y: ty, "font-size": 12, "font-weight": "bold", fill: p.colour ? ink(p.colour) : "#000" }, g, title);
  return kinds;
}

/** The height the column labels take under a panel: level if short, else slanted. */
export function bandOf(cols) {
  if (Math.max(0, ...cols.map((c) => String(c).length)) <= 3) return 22;
  return 16 + Math.sin((40 * Math.PI) / 180) * Math.max(0, ...cols.map((c) => textWidth(c, 11) * 1.08));
}

/** A colour bar for `scale`, `h` px tall at (x, y), with its label and ticks. */
export function colourbar(svg, scale, label, x, y, h, style, ticks = 5) {
  const id = `${svg.uid}-bar-${x | 0}`;
  const grad = svgEl("linearGradient", { id, x1: 0, y1: 0, x2: 0, y2: 1 }, svg.querySelector("defs"));
  const lut = style.luts[scale.kind];
  for (let k = 0; k <= 10; k++) svgEl("stop", { offset: k / 10, "stop-color": lut[Math.round((lut.length - 1) * (1 - k / 10))] }, grad);
  svgEl("rect", { class: "mhsa-colourbar", x, y, width: 12, height: h, fill: `url(#${id})`, stroke: "#555" }, svg);
  svgEl("text", { x: x + 6, y: y - 8, "font-size": 11, "text-anchor": "middle" }, svg, label);
  for (let k = 0; k < ticks; k++) {
    const v = scale.vmax - (k / (ticks - 1)) * (scale.vmax - scale.vmin), ty = y + (k / (ticks - 1)) * h;
    svgEl("line", { x1: x + 12, x2: x + 16, y1: ty, y2: ty, stroke: "#555" }, svg);
    svgEl("text", { x: x + 18, y: ty + 4, "font-size": 11 }, svg, fmt(v, 2));
  }
}

/** Swatches naming the special values present ("blocked", "nan", "inf") at height `y`. */
export function legend(svg, kinds, y, style) {
  let x = 20;
  for (const kind of ["blocked", "nan", "inf"]) {
    if (!kinds.has(kind)) continue;
    const fill = kind === "blocked" ? `url(#${svg.uid}-blocked)` : style[kind];
    svgEl("rect", { x, y: y - 11, width: 14, height: 14, fill, stroke: "#555" }, svg);
    svgEl("text", { x: x + 20, y, "font-size": 12 }, svg, style.words[kind]);
    x += 30 + 6.6 * style.words[kind].length;
  }
}

/** The size of a grid of `panels` in `room` ({width, height}): its layout and measures. */
export function measure(pic, room) {
  const panels = pic.panels;
  const shared = panels.every((p) => p.rows.join("\n") === panels[0].rows.join("\n"));
  const sameCols = panels.every((p) => p.cols.join("\n") === panels[0].cols.join("\n"));
  const top = panels.some((p) => p.blocks && p.blocks.length) ? 58 : 48;
  const band = Math.max(...panels.map((p) => bandOf(p.cols)));
  const each = pic.scales.length > 1; // a colour bar beside every panel
  const below = (sameCols ? 0 : band) + top - 10;
  const foot = band + (pic.axes ? 22 : 0) + 30;
  const dims = panels.map((p) => ({ rows: p.M.length, cols: p.M[0].length }));
  const inner = room.height - top - foot, wide = room.width - 10 - (each ? 0 : SIZE.bar);
  const side = (shared ? 0 : SIZE.labels) + SIZE.gap + (each ? SIZE.bar : 0);
  let { ncol, cell } = layout(dims, { width: wide, height: inner, shared, extra: each ? SIZE.bar : 0, below });
  const nr = Math.max(...dims.map((d) => d.rows)), nc = Math.max(...dims.map((d) => d.cols));
  if (cell === SIZE.minCell && digitsFor(finiteOf(panels.filter((p) => !p.neutral).map((p) => p.M)), cell) === null) {
    // no number would fit a readable cell anyway: the largest cells that fit the whole room
    const fit = (k) => Math.min((wide - SIZE.labels - (k - 1) * side - (each ? SIZE.bar : 0)) / (k * nc), (inner - (Math.ceil(panels.length / k) - 1) * below) / rowsOf(dims, k), SIZE.maxCell);
    const k = dims.map((_, i) => i + 1).reduce((a, b) => (fit(b) > fit(a) ? b : a));
    if (fit(k) >= 14) ncol = k, cell = Math.floor(fit(k));
  }
  // too small a room for readable cells: the fewest columns whose rows fit its height (the
  // box scrolls sideways, never down: the notes below stay on the screen)
  const tall = (k) => rowsOf(dims, k) * cell + (Math.ceil(panels.length / k) - 1) * below > inner;
  while (cell === SIZE.minCell && ncol < panels.length && tall(ncol)) ncol++;
  if (tall(ncol)) cell = Math.max(10, Math.floor(inner / nr)); // one row, as tall as it fits
  const stepX = nc * cell + (shared ? 0 : SIZE.labels) + SIZE.gap + (each ? SIZE.bar : 0);
  const rowY = [0]; // each row of panels as tall as its tallest
  for (let i = 0; i < panels.length; i += ncol) rowY.push(rowY.at(-1) + rowsOf(dims.slice(i, i + ncol), ncol) * cell + below);
  const height = rowY.at(-1) - below;
  const width = 10 + SIZE.labels + (Math.min(ncol, panels.length) - 1) * stepX + nc * cell + SIZE.bar;
  return { ncol, cell, shared, sameCols, top, band, foot, stepX, rowY, height, each,
    width: Math.ceil(width), total: Math.ceil(Math.max(top + height + foot, top + 132)) };
}

/** A grid of panels, each with its scale (`pic.scales[p.scale]`) and colour bars: the SVG. */
export function grid(pic, room, style) {
  const m = measure(pic, room);
  const svg = canvas(m.width, m.total, pic.label, style);
  const values = pic.panels.filter((p) => !p.neutral).map((p) => finiteOf(p.M));
  const digits = digitsFor(values.flat(), m.cell);
  const kinds = new Set();
  pic.panels.forEach((p, k) => {
    const row = Math.floor(k / m.ncol), col = k % m.ncol;
    const x = 10 + SIZE.labels + col * m.stepX, y = m.top + m.rowY[row];
    const scale = pic.scales[p.scale || 0];
    const opt = { digits, rowLabels: !m.shared || col === 0, colLabels: !m.sameCols || k + m.ncol >= pic.panels.length };
    panel(svg, p, x, y, m.cell, scale, style, opt).forEach((kind) => kinds.add(kind));
    if (m.each && !p.neutral) colourbar(svg, scale, "", /* named by its panel's title */ x + p.M[0].length * m.cell + 12, y, p.M.length * m.cell, style, 3);
  });
  if (!m.each) {
    const s = pic.scales[0];
    colourbar(svg, s, s.label || "", m.width - SIZE.bar + 6, m.top, Math.max(m.height, 120), style);
  }
  if (pic.axes) {
    const mid = m.top + m.height / 2;
    svgEl("text", { x: 16, y: mid, "font-size": 12, "font-weight": "bold", "text-anchor": "middle", transform: `rotate(-90 16 ${mid})` }, svg, pic.axes[0]);
    svgEl("text", { x: 10 + SIZE.labels, y: m.top + m.height + m.band + 14, "font-size": 12, "font-weight": "bold" }, svg, pic.axes[1]);
  }
  legend(svg, kinds, m.total - 10, style);
  return svg;
}

/** Pointing at or focusing a cell of `svg` shows its tooltip in `tip` (an HTML box over the
 * picture) and lights the cells that share a link key with it, dimming the rest. */
export function interact(svg, tip) {
  let lit = [];
  const off = () => {
    lit.forEach((c) => c.classList.remove("lit"));
    lit = [];
    svg.classList.remove("dim");
    tip.hidden = true;
  };
  const on = (event) => {
    const cell = event.target.closest && event.target.closest(".cell, .link");
    if (!cell || !cell.tip) return;
    off();
    lit = [cell, ...cell.keys.flatMap((k) => svg.links.get(k) || [])];
    lit.forEach((c) => c.classList.add("lit"));
    if (cell.keys.length) svg.classList.add("dim");
    tip.replaceChildren();
    cell.tip.forEach((line, i) => {
      const div = document.createElement("div");
      div.textContent = line;
      if (i === 0) div.className = "mhsa-tip-head";
      tip.appendChild(div);
    });
    tip.hidden = false;
    const wide = Math.max(svg.width.baseVal.value, tip.parentElement.clientWidth); // the box's room right of the picture too
    const [x, y] = placeTip(cell.box, [tip.offsetWidth, tip.offsetHeight], [wide, svg.height.baseVal.value]);
    tip.style.left = `${x}px`;
    tip.style.top = `${y}px`;
  };
  svg.addEventListener("pointerover", on);
  svg.addEventListener("focusin", on);
  svg.addEventListener("pointerleave", off);
  svg.addEventListener("focusout", off);
}

/** The panels' colour scales: `fixed` ([vmin, vmax]) for all, else one for all, or one each
 * where one would wash the others out; sets each panel's `scale` (its index). */
export function scalesFor(panels, fixed, label) {
  const drawn = panels.filter((p) => !p.neutral);
  const each = !fixed && drawn.length > 1 && washedOut(drawn.map((p) => p.M));
  let k = 0;
  panels.forEach((p) => { p.scale = p.neutral || !each ? 0 : k++; });
  if (each) return drawn.map((p) => ({ ...scaleOf([p.M]), label: p.title.split(",")[0] }));
  const one = scaleOf(drawn.map((p) => p.M), fixed);
  return [{ ...one, kind: fixed && fixed[0] < 0 ? "div" : one.kind, label }]; // fixed [−v, v]: diverging
}
