"""Step 8: the output of one head, softmax(Q·Kᵀ/√d_k + M)·V, and its weights."""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..examples import get_example
from . import step05_scores
from .batches import batch_rng, random_shape
from .comparison import as_pair, as_result, close, compare_head_outputs
from .core import Call, Check
from .failures import CheckFailed
from .hints import (
    FULLY_BLOCKED_SEQUENCE,
    MASK_FORCED,
    MASK_IGNORED,
    SONG_HEAD_1,
    WEIGHTS_ZEROED_AFTER,
    WRONG_AXIS,
    by_d_v,
    k_transposed_fixed,
    matches_on_random,
    whole_array_sum,
)
from .hints import (
    MASK_ON_KEYS as MASK_ON_KEYS_START,
)
from .masks import (
    FINITE_WHEN_ALL_BLOCKED,
    WARNED,
    fully_blocked,
    fully_blocked_rows,
    two_batch_axes_mask,
)
from .wording import number

#: The scores returned where the weights are asked for.
SCORES_AS_WEIGHTS = (
    "the second value returned is the scores Z = Q·Kᵀ/√d_k (before the softmax), not the "
    "attention weights A = softmax(Z + M): return (A @ V, A)."
)
NO_SOFTMAX = (
    "the softmax is missing: the weights are A = softmax(Z + M), each row summing to 1, and "
    "the output is A @ V, not Z @ V."
)
MASK_AFTER = "the mask is added after the softmax; add it to the scores Z, then take the softmax."
#: Code for a 1/0 keep-mask (1 = attend) used with the course's additive mask.
KEEP_MASK = (
    "the mask is read as a keep-mask (1 = attend, 0 = block, as some libraries use it, "
    "masked_fill(mask == 0, -1e9)): the course's mask is additive, 0 where a key is allowed and "
    "−∞ where it is blocked; add it to the scores, Z + M."
)


#: Code for a boolean keep-mask (True = attend, as torch, jax and keras take one) used with the
#: course's additive mask: mask.astype(bool) is True where the mask is −∞.
BOOLEAN_MASK = (
    "the mask is read as a boolean keep-mask (True = attend, as torch, jax and keras take a "
    "boolean mask): mask.astype(bool) is True where the mask is −∞ and False where it is 0, so "
    "the allowed keys are blocked and the blocked ones allowed (a row with no blocked key comes "
    "out NaN). The mask of this course is additive, 0 where a key is allowed and −∞ where it is "
    "blocked: add it to the scores, Z + M."
)


#: Scores multiplied by a 0/1 mask.
MASK_MULTIPLIED = (
    "the scores are multiplied by a 0/1 mask: a blocked score becomes 0, not −∞, and e⁰ = 1 "
    "still gives it weight; the mask is additive (0 allowed, −∞ blocked): add it to the "
    "scores, Z + M."
)
#: The mask applied to the keys K (a blocked key's vector set to −1e9), not to the scores.
MASK_ON_KEYS = (
    f"{MASK_ON_KEYS_START}; add the mask to the scores, softmax(Q·Kᵀ/√d_k + M), and leave K "
    "as it is."
)


def keys_masked(K, mask):
    """K with the vector of every key blocked for all queries set to −1e9, as code that masks
    the keys instead of the scores makes it (K itself where no key is: the mask then seems
    ignored, and a later mask that blocks a key for every query tells the two apart)."""
    blocked = np.isneginf(np.asarray(mask)).all(axis=-2)  # (..., T_k): blocked for every query
    return np.where(blocked[..., :, None], -1e9, K)


#: The scores multiplied by the course's additive mask (0 allowed, −∞ blocked), Z * M.
SCORES_TIMES_MASK = (
    "the scores are multiplied by the mask, Z * M, but the mask is additive (0 where a key is "
    "allowed, −∞ where it is blocked): Z · 0 sets every allowed score to 0, and Z · (−∞) is "
    "+∞ for a negative score (NaN for a zero one), which the softmax turns into NaN. Add the "
    "mask to the scores, Z + M."
)


