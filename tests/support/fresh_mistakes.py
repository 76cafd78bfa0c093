"""Learner mistakes written fresh, without reading the checks (issue 23), and what each is told.

Each entry: notebook stem, the function's name, the answer cell's source, and a piece
of the sentence the visible check must say. They were written by someone who had read
only the course's text and contract; each sentence was read and judged to name the
actual slip. Used in-process by tests/test_checks.py and through real nbgrader and
grading kernels by tests/test_course.py. ``FRESH`` holds them all: the course's here,
the extensions' (:mod:`tests.support.fresh_extensions`), the backward pass's
(:mod:`tests.support.fresh_backward`) and issue 33's (:mod:`tests.support.named_slips`,
:mod:`tests.support.round2_slips`), issue 47's and issue 51's
(:mod:`tests.support.slips51`); the right answers are in :mod:`tests.support.fresh_correct`.
"""

from tests.support.answer_parts import HELPERS, SOFTMAX_ROWS
from tests.support.fresh_backward import FRESH_BACKWARD
from tests.support.fresh_extensions import FRESH_EXTENSIONS
from tests.support.named_slips import NAMED
from tests.support.round2_slips import ROUND2
from tests.support.slips47_back import SLIPS47_BACK
from tests.support.slips47_core import SLIPS47_CORE
from tests.support.slips47_ext import SLIPS47_EXT
from tests.support.slips47_real import SLIPS47_REAL
from tests.support.slips51 import SLIPS51

FRESH = {
    # Concatenates each next head on the left of the result instead of the right, so the heads
    # come out in reversed order (head h-1 in the first d_k columns, head 0 in the last).
    "merge_heads_reversed_head_order": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    out = H[..., 0, :, :]
    for i in range(1, H.shape[-3]):
        out = np.concatenate([H[..., i, :, :], out], axis=-1)  # add the next head
    return out
""",
        "merged in reverse order",
    ),
    # Multiplies the concatenated heads by W_o.T instead of W_o (output projection transposed).
    "multi_head_self_attention_W_o_transposed": (
        "09_multi_head",
        "multi_head_self_attention",
        HELPERS
        + """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    d_k = Qh.shape[-1]
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o.T, A
""",
        "W_O is transposed",
    ),
    # Puts all the sines in the first half of the columns and all the cosines in the second half
    # instead of interleaving them (sin in column 2i, cos in column 2i+1), and loses the last
    # column when d_model is odd.
    "positional_encoding_sin_cos_halves": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    i = np.arange(d_model // 2)[None, :]
    angle = pos / 10000 ** (2 * i / d_model)
    # sines in the first half, cosines in the second half
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=-1)
""",
        "laid out in two halves",
    ),
    # Subtracts the global maximum of the whole array instead of each row's maximum, so a row
    # whose scores are far below the global maximum underflows to all zeros.
    "softmax_global_max": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    E = np.exp(Z - np.max(Z))  # subtract the max for stability
    s = E.sum(axis=axis, keepdims=True)
    return E / np.where(s > 0, s, 1.0)
""",
        "the maximum of all of Z",
    ),
    # Uses K.T, which reverses all axes of a batched K instead of swapping only the last two, so
    # it fails (or is wrong) as soon as there are batch axes.
    "attention_scores_K_dot_T": (
        "05_scores",
        "attention_scores",
        """def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return Q @ K.T / np.sqrt(d_k)
""",
        "not M.T (which reverses every axis",
    ),
    # Hard-codes transpose(1, 0, 2), which only works for a 2-D (T, d_model) input and fails as
    # soon as there is a batch axis.
    "split_heads_hardcoded_transpose": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    T, d_model = M.shape[-2], M.shape[-1]
    d_k = d_model // n_heads
    return M.reshape(*M.shape[:-1], n_heads, d_k).transpose(1, 0, 2)
""",
        "not M.transpose(1, 0, 2)",
    ),
    # Hard-codes transpose(1, 0, 2) and reshape(T, h*d_k) for a single (h, T, d_k) array, so it
    # fails with batch axes.
    "merge_heads_hardcoded_transpose": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    h, T, d_k = H.shape[-3:]
    return H.transpose(1, 0, 2).reshape(T, h * d_k)
