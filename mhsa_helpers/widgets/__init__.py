"""Drawing: the capstone's explorer, its SVG pictures and the extensions' live widgets.

* :mod:`.explorer`: the step-by-step explorer of the whole layer;
* :mod:`.svg`: the vector pictures every widget draws (matrices, the query's view);
* :mod:`.live`: the shared rule for drawing with the learner's own functions (only while
  their check passes, and saying so);
* one module per extension's widget: :mod:`.rope`, :mod:`.gqa`, :mod:`.kv_cache`,
  :mod:`.tiled`, :mod:`.cross`, :mod:`.sliding_window`;
* :mod:`.reverse`: the trained model of notebook 18 on the learner's own letters.

Notebooks import them from here, e.g. ``from mhsa_helpers.widgets.explorer import Explorer``.
"""
