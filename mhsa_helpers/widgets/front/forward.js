// The course's forward passes in the page, for the static book (no kernel): pure functions,
// no DOM, no dependencies, computing what mhsa_helpers.reference (numpy float64) computes, in
// the same order (tests/test_front_forward.py: equal within 1e-9). Matrices are arrays of rows,
// an (h, T, T) stack an array of matrices. Weights act on the right: Q = X·W_q; head i owns
// the columns i*d_k .. (i+1)*d_k - 1.

/** The letters of the trained model's task (mhsa_helpers.training.task.VOCAB). */
export const VOCAB = "ABCDEFGHIJKLMNOP";
/** How many letters the trained model reads (task.SEQ_LEN). */
export const SEQ_LEN = 8;

/**
 * The product A·B.
 * @param {number[][]} A  (n, k)
 * @param {number[][]} B  (k, m)
 * @returns {number[][]}  (n, m)
 */
export function matmul(A, B) {
  const m = B[0].length;
  return A.map((row) => {
    const out = new Array(m).fill(0);
    row.forEach((a, k) => B[k].forEach((b, j) => { out[j] += a * b; }));
    return out;
  });
}

/**
 * @param {number[][]} A  (n, m)
 * @returns {number[][]}  (m, n)
 */
export const transpose = (A) => A[0].map((_, j) => A.map((row) => row[j]));

/**
 * The entrywise sum A + B (−∞ + 0 = −∞, as in numpy).
 * @param {number[][]} A  (n, m)
 * @param {number[][]} B  (n, m)
 * @returns {number[][]}  (n, m)
 */
export const add = (A, B) => A.map((row, i) => row.map((a, j) => a + B[i][j]));

/**
 * Step 3: Q = X·W_q, K = X·W_k, V = X·W_v.
 * @param {number[][]} X  (T, d_model)
 * @param {number[][]} Wq  (d_model, d_model), likewise Wk, Wv
 * @returns {number[][][]}  [Q, K, V], each (T, d_model)
 */
export const projectQKV = (X, Wq, Wk, Wv) => [Wq, Wk, Wv].map((W) => matmul(X, W));

/**
 * Step 4: head i takes the columns i*d_k .. (i+1)*d_k - 1.
 * @param {number[][]} M  (T, d_model)
 * @param {number} h  divides d_model
 * @returns {number[][][]}  (h, T, d_k)
 */
export function splitHeads(M, h) {
  const dk = M[0].length / h;
  return Array.from({ length: h }, (_, i) => M.map((row) => row.slice(i * dk, (i + 1) * dk)));
}

/**
 * Step 9's concatenation, the inverse of splitHeads.
 * @param {number[][][]} H  (h, T, d_k)
 * @returns {number[][]}  (T, h*d_k)
 */
export const mergeHeads = (H) => H[0].map((_, t) => H.flatMap((head) => head[t]));

/**
 * Step 5: Z = Q·Kᵀ/√d_k, the scale applied to Q first, as the reference does.
 * @param {number[][]} Q  (T_q, d_k)
 * @param {number[][]} K  (T_k, d_k)
 * @returns {number[][]}  (T_q, T_k)
 */
export function attentionScores(Q, K) {
  const scale = 1 / Math.sqrt(Q[0].length);
  return matmul(Q.map((row) => row.map((q) => q * scale)), transpose(K));
}

/**
 * Step 6: 0 where key j ≤ query i, −∞ where j > i.
 * @param {number} T
 * @returns {number[][]}  (T, T)
 */
export const causalMask = (T) =>
  Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) => (j > i ? -Infinity : 0)));

/**
 * Step 6: keys at positions ≥ length blocked for every query, broadcast to (T, T)
 * as the explorer does (padding_mask(length, T) + zeros((T, T))).
 * @param {number} length  0 .. T
 * @param {number} T
 * @returns {number[][]}  (T, T)
 */
export function paddingMask(length, T) {
  const row = Array.from({ length: T }, (_, j) => (j >= length ? -Infinity : 0));
  return Array.from({ length: T }, () => row.slice());
}

/**
 * The explorer's mask M: zeros, causal or padding.
 * @param {{kind: "none"|"causal"|"padding", length?: number}} mask
 * @param {number} T
 * @returns {number[][]}  (T, T)
 */
export function maskOf(mask, T) {
  const kind = mask?.kind ?? "none";
  if (kind === "causal") return causalMask(T);
  if (kind === "padding") return paddingMask(mask.length, T);
  if (kind === "none") return Array.from({ length: T }, () => new Array(T).fill(0));
  throw new Error(`mask kind must be none, causal or padding, but got ${kind}`);
}

/**
 * Step 7, one row: exp(z - max z) / Σ exp(z - max z). A row that is all −∞ is
 * shifted by 0 and gives zeros (sum 0 taken as 1), as the reference's does.
 * @param {number[]} z  (T_k,)
 * @returns {number[]}  (T_k,)
 */
