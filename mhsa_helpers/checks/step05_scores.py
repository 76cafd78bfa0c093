"""Step 5: the scaled scores Z = Q·Kᵀ/√d_k."""

from __future__ import annotations

import math

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .batches import batch_rng, random_shape
from .comparison import close, compare
from .core import Call, Check
from .failures import CheckFailed
from .hints import NOT_SCALED, by_d_k, by_d_model, by_length, k_transposed_fixed, matches_on_random
from .wording import number


def precedence(by: str, read: str, d_k: int) -> str:
    """The hint for ``d_k ** 1 / 2`` taken for √d_k: ``by`` is what the scores are divided by,
    ``read`` how Python reads the code."""
    return (
        f"the scores are divided by {by}, not by √d_k = √{d_k}: {read}, because ** binds "
        "tighter than / (and the divisions go left to right), so ** 1 / 2 takes no square "
        "root. Write d_k ** 0.5 or np.sqrt(d_k)."
    )


def mistakes(Q, K, d_model: int | None = None) -> list:
    """``(hint, wrong scores)`` for the known mistakes in scoring ``Q`` against ``K``.

    ``d_model``, when the inputs are one head of a known layer, adds the
    mistake of dividing by √d_model.
    """
    raw = Q @ K.swapaxes(-1, -2)  # (..., T_q, T_k)
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    out = [
        (NOT_SCALED, raw),
        (by_length(T_k, d_k), raw / math.sqrt(T_k)),
        (by_d_k(d_k), raw / d_k),
        ("the scores are multiplied by √d_k; divide by it.", raw * math.sqrt(d_k)),
        (
            precedence(f"2·d_k = {2 * d_k}", "Q·Kᵀ / d_k ** 1 / 2 is (Q·Kᵀ / d_k) / 2", d_k),
            raw / (2 * d_k),
        ),
        (
            precedence(f"d_k/2 = {number(d_k / 2)}", "d_k ** 1 / 2 is (d_k ** 1) / 2", d_k),
            raw / (d_k / 2) if d_k != 4 else None,  # at 4, d_k/2 is √d_k (at 2, 1)
        ),
        (
            "computed K·Qᵀ: rows must be queries and columns keys, Q·Kᵀ.",
            K @ Q.swapaxes(-1, -2) / math.sqrt(d_k) if T_q == T_k else None,
        ),
    ]
    front = Q.shape[1] if Q.ndim > 2 else None  # d_k read from the front: Q.shape[1]
    # at 1 the scores come out unscaled: both hints then, and a later input tells them apart
    if front is not None and front != d_k:
        out.append(
            (
                f"the scores are divided by √{front}, the size of Q's axis 1 (Q.shape[1], "
                "len(Q[0])), not by √d_k: d_k is the size of Q's last axis (Q.shape[-1], here "
                f"{d_k}). Q.shape[1] is d_k only for a 2-D Q: once batch axes are in front it "
                "is the token count T_q (or a batch or head count).",
                raw / math.sqrt(front),
            )
        )
    if T_q != T_k and front != T_q:
        out.append(
            (
                f"the scores are divided by √T_q = √{T_q}; divide by √d_k = √{d_k}.",
                raw / math.sqrt(T_q),
            )
        )
    if d_model is not None and d_model != d_k:
        out.append((by_d_model(d_model, d_k), raw / math.sqrt(d_model)))
    lead = Q.shape[-3] if Q.ndim > 2 else 1  # d_model guessed as Q.shape[-3]·d_k
    if lead > 1:
        out.append(
            (
                f"the scores are divided by √{lead * d_k} = √(Q.shape[-3]·d_k), as if axis -3 "
                "held the heads and d_model = h·d_k were the scale: attention_scores scales by "
                f"√d_k, the size of Q's last axis (Q.shape[-1], here {d_k}), whatever its "
                "leading axes hold (here axis -3 is a batch axis).",
                raw / math.sqrt(lead * d_k),
            )
        )
    return out


