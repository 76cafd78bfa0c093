// The static edition's keys (book/conf.py). ← / → turn the page (the page's <link rel="prev">
// and rel="next">) only when the focus is on the page itself: never from inside a widget, where
// the arrows move its slider, its select or its picture's cells, nor from a form control (the
// search box). The contents buttons (labels of Furo's checkboxes, and templates/page.html's)
// are reached by Tab and pressed by Enter or Space, as buttons are.
(() => {
  /** Where the arrows belong to what has the focus. */
  const OWNS_ARROWS =
    ".mhsa-book-widget, input, select, textarea, button, [contenteditable], [role=slider], " +
    "[role=listbox], [role=menu], [role=tablist], [role=grid], [role=spinbutton]";
  const PAGE = { ArrowLeft: "prev", ArrowRight: "next" };

  /** Whether ``target`` (an event's, or the focused element) is the page itself. */
  const onThePage = (target) =>
    !target ||
    target === document.body ||
    target === document.documentElement ||
    !(target.closest && target.closest(OWNS_ARROWS)) && !target.isContentEditable &&
      !target.matches("a[href], [tabindex]:not(article)");

  document.addEventListener("keydown", (event) => {
    const rel = PAGE[event.key];
    if (!rel || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey ||
        event.shiftKey || !onThePage(event.target)) {
      return;
    }
    const link = document.querySelector(`link[rel="${rel}"]`);
    if (link) {
      event.preventDefault();
      window.location.href = link.href;
    }
  });

  const buttons = document.querySelectorAll(
    "label.nav-overlay-icon, label.toc-overlay-icon, label.mhsa-contents-button, " +
      "label.mhsa-contents-close",
  );
  for (const label of buttons) {
    label.tabIndex = 0;
    label.setAttribute("role", "button");
    label.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        label.click();
      }
    });
  }
})();
