# ruff: noqa: E501  (learners' answers, kept as they wrote them)
"""Issue 47's slips named by the checks (back), as learners wrote them; the format of
:mod:`tests.support.fresh_mistakes` (merged into its ``FRESH``).

The tiled attention's and the backward pass's: each was told only "differs from the
reference", "contains NaN" or another slip's sentence before issue 47.
"""

from tests.support.answer_parts import HEAD_BACKWARD, LAYER_BACKWARD, edited

#: The start of a tiled attention: the block size checked, the sizes read off.
_TILED_START = """def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be a positive int, but got {block_size}")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
"""

#: An online-softmax loop over blocks of keys; ``{scale}`` and ``{end}`` are what the slips change.
_TILED_LOOP = """    m = np.full((*lead, T_q, 1), -np.inf)
    l = np.zeros((*lead, T_q, 1))
    O = np.zeros((*lead, T_q, V.shape[-1]))
    for s in range(0, T_k, block_size):
        S = Q @ np.swapaxes(K[..., s:s + block_size, :], -1, -2) / {scale}
        if causal:
            keys = np.arange(s, min(s + block_size, T_k))
            S = np.where(keys > np.arange(T_q)[:, None], -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        r = np.exp(m - m_new)
        l = l * r + P.sum(-1, keepdims=True)
        O = O * r + P @ V[..., s:s + block_size, :]
        m = m_new
    return {end}
"""

SLIPS47_BACK = {
    # Takes a softmax inside each block of keys and averages the blocks' outputs at the end.
    "tiled_attention_blocks_averaged": (
        "14_tiled",
        "tiled_attention",
        _TILED_START
        + """    outs = []
    for s in range(0, T_k, block_size):
        S = Q @ np.swapaxes(K[..., s:s + block_size, :], -1, -2) / np.sqrt(d_k)
        if causal:
            keys = np.arange(s, min(s + block_size, T_k))
            S = np.where(keys > np.arange(T_q)[:, None], -np.inf, S)
        m = S.max(axis=-1, keepdims=True)
        E = np.exp(S - np.where(np.isfinite(m), m, 0))
        l = E.sum(axis=-1, keepdims=True)
        outs.append((E @ V[..., s:s + block_size, :]) / np.where(l > 0, l, 1))  # this block's attention
    return sum(outs) / len(outs)  # average over the blocks
""",
        "the outputs of the blocks are averaged",
    ),
    # Keeps the running sum ℓ but returns O without dividing by it.
    "tiled_attention_not_divided": (
        "14_tiled",
        "tiled_attention",
        _TILED_START + _TILED_LOOP.format(scale="np.sqrt(d_k)", end="O"),
        "not divided by the running sum ℓ",
    ),
    # Scales the scores by the number of keys, as the source article says.
    "tiled_attention_sqrt_T": (
        "14_tiled",
        "tiled_attention",
        _TILED_START + _TILED_LOOP.format(scale="np.sqrt(T_k)", end="O / l"),
        "divided by √T (the sequence length, 6)",
    ),
    # The running maximum replaced by each block's own maximum: the rescale overflows when a
    # block's scores are lower than an earlier one's.
    "tiled_attention_block_maximum": (
        "14_tiled",
        "tiled_attention",
        _TILED_START
        + _TILED_LOOP.replace(
            "        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))\n",
            "        m_new = S.max(axis=-1, keepdims=True)  # this block's maximum\n"
            "        m_new = np.where(np.isfinite(m_new), m_new, m)\n",
        ).format(scale="np.sqrt(d_k)", end="O / l"),
        "replaced by each block's own maximum",
    ),
    # The rescale put on the new block's term instead of the running output.
    "tiled_attention_new_block_rescaled": (
        "14_tiled",
        "tiled_attention",
        _TILED_START
        + _TILED_LOOP.replace(
            "        O = O * r + P @ V[..., s:s + block_size, :]\n",
            "        O = O + (P @ V[..., s:s + block_size, :]) * r\n",
        ).format(scale="np.sqrt(d_k)", end="O / l"),
        "the rescale multiplies the new block",
    ),
    # The row sum computed with a matrix product, summed over its columns.
    "backward_sb_matrix_product_sum": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    s = np.sum(dA @ np.swapaxes(A, -1, -2), axis=-1, keepdims=True)  # Σ_k dA_k A_k
    return A * (dA - s)
""",
        "Σ dA·A is taken as a matrix product",
    ),
    # A itself subtracted where the weighted row sum belongs.
    "backward_sb_minus_A": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    # the Jacobian is diag(A) - A A^T
    return A * (dA - A)
""",
        "the bracket subtracts A itself",
    ),
    # The row sum of A (which is 1) times dA, instead of the row sum of dA·A.
    "backward_sb_sum_of_A_times_dA": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    return A * dA - A * np.sum(A, axis=axis, keepdims=True) * dA
