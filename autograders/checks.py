"""Checks behind every exercise: compare the learner's function with the reference.

Each ``check_<name>(fn)`` runs the learner's ``fn`` on the worked example
(visible tests); each ``check_<name>_hidden(fn, seed)`` runs it on random
shapes, batch axes and values drawn from ``seed`` (hidden tests). On failure
they raise an ``AssertionError`` whose message says in one sentence what is
most likely wrong: the learner's output is compared with known wrong
variants (wrong scale, wrong softmax axis, flipped mask …) computed from the
reference. On success they print one line starting with a tick.

Learners' numpy warnings are silenced while their code runs: nbgrader scores
any stderr in a test cell as 0, and a warning is not a mistake.
"""

from __future__ import annotations

import contextvars
import functools
import math
import sys
import warnings
from pathlib import Path

import numpy as np

import mhsa_helpers.reference as ref
from mhsa_helpers.examples import get_example

# --------------------------------------------------------------------------
# integrity: verdicts must not depend on anything a submission can replace
# --------------------------------------------------------------------------
# numpy functions taken when this module is imported (in the read-only setup
# cell, before any learner code runs): a learner's `np.allclose = ...` cannot
# change a verdict, and is reported.
_NUMPY_DIR = str(Path(np.__file__).resolve().parent)
_GENUINE = {
    "allclose": np.allclose,
    "isclose": np.isclose,
    "array_equal": np.array_equal,
    "testing.assert_allclose": np.testing.assert_allclose,
    "testing.assert_array_equal": np.testing.assert_array_equal,
}
_allclose, _isclose = np.allclose, np.isclose
# The reference functions a learner must not call in place of their own.
_REF_CODE = {getattr(ref, n).__code__: n for n in ref.__all__}
_EXERCISE = contextvars.ContextVar("exercise", default=None)


def _lookup(path: str):
    obj = np
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def _is_numpy(f) -> bool:
    """True for a function defined in numpy's own files (numpy 2 wraps many in a dispatcher)."""
    code = getattr(getattr(f, "__wrapped__", f), "__code__", None)
    return code is not None and str(Path(code.co_filename).resolve()).startswith(_NUMPY_DIR)


def _guard() -> None:
    """Fail (no credit) when numpy's comparison functions have been replaced."""
    for path, genuine in _GENUINE.items():
        now = _lookup(path)
        if now is not genuine or not _is_numpy(genuine):
            raise AssertionError(
                f"numpy.{path} has been replaced (monkeypatched); restart the kernel and "
                "run the notebook again: no check passes while numpy is patched."
            )


def _exercise(name):
    """Wrap a check: guard numpy, and remember which contract function is under test."""

    def wrap(check):
        @functools.wraps(check)
        def run(fn, *args, **kwargs):
            _guard()
            token = _EXERCISE.set(name)
            try:
                return check(fn, *args, **kwargs)
            finally:
                _EXERCISE.reset(token)

        return run

    return wrap


def _forbidden(name) -> set:
    names = {name} | ({"multi_query_attention"} if name == "multi_head_self_attention" else set())
    return {code for code, n in _REF_CODE.items() if n in names}


# --------------------------------------------------------------------------
# machinery
# --------------------------------------------------------------------------
def _name(fn) -> str:
    return getattr(fn, "__name__", "your function")


