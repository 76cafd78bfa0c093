"""The sentences that more than one check says, each written once.

A check module imports the sentence it shares with another instead of writing it
out again: rewording it here rewords it everywhere. ``tests/test_one_voice.py``
fails when a string of 30 characters or more is written in two check modules.

A sentence that quotes the call's numbers is a function of them
(:func:`by_d_model`, :func:`not_dividing` …); a sentence whose ending differs
from check to check is a function of that ending (:func:`wrong_axis`,
:func:`additive` …). What a check says only itself stays in its module.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ADD_MASK",
    "AXIS_IGNORED",
    "BOOLEAN_MASK",
    "CHAIN_RULE",
    "EINSUM_SCORES",
    "FINITE_MASK",
    "FULLY_BLOCKED_QUERY",
    "FULLY_BLOCKED_SEQUENCE",
    "GRADIENT_LEAKS",
    "HEADS_STRIDED",
    "HEAD_COUNT_AND_SIZE_SWAPPED",
    "INT_CANNOT_HOLD_INFINITY",
    "LARGE_FINITE",
    "MASKS_WITH_HEAD_AXIS",
    "MASK_ARGUMENT_ONLY",
    "MASK_FORCED",
    "MASK_IGNORED",
    "MASK_IGNORED_HEADS",
    "MERGED_HEAD_AXIS_FIRST",
    "MIXES_TOKENS",
    "NN_LINEAR",
    "NOT_SCALED",
    "NO_CAUSAL_ASKED",
    "PER_SEQUENCE",
    "PLUS_INFINITY",
    "QK_WIDTH",
    "QUERY_HEADS_STRIDED",
    "RESIDUAL_OUTSIDE",
    "REVERSED_MERGE",
    "SONG_HEAD_1",
    "SPLIT_RESHAPE",
    "SQUARE_WEIGHTS_TRANSPOSED",
    "TWO_AXES_FULLY_BLOCKED",
    "WEIGHTS_TRANSPOSED",
    "WEIGHTS_ZEROED_AFTER",
    "WRONG_AXIS",
    "WRONG_AXIS_HEADS",
    "W_O_MISSING",
    "W_O_TRANSPOSED",
    "ZERO_TIMES_INF",
    "additive",
    "backward_passed",
    "bare_reshape",
    "by_d_k",
    "by_d_model",
    "by_d_v",
    "by_length",
    "every_kind_of_mask",
    "head_axis_forms",
    "k_transposed_fixed",
    "lost_axis",
    "matches_on_random",
    "narrow_weight_transposed",
    "not_dividing",
    "not_scaled",
    "queries_bare_reshape",
    "scaled_wrongly",
    "song_and_question",
    "values_from_W_k",
    "w_o_transposed",
    "warned_on_the_way",
    "whole_array_sum",
    "wrong_axis",
]


# -- the scores' scale ---------------------------------------------------------


def warned_on_the_way(warning: str) -> str:
    """What follows a mistake named from the value of a call that warned: the ``warning``."""
    return f"(numpy warned on the way, and a warning counts as an error: {warning})"


def not_scaled(query: str = "Q") -> str:
    """The hint for scores not divided at all; ``query`` as the step names it (q: one token)."""
    return f"the scores are not scaled: divide {query}·Kᵀ by √d_k."


#: Scores not divided by √d_k.
NOT_SCALED = not_scaled()
#: What √d_k divides: "the width of the queries and keys".
QK_WIDTH = "the width of the queries and keys"


def scaled_wrongly(by: str, d_k: int) -> str:
    """The hint for scores of heads divided ``by`` a size other than √d_k (e.g. "√d_model = √6")."""
    return f"the scores are divided by {by}; each head divides by its own √d_k = √{d_k}."


def by_d_model(d_model: int, d_k: int) -> str:
    """The hint for scores divided by √d_model instead of √d_k."""
    return scaled_wrongly(f"√d_model = √{d_model}", d_k)


def by_length(T: int, d_k: int) -> str:
    """The hint for scores divided by √T, the sequence length."""
    return (
        f"the scores are divided by √T (the sequence length, {T}), as the source article says; "
        f"divide by √d_k = √{d_k}, the per-head key size."
    )


def by_d_k(d_k: int) -> str:
    """The hint for scores divided by d_k instead of its square root."""
    return f"the scores are divided by d_k = {d_k}; divide by its square root √d_k."


def by_d_v(d_v: int, d_k: int) -> str:
    """The hint for scores divided by √d_v, the values' width, instead of √d_k."""
    return (
        f"the scores are divided by √d_v = √{d_v} (the width of the values); divide by "
        f"√d_k = √{d_k}, {QK_WIDTH} that the dot product sums over."
    )


