"""Answers for the live widgets of notebooks 13 and 14: right ones and one-slip ones."""

from tests.support.ext_tiled import tiled

DECODE = """
def decode_step(x, cache, W_q, W_k, W_v, W_o, n_heads):
    row = x[..., None, :]
    q, k, v = (mh.split_heads(row @ W, n_heads) for W in (W_q, W_k, W_v))
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=-2)
        v = np.concatenate([cache[1], v], axis=-2)
    out, _ = mh.attention_head(q, k, v)
    return mh.merge_heads(out)[..., 0, :] @ W_o, (k, v)
"""


PREPENDING = DECODE.replace("[cache[0], k]", "[k, cache[0]]").replace(
    "[cache[1], v]", "[v, cache[1]]"
)


#: The extension's right tiled attention, and one whose running sum is not rescaled.
TILED = tiled()
NOT_RESCALED = tiled(l_old="l")
