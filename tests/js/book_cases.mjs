// The book's explorer without a kernel (local.js: localModel over explorerAnswer), driven as
// the page's controls drive it, for tests/test_embed.py: JSON on stdin, JSON on stdout.
// In: {traits, book, changes: [{key: value} of the data state]}. Out: after each change, the
// model's {state, query, texts, data}; −∞ and NaN as the strings numpy reads back.
import { readFileSync } from "node:fs";

import { explorerAnswer, localModel } from "../../mhsa_helpers/widgets/front/local.js";

const { traits, book, changes } = JSON.parse(readFileSync(0, "utf8"));
const model = localModel(traits, explorerAnswer(book, traits));
const seen = changes.map((change) => {
  model.set("state", { ...model.get("state"), ...change });
  model.save_changes();
  const [state, query, texts, data] = ["state", "query", "texts", "data"].map((k) => model.get(k));
  return { state, query, texts, data };
});
const finite = (_, v) => (typeof v === "number" && !Number.isFinite(v) ? String(v) : v);
process.stdout.write(JSON.stringify(seen, finite));
