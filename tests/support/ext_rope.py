"""rotary_embedding's answers (extension 11): a template with placeholders, the catalogue's
slips written as a learner would, right answers written unusually, and contract breaches."""

from mhsa_helpers.checks import step11_rope as rope_check
from tests.support.extensions import Extension

NAME = "rotary_embedding"

#: A correct answer written with placeholders for the mistakes' edits.
TEMPLATE = """
def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X)
    d = X.shape[-1]
    if d % 2:
        raise ValueError(f"d must be even, but got d={d}.")
    pos = np.arange(X.shape[-2]) if positions is None else np.asarray(positions)
    theta = BASE ** (EXPONENT / d)
    angle = POS[..., None] * theta
    cos, sin = np.cos(angle), SIN
    x0, x1 = PAIRS
    y0 = x0 * cos - x1 * sin
    y1 = FIRST * sin + x1 * cos
    return JOIN
"""
RIGHT = {
    "BASE": "base",
    "EXPONENT": "-np.arange(0, d, 2)",
    "POS": "pos",
    "SIN": "np.sin(angle)",
    "PAIRS": "X[..., 0::2], X[..., 1::2]",
    "FIRST": "x0",
    "JOIN": "np.stack([y0, y1], axis=-1).reshape(X.shape)",
}


def source(**edits) -> str:
    text = TEMPLATE
    for key, value in {**RIGHT, **edits}.items():
        text = text.replace(key, value)
    return text


HALF = "np.concatenate([y0, y1], axis=-1)"
BUGGY = {
    "half_split": (
        source(PAIRS="X[..., : d // 2], X[..., d // 2 :]", JOIN=HALF),
        rope_check.HALF_SPLIT,
    ),
    "theta_from_i": (source(EXPONENT="-np.arange(0, d, 2) / 2"), rope_check.THETA_FROM_I),
    "clockwise": (source(SIN="-np.sin(angle)"), rope_check.CLOCKWISE),
    "positions_ignored": (source(POS="np.arange(X.shape[-2])"), rope_check.POSITIONS_IGNORED),
    "base_ignored": (source(BASE="10000.0"), rope_check.BASE_IGNORED),
    "exponent_sign": (source(EXPONENT="np.arange(0, d, 2)"), rope_check.EXPONENT_SIGN),
    "rotated_twice": (source(FIRST="y0"), rope_check.ROTATED_TWICE),
    "from_one": (
        source(POS="(np.arange(1, X.shape[-2] + 1) if positions is None else pos)"),
        rope_check.FROM_ONE,
    ),
}


CORRECT = {
    "float32_in_float32_out": source().replace(
        "    return ",
        "    dtype = np.result_type(X.dtype, np.float32)  # float32 kept, integers made floats\n"
        "    y0, y1 = y0.astype(dtype), y1.astype(dtype)\n    return ",
    ),
    "complex_numbers": """
def rotary_embedding(X, positions=None, base=10000.0):
    d = X.shape[-1]
    if d % 2 == 1:
        raise ValueError("the last axis must be even: RoPE rotates pairs of features")
    p = np.arange(X.shape[-2]) if positions is None else positions
    theta = np.power(float(base), -np.arange(d // 2) * 2.0 / d)
    z = (X[..., 0::2] + 1j * X[..., 1::2]) * np.exp(1j * np.multiply.outer(p, theta))
    return np.stack([z.real, z.imag], axis=-1).reshape(X.shape)
""",
    "explicit_loops": """
import math

def rotary_embedding(X, positions=None, base=10000.0):
    X = np.asarray(X)
    *lead, T, d = X.shape
    if d % 2:
        raise ValueError(f"d = {d} is odd; RoPE needs an even number of features")
    pos = np.broadcast_to(np.arange(T) if positions is None else positions, X.shape[:-1])
    out = np.zeros(X.shape)
    for idx in np.ndindex(*X.shape[:-1]):
        for i in range(d // 2):
            a = int(pos[idx]) * base ** (-2 * i / d)
            x0, x1 = X[idx + (2 * i,)], X[idx + (2 * i + 1,)]
            out[idx + (2 * i,)] = x0 * math.cos(a) - x1 * math.sin(a)
            out[idx + (2 * i + 1,)] = x0 * math.sin(a) + x1 * math.cos(a)
    return out
""",
    "rotation_matrices_einsum": """
def rotary_embedding(X, positions=None, base=10000.0):
    T, d = X.shape[-2:]
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(T) if positions is None else np.asarray(positions)
    angle = pos[..., None] * base ** (-np.arange(0, d, 2) / d)  # (..., T, d/2)
    c, s = np.cos(angle), np.sin(angle)
    R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # (..., T, d/2, 2, 2)
    pairs = X.reshape(*X.shape[:-1], d // 2, 2)
    return np.einsum("...ij,...j->...i", R, pairs).reshape(X.shape)
""",
}


EXTENSION = Extension(
    NAME,
    right=source(),
    mistakes=BUGGY,
    variants=CORRECT,
    breaches={
        "X modified in place": (
            source().replace(
                "    return " + RIGHT["JOIN"], "    X[...] = " + RIGHT["JOIN"] + "\n    return X"
            ),
            ("modified an input in place",),
        ),
        "no ValueError": (
            CORRECT["explicit_loops"].replace("    if d % 2:\n", "    if False:\n"),
            ("should raise ValueError for an odd d",),
        ),
        "a ValueError without a message": (
            source().replace('f"d must be even, but got d={d}."', ""),
            ("without a message",),
        ),
    },
)


def rotated(X, positions, base: float):
    """RoPE by its definition, one pair of features at a time (the widget's numbers, computed
    without the course's code): pair i of the token at position m turned by m · base^(−2i/d).
    """
    import numpy as np

    X = np.asarray(X, dtype=float)
    out = np.empty_like(X)
    d = X.shape[-1]
    for t, m in enumerate(positions):
        for i in range(d // 2):
            a = m * base ** (-2 * i / d)
            x0, x1 = X[t, 2 * i], X[t, 2 * i + 1]
            out[t, 2 * i] = x0 * np.cos(a) - x1 * np.sin(a)
            out[t, 2 * i + 1] = x0 * np.sin(a) + x1 * np.cos(a)
    return out
