"""Extension 5: cross-attention, queries from X and keys and values from C.

Judged by the extensions' contract (EXTENSIONS.md): the contract's tolerance
by the inputs' precision, warnings are errors, inputs must not change, and a
ValueError (with a message) where n_heads does not divide d_model.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .. import reference as ref
from ..examples import get_example
from .batches import batch_rng, random_shape
from .comparison import head_weights, precision
from .core import Call, Check
from .failures import CheckFailed, said_publicly
from .hints import (
    MASK_IGNORED_HEADS,
    MERGED_HEAD_AXIS_FIRST,
    NOT_SCALED,
    W_O_MISSING,
    WEIGHTS_TRANSPOSED,
    bare_reshape,
    by_d_model,
    every_kind_of_mask,
    not_dividing,
    queries_bare_reshape,
    scaled_wrongly,
    values_from_W_k,
    w_o_transposed,
    wrong_axis,
)
from .masks import HEAD_AXIS_TWICE, head_axis_twice, per_head, per_head_mask, per_sequence_mask
from .step12_gqa import as64, compare_pair


def mask_counts_C(x_ndim: int, c_ndim: int) -> str:
    """The hint for a mask whose head axis is decided by counting C's axes alone."""
    return mask_counts_one("C", c_ndim, "X", x_ndim, "one memory C shared by a batch of queries")


def mask_counts_X(x_ndim: int, c_ndim: int) -> str:
    """The hint for a mask whose head axis is decided by counting X's axes alone."""
    return mask_counts_one(
        "X", x_ndim, "C", c_ndim, "one sequence of queries X reading a batch of memories C"
    )


def mask_counts_one(counted: str, n: int, other: str, m: int, case: str) -> str:
    """The hint for a mask rule that counts the axes of ``counted`` alone (``other`` has more)."""
    return (
        f"the mask's head axis is decided by counting the axes of {counted} alone ({counted} "
        f"has {n}, {other} has {m}): {case} has fewer batch axes in {counted} than in {other}. "
        "Count the axes of X or C, whichever has more: a mask with no more axes than that has "
        "no head axis yet, so give it one, np.expand_dims(mask, -3)."
    )


def split_with_X_batch(X, C) -> str:
    """The hint for C's keys and values reshaped with X's batch axes."""
    lead = np.shape(C)[:-2]
    own = f"batch axes {lead}" if lead else "no batch axes"
    return (
        f"C's keys and values are split with X's batch axes: here one memory C of shape "
        f"{np.shape(C)} serves the whole batch of X, {np.shape(X)}, and has {own} of its "
        "own. Split C @ W_k with C's own axes, "
        "reshape(*K.shape[:-1], n_heads, d_k) (or mh.split_heads), never X.shape[:-2]."
    )


def reshaped_with_X_batch(X, C) -> str:
    """The hint for a reshape with X's batch axes where C has more of its own."""
    lead = np.broadcast_shapes(np.shape(X)[:-2], np.shape(C)[:-2])
    return (
        f"a reshape takes X's batch axes, but here one sequence of queries X {np.shape(X)} "
        f"reads a batch of memories C {np.shape(C)}: the heads and the output have the batch "
        f"axes of X and C broadcast together, {lead}. Take the leading axes from the array "
        "being reshaped (heads.shape[:-3], K.shape[:-1]), or use mh.split_heads and "
        "mh.merge_heads."
    )


#: The queries alone split by a bare reshape, K and V by split_heads.
QUERIES_BARE = queries_bare_reshape("T_q")
#: Q, K and V split by a bare reshape to (..., h, T, d_k), the heads merged back likewise.
BARE_SPLIT = bare_reshape("X·W_Q, C·W_K and C·W_V are")


def mask_swapped(shape: tuple | None = None, scores: tuple | None = None) -> str:
    """The hint for a mask whose last two axes are swapped, as if it were (..., T_k, T_q).

    ``shape`` and ``scores``: the mask's and the scores' shapes where an error says them.
    """
    seen = (
        f" (the mask of shape {shape} met the scores {scores} as "
        f"{(*shape[:-2], shape[-1], shape[-2])})"
        if shape is not None and scores is not None
        else ""
    )
    return (
        "the mask's last two axes are swapped, as mask.T or np.swapaxes(mask, -1, -2) does"
        f"{seen}: a mask is shaped like the scores, (..., T_q, T_k), one row per query of X and "
        "one column per position of C, so a padding mask (..., 1, T_k) blocks positions of C. "
        "Add it as it is."
    )


