"""The check of one head's backward, ``attention_head_backward``."""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..examples import get_example
from ..gradcheck import central_differences
from .batches import batch_rng, random_shape
from .comparison import as_result, compare
from .core import Call, Check
from .failures import CheckFailed, said_publicly
from .hints import FULLY_BLOCKED_SEQUENCE, SONG_HEAD_1, backward_passed, matches_on_random
from .relayed import broadcast_shapes, core_sizes
from .step17_backward import (
    FD_STEP,
    against_differences,
    as_triple,
    call_bound,
    not_a_backward,
    swapped_parts,
    whole_mistake,
    work,
    work_error,
)
from .step17_head_slips import head_mistakes

DA_IS_DOUT = (
    "softmax_backward is given dOut: its second argument is the weights' gradient "
    "dA = dOut·Vᵀ, of the weights' shape (..., T_q, T_k), not dOut (..., T_q, d_v)."
)


def da_not_transposed(T_k: int, d_v: int) -> str:
    """The sentence for ``dOut @ V`` (V not transposed), which numpy refuses where T_k ≠ d_v."""
    return (
        f"dA = dOut·V does not fit: dOut (..., T_q, d_v = {d_v}) times V (..., T_k = {T_k}, "
        f"d_v = {d_v}) needs V transposed: since output = A·V, the weights' gradient is "
        "dOut·Vᵀ (np.swapaxes(V, -1, -2)), of the weights' shape (..., T_q, T_k)."
    )


def da_transpose_misplaced(d_v: int, weights: tuple) -> str:
    """The sentence for ``dOutᵀ·V`` (or ``Vᵀ·dOut``): a (d_v, d_v) matrix in the weights' place."""
    return (
        f"dA = dOutᵀ·V has the transpose on the wrong factor: it is (d_v, d_v) = ({d_v}, {d_v}), "
        "a sum over the positions. output = A·V, so the weights' gradient is dA = dOut·Vᵀ "
        f"(dOut @ np.swapaxes(V, -1, -2)), of the weights' shape (..., T_q, T_k) = {weights}: one "
        "entry per query and key."
    )


def _head_call(rng, Q, K, V, mask=None, fd=False, dtype=np.float64, counted=False) -> Call:
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    dOut = rng.normal(size=(*lead, Q.shape[-2], V.shape[-1]))
    args = tuple(M.astype(dtype) for M in (Q, K, V, dOut))
    calls = call_bound(*args) if counted else None
    return Call(args if mask is None else (*args, mask), context={"fd": fd}, calls=calls)


def _large_head_call(rng) -> Call:
    """Two sequences of 2 heads, 16 tokens, d_k = 32, causal: the call whose calls are counted."""
    Q, K, V = (rng.normal(size=(2, 2, 16, 32)) for _ in range(3))
    return _head_call(rng, Q, K, V, ref.causal_mask(16), counted=True)


HEAD_RULE = (
    "dV = Aᵀ·dOut, dZ = softmax_backward(A, dOut·Vᵀ)/√d_k, dQ = dZ·K and dK = dZᵀ·Q, with A "
    "from one forward pass."
)


