"""Worked-example data used throughout the course.

Inputs are data (copied from the articles or chosen here, and said to be);
every number the course *shows* is computed from them.
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass, field

import numpy as np

from .reference import init_weights, positional_encoding

__all__ = [
    "EXAMPLES",
    "SONG_ARTICLE_KT",
    "SONG_ARTICLE_Q",
    "STUDENT_SELECTIVE_SCALE",
    "Example",
    "get_example",
    "induction",
    "sentence",
    "song",
    "students",
    "trained",
]


@dataclass(frozen=True)
class Example:
    """One worked example: tokens, input matrix and the four weight matrices.

    Attributes
    ----------
    name : str
        Key in :data:`EXAMPLES`.
    title : str
        Human-readable title.
    tokens : list of str
        One label per row of ``X``.
    X : ndarray of shape (T, d_model)
    W_q, W_k, W_v, W_o : ndarray of shape (d_model, d_model)
    features : list of str
        One label per column of ``X``.
    source : str
        Where the data come from, and what was chosen by the course.
    n_heads : int, optional
        The only number of heads the weights make sense with (trained
        weights); any divisor of ``d_model`` when not given.
    head_notes : tuple of str
        What each head does, where the course measured it (trained weights).
    layer : int
        Which layer of the model ``X`` and the weights are (counted from 1).
    n_layers : int
        How many attention layers the model has: 1 but for the induction model.
    """

    name: str
    title: str
    tokens: list
    X: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    W_o: np.ndarray
    features: list = field(default_factory=list)
    source: str = ""
    n_heads: int | None = None
    head_notes: tuple = ()
    layer: int = 1
    n_layers: int = 1

    @property
    def T(self) -> int:
        return self.X.shape[0]

    @property
    def d_model(self) -> int:
        return self.X.shape[1]

    @property
    def head_choices(self) -> list:
        """Numbers of heads that divide ``d_model``; only ``n_heads`` when it is given."""
        if self.n_heads is not None:
            return [self.n_heads]
        return [h for h in range(1, self.d_model + 1) if self.d_model % h == 0]

    @property
    def layer_choices(self) -> list:
        """The layers the example can show: ``[1]`` but for a model of several layers."""
        return list(range(1, self.n_layers + 1))

    @property
    def weights(self) -> tuple:
        """``(W_q, W_k, W_v, W_o)``, in the order the contract functions take them."""
        return self.W_q, self.W_k, self.W_v, self.W_o


def _readonly(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.flags.writeable = False  # a learner's in-place edit must not change the course data
    return a


# --------------------------------------------------------------------------
# "List new ideas for a song" (seed article 002)
# --------------------------------------------------------------------------
_SONG_X = _readonly(
    [
        [0.1, -0.2, 0.1, 0.2],
        [0.8, 0.8, -0.9, 0.5],
        [-0.6, 0.4, 0.5, -0.9],
        [0.9, -0.7, 0.8, 0.7],
        [0.4, 0.3, 0.4, 0.4],
        [0.8, 0.2, 0.9, -0.2],
    ]
)
_SONG_W_Q = _readonly(
    [
        [3.4, -2.1, 0.8, 1.9],
        [-1.2, 0.5, 3.7, -0.8],
        [2.9, 1.1, -3.4, 0.6],
        [0.7, 2.8, 1.3, -2.5],
    ]
)
# The article prints no usable W_K or W_V and no W_O: these are the course's choice.
_SONG_W_K = _readonly(
    [
        [0.0, 0.9, -0.7, 0.9],
        [-0.4, -0.1, 0.7, -0.2],
        [0.1, -0.9, 0.5, 0.1],
        [-0.3, 0.6, -0.4, -0.1],
    ]
)
_SONG_W_V = _readonly(
    [
        [-0.5, -0.4, 0.6, -0.8],
        [0.2, 0.5, -0.6, -0.9],
        [-0.5, 0.3, 0.1, -0.7],
        [-0.1, 0.3, -0.1, 0.3],
    ]
)
_SONG_W_O = _readonly(
    [
        [-0.8, -0.5, 0.6, 0.2],
        [-0.8, -0.1, 0.0, -0.7],
        [0.5, -0.8, -0.2, 0.0],
        [-0.1, 0.2, 0.5, 0.9],
    ]
)

#: The Q table as printed in article 002. Only its first row follows from X @ W_Q;
#: the course shows it only to compare with what X @ W_Q really gives.
SONG_ARTICLE_Q = _readonly(
    [
        [1.01, 0.36, -0.74, -0.09],
        [-0.50, -0.87, 4.49, -0.23],
        [2.17, -1.99, -3.92, 1.71],
        [1.43, 2.59, 1.97, -3.19],
        [0.67, 0.98, 0.61, -0.31],
        [1.97, 0.52, 4.01, -0.51],
    ]
)
#: The K^T table as printed in article 002 (4 x 6). No W_K reproduces it from X.
SONG_ARTICLE_KT = _readonly(
    [
        [0.15, 1.94, -0.98, 2.53, 1.24, 2.18],
        [0.16, 1.44, 0.64, -2.33, 0.81, 0.44],
        [0.25, 0.35, 1.25, 2.24, 1.14, 3.25],
        [0.28, 1.15, -0.81, 1.93, -0.81, -0.28],
    ]
)


def song() -> Example:
    """The "List new ideas for a song" example: 6 tokens, d_model = 4."""
    return Example(
        name="song",
        title="List new ideas for a song",
        tokens=["List", "new", "ideas", "for", "a", "song"],
        X=_SONG_X,
        W_q=_SONG_W_Q,
        W_k=_SONG_W_K,
        W_v=_SONG_W_V,
        W_o=_SONG_W_O,
        features=[f"dim {i}" for i in range(4)],
        source=(
            "X and W_Q are copied exactly from the article. The article's W_K, W_V "
            "and Q rows 2-6 are not consistent with X, so W_K, W_V and W_O are "
            "chosen by this course."
        ),
    )


# --------------------------------------------------------------------------
# Six students, seven characteristics (seed article 001)
# --------------------------------------------------------------------------
STUDENT_NAMES = ["Monica", "Chandler", "Rachel", "Ross", "Joey", "Phoebe"]
STUDENT_FEATURES = [
    "wants an MS",
    "sports",
    "music",
    "AI",
    "robotics",
    "NLP",
    "chemical eng.",
]
_STUDENTS = _readonly(
    [
        # MS   sport music  AI   robot  NLP  chem
        [0.5, 0.05, 0.05, 0.3, 0.0, 0.0, 0.0],  # Monica: MS in AI
        [0.5, 0.1, 0.2, 0.1, 0.0, 0.6, 0.0],  # Chandler: MS in NLP
        [0.0, 0.3, 0.4, 0.1, 0.0, 0.1, 0.0],  # Rachel: no MS, music and sports
        [0.6, 0.1, 0.1, 0.2, 0.7, 0.0, 0.0],  # Ross: MS in robotics
        [0.0, 0.8, 0.1, 0.0, 0.0, 0.0, 0.0],  # Joey: sports
        [0.4, 0.0, 0.6, 0.0, 0.0, 0.0, 0.5],  # Phoebe: MS in chemical engineering
    ]
)


#: The students' attention with Q = K = X is nearly uniform (every weight 0.15-0.20):
#: interests are fractions, so their dot products are small. Weights that count every
#: interest this many times as strongly, W_Q = W_K = s·I, multiply the scores by s²
#: and make attention visibly pick friends (steps 7 and 8). X itself is unchanged.
STUDENT_SELECTIVE_SCALE = 3.0


def students() -> Example:
    """Six students x seven characteristics, with Q = K = V = X (identity weights)."""
    eye = _readonly(np.eye(7))
    return Example(
        name="students",
        title="Six students, seven characteristics",
        tokens=list(STUDENT_NAMES),
        X=_STUDENTS,
        W_q=eye,
        W_k=eye,
        W_v=eye,
        W_o=eye,
        features=list(STUDENT_FEATURES),
        source=(
            "Article 001 prints only Monica . Chandler = 0.5x0.5 + 0.05x0.1 + "
            "0.05x0.2 + 0.3x0.1; the rest of the matrix is chosen by this course "
            "to fit that sum and the story. No learned weights: Q = K = V = X."
        ),
    )


# --------------------------------------------------------------------------
# The explorer's short sentences (seed article 003)
# --------------------------------------------------------------------------
SENTENCES = {
    "simple": "The cat sat on the mat",
    "question": "Where did the cat sit ?",
}
SENTENCE_D_MODEL = 8
_SENTENCE_WEIGHT_SEED = 2024


def _token_embedding(word: str, d_model: int) -> np.ndarray:
    """Deterministic stand-in for a learned embedding: same word, same vector."""
    seed = zlib.crc32(word.lower().encode("utf-8"))
    return np.random.default_rng(seed).normal(0.0, 0.5, size=d_model)


def sentence(kind: str) -> Example:
    """A short sentence ("simple" or "question"), embedded in d_model = 8.

    X is a deterministic per-word embedding plus the sinusoidal positional
    encoding; the weights are Glorot-uniform with a fixed seed.
    """
    if kind not in SENTENCES:
        raise ValueError(f"kind must be one of {sorted(SENTENCES)}, but got {kind!r}.")
    tokens = SENTENCES[kind].split()
    d = SENTENCE_D_MODEL
    X = np.stack([_token_embedding(t, d) for t in tokens])  # (T, d)
    X = X + positional_encoding(len(tokens), d)  # (T, d)
    rng = np.random.default_rng(_SENTENCE_WEIGHT_SEED)
    W_q, W_k, W_v, W_o = (_readonly(init_weights(d, d, rng)) for _ in range(4))
    return Example(
        name=kind,
        title=f'{kind.capitalize()}: "{SENTENCES[kind]}"',
        tokens=tokens,
        X=_readonly(X),
        W_q=W_q,
        W_k=W_k,
        W_v=W_v,
        W_o=W_o,
        features=[f"dim {i}" for i in range(d)],
        source=(
            "Word vectors are deterministic pseudo-random stand-ins for learned "
            "embeddings, plus the sinusoidal positional encoding; weights are "
            f"Glorot-uniform drawn with seed {_SENTENCE_WEIGHT_SEED}."
        ),
    )


# --------------------------------------------------------------------------
# Weights learned by the course's training notebook (18_training)
# --------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _trained_data() -> dict:
    """The shipped file, read once (the explorer asks for its example on every change)."""
    from .training.saved import load_trained

    return load_trained()


def trained() -> Example:
    """A two-head layer trained to reverse 8 letters, on one held-out sequence.

    Loaded from ``mhsa_helpers/data/trained.npz``, which
    ``python -m mhsa_helpers.training`` rebuilds (fixed seed).
    """
    from .training.heads import head_sentence
    from .training.task import VOCAB

    data = _trained_data()
    h = data["n_heads"]
    patterns = zip(data["head_patterns"], data["head_shares"], strict=True)
    notes = tuple(head_sentence(k, p, share) for k, (p, share) in enumerate(patterns))
    d = data["X"].shape[1]
    return Example(
        name="trained",
        title=f'Trained to reverse: "{" ".join(data["tokens"])}"',
        tokens=list(data["tokens"]),
        X=_readonly(data["X"]),
        W_q=_readonly(data["W_q"]),
        W_k=_readonly(data["W_k"]),
        W_v=_readonly(data["W_v"]),
        W_o=_readonly(data["W_o"]),
        features=[f"dim {i}" for i in range(d)],
        source=(
            f"Learned, not chosen: a one-layer attention model with {h} heads, trained "
            f"by the course (notebook 18_training, {data['steps']} steps of Adam, seed "
            f"{data['seed']}) to reverse sequences of {len(data['tokens'])} letters "
            f"{VOCAB[0]}-{VOCAB[-1]}. X is the layer's input (letter "
            "embedding + learned position embedding) for a held-out sequence; the weights "
            "are the layer's. Rebuilt by `python -m mhsa_helpers.training`."
        ),
        n_heads=h,
        head_notes=notes,
    )


# --------------------------------------------------------------------------
# The two-layer model trained to copy (19_induction)
# --------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _induction_data() -> dict:
    """The shipped model, each layer's input on its sequence, and what each head learned."""
    from .training import induction as ind

    data = ind.load_induction()
    seq, L = data["sequence"], ind.PERIOD
    acts = ind.forward(data, seq, data["n_heads"])  # the model's own forward, causal mask
    everything = ind.forward(data, ind.held_out(), data["n_heads"])  # 1000 held-out sequences
    notes = {}
    for layer, A in ((1, everything.A1), (2, everything.A2)):
        previous, copying = ind.head_scores(A, L)
        roles = [
            ", a previous-token head" if p > 0.5 else ", an induction head" if c > 0.5 else ""
            for p, c in zip(previous, copying, strict=True)
        ]
        notes[layer] = tuple(
            f"head {k + 1}{role}: previous-token score {previous[k]:.2f}, induction score "
            f"{copying[k]:.2f} (over {len(everything.A1)} held-out sequences)"
            for k, role in enumerate(roles)
        )
    return {**data, "inputs": {1: acts.X0, 2: acts.X1}, "notes": notes}


