# ruff: noqa: E501  (learners' answers, kept as they wrote them)
"""The backward pass's slips (17_backward), written fresh without reading its checks, and
what each is told; the format of :mod:`tests.support.fresh_mistakes`.

Most of them change a line or two of a right answer (:mod:`tests.support.answer_parts`):
an entry states only those lines.
"""

from tests.support.answer_parts import HEAD_BACKWARD, LAYER_BACKWARD, edited

FRESH_BACKWARD = {
    # Drops the row-sum term: returns A * dA instead of A * (dA - sum(dA * A)).
    "backward_sb_no_rowsum": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # d softmax / dz is just softmax itself, like exp
    return A * dA
""",
        "misses the row-sum term",
    ),
    # Subtracts the row sum of dA instead of the row sum of dA * A.
    "backward_sb_sum_dA_only": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    return A * (dA - np.sum(dA, axis=axis, keepdims=True))
""",
        "the row sum must weigh dA by A",
    ),
    # Hard-codes the last axis for the sum and ignores the axis argument.
    "backward_sb_axis_ignored": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # rows of the attention matrix are the last axis
    s = np.sum(dA * A, axis=-1, keepdims=True)
    return A * (dA - s)
""",
        "the axis argument is ignored",
    ),
    # Sums without keepdims=True, so the row sums broadcast along the wrong axis (or fail to
    # broadcast).
    "backward_sb_no_keepdims": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    s = np.sum(dA * A, axis=axis)
    return A * (dA - s)
""",
        "keepdims=True is missing",
    ),
    # Uses only the diagonal of the Jacobian, a(1 - a), as for a sigmoid, dropping the off-
    # diagonal -a_i a_j terms.
    "backward_sb_sigmoid_diag": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # derivative of a_j w.r.t. z_j is a_j (1 - a_j)
    return dA * A * (1 - A)
""",
        "only the Jacobian's diagonal",
    ),
    # Takes the coupling sum along axis -2 (down the columns) instead of along the softmax's axis.
    "backward_sb_column_sum": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # sum over the keys... the columns are axis -2
    return A * (dA - np.sum(dA * A, axis=-2, keepdims=True))
""",
        "runs along the wrong axis",
    ),
    # Computes the right values but overwrites the caller's dA in place.
    "backward_sb_inplace": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # save memory: reuse dA's buffer
    dA -= np.sum(dA * A, axis=axis, keepdims=True)
    dA *= A
    return dA
