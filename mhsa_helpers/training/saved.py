"""The shipped worked example ``trained``: the trained model written to a file and read back."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from .heads import name_heads
from .loop import TrainResult
from .model import embed, head_weights
from .task import distinct_sequence, held_out, letters

__all__ = ["DATA", "load_trained", "save_trained"]

#: The shipped worked example, rebuilt by ``python -m mhsa_helpers.training``.
DATA = Path(__file__).resolve().parent.parent / "data" / "trained.npz"


def save_trained(result: TrainResult, path=DATA, held_out_set: tuple | None = None) -> dict:
    """Write the trained model and one held-out sequence to ``path`` (``.npz``).

    The file holds every parameter, the attention layer's input ``X`` for the
    first held-out sequence whose letters are all different, its letters,
    and what each head learned, measured on the whole held-out set.

    Returns
    -------
    arrays : dict
        What was written.
    """
    x_test, _ = held_out_set if held_out_set is not None else held_out()
    params, h = result.params, result.settings["n_heads"]
    seq = distinct_sequence(x_test)
    heads = name_heads(head_weights(params, x_test, h))
    arrays = dict(params)
    arrays.update(
        X=embed(params, seq),  # (T, d_model)
        sequence=seq,
        tokens=np.array(letters(seq)),
        n_heads=np.array(h),
        head_patterns=np.array([p or "" for p, _ in heads]),
        head_shares=np.array([s for _, s in heads]),
        accuracy=np.array(result.accuracy),
        steps=np.array(result.settings["steps"]),
        seed=np.array(result.settings["seed"]),
    )
    _write_npz(Path(path), arrays)
    return arrays


def _write_npz(path: Path, arrays: dict) -> None:
    """``np.savez_compressed`` with fixed dates: the same arrays give the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, a in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with z.open(info, "w") as f:
                np.lib.format.write_array(f, np.asarray(a), allow_pickle=False)


def load_trained(path=DATA) -> dict:
    """The arrays :func:`save_trained` wrote (strings as lists, counts as ints)."""
    with np.load(path, allow_pickle=False) as f:
        out = {k: f[k] for k in f.files}
    for k in ("tokens", "head_patterns"):
        out[k] = [str(s) for s in out[k]]
    for k in ("n_heads", "steps", "seed"):
        out[k] = int(out[k])
    return out
