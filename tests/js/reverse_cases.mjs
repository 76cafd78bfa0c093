// Computes tests/test_ext_reverse.py's cases with reverse.js (what the page says of an input):
// JSON on stdin, JSON on stdout. In: {runs: [{params, text}], weights: [(h, T, T) arrays],
// patterns}. Out: {words: [{status, notes}] for each run, lines: [headLines] for each weights}.
import { readFileSync } from "node:fs";

import { parseLetters, reversal } from "../../mhsa_helpers/widgets/front/forward.js";
import { headLines, verdict } from "../../mhsa_helpers/widgets/front/reverse.js";

const cases = JSON.parse(readFileSync(0, "utf8"));
const words = cases.runs.map(({ params, text }) => {
  const letters = parseLetters(text);
  return verdict(letters, reversal(params, letters), params.patterns);
});
const lines = cases.weights.map((w) => headLines(w, cases.patterns));
process.stdout.write(JSON.stringify({ words, lines }));
