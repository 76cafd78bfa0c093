"""The pictures: computed in the kernel, drawn in the page.

* :mod:`.base`: what every widget shares (its ES module, the numbers it sends, the look);
* :mod:`.explorer`: the step-by-step explorer of the whole layer (one data state at a time);
* :mod:`.panels`: the extensions' widgets (every state of their controls at once), one module
  each: :mod:`.rope`, :mod:`.gqa`, :mod:`.kv_cache`, :mod:`.tiled`, :mod:`.cross`,
  :mod:`.sliding_window`;
* :mod:`.reverse`: the trained model of notebook 18 on the learner's own letters (in the page);
* ``front/``: the plain ES modules that draw them, in JupyterLab and in the book.

Notebooks import them from here, e.g. ``from mhsa_helpers.widgets.explorer import Explorer``.
"""