""",
        "dZ is 0 everywhere",
    ),
    # dQ built from the queries instead of the keys.
    "backward_ah_dQ_from_Q": (
        "17_backward",
        "attention_head_backward",
        edited(HEAD_BACKWARD, ("    dQ = dZ @ K", "    dQ = dZ @ Q  # the query's own gradient")),
        "dQ = dZ·Q",
    ),
    # Its own softmax (max subtracted, no guard) recomputes A: NaN on a fully blocked row.
    "backward_ah_own_softmax_nan": (
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
                    "    with np.errstate(all='ignore'):\n"
                    "        A = np.exp(Z - Z.max(-1, keepdims=True))\n"
                    "        A = A / A.sum(-1, keepdims=True)"
                ),
            ),
        ),
        "a query whose every key is blocked gets NaN",
    ),
    # The layer's own forward with a softmax that gives NaN on a fully blocked row.
    "backward_mb_own_softmax_nan": (
        "17_backward",
        "multi_head_self_attention_backward",
        """def multi_head_self_attention_backward(X, W_q, W_k, W_v, W_o, n_heads, dOut, mask=None):
    Qh, Kh, Vh = (mh.split_heads(X @ W, n_heads) for W in (W_q, W_k, W_v))
    d_k = Qh.shape[-1]
    Z = Qh @ Kh.swapaxes(-1, -2) / np.sqrt(d_k)
    if mask is not None:
        m = np.asarray(mask)
        Z = Z + (np.expand_dims(m, -3) if m.ndim <= X.ndim else m)
    E = np.exp(Z - Z.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)
    C = mh.merge_heads(A @ Vh)
    dH = mh.split_heads(dOut @ W_o.T, n_heads)
    dA = dH @ Vh.swapaxes(-1, -2)
    dZ = A * (dA - (dA * A).sum(-1, keepdims=True)) / np.sqrt(d_k)
    dQ, dK, dV = (mh.merge_heads(G) for G in (dZ @ Kh, dZ.swapaxes(-1, -2) @ Qh, A.swapaxes(-1, -2) @ dH))
    flat = lambda M: M.reshape(-1, M.shape[-1])
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV), flat(C).T @ flat(dOut))
""",
        "a query whose every key is blocked gets NaN",
    ),
    # Every projection's gradient from dOut·W_oᵀ, as if the heads were not there.
    "backward_mb_projections_from_dC": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    dQ, dK, dV = (mh.merge_heads(G) for G in attention_head_backward(Qh, Kh, Vh, dH, mask))",
                "    dQ = dK = dV = dOut @ W_o.T  # Q, K and V all feed the output",
            ),
        ),
        "the gradients through the projections (dX, dW_Q, dW_K, dW_V) come from dOut·W_Oᵀ",
    ),
    # A residual's + dOut in the layer's dX.
    "backward_mb_residual_inside": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T",
                "    dX = dOut + dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T  # + the skip connection",
            ),
        ),
        "dX has an extra + dOut",
    ),
    # dOut divided by the number of positions, as if the loss's mean had to be taken here again.
    "backward_mb_mean_twice": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    d_model = X.shape[-1]",
                "    d_model = X.shape[-1]\n    dOut = dOut / (X.size // d_model)  # the loss is a mean over positions",
            ),
        ),
        "every gradient is 6 times too small: divided by T = 6 twice?",
    ),
    # √d_model in the heads' backward where √d_k belongs.
    "backward_mb_sqrt_d_model": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD, ("        s = np.sqrt(Q.shape[-1])", "        s = np.sqrt(d_model)")
        ),
        "dQ and dK are divided by √d_model = √8",
    ),
    # The forward whose merged heads make dW_o is called without the mask.
    "backward_mb_forward_unmasked": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    heads, _ = mh.attention_head(Qh, Kh, Vh, mask)",
                "    heads, _ = mh.attention_head(Qh, Kh, Vh)",
            ),
        ),
        "dW_O uses heads computed without the mask",
    ),
    # The weights' gradients averaged over the positions.
    "backward_mb_dW_mean_over_positions": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    return dX, (flat(X).T @ flat(dQ), flat(X).T @ flat(dK), flat(X).T @ flat(dV),\n"
                "                flat(merged).T @ flat(dOut))",
                "    n = flat(X).shape[0]  # one gradient per position: take their mean\n"
                "    return dX, (flat(X).T @ flat(dQ) / n, flat(X).T @ flat(dK) / n, flat(X).T @ flat(dV) / n,\n"
                "                flat(merged).T @ flat(dOut) / n)",
            ),
        ),
        "the weights' gradients are divided by T = 6",
    ),
    # dX from the merged heads' gradient, past the attention (the weights' gradients right).
    "backward_mb_dX_past_the_heads": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T",
                "    dX = (dOut @ W_o.T) @ (W_q + W_k + W_v).T  # X feeds Q, K and V",
            ),
        ),
        "the gradients through the projections (dX, dW_Q, dW_K, dW_V) come from dOut·W_Oᵀ",
    ),
    # dW_o from the values instead of the merged heads.
    "backward_mb_dW_o_from_V": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "                flat(merged).T @ flat(dOut))",
                "                flat(X @ W_v).T @ flat(dOut))",
            ),
        ),
        "dW_O uses V = X·W_V",
    ),
    # The gradients of a K and V shared by a batch left batched (no sum over the batch axes).
    "backward_ah_shared_kv_not_summed": (
        "17_backward",
        "attention_head_backward",
        """def attention_head_backward(Q, K, V, dOut, mask=None):
    s = np.sqrt(Q.shape[-1])
    _, A = mh.attention_head(Q, K, V, mask)
    dV = np.swapaxes(A, -1, -2) @ dOut
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True)) / s
    return dZ @ K, np.swapaxes(dZ, -1, -2) @ Q, dV
