// Hand-worked cases of mhsa_helpers/widgets/front/picture.js (node --test tests/js/, run by
// tests/test_front.py). Every expected value is worked out here from the rules the functions
// state (SIZE, the em widths of DejaVu Sans), never taken from the code under test.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  MINUS,
  SIZE,
  colourAt,
  decode,
  digitsFor,
  finiteOf,
  fmt,
  ink,
  layout,
  linkKeys,
  placeTip,
  scaleOf,
  textWidth,
  washedOut,
} from "../../mhsa_helpers/widgets/front/picture.js";

const close = (a, b, tol = 1e-9) => assert.ok(Math.abs(a - b) <= tol, `${a} is not ${b}`);

test("the sizes the layout keeps to", () => {
  // the smallest cell carries a number of 11 px: "−0.50" is 3.064 em = 33.7 px, "0.5" 17.5 px
  assert.equal(MINUS, "\u2212");
  assert.equal(SIZE.font, 11);
  assert.ok(SIZE.minCell >= 11 && SIZE.minCell < SIZE.maxCell);
});

test("fmt writes a true minus and the decimals asked", () => {
  assert.equal(fmt(1.5), "1.50");
  assert.equal(fmt(-1.5), "\u22121.50");
  assert.equal(fmt(-12.345, 1), "\u221212.3");
  assert.equal(fmt(0.125, 4), "0.1250");
  assert.equal(fmt(3), "3.00");
  assert.ok(!fmt(-0.75).includes("-"), "a hyphen instead of the minus sign");
});

test("fmt never writes a negative zero", () => {
  for (const v of [-0, -0.001, -0.0049, -1e-300]) assert.equal(fmt(v), "0.00", String(v));
  for (const v of [-0.04, -0.0499]) assert.equal(fmt(v, 1), "0.0", String(v));
  assert.equal(fmt(-0.00004, 4), "0.0000");
  // just past half a unit of the last decimal it is a true −0.01
  assert.equal(fmt(-0.006), "\u22120.01");
  assert.equal(fmt(-0.06, 1), "\u22120.1");
});

test("fmt names NaN and the infinities", () => {
  assert.equal(fmt(NaN), "NaN");
  assert.equal(fmt(Infinity), "\u221e");
  assert.equal(fmt(-Infinity), "\u2212\u221e");
  assert.equal(fmt(-Infinity, 4), "\u2212\u221e");
});

test("textWidth adds the em widths of DejaVu Sans", () => {
  // "0.50": three digits of 0.636 em and a point of 0.318 em = 2.226 em; at 11 px, 24.486 px
  close(textWidth("0.50"), 24.486);
  // "−0.50": the minus is 0.838 em more, 3.064 em; at 10 px, 30.64 px
  close(textWidth(`${MINUS}0.50`, 10), 30.64);
  close(textWidth("NaN", 1), 0.748 + 0.613 + 0.748);
});

test("digitsFor picks the most decimals with which every value fits, else null", () => {
  // "0.50" + 6 px of margin = 30.486 px; "0.5" + 6 = 23.49 px
  assert.equal(digitsFor([0.5], 31), 2);
  assert.equal(digitsFor([0.5], 30), 1);
  assert.equal(digitsFor([0.5], 24), 1);
  assert.equal(digitsFor([0.5], 23), null);
  // with a negative value the widest is "−0.50", 3.064 em = 33.704 px (+ 6 = 39.704)
  assert.equal(digitsFor([0.5, -0.5], 40), 2);
  assert.equal(digitsFor([0.5, -0.5], 39), 1); // "−0.5": 2.428 em = 26.708 px, + 6 = 32.708
  assert.equal(digitsFor([0.5, -0.5], 32), null);
});

test("digitsFor gives one format for the whole picture: the widest value decides", () => {
  // "12.50" is 2.862 em = 31.482 px (+ 6 = 37.482): at 37 px every value gets 1 decimal,
  // although "0.03" alone would fit with 2 ("0.03" + 6 = 30.486)
  const values = [0.03, 1, 12.5];
  assert.equal(digitsFor([0.03], 37), 2);
  assert.equal(digitsFor(values, 37), 1);
  assert.deepEqual(values.map((v) => fmt(v, digitsFor(values, 37))), ["0.0", "1.0", "12.5"]);
  assert.equal(digitsFor(values, 38), 2);
});

test("digitsFor leaves NaN and the infinities to their own marks", () => {
  assert.equal(digitsFor([NaN, -Infinity, Infinity, 0.5], 31), 2);
  assert.equal(digitsFor([], 7), 2); // nothing to write: 0 px + 6 fits
  assert.equal(digitsFor([0.5], 31, 22), null); // twice the font: "0.5" is 34.98 px
});

