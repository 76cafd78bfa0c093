// The course's widgets in the book (book/embed.py): each drawn by its own module, the one the
// notebook runs (all in mhsa-widgets.js, a plain script, so a page opened from disk draws them
// too), from the traits computed at build time with the course's reference, over a model
// without a kernel (local.js). Nothing is fetched; without JavaScript, each widget's one line
// says where the picture lives.
(() => {
  const modules = window.mhsaModules || {};
  const local = modules["local.js"];
  /** What stands for the kernel where a widget asks it for more: the explorer's data states. */
  const ANSWERS = { "explorer.js": local && local.explorerAnswer };
  for (const box of document.querySelectorAll(".mhsa-book-widget")) {
    const line = box.querySelector(".mhsa-book-static");
    try {
      const { entry, traits, book } = JSON.parse(box.querySelector("script").textContent);
      const el = document.createElement("div");
      const answer = ANSWERS[entry] ? ANSWERS[entry](book, traits) : null;
      modules[entry].default.render({ model: local.localModel(traits, answer), el });
      line.replaceWith(el);
    } catch (error) {
      line.textContent = `This picture could not be drawn here (${error.message}): open the notebook, linked at the top of this page.`;
      console.error(error);
    }
  }
})();
