"""Freezing the course's live widgets into static HTML for the web edition (no kernel).

A live widget (:class:`~mhsa_helpers.widgets.live.Framed`) is driven from
Python over its controls' values; every state it draws (picture, status
line, notes, title) is kept, and :func:`freeze` writes one ``<div
class="mhsa-frozen">`` holding

* the current state inline (the page shows the picture with JavaScript off);
* the controls, labelled as the widget's (``<select>``, ``<input
  type="range">``, buttons such as Prev / Next), disabled until the script
  wires them;
* every state, gzip-compressed and base64-encoded in one ``<script
  type="application/octet-stream" class="mhsa-frozen-states">``, which
  ``book/static/mhsa-frozen.js`` decompresses and switches between.

The pictures are drawn with the course's reference
(:data:`~mhsa_helpers.widgets.live.REFERENCE`) and the status says so. They are
the widget's own drawings, but for each drawing's own id (unique in a page by
design: :func:`mhsa_helpers.widgets.svg.picture`), stored as a placeholder the
script replaces by an id of its own, which lets equal parts of the pictures
be stored once (the states are split into fragments at each ``<``).

:func:`freeze_all` freezes every live course widget of a kernel after its
notebook has run, by the model id of its view.
"""

from __future__ import annotations

import base64
import gc
import gzip
import itertools
import json
import re
from html import escape
from pathlib import Path

import ipywidgets as widgets

from mhsa_helpers.widgets import live
from mhsa_helpers.widgets.explorer import Explorer
from mhsa_helpers.widgets.live import REFERENCE, Framed
from mhsa_helpers.widgets.reverse import TryReversal

__all__ = ["BUDGET", "STATE_PARTS", "freeze", "freeze_all", "states"]

#: The largest frozen HTML of one widget, in bytes (a page stays under 6 MB with its images).
BUDGET = 2_500_000
#: What a state holds, in order: the widget's HTML parts, as its frame shows them.
STATE_PARTS = ("figure", "status_w", "notes_w", "title_w")
#: A drawing's own id (:func:`mhsa_helpers.widgets.svg.picture`), and what stands for it.
_UID = re.compile(r"\b(mhsa|blocked|notyet|bar)-\d+-[0-9a-f]{8}\b")
UID = "@UID@"
#: The explorer's examples in the static edition (its control, where shown, offers these).
EXAMPLES = ("song", "trained")
#: The explorer's masks in the static edition (padding would need its length slider too).
MASKS = ("none", "causal")
#: Buttons of a widget that move one of its controls: attribute -> (control, move); the
#: explorer's Prev / Next, and Next token / Reset of the kv-cache's ``DecodeWidget``.
BUTTONS = {"prev_w": ("step", -1), "next_w": ("step", +1), "reset_w": ("step", "first")}


def _controls(w: Framed) -> list[tuple[str, widgets.Widget]]:
    """``(name, control)`` of every control ``w``'s frame shows, in the frame's order.

    A control is an attribute ``<name>_w`` of the widget found in the frame's
    rows of controls; the check box "draw my failing functions anyway" and
    the text box of :class:`TryReversal` are not among them.
    """
    by_id = {
        id(v): k.removesuffix("_w")
        for k, v in vars(w).items()
        if k.endswith("_w")
        and isinstance(
            v,
            widgets.ToggleButtons | widgets.Dropdown | widgets.IntSlider | widgets.SelectionSlider,
        )
    }
    return [
        (by_id[id(c)], c)
        for row in _rows(w)
        for c in row
        if id(c) in by_id and not (isinstance(w, Explorer) and c is w.length_w)
    ]


def _rows(w: Framed) -> list[list]:
    """The frame's rows of controls (the HBoxes before the title or status)."""
    return [
        list(box.children)
        for box in w.widget.children
        if isinstance(box, widgets.HBox) and w.status_w not in box.children
    ]


def _values(w: Framed, name: str, control) -> list:
    """The values of ``control`` to draw, the controls set before it as they are now."""
    if isinstance(control, widgets.IntSlider):
        values = list(range(control.min, control.max + 1))
    else:
        values = list(control._options_values)
    if isinstance(w, Explorer):
        if name == "example":
            values = [v for v in EXAMPLES if v in values]
        elif name == "mask":
            values = [v for v in MASKS if v in values]
    return values


def _order(w: Framed, shown: list[str]) -> list[str]:
    """The controls in the order they are set (those whose options depend on others later)."""
    first = ["example", "mask", "heads", "view", "step", "query", "size", "block"]
    return sorted(shown, key=lambda n: first.index(n) if n in first else -1)


def _read(w: Framed) -> tuple[str, ...]:
    return tuple(getattr(w, part).value for part in STATE_PARTS)


def _ui(w: Framed, controls) -> dict:
    """Each control's options ``[label, value]`` (values as text) and whether it is disabled."""
    out = {}
    for name, c in controls:
        if isinstance(c, widgets.IntSlider):
            options = [[str(v), str(v)] for v in range(c.min, c.max + 1)]
        else:
            options = [
                [str(lab), str(v)]
                for lab, v in zip(c._options_labels, c._options_values, strict=True)
            ]
        out[name] = {"options": options, "disabled": bool(c.disabled)}
    return out