def np_dot_batch(Q, K):
    """``[(hint, wrong scores)]`` for np.dot on stacked Q and Kᵀ (np.tensordot over the last
    axes gives the same); none without batch axes."""
    if Q.ndim < 3:
        return []
    wrong = np.dot(Q, np.swapaxes(K, -1, -2)) / math.sqrt(Q.shape[-1])
    right = (*np.broadcast_shapes(Q.shape[:-2], K.shape[:-2]), Q.shape[-2], K.shape[-2])
    return [
        (
            "np.dot (like np.tensordot) is not a batched product: on arrays with batch axes it "
            "pairs every query matrix of the batch with every key matrix, shape "
            f"{wrong.shape} instead of {right}; "
            "use Q @ np.swapaxes(K, -1, -2) (np.matmul), which pairs sequence b's queries with "
            "sequence b's keys.",
            wrong,
        )
    ]


class AttentionScores(Check):
    name = "attention_scores"
    passed = (
        "Z = Q·Kᵀ/√d_k on the song's and the question's head 1, the six students and a batch "
        "with T_q ≠ T_k, in float64 and float32, and two batch axes."
    )
    passed_hidden = matches_on_random("batch axes and T_q != T_k")

    def visible(self):
        e = get_example("song")
        Q, K, _ = ref.project_qkv(e.X, e.W_q, e.W_k, e.W_v)
        s = get_example("students")
        rng = batch_rng()
        batch = Call((rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))))
        tokens = ("query", e.tokens, "key", e.tokens)
        head = Call(
            (ref.split_heads(Q, 2)[0], ref.split_heads(K, 2)[0]),
            context={"d_model": 4, "labels": tokens},
        )
        students = Call((s.X, s.X), context={"labels": ("query", s.tokens, "key", s.tokens)})
        q = get_example("question")  # d_model = 8, d_k = 4: √d_model is not d_k here
        Qq, Kq, _ = ref.project_qkv(q.X, q.W_q, q.W_k, q.W_v)
        question = Call(
            (ref.split_heads(Qq, 2)[0], ref.split_heads(Kq, 2)[0]),
            context={"d_model": q.d_model, "labels": ("query", q.tokens, "key", q.tokens)},
        )
        single = Call(tuple(M.astype(np.float32) for M in batch.args))  # float32 in
        two = Call((rng.normal(size=(2, 2, 3, 4)), rng.normal(size=(2, 2, 5, 4))))  # 2 batch axes
        # the question first: there √d_model (√8) is not d_k (4), as it is on the song (√4 = 2)
        return [question, head, students, batch, single, two]

    def hidden(self, rng):
        calls = []
        for _ in range(4):
            T_q, T_k, d_k = (int(n) for n in rng.integers(2, 9, size=3))
            lead = random_shape(rng)
            Q, K = rng.normal(size=(*lead, T_q, d_k)), rng.normal(size=(*lead, T_k, d_k))
            calls.append(Call((Q, K)))
        return calls

    def catalogue(self, call):
        Q, K = call.args
        known = [*mistakes(Q, K, call.context.get("d_model")), *np_dot_batch(Q, K)]
        return ref.attention_scores(Q, K), known

    def relayed(self, call, said):
        """K transposed by a fixed permutation of three axes, read off numpy's refusal."""
        K = call.args[1]
        if "axes don't match array" in said and np.ndim(K) != 3:
            return k_transposed_fixed(np.shape(K))
        return None

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        if isinstance(got, np.ndarray) and expected.shape[-1] == expected.shape[-2] > 1:
            diagonal = np.diagonal(expected, axis1=-2, axis2=-1)  # (..., T): query i, key i
            if got.shape == diagonal.shape and close(got, diagonal):
                raise CheckFailed(
                    f"{self.name}: only query i against key i: (Q * K).sum(-1) pairs each query "
                    "with the key at its own position, shape (..., T). Every query is scored "
                    "against every key: Q @ np.swapaxes(K, -1, -2), shape (..., T_q, T_k)."
                )
        compare(self.name, got, expected, "Z", known, labels=call.context.get("labels"))
