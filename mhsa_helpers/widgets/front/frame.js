// Every widget's frame: controls that wrap on a narrow screen, a title, the status line, the
// picture in a box that scrolls sideways (and says so) where the screen is narrower than the
// picture, its tooltip, and the notes. Sized so the whole widget fits the screen it is on.

const CSS = `
.mhsa-w [hidden]{display:none!important}
.mhsa-w{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;color:#111;max-width:100%;min-width:0}
.mhsa-w .mhsa-controls{display:flex;flex-wrap:wrap;gap:4px 12px;align-items:center;margin:2px 0 6px}
.mhsa-w .mhsa-control{display:inline-flex;align-items:center;gap:4px;flex:0 1 auto;min-width:0;max-width:100%}
.mhsa-w .mhsa-stepper{gap:6px;flex-wrap:nowrap}
.mhsa-w .mhsa-control>span.mhsa-label{font-size:13px;color:#333}
.mhsa-w select{max-width:min(330px,70vw);font-size:13px}
.mhsa-w .mhsa-toggle{display:inline-flex;flex-wrap:wrap}
.mhsa-w button{font-size:13px;padding:2px 8px;border:1px solid #888;background:#f4f4f4;border-radius:3px;cursor:pointer;min-height:26px}
.mhsa-w button[aria-pressed=true]{background:#1f4e79;color:#fff;border-color:#1f4e79}
.mhsa-w button:disabled,.mhsa-w input:disabled{opacity:.45;cursor:default}
.mhsa-w input[type=range]{width:120px}
.mhsa-w .mhsa-title{font-weight:normal;min-height:20px}
.mhsa-w .mhsa-statusline{display:flex;gap:12px;align-items:flex-start;flex-wrap:wrap}
.mhsa-w .mhsa-status{flex:1 1 300px}
.mhsa-w .mhsa-box{position:relative;overflow-x:auto;overflow-y:hidden;max-width:100%;margin:4px 0}
.mhsa-w .mhsa-box svg{display:block}
.mhsa-w .mhsa-scroll{font-size:12px;color:#555}
.mhsa-w .mhsa-notes{font-size:13px;line-height:1.35;overflow-wrap:anywhere}
.mhsa-w .warn{color:#9a3b00}
.mhsa-w .mhsa-tip{position:absolute;z-index:5;max-width:340px;padding:5px 8px;background:#fff;border:1px solid #555;border-radius:4px;box-shadow:0 2px 6px rgba(0,0,0,.25);font-size:12px;line-height:1.35;pointer-events:none}
.mhsa-w .mhsa-tip-head{font-weight:bold}
.mhsa-w svg .cell,.mhsa-w svg .link{transition:opacity 100ms}
.mhsa-w svg.dim .cell:not(.lit),.mhsa-w svg.dim .link:not(.lit){opacity:.3}
.mhsa-w svg .cell:focus,.mhsa-w svg .link:focus{outline:none}
.mhsa-w svg .cell:is(:hover,:focus) rect{stroke:#000;stroke-width:2.5}
`;

/** The frame's parts in `el`: {root, controls, title, status, side, box, tip, scroll, notes}. */
export function frame(el) {
  const doc = el.ownerDocument;
  if (!doc.getElementById("mhsa-w-style")) {
    const style = doc.createElement("style");
    style.id = "mhsa-w-style";
    style.textContent = CSS;
    doc.head.appendChild(style);
  }
  const div = (cls, parent, tag = "div") => {
    const d = doc.createElement(tag);
    d.className = cls;
    parent.appendChild(d);
    return d;
  };
  el.replaceChildren();
  const root = div("mhsa-w", el);
  // the keys of the controls and cells are theirs, not the notebook's (JupyterLab's arrows
  // would move between cells); with Ctrl, Alt or Meta, or Escape, they are JupyterLab's
  root.addEventListener("keydown", (e) => {
    if (!e.ctrlKey && !e.metaKey && !e.altKey && e.key !== "Escape") e.stopPropagation();
  });
  const f = { root, controls: div("mhsa-controls", root), title: div("mhsa-title", root) };
  const line = div("mhsa-statusline", root);
  f.status = div("mhsa-status", line);
  f.side = div("mhsa-side", line);
  f.scroll = div("mhsa-scroll", root); // above the picture: seen before it is scrolled past
  f.scroll.hidden = true;
  f.scroll.textContent = "\u2194 The picture is wider than this screen: scroll it sideways.";
  f.box = div("mhsa-box", root);
  f.box.tabIndex = -1;
  f.tip = div("mhsa-tip", f.box);
  f.tip.hidden = true;
  f.tip.setAttribute("aria-hidden", "true"); // each cell's aria-label is read instead
  f.notes = div("mhsa-notes", root);
  return f;
}

