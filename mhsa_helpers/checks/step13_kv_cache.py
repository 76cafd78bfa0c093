"""Extension 3: one decoding step with a KV cache (``decode_step``).

Every call is independent: step ``t`` receives the cache that the reference
gives for the tokens before it (``split_heads`` of the prefix's keys and
values), so a wrong step is named at that step, and the cache the learner
returns is compared after every step. Expected results come from causal
multi-head self-attention over the prefix, not from the reference's
``decode_step``.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .batches import batch_rng, random_shape
from .comparison import as_pair, as_result, close, compare, precision
from .core import Call, Check, Outcome
from .failures import AmbiguousMistake, CheckFailed
from .hints import (
    W_O_MISSING,
    by_d_model,
    not_dividing,
    not_scaled,
    scaled_wrongly,
    wrong_axis,
)
from .relayed import qk_shapes
from .wording import agree

PREPENDED = (
    "the new position is put in front of the cache: append it at the end of axis -2, "
    "np.concatenate([K, k], axis=-2), so that position t is row t."
)
NOT_GROWN = (
    "the cache does not grow: only the new token's own key and value are kept and attended "
    "to; concatenate them after the cached K and V and attend to all of them."
)
FIRST_ONLY = (
    "the new token attends only to the first position, as with the first row of a causal "
    "mask: the new token is the last one, it sees every cached position and itself, "
    "with no mask."
)
NOT_ITSELF = (
    "the new token does not attend to itself, as with a mask that also blocks the diagonal: "
    "its own key and value belong in the cache before it attends."
)
UNSPLIT = (
    "the cache holds X·W_K and X·W_V before splitting into heads: cache the heads, "
    "shape (..., n_heads, t + 1, d_k), as split_heads gives them."
)
SWAPPED = "the cache is returned as (V', K'): return (K', V'), keys first."
TOKEN_AXIS_AT_MINUS_2 = (
    "x has batch axes before d_model and no token axis: insert it just before the last axis, "
    "x[..., None, :] (shape (..., 1, d_model))."
)
AS_SEQUENCE = (
    "x is read as a sequence of tokens: x[None, :] puts the new token axis in front, so a "
    f"batch of new tokens (B, d_model) becomes one sequence of B tokens. {TOKEN_AXIS_AT_MINUS_2}"
)


def mask_on_one_row(t1: int) -> str:
    """The hint for a causal mask of the whole sequence (t + 1 = ``t1`` positions) given to the
    one new query of a decoding step."""
    return (
        f"no mask belongs in a decoding step: a ({t1}, {t1}) mask (a causal one) is made for a "
        f"whole sequence of {t1} queries, but the step has one query, the new token's, whose "
        "one row of scores sees every cached position and itself (the cache holds only the "
        "past: there is nothing after it to block). Attend without a mask."
    )


def at_least_2d(batch: int) -> str:
    """The hint for np.atleast_2d's token axis: a batch of ``batch`` new tokens read as tokens."""
    return (
        "np.atleast_2d adds the token axis in front, and only where there is no axis before "
        f"d_model: a batch of new tokens (B, d_model) stays as it is and its B = {batch} tokens "
        f"are read as one sequence. {TOKEN_AXIS_AT_MINUS_2}"
    )


def by_positions(t: int, d_k: int) -> str:
    """The hint for a step's scores divided by √(t + 1), the number of cached positions."""
    return scaled_wrongly(
        f"√(t + 1) = √{t + 1}, the number of positions in the cache at step t = {t}", d_k
    )


NO_W_O = W_O_MISSING
NOT_SCALED = not_scaled("q")
NO_CACHE = (
    "fails on the first token, where the cache is None: with no cache, the new token's own "
    "keys and values are the whole cache (K' = k, V' = v, shape (..., n_heads, 1, d_k)); "
    "test `if cache is None` before unpacking or concatenating it."
)


def projected_with(role: str, weights: str) -> str:
    """The hint for the new token's ``role`` ("query", "key", "value") made with ``weights``."""
    return (
        f"the new token's {role} is computed with {weights}: q = x·W_Q (split into heads), "
        "k = x·W_K, v = x·W_V."
    )


QUERY_FROM_W_K = projected_with("query", "W_k")
VALUE_FROM_W_K = projected_with("value", "W_k")
KEY_FROM_W_V = projected_with("key", "W_v")


def keys_scaled(d_k: int) -> str:
    """The hint for keys stored in the cache already divided by √d_k."""
    return (
        f"the cached keys are divided by √d_k = √{d_k}: the cache holds the keys as "
        "split_heads(x·W_K) gives them, unscaled (a cache passed in was built that way), and "
        "the scores q·Kᵀ are divided by √d_k instead."
    )