def mistakes(X, C, W_q, W_k, W_v, W_o, h, mask) -> list:
    """``(hint, (wrong output, wrong weights))`` for the known mistakes of cross-attention.

    A mistake that swaps the roles of ``X`` and ``C`` gives results of its own
    shape (``T_q`` and ``T_k`` trade places), so it is named even where the
    shapes differ from the reference's; it is None where it cannot run (the
    mask or the values do not fit).
    """
    d_model = X.shape[-1]
    d_k = d_model // h
    M = per_head(mask, max(X.ndim, C.ndim), h)  # (..., 1 or h, T_q, T_k): the mask rule

    def run(
        q=X,
        k=C,
        v=C,
        scale=None,
        axis=-1,
        masked=True,
        W_out=W_o,
        extra=0.0,
        M=M,
        Wv=W_v,
        Wq=W_q,
        Wk=W_k,
        merge=ref.merge_heads,
    ):
        Qh, Kh, Vh = (ref.split_heads(S @ W, h) for S, W in ((q, Wq), (k, Wk), (v, Wv)))
        with np.errstate(all="ignore"):
            Z = Qh @ Kh.swapaxes(-1, -2) / (scale or math.sqrt(d_k))  # (..., h, T_q, T_k)
            try:
                Z = Z + (M if masked else 0.0) + extra
                heads = merge(ref.softmax(Z, axis=axis) @ Vh)
            except ValueError:  # these roles do not fit these shapes: a function raises
                return None
            A = ref.softmax(Z, axis=axis)
            return (heads @ W_out if W_out is not None else heads), A

    out = [
        (
            "the keys and values come from X: in cross-attention only the queries come from X; "
            "K = C·W_K and V = C·W_V come from C.",
            run(k=X, v=X),
        ),
        (
            "the queries come from C and the keys and values from X: swap them back, "
            "Q = X·W_Q, K = C·W_K, V = C·W_V.",
            run(q=C, k=X, v=X),
        ),
        (
            "the values come from X: V = C·W_V, like the keys (each weight is paid to a "
            "position of C).",
            run(v=X),
        ),
        (
            "the keys come from X: K = C·W_K, like the values (the scores compare X's queries "
            "with C's positions).",
            run(k=X),
        ),
        (W_O_MISSING, run(W_out=None)),
        (w_o_transposed("T_q"), run(W_out=W_o.T)),
        (by_d_model(d_model, d_k), run(scale=math.sqrt(d_model))),
        (NOT_SCALED, run(scale=1.0)),
        (wrong_axis("each row (one query of X)", " over the positions of C"), run(axis=-2)),
    ]
    T_q, T_k = X.shape[-2], C.shape[-2]
    out += [
        (
            "the values are C itself: V = C·W_V, projected like the keys (then split into heads).",
            run(Wv=np.eye(d_model)),
        ),
        (
            scaled_wrongly(f"√T_k = √{T_k}, the length of C (the number of keys)", d_k),
            run(scale=math.sqrt(T_k)) if T_k not in (1, d_k) else None,
        ),
    ]
    out += [
        (
            values_from_W_k("the values are C·W_V, projected from C like the keys."),
            run(Wv=W_k),
        ),
        (WEIGHTS_TRANSPOSED, run(Wq=W_q.T, Wk=W_k.T, Wv=W_v.T, W_out=W_o.T)),
    ]
    if h > 1 and d_k > 1:  # the heads (..., h, T_q, d_k) reshaped as they are
        bare = lambda H: H.reshape(*H.shape[:-3], H.shape[-2], d_model)  # noqa: E731
        out.append((MERGED_HEAD_AXIS_FIRST, run(merge=bare)))
        Qb, Kb, Vb = (  # and split likewise: (..., T, d_model) reshaped to (..., h, T, d_k)
            (S @ W).reshape(*S.shape[:-2], h, S.shape[-2], d_k)
            for S, W in ((X, W_q), (C, W_k), (C, W_v))
        )
        with np.errstate(all="ignore"):
            try:
                A = ref.softmax(Qb @ Kb.swapaxes(-1, -2) / math.sqrt(d_k) + M)
                out.append((BARE_SPLIT, (bare(A @ Vb) @ W_o, A)))
            except ValueError:  # C's batch axes and X's do not meet: a function raises
                pass
        Kh, Vh = (ref.split_heads(C @ W, h) for W in (W_k, W_v))  # only Q split bare
        with np.errstate(all="ignore"):
            try:
                A = ref.softmax(Qb @ Kh.swapaxes(-1, -2) / math.sqrt(d_k) + M)
                out.append((QUERIES_BARE, (ref.merge_heads(A @ Vh) @ W_o, A)))
            except ValueError:
                pass
    if mask is not None:
        out.append((MASK_IGNORED_HEADS, run(masked=False)))
    if mask is not None and np.ndim(mask) >= 2:
        swapped = np.swapaxes(mask, -1, -2)  # then the layer's rule, on the swapped mask
        try:
            out.append((mask_swapped(), run(M=per_head(swapped, max(X.ndim, C.ndim), h))))
        except ValueError:  # it no longer fits the scores: the error is read instead
            pass
    if mask is not None and C.ndim < np.ndim(mask) <= X.ndim and np.ndim(mask) > 2:
        out.append((mask_counts_C(X.ndim, C.ndim), run(M=np.asarray(mask))))
    if mask is not None and X.ndim < np.ndim(mask) <= C.ndim and np.ndim(mask) > 2:
        out.append((mask_counts_X(X.ndim, C.ndim), run(M=np.asarray(mask))))
    scores = (*np.broadcast_shapes(X.shape[:-2], C.shape[:-2]), h, T_q, T_k)  # (..., h, T_q, T_k)
    twice = head_axis_twice(mask, scores)  # (..., h, 1, T_q, T_k)
    if twice is not None:
        out.append((HEAD_AXIS_TWICE, run(M=twice)))
    if T_k > 1:
        causal = np.where(np.arange(T_k) > np.arange(T_q)[:, None], -np.inf, 0.0)  # (T_q, T_k)
        out.append(
            (
                "a causal mask is added: in cross-attention every query may read every "
                "position of C (C is not the future of X); block only what the mask passed "
                "in blocks.",
                run(extra=causal),
            )
        )
    return out