test("finiteOf flattens any nesting and keeps finite numbers only", () => {
  assert.deepEqual(finiteOf([[1, NaN], [-Infinity, 2]], [[[3]]], Infinity), [1, 2, 3]);
});

test("scaleOf: sequential from 0 for non-negative values", () => {
  assert.deepEqual(scaleOf([[[1, 2], [3, 4]]]), { kind: "seq", vmin: 0, vmax: 4 });
  assert.deepEqual(scaleOf([[[0.5]], [[2]]]), { kind: "seq", vmin: 0, vmax: 2 }); // over all
  assert.deepEqual(scaleOf([[[0, 0]]]), { kind: "seq", vmin: 0, vmax: 1 }); // all zero
});

test("scaleOf: diverging around 0 as soon as one value is negative, symmetric", () => {
  assert.deepEqual(scaleOf([[[-1, 3]]]), { kind: "div", vmin: -3, vmax: 3 });
  assert.deepEqual(scaleOf([[[-5, 2]]]), { kind: "div", vmin: -5, vmax: 5 });
  assert.deepEqual(scaleOf([[[-0.25]]]), { kind: "div", vmin: -0.25, vmax: 0.25 });
});

test("scaleOf: NaN and the infinities do not stretch the scale; fixed wins", () => {
  assert.deepEqual(scaleOf([[[NaN, -Infinity, 2, Infinity]]]), { kind: "seq", vmin: 0, vmax: 2 });
  assert.deepEqual(scaleOf([[[NaN, -Infinity]]]), { kind: "seq", vmin: 0, vmax: 1 });
  // attention weights: 0 to 1 whatever the values (even a learner's negative ones)
  assert.deepEqual(scaleOf([[[-3, 0.2]]], [0, 1]), { kind: "seq", vmin: 0, vmax: 1 });
});

test("washedOut: one matrix's largest magnitude under a third of another's", () => {
  assert.equal(washedOut([[[1]], [[0.3]]]), true); // 0.9 < 1
  assert.equal(washedOut([[[1]], [[0.5]]]), false); // 1.5 >= 1
  assert.equal(washedOut([[[-3]], [[1]]]), false); // exactly a third: 3 is not < 3
  assert.equal(washedOut([[[-3, 0.1]], [[0.9, -0.2]]]), true); // magnitudes: 3 and 0.9
  assert.equal(washedOut([[[2, NaN]], [[Infinity, 1]]]), false); // finite only: 2 and 1
  assert.equal(washedOut([[[5, -5]]]), false); // one matrix is never washed out by itself
});

test("colourAt: the table's ends at the scale's ends, clamped beyond", () => {
  const lut = ["#000000", "#111111", "#222222", "#333333", "#444444"];
  const seq = { kind: "seq", vmin: 0, vmax: 1 };
  assert.equal(colourAt(seq, 0, lut), "#000000");
  assert.equal(colourAt(seq, 1, lut), "#444444");
  assert.equal(colourAt(seq, 0.5, lut), "#222222"); // 0.5 · 4 = 2
  assert.equal(colourAt(seq, 0.6, lut), "#222222"); // 2.4 rounds to 2
  assert.equal(colourAt(seq, 0.625, lut), "#333333"); // 2.5 rounds up
  assert.equal(colourAt(seq, 7, lut), "#444444");
  assert.equal(colourAt(seq, -7, lut), "#000000");
  const div = { kind: "div", vmin: -2, vmax: 2 };
  assert.equal(colourAt(div, 0, lut), "#222222"); // 0 is the middle of a diverging table
  assert.equal(colourAt(div, -2, lut), "#000000");
  assert.equal(colourAt(div, 1, lut), "#333333"); // (1 + 2) / 4 · 4 = 3
  // a scale of one value (vmin = vmax) still gives a colour of the table
  assert.equal(colourAt({ kind: "seq", vmin: 1, vmax: 1 }, 1, lut), "#000000");
});

test("ink: black on light, white on dark (luma 0.299 R + 0.587 G + 0.114 B)", () => {
  assert.equal(ink("#ffffff"), "#000000");
  assert.equal(ink("#000000"), "#ffffff");
  assert.equal(ink("#808080"), "#000000"); // 128/255 = 0.502
  assert.equal(ink("#7f7f7f"), "#ffffff"); // 127/255 = 0.498
  assert.equal(ink("#ff0000"), "#ffffff"); // 0.299
  assert.equal(ink("#00ff00"), "#000000"); // 0.587
  assert.equal(ink("#0000ff"), "#ffffff"); // 0.114
  assert.equal(ink("#ffff00"), "#000000"); // 0.886
});