def states(
    w: Framed, every_query: bool = True
) -> tuple[list[str], list[tuple[tuple[str, ...], tuple[str, ...], dict]]]:
    """Every state ``w`` draws over its shown controls, drawn with the course's reference.

    The widget's controls are driven from Python and put back afterwards;
    it draws with the reference while this runs, with its own functions
    again after.

    Parameters
    ----------
    w : Framed
        A live course widget (not :class:`TryReversal`).
    every_query : bool
        The explorer: every query token in the matrices view too (else only
        in the query view, the matrices view at the widget's own query).

    Returns
    -------
    names : list of str, length n_controls
        The controls shown, in the frame's order.
    found : list of (values, parts, ui), length n_states
        ``values`` (n_controls,) the controls' values as text, ``parts`` the
        HTML of :data:`STATE_PARTS` (4,), ``ui`` each control's options and
        whether it is disabled. The widget's state when called comes first.
    """
    controls = _controls(w)
    names = [n for n, _ in controls]
    by_name = dict(controls)
    order = _order(w, names)
    before = {n: c.value for n, c in controls}
    source = w._source
    found: dict[tuple, tuple] = {}

    def take(free: dict) -> None:
        if getattr(w, "_reset_mask", None) is not None:  # the words of one path, not a state's
            w._reset_mask = None
            w.update()
        now = {n: str(by_name[n].value) for n in names}
        drawn = None
        # a disabled control (the explorer's step in the query view) changes nothing drawn:
        # the state is drawn once and found under each of its values
        for key in itertools.product(*(free.get(n, [now[n]]) for n in names)):
            if key not in found:
                drawn = drawn or (_read(w), _ui(w, controls))
                found[key] = drawn

    def walk(k: int, free: dict) -> None:
        if k == len(order):
            take(free)
            return
        name = order[k]
        c = by_name[name]
        values = _values(w, name, c)
        if c.disabled:
            walk(k + 1, {**free, name: [str(v) for v in values]})
            return
        if not every_query and name == "query" and w.view_w.value == "matrices":
            values = [c.value]  # every query in the query view only
        for v in values:
            c.value = v
            walk(k + 1, free)

    try:
        w._source = REFERENCE
        w.update()
        take({})  # the widget's own state first: the one shown inline
        walk(0, {})
    finally:
        w._source = source
        for n in order:  # put back as it was, drawn with its own functions again
            if n in before and by_name[n].value != before[n]:
                by_name[n].value = before[n]
        w.update()
    return names, [(k, *v) for k, v in found.items()]


def _pack(names, found, w) -> dict:
    """The states as fragments stored once: what the script reads (see module docstring)."""
    fragments: dict[str, int] = {}
    strings: dict[str, int] = {}

    def string(text: str) -> int:
        if text not in strings:
            strings[text] = len(strings)
        return strings[text]

    seen = {n: {key[i] for key, _, _ in found} for i, n in enumerate(names)}
    uis: dict[str, int] = {}
    out_states = []
    for key, parts, ui in found:
        ui = {
            n: {**u, "options": [o for o in u["options"] if o[1] in seen[n]]} for n, u in ui.items()
        }
        text = json.dumps(ui, sort_keys=True)
        uis.setdefault(text, len(uis))
        out_states.append(
            [list(key), *(string(_UID.sub(rf"\1-{UID}", p)) for p in parts), uis[text]]
        )
    seqs = []
    for text in strings:
        seqs.append(
            [fragments.setdefault(f, len(fragments)) for f in re.split(r"(?=<)", text) if f]
        )
    return {
        "controls": names,
        "fragments": list(fragments),
        "strings": seqs,
        "uis": [json.loads(u) for u in uis],
        "states": out_states,
    }


def _control_html(name: str, c, ui: dict) -> str:
    """One control, labelled as the widget's, at its current value (disabled until wired)."""
    label = escape(c.description or name)
    value = str(c.value)
    options = ui["options"]
    if isinstance(c, widgets.IntSlider | widgets.SelectionSlider):
        index = next((i for i, (_, v) in enumerate(options) if v == value), 0)
        shown = escape(options[index][0]) if options else ""
        return (
            f"<label class='mhsa-control mhsa-range'><span>{label}</span>"
            f"<input type='range' data-control='{name}' min='0' max='{max(len(options) - 1, 0)}' "
            f"step='1' value='{index}' disabled>"
            f"<output data-readout='{name}'>{shown}</output></label>"
        )
    opts = "".join(
        f"<option value='{escape(v, quote=True)}'{' selected' if v == value else ''}>"
        f"{escape(lab)}</option>"
        for lab, v in options
    )
    return (
        f"<label class='mhsa-control mhsa-select'><span>{label}</span>"
        f"<select data-control='{name}' disabled>{opts}</select></label>"
    )


def _button_html(attr: str, b: widgets.Button) -> str:
    control, move = BUTTONS[attr]
    return (
        f"<button type='button' class='mhsa-button' data-button-for='{control}' "
        f"data-move='{move}' disabled>{escape(b.description)}</button>"
    )