""",
        "dK and dV keep the batch axes K and V were broadcast along",
    ),
    # The row-sum term subtracted without its factor A (setA: sb_term_without_a).
    "backward_sb_term_without_a": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    return A * dA - np.sum(A * dA, axis=axis, keepdims=True)
""",
        "the row-sum term is not multiplied by A",
    ),
    # A taken for the scores: the softmax applied to it again (setA: sb_treats_A_as_scores).
    "backward_sb_softmax_again": (
        "17_backward",
        "softmax_backward",
        """import mhsa_helpers as mh

def softmax_backward(A, dA, axis=-1):
    S = mh.softmax(A, axis=axis)   # the softmax of the scores
    return S * (dA - np.sum(dA * S, axis=axis, keepdims=True))
""",
        "the softmax is applied to A again",
    ),
    # Each block's scores scaled by √ of the block's length (setA: tiled_sqrt_tk_scale).
    "tiled_attention_sqrt_block_length": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    T_q = Q.shape[-2]
    T_k = K.shape[-2]
    m = np.full(Q.shape[:-1] + (1,), -np.inf)
    l = np.zeros(Q.shape[:-1] + (1,))
    O = np.zeros(Q.shape[:-1] + (V.shape[-1],))
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(e - s)
        if causal:
            S = np.where(np.arange(s, e) > np.arange(T_q)[:, None], -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        l = np.exp(m - m_new) * l + P.sum(axis=-1, keepdims=True)
        O = np.exp(m - m_new) * O + P @ V[..., s:e, :]
        m = m_new
    return O / l
""",
        "divided by √(the block's length), √2 for a block of 2 keys",
    ),
    # Each block's exponentials divided by the block's own sum; no running sum ℓ.
    "tiled_attention_block_own_sum": (
        "14_tiled",
        "tiled_attention",
        _TILED_START
        + """    m = np.full((*lead, T_q, 1), -np.inf)
    O = np.zeros((*lead, T_q, V.shape[-1]))
    for s in range(0, T_k, block_size):
        S = Q @ np.swapaxes(K[..., s:s + block_size, :], -1, -2) / np.sqrt(d_k)
        if causal:
            keys = np.arange(s, min(s + block_size, T_k))
            S = np.where(keys > np.arange(T_q)[:, None], -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        P = P / P.sum(axis=-1, keepdims=True)  # normalise the block
        O = O * np.exp(m - m_new) + P @ V[..., s:s + block_size, :]
        m = m_new
    return O
""",
        "divided by the block's own sum",
    ),
    # dA = dOut @ V, V not transposed: numpy refuses the product (T_k rows against d_v).
    "backward_ah_dA_V_not_transposed": (
        "17_backward",
        "attention_head_backward",
        edited(
            HEAD_BACKWARD,
            (
                "    dZ = softmax_backward(A, dOut @ np.swapaxes(V, -1, -2)) / s",
                "    dA = dOut @ V  # the gradient of the weights\n    dZ = softmax_backward(A, dA) / s",
            ),
        ),
        "dA = dOut·V does not fit",
    ),
    # Each head's gradient from W_O's diagonal block, as if W_O acted head by head.
    "backward_mb_dH_diagonal_block": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "    dH = mh.split_heads(dOut @ W_o.T, n_heads)",
                "    d_k = d_model // n_heads\n"
                "    # head i writes output columns i*d_k:(i+1)*d_k through its block of W_o\n"
                "    dH = np.stack([dOut[..., i*d_k:(i+1)*d_k] @ W_o[i*d_k:(i+1)*d_k, i*d_k:(i+1)*d_k].T\n"
                "                   for i in range(n_heads)], axis=-3)",
            ),
        ),
        "W_O's diagonal block only",
    ),
    # dW_o averaged over the heads.
    "backward_mb_dW_o_by_heads": (
        "17_backward",
        "multi_head_self_attention_backward",
        edited(
            LAYER_BACKWARD,
            (
                "                flat(merged).T @ flat(dOut))",
                "                flat(merged).T @ flat(dOut) / n_heads)  # one W_o shared by the heads",
            ),
        ),
        "dW_O is divided by n_heads = 2",
    ),
    # The running arrays sized from Q's batch axes only (set B of issue 47): K and V batched.
    "tiled_running_arrays_from_Q_alone": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError("causal attention needs T_q == T_k")
    m = np.full(Q.shape[:-1] + (1,), -np.inf)
    l = np.zeros(Q.shape[:-1] + (1,))
    acc = np.zeros(Q.shape[:-1] + (V.shape[-1],))
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S[..., np.arange(s, e)[None, :] > rows] = -np.inf
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        r = np.exp(m - m_new)
        l *= r
        l += P.sum(axis=-1, keepdims=True)
        acc *= r
        acc += P @ V[..., s:e, :]
        m = m_new
    return acc / l
""",
        "are sized from Q's batch axes alone",
    ),
    # dOutᵀ·V, as written, on the wrong factor (setB: ahb_dA_without_transpose).
    "b3_ahb_dA_without_transpose": (
        "17_backward",
        "attention_head_backward",
        """import mhsa_helpers as mh


def _sum_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for ax, n in enumerate(shape):
        if n == 1 and g.shape[ax] != 1:
            g = g.sum(axis=ax, keepdims=True)
    return g


def attention_head_backward(Q, K, V, dOut, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    out, A = mh.attention_head(Q, K, V, mask)
    s = np.sqrt(Q.shape[-1])
    dV = np.swapaxes(A, -1, -2) @ dOut
    dA = np.swapaxes(dOut, -1, -2) @ V
    dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True))
    dQ = dZ @ K / s
    dK = np.swapaxes(dZ, -1, -2) @ Q / s
    return _sum_to(dQ, Q.shape), _sum_to(dK, K.shape), _sum_to(dV, V.shape)
""",
        "dA = dOutᵀ·V has the transpose on the wrong factor",
    ),
    # dQ and dK scaled by √T_q, the number of queries (setB: ahb_scale_sqrt_T).
    "b3_ahb_scale_sqrt_T": (
        "17_backward",
        "attention_head_backward",
        """import mhsa_helpers as mh


def _sum_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for ax, n in enumerate(shape):
        if n == 1 and g.shape[ax] != 1:
            g = g.sum(axis=ax, keepdims=True)
    return g


def attention_head_backward(Q, K, V, dOut, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    out, A = mh.attention_head(Q, K, V, mask)
    s = np.sqrt(Q.shape[-2])
    dV = np.swapaxes(A, -1, -2) @ dOut
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True))
    dQ = dZ @ K / s
    dK = np.swapaxes(dZ, -1, -2) @ Q / s
    return _sum_to(dQ, Q.shape), _sum_to(dK, K.shape), _sum_to(dV, V.shape)
""",
        "divided by √T = √5, T the number of positions",
    ),
    # dZ divided by √d_k and dQ, dK again (setB: ahb_scale_applied_twice).
    "b3_ahb_scale_applied_twice": (
        "17_backward",
        "attention_head_backward",
        """import mhsa_helpers as mh


def _sum_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for ax, n in enumerate(shape):
        if n == 1 and g.shape[ax] != 1:
            g = g.sum(axis=ax, keepdims=True)
    return g


def attention_head_backward(Q, K, V, dOut, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    out, A = mh.attention_head(Q, K, V, mask)
    s = np.sqrt(Q.shape[-1])
    dV = np.swapaxes(A, -1, -2) @ dOut
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - np.sum(dA * A, axis=-1, keepdims=True)) / s
    dQ = dZ @ K / s
    dK = np.swapaxes(dZ, -1, -2) @ Q / s
    return _sum_to(dQ, Q.shape), _sum_to(dK, K.shape), _sum_to(dV, V.shape)
""",
        "the 1/√d_k is applied twice",
    ),
    # log_softmax's backward for the softmax's (setB: sb_log_softmax_backward).
    "b3_sb_log_softmax_backward": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    return dA - A * np.sum(dA, axis=axis, keepdims=True)
""",
        "the backward of log_softmax",
    ),
    # A divided by its row sums again: 0/0 on a fully blocked row (setB: sb_renormalised_by_row_sum).
    "b3_sb_renormalised_by_row_sum": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    A = np.asarray(A, dtype=float)
    A = A / A.sum(axis=axis, keepdims=True)  # make sure the rows sum to 1
    return A * (dA - np.sum(dA * A, axis=axis, keepdims=True))
""",
        "A is divided by its sums along the axis again",
    ),
    # The Jacobian contracted on dA's own index, '...ij,...i->...i' (setB: sb_jacobian_transposed_outer).
    "b3_sb_jacobian_transposed_outer": (
        "17_backward",
        "softmax_backward",
        """def softmax_backward(A, dA, axis=-1):
    A = np.moveaxis(np.asarray(A, dtype=float), axis, -1)
    dA = np.moveaxis(np.asarray(dA, dtype=float), axis, -1)
    J = A[..., :, None] * np.eye(A.shape[-1]) - A[..., :, None] * A[..., None, :]
    dZ = np.einsum("...ij,...i->...i", J, dA)
    return np.moveaxis(dZ, -1, axis)
""",
        "J applied from the wrong side",
    ),
    # Query and key tiles; the future keys inside the diagonal block left unmasked (setB).
    "b3_tiled_2d_tiles_no_mask_in_diagonal_block": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError("causal attention needs T_q == T_k")
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    out = np.zeros(lead + (T_q, V.shape[-1]))
    b = block_size
    for qs in range(0, T_q, b):
        qe = min(qs + b, T_q)
        q = Q[..., qs:qe, :]
        m = np.full(lead + (qe - qs, 1), -np.inf)
        l = np.zeros(lead + (qe - qs, 1))
        acc = np.zeros(lead + (qe - qs, V.shape[-1]))
        for ks in range(0, T_k, b):
            if causal and ks > qe - 1:
                break  # blocks entirely in the future are skipped
            ke = min(ks + b, T_k)
            S = q @ np.swapaxes(K[..., ks:ke, :], -1, -2) / np.sqrt(d_k)
            m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
            P = np.exp(S - m_new)
            r = np.exp(m - m_new)
            l = l * r + P.sum(axis=-1, keepdims=True)
            acc = acc * r + P @ V[..., ks:ke, :]
            m = m_new
        out[..., qs:qe, :] = acc / l
    return out
