"""The page's forward passes (``mhsa_helpers/widgets/front/forward.js``) equal the kernel's.

The static book has no kernel: its widgets compute in the page what the
notebook's compute with numpy. One ``node`` process (``tests/js/forward_cases.mjs``)
computes every case here with the JavaScript module; each is compared with the
numpy reference within 1e-9 (−∞ and NaN at the same places):

* the layer with every intermediate the explorer draws (:meth:`Explorer.compute`), on
  every worked example × each of its layers (two for the induction model: the page gets
  each layer's input and weights and computes the layer) × every number of heads it
  allows × the masks none, causal and padding at every length 1..T, and on random inputs
  of fixed seeds (large scores, padding of length 0, which blocks whole rows);
* the trained model on letters (:func:`~mhsa_helpers.widgets.reverse.reverse_on`);
* ``parseLetters`` against :func:`~mhsa_helpers.widgets.reverse.parse_letters`: the same
  letters, or the same sentence word for word.

Node's own unit tests of the module (``tests/js/forward.test.mjs``, hand-checked
values) run with the others in ``tests/test_front.py``. Node 20.19 or newer is required
(it loads the plain ``.js`` ES module without a ``package.json``).
"""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mhsa_helpers import reference as ref
from mhsa_helpers.examples import EXAMPLES, get_example
from mhsa_helpers.training import saved, task
from mhsa_helpers.widgets.explorer import Explorer
from mhsa_helpers.widgets.reverse import parse_letters, reverse_on
from tests.support.node import node

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "tests" / "js" / "forward_cases.mjs"
TOLERANCE = 1e-9  # absolute and relative
KEYS = ("X", "Q", "K", "V", "Z", "M", "ZM", "A", "heads", "concat", "out")

GOOD_TEXTS = [
    "ABCDEFGH",
    "abcdefgh",
    "a b c d e f g h",
    "A,B,C,D,E,F,G,H",
    " a, b,c d ,E F\tg h ",
    "PONMLKJI",
    "p\x1co\x85n\u3000m,l\u2028k\u00a0j\u2000i",  # separators of Python's \s that JS's lacks
    "\ufb00ABCDEF",  # the ligature ﬀ upper-cases to two letters, FF
    "\u0131bcdefgh",  # dotless ı upper-cases to I
]
BAD_TEXTS = [
    "ABCDEFG",
    "ABCDEFGHI",
    "A",
    "",
    "  , ,",
    "ABZDEFGH",
    "a b q",
    "ABC1EFGH",
    "12345678",
    "AB-CDEFGH",
    "ABCDEFG\ufeffH",  # a byte-order mark: whitespace to JavaScript, not to Python
    "ABC\u00dfDEF",  # ß upper-cases to SS
    "abcdefg\u00e9",  # é: a letter, not one of A–P
    "abcdefge\u0301",  # a combining accent: not a letter
    "ABC\U0001f600EFGH",  # beyond the BMP: one position, not two
    "AB\u0663DEFGH",  # an Arabic-Indic digit
    "ABCDEFGHIJKLMNOP",
]


def _as_lists(a) -> list:
    return np.asarray(a, dtype=float).tolist()


def _layer_case(X, W, h: int, mask: dict) -> dict:
    """One layer input for the runner: ``W`` is ``(W_q, W_k, W_v, W_o)``."""
    Wq, Wk, Wv, Wo = (_as_lists(w) for w in W)
    return dict(X=_as_lists(X), Wq=Wq, Wk=Wk, Wv=Wv, Wo=Wo, h=h, mask=mask)


# --------------------------------------------------------------------------
# the cases and the reference
# --------------------------------------------------------------------------
def _masks(T: int) -> list:
    """none, causal, and padding at every length the explorer's slider offers."""
    return [
        {"kind": "none"},
        {"kind": "causal"},
        *({"kind": "padding", "length": n} for n in range(1, T + 1)),
    ]