def _call(fn, *args, **kwargs):
    """Run the learner's function on copies of the inputs, with warnings silenced."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    exercise = _EXERCISE.get()
    forbidden = _forbidden(exercise) if exercise else set()
    called = []

    def profile(frame, event, _arg):
        if event == "call" and frame.f_code in forbidden:
            called.append(_REF_CODE[frame.f_code])

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            result = fn(*args, **kwargs)
        except NotImplementedError:
            raise AssertionError(
                f"{_name(fn)} is not implemented yet: replace `raise NotImplementedError()` "
                "with your code."
            ) from None
        except Exception as exc:  # reported, not swallowed: the message names it
            shapes = ", ".join(str(a.shape) if isinstance(a, np.ndarray) else repr(a) for a in args)
            raise AssertionError(
                f"{_name(fn)}({shapes}) raised {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            untouched = sys.getprofile() is profile
            sys.setprofile(previous)
    if called:
        raise AssertionError(
            f"{_name(fn)} calls the course's reference mhsa_helpers.{called[0]} instead of "
            "implementing it: write the computation yourself."
        )
    if not untouched:
        raise AssertionError(f"{_name(fn)} changed the interpreter's profiler during the check.")
    return result


def _close(a, b, atol=1e-8) -> bool:
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        return bool(_allclose(a, b, rtol=1e-6, atol=atol, equal_nan=True))


def _as_result(fn, got, what: str) -> np.ndarray:
    if isinstance(got, tuple | list) or got is None:
        raise AssertionError(
            f"{_name(fn)} should return {what} as one ndarray, but returned {type(got).__name__}."
        )
    arr = np.asarray(got)
    if not np.issubdtype(arr.dtype, np.number):
        raise AssertionError(
            f"{_name(fn)} should return a numeric ndarray for {what}, but got dtype {arr.dtype}."
        )
    return arr


def _compare(fn, got, expected, what: str, mistakes=(), atol=1e-8) -> None:
    """Pass if ``got`` matches ``expected``; else raise with the matching mistake's hint.

    ``mistakes`` is a sequence of ``(hint, wrong_output)`` pairs; the first
    wrong output that ``got`` matches names the mistake.
    """
    got = _as_result(fn, got, what)
    expected = np.asarray(expected)
    if _close(got, expected, atol):
        return
    for hint, wrong in mistakes:
        if wrong is not None and _close(got, wrong, atol):
            raise AssertionError(f"{_name(fn)}: {hint}")
    if got.shape != expected.shape:
        raise AssertionError(
            f"{_name(fn)}: {what} should have shape {expected.shape}, but has shape {got.shape}."
        )
    if np.isnan(got).any() and not np.isnan(expected).any():
        raise AssertionError(f"{_name(fn)}: {what} contains NaN where the reference has none.")
    with np.errstate(all="ignore"):
        diff = np.where(_isclose(got, expected, rtol=1e-6, atol=atol), 0.0, 1.0)
    idx = np.unravel_index(int(np.argmax(diff)), got.shape)
    raise AssertionError(
        f"{_name(fn)}: {what} differs from the reference, first at index {idx}: "
        f"got {got[idx]!r}, expected {expected[idx]!r}."
    )


def _ok(fn, message: str) -> None:
    print(f"\u2713 {_name(fn)}: {message}")


def _rng(seed):
    return np.random.default_rng(seed)


def _random_shape(rng, max_lead=2):
    return tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(0, max_lead + 1)))


# --------------------------------------------------------------------------
# step 1: positional encoding
# --------------------------------------------------------------------------
def _pe_mistakes(T, d):
    pos = np.arange(T)[:, None]
    col = np.arange(d)[None, :]
    pair = 2 * (col // 2)
    angle = pos / 10000 ** (pair / d)
    sin_even = np.where(col % 2 == 0, np.sin(angle), np.cos(angle))
    by_col = pos / 10000 ** (col / d)
    return [
        (
            "sine and cosine are swapped: even columns 2i take sin, odd columns 2i+1 take cos.",
            np.where(col % 2 == 0, np.cos(angle), np.sin(angle)),
        ),
        (
            "the exponent uses the column index; columns 2i and 2i+1 share the frequency "
            "1/10000**(2i/d_model).",
            np.where(col % 2 == 0, np.sin(by_col), np.cos(by_col)),
        ),
        (
            "positions start at 0, not 1.",
            np.where(
                col % 2 == 0,
                np.sin((pos + 1) / 10000 ** (pair / d)),
                np.cos((pos + 1) / 10000 ** (pair / d)),
            ),
        ),
        ("only sine is used; odd columns 2i+1 take the cosine.", np.sin(angle)),
        ("the result is transposed: rows are positions, shape (seq_len, d_model).", sin_even.T),
    ]


def _check_pe_case(fn, T, d):
    got = _call(fn, T, d)
    _compare(fn, got, ref.positional_encoding(T, d), "the encoding", _pe_mistakes(T, d))


def check_positional_encoding(fn):
    """Check ``positional_encoding`` on the song's shape (6 tokens, d_model = 4) and more."""
    for T, d in [(6, 4), (10, 6), (3, 8)]:
        _check_pe_case(fn, T, d)
    _ok(fn, "matches the sinusoidal encoding for (6, 4), (10, 6) and (3, 8).")


def check_positional_encoding_hidden(fn, seed):
    rng = _rng(seed)
    for _ in range(5):
        _check_pe_case(fn, int(rng.integers(1, 60)), int(rng.integers(1, 40)))
    _check_pe_case(fn, 7, 5)  # odd d_model
    _ok(fn, "matches on random sizes, odd d_model included.")


# --------------------------------------------------------------------------
# step 2: initialisation
# --------------------------------------------------------------------------
def _check_init_case(fn, d_in, d_out, seed):
    W = _as_result(fn, _call(fn, d_in, d_out, np.random.default_rng(seed)), "W")
    if W.shape == (d_out, d_in) and d_in != d_out:
        raise AssertionError(f"{_name(fn)}: the shape is swapped; W must be (d_in, d_out).")
    if W.shape != (d_in, d_out):
        raise AssertionError(
            f"{_name(fn)}: W should have shape {(d_in, d_out)}, but has shape {W.shape}."
        )
    again = _call(fn, d_in, d_out, np.random.default_rng(seed))
    if not _close(W, again, 0):
        raise AssertionError(
            f"{_name(fn)}: two calls with the same rng seed differ; draw from `rng` "
            "(rng.uniform), not from np.random."
        )
    a = math.sqrt(6 / (d_in + d_out))
    if np.abs(W).max() > a * (1 + 1e-9):
        raise AssertionError(
            f"{_name(fn)}: values reach {np.abs(W).max():.3g} beyond the Glorot limit "
            f"a = sqrt(6 / (d_in + d_out)) = {a:.3g}; draw uniformly from [-a, a], "
            "not from a normal distribution."
        )
    return W, a


