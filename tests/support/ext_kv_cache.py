"""decode_step's answers (extension 13): a template with placeholders, slips that change it
in one place each, right answers written unusually, and contract breaches."""

from tests.support.extensions import Extension

NAME = "decode_step"

DECODE = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    if x.shape[-1] % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {{x.shape[-1]}} and {{n_heads}}.")
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    {before}
    if cache is None:
        K, V = k, v
    else:
        K, V = {grow}
    mask = {mask}
    Z = q @ np.swapaxes(K, -1, -2) / np.sqrt({scale})
    A = mh.softmax(Z if mask is None else Z + mask)
    y = mh.merge_heads(A @ V)[..., 0, :]{proj}
    return y, {cache}
"""
RIGHT = {
    "before": "",
    "grow": "np.concatenate([cache[0], k], axis=-2), np.concatenate([cache[1], v], axis=-2)",
    "mask": "None",
    "scale": "q.shape[-1]",
    "proj": " @ W_o",
    "cache": "(K, V)",
}


def decode(**changes) -> str:
    return DECODE.format(**{**RIGHT, **changes})


UNSPLIT_CACHE = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    if x.shape[-1] % n_heads:
        raise ValueError(f"n_heads must divide d_model, but got {x.shape[-1]} and {n_heads}.")
    row = x[..., None, :]
    k_row, v_row = row @ W_k, row @ W_v  # (..., 1, d_model): cached before splitting
    K_all = k_row if cache is None else np.concatenate([cache[0], k_row], axis=-2)
    V_all = v_row if cache is None else np.concatenate([cache[1], v_row], axis=-2)
    q = mh.split_heads(row @ W_q, n_heads)
    out, _ = mh.attention_head(q, mh.split_heads(K_all, n_heads), mh.split_heads(V_all, n_heads))
    return mh.merge_heads(out)[..., 0, :] @ W_o, (K_all, V_all)
"""

LOOP = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    {guard}
    d_k = d_model // n_heads
    outs, Ks, Vs = [], [], []
    for i in range(n_heads):  # one head at a time
        cols = slice(i * d_k, (i + 1) * d_k)
        q = x @ W_q[:, cols]
        k = (x @ W_k[:, cols])[..., None, :]
        v = (x @ W_v[:, cols])[..., None, :]
        if cache is not None:
            k = np.concatenate([cache[0][..., i, :, :], k], axis=-2)
            v = np.concatenate([cache[1][..., i, :, :], v], axis=-2)
        z = np.einsum("...d,...td->...t", q, k) / np.sqrt(d_k)
        w = np.exp(z - z.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        outs.append(np.einsum("...t,...td->...d", w, v))
        Ks.append(k)
        Vs.append(v)
    heads = np.concatenate(outs, axis=-1)  # (..., n_heads * d_k)
    return heads @ W_o[: n_heads * d_k], [np.stack(Ks, axis=-3), np.stack(Vs, axis=-3)]
"""
GUARD = (
    "if d_model % n_heads:\n"
    '        raise ValueError(f"{n_heads} heads do not divide d_model = {d_model}.")'
)

EINSUM = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    d_model = x.shape[-1]
    if d_model % n_heads:
        raise ValueError("n_heads must divide d_model.")
    d_k = d_model // n_heads
    split = lambda M: M.reshape(*M.shape[:-1], n_heads, 1, d_k)  # (..., h, 1, d_k)
    q, k, v = split(x @ W_q), split(x @ W_k), split(x @ W_v)
    if cache is not None:
        k = np.concatenate((cache[0], k), axis=-2)
        v = np.concatenate((cache[1], v), axis=-2)
    z = np.einsum("...hqd,...hkd->...hqk", q, k) / np.sqrt(d_k)
    w = np.exp(z - z.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    heads = np.einsum("...hqk,...hkd->...hqd", w, v)[..., 0, :]  # (..., h, d_k)
    return heads.reshape(*heads.shape[:-2], d_model) @ W_o, [k, v]
"""


MISTAKES = {
    "prepended": (
        decode(
            grow="np.concatenate([k, cache[0]], axis=-2), np.concatenate([v, cache[1]], axis=-2)"
        ),
        "put in front of the cache",
    ),
    "not grown": (decode(grow="k, v"), "the cache does not grow"),
    "first row of a causal mask": (
        decode(mask="mh.causal_mask(K.shape[-2])[:1]"),
        "attends only to the first position",
    ),
    "mask blocks itself": (
        decode(mask="np.where(np.arange(K.shape[-2]) < K.shape[-2] - 1, 0.0, -np.inf)"),
        "does not attend to itself",
    ),
    "sqrt d_model": (decode(scale="x.shape[-1]"), "divided by √d_model = √4"),
    "not scaled": (decode(scale="1.0"), "the scores are not scaled"),
    "no W_O": (decode(proj=""), "W_O is missing"),
    "(V, K)": (decode(cache="(V, K)"), "returned as (V', K')"),
    "unsplit cache": (UNSPLIT_CACHE, "before splitting into heads"),
}


EXTENSION = Extension(
    NAME,
    right=decode(),
    mistakes=MISTAKES,
    variants={
        "one head at a time, lists": LOOP.format(guard=GUARD),
        "einsum": EINSUM,
        "a list of lists": decode(cache="[K, V]]").replace("return y,", "return [y,"),
    },
    breaches={
        "the token modified in place": (
            decode(before="x *= 1.0\n    x += 1e-3"),
            ("modified an input in place",),
        ),
        # its own softmax, without the max shift's guard: -inf - -inf on the first step
        "a warning": (
            decode(mask="np.where(np.arange(K.shape[-2]) < K.shape[-2] - 1, 0.0, -np.inf)").replace(
                "A = mh.softmax(Z if mask is None else Z + mask)",
                "Z = Z + mask\n    A = np.exp(Z - Z.max(axis=-1, keepdims=True))\n"
                "    A = A / A.sum(axis=-1, keepdims=True)",
            ),
            ("warning counts as an error",),
        ),
        "no ValueError": (LOOP.format(guard=""), ("should raise ValueError", "n_heads = 3")),
        "a ValueError without a message": (
            decode().replace('raise ValueError(f"', 'raise ValueError()  # "'),
            ("without a message",),
        ),
    },
)
