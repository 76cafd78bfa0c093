"""Extension 4: attention block by block over the keys, with an online softmax.

Results are compared with ``attention_head(Q, K, V, mask)[0]`` (never with
the reference's own ``tiled_attention``); the catalogue's wrong results come
from one block loop with the mistake switched on. Two calls at T = 4096 are
measured: their peak of traced memory must stay under 32 MiB, and sampled
rows of their output are compared with attention computed for those rows. The
hidden test ends with one such call too (causal, T drawn above 2048, where a
(T, T) array of float64 is over the bound), so that its grade does not rest on
the visible test's.
"""

from __future__ import annotations

import functools
import math
import secrets

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .batches import batch_rng, random_shape
from .comparison import close, compare, precision
from .core import Call, Check, Outcome
from .failures import CheckFailed
from .hints import NOT_SCALED, QK_WIDTH, by_d_v, by_length, warned_on_the_way
from .relayed import broadcast_shapes
from .step13_kv_cache import _floating, _named_nan

SUM_NOT_RESCALED = (
    "the running sum ℓ is not rescaled when the maximum grows: multiply it by "
    "exp(m_old - m_new) before adding the new block's sum."
)
OUTPUT_NOT_RESCALED = (
    "the running output O is not rescaled when the maximum grows: multiply it by "
    "exp(m_old - m_new) before adding the new block's exp(S - m_new)·V."
)
NEITHER_RESCALED = (
    "neither the running sum nor the running output is rescaled when the maximum grows: "
    "multiply both by exp(m_old - m_new) before adding the new block."
)
INVERTED = (
    "the rescale is inverted: when the maximum grows from m_old to m_new, the old sum and "
    "output shrink, multiply them by exp(m_old - m_new) (at most 1), not exp(m_new - m_old)."
)
INVERTED_FIRST = (
    f"{INVERTED} On the first block m_old = −∞ (or a start such as −1e30), so "
    "exp(m_new - m_old) = ∞, and the running sum's 0·∞ is NaN in every row."
)
SHIFT_BY_OLD = (
    "the block's scores are shifted by the old running maximum, exp(S - m_old): on the first "
    "block m_old = −∞, so exp(S + ∞) = ∞ and ∞ − ∞ makes every row NaN. Shift by the new "
    "maximum, exp(S - m_new) with m_new = max(m_old, the block's maximum), and rescale the old "
    "sum and output by exp(m_old - m_new)."
)
NO_SHIFT = (
    "the scores are not shifted by the running maximum before exp, so exp overflows on "
    "scores of hundreds: use exp(S - m_new), and rescale by exp(m_old - m_new)."
)
DIAGONAL = (
    "the causal mask also blocks the diagonal (off by one): query i sees the keys j ≤ i, "
    "itself included."
)
ONE_AHEAD = (
    "the causal mask lets each query see the next key too (off by one): block the keys j > i."
)
LOCAL_INDEX = (
    "the causal mask compares the query's position with the key's index inside its block: "
    "key j of the block starting at s is at position s + j."
)
FLIPPED = (
    "the causal mask is flipped: it blocks the keys before each query (the past, j < i) "
    "instead of those after it (j > i). Query i sees the keys 0 … i."
)
DIAGONAL_BLOCK = (
    "with causal=True only the blocks of keys wholly after the query's are skipped: inside the "
    "block on the diagonal, the keys after each query (j > i) are still seen. Block them there "
    "too (−∞ where the key's position is greater than the query's) in every block that holds "
    "both past and future keys."
)
CAUSAL_IGNORED = "causal=True is ignored: block the keys after each query (j > i)."
LAST_BLOCK = (
    "the last, shorter block of keys is skipped: loop over range(0, T_k, block_size) and cut "
    "the last block at T_k."
)
ZERO_START = (
    "the running maximum must start at −∞, not at 0: when every score of a row is very "
    "negative (here thousands below 0), exp(S - 0) is 0 for every key and the row ends as "
    "0/0. Start it with np.full(..., -np.inf), so that the first block's maximum replaces it."
)