def check_init_weights(fn):
    """Check ``init_weights``: shape, reproducibility, bounds and spread."""
    _check_init_case(fn, 4, 4, 0)
    W, a = _check_init_case(fn, 200, 300, 1)
    if W.min() > -a / 10:
        raise AssertionError(
            f"{_name(fn)}: no value is negative; rng.random() gives [0, 1), scale it to [-a, a]."
        )
    ratio = W.var() / (a * a / 3)
    if not 0.95 < ratio < 1.05:
        raise AssertionError(
            f"{_name(fn)}: the spread is off (variance {W.var():.3g}, Glorot-uniform has "
            f"a**2 / 3 = {a * a / 3:.3g}); use a = sqrt(6 / (d_in + d_out))."
        )
    _ok(fn, "Glorot-uniform: shape, reproducible from rng, bounded by a, variance a**2/3.")


def check_init_weights_hidden(fn, seed):
    rng = _rng(seed)
    for _ in range(3):
        d_in, d_out = (int(n) for n in rng.integers(1, 50, size=2))
        _check_init_case(fn, d_in, d_out, int(rng.integers(1 << 30)))
    W, a = _check_init_case(fn, 123, 77, seed)
    if not 0.93 < W.var() / (a * a / 3) < 1.07 or abs(W.mean()) > a / 20:
        raise AssertionError(f"{_name(fn)}: not Glorot-uniform on a (123, 77) matrix.")
    _ok(fn, "Glorot-uniform on random shapes.")


# --------------------------------------------------------------------------
# step 3: Q, K, V
# --------------------------------------------------------------------------
def _check_qkv_case(fn, X, W_q, W_k, W_v):
    got = _call(fn, X, W_q, W_k, W_v)
    if not isinstance(got, tuple | list) or len(got) != 3:
        raise AssertionError(f"{_name(fn)}: return the three matrices as a tuple (Q, K, V).")
    Q, K, V = (X @ W for W in (W_q, W_k, W_v))
    names = ("Q", "K", "V")
    for name, g, exp in zip(names, got, (Q, K, V), strict=True):
        others = [(n, e) for n, e in zip(names, (Q, K, V), strict=True) if n != name]
        mistakes = [
            (
                f"{name} equals X @ W_{o.lower()}: you used the same weight for Q, K and V, "
                f"or returned them out of order; {name} = X @ W_{name.lower()}.",
                e,
            )
            for o, e in others
        ]
        W = {"Q": W_q, "K": W_k, "V": W_v}[name]
        mistakes.append(
            (
                f"{name} = X @ W_{name.lower()}.T: the weights act on the right as "
                "they are, without transposing.",
                X @ W.T,
            )
        )
        mistakes.append(
            (
                f"{name} = W_{name.lower()} @ X: the input comes first, X @ W.",
                (W @ X.swapaxes(-1, -2)).swapaxes(-1, -2)
                if W.shape[0] == W.shape[1] and X.shape[-2] == W.shape[1]
                else None,
            )
        )
        _compare(fn, g, exp, name, mistakes)


def check_project_qkv(fn):
    """Check ``project_qkv`` on the song example: Q = X·W_Q row 1 is [1.01, 0.36, −0.74, −0.09]."""
    e = get_example("song")
    _check_qkv_case(fn, e.X, e.W_q, e.W_k, e.W_v)
    _ok(fn, "Q, K and V match on the song example.")


def check_project_qkv_hidden(fn, seed):
    rng = _rng(seed)
    for _ in range(3):
        T, d = (int(n) for n in rng.integers(2, 9, size=2))
        X = rng.normal(size=(*_random_shape(rng), T, d))
        Ws = [rng.normal(size=(d, d)) for _ in range(3)]
        _check_qkv_case(fn, X, *Ws)
    _ok(fn, "matches on random shapes with batch axes.")


# --------------------------------------------------------------------------
# step 4: heads
# --------------------------------------------------------------------------
def _split_mistakes(M, h):
    *lead, T, d = M.shape
    d_k = d // h
    return [
        (
            "reshaped straight to (..., h, T, d_k) without the transpose: reshape to "
            "(..., T, h, d_k) first, then swap the T and h axes.",
            M.reshape(*lead, h, T, d_k),
        ),
        (
            "head i must own the contiguous columns i*d_k:(i+1)*d_k, not every h-th column.",
            np.moveaxis(M.reshape(*lead, T, d_k, h), -1, -3),
        ),
        (
            "the head axis must come before the token axis: shape (..., h, T, d_k).",
            M.reshape(*lead, T, h, d_k),
        ),
    ]


