// Computes cases with forward.js for tests/test_front_forward.py: JSON on stdin, JSON on stdout.
// In: {layer: [{X, Wq, Wk, Wv, Wo, h, mask}], reversal: {params, letters: [[...]]}, parse: [text]}.
// Out: the same keys; layer states, reversal results, {letters} or {error} per text; the module's
// VOCAB and SEQ_LEN. JSON has no −∞ or NaN: non-finite numbers go as the strings
// "-Infinity", "Infinity" and "NaN" (numpy reads them back with dtype=float).
import { readFileSync } from "node:fs";

import * as forward from "../../mhsa_helpers/widgets/front/forward.js";

const cases = JSON.parse(readFileSync(0, "utf8"));
const parse = (text) => {
  try {
    return { letters: forward.parseLetters(text) };
  } catch (error) {
    return { error: error.message };
  }
};
const result = {
  layer: cases.layer.map((c) => forward.layer(c.X, c.Wq, c.Wk, c.Wv, c.Wo, c.h, c.mask)),
  reversal: cases.reversal.letters.map((word) => forward.reversal(cases.reversal.params, word)),
  parse: cases.parse.map(parse),
  VOCAB: forward.VOCAB,
  SEQ_LEN: forward.SEQ_LEN,
};
const finite = (_, v) => (typeof v === "number" && !Number.isFinite(v) ? String(v) : v);
process.stdout.write(JSON.stringify(result, finite));