def _times_mask(Q, K, mask, A) -> bool:
    """Whether the weights ``A`` are the softmax of the scores multiplied by the additive
    mask, Z * M (NaN where the softmax met +∞ or NaN)."""
    with np.errstate(all="ignore"):
        wrong = ref.softmax(ref.attention_scores(Q, K) * np.asarray(mask))
        return A.shape == wrong.shape and bool(np.allclose(A, wrong, equal_nan=True))


def _read_as_boolean(Q, K, mask, A) -> bool:
    """Whether the weights ``A`` are those of the mask read as a boolean keep-mask: 0 (allowed)
    blocks with −∞ and −∞ (blocked) allows, NaN on the rows left with no key."""
    Z = ref.attention_scores(Q, K)
    with np.errstate(all="ignore"):
        flipped = Z + np.where(np.broadcast_to(mask, Z.shape) == 0, -np.inf, 0.0)
        e = np.exp(flipped - flipped.max(axis=-1, keepdims=True))
        wrong = e / e.sum(axis=-1, keepdims=True)
    return A.shape == wrong.shape and bool(np.allclose(A, wrong, equal_nan=True))


def mistakes(Q, K, V, mask) -> list:
    """``(hint, wrong output, wrong weights)`` for the known mistakes of one head."""
    M = 0.0 if mask is None else mask
    Z = ref.attention_scores(Q, K)
    out = []
    for hint, z in step05_scores.mistakes(Q, K):
        if z is not None:
            a = ref.softmax(z + M)
            out.append((hint, a @ V, a))
    d_k, d_v = Q.shape[-1], V.shape[-1]
    if d_v != d_k:
        a = ref.softmax(Z * np.sqrt(d_k) / np.sqrt(d_v) + M)
        out.append((by_d_v(d_v, d_k), a @ V, a))
    A = ref.softmax(Z + M)
    if d_k > 1:  # Q·Kᵀ + M through the softmax, then the weights divided by √d_k
        with np.errstate(all="ignore"):
            a = ref.softmax(Z * np.sqrt(d_k) + M) / np.sqrt(d_k)
        out.append(
            (
                f"the weights are divided by √d_k = √{d_k} after the softmax, so each row sums to "
                f"1/√d_k ≈ {number(1 / np.sqrt(d_k))}, not 1: the scale belongs to the scores, "
                "before the softmax, softmax(Q·Kᵀ/√d_k + M).",
                a @ V,
                a,
            )
        )
    with np.errstate(all="ignore"):
        out += [
            (SCORES_AS_WEIGHTS, A @ V, Z + M),
            (SCORES_AS_WEIGHTS, A @ V, Z),
            (SCORES_AS_WEIGHTS, A @ V, Z * np.sqrt(d_k) + M),  # Q·Kᵀ, not yet scaled
        ]
        if Z.shape[-2] > 1:  # one row: its sum is the whole array's
            shifted = np.exp(Z + M - np.max(Z + M, axis=-1, keepdims=True))
            total = np.nansum(shifted)
            a = np.where(np.isnan(shifted), 0.0, shifted) / total
            if fully_blocked(mask, Z.shape) is None:
                out.append((whole_array_sum(Z), a @ V, a))
    out.append(
        (
            "the weights are transposed before multiplying: each query's output is its row of A "
            "times V, A @ V (not A.T @ V).",
            A.swapaxes(-1, -2) @ V if A.shape[-1] == A.shape[-2] == V.shape[-2] else None,
            A,
        )
    )
    a = ref.softmax(Z + M, axis=-2)
    out.append((WRONG_AXIS, a @ V, a))
    if mask is None:
        return out
    if fully_blocked(mask, Z.shape) is not None:  # −1e9 for −∞: those rows come out uniform
        with np.errstate(all="ignore"):
            a = ref.softmax(np.where(np.broadcast_to(np.isneginf(M), Z.shape), -1e9, Z + M))
        out.append((FINITE_WHEN_ALL_BLOCKED, a @ V, a))
    a = ref.softmax(Z)
    out.append((MASK_IGNORED, a @ V, a))
    with np.errstate(all="ignore"):  # Z · (0/1): a blocked score 0, not −∞
        a = ref.softmax(Z * np.where(np.broadcast_to(np.isneginf(M), Z.shape), 0.0, 1.0))
    out.append((MASK_MULTIPLIED, a @ V, a))
    a = ref.softmax(ref.attention_scores(Q, keys_masked(K, mask)))
    out.append((MASK_ON_KEYS, a @ V, a))
    with np.errstate(all="ignore"):  # masked_fill(mask == 0, -1e9), as for a 1/0 keep-mask
        a = ref.softmax(np.where(np.broadcast_to(M, Z.shape) == 0, -1e9, Z))
    out.append((KEEP_MASK, a @ V, a))
    with np.errstate(all="ignore"):
        a = ref.softmax(Z) + M
        out.append(
            (
                MASK_AFTER,
                a @ V,
                a,
            )
        )
        blocked = np.broadcast_to(np.isneginf(M), Z.shape)
        a = np.where(blocked, 0.0, ref.softmax(Z))
        out.append((WEIGHTS_ZEROED_AFTER, a @ V, a))
    return out