""",
        "modified an input in place",
    ),
    # Divides the scores' gradient by d_k instead of sqrt(d_k).
    "backward_ah_divide_by_dk": (
        "17_backward",
        "attention_head_backward",
        edited(
            HEAD_BACKWARD,
            ("    s = np.sqrt(Q.shape[-1])", "    d_k = Q.shape[-1]"),
            (
                "    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s",
                "    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / d_k",
            ),
        ),
        "divided by d_k",
    ),
    # Applies the 1/sqrt(d_k) scale to dQ but forgets it in dK.
    "backward_ah_dK_unscaled": (
        "17_backward",
        "attention_head_backward",
        edited(
            HEAD_BACKWARD,
            (
                (
                    "    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s\n"
                    "    dQ = dZ @ K"
                ),
                (
                    "    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2))\n"
                    "    dQ = dZ @ K / s"
                ),
            ),
        ),
        "dK misses the 1/√d_k",
    ),
    # Computes dK as dZ @ Q instead of dZ^T @ Q (shapes only agree when T_q == T_k).
    "backward_ah_dK_no_transpose": (
        "17_backward",
        "attention_head_backward",
        edited(
            HEAD_BACKWARD,
            ("    dK = np.swapaxes(dZ, -1, -2) @ Q", "    dK = dZ @ Q"),
        ),
        "dK = dZ·Q",
    ),
    # Computes dV as A @ dOut instead of A^T @ dOut.
    "backward_ah_dV_no_transpose": (
        "17_backward",
        "attention_head_backward",
        edited(
            HEAD_BACKWARD,
            ("    dV = np.swapaxes(A, -1, -2) @ dOut", "    dV = A @ dOut"),
        ),
        "dV = A·dOut",
    ),
    # Recomputes the attention weights without the mask, so blocked positions pass gradient.
    "backward_ah_unmasked_A": (
        "17_backward",
        "attention_head_backward",
        edited(
            HEAD_BACKWARD,
            (
                "    _, A = mh.attention_head(Q, K, V, mask)",
                (
                    "    # the mask is a constant, it has no gradient, so the backward does not need it\n"
                    "    A = mh.softmax(Q @ np.swapaxes(K, -1, -2) / s)"
                ),
            ),
        ),
        "gradient flows through blocked positions",
    ),
    # Transposes with .T, which reverses every axis and breaks (or scrambles) inputs with batch or
    # head axes.
    "backward_ah_dotT_2d_only": (
        "17_backward",
        "attention_head_backward",
        edited(
            HEAD_BACKWARD,
            (
                (
                    "    dV = np.swapaxes(A, -1, -2) @ dOut\n"
                    "    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s"
                ),
                ("    dV = A.T @ dOut\n    dZ = softmax_backward(A, dOut @ V.T) / s"),
            ),
            ("    dK = np.swapaxes(dZ, -1, -2) @ Q", "    dK = dZ.T @ Q"),
        ),
        "not M.T (which reverses every axis",
    ),
    # Recomputes the softmax by hand without the fully-masked-row guard, so an all -inf row gives
    # NaN (and a RuntimeWarning).
    "backward_ah_naive_softmax": (
        "17_backward",
        "attention_head_backward",
        edited(
            HEAD_BACKWARD,
            (
                "    _, A = mh.attention_head(Q, K, V, mask)",
                (
                    "    Z = Q @ np.swapaxes(K, -1, -2) / s\n"
                    "    if mask is not None:\n"
                    "        Z = Z + mask\n"
                    "    E = np.exp(Z - Z.max(axis=-1, keepdims=True))\n"
                    "    A = E / E.sum(axis=-1, keepdims=True)"
                ),
            ),
        ),
        "a query whose every key is blocked gets NaN",
    ),
    # dX follows only the query path, dropping the key and value paths dK W_k^T + dV W_v^T.
    "backward_mb_dX_only_Q": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T",
                "    dX = dQ @ W_q.T  # X -> Q -> output",
            ),
        ),
        "only the path through the queries",
    ),
    # Weight gradients keep the batch axes, shape (..., d_model, d_model), instead of being summed
    # over them.
    "backward_mb_weights_not_summed": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            ("    d_model = X.shape[-1]", ""),
            ("    flat = lambda M: M.reshape(-1, d_model)", "    Xt = np.swapaxes(X, -1, -2)"),
            (
                (
                    "    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),\n"
                    "                flat(merged).T @ flat(dOut))"
                ),
                "    return dX, (Xt @ dQ, Xt @ dK, Xt @ dV, np.swapaxes(merged, -1, -2) @ dOut)",
            ),
        ),
        "keep the batch axes",
    ),
    # dW_o is computed as dOut^T M, the transpose of M^T dOut.
    "backward_mb_dWo_transposed": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                (
                    "    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),\n"
                    "                flat(merged).T @ flat(dOut))"
                ),
                (
                    "    dW_o = flat(dOut).T @ flat(merged)\n"
                    "    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV), dW_o)"
                ),
            ),
        ),
        "W_O's gradient is transposed",
    ),
    # Backpropagates through each weight with W instead of W^T (dOut @ W_o and dQ @ W_q, ...).
    "backward_mb_W_not_transposed": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    dH = mh.split_heads(dOut @ W_o.T, n_heads)",
                "    dH = mh.split_heads(dOut @ W_o, n_heads)",
            ),
            (
                "    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T",
                "    dX = dQ @ W_q + dK @ W_k + dV @ W_v",
            ),
        ),
        "instead of their transposes",
    ),
    # Merges the heads' gradients back with a bare reshape to X.shape instead of merge_heads (no
    # swap of the head and token axes).
    "backward_mb_reshape_no_transpose": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))",
                (
                    "    # back to (..., T, d_model)\n"
                    "    dQ, dK, dV = (G.reshape(X.shape) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))"
                ),
            ),
        ),
        "bare reshape",
    ),
    # Passes a per-sequence mask (..., T, T) to the heads without inserting a head axis, so its
    # batch axis lines up with the head axis.
    "backward_mb_mask_no_head_axis": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                (
                    "    if mask is not None and np.ndim(mask) > 2:\n"
                    "        mask = np.expand_dims(mask, -3)\n"
                    "    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)"
                ),
                "    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)  # the mask broadcasts",
            ),
        ),
        "no head axis",
    ),
    # Overwrites the caller's mask in place, replacing -inf with -1e9 (which also turns a fully
    # masked row into uniform weights).
    "backward_mb_mask_inplace_large_neg": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    d_model = X.shape[-1]",
                (
                    "    d_model = X.shape[-1]\n"
                    "    if mask is not None:\n"
                    "        mask[np.isneginf(mask)] = -1e9  # avoid -inf - -inf = nan in the gradients\n"
                    "        if mask.ndim > 2:\n"
                    "            mask = np.expand_dims(mask, -3)"
                ),
            ),
            (
                (
                    "    if mask is not None and np.ndim(mask) > 2:\n"
                    "        mask = np.expand_dims(mask, -3)"
                ),
                "",
            ),
        ),
        "modified an input in place",
    ),
    # Uses the mask in the forward pass but forgets to pass it to the heads' backward.
    "backward_mb_backward_unmasked": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))",
                "    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH))",
            ),
        ),
        "the heads' backward gets no mask",
    ),
}
