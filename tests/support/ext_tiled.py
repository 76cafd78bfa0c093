"""tiled_attention's answers (extension 14): a template with placeholders, slips that change
it in one place each, right answers written unusually, and contract breaches."""

from tests.support.extensions import Extension

NAME = "tiled_attention"

TILED = """
def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {{block_size}}.")
    T_q, d_k = Q.shape[-2:]
    T_k = K.shape[-2]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full((*lead, T_q, 1), -np.inf)
    l = np.zeros((*lead, T_q, 1))
    O = np.zeros((*lead, T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    {before}
    for s in range({blocks}):
        e = min(s + block_size, T_k)
        S = Q @ np.swapaxes(K[..., s:e, :], -1, -2) / {scale}
        if causal:
            S = np.where({blocked}, -np.inf, S)
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        shift = np.where(np.isneginf(m_new), 0.0, m_new)
        P = np.exp({exp})
        r = np.exp(m - shift)
        {after}
        l = {l_old} + P.sum(axis=-1, keepdims=True)
        O = {O_old} + P @ V[..., s:e, :]
        m = m_new
    return np.divide(O, l, out=np.zeros_like(O), where=l > 0)
"""
RIGHT = {
    "before": "",
    "blocks": "0, T_k, block_size",
    "scale": "np.sqrt(d_k)",
    "blocked": "np.arange(s, e) > rows",
    "exp": "S - shift",
    "after": "",
    "l_old": "l * r",
    "O_old": "O * r",
}


def tiled(**changes) -> str:
    return TILED.format(**{**RIGHT, **changes})


NO_SHIFT = """
def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    l, O = 0.0, 0.0
    for s in range(0, T_k, block_size):
        S = Q @ np.swapaxes(K[..., s : s + block_size, :], -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.arange(s, min(s + block_size, T_k)) > np.arange(T_q)[:, None],
                         -np.inf, S)
        P = np.exp(S)  # no running max: the sums need no rescaling
        l = l + P.sum(axis=-1, keepdims=True)
        O = O + P @ V[..., s : s + block_size, :]
    return O / l
"""

FULL_MATRIX = """
def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, but got {block_size}.")
    mask = mh.causal_mask(Q.shape[-2]) if causal else 0.0
    A = mh.softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + mask)  # (T_q, T_k)
    return A @ V
"""

LOOPS = """
def tiled_attention(Q, K, V, block_size, causal=False):
    if block_size < 1:
        raise ValueError("block_size must be a positive int.")
    T_q, d_k = Q.shape[-2:]
    T_k, d_v = K.shape[-2], V.shape[-1]
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    Q, K, V = (np.broadcast_to(M, (*lead, *M.shape[-2:])) for M in (Q, K, V))
    out = np.zeros((*lead, T_q, d_v))
    for idx in np.ndindex(*lead):  # one batch element at a time
        q_all, k_all, v_all = Q[idx], K[idx], V[idx]
        m = np.full(T_q, -np.inf)
        l = np.zeros(T_q)
        acc = np.zeros((T_q, d_v))
        for s in range(0, T_k, block_size):
            k, v = k_all[s : s + block_size], v_all[s : s + block_size]
            S = np.einsum("qd,kd->qk", q_all, k) / np.sqrt(d_k)
            if causal:
                j = s + np.arange(len(k))
                S[j[None, :] > np.arange(T_q)[:, None]] = -np.inf
            m_new = np.maximum(m, S.max(axis=1))
            safe = np.where(np.isinf(m_new), 0.0, m_new)
            P = np.exp(S - safe[:, None])
            r = np.exp(m - safe)
            l = l * r + P.sum(axis=1)
            acc = acc * r[:, None] + np.einsum("qk,kv->qv", P, v)
            m = m_new
        out[idx] = acc / np.where(l > 0, l, 1.0)[:, None]
    return out
"""


MISTAKES = {
    "sum not rescaled": (tiled(l_old="l"), "the running sum ℓ is not rescaled"),
    "output not rescaled": (tiled(O_old="O"), "the running output O is not rescaled"),
    "neither rescaled": (tiled(l_old="l", O_old="O"), "neither the running sum nor"),
    "no max shift": (NO_SHIFT, "not shifted by the running maximum"),
    "diagonal blocked": (tiled(blocked="np.arange(s, e) >= rows"), "also blocks the diagonal"),
    "one key ahead": (tiled(blocked="np.arange(s, e) > rows + 1"), "see the next key too"),
    "index within the block": (tiled(blocked="np.arange(e - s) > rows"), "inside its block"),
    "causal ignored": (tiled(blocked="False"), "causal=True is ignored"),
    "last block skipped": (
        tiled(blocks="0, T_k - T_k % block_size, block_size"),
        "the last, shorter block of keys is skipped",
    ),
    "not scaled": (tiled(scale="1.0"), "the scores are not scaled"),
}


EINSUM = tiled().replace(
    "Q @ np.swapaxes(K[..., s:e, :], -1, -2)", "np.einsum('...qd,...kd->...qk', Q, K[..., s:e, :])"
)


def _no_value_error() -> str:
    source = tiled(before="block_size = max(block_size, 1)  # at least one key per block")
    return source.replace("block_size < 1", "block_size < 0")


EXTENSION = Extension(
    NAME,
    right=tiled(),
    mistakes=MISTAKES,
    variants={"explicit loops": LOOPS, "einsum": EINSUM},
    breaches={
        "Q modified in place": (
            tiled(before="Q /= np.sqrt(d_k)  # scale the queries once", scale="1.0"),
            ("modified an input in place",),
        ),
        # correct values, but log-weights taken for a print: log(0) where the mask blocks
        "a warning": (
            tiled(after="logw = np.log(P)  # debugging"),
            ("warning counts as an error", "divide by zero"),
        ),
        "no ValueError": (_no_value_error(), ("should raise ValueError for block_size = 0",)),
    },
)