BLOCKS_AVERAGED = (
    "the softmax of each block is taken on its own and the outputs of the blocks are "
    "averaged: a block whose scores are higher must weigh more. Keep one running maximum m, "
    "sum ℓ and output O across the blocks (each rescaled by exp(m_old - m_new) when m grows) "
    "and divide O by ℓ once, after the last block."
)
NOT_DIVIDED = (
    "the output is not divided by the running sum ℓ at the end: O holds Σ exp(S - m)·V over "
    "every block, so return O / ℓ."
)
BLOCK_MAXIMUM = (
    "the running maximum is replaced by each block's own maximum (m_new = S.max(axis=-1, "
    "keepdims=True)), which forgets the earlier blocks: when a block's scores are lower than "
    "an earlier block's, exp(m_old - m_new) overflows, and after a block whose keys are all "
    "blocked (its maximum −∞) the next rescale is exp(−∞) = 0, which wipes out the sum and "
    "output kept so far. Keep the largest so far, m_new = np.maximum(m_old, S.max(axis=-1, "
    "keepdims=True))."
)
NEW_BLOCK_RESCALED = (
    "the rescale multiplies the new block's exp(S - m_new)·V instead of the running output: "
    "O = O·exp(m_old - m_new) + exp(S - m_new)·V (the new block is already taken against "
    "m_new)."
)
BLOCK_OWN_SUM = (
    "each block's exp(S - m_new) is divided by the block's own sum, so every block's weights "
    "sum to 1 by themselves and the row's weights add up to more than 1: the denominator is "
    "the whole row's sum. Keep a running sum ℓ (rescaled by exp(m_old - m_new) like O) and "
    "divide O by ℓ once, after the last block."
)

NORMALISED_EACH_BLOCK = (
    "the output O is divided by ℓ inside the loop, after every block, yet the next block's "
    "exp(S - m_new)·V is added to it undivided: the earlier blocks and the new one no longer "
    "share one denominator. Keep O and ℓ unnormalised across the blocks (both rescaled by "
    "exp(m_old - m_new) when m grows) and divide O by ℓ once, after the last block."
)

OLD_MAX_OUTPUT = (
    "the block's exp(S − m) added to the running output O is taken against the old maximum "
    "m_old, while the running sum ℓ takes it against the new one, so O and ℓ weigh the block "
    "differently (and on the first block, where m_old = −∞ is taken as 0, exp(S) itself can "
    "overflow). Rescale O by exp(m_old − m_new), then add exp(S − m_new)·V, as for ℓ."
)


OVERLAPPING_BLOCKS = (
    "the blocks overlap: the slice K[..., s:s + block_size + 1] takes one key too many (a "
    "slice's end is already excluded), so the last key of each block is also the first of the "
    "next and is counted twice. Slice s:s + block_size (and the same rows of V)."
)


def by_block_length(b: int, d_k: int) -> str:
    """The hint for each block's scores divided by the square root of the block's length."""
    return (
        f"each block's scores are divided by √(the block's length), √{b} for a block of {b} "
        f"keys: the scale is √d_k = √{d_k}, {QK_WIDTH}, the same for every block."
    )


#: What a hidden test says of a call that builds a (T_q, T_k) array on a large input.
MEMORY_PUBLIC = (
    "tiled_attention builds a (T_q, T_k) array on a large hidden input (more than 32 MiB): "
    "work on one block of keys at a time."
)

#: The memory bound of the contract: a quarter of one 4096 × 4096 float64 matrix.
MEMORY_LIMIT = 32 << 20
#: How far the grader's fresh process for a measured call may grow its resident memory,
#: from its start to the call's peak, as the child measures it from outside: the bound, and
#: room for the inputs and their copies (about 30 MiB). The reference grows by about 55 MiB;
#: no buffer of scores of more than ~42 MiB fits, made by the cells or by the call.
RESIDENT_LIMIT = 72 << 20
#: Output rows compared in the calls that measure memory.
SAMPLED_ROWS = (0, 1, 127, 128, 129, 1000, 2047, 2048, 3333, 4095)


