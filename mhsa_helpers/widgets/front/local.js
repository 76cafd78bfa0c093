// A widget's model without a kernel (the book): the traits a kernel would have sent, kept
// here; `answer(changes, model)` stands in for the kernel where the page asks for a new data
// state (the book's explorer computes it with forward.js: explorerAnswer).
import { layer, splitHeads } from "./forward.js";

/** A model as anywidget gives one ({get, set, on, off, save_changes, send}) over `traits`. */
export function localModel(traits, answer = null) {
  const values = { ...traits };
  const handlers = new Map();
  let changed = {};
  const fire = (key) => (handlers.get(`change:${key}`) || []).forEach((cb) => cb());
  const model = {
    get: (key) => values[key],
    set(key, value) {
      values[key] = value;
      changed[key] = value;
      fire(key);
    },
    on(event, cb) { (handlers.get(event) || handlers.set(event, []).get(event)).push(cb); },
    off(event, cb) { handlers.set(event, (handlers.get(event) || []).filter((h) => h !== cb)); },
    save_changes() {
      const done = changed;
      changed = {};
      if (answer && Object.keys(done).length) answer(done, model);
      changed = {}; // what the answer set came from the "kernel": not the page's to send back
    },
    send() {},
  };
  return model;
}

/**
 * The explorer's kernel in the book: a change of its data state (example, layer, heads, mask,
 * length) settled as Explorer._suited settles it (mhsa_helpers/widgets/explorer.py), its arrays
 * computed here by forward.js's layer (equal to numpy within 1e-9) on the layer's input and
 * weights sent at build time (a later layer's input is the model's residual stream, computed in
 * the kernel), its words looked up in the table computed at build time (book/embed.py:
 * explorer_table).
 * @param {{examples: Object<string, {layers: Array<{X, W}>, title, tokens, features,
 *   head_choices, layer_choices, heads, T}>, suited: Object<string, string>,
 *   words: Object<string, number>, texts: Array}} book
 * @param {{state: object}} traits  the widget's traits at build time
 * @returns {function(object, object): void}  answer(changes, model) for localModel
 */
export function explorerAnswer(book, traits) {
  let last = { ...traits.state }, reset = null; // reset: the mask an example set aside, said until changed
  return (changes, model) => {
    if (!changes.state) return;
    const s = { ...changes.state }, e = book.examples[s.example];
    if (!e.layer_choices.includes(s.layer)) s.layer = e.layer_choices[0];
    if (s.example !== last.example) {
      if (!e.head_choices.includes(s.heads)) s.heads = e.heads;
      s.length = Math.min(s.length, e.T);
      const suited = book.suited[s.example];
      reset = null; // said of the example that set it aside only
      if (suited != null && s.mask !== suited) reset = s.mask, s.mask = suited;
      model.set("query", 0);
    } else if (s.mask !== last.mask) reset = null;
    last = s;
    const { X, W } = e.layers[s.layer - 1];
    const [W_Q, W_K, W_V, W_O] = W;
    const a = layer(X, W_Q, W_K, W_V, W_O, s.heads, { kind: s.mask, length: s.length });
    const [Qh, Kh, Vh] = [a.Q, a.K, a.V].map((M) => splitHeads(M, s.heads));
    const { layers, T, heads, ...shown } = e;
    model.set("state", s);
    const key = [s.example, s.layer, s.heads, s.mask, reset ?? ""].join("|");
    model.set("texts", book.texts[book.words[key]]);
    model.set("data", { ...model.get("data"), ...shown, example: s.example, state: s, h: s.heads, arrays: { ...a, W_Q, W_K, W_V, W_O, Qh, Kh, Vh } });
  };
}