def no_softmax(name: str, Q, K, V, mask, out, A) -> None:
    """Fail naming it where the weights are the scores and the output is scores @ V."""
    Z = ref.attention_scores(Q, K) + (0.0 if mask is None else mask)  # (..., T_q, T_k)
    if A.shape != Z.shape or not close(A, Z):
        return
    with np.errstate(all="ignore"):
        wrong = Z @ V
    if out.shape == wrong.shape and close(out, wrong):
        raise CheckFailed(f"{name}: {NO_SOFTMAX}")


def mask_forced(said: str, shape: tuple, qk: tuple) -> bool:
    """Whether numpy refused to reshape (or broadcast) a mask of ``shape`` into the scores'
    last two axes ``qk`` = (T_q, T_k): np.broadcast_to says a mask with more axes has "more
    dimensions than allowed"."""
    target = "(" + ",".join(str(n) for n in qk) + ")"
    said = said.replace(" ", "")
    size = int(np.prod(shape))
    reshaped = f"cannotreshapearrayofsize{size}intoshape{target}" in said
    broadcast = "requestedshape" + target in said and "(" + ",".join(map(str, shape)) in said
    fewer = "moredimensionsthanallowedbytheaxisremapping" in said and len(shape) > len(qk)
    return tuple(shape) != tuple(qk) and (reshaped or broadcast or fewer)


def _batch():
    """Q, K of shape (2, 4, 3) and V of shape (2, 4, 5): a batch, and d_v ≠ d_k."""
    rng = batch_rng()
    return rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 5))


def _song_head_1():
    e = get_example("song")
    return tuple(ref.split_heads(M, 2)[0] for M in ref.project_qkv(e.X, *e.weights[:3]))