const six = (n) => Array.from({ length: n }, () => ({ rows: 6, cols: 6 }));
const room = (width, height, more = {}) => ({ width, height, shared: false, extra: 0, below: 40, ...more });

test("layout: the largest cells that fit, worked by hand", () => {
  // 4 panels of 6 × 6 in 1000 × 400; between two panels the next one's labels (64) and a
  // gap (22): 86 px; the last panel needs none
  // 1 column, 4 rows: across (1000 − 64) / 6 = 156, down (400 − 3·40) / 24 = 11.7
  // 2 columns, 2 rows: across (1000 − 64 − 86) / 12 = 70.8, down (400 − 40) / 12 = 30
  // 3 columns, 2 rows: across (1000 − 64 − 172) / 18 = 42.4, down 30
  // 4 columns, 1 row: across (1000 − 64 − 258) / 24 = 28.25, down 400 / 6 = 66.7
  // the largest is 30; 28.25 is within 15 % of it and takes one row: 4 columns of 28 px
  assert.deepEqual(layout(six(4), room(1000, 400)), { ncol: 4, cell: 28 });
});

test("layout: fewer rows preferred among cells nearly as large", () => {
  // 3 panels in 900 × 500: 2 columns give 38.3 px on 2 rows ((500 − 40) / 12), 3 columns
  // (900 − 64 − 172) / 18 = 36.9 px on 1 row: within 15 % of 38.3 (32.6), so one row
  assert.deepEqual(layout(six(3), room(900, 500)), { ncol: 3, cell: 36 });
  // 100 px narrower, 3 columns give (800 − 236) / 18 = 31.3 px: under 32.6, so 2 columns
  // (across (800 − 150) / 12 = 54, down 38.3)
  assert.deepEqual(layout(six(3), room(800, 500)), { ncol: 2, cell: 38 });
});

test("layout: shared row labels and colour bars change the room per panel", () => {
  // 2 panels of 4 × 4 in 500 × 200, below 30: shared labels leave a gap of 22 px between
  // 2 columns: across (500 − 64 − 22) / 8 = 51.75, down 200 / 4 = 50; 1 column: down 21.25
  const four = [{ rows: 4, cols: 4 }, { rows: 4, cols: 4 }];
  assert.deepEqual(layout(four, room(500, 200, { shared: true, below: 30 })), { ncol: 2, cell: 50 });
  // labels per panel: (500 − 64 − 86) / 8 = 43.75
  assert.deepEqual(layout(four, room(500, 200, { below: 30 })), { ncol: 2, cell: 43 });
  // shared labels and a colour bar of 62 px beside each: (500 − 64 − 84 − 62) / 8 = 36.25
  const bars = room(500, 200, { shared: true, extra: 62, below: 30 });
  assert.deepEqual(layout(four, bars), { ncol: 2, cell: 36 });
});

test("layout: never below SIZE.minCell, never above SIZE.maxCell", () => {
  // 300 × 100 fits no readable cell: 2 columns come nearest (5 px), drawn at the smallest
  assert.deepEqual(layout(six(4), room(300, 100)), { ncol: 2, cell: SIZE.minCell });
  // no room at all (negative height): still the smallest cell, not a negative one
  assert.equal(layout(six(3), room(800, -40)).cell, SIZE.minCell);
  // a 2 × 2 panel in a large room: no bigger than the largest cell
  assert.deepEqual(layout([{ rows: 2, cols: 2 }], room(1000, 1000)), { ncol: 1, cell: SIZE.maxCell });
});

test("layout: the grid it chooses fits the width and height given", () => {
  const shapes = [[6, 6], [6, 4], [8, 8], [6, 1], [2, 16]];
  for (const [rows, cols] of shapes) {
    for (let n = 1; n <= 9; n++) {
      for (const width of [390, 550, 760, 1100, 1400]) {
        for (const height of [250, 420, 700]) {
          for (const shared of [false, true]) {
            const r = room(width, height, { shared, extra: shared ? 62 : 0, below: 36 });
            const panels = Array.from({ length: n }, () => ({ rows, cols }));
            const { ncol, cell } = layout(panels, r);
            const what = JSON.stringify({ rows, cols, n, width, height, shared, ncol, cell });
            assert.ok(Number.isInteger(cell) && ncol >= 1 && ncol <= n, what);
            assert.ok(cell >= SIZE.minCell && cell <= SIZE.maxCell, what);
            if (cell === SIZE.minCell) continue; // too small a room: the box scrolls
            const nrow = Math.ceil(n / ncol);
            const side = (shared ? 0 : SIZE.labels) + SIZE.gap + r.extra;
            const across = SIZE.labels + ncol * cols * cell + (ncol - 1) * side + r.extra;
            assert.ok(across <= width, `too wide: ${what}`);
            assert.ok(nrow * rows * cell + (nrow - 1) * r.below <= height, `too tall: ${what}`);
          }
        }
      }
    }
  }
});