""",
        "not M.transpose(1, 0, 2)",
    ),
    # Uses the He/Kaiming bound sqrt(6/d_in) instead of Glorot's sqrt(6/(d_in + d_out)), so the
    # range is too wide.
    "init_weights_fan_in_only": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    a = np.sqrt(6 / d_in)  # He/Kaiming-uniform bound
    return rng.uniform(-a, a, size=(d_in, d_out))
""",
        "sqrt(6 / d_in)",
    ),
    # Casts Q, K, V to float32 'for speed', so float64 inputs come back with float32 precision
    # (errors around 1e-7).
    "attention_head_float32_compute": (
        "08_head_output",
        "attention_head",
        SOFTMAX_ROWS
        + """def attention_head(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))  # faster
    Z = Q @ np.swapaxes(K, -1, -2) / np.float32(np.sqrt(Q.shape[-1]))
    if mask is not None:
        Z = Z + np.asarray(mask, dtype=np.float32)
    A = _softmax_rows(Z)
    return A @ V, A
""",
        "the attention weights come out as float32 from float64 inputs",
    ),
    # Casts everything to float32 to save memory, so float64 inputs lose precision (errors around
    # 1e-7 instead of 1e-15).
    "project_qkv_float32_compute": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    X32 = np.asarray(X, dtype=np.float32)  # save memory
    return tuple(X32 @ np.asarray(W, dtype=np.float32) for W in (W_q, W_k, W_v))
""",
        "comes out as float32 from float64 inputs",
    ),
    # Adds a batched mask (B, T, T) or (B, 1, T) to the scores (B, h, T, T) without inserting a
    # head axis, so the mask's batch axis lines up with the head axis (wrong or a broadcast
    # error).
    "multi_head_self_attention_mask_without_head_axis": (
        "09_multi_head",
        "multi_head_self_attention",
        HELPERS
        + """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    d_k = Qh.shape[-1]
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "no head axis",
    ),
    # Adds a batched mask to the (..., h, T, T) scores without inserting a head axis, so the
    # mask's batch axis lines up with the head axis.
    "multi_query_attention_mask_without_head_axis": (
        "10_capstone",
        "multi_query_attention",
        HELPERS
        + """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = _split(X @ W_q, n_heads)
    K = (X @ W_k)[..., None, :, :]
    V = (X @ W_v)[..., None, :, :]
    Z = Qh @ np.swapaxes(K, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ V) @ W_o, A
""",
        "no head axis",
    ),
    # Uses true division d_model / n_heads, so the multi-query count is a float (e.g. 64.0)
    # instead of an int.
    "kv_cache_size_float_division": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    if multi_query:
        return 2 * seq_len * d_model / n_heads
    return 2 * seq_len * d_model
""",
        "whole number (an int)",
    ),
    # Works in place on the caller's array (Z -= m, np.exp(Z, out=Z)), so the scores passed in are
    # overwritten by the weights.
    "softmax_modifies_input": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    m = np.max(Z, axis=axis, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    Z -= m              # in place, saves a copy
    np.exp(Z, out=Z)
    s = Z.sum(axis=axis, keepdims=True)
    s[s == 0] = 1.0
    Z /= s
    return Z
""",
        "modified an input in place",
    ),
    # Scales Q in place (Q /= sqrt(d_k)), which overwrites the caller's queries, so a second call
    # with the same Q gives different scores.
    "attention_head_scales_Q_in_place": (
        "08_head_output",
        "attention_head",
        SOFTMAX_ROWS
        + """def attention_head(Q, K, V, mask=None):
    Q /= np.sqrt(Q.shape[-1])  # cheaper to scale Q than the T x T scores
    Z = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        Z = Z + mask
    A = _softmax_rows(Z)
    return A @ V, A
""",
        "modified an input in place",
    ),
    # Does not handle a row that is entirely -inf: -inf - (-inf) is NaN (with a RuntimeWarning)
    # instead of a row of zeros.
    "softmax_nan_on_masked_row": (
        "07_softmax",
        "softmax",
        """def softmax(Z, axis=-1):
    m = np.max(Z, axis=axis, keepdims=True)
    E = np.exp(Z - m)
    return E / E.sum(axis=axis, keepdims=True)
""",
        "entirely −∞ (fully masked) gives NaN",
    ),
    # Assumes d_model is even: for odd d_model there is one fewer cosine column than sine columns,
    # so the assignment fails with a broadcast error.
    "positional_encoding_odd_d_model_breaks": (
        "01_input",
        "positional_encoding",
        """def positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    two_i = np.arange(0, d_model, 2)[None, :]
    angle = pos / 10000 ** (two_i / d_model)
    PE = np.zeros((seq_len, d_model))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle)  # assumes as many cosine columns as sine columns
    return PE
""",
        "an odd d_model = 5 must work too",
    ),
    # Multiplies a 0/1 matrix by -inf, and 0 * -inf is NaN (with a RuntimeWarning), so the allowed
    # positions become NaN instead of 0.
    "causal_mask_ones_times_inf": (
        "06_masking",
        "causal_mask",
        """def causal_mask(seq_len):
    return np.triu(np.ones((seq_len, seq_len)), k=1) * -np.inf
""",
        "0 · (−∞) is NaN",
    ),
    # Indexes lengths[:, None, None], which assumes a 1-D array of lengths: a single int length
    # raises an IndexError and a 2-D array of lengths gives the wrong shape.
    "padding_mask_int_lengths_fail": (
        "06_masking",
        "padding_mask",
        """def padding_mask(lengths, seq_len):
    lengths = np.asarray(lengths)
    j = np.arange(seq_len)
    return np.where(j >= lengths[:, None, None], -np.inf, 0.0)
""",
        "lengths may be a single int",
    ),
    # Copy-paste slip: computes the shared values with W_k instead of W_v (the weights are right,
    # the output is not).
    "multi_query_attention_values_from_W_k": (
        "10_capstone",
        "multi_query_attention",
        HELPERS
        + """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = _split(X @ W_q, n_heads)
    K = (X @ W_k)[..., None, :, :]
    V = (X @ W_k)[..., None, :, :]
    Z = Qh @ np.swapaxes(K, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ V) @ W_o, A
""",
        "the shared values are computed with W_k",
    ),
    # Treats it like multi-head attention and splits the single shared K/V head (width d_k) into
    # n_heads pieces, which do not match the queries' d_k (fails unless n_heads = 1).
    "multi_query_attention_splits_shared_kv": (
        "10_capstone",
        "multi_query_attention",
        HELPERS
        + """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (_split(X @ W, n_heads) for W in (W_q, W_k, W_v))
    Z = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ Vh) @ W_o, A
""",
        "one shared head of width d_k",
    ),
    # Does not give the shared K and V a head axis of size 1, which broadcasts correctly only
    # without batch axes; with a batch axis K's batch lines up with the query heads.
    "multi_query_attention_kv_without_head_axis": (
        "10_capstone",
        "multi_query_attention",
        HELPERS
        + """def multi_query_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh = _split(X @ W_q, n_heads)  # (..., h, T, d_k)
    K = X @ W_k  # (..., T, d_k), broadcasts over the heads
    V = X @ W_v
    Z = Qh @ np.swapaxes(K, -1, -2) / np.sqrt(Qh.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim > 2:
            mask = np.expand_dims(mask, -3)
        Z = Z + mask
    A = _softmax_rows(Z)
    return _merge(A @ V) @ W_o, A
""",
        "one shared head of width d_k",
    ),
    # Counts d_model numbers per head per token instead of d_k, so multi-head is n_heads times too
    # big and multi-query is counted as 2*T*d_model.
    "kv_cache_size_times_heads": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    kv_heads = 1 if multi_query else n_heads
    return 2 * seq_len * d_model * kv_heads