def softmax_over_query(t: int) -> str:
    """The hint for a step's softmax along axis −2, the single query, at step ``t``."""
    return wrong_axis(
        f"the new token's t + 1 = {t + 1} weights, one per cached position,",
        " over the keys, the last axis: along the second-to-last axis, the single query, each "
        "weight is alone in its softmax, so every weight is 1 and y is W_O times the sum of the "
        "values",
    )


ZEROS_FIRST = (
    "with cache None, the cache starts with a row of zeros: K' and V' get two positions after "
    "the first token, and the new token also attends to that zero key (score 0). With no "
    "cache, the new key and value are the whole cache: K' = k, V' = v (shape (..., n_heads, "
    "1, d_k))."
)


def token_axis_kept(shape: tuple) -> str:
    """The hint for y returned with the token axis x[..., None, :] added (``shape``: y's)."""
    kept = (*shape[:-1], 1, shape[-1])
    return (
        f"y keeps the token axis of size 1 that x[..., None, :] added (shape {kept} instead of "
        f"{shape}): take the one token out before returning, e.g. merge_heads(...)[..., 0, :] "
        "@ W_O, so that y has the shape of x, (..., d_model)."
    )


def old_cache(t: int) -> str:
    """The hint for the cache passed in returned as it was (at step ``t``: t positions)."""
    return (
        f"the cache returned is the one passed in ({t} position{'s' * (t != 1)}), without the "
        "new token: return the grown cache (K', V'), the cached K and V with the new key and "
        f"value appended, t + 1 = {t + 1} positions."
    )


def head_axis_grown(h: int, t: int, returned: bool = False) -> str:
    """The hint for the new key and value concatenated along the head axis at step ``t``;
    ``returned`` where the function returned that cache (at step 1, where numpy can join them)
    rather than meeting an error."""
    return (
        f"the cache grows along the head axis: the new key and value are concatenated on axis "
        f"-3, so K' {'has' if returned else 'would have'} {2 * h} heads of {t} "
        f"position{'s' * (t != 1)} instead of "
        f"n_heads = {h} heads of t + 1 = {t + 1}. Append along the positions, "
        "np.concatenate([K, k], axis=-2) (the same for V)."
    )


#: The words of the errors that using a cache of None gives.
_NONE_WORDS = ("nonetype", "zero-dimensional arrays cannot be concatenated")
IN_PLACE = (
    "modified the cache passed in (in place): leave K and V as they are and build new arrays, "
    "e.g. with np.concatenate."
)


def step_calls(X, Ws, h: int, steps=None) -> list[Call]:
    """One call per step ``t`` of the sequence ``X`` (..., T, d_model), the reference's cache in."""
    T = X.shape[-2]
    calls = []
    for t in range(T) if steps is None else steps:
        cache = None
        if t > 0:
            cache = tuple(ref.split_heads(X[..., :t, :] @ W, h) for W in Ws[1:3])
        x = X[..., t, :].copy()
        calls.append(Call((x, cache, *Ws, h), context={"X": X[..., : t + 1, :], "step": t}))
    return calls


def expected_of(call: Call):
    """``(y, (K', V'))`` from causal multi-head self-attention over the prefix."""
    _, _, W_q, W_k, W_v, W_o, h = call.args
    X = call.context["X"]  # (..., t + 1, d_model)
    T = X.shape[-2]
    out, _ = ref.multi_head_self_attention(X, W_q, W_k, W_v, W_o, h, ref.causal_mask(T))
    cache = tuple(ref.split_heads(X @ W, h) for W in (W_k, W_v))
    return out[..., -1, :], cache