def _check_split_case(fn, M, h):
    got = _call(fn, M, h)
    _compare(fn, got, ref.split_heads(M, h), "the heads", _split_mistakes(M, h))


def _check_merge_case(fn, M, h):
    H = ref.split_heads(M, h)
    *lead, h_, T, d_k = H.shape
    got = _call(fn, H)
    mistakes = [
        (
            "reshaped without swapping the head and token axes back; merge_heads must undo "
            "split_heads: swap axes -3 and -2, then reshape.",
            H.reshape(*lead, T, h_ * d_k),
        ),
        (
            "the heads are concatenated along the wrong axis; head i fills the columns "
            "i*d_k:(i+1)*d_k of each token's row.",
            np.concatenate(list(np.moveaxis(H, -3, 0)), axis=-2),
        ),
    ]
    _compare(fn, got, M, "merge_heads(split_heads(M))", mistakes)


def _random_heads_input(rng):
    """A random (..., T, h*d_k) matrix with leading batch axes, and its number of heads h."""
    h, d_k, T = (int(n) for n in rng.integers(1, 5, size=3))
    return rng.normal(size=(*_random_shape(rng), T + 1, h * d_k)), h


def check_split_heads(fn):
    """Check ``split_heads`` on the song's Q with 2 heads (d_k = 2), and 4 heads."""
    e = get_example("song")
    Q = e.X @ e.W_q
    for h in (2, 4, 1):
        _check_split_case(fn, Q, h)
    _ok(fn, "splits the song's Q into 1, 2 and 4 heads correctly.")


def check_split_heads_hidden(fn, seed):
    rng = _rng(seed)
    for _ in range(4):
        _check_split_case(fn, *_random_heads_input(rng))
    _ok(fn, "splits random batched inputs correctly.")


def check_merge_heads(fn):
    """Check that ``merge_heads`` undoes ``split_heads`` on the song's Q."""
    e = get_example("song")
    Q = e.X @ e.W_q
    for h in (2, 4):
        _check_merge_case(fn, Q, h)
    _ok(fn, "merge_heads(split_heads(Q, h)) gives back Q for h = 2 and 4.")


def check_merge_heads_hidden(fn, seed):
    rng = _rng(seed)
    for _ in range(4):
        _check_merge_case(fn, *_random_heads_input(rng))
    _ok(fn, "undoes split_heads on random batched inputs.")


# --------------------------------------------------------------------------
# step 5: scores
# --------------------------------------------------------------------------
def _score_mistakes(Q, K):
    raw = Q @ K.swapaxes(-1, -2)
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    m = [
        ("the scores are not scaled: divide Q·Kᵀ by √d_k.", raw),
        (
            f"divided by √T (the sequence length, {T_k}), as the source article says; divide "
            f"by √d_k = √{d_k}, the per-head key size.",
            raw / math.sqrt(T_k),
        ),
        (f"divided by d_k = {d_k}; divide by its square root √d_k.", raw / d_k),
        ("multiplied by √d_k; divide by it.", raw * math.sqrt(d_k)),
        (
            "computed K·Qᵀ: rows must be queries and columns keys, Q·Kᵀ.",
            (K @ Q.swapaxes(-1, -2)).swapaxes(-1, -2) if T_q == T_k else None,
        ),
    ]
    if T_q != T_k:
        m.append((f"divided by √T_q = √{T_q}; divide by √d_k = √{d_k}.", raw / math.sqrt(T_q)))
    return m


def _check_scores_case(fn, Q, K):
    got = _call(fn, Q, K)
    _compare(fn, got, ref.attention_scores(Q, K), "Z", _score_mistakes(Q, K))


def check_attention_scores(fn):
    """Check ``attention_scores`` on the song's head 1 (T = 6, d_k = 2) and the students (√7)."""
    e = get_example("song")
    Q, K, _ = ref.project_qkv(e.X, e.W_q, e.W_k, e.W_v)
    _check_scores_case(fn, ref.split_heads(Q, 2)[0], ref.split_heads(K, 2)[0])
    s = get_example("students")
    _check_scores_case(fn, s.X, s.X)
    _ok(fn, "Z = Q·Kᵀ/√d_k on the song's head 1 and on the six students.")


def check_attention_scores_hidden(fn, seed):
    rng = _rng(seed)
    for _ in range(4):
        T_q, T_k, d_k = (int(n) for n in rng.integers(2, 9, size=3))
        lead = _random_shape(rng)
        _check_scores_case(
            fn, rng.normal(size=(*lead, T_q, d_k)), rng.normal(size=(*lead, T_k, d_k))
        )
    _ok(fn, "matches on random shapes, batch axes and T_q != T_k.")


