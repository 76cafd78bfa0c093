// Hand-checked cases of mhsa_helpers/widgets/front/forward.js (node --test tests/js/).
// Every expected value is worked out by hand here, never taken from the code under test;
// tests/test_front_forward.py compares the module with the numpy reference on every example.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  attentionScores,
  causalMask,
  layer,
  matmul,
  mergeHeads,
  paddingMask,
  parseLetters,
  reversal,
  softmax,
  splitHeads,
} from "../../mhsa_helpers/widgets/front/forward.js";

const close = (a, b, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol, `${a} is not ${b}`);
const I2 = [[1, 0], [0, 1]];

test("matmul multiplies rows by columns", () => {
  assert.deepEqual(matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]), [[19, 22], [43, 50]]);
  assert.deepEqual(matmul([[1, 2, 3]], [[1], [1], [1]]), [[6]]);
});

test("split then merge gives the matrix back; head i owns columns i*d_k..", () => {
  const M = [[1, 2, 3, 4], [5, 6, 7, 8]];
  const H = splitHeads(M, 2);
  assert.deepEqual(H, [[[1, 2], [5, 6]], [[3, 4], [7, 8]]]);
  assert.deepEqual(mergeHeads(H), M);
});

test("scores divide by the square root of d_k", () => {
  // q = (1, 1, 1, 1), k = (1, 1, 1, 1): q·k = 4, d_k = 4, so 4 / 2 = 2
  assert.deepEqual(attentionScores([[1, 1, 1, 1]], [[1, 1, 1, 1], [0, 0, 0, 0]]), [[2, 0]]);
});

test("the causal mask blocks the future and only the future", () => {
  const M = causalMask(3);
  assert.deepEqual(M, [[0, -Infinity, -Infinity], [0, 0, -Infinity], [0, 0, 0]]);
});

test("the padding mask blocks the same keys for every query", () => {
  assert.deepEqual(paddingMask(2, 3), [[0, 0, -Infinity], [0, 0, -Infinity], [0, 0, -Infinity]]);
  assert.deepEqual(paddingMask(3, 3), [[0, 0, 0], [0, 0, 0], [0, 0, 0]]);
});

test("softmax: rows sum to 1, equal scores share evenly, −∞ gets 0", () => {
  assert.deepEqual(softmax([0, 0, 0, 0]), [0.25, 0.25, 0.25, 0.25]);
  const a = softmax([0, Math.log(3)]); // e^0 : e^ln3 = 1 : 3
  close(a[0], 0.25);
  close(a[1], 0.75);
  assert.deepEqual(softmax([5, -Infinity]), [1, 0]);
  close(softmax([0.3, -1.2, 2.5]).reduce((s, x) => s + x, 0), 1);
});

test("softmax is stable for large scores and gives zeros for a blocked row", () => {
  assert.deepEqual(softmax([1000, 1000]), [0.5, 0.5]); // a naive exp overflows to NaN
  assert.deepEqual(softmax([-Infinity, -Infinity]), [0, 0]);
});

test("the layer: shapes, masks and weights", () => {
  // T = 3, d_model = 4, h = 2 (d_k = 2); identity weights, so Q = K = V = X
  const X = [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]];
  const W = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]];
  const s = layer(X, W, W, W, W, 2, { kind: "causal" });
  assert.deepEqual(s.Q, X);
  assert.equal(s.Z.length, 2);
  const shape = (stack) => stack.map((m) => [m.length, m[0].length]);
  for (const name of ["Z", "ZM", "A"]) assert.deepEqual(shape(s[name]), [[3, 3], [3, 3]]);
  assert.deepEqual(shape(s.heads), [[3, 2], [3, 2]]);
  // the first query sees only itself: its output is its own value
  assert.deepEqual(s.A.map((a) => a[0]), [[1, 0, 0], [1, 0, 0]]);
  assert.deepEqual(s.out[0], X[0]);
  // query 1 in head 1: scores (0·1+1·0, 0+1)/√2 = (0, 1/√2) on keys 0 and 1, key 2 blocked
  const e = Math.exp(1 / Math.SQRT2);
  close(s.A[0][1][0], 1 / (1 + e));
  close(s.A[0][1][1], e / (1 + e));
  assert.equal(s.ZM[0][1][2], -Infinity);
  for (const a of s.A) for (const row of a) close(row.reduce((x, y) => x + y, 0), 1);
  // padding of length 0 blocks every key: all weights 0, no NaN
  const blocked = layer(X, W, W, W, W, 1, { kind: "padding", length: 0 });
  assert.deepEqual(blocked.A, [[[0, 0, 0], [0, 0, 0], [0, 0, 0]]]);
  assert.deepEqual(blocked.out, [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]);
});

test("parseLetters ignores spaces, commas and case, and says what is wrong", () => {
  assert.deepEqual(parseLetters(" a, b,c d ,E F\tg h "), [..."ABCDEFGH"]);
  const refuses = (text, message) => assert.throws(() => parseLetters(text), { message });
  refuses("ABZDEFGH", "'Z' is not one of the letters A–P (position 3, counting from 1).");
  refuses("AB-CDEFGH", "'-' is not a letter (position 3, counting from 1).");
  refuses("A", "8 letters A–P please: got 1 letter.");
  refuses(" , ", "8 letters A–P please: got none.");
});

test("reversal: a model that copies each letter's own embedding", () => {
  // vocabulary "AB", d_model 2, one-hot embeddings, no positions, attention weights 0
  // so out = 0 and the logits are the one-hot rows: the output is the input.
  const Z = [[0, 0], [0, 0]];
  const params = { E: I2, P: Z, W_q: Z, W_k: Z, W_v: Z, W_o: Z, W_u: I2, b_u: [0, 0] };
  Object.assign(params, { n_heads: 1, vocab: "AB" });
  const r = reversal(params, ["B", "A"]);
  assert.deepEqual(r.output, ["B", "A"]);
  assert.deepEqual(r.weights, [[[0.5, 0.5], [0.5, 0.5]]]); // equal scores: even weights
  close(r.probabilities[0], Math.E / (1 + Math.E)); // softmax of (0, 1) at the 1
});
