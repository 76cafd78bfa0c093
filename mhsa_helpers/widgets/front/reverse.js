// Try your own input (notebook 18, anywidget): the trained model runs in the page on the letters
// the learner types (forward.js), each head's weights drawn as panels, the output said against
// the reversed input with each letter's probability. The kernel
// (mhsa_helpers/widgets/reverse.py) or the book sends the model's parameters once.
import { decode, fmt } from "./picture.js";
import { grid, interact, scalesFor } from "./draw.js";
import { frame, room, show } from "./frame.js";
import { SEQ_LEN, VOCAB, parseLetters, reversal } from "./forward.js";

const WARN = (html) => `<span class="warn">${html}</span>`;
const esc = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;");

/** Each head in words (mhsa_helpers.training.heads.name_heads): the pattern whose keys get the
 * most of its weight on average, named where that is at least `threshold`, with measured numbers. */
export function headLines(weights, patterns, threshold = 0.8) {
  const T = weights[0].length;
  const keyOf = { mirror: (i) => T - 1 - i, itself: (i) => i, previous: (i) => (i + T - 1) % T, next: (i) => (i + 1) % T };
  return weights.map((A, k) => {
    const share = (p) => A.reduce((s, row, i) => s + row[keyOf[p](i)], 0) / T;
    const best = Object.keys(patterns).reduce((a, b) => (share(b) > share(a) ? b : a));
    const top = A.map((row) => row.indexOf(Math.max(...row))); // each query's strongest key
    if (share(best) < threshold) return `head ${k + 1}: no single pattern on your input; each query's strongest key (positions from 0): ${top.join(" ")}`;
    const hits = top.filter((j, i) => j === keyOf[best](i)).length;
    return `head ${k + 1}: mostly ${patterns[best]}, the strongest key for ${hits} of ${T} queries (${share(best).toFixed(2)} of its weight there on average)`;
  });
}

/** The status line and notes (HTML) of the model's `result` on `letters`: the output against
 * the reversed input, each output letter's probability, what each head attends to. */
export function verdict(letters, result, patterns) {
  const { output, probabilities, weights } = result;
  const T = letters.length, want = [...letters].reverse(), word = letters.join("");
  const wrong = output.flatMap((o, i) => (o === want[i] ? [] : [i]));
  let status = `${word} \u2192 output ${output.join(" ")}: ${wrong.length ? WARN("not quite the reverse of your input") : "the reverse of your input"}, ${T - wrong.length} of ${T} letters right`;
  if (wrong.length) status += ` (wrong at position ${wrong.join(", ")}, counting from 0: see below)`;
  const first = wrong.length
    ? WARN(`Wrong letters (positions from 0): ${wrong.map((i) => `position ${i} gave ${output[i]} (want ${want[i]})`).join("; ")}.`)
    : `Every output letter is its mirror input letter: position i gets the letter at position ${T - 1}\u2212i.`;
  const least = (Math.floor(Math.min(...probabilities) * 1000) / 1000).toFixed(3);
  const sure = `Each output letter has, in the model's eyes, a probability of ${least} or more:`;
  const each = output.map((o, i) => `${o} ${fmt(probabilities[i], 3)}`).join(", ");
  return { status: `${status}.`, notes: [`${first} ${sure} ${each}.`, ...headLines(weights, patterns)] };
}

/** The picture: one panel of attention weights per head, on the fixed scale 0 to 1. */
export function reversalPicture(letters, weights, style) {
  const panels = weights.map((A, k) => ({
    M: A, title: `head ${k + 1}: attention weights`, rows: letters, cols: letters, kinds: ["query", "key"],
    links: ["q", "k"], colour: style.heads[k % style.heads.length], meaning: "how much the query takes from the key",
  }));
  const axes = ["query (the letter at position i)", "key (the letter at position j)"];
  return { label: `the trained model's attention on ${letters.join("")}`, panels, axes, scales: scalesFor(panels, [0, 1], "weight") };
}

export default {
  render({ model, el }) {
    const f = frame(el);
    const wrap = document.createElement("label");
    wrap.className = "mhsa-control mhsa-letters";
    const input = document.createElement("input");
    input.type = "text";
    input.size = 24;
    input.spellcheck = false;
    const example = VOCAB.slice(0, SEQ_LEN).split("").join(" ");
    input.placeholder = `${SEQ_LEN} letters ${VOCAB[0]}\u2013${VOCAB[VOCAB.length - 1]}, e.g. ${example}`;
    wrap.append(Object.assign(document.createElement("span"), { className: "mhsa-label", textContent: "letters" }), input);
    f.controls.appendChild(wrap);
    f.title.hidden = true;
    const read = () => { if (input.value !== model.get("text")) model.set("text", input.value), model.save_changes(); };
    input.addEventListener("change", read); // Enter, or the box left
    input.addEventListener("keydown", (e) => { e.stopPropagation(); if (e.key === "Enter") read(); }); // not JupyterLab's keys
    let params = null, good = null, width = 0, size = null; // good: the last good input, {letters, result}

    function draw() {
      const text = model.get("text");
      if (input.value !== text && document.activeElement !== input) input.value = text;
      params = params || Object.fromEntries(Object.entries(model.get("params")).map(([k, v]) => [k, Array.isArray(v) ? decode(v) : v]));
      let letters;
      try {
        letters = parseLetters(text);
      } catch (error) {
        let keep = good && `The picture still shows your last good input, ${good.letters.join("")}.`;
        if (!good) { // none yet (a notebook saved with a bad input, reopened): the example's letters
          const first = VOCAB.slice(0, SEQ_LEN).split("");
          good = { letters: first, result: reversal(params, first) };
          keep = `The picture shows ${first.join("")} until your letters are read.`;
          redraw();
        }
        f.status.innerHTML = `${WARN(esc(error.message))} ${keep}`;
        f.notes.textContent = `Type ${SEQ_LEN} letters from ${VOCAB[0]}\u2013${VOCAB[VOCAB.length - 1]}, e.g. ABCDEFGH or a b c d e f g h (spaces, commas and lower case are fine), then press Enter.`;
        return;
      }
      good = { letters, result: reversal(params, letters) };
      const words = verdict(letters, good.result, params.patterns);
      f.status.innerHTML = words.status;
      f.notes.innerHTML = words.notes.join("<br>");
      redraw();
    }
    function redraw() {
      if (!good) return;
      size = size || room(f); // one size for every input (the words' lengths vary): one height
      const svg = grid(reversalPicture(good.letters, good.result.weights, model.get("look")), size, model.get("look"));
      interact(svg, f.tip);
      show(f, svg);
    }
    model.on("change:text", draw);
    const resize = new ResizeObserver(() => requestAnimationFrame(() => { if (f.box.clientWidth !== width) width = f.box.clientWidth, size = null, redraw(); }));
    resize.observe(f.root);
    draw();
    return () => resize.disconnect();
  },
};
