// Typeset TeX with MathJax 3 at build time (book/math.py runs this with node): the site's
// pages carry their math as HTML (MathJax's CommonHTML output, with its MathML for screen
// readers), so no page loads MathJax. MathJax's files are sphinx-mathjax-offline's, whose
// folder is the first argument; nothing is fetched.
//
// Protocol, one JSON object a line: in {"tex": "...", "display": true|false}, out
// {"html": "...", "error": "..." | null}; in {"css": true}, out {"css": "..."}: the style
// sheet for every character typeset so far, its fonts named relative to the folder of
// MathJax's files (output/chtml/fonts/woff-v2/).
"use strict";
const readline = require("node:readline");

const root = process.argv[2];
require(`${root}/node-main.js`)
  .init({
    loader: { load: ["input/tex", "output/chtml", "adaptors/liteDOM", "a11y/assistive-mml"] },
    tex: { packages: { "[+]": ["ams"] } },
    chtml: { fontURL: "output/chtml/fonts/woff-v2" },
    startup: { typeset: false },
  })
  .then((MathJax) => {
    const adaptor = MathJax.startup.adaptor;
    const lines = readline.createInterface({ input: process.stdin });
    lines.on("line", (line) => {
      const ask = JSON.parse(line);
      let answer;
      if (ask.css) {
        answer = { css: adaptor.textContent(MathJax.chtmlStylesheet()) };
      } else {
        const node = MathJax.tex2chtml(ask.tex, { display: !!ask.display });
        const html = adaptor.outerHTML(node);
        const bad = adaptor.tags(node, "mjx-merror");
        const error = bad.length
          ? adaptor.getAttribute(bad[0], "data-mjx-error") || adaptor.textContent(bad[0])
          : /<mjx-mtext[^>]*style="color: red;"/.test(html)
            ? "an undefined control sequence (shown in red)"
            : null;
        answer = { html, error };
      }
      process.stdout.write(`${JSON.stringify(answer)}\n`);
    });
  })
  .catch((err) => {
    process.stderr.write(`MathJax did not start: ${err.message}\n`);
    process.exit(1);
  });