def induction(layer: int = 1) -> Example:
    """The two-layer model trained to copy (notebook 19), one of its layers, on one sequence.

    Loaded from ``mhsa_helpers/data/induction.npz``, which
    ``python -m mhsa_helpers.training.induction`` rebuilds (fixed seed).

    Parameters
    ----------
    layer : {1, 2}
        Layer 1's input is ``E[x] + P``; layer 2's, the residual stream after
        layer 1 (``X0 + out1``, computed by the model's forward). Both layers
        learned with the causal mask.
    """
    from .training.induction import LAYER_WEIGHTS, PERIOD, VOCAB

    data = _induction_data()
    if layer not in (1, 2):
        raise ValueError(f"layer must be 1 or 2 (the model has 2), but got {layer!r}.")
    h = data["n_heads"]
    tokens = [VOCAB[int(k)] for k in data["sequence"]]
    X = data["inputs"][layer]
    W = (_readonly(data[f"{name}{layer}"]) for name in LAYER_WEIGHTS)
    fed = (
        "letter embedding + position embedding"
        if layer == 1
        else "layer 1's input plus its output (the residual stream), from the model's forward"
    )
    source = (
        f"Learned, not chosen: a two-layer attention-only model with {h} heads a layer, "
        f"trained by the course (notebook 19_induction, {data['steps']} steps of Adam, seed "
        f"{data['seed']}, causal mask) to predict the next token of sequences that repeat; "
        f"here a held-out sequence of {PERIOD} letters repeated once. X is layer {layer}'s "
        f"input: {fed}; the weights are layer {layer}'s. Rebuilt by "
        "`python -m mhsa_helpers.training.induction`."
    )
    return Example(
        "induction",
        f'Trained to copy (induction): "{" ".join(tokens)}"',
        tokens,
        _readonly(X),
        *W,
        features=[f"dim {i}" for i in range(X.shape[1])],
        source=source,
        n_heads=h,
        head_notes=data["notes"][layer],
        layer=layer,
        n_layers=2,
    )


_BUILDERS = {
    "song": song,
    "students": students,
    "simple": lambda: sentence("simple"),
    "question": lambda: sentence("question"),
    "trained": trained,
    "induction": induction,
}
EXAMPLES = tuple(_BUILDERS)


def get_example(name: str, layer: int = 1) -> Example:
    """Return the worked example called ``name`` (one of :data:`EXAMPLES`), at ``layer``.

    ``layer`` is 1 but for a model of several layers (``"induction"``: 1 or 2).
    """
    if name not in _BUILDERS:
        raise ValueError(f"name must be one of {list(EXAMPLES)}, but got {name!r}.")
    if name == "induction":
        return induction(layer)
    if layer != 1:
        raise ValueError(f"the {name} example has one layer, 1, but layer {layer!r} was asked.")
    return _BUILDERS[name]()