def mistakes(call: Call) -> list:
    """``(hint, (y, (K', V')) or None)`` for the known mistakes of one decoding step."""
    x, cache, W_q, W_k, W_v, W_o, h = call.args
    X = call.context["X"]
    d_model = x.shape[-1]
    d_k = d_model // h
    t = X.shape[-2] - 1
    q, k, v = (ref.split_heads(x[..., None, :] @ W, h) for W in (W_q, W_k, W_v))
    K_old, V_old = cache if cache is not None else (k[..., :0, :], v[..., :0, :])
    K, V = np.concatenate([K_old, k], axis=-2), np.concatenate([V_old, v], axis=-2)

    def y(keys, values, scale=None, keep=None, W_out=W_o, q=q, axis=-1):
        with np.errstate(all="ignore"):
            Z = q @ keys.swapaxes(-1, -2) / (scale or math.sqrt(d_k))  # (..., h, 1, n)
            if keep is not None:
                Z = np.where(keep, Z, -np.inf)
            heads = ref.merge_heads(ref.softmax(Z, axis=axis) @ values)[..., 0, :]  # (..., d_model)
            return heads @ W_out if W_out is not None else heads

    right = y(K, V)
    as_sequence = None  # x[None, :]: the batch axis read as the token axis, on the first step
    if x.ndim > 1 and cache is None:
        qs, ks, vs = (ref.split_heads(x[None] @ W, h) for W in (W_q, W_k, W_v))
        with np.errstate(all="ignore"):
            Zs = qs @ ks.swapaxes(-1, -2) / math.sqrt(d_k)  # (1, ..., h, B, B)
            ys = ref.merge_heads(ref.softmax(Zs) @ vs)[..., 0, :] @ W_o
        as_sequence = (ys, (ks, vs))
    front = None  # np.atleast_2d(x @ W): the last batch axis read as the token axis
    if x.ndim > 1 and cache is None:
        qs, ks, vs = (ref.split_heads(x @ W, h) for W in (W_q, W_k, W_v))  # (..., h, B, d_k)
        with np.errstate(all="ignore"):
            Zs = qs @ ks.swapaxes(-1, -2) / math.sqrt(d_k)  # (..., h, B, B)
            ys = ref.merge_heads(ref.softmax(Zs) @ vs)[..., 0, :] @ W_o
        front = (ys, (ks, vs))
    grown = t > 0  # on the first step several mistakes change nothing
    prepended = tuple(np.concatenate([new, old], -2) for new, old in ((k, K_old), (v, V_old)))
    position = np.arange(t + 1)
    # keys stored already divided by √d_k: the new key only, or the whole cache at each step
    scaled_new = np.concatenate([K_old, k / math.sqrt(d_k)], axis=-2)
    scaled_all = K / math.sqrt(d_k)
    K_v = np.concatenate([K_old, v], axis=-2)  # the new key made with W_v
    # the cache also read as (V, K): attends to keys [V; k] and values [K; v], returns
    # ([K; v], [V; k])
    read_swapped = (np.concatenate([K_old, v], axis=-2), np.concatenate([V_old, k], axis=-2))
    first = cache is None  # a cache that starts with a zero row
    K0, V0 = (np.concatenate([np.zeros_like(a), a], axis=-2) for a in (k, v))
    # the new key and value joined on the head axis: numpy can at step 1 only (one position
    # each); the query heads then read the newest n_heads of them, the new token alone
    heads_grown = []
    if t == 1:
        grown_K, grown_V = (np.concatenate(p, axis=-3) for p in ((K_old, k), (V_old, v)))
        heads_grown = [(head_axis_grown(h, t, returned=True), (y(k, v), (grown_K, grown_V)))]
    return [
        (PREPENDED, (right, prepended) if grown else None),
        (NOT_GROWN, (y(k, v), (k, v)) if grown else None),
        (FIRST_ONLY, (y(K, V, keep=position == 0), (K, V)) if grown else None),
        (NOT_ITSELF, (y(K, V, keep=position < t), (K, V))),
        (UNSPLIT, (right, (X @ W_k, X @ W_v))),
        (SWAPPED, (right, (V, K))),
        (SWAPPED, (y(read_swapped[1], read_swapped[0]), read_swapped) if grown else None),
        (QUERY_FROM_W_K, (y(K, V, q=k), (K, V))),
        (VALUE_FROM_W_K, (y(K, K), (K, K))),
        (KEY_FROM_W_V, (y(K_v, V), (K_v, V))),
        (keys_scaled(d_k), (y(scaled_new, V, 1.0), (scaled_new, V)) if d_k > 1 else None),
        (keys_scaled(d_k), (y(scaled_all, V, 1.0), (scaled_all, V)) if d_k > 1 and grown else None),
        (softmax_over_query(t), (y(K, V, axis=-2), (K, V)) if grown else None),
        (ZEROS_FIRST, (y(K0, V0), (K0, V0)) if first else None),
        (token_axis_kept(right.shape), (right[..., None, :], (K, V))),
        (old_cache(t), (right, cache) if grown else None),
        *heads_grown,
        (AS_SEQUENCE, as_sequence),
        (at_least_2d(x.shape[-2] if x.ndim > 1 else 1), front),
        (NO_W_O, (y(K, V, W_out=None), (K, V))),
        (by_d_model(d_model, d_k), (y(K, V, math.sqrt(d_model)), (K, V)) if h > 1 else None),
        (NOT_SCALED, (y(K, V, 1.0), (K, V)) if d_k > 1 else None),
        (
            by_positions(t, d_k),
            (y(K, V, math.sqrt(t + 1)), (K, V)) if t + 1 not in (1, d_k, d_model) else None,
        ),
    ]