test("placeTip: above the anchor, left-aligned with it, 6 px away", () => {
  // anchor at (100, 100), 30 × 30; tip 120 × 40: x = 100, y = 100 − 40 − 6 = 54
  assert.deepEqual(placeTip([100, 100, 30, 30], [120, 40], [800, 600]), [100, 54]);
});

test("placeTip: below when there is no room above", () => {
  // 20 − 40 − 6 < 4: below, at 20 + 30 + 6 = 56
  assert.deepEqual(placeTip([100, 20, 30, 30], [120, 40], [800, 600]), [100, 56]);
  // exactly room above: 50 − 40 − 6 = 4
  assert.deepEqual(placeTip([100, 50, 30, 30], [120, 40], [800, 600]), [100, 4]);
});

test("placeTip: right-aligned with the anchor near the right edge, kept inside", () => {
  // 750 + 120 > 796: right-aligned, 750 + 30 − 120 = 660
  assert.deepEqual(placeTip([750, 100, 30, 30], [120, 40], [800, 600]), [660, 54]);
  // an anchor at the left edge: not left of 4 px
  assert.deepEqual(placeTip([0, 100, 30, 30], [120, 40], [800, 600]), [4, 54]);
  // a tip wider than the anchor's right edge allows: pushed right to 4 px
  assert.deepEqual(placeTip([40, 100, 30, 30], [300, 40], [320, 600]), [4, 54]);
});

test("placeTip never covers its anchor and stays inside where a place exists", () => {
  const bounds = [420, 300];
  for (const size of [[60, 20], [160, 44], [300, 60]]) {
    for (let x = 0; x + 26 <= bounds[0]; x += 13) {
      for (let y = 0; y + 26 <= bounds[1]; y += 13) {
        const anchor = [x, y, 26, 26];
        const [tx, ty] = placeTip(anchor, size, bounds);
        const what = JSON.stringify({ anchor, size, tx, ty });
        const fitsAbove = y - size[1] - 6 >= 4;
        const fitsBelow = y + 26 + 6 + size[1] <= bounds[1] - 4;
        if (!fitsAbove && !fitsBelow) continue; // no place beside it: nothing to promise
        const apart = ty + size[1] <= y || ty >= y + 26;
        assert.ok(apart, `covers the anchor: ${what}`);
        assert.ok(tx >= 4 && tx + size[0] <= bounds[0] - 4, `outside, across: ${what}`);
        assert.ok(ty >= 4 && ty + size[1] <= bounds[1] - 4, `outside, down: ${what}`);
        assert.ok(Math.min(Math.abs(ty + size[1] - y), Math.abs(ty - y - 26)) === 6, what);
      }
    }
  }
});

test("linkKeys: the row's and the column's keys, and within the head", () => {
  assert.deepEqual(linkKeys(["q", "k"], 2, 3), ["q2", "k3"]);
  assert.deepEqual(linkKeys(["q", "k"], 2, 3, 1), ["q2", "q2h1", "k3", "k3h1"]);
  assert.deepEqual(linkKeys([null, "k"], 2, 3), ["k3"]); // rows of nothing linked
  assert.deepEqual(linkKeys(["t", undefined], 4, 0, 2), ["t4", "t4h2"]);
  assert.deepEqual(linkKeys([["q", "t"], null], 1, 5), ["q1", "t1"]); // two kinds of row
  assert.deepEqual(linkKeys([null, null], 0, 0, 1), []);
});

test("decode: the kernel's strings back to NaN and the infinities, the rest as sent", () => {
  assert.deepEqual(decode([[1, "NaN"], ["Infinity", "-Infinity"]]), [[1, NaN], [Infinity, -Infinity]]);
  assert.deepEqual(decode({ A: [[["NaN", 0.5]]], M: [[0, "-Infinity"]] }), {
    A: [[[NaN, 0.5]]],
    M: [[0, -Infinity]],
  });
  assert.deepEqual(decode([[0.25, -3]]), [[0.25, -3]]);
  assert.equal(decode(null), null);
  assert.ok(Number.isNaN(decode("NaN")));
});
