"""sliding_window_mask's answers (extension 16): a template with placeholders, the
catalogue's slips written as a learner would, right answers written unusually, and a contract
breach."""

from mhsa_helpers.checks import step16_sliding_window as sw
from tests.support.extensions import Extension

NAME = "sliding_window_mask"

TEMPLATE = """
def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError(f"window must be at least 1, but got {window}.")
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    keep = KEEP
    return RESULT
"""
RIGHT = {"KEEP": "(j <= i) & (j > i - window)", "RESULT": "np.where(keep, 0.0, -np.inf)"}


def source(**edits) -> str:
    text = TEMPLATE
    for key, value in {**RIGHT, **edits}.items():
        text = text.replace(key, value)
    return text


BUGGY = {
    "window_plus_one": (source(KEEP="(j <= i) & (i - window <= j)"), sw.ONE_TOO_MANY),
    "window_minus_one": (source(KEEP="(j <= i) & (j > i - window + 1)"), sw.ONE_TOO_FEW),
    "symmetric_band": (source(KEEP="np.abs(i - j) < window"), sw.NOT_CAUSAL),
    "looks_ahead": (source(KEEP="(i <= j) & (i > j - window)"), sw.LOOKS_AHEAD),
    "boolean": (source(RESULT="keep"), sw.BOOLEAN),
    "boolean_blocked": (source(RESULT="~keep"), sw.BOOLEAN),
    "large_finite": (source(RESULT="np.where(keep, 0.0, -1e9)"), "a large finite number"),
    "other_large_finite": (
        source(RESULT="np.where(keep, 0.0, np.finfo(float).min)"),
        "a large finite number",
    ),
    "zero_one": (source(RESULT="(~keep).astype(float)"), sw.ZERO_ONE),
    "one_zero": (source(RESULT="keep.astype(float)"), sw.ZERO_ONE),
}


CORRECT = {
    "float32": source(RESULT="np.where(keep, np.float32(0), np.float32(-np.inf))"),
    "tril_triu": """
def sliding_window_mask(seq_len, window):
    if window <= 0:
        raise ValueError("the window must hold at least the token itself (window >= 1)")
    ones = np.ones((seq_len, seq_len), dtype=bool)
    keep = np.tril(ones) & np.triu(ones, -(window - 1))
    M = np.full((seq_len, seq_len), -np.inf)
    M[keep] = 0.0
    return M
""",
    "explicit_loops": """
def sliding_window_mask(seq_len, window):
    if not window >= 1:
        raise ValueError(f"window={window}: it should be a positive integer")
    M = [[-np.inf] * seq_len for _ in range(seq_len)]
    for i in range(seq_len):
        for j in range(max(0, i - window + 1), i + 1):
            M[i][j] = 0.0
    return np.array(M)
""",
    "causal_plus_band": """
def sliding_window_mask(seq_len, window):
    if window < 1:
        raise ValueError("window must be >= 1")
    i, j = np.indices((seq_len, seq_len))
    causal = np.where(j > i, -np.inf, 0.0)
    return np.where(i - j >= window, -np.inf, causal)
""",
}

EXTENSION = Extension(
    NAME,
    right=source(),
    mistakes=BUGGY,
    variants=CORRECT,
    breaches={
        "no ValueError": (
            source().replace("if window < 1:", "if False:"),
            ("should raise ValueError for window = 0",),
        ),
    },
)