# --------------------------------------------------------------------------
# step 6: masks
# --------------------------------------------------------------------------
def _causal_mistakes(T):
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    return [
        (
            "the mask is flipped: −∞ goes above the diagonal, where key j > query i, so a token "
            "cannot see the future.",
            np.where(j < i, -np.inf, 0.0),
        ),
        (
            "this is the anti-triangle drawn in the source article; mask where key j > query i "
            "(above the main diagonal).",
            np.where(i + j > T - 1, -np.inf, 0.0),
        ),
        (
            "the diagonal is masked too: a token may attend to itself (j == i).",
            np.where(j >= i, -np.inf, 0.0),
        ),
        (
            "use -np.inf for blocked positions, not a large finite number.",
            np.where(j > i, -1e9, 0.0),
        ),
        (
            "the mask is additive: 0 where attention is allowed, -np.inf where it is blocked "
            "(not 1 and 0, not booleans).",
            np.where(j > i, 0.0, 1.0),
        ),
        (
            "the mask is additive: 0 where attention is allowed, -np.inf where it is blocked "
            "(not 1 and 0).",
            (j <= i).astype(float),
        ),
        (
            "the mask is additive: 0 where attention is allowed, -np.inf where it is blocked "
            "(not 0 and 1).",
            (j > i).astype(float),
        ),
    ]


def _check_causal_case(fn, T):
    got = _call(fn, T)
    if isinstance(got, np.ndarray) and got.dtype == bool:
        raise AssertionError(
            f"{_name(fn)}: the mask is additive: 0.0 where attention is allowed and -np.inf "
            "where it is blocked, not True/False."
        )
    _compare(fn, got, ref.causal_mask(T), "the causal mask", _causal_mistakes(T))


def check_causal_mask(fn):
    """Check ``causal_mask(6)`` for the six song tokens, and sizes 1 and 3."""
    for T in (6, 1, 3):
        _check_causal_case(fn, T)
    _ok(fn, "0 on and below the diagonal, −∞ above it.")


def check_causal_mask_hidden(fn, seed):
    rng = _rng(seed)
    for T in rng.integers(2, 40, size=4):
        _check_causal_case(fn, int(T))
    _ok(fn, "correct for random sizes.")


def _check_padding_case(fn, lengths, T):
    got = _call(fn, lengths, T)
    L = np.asarray(lengths)
    j = np.arange(T)
    mistakes = [
        (
            "the mask hides queries instead of keys: the padded positions are key columns, so "
            "the mask has shape lengths.shape + (1, seq_len).",
            np.where(j[:, None] >= L[..., None, None], -np.inf, 0.0),
        ),
        (
            "off by one: positions 0 … length-1 are real tokens, −∞ starts at position length.",
            np.where(j > L[..., None, None], -np.inf, 0.0),
        ),
        (
            "off by one: positions 0 … length-1 are real tokens, −∞ starts at position length.",
            np.where(j >= L[..., None, None] - 1, -np.inf, 0.0),
        ),
        (
            "keep the query axis of size 1: the shape is lengths.shape + (1, seq_len), so the "
            "mask broadcasts against the scores (..., T_q, T_k).",
            np.where(j >= L[..., None], -np.inf, 0.0),
        ),
        (
            "use -np.inf for blocked positions, not a large finite number.",
            np.where(j >= L[..., None, None], -1e9, 0.0),
        ),
    ]
    _compare(fn, got, ref.padding_mask(lengths, T), "the padding mask", mistakes)


def check_padding_mask(fn):
    """Check ``padding_mask`` for the song padded from 4 real tokens to 6, and a batch."""
    _check_padding_case(fn, 4, 6)
    _check_padding_case(fn, np.array([6, 3, 1]), 6)
    _ok(fn, "hides the key positions from each length on, with shape lengths.shape + (1, T).")


def check_padding_mask_hidden(fn, seed):
    rng = _rng(seed)
    for _ in range(3):
        T = int(rng.integers(2, 12))
        _check_padding_case(fn, rng.integers(0, T + 1, size=_random_shape(rng)), T)
    _ok(fn, "correct for random lengths and batch shapes.")


# --------------------------------------------------------------------------
# step 7: softmax
# --------------------------------------------------------------------------
def _naive_softmax(Z, axis):
    with np.errstate(all="ignore"):
        e = np.exp(Z)
        return e / e.sum(axis=axis, keepdims=True)


def _check_softmax_case(fn, Z):
    got = _call(fn, Z)
    mistakes = [
        (
            "each column sums to 1 (softmax over axis 0, as the source article says); each "
            "row must sum to 1: softmax over the last axis.",
            ref.softmax(Z, axis=-2) if Z.ndim >= 2 else None,
        ),
    ]
    naive = _naive_softmax(Z, -1)
    if np.isnan(naive).any() and not np.isnan(ref.softmax(Z)).any():
        finite_rows = np.isfinite(Z).all(axis=-1)
        if np.abs(Z[finite_rows]).max(initial=0) > 500:
            mistakes.insert(
                0,
                (
                    "overflow on large scores: exp(1000) is inf and inf/inf is "
                    "NaN; subtract each row's maximum before exp.",
                    naive,
                ),
            )
        got_arr = np.asarray(got, dtype=float) if isinstance(got, np.ndarray) else None
        if got_arr is not None and got_arr.shape == Z.shape:
            all_masked = np.isneginf(Z).all(axis=-1)
            if all_masked.any() and np.isnan(got_arr[all_masked]).any():
                mistakes.insert(
                    0,
                    (
                        "a row that is entirely −∞ (fully masked) gives NaN; "
                        "return zeros for it: shift such rows by 0, not by "
                        "their max, and do not divide 0 by 0.",
                        got_arr,
                    ),
                )
            elif np.isnan(got_arr).any():
                mistakes.insert(
                    0,
                    (
                        "overflow on large scores: exp(1000) is inf and inf/inf "
                        "is NaN; subtract each row's maximum before exp.",
                        got_arr,
                    ),
                )
    _compare(fn, got, ref.softmax(Z), "softmax(Z)", mistakes)