class AttentionHeadBackward(Check):
    name = "attention_head_backward"
    passed = (
        backward_passed(
            "dQ, dK and dV match",
            f"{SONG_HEAD_1}, T_q ≠ T_k, d_v ≠ d_k, masks with and without a head axis, one and "
            f"two batch axes, {FULLY_BLOCKED_SEQUENCE}, and float32",
        )
        + "."
    )
    passed_hidden = matches_on_random("heads, masks and batches")

    def visible(self):
        e = get_example("song")
        Q, K, V = (ref.split_heads(M, 2)[0] for M in ref.project_qkv(e.X, *e.weights[:3]))
        rng = batch_rng()
        n = rng.normal
        heads = n(size=(2, 3, 4, 2)), n(size=(2, 3, 4, 2)), n(size=(2, 3, 4, 3))
        per_sequence = np.expand_dims(ref.padding_mask(np.array([4, 2]), 4), -3)  # (2, 1, 1, 4)
        causal = np.stack([ref.causal_mask(4), ref.sliding_window_mask(4, 2)])[:, None]
        # first: square, d_v ≠ d_k and neither equal to T, so that numpy's sizes tell a
        # product's operands apart (dOut @ V: T_k against d_v; Q @ K: T_k against d_k)
        first = np.random.default_rng(17)
        return [
            _head_call(first, *(first.normal(size=(5, d)) for d in (3, 3, 2)), fd=True),
            _head_call(rng, Q, K, V, fd=True),
            _head_call(rng, Q, K, V, ref.causal_mask(6), fd=True),
            _head_call(rng, Q, K, V, ref.padding_mask(4, 6)),
            _head_call(rng, n(size=(3, 4)), n(size=(5, 4)), n(size=(5, 2)), fd=True),
            _head_call(rng, *heads, causal, fd=True),  # a mask with the head axis (2, 1, T, T)
            _head_call(rng, *heads, ref.causal_mask(4)),  # a mask without it
            _head_call(rng, *heads, per_sequence),
            _head_call(rng, Q, K, V, ref.padding_mask(0, 6)),  # every key blocked
            _head_call(rng, *heads, ref.causal_mask(4), dtype=np.float32),
            _head_call(rng, *(M[0] for M in heads), ref.padding_mask(np.array([4, 3, 0]), 4)),
            _head_call(rng, heads[0], heads[1][0, 0], heads[2][0, 0]),  # K, V shared by a batch
            _head_call(rng, heads[0], heads[1][:1], heads[2][:1]),  # K, V of batch size 1
            _large_head_call(rng),
        ]

    def hidden(self, rng):
        calls = []
        for kind in ("none", "causal", "padding"):
            T, d_k, d_v = (int(k) for k in rng.integers(2, 6, size=3))
            lead = random_shape(rng)
            Q, K = (rng.normal(size=(*lead, T, d_k)) for _ in range(2))
            V = rng.normal(size=(*lead, T, d_v))
            mask = {
                "none": None,
                "causal": ref.causal_mask(T),
                "padding": ref.padding_mask(int(rng.integers(1, T + 1)), T),
            }[kind]
            calls.append(_head_call(rng, Q, K, V, mask))
        # a mask per sequence (B, T, T), causal and padded, one sequence with every key blocked
        B, T, d_k, d_v = (int(k) for k in rng.integers(2, 6, size=4))
        lengths = rng.integers(1, T + 1, size=B)  # every other sequence reads a key
        lengths[rng.integers(B)] = 0
        mask = ref.causal_mask(T) + ref.padding_mask(lengths, T)  # (B, T, T)
        Q, K = (rng.normal(size=(B, T, d_k)) for _ in range(2))
        calls.append(_head_call(rng, Q, K, rng.normal(size=(B, T, d_v)), mask))
        shared = rng.normal(size=(T, d_k)), rng.normal(size=(T, d_v))  # K, V for the batch
        calls.append(_head_call(rng, rng.normal(size=(B, T, d_k)), *shared))
        ones = rng.normal(size=(1, T, d_k)), rng.normal(size=(1, T, d_v))  # K, V of batch 1
        calls.append(_head_call(rng, rng.normal(size=(B, T, d_k)), *ones))
        Q, K, V = (rng.normal(size=(2, 2, 256, 64)) for _ in range(3))  # (B, h, T, d_k)
        causal = ref.causal_mask(256)
        return [*calls, _large_head_call(rng), work(_head_call(rng, Q, K, V, causal, counted=True))]

    def explain_error(self, call, outcome):
        """As :meth:`Check.explain_error`; dOut given to softmax_backward in dA's place is named,
        and the large hidden input's time out names central differences."""
        if (said := work_error(self.name, call, outcome)) is not None:
            return said
        _, K, _, dOut, *_ = call.args
        said = (outcome.error or "").split(" raised ", 1)[-1].replace(" ", "")
        weights = (*dOut.shape[:-1], K.shape[-2])  # (..., T_q, T_k)
        shapes = [str(tuple(s)).replace(" ", "").replace(",)", ")") for s in (dOut.shape, weights)]
        if "couldnotbebroadcast" in said and all(s in said for s in shapes):
            return CheckFailed(
                f"{self.name}: {DA_IS_DOUT} ({outcome.error})",
                public=said_publicly(self.name, outcome.code),
            )
        d_v = call.args[2].shape[-1]
        cores = {shape[-2:] for shape in broadcast_shapes(outcome.error or "")}
        if (d_v, d_v) in cores and weights[-2:] in cores and d_v not in weights[-2:]:
            return CheckFailed(
                f"{self.name}: {da_transpose_misplaced(d_v, weights[-2:])} ({outcome.error})",
                public=said_publicly(self.name, outcome.code),
            )
        return super().explain_error(call, outcome)

    def relayed(self, call, said):
        """``dOut @ V`` without the transpose, from numpy's sizes: V's T_k rows against dOut's
        d_v columns; only where d_v ≠ d_k (else ``Q @ K``, untransposed, says the same)."""
        sizes = core_sizes(said)
        Q, V = call.args[0], call.args[2]
        T_k, d_v = V.shape[-2], V.shape[-1]
        if sizes == (T_k, d_v) and d_v != Q.shape[-1] and "matmul" in said:
            return da_not_transposed(T_k, d_v)
        return None

    def too_many_calls(self, call, error):
        numbers = sum(np.size(a) for a in call.args[:4])
        return not_a_backward(self.name, error, numbers, HEAD_RULE)

    def catalogue(self, call):
        Q, K, V, dOut, *rest = (np.asarray(a, dtype=np.float64) for a in call.args)
        mask = rest[0] if rest else None
        known = [] if call.context.get("work") else head_mistakes(Q, K, V, dOut, mask)
        return ref.attention_head_backward(Q, K, V, dOut, mask), known

    def judge(self, call, got):
        got = as_triple(self.name, got)
        expected, known = self.catalogue(call)
        whole_mistake(self.name, got, expected, known)
        swapped_parts(self.name, got, expected, ("dQ", "dK", "dV"))
        for i, what in enumerate(("dQ", "dK", "dV")):
            wrong = [(h, None if w is None else w[i]) for h, w in known]
            compare(self.name, got[i], expected[i], what, wrong)
        got = tuple(
            as_result(self.name, g, w) for g, w in zip(got, ("dQ", "dK", "dV"), strict=True)
        )
        if call.context.get("fd"):
            Q, K, V, dOut, *rest = call.args
            mask = rest[0] if rest else None
            forward = (
                lambda q: ref.attention_head(q, K, V, mask)[0],
                lambda k: ref.attention_head(Q, k, V, mask)[0],
                lambda v: ref.attention_head(Q, K, v, mask)[0],
            )
            for i, (what, x) in enumerate(zip(("dQ", "dK", "dV"), (Q, K, V), strict=True)):
                numeric = central_differences(forward[i], x, dOut, FD_STEP)
                against_differences(self.name, what, got[i], numeric)