# -- the softmax ---------------------------------------------------------------


def wrong_axis(each_row: str, over: str = "") -> str:
    """The hint for a softmax over the wrong axis: ``each_row`` "must sum to 1" ``over``."""
    return f"the softmax runs over the wrong axis: {each_row} must sum to 1{over}."


#: One head's softmax over the wrong axis.
WRONG_AXIS = wrong_axis("each row of the attention matrix (one query)")
#: A layer's softmax over the wrong axis.
WRONG_AXIS_HEADS = wrong_axis("each row of a head's attention matrix (one query)")
#: A softmax (or its backward) that ignores its ``axis`` argument; a colon and its effect follow.
AXIS_IGNORED = "the axis argument is ignored"


def lost_axis(rows: str, row: str, fix: str, effect: str = "is subtracted from") -> str:
    """The hint for row ``rows`` (maxima, sums) that lost their axis: ``row`` is one of them,
    and what it does to column i is ``effect`` ("is subtracted from", "divides")."""
    return (
        f"the row {rows} lost their axis (keepdims=True is missing), so row i's {row} {effect} "
        f"column i: {fix}."
    )


# -- the mask ------------------------------------------------------------------

#: Where the mask goes (no period: a sentence goes on or ends after it).
ADD_MASK = "add the mask to the scores before the softmax"
#: The weights of the blocked keys zeroed after the softmax (A·exp(M)), not the scores masked.
WEIGHTS_ZEROED_AFTER = (
    "the masked weights are zeroed after the softmax (A·exp(M), or A set to 0 where M is −∞), "
    f"so rows no longer sum to 1; {ADD_MASK}."
)
#: One head's mask ignored.
MASK_IGNORED = "the mask is ignored: add it to the scores before the softmax."
#: A layer's mask ignored.
MASK_IGNORED_HEADS = "the mask is ignored: add it to every head's scores."
#: The mask applied to the keys K (a blocked key's vector set to −1e9), not to the scores (no
#: period: each check says how to add it to its scores).
MASK_ON_KEYS = (
    "the mask is applied to K, not to the scores: a blocked key's vector set to a large "
    "negative number gives it huge scores of either sign, not −∞"
)


def additive(instead: str) -> str:
    """The hint for a mask made of something other than 0.0 and -np.inf (``instead``)."""
    return (
        "the mask is additive: 0.0 where a key is allowed and -np.inf where it is blocked, "
        f"not {instead}."
    )


#: A mask of booleans.
BOOLEAN_MASK = additive("True/False")
#: A query whose every key is blocked (the subject of a sentence).
FULLY_BLOCKED_QUERY = "a query whose every key is blocked"
#: What stands in for −∞ in a finite mask.
LARGE_FINITE = "a large finite number such as −1e9"
#: A mask applied with a large finite number instead of −∞ (no period).
FINITE_MASK = (
    f"the mask is applied with {LARGE_FINITE} (as masked_fill(mask, -1e9) puts in) instead of −∞"
)
#: A backward that lets gradient through the blocked cells (no period).
GRADIENT_LEAKS = "gradient flows through blocked positions"
#: Where a causal mask of the code's own is wrong (no period).
NO_CAUSAL_ASKED = "where this call asks for no causal mask"
#: The mask to apply, after "apply" or "use" (no period).
MASK_ARGUMENT_ONLY = "the mask argument only (none when it is None)"