def _floating(name: str, got, what: str) -> np.ndarray:
    arr = as_result(name, got, what)
    if not np.issubdtype(arr.dtype, np.floating):
        raise CheckFailed(
            f"{name}: {what} should be a floating array, but {agree(what, 'has')} dtype "
            f"{arr.dtype}."
        )
    return arr


def _tokens_before_heads(name: str, got, expected, which: str, contract) -> None:
    """Fail where a cache holds the token axis before the head axis, (..., t, n_heads, d_k)."""
    if expected.ndim < 3 or got.shape == expected.shape:
        return
    swapped = np.swapaxes(expected, -2, -3)
    if got.shape != swapped.shape or not close(got, swapped, contract=contract):
        return
    raise CheckFailed(
        f"{name}: the cache {which} is laid out (..., t, n_heads, d_k), the token axis before "
        "the head axis (as llama's code keeps its cache, before it transposes the heads out); "
        "this course's cache is (..., n_heads, t, d_k), split_heads of the keys so far, with "
        "each new token appended on axis −2.",
        public=f"{name}: the cache has the token axis before the head axis; the course's is "
        "(..., n_heads, t, d_k).",
    )


def _named_nan(name: str, got, known, contract) -> None:
    """Name a catalogued mistake whose result has NaN where ``got`` has (compare cannot)."""
    if not np.isnan(got).any():
        return
    hints = [h for h, w in known if w is not None and close(got, w, contract=contract)]
    hints = list(dict.fromkeys(hints))
    if len(hints) == 1:
        raise CheckFailed(f"{name}: {hints[0]}")
    if hints:
        raise AmbiguousMistake(name, hints)


def _whole_match(name: str, parts, exp_parts, known, contract) -> None:
    """Name the catalogued mistakes whose whole result (K', V', y) the learner's matches.

    Part by part, a part that two mistakes share (a key made with W_v, or a cache read and
    returned as (V, K), give the same K') would name the first one listed; the whole
    result tells them apart.
    """
    if all(close(g, e, contract=contract) for g, e in zip(parts, exp_parts, strict=True)):
        return
    hints = [
        h
        for h, w in known
        if w is not None
        and all(close(g, e, contract=contract) for g, e in zip(parts, (*w[1], w[0]), strict=True))
    ]
    hints = list(dict.fromkeys(hints))
    if len(hints) == 1:
        raise CheckFailed(f"{name}: {hints[0]}")
    if hints:
        raise AmbiguousMistake(name, hints)


