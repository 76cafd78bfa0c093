"""The training task's data: sequences of letters, their reversals, batches, the held-out set.

The output at position ``i`` is the input letter at position ``T - 1 - i``.
Training draws fresh batches from one seed; the held-out sequences come from
another.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = [
    "BATCH_SIZE",
    "HELD_OUT_SEED",
    "HELD_OUT_SIZE",
    "SEED",
    "SEQ_LEN",
    "VOCAB",
    "distinct_sequence",
    "held_out",
    "letters",
    "seen_in_training",
    "sequences",
    "targets",
    "training_batches",
]

#: The letters of the task; token id ``k`` is ``VOCAB[k]``.
VOCAB = "ABCDEFGHIJKLMNOP"
SEQ_LEN = 8  # T
SEED = 0  # initial weights and training batches
HELD_OUT_SEED = 1  # the held-out sequences: another seed than the training batches
HELD_OUT_SIZE = 1000
BATCH_SIZE = 64


def sequences(n: int, rng: np.random.Generator, seq_len: int = SEQ_LEN) -> np.ndarray:
    """``n`` sequences of letters drawn uniformly, with replacement.

    Parameters
    ----------
    n : int
    rng : numpy.random.Generator
    seq_len : int

    Returns
    -------
    x : int ndarray of shape (n, seq_len)
        Token ids in ``0 .. len(VOCAB) - 1``.
    """
    return rng.integers(0, len(VOCAB), size=(n, seq_len))


def targets(x: np.ndarray) -> np.ndarray:
    """What the model must output: every sequence reversed.

    Parameters
    ----------
    x : int ndarray of shape (..., T)

    Returns
    -------
    y : int ndarray of shape (..., T)
        ``y[..., i] = x[..., T - 1 - i]``.
    """
    return x[..., ::-1]


def training_batches(batch_size: int = BATCH_SIZE, seed: int = SEED) -> Iterator[tuple]:
    """An endless stream of fresh training batches, the same for the same seed.

    Yields
    ------
    x, y : int ndarray of shape (batch_size, T)
    """
    rng = np.random.default_rng([seed, 1])  # a stream of its own, apart from the weights'
    while True:
        x = sequences(batch_size, rng)
        yield x, targets(x)


def held_out(n: int = HELD_OUT_SIZE, seed: int = HELD_OUT_SEED) -> tuple:
    """Sequences to measure the model on, drawn with another seed than the training batches.

    Returns
    -------
    x, y : int ndarray of shape (n, T)
    """
    x = sequences(n, np.random.default_rng([seed, 2]))
    return x, targets(x)


def seen_in_training(x: np.ndarray, steps: int, batch_size: int = BATCH_SIZE, seed: int = SEED):
    """Which of the sequences ``x`` the first ``steps`` training batches contained.

    Parameters
    ----------
    x : int ndarray of shape (n, T)

    Returns
    -------
    seen : bool ndarray of shape (n,)
    """
    powers = len(VOCAB) ** np.arange(x.shape[-1], dtype=np.int64)  # (T,): one number per sequence
    batches = training_batches(batch_size, seed)
    trained = np.concatenate([next(batches)[0] @ powers for _ in range(steps)])  # (steps*B,)
    return np.isin(x @ powers, trained)


def letters(x) -> list:
    """The letters of a sequence of token ids."""
    return [VOCAB[int(k)] for k in np.asarray(x)]


def distinct_sequence(x: np.ndarray) -> np.ndarray:
    """The first sequence of ``x`` whose letters are all different (readable labels).

    Parameters
    ----------
    x : int ndarray of shape (n, T)

    Returns
    -------
    seq : int ndarray of shape (T,)
    """
    for seq in x:
        if len(set(seq.tolist())) == len(seq):
            return seq
    raise ValueError("no sequence of x has all its letters different.")
