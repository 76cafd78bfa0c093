"""Day two: a notebook saved before its widgets are drawn again keeps their last pictures.

JupyterLab writes into a notebook, at every save, the state of the widgets connected
to a kernel only (jupyterlab_widgets' ``get_state_sync``; ipywidgets#3888). A notebook
reopened the next day shows its widgets from the state saved with it, but the first
save before their cells run again (autosave does it two minutes after opening) would
drop that state, and the day after the outputs would say "model not found".

:func:`keep_widget_state`, a pre-save hook that this module, a Jupyter server extension
enabled by the course's settings (``jupyter-config/etc/jupyter/jupyter_server_config.d/``),
registers, puts back from the file on disk the saved state of every widget an output
still shows and the new save lacks, with the models it refers to.
"""

from __future__ import annotations

import json
import os

__all__ = ["keep_widget_state"]


def _jupyter_server_extension_points():
    return [{"module": "mhsa_helpers.lab_state"}]


def _load_jupyter_server_extension(serverapp) -> None:
    serverapp.contents_manager.register_pre_save_hook(keep_widget_state)


STATE = "application/vnd.jupyter.widget-state+json"
VIEW = "application/vnd.jupyter.widget-view+json"
REF = "IPY_MODEL_"


def _shown(nb: dict) -> set[str]:
    """The model ids the notebook's outputs show."""
    return {
        out["data"][VIEW]["model_id"]
        for cell in nb.get("cells", [])
        for out in cell.get("outputs", [])
        if VIEW in out.get("data", {})
    }


def _with_references(ids: set[str], states: dict) -> set[str]:
    """``ids`` and every model their states refer to (``"IPY_MODEL_<id>"``), among ``states``."""
    todo, seen = list(ids), set()
    while todo:
        mid = todo.pop()
        if mid in seen or mid not in states:
            continue
        seen.add(mid)
        text = json.dumps(states[mid].get("state", {}))
        todo += [part.split('"')[0] for part in text.split(REF)[1:]]
    return seen


def keep_widget_state(model: dict, path: str, contents_manager, **kwargs) -> None:
    """Jupyter server's pre-save hook: keep the saved state of the widgets still shown."""
    if model.get("type") != "notebook" or not path.endswith(".ipynb"):
        return
    nb = model.get("content") or {}
    saved = nb.get("metadata", {}).get("widgets", {}).get(STATE, {}).get("state", {})
    missing = _shown(nb) - set(saved)
    if not missing:
        return
    try:
        with open(os.path.join(contents_manager.root_dir, path.lstrip("/")), encoding="utf-8") as f:
            old = json.load(f)["metadata"]["widgets"][STATE]["state"]
    except (OSError, ValueError, KeyError, TypeError):  # a new file, or none saved: none kept
        return
    keep = {mid: old[mid] for mid in _with_references(missing, old)}
    if keep:
        widgets = nb.setdefault("metadata", {}).setdefault("widgets", {})
        widgets.setdefault(STATE, {"version_major": 2, "version_minor": 0, "state": {}})
        widgets[STATE].setdefault("state", {}).update(keep)
