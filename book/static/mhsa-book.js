// The course's widgets in the book (book/embed.py): each drawn by its own module, the one the
// notebook runs (copied to _static/mhsa/), from the traits computed at build time with the
// course's reference, over a model without a kernel (local.js). Nothing is fetched but the
// site's own files, and only on a page with widgets; without JavaScript, each widget's one
// line says where the picture lives.
const boxes = document.querySelectorAll(".mhsa-book-widget");
const local = boxes.length ? await import("./mhsa/local.js") : null;
/** What stands for the kernel where a widget asks it for more: the explorer's data states. */
const ANSWERS = { "explorer.js": local && local.explorerAnswer };

for (const box of boxes) {
  const line = box.querySelector(".mhsa-book-static");
  try {
    const { entry, traits, book } = JSON.parse(box.querySelector("script").textContent);
    const { default: widget } = await import(`./mhsa/${entry}`);
    const el = document.createElement("div");
    line.replaceWith(el);
    const answer = ANSWERS[entry] ? ANSWERS[entry](book, traits) : null;
    widget.render({ model: local.localModel(traits, answer), el });
  } catch (error) {
    line.textContent = `This picture could not be drawn here (${error.message}): open the notebook, linked at the top of this page.`;
    console.error(error);
  }
}
