"""Public attention code's conventions, rewritten in the course's signatures (issue 47).

Each entry re-expresses what one piece of public numpy attention code does (its layout,
its mask convention, its scale, its softmax), written afresh for this test, never copied:
``key: (function, source, origin, piece)``. ``origin`` names the repository, the path and
the licence of the code it follows; ``piece`` is a piece of the sentence the visible check
must say (the deviation named), or None for code that is right in its own way and must
pass the visible and the hidden check. Used by tests/test_real_code_feedback.py.
"""

ONNX = "onnx/onnx, onnx/reference/ops/op_attention.py (Apache-2.0)"
KERAS = "keras-team/keras, keras/src/backend/numpy/nn.py (Apache-2.0)"
PICO = "jaymody/picoGPT, gpt2.py (MIT)"
LLAMA = "likeablob/llama3.np, llama3.py (MIT; read in its fork swap357/llama3.np)"
D2L = "d2l-ai/d2l-en, chapter_attention-mechanisms-and-transformers (code MIT-0)"
HF = "huggingface/transformers, src/transformers/models/llama/modeling_llama.py (Apache-2.0)"
HF_MASKS = "huggingface/transformers, src/transformers/masking_utils.py (Apache-2.0)"
MISTRAL = "mistralai/mistral-src, one_file_ref.py (Apache-2.0)"
CS336 = "ezhoureal/assignment2-systems, cs336_systems/flash_attention.py (no licence stated)"
TENSORTONIC = "PTSown0222/TensorTonic-Solutions, transformers-multi-head-attention (no licence)"
SWB = "cybershiptrooper/CV_bootcamp_SWB, bonus_exercises/attention/soln/attention.py (none)"
APOVALOV = "apovalov/gpt_handmade_numpy, src/causal_self_attention.py (no licence stated)"

#: Softmax along the last axis shifted by the row's maximum, with no case for a row of −∞
#: only (onnx, keras, picoGPT, llama3.np and d2l all write it so).
_SHIFTED = """
def _sm(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
"""
#: onnx's layer: 3-D inputs (batch, T, hidden) split with q_num_heads / kv_num_heads by
#: indexing the shape from the front, a past_key concatenated on axis 2, K/V heads repeated
#: with np.repeat on axis 1, and the scale's square root applied to Q and to K.
_ONNX_LAYER = (
    _SHIFTED
    + """
def _to_heads(M, h):
    b, t, hidden = M.shape[0], M.shape[1], M.shape[2]
    return M.reshape(b, t, h, hidden // h).transpose(0, 2, 1, 3)

def _onnx(Q, K, V, bias, hq, hkv, past=None):
    Q, K, V = _to_heads(Q, hq), _to_heads(K, hkv), _to_heads(V, hkv)
    if past is not None:
        K = np.concatenate((past[0], K), axis=2)
        V = np.concatenate((past[1], V), axis=2)
    present = (K, V)
    if hq != hkv:
        K, V = np.repeat(K, hq // hkv, axis=1), np.repeat(V, hq // hkv, axis=1)
    r = np.sqrt(1 / np.sqrt(Q.shape[3]))
    A = _sm((Q * r) @ (K * r).transpose(0, 1, 3, 2) + (0.0 if bias is None else bias))
    out = (A @ V).transpose(0, 2, 1, 3)
    return out.reshape(out.shape[0], out.shape[1], -1), present, A
"""
)
#: keras's masks: a boolean keep-mask combined with np.logical_and, blocked scores replaced
#: by -0.7 times the largest bfloat16 (a large finite number).
_KERAS_MASK = """
def _keep(logits, mask, causal=False):
    keep = np.ones(logits.shape, dtype=bool)
    if mask is not None:
        keep = keep & np.asarray(mask).astype(bool)
    if causal:
        keep = keep & np.tril(np.ones(logits.shape[-2:], dtype=bool))
    return np.where(keep, logits, -0.7 * 3.38953e38)
"""
#: llama3.np's layer: (B, L, D) unpacked, heads as (B, L, h, d), K/V heads repeated, a 2-D
#: mask given two leading axes.
_LLAMA_LAYER = (
    _SHIFTED
    + """
def _llama(x, Wq, Wk, Wv, Wo, h, hkv, mask):
    B, L, D = x.shape
    hd = D // h
    q = (x @ Wq).reshape(B, L, h, hd).transpose(0, 2, 1, 3)
    k = np.repeat((x @ Wk).reshape(B, L, hkv, hd), h // hkv, axis=2).transpose(0, 2, 1, 3)
    v = np.repeat((x @ Wv).reshape(B, L, hkv, hd), h // hkv, axis=2).transpose(0, 2, 1, 3)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    if mask is not None:
        s = s + mask[None, None, :, :]
    A = _sm(s)
    return (A @ v).transpose(0, 2, 1, 3).reshape(B, L, -1) @ Wo, A
"""
)
#: llama3.np's rotation: pairs (x[2i], x[2i+1]) as real and imaginary parts, frequencies
#: base ** (-(0, 2, 4 …) / d) and the angles as an outer product.
_LLAMA_ROTATE = """
def _rotate(X, cos, sin):
    pairs = X.reshape(X.shape[:-1] + (-1, 2))
    re, im = pairs[..., 0], pairs[..., 1]
    out = np.stack([re * cos - im * sin, re * sin + im * cos], axis=-1)
    return out.reshape(X.shape)

def _inv_freq(d, base):
    return 1.0 / base ** (np.arange(0, d, 2)[: d // 2] / d)
"""

