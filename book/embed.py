"""The course's widgets in the static edition: their traits, computed at build time, in the page.

Every widget the course shows is a :class:`~mhsa_helpers.widgets.base.PictureWidget`: an ES
module (``front/<entry>``) that draws from the traits the kernel syncs. After a notebook
has run, :func:`embed_all` (a last cell, not kept) takes every such widget of the kernel,
redraws it with the course's functions (:data:`~mhsa_helpers.widgets.base.REFERENCE`) and
writes ``{entry, traits}`` by model id; :func:`html` makes that the page's output, which
``book/static/mhsa-book.js`` renders with the same module over ``front/local.js``'s
``localModel``, and one line for a reader without JavaScript. Nothing here knows a widget
but the explorer, whose controls also change its data state (example, layer, heads, mask,
length): its ``book`` entry (:func:`explorer_table`) is what the page computes new states
from (``local.js`` ``explorerAnswer``).
"""

from __future__ import annotations

import gc
import itertools
import json
import re
from html import escape
from pathlib import Path

import anywidget

from mhsa_helpers.examples import EXAMPLES, get_example
from mhsa_helpers.widgets.base import FRONT, REFERENCE, PictureWidget, encode, esm
from mhsa_helpers.widgets.explorer import SUITED_MASK, Explorer, default_heads

__all__ = ["MASKS", "embed", "embed_all", "entry_of", "explorer_table", "html", "traits_of"]

#: The explorer's masks (its toggle's values).
MASKS = ("none", "causal", "padding")
#: What a reader without JavaScript sees instead of a widget: where the picture lives.
STATIC_LINE = (
    "The picture is drawn here by the page's JavaScript (turned off or not loaded): turn it "
    "on, or open the notebook, linked at the top of this page, to run it."
)
_BASE = frozenset(anywidget.AnyWidget.class_trait_names(sync=True))


def entry_of(w: PictureWidget) -> str:
    """The module ``w`` runs: the name of the file of ``front/`` whose :func:`esm` it is."""
    for path in sorted(FRONT.glob("*.js")):
        if esm(path.name) == w._esm:
            return path.name
    raise ValueError(f"{type(w).__name__}'s _esm is no module of {FRONT}")


def traits_of(w: PictureWidget) -> dict:
    """The traits ``w`` syncs to its module (anywidget's and ipywidgets' own left out)."""
    names = sorted(n for n in w.trait_names(sync=True) if n not in _BASE and n[0] != "_")
    return json.loads(json.dumps(w.get_state(names)))


def explorer_table(w: Explorer) -> dict:
    """What the book's explorer computes its data states from, and their words.

    Returns
    -------
    dict
        ``examples``: for each example the explorer can show (every one if its example
        control is shown, else its own), ``layers``: for each layer it can show (one but
        for the induction model; every one if the layer control is shown, else its own)
        ``{X, W}``, ``X`` (T, d_model) the layer's input and ``W`` (W_q, W_k, W_v, W_o:
        4 × (d_model, d_model)); its labels, ``head_choices``, ``layer_choices``, ``heads``
        (the default) and ``T``; ``suited``: the mask an example is shown with
        (``SUITED_MASK``); ``texts``: the distinct words of a state (each step's ``{status,
        notes, failing}``), and ``words``: ``"example|layer|heads|mask|reset"`` -> index in
        ``texts``, ``reset`` the mask an example set aside (empty: none), for every state the
        page can reach.
    """
    names = list(EXAMPLES) if "example" in w.controls else [w.state["example"]]
    table = {"examples": {}, "suited": SUITED_MASK, "words": {}, "texts": []}
    seen: dict[str, int] = {}
    ex = Explorer(functions=REFERENCE, controls=())
    for name in names:
        e = get_example(name)
        own = w.state["layer"] if name == w.state["example"] else e.layer_choices[0]
        layers = e.layer_choices if "layer" in w.controls else [own]
        at = {k: get_example(name, k) for k in layers}  # unreachable layers: null, not sent
        table["examples"][name] = {
            "layers": [
                {"X": encode(at[k].X), "W": [encode(m) for m in at[k].weights]} if k in at else None
                for k in e.layer_choices
            ],
            "title": e.title,
            "tokens": list(e.tokens),
            "features": list(e.features),
            "head_choices": list(e.head_choices),
            "layer_choices": e.layer_choices,
            "heads": default_heads(e),
            "T": e.T,
        }
        for k, h, mask in itertools.product(layers, e.head_choices, MASKS):
            ex.change_state(example=name, layer=k, heads=h, mask=mask)
            ex.change_state(mask=mask)  # where the example set its own mask aside
            resets = [m for m in MASKS if m != mask] if mask == SUITED_MASK.get(name) else []
            for reset in ["", *resets]:
                ex._reset_mask = reset or None
                text = json.dumps([ex.words(s) for s in range(1, 10)])
                key = f"{name}|{k}|{h}|{mask}|{reset}"
                table["words"][key] = seen.setdefault(text, len(seen))
    ex.close()
    table["texts"] = [json.loads(t) for t in seen]
    return table


def embed(w: PictureWidget) -> dict:
    """``{entry, traits}`` of ``w`` drawn with the course's functions (and the explorer's
    ``book``); the widget draws with its own again afterwards."""
    redraw = getattr(w, "refresh", None) or getattr(w, "update", None)
    learners = "_source" in vars(w) and redraw is not None  # it draws a learner's functions
    source = vars(w).get("_source")
    try:
        if learners:
            w._source = REFERENCE
            redraw()
        out = {"entry": entry_of(w), "traits": traits_of(w)}
        if isinstance(w, Explorer):
            out["book"] = explorer_table(w)
    finally:
        if learners:
            w._source = source
            redraw()
    return out


def html(embedded: dict) -> str:
    """A widget's output in the page: its traits as JSON, and the line shown without JS."""
    data = re.sub(r"<(?=[/!])", r"\\u003c", json.dumps(embedded, separators=(",", ":")))
    return (
        f'<div class="mhsa-book-widget" data-entry="{escape(embedded["entry"])}">'
        f'<script type="application/json">{data}</script>'
        f'<p class="mhsa-book-static">{STATIC_LINE}</p></div>'
    )


def live_widgets() -> list[PictureWidget]:
    """Every picture widget of this kernel with an open comm, once each."""
    gc.collect()  # widgets no longer referenced are not embedded
    found = {}
    for obj in gc.get_objects():
        try:
            ok = isinstance(obj, PictureWidget) and obj.comm is not None
        except ReferenceError:  # a weak proxy whose object is gone (the kernel holds some)
            continue
        if ok and obj.model_id:
            found.setdefault(obj.model_id, obj)
    return list(found.values())


def embed_all(path) -> dict[str, dict]:
    """Embed every picture widget of this kernel; write ``{model id: embedded}`` to ``path``
    (called in the kernel after a notebook has run). Returns the mapping written."""
    out = {w.model_id: embed(w) for w in live_widgets()}
    Path(path).write_text(json.dumps(out), encoding="utf-8")
    return out