#: A mask made by multiplying 0/1 by −∞: 0 · (−∞) is NaN (causal, padding, sliding-window masks).
ZERO_TIMES_INF = (
    "the allowed positions are NaN, not 0: 0 · (−∞) is NaN. Build the mask with "
    "np.where(blocked, -np.inf, 0.0) instead of multiplying 0s and 1s by −∞."
)

#: The scores as an einsum over any batch axes (Q against K), as an example to write.
EINSUM_SCORES = "np.einsum('...qd,...kd->...qk', Q, K)"

#: A mask that blocks with +∞ instead of −∞ (causal, padding, sliding-window masks).
PLUS_INFINITY = (
    "the blocked positions hold +∞ (np.inf), not −∞: added to the scores, a +∞ score takes "
    "all the weight of its row in the softmax (or makes it NaN), so a query attends to "
    "exactly the keys it should not see. Block with -np.inf."
)

#: An error assigning −∞ into an array of integers (OverflowError), as a mask built in one gives.
INT_CANNOT_HOLD_INFINITY = (
    "the mask is built in an array of integers (np.zeros(..., dtype=int), or np.zeros_like of "
    "an int array such as np.arange(T)), and an integer cannot hold −∞: build it in floats, "
    "np.zeros(shape) (float by default) or np.where(blocked, -np.inf, 0.0)."
)


def whole_array_sum(Z) -> str:
    """The sentence for a softmax divided by the sum of the whole array of scores ``Z``.

    Parameters
    ----------
    Z : numpy.ndarray
        The scores (..., T_q, T_k) the softmax ran on.

    Returns
    -------
    str
    """
    rows = int(np.prod(np.shape(Z)[:-1]))
    return (
        "the denominator is the sum of the whole array (E.sum() without an axis), so the "
        f"weights of all {rows} rows sum to 1 together; each row must sum to 1: divide by "
        "its own sum, E.sum(axis=-1, keepdims=True)."
    )


# -- the heads and W_O ---------------------------------------------------------

#: The layer without its output projection.
W_O_MISSING = "the output projection W_O is missing: multiply the concatenated heads by W_O."


def w_o_transposed(T: str = "T") -> str:
    """The hint for a layer's output projection applied transposed; ``T`` names the rows
    (the positions of the queries: "T", or "T_q" where keys come from elsewhere)."""
    return (
        f"W_O is transposed: the merged heads (..., {T}, d_model) times W_O, not W_O.T "
        "(a weight's rows are its inputs, as in X·W_Q)."
    )


#: The layer's output projection transposed.
W_O_TRANSPOSED = w_o_transposed()
#: Heads merged last first (a space and where the columns go follow).
REVERSED_MERGE = "the heads are merged in reverse order: head 1 fills the first d_k columns"


def not_dividing(count: int, total: int, count_name="n_heads", total_name="d_model") -> str:
    """Why a call must raise: ``count_name = count``, which does not divide ``total``."""
    return f"{count_name} = {count}, which does not divide {total_name} = {total}"


# -- what a check tried (its ``passed`` and ``passed_hidden`` sentences) --------


def matches_on_random(what: str) -> str:
    """A hidden test's success: "matches on random shapes, ``what``."."""
    return f"matches on random shapes, {what}."


def head_axis_forms(q: str = "T", k: str = "T") -> str:
    """The masks with a head axis the layers' checks try, ``q`` queries and ``k`` keys."""
    return f"(h, {q}, {k}) on X ({q}, d_model), (B, 1, {q}, {k}) and (B, 1, 1, {k}) on a batch"