""",
        "n_heads = 3 times too many",
    ),
    # Counts the queries as cached too (factor 3 for Q, K, V) although only K and V are cached.
    "kv_cache_size_caches_queries_too": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    width = d_model // n_heads if multi_query else d_model
    return 3 * seq_len * width  # Q, K and V
""",
        "Only K and V are cached",
    ),
    # Ignores the multi_query flag and always returns the multi-head count 2*T*d_model.
    "kv_cache_size_ignores_multi_query": (
        "10_capstone",
        "kv_cache_size",
        """def kv_cache_size(seq_len, d_model, n_heads, multi_query=False):
    d_k = d_model // n_heads
    return 2 * seq_len * d_k * n_heads
""",
        "each token caches 2·d_k numbers",
    ),
    # Relies on np.concatenate iterating over the first axis, which is the head axis only for a
    # 3-D (h, T, d_k) input; with a batch axis it concatenates the batch elements instead.
    "merge_heads_concatenate_first_axis": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    return np.concatenate(H, axis=-1)
""",
        "splits H along its first axis, which holds the heads only without batch axes",
    ),
    # Moves the head axis to the end, (..., T, d_k, h), before reshaping, so the heads' columns
    # come out interleaved (column c from head c % h) instead of side by side.
    "merge_heads_heads_interleaved": (
        "04_heads",
        "merge_heads",
        """def merge_heads(H):
    *lead, h, T, d_k = H.shape
    return np.moveaxis(H, -3, -1).reshape(*lead, T, h * d_k)
""",
        "the heads' columns are interleaved",
    ),
    # Ported from a batch-first tutorial: unpacks B, T, d_model = X.shape and hard-codes 4-D
    # transposes, so it fails on a plain (T, d_model) input and on two batch axes.
    "ported_multi_head_self_attention_batch_first": (
        "09_multi_head",
        "multi_head_self_attention",
        """def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    B, T, d_model = X.shape  # batch-first, as in the tutorial
    d_k = d_model // n_heads

    def split(M):
        return M.reshape(B, T, n_heads, d_k).transpose(0, 2, 1, 3)

    Q, K, V = split(X @ W_q), split(X @ W_k), split(X @ W_v)
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim == 3:
            mask = mask[:, None]
        scores = scores + mask
    m = scores.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(scores - m)
    s = e.sum(axis=-1, keepdims=True)
    A = e / np.where(s > 0, s, 1.0)
    out = (A @ V).transpose(0, 2, 1, 3).reshape(B, T, d_model)
    return out @ W_o, A
