// The pure parts of every picture: numbers as text, colours, the grid's layout, a tooltip's place.
// No DOM here: `node --test tests/js/` tests every function (tests/test_front.py runs it).

export const MINUS = "\u2212";
/** Sizes in CSS px: row labels, the gap between panels, a title's band, the smallest cell
 * that still carries a number of 11 px, the largest cell, a colour bar with its ticks. */
export const SIZE = { labels: 64, gap: 22, title: 48, minCell: 26, maxCell: 56, bar: 62, font: 11 };

/** A matrix from the kernel: JSON has no NaN or ±∞, so they come as the strings
 * "NaN", "Infinity", "-Infinity" (mhsa_helpers/widgets/base.py `encode`). */
export function decode(M) {
  if (Array.isArray(M)) return M.map(decode);
  if (M && typeof M === "object") return Object.fromEntries(Object.entries(M).map(([k, v]) => [k, decode(v)]));
  return typeof M === "string" ? Number(M) : M;
}

/** `v` as text with `digits` decimals: a true minus, never "−0.00"; NaN, −∞ and ∞ by name. */
export function fmt(v, digits = 2) {
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v < 0 ? `${MINUS}\u221e` : "\u221e";
  const text = (Math.abs(v) < 0.5 * 10 ** -digits ? 0 : v).toFixed(digits);
  return text.replace("-", MINUS);
}

/** Width in px of a number's text at font `size` (DejaVu Sans: digits 0.636 em). */
export function textWidth(text, size = SIZE.font) {
  const em = { ".": 0.318, [MINUS]: 0.838, "-": 0.361, N: 0.748, a: 0.613 };
  return size * [...String(text)].reduce((w, ch) => w + (em[ch] ?? 0.636), 0);
}

/** The picture's one number format: the most decimals (2, then 1) with which every finite
 * value fits a cell of `cell` px; null: the cells are too small, the tooltips carry them. */
export function digitsFor(values, cell, size = SIZE.font) {
  const finite = values.filter(Number.isFinite);
  for (const digits of [2, 1]) {
    const widest = Math.max(0, ...finite.map((v) => textWidth(fmt(v, digits), size)));
    if (widest + 6 <= cell) return digits;
  }
  return null;
}

/** The finite entries of any nesting of arrays. */
export function finiteOf(...matrices) {
  return matrices.flat(Infinity).filter(Number.isFinite);
}

/** One colour scale for `matrices`: diverging around 0 if any value is negative, else
 * sequential from 0; `fixed` ([vmin, vmax]) wins (weights: 0 to 1; below 0: diverging). */
export function scaleOf(matrices, fixed = null) {
  if (fixed) return { kind: fixed[0] < 0 ? "div" : "seq", vmin: fixed[0], vmax: fixed[1] };
  const data = finiteOf(matrices);
  const lo = Math.min(0, ...data);
  const hi = Math.max(0, ...data);
  if (lo < 0) {
    const top = Math.max(-lo, hi) || 1;
    return { kind: "div", vmin: -top, vmax: top };
  }
  return { kind: "seq", vmin: 0, vmax: hi || 1 };
}

/** Whether one scale for all `matrices` would wash some out: the largest magnitude of one
 * is under a third of another's (04's Q, K and V: K and V nearly white on Q's scale). */
export function washedOut(matrices) {
  const tops = matrices.map((M) => Math.max(0, ...finiteOf(M).map(Math.abs)));
  return Math.min(...tops) * 3 < Math.max(...tops);
}

/** The colour of `v` on `scale`, from the colour map's table `lut` (hex strings). */
export function colourAt(scale, v, lut) {
  const t = (v - scale.vmin) / (scale.vmax - scale.vmin || 1);
  return lut[Math.min(lut.length - 1, Math.max(0, Math.round(t * (lut.length - 1))))];
}

/** Black or white, whichever reads on `hex`. */
export function ink(hex) {
  const n = parseInt(hex.slice(1), 16);
  const lum = (0.299 * (n >> 16) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255)) / 255;
  return lum > 0.5 ? "#000000" : "#ffffff";
}

/**
 * How many columns of panels, and how big a cell: among the layouts whose cells are nearly
 * the largest that fit `width` and `height`, the one with the fewest rows, never under SIZE.minCell (the picture is then
 * wider than `width` and its box scrolls) nor over SIZE.maxCell.
 * @param {{rows:number, cols:number}[]} panels  each panel's cells
 * @param {{width:number, height:number, shared:boolean, extra:number, below:number}} room
 *   `shared`: one column of row labels for all; `extra`: px beside each panel (its colour
 *   bar); `below`: px between two rows of panels.
 * @returns {{ncol:number, cell:number}}
 */
export function layout(panels, room) {
  const n = panels.length;
  const nc = Math.max(...panels.map((p) => p.cols));
  const side = (room.shared ? 0 : SIZE.labels) + SIZE.gap + (room.extra || 0);
  const sizes = [];
  for (let ncol = 1; ncol <= n; ncol++) {
    const nrow = Math.ceil(n / ncol);
    const across = (room.width - SIZE.labels - (ncol - 1) * side - (room.extra || 0)) / (ncol * nc);
    const down = (room.height - (nrow - 1) * room.below) / rowsOf(panels, ncol);
    const cell = Math.min(across, down, SIZE.maxCell);
    sizes.push({ ncol, cell, height: rowsOf(panels, ncol) * cell + (nrow - 1) * room.below });
  }
  const best = Math.max(...sizes.map((s) => s.cell));
  const near = sizes.filter((s) => s.cell >= best - 0.15 * Math.abs(best));
  near.sort((a, b) => a.height / a.cell - b.height / b.cell || b.cell - a.cell);
  return { ncol: near[0].ncol, cell: Math.max(SIZE.minCell, Math.floor(near[0].cell)) };
}

/** The cells down a grid of `panels` ({rows}) in `ncol` columns: each row of panels as tall
 * as its tallest. */
export function rowsOf(panels, ncol) {
  let sum = 0;
  for (let i = 0; i < panels.length; i += ncol) sum += Math.max(...panels.slice(i, i + ncol).map((p) => p.rows));
  return sum;
}

/** Where a tooltip of `size` [w, h] goes beside `anchor` [x, y, w, h] inside `bounds` [w, h]:
 * above the anchor, else below it; left-aligned with it, else right-aligned; never over it. */
export function placeTip(anchor, size, bounds) {
  const [x, y, w, h] = anchor;
  const [tw, th] = size;
  let tx = x + tw <= bounds[0] - 4 ? x : x + w - tw;
  tx = Math.min(Math.max(tx, 4), Math.max(4, bounds[0] - 4 - tw));
  const ty = y - th - 6 >= 4 ? y - th - 6 : y + h + 6;
  return [tx, ty];
}

/** The link keys of cell (r, c): its row's and column's tokens, also within head `head`. */
export function linkKeys(links, r, c, head) {
  const keys = [];
  [
    [links[0], r],
    [links[1], c],
  ].forEach(([prefixes, i]) => {
    for (const p of [prefixes ?? []].flat()) {
      keys.push(`${p}${i}`);
      if (head != null) keys.push(`${p}${i}h${head}`);
    }
  });
  return keys;
}
