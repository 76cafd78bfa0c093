"""The capstone's comparison of the learner's whole layer with the reference."""

from __future__ import annotations

import numpy as np

from . import reference as ref
from .examples import EXAMPLES, get_example

__all__ = ["compare_layer"]


def compare_layer(fn) -> list[tuple[str, int, str, float]]:
    """Run a learner's ``multi_head_self_attention`` on every worked example.

    Returns
    -------
    rows : list of (example, n_heads, mask, max |fn - reference|)
        Every number of heads the example allows, with and without the
        causal mask.
    """
    rows = []
    for name in EXAMPLES:
        e = get_example(name)
        for h in e.head_choices:
            for label, mask in (("no mask", None), ("causal", ref.causal_mask(e.T))):
                ref_out, ref_A = ref.multi_head_self_attention(e.X, *e.weights, h, mask)
                out, A = fn(e.X, *e.weights, h, mask)
                diff = max(np.abs(out - ref_out).max(), np.abs(A - ref_A).max())
                rows.append((name, h, label, float(diff)))
    return rows