""",
        "inside the block on the diagonal, the keys after each query (j > i) are still seen",
    ),
    # The running output started as np.zeros_like(Q): d_k wide where d_v belongs (setB).
    "b3_tiled_acc_zeros_like_Q": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError("causal attention needs T_q == T_k")
    m = np.full(Q.shape[:-1] + (1,), -np.inf)
    l = np.zeros(Q.shape[:-1] + (1,))
    acc = np.zeros_like(Q)
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        r = np.exp(m - m_new)
        l = l * r + P.sum(axis=-1, keepdims=True)
        acc = acc * r + P @ V[..., s:e, :]
        m = m_new
    return acc / l
""",
        "the running output O has Q's width",
    ),
    # The causal test j >= i: the diagonal blocked, query 0 sees no key (setB).
    "b3_tiled_causal_blocks_diagonal": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError("causal attention needs T_q == T_k")
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(lead + (T_q, 1), -np.inf)
    l = np.zeros(lead + (T_q, 1))
    acc = np.zeros(lead + (T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) >= rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        r = np.exp(m - m_new)
        l = l * r + P.sum(axis=-1, keepdims=True)
        acc = acc * r + P @ V[..., s:e, :]
        m = m_new
    return acc / l
""",
        "the causal mask also blocks the diagonal",
    ),
    # Blocks cut from a (T, T) mask's transpose: the past blocked (setB).
    "b3_tiled_causal_mask_from_full_matrix_flipped": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError("causal attention needs T_q == T_k")
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(lead + (T_q, 1), -np.inf)
    l = np.zeros(lead + (T_q, 1))
    acc = np.zeros(lead + (T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = S + np.triu(np.full((T_q, T_k), -np.inf), 1).T[:, s:e]
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        r = np.exp(m - m_new)
        l = l * r + P.sum(axis=-1, keepdims=True)
        acc = acc * r + P @ V[..., s:e, :]
        m = m_new
    return acc / l
""",
        "the causal mask is flipped",
    ),
    # exp(m_new - m) for the rescale: exp(+∞) on the first block (setB).
    "b3_tiled_rescale_inverted": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError("causal attention needs T_q == T_k")
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(lead + (T_q, 1), -np.inf)
    l = np.zeros(lead + (T_q, 1))
    acc = np.zeros(lead + (T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m_new)
        r = np.exp(m_new - m)
        l = l * r + P.sum(axis=-1, keepdims=True)
        acc = acc * r + P @ V[..., s:e, :]
        m = m_new
    return acc / l
""",
        "the rescale is inverted",
    ),
    # exp(S - m) with the old running maximum: exp(+∞) on the first block; its value is the inverted
    # rescale's (every row NaN), the warning (in the product, not 0·∞) tells them apart.
    "b3_tiled_shift_by_old_maximum": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(lead + (T_q, 1), -np.inf)
    l = np.zeros(lead + (T_q, 1))
    acc = np.zeros(lead + (T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > rows, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        P = np.exp(S - m)
        r = np.exp(m - m_new)
        l = l * r + P.sum(axis=-1, keepdims=True)
        acc = acc * r + P @ V[..., s:e, :]
        m = m_new
    return acc / l
""",
        "shifted by the old running maximum",
    ),
    # --- set C (round 4) ---
    # The block's exponentials for O taken against the old maximum (0 before any block), those for ℓ against the new one. (set C: tiled_exp_against_old_max)
    "tiled_exp_against_old_max": (
        "14_tiled",
        "tiled_attention",
        """def tiled_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if int(block_size) != block_size or block_size < 1:
        raise ValueError("block_size must be a positive integer")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError("causal needs T_q == T_k")
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(lead + (T_q, 1), -np.inf)
    l = np.zeros(lead + (T_q, 1))
    O = np.zeros(lead + (T_q, V.shape[-1]))
    for s in range(0, T_k, block_size):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, e) > np.arange(T_q)[:, None], -np.inf, S)
        m_old = np.where(np.isinf(m), 0.0, m)
        P = np.exp(S - m_old)                        # against the old maximum
        m_new = np.maximum(m, S.max(-1, keepdims=True))
        shift = np.where(np.isinf(m_new), 0.0, m_new)
        r = np.exp(m_old - shift)
        l = r * l + P.sum(-1, keepdims=True) * np.exp(m_old - shift) * 0 + P.sum(-1, keepdims=True) * 0 + np.exp(S - shift).sum(-1, keepdims=True)
        O = r * O + P @ V[..., s:e, :]
        m = m_new
    return np.divide(O, l, out=np.zeros_like(O), where=l > 0)
""",
        "the block's exp(S − m) added to the running output O is taken against the old maximum",
    ),
    # The same slip in the loop above: O's share of the block computed before the maximum is updated.
    "tiled_output_share_before_new_maximum": (
        "14_tiled",
        "tiled_attention",
        _TILED_START
        + _TILED_LOOP.replace(
            "        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))\n",
            "        PV = np.exp(S - np.where(np.isfinite(m), m, 0.0)) @ V[..., s:s + block_size, :]\n"
            "        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))\n",
        )
        .replace(
            "        O = O * r + P @ V[..., s:s + block_size, :]\n",
            "        O = O * r + PV\n",
        )
        .format(scale="np.sqrt(d_k)", end="O / l"),
        "is taken against the old maximum m_old, while the running sum ℓ takes it against the new one",
    ),
    # Set D: the gradients of K and V summed over their missing leading axes only, not over a size-1 one.
    "d_ahb_unbroadcast_leading_only": (
        "17_backward",
        "attention_head_backward",
        """
def attention_head_backward(Q, K, V, dOut, mask=None):
    out, A = mh.attention_head(Q, K, V, mask)
    s = np.sqrt(Q.shape[-1])
    dV = np.swapaxes(A, -1, -2) @ dOut
    dA = dOut @ np.swapaxes(V, -1, -2)
    dZ = A * (dA - (dA * A).sum(axis=-1, keepdims=True)) / s
    dQ, dK = dZ @ K, np.swapaxes(dZ, -1, -2) @ Q
    def back(g, x):
        while g.ndim > x.ndim:
            g = g.sum(axis=0)
        return g
    return back(dQ, Q), back(dK, K), back(dV, V)
""",
        "axes of size 1 (keepdims=True there)",
    ),
}