/** Put `svg` in the frame's box (its tooltip kept) and say whether the box scrolls. */
export function show(f, svg) {
  const old = f.box.querySelector("svg");
  if (old) old.replaceWith(svg);
  else f.box.insertBefore(svg, f.tip);
  f.tip.hidden = true;
  f.root.dataset.drawnFor = f.box.clientWidth; // the width drawn for (0: in a hidden view)
  const over = svg.width.baseVal.value > f.box.clientWidth + 1;
  f.scroll.hidden = !over && !f.scroll.reserved; // reserved: kept in place, shown only when true
  f.scroll.style.visibility = over ? "" : "hidden";
}

/** The visible height of the notebook the frame is in (JupyterLab), else of the window. */
export function screenHeight(f) {
  const area = f.root.closest(".jp-WindowedPanel-outer") || f.root.closest(".jp-Notebook");
  const h = window.innerHeight || 800;
  return area && area.clientHeight > 200 ? Math.min(area.clientHeight, h) : h;
}

/** The room the screen leaves the picture: the frame's width, and the visible height less
 * the frame's other parts as they are now (and their margins). On a phone (a narrow window,
 * where the page scrolls anyway) the picture may take the screen's height: squeezed under
 * wrapped words, its cells would be too small for their numbers. */
export function room(f) {
  const parts = [f.controls, f.title, f.status.parentElement, f.scroll, f.notes];
  const used = parts.reduce((h, p) => h + (p.hidden ? 0 : p.offsetHeight), 0);
  const width = Math.max(f.box.clientWidth, 280), screen = screenHeight(f);
  const phone = (window.innerWidth || 1000) < 600; // the window, not a narrow pane of JupyterLab
  return { width, height: Math.max(200, screen - used - 24, phone ? 0.85 * screen : 0) };
}

/**
 * One control: {name, label, kind: "select"|"toggle"|"slider"|"check", options: [[label,
 * value]], value, tips}; `input(value)` is called on the learner's change. Returns the
 * element with `set(value, options, disabled)` to show a new state without calling `input`.
 */
export function control(spec, input) {
  // a toggle's buttons in a <label> would all answer a click on its words: a group instead
  const wrap = document.createElement(spec.kind === "toggle" ? "div" : "label");
  wrap.className = `mhsa-control mhsa-${spec.name}`;
  const label = document.createElement("span");
  label.className = "mhsa-label";
  label.textContent = spec.label;
  if (spec.kind !== "check") wrap.appendChild(label);
  let options = [];
  let widget, readout;
  const index = (v) => options.findIndex((o) => String(o[1]) === String(v));
  const value = (i) => options[i][1];
  if (spec.kind === "select") {
    widget = document.createElement("select");
    widget.addEventListener("change", () => input(value(widget.selectedIndex)));
  } else if (spec.kind === "toggle") {
    widget = document.createElement("span");
    widget.className = "mhsa-toggle";
    widget.setAttribute("role", "group");
    widget.setAttribute("aria-label", spec.label);
    widget.addEventListener("click", (e) => {
      const b = e.target.closest("button");
      if (b && !b.disabled) input(value(Number(b.dataset.i)));
    });
  } else if (spec.kind === "slider") {
    widget = document.createElement("input");
    widget.type = "range";
    widget.min = 0;
    readout = document.createElement("output");
    widget.addEventListener("input", () => {
      readout.textContent = options[widget.valueAsNumber][0];
      input(value(widget.valueAsNumber));
    });
  } else {
    widget = document.createElement("input");
    widget.type = "checkbox";
    widget.addEventListener("change", () => input(widget.checked));
  }
  wrap.appendChild(widget);
  if (spec.kind === "check") wrap.appendChild(label);
  if (readout) wrap.appendChild(readout);
  wrap.set = (v, opts = null, disabled = false) => {
    if (opts && JSON.stringify(opts) !== JSON.stringify(options)) {
      options = opts;
      if (spec.kind === "select") {
        widget.replaceChildren(...options.map(([l, val]) => new Option(l, String(val))));
      } else if (spec.kind === "toggle") {
        widget.replaceChildren(...options.map(([l], i) => {
          const b = document.createElement("button");
          b.type = "button";
          b.textContent = l;
          b.dataset.i = i;
          if (spec.tips) b.title = spec.tips[i];
          return b;
        }));
      } else if (spec.kind === "slider") widget.max = options.length - 1;
    }
    const i = index(v);
    if (spec.kind === "select") widget.selectedIndex = i;
    else if (spec.kind === "toggle") {
      [...widget.children].forEach((b, k) => {
        b.setAttribute("aria-pressed", String(k === i));
        b.disabled = disabled;
      });
    } else if (spec.kind === "slider") {
      widget.value = String(Math.max(0, i));
      readout.textContent = i >= 0 ? options[i][0] : "";
    } else widget.checked = !!v;
    if (spec.kind !== "toggle") widget.disabled = disabled;
  };
  wrap.set(spec.value, spec.options || null);
  return wrap;
}

/** A button `text` calling `click`. */
export function button(text, click) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.addEventListener("click", click);
  return b;
}