def check_softmax(fn):
    """Check ``softmax``: the students' scores, large scores, a fully masked row, ``axis``."""
    s = get_example("students")
    _check_softmax_case(fn, ref.attention_scores(s.X, s.X))
    _check_softmax_case(fn, np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -999.0]]))
    masked = ref.attention_scores(s.X, s.X) + ref.causal_mask(6)
    _check_softmax_case(fn, masked)
    _check_softmax_case(fn, np.array([[0.5, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]]))
    Z = np.arange(12.0).reshape(3, 4) / 3
    got = _call(fn, Z, axis=0)
    _compare(
        fn,
        got,
        ref.softmax(Z, axis=0),
        "softmax(Z, axis=0)",
        [
            (
                "the axis argument is ignored: softmax(Z, axis=0) normalises each column.",
                ref.softmax(Z),
            )
        ],
    )
    _ok(fn, "rows sum to 1, stable for large scores, zeros for a fully masked row.")


def check_softmax_hidden(fn, seed):
    rng = _rng(seed)
    for scale in (1.0, 30.0, 800.0):
        Z = (
            rng.normal(size=(*_random_shape(rng), int(rng.integers(2, 8)), int(rng.integers(2, 8))))
            * scale
        )
        _check_softmax_case(fn, Z)
    T = int(rng.integers(2, 8))
    Z = rng.normal(size=(2, T, T)) + ref.causal_mask(T) + ref.padding_mask(np.array([[T], [1]]), T)
    Z[1, 0] = -np.inf
    _check_softmax_case(fn, Z)
    _ok(fn, "matches on random, large and masked scores with batch axes.")


# --------------------------------------------------------------------------
# step 8: one head
# --------------------------------------------------------------------------
def _head_mistakes(Q, K, V, mask):
    Zs = [(hint, z) for hint, z in _score_mistakes(Q, K) if z is not None]
    M = 0.0 if mask is None else mask
    Z = ref.attention_scores(Q, K)
    A = ref.softmax(Z + M)
    out = []
    for hint, z in Zs:
        a = ref.softmax(z + M)
        out.append((hint, a @ V, a))
    a = ref.softmax(Z + M, axis=-2)
    out.append(
        (
            "the softmax runs over the wrong axis: each row of the attention matrix "
            "(one query) must sum to 1.",
            a @ V,
            a,
        )
    )
    if mask is not None:
        a = ref.softmax(Z)
        out.append(("the mask is ignored: add it to the scores before the softmax.", a @ V, a))
        with np.errstate(all="ignore"):
            a = ref.softmax(Z) + M
            out.append(
                (
                    "the mask is added after the softmax; add it to the scores Z, then "
                    "take the softmax.",
                    a @ V,
                    a,
                )
            )
            blocked = np.broadcast_to(np.isneginf(M), A.shape)
            a = np.where(blocked, 0.0, ref.softmax(Z))
            out.append(
                (
                    "the masked weights are zeroed after the softmax, so rows no longer "
                    "sum to 1; add the mask to the scores before the softmax.",
                    a @ V,
                    a,
                )
            )
    return out


def _check_head_case(fn, Q, K, V, mask=None):
    got = _call(fn, Q, K, V) if mask is None else _call(fn, Q, K, V, mask)
    exp_out, exp_A = ref.attention_head(Q, K, V, mask)
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise AssertionError(f"{_name(fn)}: return a tuple (output, weights).")
    out, A = (np.asarray(g) for g in got)
    if out.shape == exp_A.shape and A.shape == exp_out.shape and out.shape != A.shape:
        raise AssertionError(f"{_name(fn)}: return (output, weights) in this order.")
    if mask is not None and np.isnan(out).any() and not np.isnan(exp_out).any():
        if np.isneginf(A).any():
            raise AssertionError(
                f"{_name(fn)}: the weights hold −∞, so the mask was added after the softmax; "
                "add it to the scores Z, then take the softmax."
            )
        raise AssertionError(
            f"{_name(fn)}: the output has NaN: −∞ went into K or V (or was multiplied); the "
            "mask is added to the scores Z, never to K or V."
        )
    mistakes = _head_mistakes(Q, K, V, mask)
    _compare(fn, A, exp_A, "the attention weights", [(h, a) for h, _, a in mistakes])
    _compare(fn, out, exp_out, "the output", [(h, o) for h, o, _ in mistakes])