def _frame_html(w: Framed, rows_html: list[str], parts: tuple[str, ...], extra: str = "") -> str:
    figure, status, notes, title = parts
    head = f"<div class='mhsa-slot-title'>{title}</div>" if title else ""
    rows = "".join(f"<div class='mhsa-frozen-row'>{r}</div>" for r in rows_html if r)
    return (
        f"<div class='mhsa-frozen mhsa-frame' style='width:{live.svg.WIDTH + 8}px'>"
        f"{live._STYLE}<div class='mhsa-frozen-controls'>{rows}</div>{head}"
        f"<div class='mhsa-slot-status'>{status}</div>"
        f"<div class='mhsa-slot-figure'>{figure}</div>"
        f"<div class='mhsa-slot-notes'>{notes}</div>{extra}</div>"
    )


def freeze(w: Framed) -> str:
    """Static HTML for one live course widget: its current state, its controls, every state.

    Parameters
    ----------
    w : Framed
        A live course widget (:class:`~mhsa_helpers.widgets.explorer.Explorer`,
        an extension's, or :class:`~mhsa_helpers.widgets.reverse.TryReversal`,
        frozen as its current picture only).

    Returns
    -------
    html : str
        One ``<div class="mhsa-frozen">``: the structure ``mhsa-frozen.js`` reads.
    """
    if isinstance(w, TryReversal):
        parts = (*_read(w)[:2], _read(w)[2], "")
        line = (
            "<p class='mhsa-frozen-static'>A static page: open the notebook to try "
            "your own letters.</p>"
        )
        return _frame_html(w, [], parts, line)
    names, found = states(w)
    html = _frozen(w, names, found)
    if len(html.encode()) > BUDGET and isinstance(w, Explorer):  # every query in one view
        html = _frozen(w, *states(w, every_query=False))
    return html


def left_out(w: Framed) -> str:
    """A line under a frozen explorer: what the notebook's live one has that this page does not.

    The notebook's text speaks of the live widget (the padding mask and its
    length, every example, the box to draw a failing function anyway); the
    page says which of those it leaves to the notebook. Empty for the other
    widgets, whose controls are all drawn over their whole ranges.
    """
    if not isinstance(w, Explorer):
        return ""
    shown = dict(_controls(w))
    missing = []
    if "mask" in shown:
        missing.append("the padding mask and its length")
    if "example" in shown:
        others = [v for v in shown["example"]._options_values if v not in EXAMPLES]
        missing.append(f"the other examples ({', '.join(others)})" if others else "")
    missing.append("the box that draws a failing function anyway")
    missing = [m for m in missing if m]
    said = " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)
    return (
        "<p class='mhsa-frozen-static'>Drawn in advance for this page, for the values its "
        f"controls offer; {said} are in the notebook's live explorer.</p>"
    )


def _frozen(w: Framed, names: list[str], found: list) -> str:
    """The frozen HTML of ``w`` for its states ``found`` (:func:`states`)."""
    first_parts = found[0][1]
    packed = _pack(names, found, w)
    blob = base64.b64encode(
        gzip.compress(json.dumps(packed, separators=(",", ":")).encode(), 9, mtime=0)
    ).decode()
    controls = dict(_controls(w))
    rows_html = []
    for row in _rows(w):
        cells = []
        for c in row:
            name = next((n for n, cc in controls.items() if cc is c), None)
            attr = next((a for a in BUTTONS if getattr(w, a, None) is c), None)
            if name is not None:
                cells.append(_control_html(name, c, packed["uis"][packed["states"][0][-1]][name]))
            elif attr is not None:
                cells.append(_button_html(attr, c))
        rows_html.append("".join(cells))
    store = (
        "<script type='application/octet-stream' class='mhsa-frozen-states' "
        f"data-states='{len(found)}'>{blob}</script>"
    ) + left_out(w)
    return _frame_html(w, rows_html, first_parts, store)


def live_widgets() -> list[Framed]:
    """Every live course widget in this kernel with a view (a model id), once each."""
    out, ids = [], set()
    gc.collect()  # widgets no longer referenced (their observers make cycles) are not frozen
    for obj in gc.get_objects():
        try:
            framed = isinstance(obj, Framed) and getattr(obj, "frame", None) is not None
        except ReferenceError:  # a weak proxy whose object is gone (the kernel holds some)
            continue
        if framed:
            if obj.widget.comm is None:  # closed: no view shows it
                continue
            model = obj.widget.model_id
            if model and model not in ids:
                ids.add(model)
                out.append(obj)
    return out


def freeze_all(path) -> dict[str, str]:
    """Freeze every live course widget of this kernel; write ``{model id: html}`` to ``path``.

    Called in the kernel after a notebook has run: the model id is the one
    the notebook's widget-view output names (that of ``widget.widget``).
    Returns the mapping written.
    """
    frozen = {w.widget.model_id: freeze(w) for w in live_widgets()}
    Path(path).write_text(json.dumps(frozen), encoding="utf-8")
    return frozen
