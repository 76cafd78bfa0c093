// A widget's model without a kernel (the book): the traits a kernel would have sent, kept
// here; `answer(changes, model)` stands in for the kernel where the page asks for a new data
// state (the book's explorer computes it with forward.js).

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
    },
    send() {},
  };
  return model;
}