export function softmax(z) {
  let m = Math.max(...z);
  if (!Number.isFinite(m)) m = 0;
  const e = z.map((x) => Math.exp(x - m));
  let s = e.reduce((a, b) => a + b, 0);
  if (s === 0) s = 1;
  const inv = 1 / s; // one division per row, then a product per entry
  return e.map((x) => x * inv);
}

/**
 * The layer with every intermediate the explorer draws (Explorer.compute()).
 * @param {number[][]} X  (T, d_model)
 * @param {number[][]} Wq  (d_model, d_model), likewise Wk, Wv, Wo
 * @param {number} h  the number of heads, a divisor of d_model
 * @param {{kind: "none"|"causal"|"padding", length?: number}} mask
 * @returns {{X: number[][], Q: number[][], K: number[][], V: number[][],
 *   Z: number[][][], M: number[][], ZM: number[][][], A: number[][][],
 *   heads: number[][][], concat: number[][], out: number[][]}}
 *   Q, K, V, concat, out (T, d_model); Z, ZM, A (h, T, T); M (T, T); heads (h, T, d_k)
 */
export function layer(X, Wq, Wk, Wv, Wo, h, mask) {
  const [Q, K, V] = projectQKV(X, Wq, Wk, Wv);
  const [Qh, Kh, Vh] = [Q, K, V].map((M) => splitHeads(M, h));
  const Z = Qh.map((q, i) => attentionScores(q, Kh[i]));
  const M = maskOf(mask, X.length);
  const ZM = Z.map((z) => add(z, M));
  const A = ZM.map((zm) => zm.map(softmax));
  const heads = A.map((a, i) => matmul(a, Vh[i]));
  const concat = mergeHeads(heads);
  return { X, Q, K, V, Z, M, ZM, A, heads, concat, out: matmul(concat, Wo) };
}

// Python's \s (str.isspace) and the comma: JavaScript's \s differs (\x1c-\x1f, \x85, \ufeff).
const SEPARATORS = /[\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000,]+/g;
const RANGE = `${VOCAB[0]}–${VOCAB[VOCAB.length - 1]}`; // "A–P"

/**
 * The learner's letters, as parse_letters (mhsa_helpers/widgets/reverse.py) reads them:
 * spaces, commas and case ignored.
 * @param {string} text
 * @returns {string[]}  SEQ_LEN upper-case letters of VOCAB
 * @throws {Error}  with parse_letters's one-line reason
 */
export function parseLetters(text) {
  const chars = Array.from(String(text).replace(SEPARATORS, "").toUpperCase());
  chars.forEach((c, k) => {
    if (VOCAB.includes(c)) return;
    const what = /^\p{L}$/u.test(c) ? `one of the letters ${RANGE}` : "a letter";
    throw new Error(`'${c}' is not ${what} (position ${k + 1}, counting from 1).`);
  });
  if (chars.length !== SEQ_LEN) {
    const n = chars.length;
    const got = n === 0 ? "none" : `${n} letter${n > 1 ? "s" : ""}`;
    throw new Error(`${SEQ_LEN} letters ${RANGE} please: got ${got}.`);
  }
  return chars;
}

/**
 * The trained model on letters (model.forward, then reverse_on): X = E[x] + P, the
 * layer without a mask, the residual H = X + out, logits = H·W_u + b_u.
 * @param {{E: number[][], P: number[][], W_q: number[][], W_k: number[][], W_v: number[][],
 *   W_o: number[][], W_u: number[][], b_u: number[], n_heads?: number, vocab?: string}} params
 *   E (V, d_model), P (T, d_model), W_* (d_model, d_model), W_u (d_model, V), b_u (V,)
 * @param {string[]} letters  (T,) letters of the vocabulary
 * @returns {{weights: number[][][], output: string[], probabilities: number[]}}
 *   weights (n_heads, T, T); output and probabilities (T,): the likeliest letter, its probability
 */
export function reversal(params, letters) {
  const vocab = params.vocab ?? VOCAB;
  const X = letters.map((c, t) => params.E[vocab.indexOf(c)].map((e, d) => e + params.P[t][d]));
  const { out, A } = layer(X, params.W_q, params.W_k, params.W_v, params.W_o, params.n_heads ?? 2);
  const logits = matmul(add(X, out), params.W_u).map((row) => row.map((l, v) => l + params.b_u[v]));
  const best = logits.map((row) => row.indexOf(Math.max(...row)));
  const probabilities = logits.map((row, t) => {
    const m = Math.max(...row);
    const e = row.map((l) => Math.exp(l - m));
    return e[best[t]] / e.reduce((a, b) => a + b, 0);
  });
  return { weights: A, output: best.map((k) => vocab[k]), probabilities };
}
