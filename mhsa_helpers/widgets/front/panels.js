// The extensions' widgets (anywidget): every state of their controls computed once by the
// kernel (mhsa_helpers/widgets/panels.py) or the book, each a picture of panels with its
// words; a change of a control shows its state in the page, without the kernel.
import { decode } from "./picture.js";
import { grid, interact, measure, scalesFor } from "./draw.js";
import { button, control, frame, room, show } from "./frame.js";

/** The state whose key matches `values` best: every value, else the most of them in order. */
export function stateFor(states, values, names) {
  let best = states[0], score = -1;
  for (const s of states) {
    let k = 0;
    while (k < names.length && String(s.key[names[k]]) === String(values[names[k]])) k++;
    const all = names.filter((n) => String(s.key[n]) === String(values[n])).length;
    if (k * 100 + all > score) best = s, score = k * 100 + all;
  }
  return best;
}

export default {
  render({ model, el }) {
    const f = frame(el);
    const specs = model.get("controls");
    const names = specs.map((c) => c.name);
    const ui = {};
    const choose = (name, value) => {
      const values = { ...model.get("values"), [name]: value };
      const s = stateFor(model.get("states"), values, [name, ...names.filter((n) => n !== name)]);
      model.set("values", { ...s.key });
      model.save_changes();
    };
    for (const spec of specs) {
      ui[spec.name] = control(spec, (v) => choose(spec.name, v));
      f.controls.appendChild(ui[spec.name]);
      for (const [text, move] of spec.buttons || []) {
        const b = button(text, () => {
          const options = (stateFor(model.get("states"), model.get("values"), names).options || {})[spec.name] || spec.options;
          const i = options.findIndex((o) => String(o[1]) === String(model.get("values")[spec.name]));
          const j = move === "first" ? 0 : Math.max(0, Math.min(options.length - 1, i + move));
          choose(spec.name, options[j][1]);
        });
        b.dataset.move = move;
        f.controls.appendChild(b);
        (ui[spec.name].buttons = ui[spec.name].buttons || []).push([b, move]);
      }
    }
    const anyway = control({ name: "anyway", label: "draw my failing functions anyway", kind: "check" }, (v) => { model.set("anyway", v); model.save_changes(); });
    f.side.appendChild(anyway);
    let decoded = new WeakMap(), tall = 0, width = 0;

    function draw() {
      const states = model.get("states");
      if (!states || !states.length) return;
      const s = stateFor(states, model.get("values"), names);
      for (const spec of specs) {
        const options = (s.options || {})[spec.name] || spec.options;
        ui[spec.name].set(s.key[spec.name], options);
        const i = options.findIndex((o) => String(o[1]) === String(s.key[spec.name]));
        for (const [b, move] of ui[spec.name].buttons || []) b.disabled = move === "first" ? i === 0 : i + move < 0 || i + move >= options.length;
      }
      f.title.innerHTML = s.title || "";
      f.title.hidden = !s.title;
      f.status.innerHTML = s.status;
      f.notes.innerHTML = (s.notes || []).join("<br>");
      anyway.set(model.get("anyway"));
      anyway.hidden = !model.get("failing") && !model.get("anyway");
      const style = model.get("look");
      const picture = (st) => {
        if (!decoded.has(st)) decoded.set(st, st.picture.panels.map((p) => ({ ...p, M: decode(p.M) })));
        const panels = decoded.get(st).map((p) => ({ ...p }));
        return { label: st.picture.label, axes: st.picture.axes, panels, scales: scalesFor(panels, st.picture.fixed, st.picture.bar || "value") };
      };
      const r = room(f);
      if (!tall) tall = Math.min(r.height, Math.max(...states.map((st) => measure(picture(st), r).total))); // one box for every state: the notes never move
      const svg = grid(picture(s), { width: r.width, height: tall }, style);
      f.box.style.minHeight = `${tall}px`;
      interact(svg, f.tip);
      show(f, svg);
    }
    for (const k of ["values", "states", "anyway", "failing"]) model.on(`change:${k}`, () => { if (k === "states") decoded = new WeakMap(), tall = 0; draw(); });
    const resize = new ResizeObserver(() => requestAnimationFrame(() => { if (f.box.clientWidth !== width) width = f.box.clientWidth, tall = 0, draw(); }));
    resize.observe(f.root);
    draw();
    return () => resize.disconnect();
  },
};