def example_states() -> list:
    """``(name, example, n_heads, mask)`` for every state of the explorer's controls."""
    return [
        (f"{name} layer {e.layer} h={h} {mask}", e, h, mask)
        for name in EXAMPLES
        for layer in get_example(name).layer_choices
        for e in [get_example(name, layer)]
        for h in e.head_choices
        for mask in _masks(e.T)
    ]


def random_states(n: int = 24) -> list:
    """``(label, X, W, n_heads, mask)`` with fixed seeds: any shape, large scores, length 0."""
    states = []
    for seed in range(n):
        rng = np.random.default_rng([seed, 7])
        T, d = int(rng.integers(1, 9)), int(rng.integers(1, 13))
        h = int(rng.choice([k for k in range(1, d + 1) if d % k == 0]))
        scale = (1.0, 10.0, 100.0)[seed % 3]  # 100: scores in the thousands
        X = scale * rng.standard_normal((T, d))
        W = tuple(rng.standard_normal((d, d)) for _ in range(4))
        kind = ("none", "causal", "padding")[seed % 3 if seed % 4 else 2]
        mask = {"kind": kind, "length": int(rng.integers(0, T + 1))}  # 0: every key blocked
        states.append((f"random seed {seed} T={T} d={d} h={h} {mask}", X, W, h, mask))
    return states


def mask_matrix(mask: dict, T: int) -> np.ndarray:
    """The explorer's M, ``(T, T)``, from the reference's mask functions."""
    if mask["kind"] == "causal":
        return ref.causal_mask(T)
    if mask["kind"] == "padding":
        return ref.padding_mask(mask["length"], T) + np.zeros((T, T))
    return np.zeros((T, T))


def reference_state(X, W, h: int, mask: dict) -> dict:
    """What :meth:`Explorer.compute` computes, with the reference's functions only."""
    W_q, W_k, W_v, W_o = W
    T = X.shape[0]
    Q, K, V = ref.project_qkv(X, W_q, W_k, W_v)  # (T, d_model) each
    Qh, Kh, Vh = (ref.split_heads(M, h) for M in (Q, K, V))  # (h, T, d_k) each
    Z = ref.attention_scores(Qh, Kh)  # (h, T, T)
    M = mask_matrix(mask, T)  # (T, T)
    ZM = Z + M  # (h, T, T)
    A = ref.softmax(ZM)  # (h, T, T)
    heads, _ = ref.attention_head(Qh, Kh, Vh, M)  # (h, T, d_k)
    concat = ref.merge_heads(heads)  # (T, d_model)
    out = concat @ W_o  # (T, d_model)
    return dict(X=X, Q=Q, K=K, V=V, Z=Z, M=M, ZM=ZM, A=A, heads=heads, concat=concat, out=out)


def reversal_letters(n: int = 12) -> list:
    """The shipped sequence, a few written ones, and random ones of a fixed seed."""
    rng = np.random.default_rng(18)
    shipped = task.letters(saved.load_trained()["sequence"])
    written = [list(w) for w in ("ABCDEFGH", "HGFEDCBA", "AAAAAAAA", "PPPPPPPP", "ABABABAB")]
    return [shipped, *written, *(task.letters(x) for x in task.sequences(n, rng))]


def reversal_params() -> dict:
    """The shipped model as the page gets it: plain lists, with ``n_heads`` and ``vocab``."""
    shipped = saved.load_trained()
    names = ("E", "P", "W_q", "W_k", "W_v", "W_o", "W_u", "b_u")
    params = {k: _as_lists(shipped[k]) for k in names}
    return {**params, "n_heads": shipped["n_heads"], "vocab": task.VOCAB}