def every_kind_of_mask(q: str = "T", k: str = "T") -> str:
    """Every kind of mask, with the head-axis forms for ``q`` queries and ``k`` keys."""
    return f"every kind of mask (with a head axis too: {head_axis_forms(q, k)})"


def song_and_question(song_heads: str, question_heads: str = "") -> str:
    """The layer's worked examples: the song with ``song_heads`` heads, the question sentence."""
    question = f" ({question_heads} heads)" if question_heads else ""
    heads = "head" if song_heads == "1" else "heads"
    return f"the song ({song_heads} {heads}, causal), the question sentence{question}"


def backward_passed(what: str, cases: str, them: str = "them") -> str:
    """A backward's success: ``what`` match central differences on ``cases``, and it is a
    backward pass (no period: a check may say more)."""
    return (
        f"{what}, as central differences give {them}, on {cases}; and on a large input it is a "
        "backward pass"
    )


#: The masks with a head axis the layers' checks try.
MASKS_WITH_HEAD_AXIS = f"masks with a head axis ({head_axis_forms()})"
#: A batch whose sequences have masks of their own.
PER_SEQUENCE = "batches with a mask per sequence"
#: A sequence whose every key is blocked (its weights 0, its output 0).
FULLY_BLOCKED_SEQUENCE = "a sequence whose every key is blocked"
#: Two batch axes, one sequence fully blocked.
TWO_AXES_FULLY_BLOCKED = f"two batch axes with {FULLY_BLOCKED_SEQUENCE}"
#: One head of the song, with the masks one head takes.
SONG_HEAD_1 = "the song's head 1, causal and padding masks"

# -- the backward --------------------------------------------------------------

#: What a backward pass does, in place of central differences (no period).
CHAIN_RULE = "compute the gradient by the chain rule"

# -- the heads -----------------------------------------------------------------

#: The query heads cut from X·W_Q by stride (np.stack of Q[..., i::n_heads]), not in runs of d_k.
QUERY_HEADS_STRIDED = (
    "query head i takes every n_heads-th column of X·W_Q (columns i, i + n_heads, …): it owns "
    "the consecutive columns i·d_k … (i+1)·d_k − 1, as split_heads(X @ W_q, n_heads) gives them."
)


#: Every head cut from a projection by stride (M[..., i::n_heads]), not in runs of d_k.
HEADS_STRIDED = (
    "head i takes every n_heads-th column of X·W (M[..., i::n_heads]: columns i, i + n_heads, "
    "…) instead of its own block of d_k consecutive columns i·d_k … (i+1)·d_k − 1: split with "
    "split_heads(X @ W, n_heads)."
)

#: Why a weight applied as X @ W.T is wrong here (no period: what acts as it is follows).
NN_LINEAR = (
    "as PyTorch's nn.Linear does with its (out, in) weights; the course's weights are (in, out) "
    "and act as they are"
)
#: Every weight of a layer applied transposed, as PyTorch's nn.Linear stores and applies it.
WEIGHTS_TRANSPOSED = (
    f"every weight is applied transposed, X @ W.T, {NN_LINEAR}: X @ W_Q, X @ W_K, X @ W_V, "
    "and the merged heads @ W_O."
)
#: The square weights W_Q and W_O applied transposed as nn.Linear does, where W_K and W_V are
#: narrower (one shared head, or n_kv_heads heads) and could not be.
SQUARE_WEIGHTS_TRANSPOSED = (
    f"W_Q and W_O are applied transposed, X @ W_Q.T and heads @ W_O.T, {NN_LINEAR}: X @ W_Q "
    "and the merged heads @ W_O (W_K and W_V, narrower than d_model, are applied as they are)."
)