class DecodeStep(Check):
    name = "decode_step"
    core_ndim = 1  # x: (d_model,)
    passed = (
        "token by token, the song's outputs are the rows of causal attention and the cache "
        "grows by one position at the end, at every step; batches, one head, float32 too."
    )
    passed_hidden = "matches at every step of random sequences, heads and batch axes."

    def visible(self):
        song = get_example("song")
        question = get_example("question")
        rng = batch_rng()

        def weights(d):
            return tuple(rng.normal(size=(d, d)) / math.sqrt(d) for _ in range(4))

        Xb, Wb = rng.normal(size=(2, 5, 6)), weights(6)
        Xbb, Wbb = rng.normal(size=(2, 3, 4, 4)), weights(4)
        X32 = song.X.astype(np.float32)
        W32 = tuple(W.astype(np.float32) for W in song.weights)
        return [
            *step_calls(song.X, song.weights, 2),  # t = 0 (a sequence of length 1) … 5
            *step_calls(Xb, Wb, 3, steps=(0, 4)),  # batch (2,): first token, then a prefix of 4
            *step_calls(Xbb, Wbb, 2, steps=(2,)),  # batch (2, 3)
            *step_calls(question.X, question.weights, 1, steps=(0, 3)),  # one head
            *step_calls(X32, W32, 2, steps=(0, 5)),  # float32
            Call(
                (song.X[0], None, *song.weights, 3),
                raises="ValueError",
                context={"why": not_dividing(3, 4)},
            ),
        ]

    def hidden(self, rng):
        calls = []
        for single in (False, False, True):
            h, d_k = (int(n) for n in rng.integers(1, 4, size=2))
            T = int(rng.integers(1, 6))
            d = h * d_k
            dtype = np.float32 if single else np.float64
            X = rng.normal(size=(*random_shape(rng, 2), T, d)).astype(dtype)
            Ws = tuple((rng.normal(size=(d, d)) / math.sqrt(d)).astype(dtype) for _ in range(4))
            calls += step_calls(X, Ws, h)
        d = 6
        Ws = tuple(rng.normal(size=(d, d)) for _ in range(4))
        why = not_dividing(4, d)
        calls.append(
            Call((rng.normal(size=d), None, *Ws, 4), raises="ValueError", context={"why": why})
        )
        return calls

    def catalogue(self, call):
        if call.raises is not None:
            return None, []
        return expected_of(call), mistakes(call)

    def relayed(self, call, said):
        """The cache grown along the head axis, read off the shapes it meets.

        mh.attention_head refuses 2·n_heads K/V heads for n_heads query heads (at
        step 1); from step 2 on, numpy's concatenate refuses t and 1 positions.
        """
        x, cache, h = call.args[0], call.args[1], call.args[6]
        found = re.search(
            r"mask must broadcast against the scores of shape \(([\d,\s]*)\), but got a mask "
            r"of shape \(([\d,\s]*)\)",
            said,
        )
        if found:  # a (t + 1, t + 1) mask, as for a whole sequence, against one query's row
            scores, mask = (
                tuple(int(n) for n in g.replace(",", " ").split()) for g in found.groups()
            )
            t1 = scores[-1] if scores else 0
            if len(scores) >= 2 and scores[-2] == 1 and t1 > 1 and mask[-2:] == (t1, t1):
                return mask_on_one_row(t1)
        if cache is None or np.ndim(x) != 1:  # with batch axes: the batch axes' sentence
            return None
        t = call.context["step"]
        shapes = qk_shapes(said)
        doubled = shapes is not None and shapes[2] == "batch" and shapes[1][:1] == (2 * h,)
        concatenated = "concatenation axis" in said and f"has size {t} and" in said
        if doubled or (t > 1 and concatenated):
            return head_axis_grown(h, t)
        return None

    def verdict(self, calls, outcomes):
        """As :meth:`Check.verdict`, naming a cache modified in place in the learner's terms."""
        renamed = []
        for call, outcome in zip(calls, outcomes, strict=False):
            modified = outcome.error is not None and "modified an input in place" in outcome.error
            if modified and call.args[1] is not None:
                outcome = Outcome(error=f"{self.name} {IN_PLACE}")
            raised = (outcome.code or "").startswith("raised:") and call.raises is None
            said = (outcome.error or "").split(" raised ", 1)[-1].lower()
            if raised and call.args[1] is None and any(w in said for w in _NONE_WORDS):
                raise CheckFailed(
                    f"{self.name} {NO_CACHE} ({outcome.error})",
                    public=f"{self.name} fails on the first token, where the cache is None.",
                )
            renamed.append(outcome)
        super().verdict(calls, renamed)

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        y, cache = as_pair(self.name, got, "y", "(K', V')")
        if not isinstance(cache, tuple | list) or len(cache) != 2:
            raise CheckFailed(f"{self.name}: return the cache as a pair (K', V') in (y, (K', V')).")
        parts = [
            _floating(self.name, p, w)
            for p, w in zip((*cache, y), ("the cache K'", "the cache V'", "y"), strict=True)
        ]
        contract = precision((*call.args, *parts))
        t = call.context["X"].shape[-2] - 1
        whats = (
            f"the cache K' after step {t} (shape (..., n_heads, {t + 1}, d_k))",
            f"the cache V' after step {t} (shape (..., n_heads, {t + 1}, d_k))",
            f"y at step {t}",
        )
        exp_parts = (*expected[1], expected[0])
        _whole_match(self.name, parts, exp_parts, known, contract)
        for i, (got_i, exp_i, what) in enumerate(zip(parts, exp_parts, whats, strict=True)):
            wrong = [(h, None if w is None else (*w[1], w[0])[i]) for h, w in known]
            _named_nan(self.name, got_i, wrong, contract)
            if i < 2:
                _tokens_before_heads(self.name, got_i, exp_i, "K'" if i == 0 else "V'", contract)
            compare(self.name, got_i, exp_i, what, wrong, contract=contract)
            # this part is right: a mistake that changes it cannot explain the parts after it
            known = [
                (h, w)
                for (h, w), (_, w_i) in zip(known, wrong, strict=True)
                if w_i is not None and close(got_i, w_i, contract=contract)
            ]