""",
        "fails on an input without batch axes",
    ),
    # Computes d_k with true division (d_model / n_heads), a float that reshape refuses
    # (TypeError), instead of integer division //.
    "split_heads_float_d_k": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    *lead, T, d_model = M.shape
    d_k = d_model / n_heads
    return M.reshape(*lead, T, n_heads, d_k).swapaxes(-2, -3)
""",
        "use // for sizes",
    ),
    # Writes the einsum for a single (T, d_model) matrix ('td,de->te'), so it fails on inputs with
    # leading batch axes.
    "project_qkv_einsum_2d_only": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    Q = np.einsum("td,de->te", X, W_q)
    K = np.einsum("td,de->te", X, W_k)
    V = np.einsum("td,de->te", X, W_v)
    return Q, K, V
""",
        "with '...' for the batch axes",
    ),
    # Ported from PyTorch's F.linear convention: multiplies by the transposed weights (X @ W.T)
    # although the course's weights act on the right (X @ W).
    "ported_project_qkv_torch_linear": (
        "03_qkv",
        "project_qkv",
        """def project_qkv(X, W_q, W_k, W_v):
    # F.linear(x, W) = x @ W.T
    return X @ W_q.T, X @ W_k.T, X @ W_v.T
""",
        "Q = X @ W_q.T",
    ),
    # Ported from PyTorch's scaled_dot_product_attention: returns only the output instead of the
    # (output, weights) pair.
    "ported_attention_head_output_only": (
        "08_head_output",
        "attention_head",
        """def attention_head(Q, K, V, mask=None):
    # scaled_dot_product_attention returns only the output
    d_k = Q.shape[-1]
    Z = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        Z = Z + mask
    m = np.max(Z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(Z - m)
    s = E.sum(axis=-1, keepdims=True)
    A = E / np.where(s > 0, s, 1.0)
    return A @ V
""",
        "return a tuple (output, weights)",
    ),
    # Ported from a 'b t h d' (einops/TensorFlow) layout: leaves the head axis after the token
    # axis, (..., T, h, d_k), instead of before it, (..., h, T, d_k).
    "ported_split_heads_heads_after_T": (
        "04_heads",
        "split_heads",
        """def split_heads(M, n_heads):
    # "b t (h d) -> b t h d"
    *lead, T, d_model = M.shape
    return M.reshape(*lead, T, n_heads, d_model // n_heads)
""",
        "the head axis must come before the token axis",
    ),
    # Ported from PyTorch's nn.Linear: returns the weight in shape (d_out, d_in) instead of (d_in,
    # d_out) for weights that act on the right.
    "ported_init_weights_torch_shape": (
        "02_parameters",
        "init_weights",
        """def init_weights(d_in, d_out, rng):
    # like torch.nn.Linear: weight has shape (out_features, in_features)
    a = np.sqrt(6 / (d_in + d_out))
    return rng.uniform(-a, a, size=(d_out, d_in))
""",
        "W must be (d_in, d_out)",
    ),
}

FRESH |= FRESH_EXTENSIONS  # the extensions (11 to 16)
FRESH |= FRESH_BACKWARD  # the backward pass (17_backward)
FRESH |= NAMED  # issue 33's misnamed, wrongly failed and uncaught slips
FRESH |= ROUND2  # issue 33's second fresh round
FRESH |= SLIPS47_CORE | SLIPS47_EXT | SLIPS47_BACK | SLIPS47_REAL  # issue 47's
FRESH |= SLIPS51  # issue 51's (19_induction)

#: Those that also go through real nbgrader and grading kernels (tests/test_course.py): the
#: cases issue 23 lists and one slip per backward function; all of them are judged
#: in-process in tests/test_checks.py. (Each costs one notebook's run in the slow suite.)
THROUGH_KERNELS = (
    "merge_heads_reversed_head_order",
    "multi_head_self_attention_W_o_transposed",
    "tiled_attention_inverted_rescale",
    "cross_attention_causal_mask_added",
    "positional_encoding_sin_cos_halves",
    "softmax_global_max",
    "decode_step_cache_none_not_handled",
    "attention_scores_K_dot_T",
    "split_heads_hardcoded_transpose",
    "init_weights_fan_in_only",
    "attention_head_float32_compute",
    "multi_head_self_attention_mask_without_head_axis",
    "grouped_query_attention_mask_without_head_axis",
    "kv_cache_size_float_division",
    "grouped_query_attention_assert_not_valueerror",
    "tiled_attention_zero_block_size_zerodivision",
    "softmax_modifies_input",
    "attention_head_scales_Q_in_place",
    "backward_sb_no_rowsum",
    "backward_ah_dK_unscaled",
    "backward_mb_dWo_transposed",
)