def _weights(rng, d: int, dtype=np.float64) -> tuple:
    return tuple((rng.normal(size=(d, d)) / math.sqrt(d)).astype(dtype) for _ in range(4))


def _call(X, C, Ws, h, mask=None) -> Call:
    return Call((X, C, *Ws, h) if mask is None else (X, C, *Ws, h, mask))


class CrossAttention(Check):
    name = "cross_attention"
    mask_rule = True
    passed = (
        "queries from X, keys and values from C; matches for T_q <, = and > T_k, "
        f"{every_kind_of_mask('T_q', 'T_k')}, batches, one memory C for a batch of queries and "
        "a batch of memories for one X, float32, and equals self-attention when C is X."
    )
    passed_hidden = "matches on random lengths, heads, batches, masks and precisions."

    def visible(self):
        q, s = get_example("question"), get_example("simple")  # d_model = 8 both
        Wq = (q.W_q, q.W_k, q.W_v, q.W_o)
        b = batch_rng()
        XB, CB = b.normal(size=(2, 3, 8)), b.normal(size=(2, 5, 8))
        per_batch = np.where(b.random((2, 3, 5)) < 0.4, -np.inf, 0.0)  # (B, T_q, T_k)
        perm = b.permutation(q.T)
        X32, C32 = (b.normal(size=(2, n, 8)).astype(np.float32) for n in (4, 6))
        W32 = tuple(W.astype(np.float32) for W in Wq)
        X2 = b.normal(size=(2, 3, 4, 8))
        C2 = b.normal(size=(2, 3, 5, 8))
        Xe, Ce = b.normal(size=(5, 6)), b.normal(size=(7, 6))
        shared = np.where(b.random((2, 3, 5)) < 0.4, -np.inf, 0.0)  # per sequence and query
        shared[1, 2] = -np.inf  # the second sequence's last query reads nothing
        return [
            _call(s.X, q.X, Wq, 2),  # T_q = T_k: "The cat sat on the mat" reads the question
            _call(s.X[:4], q.X, Wq, 2),  # T_q < T_k: "The cat sat on" reads the question
            _call(q.X, s.X[:3], Wq, 2),  # T_q > T_k
            _call(q.X, q.X[::-1], Wq, 4),  # T_q = T_k, 4 heads
            _call(s.X[:4], q.X, Wq, 1),  # one head
            _call(q.X[:1], s.X, Wq, 4),  # T_q = 1
            _call(q.X, s.X[:1], Wq, 2),  # T_k = 1
            _call(s.X[:4], q.X, Wq, 2, ref.padding_mask(4, q.T)),  # (1, T_k) padding
            _call(XB, CB, _weights(b, 8), 4, ref.padding_mask(np.array([5, 2]), 5)),  # (B, 1, T_k)
            _call(XB, CB, _weights(b, 8), 2, per_batch),  # (B, T_q, T_k)
            _call(XB, CB, _weights(b, 8), 2, np.where(b.random((3, 5)) < 0.4, -np.inf, 0.0)),
            _call(q.X, q.X, Wq, 2),  # = multi_head_self_attention
            _call(q.X, q.X, Wq, 2, ref.causal_mask(q.T)),  # = causal self-attention
            _call(s.X[:4], q.X[perm], Wq, 2),  # C's rows permuted (see the second call)
            _call(X32, C32, W32, 4, ref.padding_mask(np.array([6, 3]), 6)),
            _call(X2, C2, _weights(b, 8), 2, ref.padding_mask(np.array([[5, 1, 3], [2, 4, 5]]), 5)),
            _call(XB, CB, _weights(b, 8), 4, ref.padding_mask(np.array([5, 0]), 5)),  # C all masked
            # one memory C (T_k, d_model) shared by a batch of queries X (B, T_q, d_model): C's
            # keys and values have no batch axes, and the mask rule counts X's axes
            _call(XB, CB[0], _weights(b, 8), 4),
            _call(XB, CB[1], _weights(b, 8), 2, shared),  # (B, T_q, T_k), B = n_heads
            _call(XB, CB[1], _weights(b, 8), 4, shared),  # (B, T_q, T_k), B ≠ n_heads
            # one sequence of queries X (T_q, d_model) reading a batch of memories C: the mask
            # rule counts C's axes
            _call(XB[0], CB, _weights(b, 8), 4, shared),  # (B, T_q, T_k), B ≠ n_heads
            _call(XB[1], CB, _weights(b, 8), 2, shared),  # (B, T_q, T_k), B = n_heads
            # masks with their head axis (one axis more than X): added as they are
            _call(q.X, q.X, Wq, 2, per_head_mask(q.T, 2)),  # (h, T, T): self-attention
            _call(s.X[:4], q.X, Wq, 2, per_head_mask(q.T, 2)[:, :4]),  # (h, T_q, T_k)
            _call(XB, CB, _weights(b, 8), 2, per_batch[:, None]),  # (B, 1, T_q, T_k)
            _call(
                XB, CB, _weights(b, 8), 4, ref.padding_mask(np.array([5, 2]), 5)[:, None]
            ),  # (B, 1, 1, T_k)
            Call(
                (Xe, Ce, *_weights(b, 6), 4),
                raises="ValueError",
                context={"why": not_dividing(4, 6)},
            ),
        ]

    def hidden(self, rng):
        calls = []
        for k in range(6):
            h, d_k, T_q, T_k = (int(n) for n in rng.integers(1, 6, size=4))
            d = h * d_k
            lead = random_shape(rng)
            dtype = np.float32 if k % 3 == 2 else np.float64
            X = rng.normal(size=(*lead, T_q, d)).astype(dtype)
            C = rng.normal(size=(*lead, T_k, d)).astype(dtype)
            kind = ("none", "padding", "per batch", "2-D", "self", "padding")[k]
            mask = None
            if kind == "padding":
                mask = ref.padding_mask(rng.integers(0, T_k + 1, size=lead), T_k)
            elif kind == "per batch":
                mask = np.where(rng.random((*lead, T_q, T_k)) < 0.3, -np.inf, 0.0)
            elif kind == "2-D":
                mask = np.where(rng.random((T_q, T_k)) < 0.3, -np.inf, 0.0)
            elif kind == "self":
                C, mask = X.copy(), ref.causal_mask(T_q)
            calls.append(_call(X, C, _weights(rng, d, dtype), h, mask))
        # one memory C for a batch of queries, a mask per sequence and query (no head axis)
        h, d_k, T_q, T_k, B = (int(n) for n in rng.integers(2, 5, size=5))
        X, C = rng.normal(size=(B, T_q, h * d_k)), rng.normal(size=(T_k, h * d_k))
        mask = per_sequence_mask(rng, (B,), T_q, T_k)
        calls.append(_call(X, C, _weights(rng, h * d_k), h, mask))
        # one sequence of queries for a batch of memories, a mask per memory (no head axis)
        h, d_k, T_q, T_k, B = (int(n) for n in rng.integers(2, 5, size=5))
        X, C = rng.normal(size=(T_q, h * d_k)), rng.normal(size=(B, T_k, h * d_k))
        mask = per_sequence_mask(rng, (B,), T_q, T_k)
        calls.append(_call(X, C, _weights(rng, h * d_k), h, mask))
        # a mask with its head axis (h, T_q, T_k), one per head: it is added as it is
        h, d_k, T_q, T_k = (int(n) for n in rng.integers(2, 5, size=4))
        X, C = rng.normal(size=(T_q, h * d_k)), rng.normal(size=(T_k, h * d_k))
        mask = np.where(rng.random((h, T_q, T_k)) < 0.4, -np.inf, 0.0)
        mask[..., 0] = 0.0  # every query of every head reads key 0
        calls.append(_call(X, C, _weights(rng, h * d_k), h, mask))
        h = int(rng.integers(3, 6))
        d = h * 2 + 1
        X, W = rng.normal(size=(3, d)), rng.normal(size=(d, d))
        why = not_dividing(h, d)
        return [*calls, Call((X, X, W, W, W, W, h), raises="ValueError", context={"why": why})]

    # -- verdict -------------------------------------------------------------
    def catalogue(self, call):
        if call.raises is not None:
            return None, []
        X, C, W_q, W_k, W_v, W_o, h, *rest = as64(call.args)
        mask = rest[0] if rest else None
        if X.shape == C.shape and np.array_equal(X, C):  # the contract: self-attention
            expected = ref.multi_head_self_attention(X, W_q, W_k, W_v, W_o, h, mask)
        else:
            expected = ref.cross_attention(X, C, W_q, W_k, W_v, W_o, h, mask)
        return expected, mistakes(X, C, W_q, W_k, W_v, W_o, h, mask)

    def judge(self, call, got):
        expected, known = self.catalogue(call)
        compare_pair(
            self.name,
            got,
            expected,
            known,
            head_weights("n_heads", "T_q", "T_k"),
            precision((*call.args, got)),  # float32 in or out: float32's tolerance
        )

    def relayed(self, call, said):
        """One memory C for a batch of queries: C split with X's batch axes, or the mask's
        head axis counted against C alone (numpy's reshape or broadcast refusing)."""
        X, C = call.args[:2]
        mask = call.args[7] if len(call.args) > 7 else call.kwargs.get("mask")
        swapped = self._swapped_mask(X, C, mask, said)
        if swapped:
            return swapped
        if np.ndim(X) < np.ndim(C):  # one sequence of queries, a batch of memories
            if "broadcast" in said and mask is not None and X.ndim < np.ndim(mask) <= C.ndim:
                return mask_counts_X(X.ndim, C.ndim)
            if "cannot reshape" in said:
                return reshaped_with_X_batch(X, C)
            return None
        if np.ndim(C) >= np.ndim(X):
            return None
        if "cannot reshape" in said:
            return split_with_X_batch(X, C)
        if "broadcast" in said and mask is not None and C.ndim < np.ndim(mask) <= X.ndim:
            return mask_counts_C(X.ndim, C.ndim)
        return None

    @staticmethod
    def _swapped_mask(X, C, mask, said: str) -> str | None:
        """The mask's last two axes swapped, read off a broadcast error; or None.

        The error quotes a shape ending in the mask's last two axes swapped, which no longer
        fit the scores (..., T_q, T_k), where the mask as given did.
        """
        if "broadcast" not in said or np.ndim(mask) < 2 or np.ndim(X) < 2 or np.ndim(C) < 2:
            return None
        m, qk = np.shape(mask), (np.shape(X)[-2], np.shape(C)[-2])
        turned = (m[-1], m[-2])

        def fits(shape) -> bool:
            return all(a in (1, b) for a, b in zip(shape, qk, strict=True))

        if turned == m[-2:] or fits(turned) or not fits(m[-2:]):
            return None
        shapes = [
            tuple(int(n) for n in t.replace(",", " ").split())
            for t in re.findall(r"\(([\d,\s]+)\)", said)
        ]
        if not any(len(t) >= 2 and t[-2:] == turned for t in shapes):
            return None
        scores = next((t for t in shapes if len(t) >= 3 and t[-2:] == qk), None)
        return mask_swapped(m, scores)

    def explain_error(self, call, outcome):
        """As :meth:`Check.explain_error`; a reshape error with T_q ≠ T_k names C's length."""
        X, C = call.args[:2]
        said = (outcome.error or "").split(" raised ", 1)[-1]
        if (outcome.code or "").startswith("raised:") and self.relayed(call, said):
            return super().explain_error(call, outcome)
        if (outcome.code or "").startswith("raised:") and X.shape[-2] != C.shape[-2]:
            if "cannot reshape" in said:
                return CheckFailed(
                    f"{self.name}: C has its own length T_k ({C.shape[-2]} here, X has "
                    f"{X.shape[-2]}): split C's keys and values with C.shape[-2], not with "
                    f"X's T ({outcome.error})",
                    public=said_publicly(self.name, outcome.code),
                )
        return super().explain_error(call, outcome)