class AttentionHead(Check):
    name = "attention_head"
    passed = (
        f"output and weights match: students, {SONG_HEAD_1}, a batch with a mask per "
        f"sequence, {FULLY_BLOCKED_SEQUENCE}, float32, two batch axes."
    )
    passed_hidden = matches_on_random("with and without masks")

    def visible(self):
        s = get_example("students")
        Q, K, V = _song_head_1()
        return [
            Call((s.X, s.X, s.X), context={"tokens": s.tokens}),
            Call((Q, K, V)),
            Call((Q, K, V, ref.causal_mask(6))),
            Call((Q, K, V, ref.padding_mask(4, 6))),
            Call((*_batch(), ref.causal_mask(4))),
            Call((*_batch(), ref.padding_mask(np.array([4, 2]), 4))),  # a mask per sequence
            Call((*_batch(), ref.padding_mask(np.array([3, 0]), 4))),  # no real token: all blocked
            Call((*(M.astype(np.float32) for M in _batch()), ref.causal_mask(4))),  # float32
            # two batch axes, one sequence with every key blocked: weights 0, output 0 there
            Call((*(np.stack([M, M[::-1]]) for M in _batch()), two_batch_axes_mask(4))),
        ]

    def hidden(self, rng):
        calls = []
        for kind in ("none", "causal", "padding"):
            T, d_k, d_v = (int(n) for n in rng.integers(2, 7, size=3))
            lead = random_shape(rng)
            Q, K = (rng.normal(size=(*lead, T, d_k)) for _ in range(2))
            V = rng.normal(size=(*lead, T, d_v))
            if kind == "none":
                calls.append(Call((Q, K, V)))
            elif kind == "causal":
                calls.append(Call((Q, K, V, ref.causal_mask(T))))
            else:
                calls.append(Call((Q, K, V, ref.padding_mask(int(rng.integers(1, T)), T))))
        # a batch with a mask per sequence, one sequence with no real token (every key
        # blocked): padding (B, 1, T), or causal and padding (B, T, T)
        for per_query in (False, True):
            B, T, d_k, d_v = (int(n) for n in rng.integers(2, 6, size=4))
            Q, K = (rng.normal(size=(B, T, d_k)) for _ in range(2))
            V = rng.normal(size=(B, T, d_v))
            lengths = rng.integers(1, T + 1, size=B)
            lengths[rng.integers(B)] = 0
            mask = ref.padding_mask(lengths, T)  # (B, 1, T)
            calls.append(Call((Q, K, V, mask + ref.causal_mask(T) if per_query else mask)))
        return calls

    def catalogue(self, call):
        Q, K, V, *rest = call.args
        known = mistakes(Q, K, V, rest[0] if rest else None)
        return ref.attention_head(*call.args), [
            (h, None if o is None else (o, a)) for h, o, a in known
        ]

    def relayed(self, call, said):
        """K transposed by a fixed permutation of three axes, or the mask forced into the shape
        (T_q, T_k), read off numpy's refusal."""
        Q, K, _, *rest = call.args
        if "axes don't match array" in said and np.ndim(K) != 3:
            return k_transposed_fixed(np.shape(K))
        mask = rest[0] if rest else call.kwargs.get("mask")
        if mask is not None and mask_forced(said, np.shape(mask), (Q.shape[-2], K.shape[-2])):
            return MASK_FORCED
        return None

    def judge(self, call, got):
        Q, K, V, *rest = call.args
        mask = rest[0] if rest else None
        exp_out, exp_A = ref.attention_head(Q, K, V, mask)
        out, A = as_pair(self.name, got)
        out = as_result(self.name, out, "the output")
        A = as_result(self.name, A, "the attention weights")
        if out.shape == exp_A.shape and A.shape == exp_out.shape and out.shape != A.shape:
            raise CheckFailed(f"{self.name}: return (output, weights) in this order.")
        fully_blocked_rows(self.name, A, exp_A)  # NaN there, or weights for −∞'s stand-in
        if mask is not None and np.isnan(out).any() and not np.isnan(exp_out).any():
            blocked = np.broadcast_to(np.isneginf(mask), exp_A.shape)
            subtracted = blocked.any() and not np.isfinite(A[blocked]).any()
            if A.shape == exp_A.shape and subtracted and not np.isneginf(A).any():
                raise CheckFailed(
                    f"{self.name}: the mask is subtracted from the scores: add it, Z + M "
                    "(−(−∞) is +∞, and the softmax of +∞ is NaN)."
                )
            if np.isneginf(A).any():
                raise CheckFailed(f"{self.name}: {MASK_AFTER} (The weights hold −∞.)")
            if _read_as_boolean(Q, K, mask, A):
                raise CheckFailed(f"{self.name}: {BOOLEAN_MASK}")
            if _times_mask(Q, K, mask, A) or "encountered in multiply" in WARNED.get():
                raise CheckFailed(f"{self.name}: the output has NaN: {SCORES_TIMES_MASK}")
            raise CheckFailed(
                f"{self.name}: the output has NaN: −∞ went into K or V (or was multiplied); "
                "the mask is added to the scores Z, never to K or V."
            )
        no_softmax(self.name, Q, K, V, mask, out, A)
        known = [(hint, *(wrong or (None, None))) for hint, wrong in self.catalogue(call)[1]]
        tokens = call.context.get("tokens")
        qk = ("query", tokens, "key", tokens) if tokens else None
        rows = ("token", tokens, "column", list(range(V.shape[-1]))) if tokens else None
        compare_head_outputs(self.name, (out, A), (exp_out, exp_A), known, labels=(qk, rows))
