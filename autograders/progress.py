"""A learner's progress across all steps, without any nbgrader server.

For each student notebook, the answer cells (nbgrader ``solution`` cells)
are run in a fresh Python process with a time limit, and the visible check
of each function they define is run on it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat

#: Which functions each notebook asks for, in course order.
EXERCISES = {
    "01_input": ["positional_encoding"],
    "02_parameters": ["init_weights"],
    "03_qkv": ["project_qkv"],
    "04_heads": ["split_heads", "merge_heads"],
    "05_scores": ["attention_scores"],
    "06_masking": ["causal_mask", "padding_mask"],
    "07_softmax": ["softmax"],
    "08_head_output": ["attention_head"],
    "09_multi_head": ["multi_head_self_attention"],
    "10_capstone": ["multi_query_attention", "kv_cache_size"],
}

_RUNNER = r"""
import contextlib, io, json, sys
import numpy as np
from autograders import checks
sources, names = json.loads(sys.stdin.read())
ns = {"np": np}
results = {}
try:
    with contextlib.redirect_stdout(io.StringIO()):
        for src in sources:
            exec(compile(src, "<answer>", "exec"), ns)
except Exception as exc:
    results = {n: f"the answer cells fail to run: {type(exc).__name__}: {exc}" for n in names}
else:
    for n in names:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                getattr(checks, "check_" + n)(ns[n])
            results[n] = "pass"
        except KeyError:
            results[n] = "not defined"
        except AssertionError as exc:
            results[n] = str(exc)
print(json.dumps(results))
"""


def answer_sources(path) -> list:
    nb = nbformat.read(str(path), as_version=4)
    return [
        c.source
        for c in nb.cells
        if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution")
    ]


def notebook_progress(path, timeout: float = 60.0) -> dict:
    """Return ``{function: "pass" or the failing check's message}`` for one notebook."""
    path = Path(path)
    names = EXERCISES[path.stem]
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _RUNNER],
            input=json.dumps([answer_sources(path), names]),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {n: f"timed out after {timeout:.0f} s (an endless loop?)" for n in names}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {n: f"the check could not run: {last}" for n in names}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def progress(directory=".") -> list:
    """Rows ``(notebook, function, status)`` for every exercise of the course."""
    rows = []
    for stem, names in EXERCISES.items():
        path = Path(directory) / f"{stem}.ipynb"
        if not path.exists():
            rows.extend((stem, n, "notebook not found") for n in names)
            continue
        for n, status in notebook_progress(path).items():
            rows.append((stem, n, status))
    return rows


def show_progress(directory=".") -> None:
    """Print the progress table: one line per exercise, a tick where it passes."""
    rows = progress(directory)
    done = sum(status == "pass" for *_, status in rows)
    for stem, name, status in rows:
        mark = "\u2713" if status == "pass" else "\u2717"
        detail = "" if status == "pass" else f"  \u2014 {status}"
        print(f"{mark} {stem:<15} {name:<26}{detail}")
    print(f"\n{done} of {len(rows)} exercises pass.")


def load_answers(path) -> dict:
    """Run a notebook's answer cells here and return what they define.

    Used by the capstone to take the learner's own functions from earlier
    notebooks (save them first).
    """
    import numpy as np

    namespace = {"np": np}
    for source in answer_sources(path):
        exec(compile(source, str(path), "exec"), namespace)
    return namespace


def compare_layer(fn) -> list:
    """Run a learner's ``multi_head_self_attention`` on every worked example.

    Returns rows ``(example, n_heads, mask, max |fn - reference|)`` over every
    number of heads the example allows, with and without the causal mask.
    """
    import numpy as np

    import mhsa_helpers as mh

    rows = []
    for name in mh.EXAMPLES:
        e = mh.get_example(name)
        for h in e.head_choices:
            for label, mask in (("no mask", None), ("causal", mh.causal_mask(e.T))):
                ref_out, ref_A = mh.multi_head_self_attention(e.X, *e.weights, h, mask)
                out, A = fn(e.X, *e.weights, h, mask)
                diff = max(np.abs(out - ref_out).max(), np.abs(A - ref_A).max())
                rows.append((name, h, label, float(diff)))
    return rows


def learner_functions(directory=".") -> dict:
    """Every function the learner defined in the step notebooks 01-09, by name.

    A notebook whose answer cells do not run is skipped (its step's
    functions then come from the reference wherever they are used).
    """
    functions = {}
    for stem in list(EXERCISES)[:-1]:
        path = Path(directory) / f"{stem}.ipynb"
        if not path.exists():
            continue
        try:
            namespace = load_answers(path)
        except Exception:  # reported by show_progress; here the reference stands in
            continue
        functions.update({n: namespace[n] for n in EXERCISES[stem] if n in namespace})
    return functions