REAL = {
    # ---------------------------------------------------------------- onnx
    "onnx_softmax": ("softmax", _SHIFTED + "softmax = _sm\n", ONNX, "entirely −∞ (fully masked)"),
    "onnx_causal_in_place": (
        "causal_mask",
        """
def causal_mask(seq_len):
    bias = np.zeros((seq_len, seq_len))
    upper = np.triu(np.ones((seq_len, seq_len)), k=1)
    upper[upper == 1] = -np.inf
    bias[..., :, 0:] += upper
    return bias
""",
        ONNX,
        None,
    ),
    "onnx_scores_root_of_scale_on_both": (
        "attention_scores",
        """
def attention_scores(Q, K):
    r = np.sqrt(1 / np.sqrt(Q.shape[-1]))
    return (Q * r) @ np.swapaxes(K * r, -1, -2)
""",
        ONNX,
        None,
    ),
    "onnx_scores_four_axes": (
        "attention_scores",
        """
def attention_scores(Q, K):
    r = np.sqrt(1 / np.sqrt(Q.shape[3]))
    return (Q * r) @ (K * r).transpose(0, 1, 3, 2)
""",
        ONNX,
        "a size read from the front (M.shape[2], Q.shape[3])",
    ),
    "onnx_head_no_guard": (
        "attention_head",
        _SHIFTED
        + """
def attention_head(Q, K, V, mask=None):
    r = np.sqrt(1 / np.sqrt(Q.shape[-1]))
    bias = np.zeros((Q.shape[-2], K.shape[-2])) + (0.0 if mask is None else mask)
    A = _sm((Q * r) @ np.swapaxes(K * r, -1, -2) + bias)
    return A @ V, A
""",
        ONNX,
        "whose every key is blocked gets NaN",
    ),
    "onnx_head_boolean_mask": (
        "attention_head",
        _SHIFTED
        + """
def attention_head(Q, K, V, mask=None):
    bias = 0.0
    if mask is not None:
        keep = np.asarray(mask).astype(bool)
        bias = np.where(keep, 0.0, -np.inf)
    A = _sm(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + bias)
    return A @ V, A
""",
        ONNX,
        "read as a boolean keep-mask",
    ),
    "onnx_padding_with_head_axis": (
        "padding_mask",
        """
def padding_mask(lengths, seq_len):
    n = np.asarray(lengths).reshape(-1)
    keep = (np.arange(seq_len) < n[:, None]).reshape(n.size, 1, 1, seq_len)
    return np.where(keep, 0.0, -np.inf)
""",
        ONNX,
        "extra axes of size 1 before the query axis",
    ),
    "onnx_mhsa_three_axes": (
        "multi_head_self_attention",
        _ONNX_LAYER
        + """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    out, _, A = _onnx(X @ W_q, X @ W_k, X @ W_v, mask, n_heads, n_heads)
    return out @ W_o, A
""",
        ONNX,
        "a size read from the front",
    ),
    "onnx_mqa_three_axes": (
        "multi_query_attention",
        _ONNX_LAYER
        + """
def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    out, _, A = _onnx(X @ W_q, X @ W_k, X @ W_v, mask, n_heads, 1)
    return out @ W_o, A
""",
        ONNX,
        "a size read from the front",
    ),
    "onnx_gqa_three_axes": (
        "grouped_query_attention",
        _ONNX_LAYER
        + """
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    out, _, A = _onnx(X @ W_q, X @ W_k, X @ W_v, mask, n_heads, n_kv_heads)
    return out @ W_o, A
""",
        ONNX,
        "a size read from the front",
    ),
    "onnx_cross_three_axes": (
        "cross_attention",
        _ONNX_LAYER
        + """
def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    out, _, A = _onnx(X @ W_q, C @ W_k, C @ W_v, mask, n_heads, n_heads)
    return out @ W_o, A
""",
        ONNX,
        "a size read from the front",
    ),
    "onnx_decode_past_key": (
        "decode_step",
        _ONNX_LAYER
        + """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    X = x[..., None, :]
    out, present, _ = _onnx(X @ W_q, X @ W_k, X @ W_v, None, n_heads, n_heads, cache)
    return (out @ W_o)[..., 0, :], present
""",
        ONNX,
        "a size read from the front",
    ),
    "onnx_gqa_repeat_and_root_scale": (
        "grouped_query_attention",
        """
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    if n_heads % n_kv_heads or X.shape[-1] % n_heads:
        raise ValueError(f"n_kv_heads must divide n_heads, n_heads d_model: got {n_kv_heads}, "
                         f"{n_heads}, {X.shape[-1]}")
    g = n_heads // n_kv_heads
    Q = mh.split_heads(X @ W_q, n_heads)
    K = np.repeat(mh.split_heads(X @ W_k, n_kv_heads), g, axis=-3)
    V = np.repeat(mh.split_heads(X @ W_v, n_kv_heads), g, axis=-3)
    r = np.sqrt(1 / np.sqrt(Q.shape[-1]))
    bias = 0.0 if mask is None else mask
    if mask is not None and 2 < np.ndim(mask) <= X.ndim:
        bias = np.expand_dims(mask, -3)
    A = mh.softmax((Q * r) @ np.swapaxes(K * r, -1, -2) + bias)
    return mh.merge_heads(A @ V) @ W_o, A
""",
        ONNX,
        None,
    ),
    # ---------------------------------------------------------------- keras
    "keras_softmax": ("softmax", _SHIFTED + "softmax = _sm\n", KERAS, "entirely −∞ (fully masked)"),
    "keras_head_keep_mask": (
        "attention_head",
        _SHIFTED
        + _KERAS_MASK
        + """
def attention_head(Q, K, V, mask=None):
    logits = np.einsum("...th,...sh->...ts", Q, K) * (1.0 / np.sqrt(K.shape[-1]))
    A = _sm(_keep(logits, mask))
    return np.einsum("...ts,...sh->...th", A, V), A
""",
        KERAS,
        "read as a keep-mask",
    ),
    "keras_head_btnh": (
        "attention_head",
        _SHIFTED
        + """
def attention_head(Q, K, V, mask=None):
    logits = np.einsum("BTNH,BSNH->BNTS", Q, K) / np.sqrt(K.shape[-1])
    A = _sm(logits + (0.0 if mask is None else mask))
    return np.einsum("BNTS,BSNH->BTNH", A, V), A
""",
        KERAS,
        "np.einsum's subscripts name a fixed set of axes",
    ),
    "keras_causal_boolean": (
        "causal_mask",
        """
def causal_mask(seq_len):
    return np.tril(np.ones((seq_len, seq_len), dtype=bool))
""",
        KERAS,
        "not True/False",
    ),
    "keras_causal_large_negative": (
        "causal_mask",
        _KERAS_MASK
        + """
def causal_mask(seq_len):
    return _keep(np.zeros((seq_len, seq_len)), None, causal=True)
""",
        KERAS,
        "a large finite number",
    ),
    "keras_scores_einsum": (
        "attention_scores",
        """
def attention_scores(Q, K):
    return np.einsum("...th,...sh->...ts", Q, K) * (1.0 / np.sqrt(K.shape[-1]))
""",
        KERAS,
        None,
    ),
    "keras_cross_btnh": (
        "cross_attention",
        _SHIFTED
        + """
def cross_attention(X, C, W_q, W_k, W_v, W_o, n_heads, mask=None):
    B, T, D = X.shape
    S, H = C.shape[1], D // n_heads
    q = (X @ W_q).reshape(B, T, n_heads, H)
    k = (C @ W_k).reshape(B, S, n_heads, H)
    v = (C @ W_v).reshape(B, S, n_heads, H)
    A = _sm(np.einsum("BTNH,BSNH->BNTS", q, k) / np.sqrt(H) + (0.0 if mask is None else mask))
    return np.einsum("BNTS,BSNH->BTNH", A, v).reshape(B, T, D) @ W_o, A
""",
        KERAS,
        "B, T, d = X.shape assumes one batch axis",
    ),
    # ---------------------------------------------------------------- picoGPT
    "pico_softmax_last_axis_only": (
        "softmax",
        _SHIFTED + "\ndef softmax(Z, axis=-1):\n    return _sm(Z)\n",
        PICO,
        "entirely −∞ (fully masked)",
    ),
    "pico_causal_tri": (
        "causal_mask",
        "\ndef causal_mask(seq_len):\n    return (1 - np.tri(seq_len)) * -1e10\n",
        PICO,
        "blocks with -1e10, a large finite",
    ),
    "pico_head_dot_T": (
        "attention_head",
        _SHIFTED
        + """
def attention_head(Q, K, V, mask=None):
    A = _sm(Q @ K.T / np.sqrt(Q.shape[-1]) + (0.0 if mask is None else mask))
    return A @ V, A
""",
        PICO,
        "not M.T (which reverses every axis",
    ),
    "pico_scores_dot_T": (
        "attention_scores",
        "\ndef attention_scores(Q, K):\n    return Q @ K.T / np.sqrt(Q.shape[-1])\n",
        PICO,
        "not M.T (which reverses every axis",
    ),
    "pico_split_list_of_heads": (
        "split_heads",
        "\ndef split_heads(M, n_heads):\n    return np.array(np.split(M, n_heads, axis=-1))\n",
        PICO,
        "axis 0 and the head axis swapped",
    ),
    "pico_merge_hstack": (
        "merge_heads",
        "\ndef merge_heads(H):\n    return np.hstack(list(H))\n",
        PICO,
        "never from the front",
    ),
    "pico_mha_always_causal": (
        "multi_head_self_attention",
        _SHIFTED
        + """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    q, k, v = (np.split(X @ W, n_heads, axis=-1) for W in (W_q, W_k, W_v))
    fut = (1 - np.tri(X.shape[0])) * -1e10
    A = [_sm(a @ b.T / np.sqrt(a.shape[-1]) + fut) for a, b in zip(q, k)]
    return np.hstack([a @ c for a, c in zip(A, v)]) @ W_o, np.array(A)
""",
        PICO,
        "never a causal mask of your own",
    ),
    "pico_mha_mask_passed": (
        "multi_head_self_attention",
        _SHIFTED
        + """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    q, k, v = (np.split(X @ W, n_heads, axis=-1) for W in (W_q, W_k, W_v))
    m = 0.0 if mask is None else mask
    A = [_sm(a @ b.T / np.sqrt(a.shape[-1]) + m) for a, b in zip(q, k)]
    return np.hstack([a @ c for a, c in zip(A, v)]) @ W_o, np.array(A)
""",
        PICO,
        "not M.T (which reverses every axis",
    ),
    # ---------------------------------------------------------------- llama3.np
    "llama_rope_cos_sin_cache": (
        "rotary_embedding",
        _LLAMA_ROTATE
        + """
def rotary_embedding(X, positions=None, base=10000.0):
    p = np.arange(X.shape[-2]) if positions is None else positions
    table = np.outer(np.arange(int(np.max(p)) + 1), _inv_freq(X.shape[-1], base))
    return _rotate(X, np.cos(table)[p], np.sin(table)[p])
""",
        LLAMA,
        "not from a check of its own",
    ),
    "llama_rope_outer_positions": (
        "rotary_embedding",
        _LLAMA_ROTATE
        + """
def rotary_embedding(X, positions=None, base=10000.0):
    p = np.arange(X.shape[-2]) if positions is None else positions
    angles = np.outer(p, _inv_freq(X.shape[-1], base))
    return _rotate(X, np.cos(angles), np.sin(angles))
""",
        LLAMA,
        "np.outer(positions, θ) ravels both of its inputs",
    ),
    "llama_softmax": ("softmax", _SHIFTED + "softmax = _sm\n", LLAMA, "entirely −∞ (fully masked)"),
    "llama_causal_triu": (
        "causal_mask",
        "\ndef causal_mask(seq_len):\n    return np.triu(np.full((seq_len,) * 2, -np.inf), 1)\n",
        LLAMA,
        None,
    ),
    "llama_gqa_one_batch_axis": (
        "grouped_query_attention",
        _LLAMA_LAYER
        + """
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    return _llama(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask)
""",
        LLAMA,
        "B, T, d = X.shape assumes one batch axis",
    ),
    "llama_mhsa_one_batch_axis": (
        "multi_head_self_attention",
        _LLAMA_LAYER
        + """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    return _llama(X, W_q, W_k, W_v, W_o, n_heads, n_heads, mask)
""",
        LLAMA,
        "B, T, d = X.shape assumes one batch axis",
    ),
    "llama_mqa_one_batch_axis": (
        "multi_query_attention",
        _LLAMA_LAYER
        + """
def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    return _llama(X, W_q, W_k, W_v, W_o, n_heads, 1, mask)
""",
        LLAMA,
        "B, T, d = X.shape assumes one batch axis",
    ),
    "llama_decode_tokens_before_heads": (
        "decode_step",
        _SHIFTED
        + """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d = x.shape[-1]
    per = x.shape[:-1] + (1, n_heads, d // n_heads)
    q, k, v = ((x @ W).reshape(per) for W in (W_q, W_k, W_v))
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-3)
        v = np.concatenate([cache[1], v], axis=-3)
    qh, kh, vh = (np.swapaxes(a, -2, -3) for a in (q, k, v))
    A = _sm(qh @ np.swapaxes(kh, -1, -2) / np.sqrt(d // n_heads))
    y = np.swapaxes(A @ vh, -2, -3).reshape(x.shape)
    return y @ W_o, (k, v)
""",
        LLAMA,
        "the token axis before the head axis",
    ),
    # ---------------------------------------------------------------- d2l
    "d2l_sequence_mask_minus_1e6": (
        "padding_mask",
        """
def padding_mask(lengths, seq_len):
    n = np.asarray(lengths)
    out = np.zeros((n.size, seq_len))
    out[~(np.arange(seq_len)[None, :] < n.reshape(-1)[:, None])] = -1e6
    return out.reshape(n.shape + (1, seq_len))
""",
        D2L,
        "blocks with -1e6, a large finite",
    ),
    "d2l_transpose_qkv": (
        "split_heads",
        """
def split_heads(M, n_heads):
    X = M.reshape(M.shape[0], M.shape[1], n_heads, -1).transpose(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])
""",
        D2L,
        "takes the first two axes as (B, T)",
    ),
    "d2l_transpose_output": (
        "merge_heads",
        """
def merge_heads(H):
    X = H.reshape(-1, H.shape[-3], H.shape[-2], H.shape[-1]).transpose(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)
""",
        D2L,
        "an extra axis 0 of size 1",
    ),
    "d2l_softmax": ("softmax", _SHIFTED + "softmax = _sm\n", D2L, "entirely −∞ (fully masked)"),
    # ---------------------------------------------------------------- transformers
    "hf_rotate_half": (
        "rotary_embedding",
        """
def rotary_embedding(X, positions=None, base=10000.0):
    d = X.shape[-1]
    p = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    f = p[..., None] * (1.0 / base ** (np.arange(0, d, 2) / d))
    ang = np.concatenate((f, f), axis=-1)
    swapped = np.concatenate((-X[..., d // 2 :], X[..., : d // 2]), axis=-1)
    return X * np.cos(ang) + swapped * np.sin(ang)
""",
        HF,
        "the GPT-NeoX layout",
    ),
    "hf_repeat_kv_no_check": (
        "grouped_query_attention",
        """
def grouped_query_attention(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    g = n_heads // n_kv_heads
    q = mh.split_heads(X @ W_q, n_heads)
    k, v = (mh.split_heads(X @ W, n_kv_heads) for W in (W_k, W_v))
    k, v = (np.broadcast_to(a[..., :, None, :, :], a.shape[:-2] + (g,) + a.shape[-2:])
            .reshape(q.shape[:-2] + a.shape[-2:]) for a in (k, v))
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    if mask is not None:
        s = s + (np.expand_dims(mask, -3) if 2 < np.ndim(mask) <= X.ndim else mask)
    A = mh.softmax(s)
    return mh.merge_heads(A @ v) @ W_o, A
""",
        HF,
        "not from a check of its own",
    ),
    "hf_sliding_boolean": (
        "sliding_window_mask",
        """
def sliding_window_mask(seq_len, window):
    i, j = np.arange(seq_len)[:, None], np.arange(seq_len)[None, :]
    return (j <= i) & (j > i - window)
""",
        HF_MASKS,
        "not True/False",
    ),
    "hf_sliding_finfo_min": (
        "sliding_window_mask",
        """
def sliding_window_mask(seq_len, window):
    i, j = np.arange(seq_len)[:, None], np.arange(seq_len)[None, :]
    return np.where((j <= i) & (j > i - window), 0.0, np.finfo(np.float64).min)
""",
        HF_MASKS,
        "a large finite number",
    ),
    # ---------------------------------------------------------------- mistral
    "mistral_banded_log": (
        "sliding_window_mask",
        """
def sliding_window_mask(seq_len, window):
    band = np.triu(np.tril(np.ones((seq_len, seq_len))), k=-window)
    return np.log(band)
""",
        MISTRAL,
        "off by one: query i also sees key i − window",
    ),
    "mistral_banded_log_quiet": (
        "sliding_window_mask",
        """
def sliding_window_mask(seq_len, window):
    band = np.triu(np.tril(np.ones((seq_len, seq_len))), k=-window)
    with np.errstate(divide="ignore"):
        return np.log(band)
""",
        MISTRAL,
        "off by one: query i also sees key i − window",
    ),
    # ---------------------------------------------------------------- others
    "cs336_flash_no_causal": (
        "tiled_attention",
        """
def tiled_attention(Q, K, V, block_size, causal=False):
    out = np.zeros(Q.shape[:-1] + (V.shape[-1],))
    for a in range(0, Q.shape[-2], block_size):
        q = Q[..., a : a + block_size, :] * Q.shape[-1] ** -0.5
        m = np.full(q.shape[:-1], -np.inf)
        s = np.zeros(q.shape[:-1])
        acc = np.zeros(q.shape[:-1] + (V.shape[-1],))
        for b in range(0, K.shape[-2], block_size):
            z = q @ np.swapaxes(K[..., b : b + block_size, :], -1, -2)
            new = np.maximum(m, z.max(axis=-1))
            p = np.exp(z - new[..., None])
            fix = np.exp(m - new)
            s = s * fix + p.sum(axis=-1)
            acc = acc * fix[..., None] + p @ V[..., b : b + block_size, :]
            m = new
        out[..., a : a + block_size, :] = acc / s[..., None]
    return out
""",
        CS336,
        "causal=True is ignored",
    ),
    "tensortonic_mhsa_one_batch_axis": (
        "multi_head_self_attention",
        _SHIFTED
        + """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    b, t, d = X.shape
    q, k, v = ((X @ W).reshape(b, t, n_heads, d // n_heads).transpose(0, 2, 1, 3)
               for W in (W_q, W_k, W_v))
    A = _sm(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // n_heads))
    return (A @ v).transpose(0, 2, 1, 3).reshape(b, t, d) @ W_o, A
""",
        TENSORTONIC,
        "B, T, d = X.shape assumes one batch axis",
    ),
    "swb_mhsa_multiplied_tril": (
        "multi_head_self_attention",
        """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    *lead, t, d = X.shape
    q, k, v = (np.einsum("...wm,mo->...wo", X, W).reshape((*lead, n_heads, t, -1))
               for W in (W_q, W_k, W_v))
    e = np.exp(np.einsum("...nd,...od->...no", q, k) / np.sqrt(d / n_heads))
    e = e * np.tril(np.ones_like(e))
    e = e / e.sum(axis=-1, keepdims=True)
    return np.einsum("...ij,...jk->...ik", e, v).reshape((*lead, t, -1)) @ W_o, e
""",
        SWB,
        "never a causal mask of your own",
    ),
    "apovalov_heads_stacked_on_rows": (
        "multi_head_self_attention",
        _SHIFTED
        + """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    n = X.shape[0]
    q, k, v = (np.concatenate(np.split(X @ W, n_heads, axis=-1), axis=0)
               for W in (W_q, W_k, W_v))
    fut = (1 - np.tri(n)) * -1e10
    A = [_sm(q[i * n:(i + 1) * n] @ k[i * n:(i + 1) * n].T / np.sqrt(q.shape[-1]) + fut)
         for i in range(n_heads)]
    out = np.concatenate([a @ v[i * n:(i + 1) * n] for i, a in enumerate(A)], axis=-1)
    return out @ W_o, np.array(A)
""",
        APOVALOV,
        "never a causal mask of your own",
    ),
}