def check_attention_head(fn):
    """Check ``attention_head`` on the six students (Q = K = V, √7) and the song's head 1."""
    s = get_example("students")
    _check_head_case(fn, s.X, s.X, s.X)
    e = get_example("song")
    Q, K, V = (ref.split_heads(M, 2)[0] for M in ref.project_qkv(e.X, *e.weights[:3]))
    _check_head_case(fn, Q, K, V)
    _check_head_case(fn, Q, K, V, ref.causal_mask(6))
    _check_head_case(fn, Q, K, V, ref.padding_mask(4, 6))
    _ok(fn, "output and weights match: students, song head 1, causal and padding masks.")


def check_attention_head_hidden(fn, seed):
    rng = _rng(seed)
    for kind in ("none", "causal", "padding"):
        T, d_k, d_v = (int(n) for n in rng.integers(2, 7, size=3))
        lead = _random_shape(rng)
        Q, K = (rng.normal(size=(*lead, T, d_k)) for _ in range(2))
        V = rng.normal(size=(*lead, T, d_v))
        mask = {
            "none": None,
            "causal": ref.causal_mask(T),
            "padding": ref.padding_mask(int(rng.integers(1, T + 1)), T),
        }[kind]
        _check_head_case(fn, Q, K, V, mask)
    _ok(fn, "matches on random shapes with and without masks.")


# --------------------------------------------------------------------------
# step 9: all heads
# --------------------------------------------------------------------------
def _mhsa_mistakes(X, W_q, W_k, W_v, W_o, h, mask):
    Q, K, V = ref.project_qkv(X, W_q, W_k, W_v)
    d_model = X.shape[-1]
    d_k = d_model // h
    m4 = None if mask is None or np.ndim(mask) <= 2 else np.expand_dims(mask, -3)

    def run(Qh, Kh, Vh, merge=ref.merge_heads, W_out=W_o, scale=None):
        with np.errstate(all="ignore"):
            if scale is None:
                out, A = ref.attention_head(Qh, Kh, Vh, m4)
            else:
                A = ref.softmax(Qh @ Kh.swapaxes(-1, -2) / scale + (0 if m4 is None else m4))
                out = A @ Vh
        return merge(out) @ W_out if W_out is not None else merge(out), A

    def bad_split(M):
        *lead, T, _ = M.shape
        return M.reshape(*lead, h, T, d_k)

    def bad_merge(H):
        *lead, _, T, _ = H.shape
        return H.reshape(*lead, T, h * d_k)

    S = lambda M: ref.split_heads(M, h)  # noqa: E731
    m = [
        (
            "the output projection W_O is missing: multiply the concatenated heads by W_O.",
            *run(S(Q), S(K), S(V), W_out=None),
        ),
        (
            "the heads are split by reshaping without the transpose: use split_heads "
            "(reshape to (..., T, h, d_k), then swap the T and h axes).",
            *run(bad_split(Q), bad_split(K), bad_split(V), merge=bad_merge),
        ),
        (
            "the heads are merged by reshaping without swapping the axes back: use merge_heads.",
            *run(S(Q), S(K), S(V), merge=bad_merge),
        ),
        (
            "the same weight is used for Q, K and V: Q = X·W_Q, K = X·W_K, V = X·W_V.",
            *run(S(Q), S(Q), S(Q)),
        ),
        (
            f"the scores are divided by √d_model = √{d_model}; each head divides by its own "
            f"√d_k = √{d_k}.",
            *run(S(Q), S(K), S(V), scale=math.sqrt(d_model)),
        ),
        ("the scores are not scaled: divide Q·Kᵀ by √d_k.", *run(S(Q), S(K), S(V), scale=1.0)),
    ]
    if mask is not None:
        with np.errstate(all="ignore"):
            out, A = ref.multi_head_self_attention(X, W_q, W_k, W_v, W_o, h)
        m.append(("the mask is ignored: pass it on to every head's scores.", out, A))
    return m


def _check_mhsa_case(fn, X, W_q, W_k, W_v, W_o, h, mask=None):
    args = (X, W_q, W_k, W_v, W_o, h)
    got = _call(fn, *args) if mask is None else _call(fn, *args, mask)
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise AssertionError(f"{_name(fn)}: return a tuple (output, weights).")
    exp_out, exp_A = ref.multi_head_self_attention(*args, mask=mask)
    mistakes = _mhsa_mistakes(*args, mask)
    _compare(
        fn,
        got[1],
        exp_A,
        "the attention weights (..., h, T, T)",
        [(hint, a) for hint, _, a in mistakes],
    )
    _compare(fn, got[0], exp_out, "the output", [(hint, o) for hint, o, _ in mistakes])