def variant(Q, K, V, b, causal=False, **mistake):
    """The block loop with at most one mistake switched on (warnings silenced).

    ``unguarded`` takes it as most write it, with no guard for a row that has seen no key
    yet: exp(S - m_new) with m_new = −∞ is NaN, and the row stays NaN to the end.
    """
    with np.errstate(all="ignore"):
        T_q, d_k = Q.shape[-2:]
        T_k = K.shape[-2]
        lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
        m = np.full((*lead, T_q, 1), 0.0 if mistake.get("zero_start") else -np.inf)
        l = np.zeros((*lead, T_q, 1))
        O = np.zeros((*lead, T_q, V.shape[-1]))
        rows = np.arange(T_q)[:, None]
        stop = T_k - T_k % b if mistake.get("last_block") else T_k
        scale = 1.0 if mistake.get("not_scaled") else math.sqrt(d_k)
        if mistake.get("by_d_v"):
            scale = math.sqrt(V.shape[-1])
        if mistake.get("by_t"):
            scale = math.sqrt(T_k)
        blocks, seen = [], []  # each block's own softmax output, and whether it saw a key
        for s in range(0, stop, b):
            e = min(s + b + 1 if mistake.get("overlap") else s + b, T_k)
            if mistake.get("by_block"):  # √ of the block's own length
                scale = math.sqrt(e - s)
            S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / scale
            if causal and not mistake.get("causal_ignored"):
                cols = np.arange(e - s) if mistake.get("local_index") else np.arange(s, e)
                blocked = cols > rows + mistake.get("ahead", 0)
                if mistake.get("diagonal"):
                    blocked = cols >= rows
                if mistake.get("flipped"):  # the past blocked, the diagonal too if "diagonal"
                    blocked = cols <= rows if mistake["flipped"] == "diagonal" else cols < rows
                if mistake.get("block_level"):  # the keys past the query's own block only
                    blocked = cols >= (rows // b + 1) * b
                S = np.where(blocked, -np.inf, S)
            if mistake.get("averaged"):  # each block's own softmax, 0 where it sees no key
                E = np.exp(S - np.where(np.isneginf(S), 0.0, S).max(axis=-1, keepdims=True))
                E = np.where(np.isneginf(S), 0.0, E)
                total = E.sum(axis=-1, keepdims=True)
                blocks.append(np.divide(E @ V[..., s:e, :], total, where=total > 0, out=0 * O))
                seen.append(total > 0)
                continue
            if mistake.get("no_shift"):
                P = np.exp(S)
                l, O = l + P.sum(axis=-1, keepdims=True), O + P @ V[..., s:e, :]
                continue
            m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
            if mistake.get("block_max"):  # the block's own maximum (the old one if it has none,
                top = S.max(axis=-1, keepdims=True)  # or −∞ as it is, "raw")
                m_new = top if mistake["block_max"] == "raw" else np.where(np.isneginf(top), m, top)
            shift = m_new if mistake.get("unguarded") else np.where(np.isneginf(m_new), 0.0, m_new)
            P = np.exp(S - shift)
            if mistake.get("block_sum"):  # each block over its own sum (0/0 where none is seen)
                P = P / P.sum(axis=-1, keepdims=True)
            r = np.exp(m - shift)
            if mistake.get("inverted") == "guarded":  # exp(m_new - m_old), 1 on the first block
                r = np.exp(shift - np.where(np.isneginf(m), shift, m))
            elif mistake.get("inverted"):  # exp(m_new - m_old): inf · 0 on the first block
                r = np.exp(shift - m)
            l = (l if mistake.get("sum") else l * r) + P.sum(axis=-1, keepdims=True)
            if mistake.get("old_max"):  # O's share against the old maximum (0 before any)
                O = O * r + np.exp(S - np.where(np.isneginf(m), 0.0, m)) @ V[..., s:e, :]
            elif mistake.get("out") == "new":  # the new block rescaled instead of O
                O = O + P @ V[..., s:e, :] * r
            else:
                O = (O if mistake.get("out") else O * r) + P @ V[..., s:e, :]
            m = m_new
            if mistake.get("each_block") == "reset":  # O normalised, ℓ set back to 1
                O, l = O / l, np.ones_like(l)
            elif mistake.get("each_block"):  # O normalised, ℓ kept: O / ℓ returned as it is
                O = O / l
        if mistake.get("each_block") == "kept":
            return O
        if mistake.get("averaged") == "seen":  # over the blocks that saw a key
            return sum(blocks) / np.maximum(sum(seen), 1)
        if mistake.get("averaged"):
            return sum(blocks) / len(blocks)
        if mistake.get("not_divided") or mistake.get("block_sum"):
            return O
        if mistake.get("no_shift") or mistake.get("zero_start") == "divided":
            return O / l  # 0/0 = NaN on a row whose every exp underflowed
        if mistake.get("unguarded") or mistake.get("inverted") is True:
            return O / l  # NaN as numpy gives it: −∞ − (−∞), 0·∞, 0/0
        return np.divide(O, l, out=np.zeros_like(O), where=l > 0)


def very_negative(rng) -> tuple:
    """``(Q, K, V, block_size)`` whose every score is thousands below 0 (Q ≈ -40, K ≈ 40).

    exp of any of them is 0: a running maximum that starts at 0 instead of −∞ ends every
    row as 0/0.
    """
    T_q, T_k, d_k = (int(n) for n in rng.integers(2, 6, size=3))
    Q = -40.0 + rng.normal(size=(T_q, d_k))
    K = 40.0 + rng.normal(size=(T_k, d_k))
    return Q, K, rng.normal(size=(T_k, 2)), int(rng.integers(1, T_k + 1))


def expected_of(Q, K, V, causal) -> np.ndarray:
    """``attention_head(Q, K, V, mask)[0]``: the whole score matrix, for small inputs."""
    mask = ref.causal_mask(Q.shape[-2]) if causal else None
    return ref.attention_head(np.asarray(Q, float), K, V, mask)[0]


def rows_of(Q, K, V, causal, rows) -> np.ndarray:
    """Attention for the query ``rows`` only, each over its own keys (no T × T matrix)."""
    out = []
    for i in rows:
        keys = slice(0, i + 1) if causal else slice(None)
        z = K[keys] @ Q[i] / math.sqrt(Q.shape[-1])
        w = np.exp(z - z.max())
        out.append(w @ V[keys] / w.sum())
    return np.array(out)


#: Drawn once per process: the measured calls' inputs are new in every process that judges,
#: so that no answer can compute them beforehand (in its cells, say) and only look them up.
_MEMORY_SEED = secrets.randbits(64)


@functools.cache
def memory_inputs(causal: bool):
    """Q, K, V of shape (4096, 64), float64: random, the same within this process."""
    rng = np.random.default_rng((_MEMORY_SEED, causal))
    return tuple(rng.normal(size=(4096, 64)) for _ in range(3))


@functools.cache
def _memory_expected(causal: bool) -> np.ndarray:
    return ref.tiled_attention(*memory_inputs(causal), 128, causal)


def song_qkv():
    """Q, K, V of the song (6 tokens, d = 4): the worked example of the visible check."""
    song = get_example("song")
    return ref.project_qkv(song.X, *song.weights[:3])


class TiledAttention(Check):
    name = "tiled_attention"

    def relayed(self, call, said):
        """Running arrays sized from Q's batch axes alone, where K and V bring more; a running
        output of Q's width d_k where V's d_v belongs."""
        Q, K, V = (np.shape(a) for a in call.args[:3])
        lead = np.broadcast_shapes(Q[:-2], K[:-2], V[:-2])
        cores = {shape[-2:] for shape in broadcast_shapes(said)}
        if Q[-1] != V[-1] and {Q[-2:], (Q[-2], V[-1])} <= cores:
            return (
                f"the running output O has Q's width, (..., T_q, d_k) = {Q[-2:]} "
                "(np.zeros_like(Q)?): it adds up rows of V, so it has V's width d_v = "
                f"{V[-1]}, (..., T_q, d_v) = {(Q[-2], V[-1])}: "
                "np.zeros((*batch, T_q, V.shape[-1]))."
            )
        sized = ("non-broadcastable output operand", "could not broadcast input array")
        if lead == Q[:-2] or not any(w in said for w in sized):  # an array sized from Q
            return None
        return (
            "the running arrays (m, ℓ, O) are sized from Q's batch axes alone "
            f"({Q[:-2] or 'none'}), but here Q {Q} reads K {K} and V {V}, whose batch axes it "
            "broadcasts over: the output "
            f"has the batch axes of all three, {lead}. Size m, ℓ and O from "
            "np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])."
        )

    passed = (
        "equals attention_head on the song for every block size, causal or not, on batches, "
        "float32, large, very negative and growing scores; at T = 4096 it stays under 32 MiB."
    )
    passed_hidden = (
        "equals attention_head on random shapes, block sizes and masks, and stays under 32 MiB "
        "on a large input."
    )

    def visible(self):
        song = get_example("song")
        Q, K, V = song_qkv()
        labels = {"labels": ("query", song.tokens, "column", list(range(4)))}
        rng = batch_rng()
        calls = [Call((Q, K, V, b), context=labels) for b in (2, 4, 1, 6, 8)]
        calls += [Call((Q, K, V, b), {"causal": True}, context=labels) for b in (2, 4)]
        large = rng.normal(size=(4, 8))
        grow = np.abs(rng.normal(size=(3, 4))) + 0.5
        keys = np.arange(1, 9)[:, None] * np.ones((8, 4)) * 0.8  # scores grow key after key
        calls += [
            Call((rng.normal(size=(3, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 4)), 3)),
            Call((rng.normal(size=(1, 4)), rng.normal(size=(1, 4)), rng.normal(size=(1, 2)), 2)),
            Call((rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3)), 2)),
            Call((*(rng.normal(size=(2, 3, 5, d)) for d in (4, 4, 2)), 2), {"causal": True}),
            # one sequence of queries reading a batch of keys and values: the output's batch axes
            # are K's and V's, not Q's
            Call(
                (rng.normal(size=(5, 4)), rng.normal(size=(2, 7, 4)), rng.normal(size=(2, 7, 3)), 3)
            ),
            Call(
                (*(rng.normal(size=(2, 7, 4)).astype(np.float32) for _ in range(3)), 3),
                {"causal": True},
            ),
            Call((30 * large, 30 * rng.normal(size=(9, 8)), rng.normal(size=(9, 3)), 4)),
            Call((grow, keys, rng.normal(size=(8, 2)), 2)),
            Call(very_negative(np.random.default_rng(14))),  # a running max from 0 gives 0/0
            Call((Q, K, V, 0), raises="ValueError", context={"why": "block_size = 0"}),
            Call((Q, K, V, -2), raises="ValueError", context={"why": "a negative block_size (-2)"}),
        ]
        for causal in (False, True):
            calls.append(
                Call(
                    (*memory_inputs(causal), 128),
                    {"causal": True} if causal else {},
                    memory=True,
                    context={"causal": causal},
                )
            )
        return calls

    def hidden(self, rng):
        calls = []
        for i in range(6):
            lead = random_shape(rng, 2)
            T_q, T_k = (int(n) for n in rng.integers(1, 10, size=2))
            causal = i % 2 == 1
            if causal:
                T_k = T_q
            d_k, d_v = (int(n) for n in rng.integers(1, 6, size=2))
            b = int(rng.integers(1, T_k + 3))
            dtype = np.float32 if i == 4 else np.float64
            Q, K = (rng.normal(size=(*lead, n, d_k)).astype(dtype) for n in (T_q, T_k))
            V = rng.normal(size=(*lead, T_k, d_v)).astype(dtype)
            calls.append(Call((Q, K, V, b), {"causal": True} if causal else {}))
        # causal with blocks of one key: the first query meets two fully blocked blocks in a
        # row, where a running maximum taken from each block alone (−∞) loses the sum so far
        T, d_k = int(rng.integers(3, 7)), int(rng.integers(1, 5))
        calls.append(Call((*(rng.normal(size=(T, d_k)) for _ in range(3)), 1), {"causal": True}))
        Q = 25 * rng.normal(size=(3, 6))  # scores of hundreds
        calls.append(Call((Q, 25 * rng.normal(size=(10, 6)), rng.normal(size=(10, 2)), 3)))
        calls.append(Call(very_negative(rng)))
        B, T_k = int(rng.integers(2, 4)), int(rng.integers(4, 9))  # K and V batched, Q not
        KV = (rng.normal(size=(B, T_k, 6)), rng.normal(size=(B, T_k, 2)))
        calls.append(Call((Q, *KV, int(rng.integers(2, 4)))))
        calls.append(
            Call(
                (Q, Q, Q, 0),
                {"causal": True},
                raises="ValueError",
                context={"why": "block_size = 0"},
            )
        )
        # last: a large input whose memory is measured, as the visible test's (a (T_q, T_k)
        # array of float64 is 40 MiB at least, over the bound); causal, so that a full
        # causal mask is caught as well as full scores
        T = int(rng.integers(2304, 3073))
        Q, K, V = (rng.normal(size=(T, 64)) for _ in range(3))
        b = int(rng.choice([64, 96, 128]))
        large = {"causal": True, "hidden": True}
        calls.append(Call((Q, K, V, b), {"causal": True}, memory=True, context=large))
        return calls

    def catalogue(self, call):
        if call.raises is not None:
            return None, []
        causal = call.kwargs.get("causal", False)
        if call.memory and call.context.get("hidden"):  # its sampled rows judge it
            return ref.tiled_attention(*call.args, causal), []
        if call.memory:
            return _memory_expected(causal), []
        Q, K, V, b = call.args
        T_k = K.shape[-2]
        # the unguarded inverted rescale is NaN everywhere; so is the missing shift where every
        # row overflows, which is then said (the inverted rescale is told on other inputs)
        first_nan = variant(Q, K, V, b, causal, inverted=True)
        no_shift = variant(Q, K, V, b, causal, no_shift=True)
        out = [
            (SUM_NOT_RESCALED, variant(Q, K, V, b, causal, sum=True)),
            (OUTPUT_NOT_RESCALED, variant(Q, K, V, b, causal, out=True)),
            (NEITHER_RESCALED, variant(Q, K, V, b, causal, sum=True, out=True)),
            (NEW_BLOCK_RESCALED, variant(Q, K, V, b, causal, out="new")),
            (OLD_MAX_OUTPUT, variant(Q, K, V, b, causal, old_max=True)),
            (BLOCK_MAXIMUM, variant(Q, K, V, b, causal, block_max=True)),
            (BLOCK_MAXIMUM, variant(Q, K, V, b, causal, block_max="raw") if causal else None),
            (OVERLAPPING_BLOCKS, variant(Q, K, V, b, causal, overlap=True) if b < T_k else None),
            (INVERTED, variant(Q, K, V, b, causal, inverted="guarded")),
            (INVERTED_FIRST, None if close(first_nan, no_shift) else first_nan),
            (NO_SHIFT, no_shift),
            (BLOCKS_AVERAGED, variant(Q, K, V, b, causal, averaged=True) if b < T_k else None),
            (BLOCKS_AVERAGED, variant(Q, K, V, b, causal, averaged="seen") if b < T_k else None),
            (NOT_DIVIDED, variant(Q, K, V, b, causal, not_divided=True)),
            *(
                (NORMALISED_EACH_BLOCK, variant(Q, K, V, b, causal, each_block=e))
                for e in (("reset", "kept") if b < T_k else ())
            ),
            (BLOCK_OWN_SUM, variant(Q, K, V, b, causal, block_sum=True)),
            (
                by_block_length(min(b, T_k), Q.shape[-1]),
                variant(Q, K, V, b, causal, by_block=True) if b < T_k else None,
            ),
            (
                by_length(T_k, Q.shape[-1]),
                variant(Q, K, V, b, causal, by_t=True) if T_k not in (1, Q.shape[-1]) else None,
            ),
            (LAST_BLOCK, variant(Q, K, V, b, causal, last_block=True) if T_k % b else None),
            (NOT_SCALED, variant(Q, K, V, b, causal, not_scaled=True) if Q.shape[-1] > 1 else None),
            (
                by_d_v(V.shape[-1], Q.shape[-1]),
                variant(Q, K, V, b, causal, by_d_v=True) if V.shape[-1] != Q.shape[-1] else None,
            ),
        ]
        expected = expected_of(Q, K, V, causal)
        zero = [variant(Q, K, V, b, causal, zero_start=z) for z in (True, "divided")]
        if not any(close(z, expected) for z in zero):
            # every exp underflows (very negative scores): a row of 0 or 0/0 is the zero start,
            # whatever else goes wrong there too (the other mistakes are told on earlier calls)
            out = [(h, w) for h, w in out if not any(close(w, z) for z in zero)]
            out += [(ZERO_START, z) for z in zero]
        if causal:
            out += [
                (DIAGONAL, variant(Q, K, V, b, causal, diagonal=True)),
                (DIAGONAL, variant(Q, K, V, b, causal, diagonal=True, unguarded=True)),
                *(
                    (FLIPPED, variant(Q, K, V, b, causal, flipped=f, unguarded=u))
                    for f in (True, "diagonal")
                    for u in (False, True)
                ),
                (
                    DIAGONAL_BLOCK,
                    variant(Q, K, V, b, causal, block_level=True) if 1 < b < T_k else None,
                ),
                (ONE_AHEAD, variant(Q, K, V, b, causal, ahead=1)),
                (LOCAL_INDEX, variant(Q, K, V, b, causal, local_index=True) if b < T_k else None),
                (CAUSAL_IGNORED, variant(Q, K, V, b, causal, causal_ignored=True)),
            ]
        return expected, out

    def verdict(self, calls, outcomes):
        """As :meth:`Check.verdict`; an overflow on scores of hundreds names the missing shift,
        unless its value is a block's own maximum taken for the running one (which overflows in
        the rescale instead), the output's exponentials taken against the old maximum (exp(S)
        on the first block) or the inverted rescale exp(m_new - m_old) from a finite start:
        :meth:`Check.judge_warned` names those from the value."""
        renamed = []
        for call, outcome in zip(calls, outcomes, strict=False):
            error = outcome.error or ""
            if "RuntimeWarning: overflow" in error and not self._named_by_value(call, outcome):
                outcome = Outcome(error=f"{self.name}: {NO_SHIFT} ({error})")
            renamed.append(outcome)
        super().verdict(calls, renamed)

    def judge_warned(self, call, outcome):
        """As :meth:`Check.judge_warned`; an output NaN in every row that only the inverted
        rescale explains, but whose warning is not the rescale's 0·∞ (in multiply), is the first
        block's exp(S - m_old) = exp(S + ∞) (∞ − ∞ in the product with V): the two give the same
        value, the warning tells them apart."""
        error = outcome.error or ""
        if (
            outcome.code == "warning"
            and "invalid value encountered" in error
            and "in multiply" not in error
            and not (call.memory or call.raises)
        ):
            try:
                got = _floating(self.name, outcome.value, "the output")
            except CheckFailed:
                got = None
            _, known = self.catalogue(call)
            named = {h for h, w in known if w is not None and got is not None and close(got, w)}
            if got is not None and np.isnan(got).all() and named == {INVERTED_FIRST}:
                warning = error.split(" raised ", 1)[-1].split(" (in these checks", 1)[0]
                raise CheckFailed(
                    f"{self.name}: {SHIFT_BY_OLD} {warned_on_the_way(warning)}",
                    public=f"{self.name}: {SHIFT_BY_OLD}",
                )
        super().judge_warned(call, outcome)

    def _named_by_value(self, call, outcome) -> bool:
        """Whether an overflowing call's value is that of :data:`BLOCK_MAXIMUM`, of
        :data:`OLD_MAX_OUTPUT` or of :data:`INVERTED_FIRST` (where the missing shift gives
        another)."""
        if outcome.value is None or call.memory or call.raises is not None:
            return False
        Q, K, V, b = call.args
        causal = call.kwargs.get("causal", False)
        try:
            got = _floating(self.name, outcome.value, "the output")
        except CheckFailed:  # not floats: the verdict says so
            return False
        if any(
            close(got, variant(Q, K, V, b, causal, **{slip: True}))
            for slip in ("block_max", "old_max")
        ):
            return True
        # the inverted rescale from a finite start (m = -1e30): exp(m_new - m_old) overflows on
        # the first block, and its ∞·0 leaves every row NaN, where the missing shift is finite
        inverted = variant(Q, K, V, b, causal, inverted=True)
        no_shift = variant(Q, K, V, b, causal, no_shift=True)
        return close(got, inverted) and not close(inverted, no_shift)

    def judge(self, call, got):
        if call.memory:
            self.judge_memory(call, got)
            return
        expected, known = self.catalogue(call)
        got = _floating(self.name, got, "the output (..., T_q, d_v)")
        contract = precision((*call.args, got))
        _named_nan(self.name, got, known, contract)
        compare(
            self.name,
            got,
            expected,
            "the output (..., T_q, d_v)",
            known,
            labels=call.context.get("labels"),
            contract=contract,
        )

    def judge_memory(self, call, outcome: Outcome):
        """The peak of traced memory under 32 MiB, and sampled rows right."""
        Q, K, V, b = call.args
        causal = call.kwargs.get("causal", False)
        shape = f"Q, K and V of shape {Q.shape}, block_size={b}" + (", causal" if causal else "")
        public = MEMORY_PUBLIC if call.context.get("hidden") else None
        if outcome.peak is None or outcome.peak < 0:
            raise CheckFailed(f"{self.name}: its memory on {shape} could not be measured.")
        grown = outcome.resident
        if isinstance(grown, int) and grown < 0:
            raise CheckFailed(f"{self.name}: its memory on {shape} could not be measured.")
        if isinstance(grown, int) and grown >= RESIDENT_LIMIT:
            raise CheckFailed(
                f"{self.name}: on {shape}, the measured process's resident memory grew by "
                f"{grown / 2**20:.0f} MiB, more than {RESIDENT_LIMIT >> 20} MiB (the 32 MiB bound, "
                "and room for the inputs and their copies): a (T_q, T_k) array, or a large part "
                "of one, is built somewhere (by the call or by the answer cells), traced by "
                "numpy or not. Work on one block at a time: scores of shape (T_q, block_size).",
                public=public,
            )
        if outcome.peak >= MEMORY_LIMIT:
            raise CheckFailed(
                f"{self.name}: on {shape}, the call used {outcome.peak / 2**20:.0f} MiB at its "
                f"peak, more than 32 MiB (a quarter of one 4096 × 4096 matrix of float64): a "
                "(T_q, T_k) array is built somewhere (the full scores, or a full causal mask). "
                "Work on one block at a time: scores of shape (T_q, block_size), and only the "
                "block's part of the causal mask.",
                public=public,
            )
        got = _floating(self.name, outcome.value, "the output (T_q, d_v)")
        rows = sorted({r for r in SAMPLED_ROWS if r < Q.shape[-2]} | {Q.shape[-2] - 1})
        if got.shape != Q.shape[:-1] + V.shape[-1:]:
            raise CheckFailed(
                f"{self.name}: the output on {shape} should have shape "
                f"{Q.shape[:-1] + V.shape[-1:]}, but has shape {got.shape}."
            )
        # float32 in or out: float32's tolerance (the contract); a (T_q, T_k) matrix of
        # float32 still does not fit the measured process's address space
        contract = precision((*call.args, got))
        compare(
            self.name,
            got[rows],
            rows_of(Q, K, V, causal, rows),
            f"the output rows {rows} on {shape}",
            contract=contract,
        )