def narrow_weight_transposed(name: str, shape: tuple) -> str:
    """The hint for ``X @ W.T`` refused by numpy, ``W`` (``name``, of ``shape``) not square."""
    return (
        f"{name} of shape {shape} is applied transposed, X @ {name}.T, {NN_LINEAR}: X @ {name} "
        "(the same for every weight: X @ W_Q, X @ W_K, X @ W_V, the merged heads @ W_O)."
    )


#: What a reshape between (..., T, d_model) and (..., h, T, d_k) without a transpose does.
MIXES_TOKENS = "which mixes tokens and heads"


#: A split into d_k heads of n_heads columns (no period: each check says how it came about).
HEAD_COUNT_AND_SIZE_SWAPPED = "the head count and the head size are swapped"
#: How heads are split (after "reshape to" or "to"; no period).
SPLIT_RESHAPE = "(..., T, n_heads, d_k), then swap the T and n_heads axes"


def bare_reshape(what: str) -> str:
    """The hint for heads split by a bare reshape to (..., h, T, d_k) and merged back likewise;
    ``what`` names the projections split ("the queries X·W_Q are")."""
    return (
        f"{what} reshaped straight to (..., n_heads, T, d_k) and the heads back to "
        f"(..., T, d_model), with no transpose, {MIXES_TOKENS}: split with "
        f"mh.split_heads (to {SPLIT_RESHAPE}) and merge with mh.merge_heads."
    )


def queries_bare_reshape(T: str = "T") -> str:
    """The hint for the queries alone split by a bare reshape to (..., h, T, d_k) while the keys
    and values go through split_heads; ``T`` names the queries' length."""
    return (
        f"the queries X·W_Q are reshaped straight to (..., n_heads, {T}, d_k), with no swap of "
        f"the token and head axes, {MIXES_TOKENS}, while K and V are split with split_heads: "
        f"split Q with mh.split_heads too (to {SPLIT_RESHAPE})."
    )


#: The heads (..., h, T, d_k) reshaped to (..., T, d_model) without moving the head axis.
MERGED_HEAD_AXIS_FIRST = (
    "the heads (..., h, T, d_k) are reshaped to (..., T, d_model) with their head axis still "
    f"in front of T, {MIXES_TOKENS}: move it next to d_k first, "
    "np.swapaxes(heads, -3, -2), then reshape (mh.merge_heads does both)."
)


def values_from_W_k(values: str) -> str:
    """The hint for values projected with W_k (a copy-paste slip); ``values`` says what they are."""
    return f"V is computed with W_k, a copy of the keys: {values}"


#: Where a residual connection belongs (no period): the forward's and the backward's slip.
RESIDUAL_OUTSIDE = (
    "the residual connection belongs to the block around the layer (x + attention(x)), not "
    "inside it"
)


# -- shapes of the scores and the mask -------------------------------------------


def k_transposed_fixed(shape: tuple) -> str:
    """The hint for K transposed by a fixed permutation of three axes (np.transpose(K, (0, 2,
    1))), refused by numpy for a K of another number of axes (``shape``)."""
    return (
        "K is transposed with a fixed list of axes (np.transpose(K, (0, 2, 1)) or "
        "K.transpose(0, 2, 1)), which fits a K with exactly one batch axis, (B, T, d_k), but "
        f"here K has shape {shape}, and K may come with no batch axis or with two in front of "
        "(T, d_k). Swap K's last two axes, counted from the end: np.swapaxes(K, -1, -2)."
    )


#: A mask forced into the shape (T_q, T_k) (np.reshape(mask, Z.shape[-2:]), np.broadcast_to).
MASK_FORCED = (
    "the mask is forced into the shape (T_q, T_k) (np.reshape(mask, Z.shape[-2:]) or "
    "np.broadcast_to(mask, (T_q, T_k))), yet numpy lines a mask up with Z by broadcasting: a "
    "padding mask (1, T_k) blocks keys for every query, a mask per sequence (B, 1, T_k) or "
    "(B, T_q, T_k) carries a batch axis. Add it as it is, Z + mask."
)