def check_multi_head_self_attention(fn):
    """Check the whole layer on the song example with 1, 2 and 4 heads, with and without mask."""
    e = get_example("song")
    for h in (2, 1, 4):
        _check_mhsa_case(fn, e.X, *e.weights, h)
    _check_mhsa_case(fn, e.X, *e.weights, 2, ref.causal_mask(6))
    q = get_example("question")
    _check_mhsa_case(fn, q.X, *q.weights, 4, ref.causal_mask(q.T))
    _ok(fn, "the layer matches on the song (1, 2, 4 heads, causal) and the question sentence.")


def check_multi_head_self_attention_hidden(fn, seed):
    rng = _rng(seed)
    for masked in (False, True, True):
        h, d_k, T = (int(n) for n in rng.integers(2, 5, size=3))
        T += 1
        d = h * d_k
        lead = _random_shape(rng, 1)
        X = rng.normal(size=(*lead, T, d))
        Ws = [rng.normal(size=(d, d)) / math.sqrt(d) for _ in range(4)]
        mask = ref.causal_mask(T) if masked else None
        _check_mhsa_case(fn, X, *Ws, h, mask)
    _ok(fn, "matches on random shapes, batch axes and heads.")


# --------------------------------------------------------------------------
# capstone: multi-query attention
# --------------------------------------------------------------------------
def _check_mqa_case(fn, X, W_q, W_k, W_v, W_o, h, mask=None):
    args = (X, W_q, W_k, W_v, W_o, h)
    got = _call(fn, *args) if mask is None else _call(fn, *args, mask)
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise AssertionError(f"{_name(fn)}: return a tuple (output, weights).")
    exp_out, exp_A = ref.multi_query_attention(*args, mask=mask)
    Q = ref.split_heads(X @ W_q, h)
    K, V = X @ W_k, X @ W_v
    no_wo, _ = ref.attention_head(Q, K[..., None, :, :], V[..., None, :, :], mask)
    mistakes = [("the output projection W_O is missing.", ref.merge_heads(no_wo))]
    _compare(fn, got[1], exp_A, "the attention weights (..., h, T, T)")
    _compare(fn, got[0], exp_out, "the output", mistakes)


def check_multi_query_attention(fn):
    """Check multi-query attention on the question sentence with 2 and 4 heads."""
    q = get_example("question")
    rng = np.random.default_rng(3)
    for h in (2, 4):
        d_k = q.d_model // h
        W_k = ref.init_weights(q.d_model, d_k, rng)
        W_v = ref.init_weights(q.d_model, d_k, rng)
        _check_mqa_case(fn, q.X, q.W_q, W_k, W_v, q.W_o, h)
        _check_mqa_case(fn, q.X, q.W_q, W_k, W_v, q.W_o, h, ref.causal_mask(q.T))
    _ok(fn, "one shared K and V for all heads; matches on the question sentence.")


def check_multi_query_attention_hidden(fn, seed):
    rng = _rng(seed)
    for _ in range(3):
        h, d_k, T = (int(n) for n in rng.integers(2, 5, size=3))
        d = h * d_k
        X = rng.normal(size=(*_random_shape(rng, 1), T, d))
        W_q, W_o = (rng.normal(size=(d, d)) for _ in range(2))
        W_k, W_v = (rng.normal(size=(d, d_k)) for _ in range(2))
        _check_mqa_case(fn, X, W_q, W_k, W_v, W_o, h, ref.causal_mask(T))
    _ok(fn, "matches on random shapes.")


def _check_kv_cases(fn, cases):
    for T, d, h in cases:
        for mq in (False, True):
            got = _call(fn, T, d, h, mq)
            exp = ref.kv_cache_size(T, d, h, mq)
            if got != exp:
                hint = ""
                if mq and got == 2 * T * d:
                    hint = " With one shared K/V head, each token caches 2·d_k numbers."
                if got in (T * d, T * d // h):
                    hint = " Both K and V are cached: count them twice."
                raise AssertionError(
                    f"{_name(fn)}({T}, {d}, {h}, multi_query={mq}) returned {got!r}, "
                    f"expected {exp}.{hint}"
                )


def check_kv_cache_size(fn):
    """Check the KV-cache size: numbers cached per sequence and layer, MHA vs MQA."""
    _check_kv_cases(fn, [(6, 4, 2), (1024, 512, 8), (10, 12, 3)])
    _ok(fn, "2·T·d_model numbers for multi-head, 2·T·d_k for multi-query.")


def check_kv_cache_size_hidden(fn, seed):
    rng = _rng(seed)
    cases = []
    for _ in range(4):
        h, d_k = (int(n) for n in rng.integers(1, 17, size=2))
        cases.append((int(rng.integers(1, 5000)), h * d_k, h))
    _check_kv_cases(fn, cases)
    _ok(fn, "correct on random sizes.")


__all__ = sorted(name for name in globals() if name.startswith("check_"))
for _check in __all__:
    globals()[_check] = _exercise(_check.removeprefix("check_").removesuffix("_hidden"))(
        globals()[_check]
    )