# --------------------------------------------------------------------------
# comparing
# --------------------------------------------------------------------------
def differences(got, want) -> tuple[str | None, float]:
    """Why ``got`` is not ``want`` (None: it is, within tolerance), and the largest finite gap."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}", np.inf
    for kind, where in (("NaN", np.isnan), ("−∞", np.isneginf), ("+∞", np.isposinf)):
        if not np.array_equal(where(got), where(want)):
            return f"{kind} at other places", np.inf
    finite = np.isfinite(want)
    gap = np.abs(got[finite] - want[finite])  # (n_finite,)
    worst = float(gap.max(initial=0.0))
    if (gap > TOLERANCE * (1 + np.abs(want[finite]))).any():
        return f"off by up to {worst:.3g}", worst
    return None, worst


@pytest.fixture(scope="module")
def computed() -> dict:
    """Every case, computed by one node process: ``{"cases": ..., "got": ...}``."""
    examples = [_layer_case(e.X, e.weights, h, m) for _, e, h, m in example_states()]
    randoms = [_layer_case(X, W, h, m) for _, X, W, h, m in random_states()]
    letters = reversal_letters()
    cases = {
        "layer": examples + randoms,
        "reversal": {"params": reversal_params(), "letters": letters},
        "parse": GOOD_TEXTS + BAD_TEXTS,
    }
    run = subprocess.run(
        [node(), str(RUNNER)], input=json.dumps(cases), capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, f"node {RUNNER.name} failed:\n{run.stderr}"
    return {"letters": letters, "got": json.loads(run.stdout)}


# --------------------------------------------------------------------------
# the tests
# --------------------------------------------------------------------------
def test_reference_state_is_what_the_explorer_computes():
    """The comparison's reference is the explorer's own computation, on every example's state."""
    ex = Explorer(controls=())
    for name, e, h, mask in example_states():
        length = mask.get("length", ex.state["length"])
        ex.change_state(example=e.name)  # alone: a trained example resets the mask
        ex.change_state(layer=e.layer, heads=h, mask=mask["kind"], length=length)
        want = dict(example=e.name, layer=e.layer, heads=h, mask=mask["kind"], length=length)
        assert ex.state == want
        got, want = ex.compute(), reference_state(e.X, e.weights, h, mask)
        assert set(KEYS) <= set(got)
        for key in KEYS:
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"{name}: {key}")


def test_layer_equals_the_reference_on_every_state(computed):
    states = [(label, e.X, e.weights, h, m) for label, e, h, m in example_states()]
    states += random_states()
    assert len(computed["got"]["layer"]) == len(states)
    wrong, worst = [], 0.0
    for (label, X, W, h, mask), got in zip(states, computed["got"]["layer"], strict=True):
        want = reference_state(X, W, h, mask)
        assert set(got) == set(KEYS), label
        for key in KEYS:
            why, gap = differences(got[key], want[key])
            worst = max(worst, gap)
            if why:
                wrong.append(f"{label}: {key} {why}")
        out, A = ref.multi_head_self_attention(X, *W, h, want["M"])  # the layer itself
        for key, value in (("out", out), ("A", A)):
            why, _ = differences(got[key], value)
            if why:
                wrong.append(f"{label}: {key} against multi_head_self_attention: {why}")
    assert not wrong, f"{len(wrong)} differences (largest finite gap {worst:.3g}):\n" + "\n".join(
        wrong[:20]
    )


def test_reversal_equals_reverse_on(computed):
    wrong = []
    for letters, got in zip(computed["letters"], computed["got"]["reversal"], strict=True):
        weights, output, probabilities = reverse_on(letters)
        word = "".join(letters)
        if got["output"] != output:
            wrong.append(f"{word}: output {got['output']}, want {output}")
        for key, want in (("weights", weights), ("probabilities", probabilities)):
            why, _ = differences(got[key], want)
            if why:
                wrong.append(f"{word}: {key} {why}")
    assert not wrong, "\n".join(wrong)


def test_parse_letters_same_letters_or_same_sentence(computed):
    got = computed["got"]
    assert (got["VOCAB"], got["SEQ_LEN"]) == (task.VOCAB, task.SEQ_LEN)
    for text, js in zip(GOOD_TEXTS + BAD_TEXTS, got["parse"], strict=True):
        try:
            want = {"letters": parse_letters(text)}
        except ValueError as exc:
            want = {"error": str(exc)}
        assert ("error" in want) == (text in BAD_TEXTS), (text, want)  # the cases are as named
        assert js == want, text
