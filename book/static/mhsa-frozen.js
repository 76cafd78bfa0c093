/* The course's widgets, frozen (book/freeze.py): their pre-drawn states, switched here.
 *
 * For every <div class="mhsa-frozen">: the states in its
 * <script type="application/octet-stream" class="mhsa-frozen-states"> (base64 of gzip of
 * JSON) are decompressed with DecompressionStream("gzip"); its controls
 * ([data-control] selects and range inputs, [data-button-for] buttons) are wired; a
 * change shows the state with those values (or, where none was drawn, the nearest one:
 * the value just chosen, as many of the others as can be kept) in the slots
 * .mhsa-slot-figure, -status, -notes and -title. No network request is made.
 * Without JavaScript the state written in the page stays, its controls disabled.
 */
(function () {
  "use strict";
  var drawings = 0;

  function inflate(base64) {
    var bytes = Uint8Array.from(atob(base64.trim()), function (c) { return c.charCodeAt(0); });
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  function wire(root, data) {
    var names = data.controls;
    var texts = data.strings.map(function (seq) {
      return seq.map(function (i) { return data.fragments[i]; }).join("");
    });
    var byKey = new Map();
    data.states.forEach(function (s) { byKey.set(s[0].join("\u0000"), s); });
    var control = {};
    names.forEach(function (n) { control[n] = root.querySelector('[data-control="' + n + '"]'); });
    var buttons = Array.prototype.slice.call(root.querySelectorAll("[data-button-for]"));
    var slots = ["figure", "status", "notes", "title"].map(function (n) {
      return root.querySelector(".mhsa-slot-" + n);
    });
    var current = data.states[0];

    function ui() { return data.uis[current[5]]; }

    function index(n, value) {
      var options = ui()[n].options;
      for (var i = 0; i < options.length; i++) if (options[i][1] === value) return i;
      return -1;
    }

    function show(state) {
      current = state;
      var u = ui();
      names.forEach(function (n, k) {
        var el = control[n];
        if (!el) return;
        var options = u[n].options;
        var value = state[0][k];
        if (el.tagName === "SELECT") {
          var same = el.options.length === options.length && options.every(function (o, i) {
            return el.options[i].value === o[1] && el.options[i].text === o[0];
          });
          if (!same) {
            el.replaceChildren.apply(el, options.map(function (o) {
              var opt = document.createElement("option");
              opt.value = o[1];
              opt.text = o[0];
              return opt;
            }));
          }
          el.value = value;
        } else {
          var i = Math.max(0, index(n, value));
          el.max = String(Math.max(0, options.length - 1));
          el.value = String(i);
          var out = root.querySelector('[data-readout="' + n + '"]');
          if (out && options[i]) out.textContent = options[i][0];
        }
        el.disabled = !!u[n].disabled;
      });
      buttons.forEach(function (b) {
        var n = b.dataset.buttonFor;
        var move = b.dataset.move;
        var k = names.indexOf(n);
        if (k < 0) { b.disabled = true; return; }
        var i = index(n, state[0][k]);
        var last = ui()[n].options.length - 1;
        b.disabled = !!ui()[n].disabled ||
          (move === "first" ? false : i + Number(move) < 0 || i + Number(move) > last);
      });
      var uid = "fz" + (++drawings) + "-" + Math.random().toString(16).slice(2, 10);
      var parts = [texts[state[1]].split("@UID@").join(uid), texts[state[2]],
                   texts[state[3]], texts[state[4]]];
      slots.forEach(function (slot, i) { if (slot) slot.innerHTML = parts[i]; });
    }

    function choose(n, value) {
      var k = names.indexOf(n);
      var want = current[0].slice();
      want[k] = value;
      var state = byKey.get(want.join("\u0000"));
      if (!state) {  // none drawn: the nearest, the value just chosen kept
        var best = -1;
        data.states.forEach(function (s) {
          if (s[0][k] !== value) return;
          var score = 0;
          for (var j = 0; j < names.length; j++) {
            if (j !== k && s[0][j] === want[j]) score += Math.pow(2, names.length - j);
          }
          if (score > best) { best = score; state = s; }
        });
      }
      if (state) show(state); else show(current);
    }

    names.forEach(function (n) {
      var el = control[n];
      if (!el) return;
      if (el.tagName === "SELECT") {
        el.addEventListener("change", function () { choose(n, el.value); });
      } else {
        el.addEventListener("input", function () {
          var o = ui()[n].options[Number(el.value)];
          if (o) choose(n, o[1]);
        });
      }
    });
    buttons.forEach(function (b) {
      b.addEventListener("click", function () {
        var n = b.dataset.buttonFor;
        var options = ui()[n].options;
        var i = b.dataset.move === "first" ? 0 :
          index(n, current[0][names.indexOf(n)]) + Number(b.dataset.move);
        if (options[i]) choose(n, options[i][1]);
      });
    });
    show(current);
    root.classList.add("mhsa-frozen-live");
  }

  function setup(root) {
    var store = root.querySelector("script.mhsa-frozen-states");
    if (!store || root.dataset.mhsaWired) return;
    root.dataset.mhsaWired = "1";
    inflate(store.textContent).then(function (data) { wire(root, data); }, function () {
      root.dataset.mhsaWired = "";  // the state written in the page stays
    });
  }

  function start() {
    if (typeof DecompressionStream === "undefined") return;  // the page's state stays
    Array.prototype.forEach.call(document.querySelectorAll(".mhsa-frozen"), setup);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
