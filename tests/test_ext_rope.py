"""The check of rotary_embedding (extension 11): real learner code, right and wrong.

Each buggy version below is a function a learner could write, making one
mistake of the catalogue; it must fail the visible check with that mistake's
hint (and no other's) and fail the hidden check. Correct but unusual versions
(float32, complex numbers, explicit loops) must pass both.
"""

import numpy as np
import pytest
from nbclient import NotebookClient

from mhsa_helpers import checks
from mhsa_helpers.checks import step11_rope as rope_check
from mhsa_helpers.execution.saved import answer_namespace
from tests import nbgrader_course as nc

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


def load(text, name=NAME):
    namespace = answer_namespace()
    exec(text, namespace)
    return namespace[name]


def message(fn, hidden=False) -> str | None:
    try:
        (checks.check_hidden if hidden else checks.check)(NAME, fn)
    except AssertionError as exc:
        return str(exc)
    return None


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
HINTS = {hint for _, hint in BUGGY.values()}


def test_the_template_is_correct():
    checks.check(NAME, load(source()))
    checks.check_hidden(NAME, load(source()))


@pytest.mark.parametrize("mistake", sorted(BUGGY))
def test_each_mistake_fails_with_its_own_hint(mistake):
    text, hint = BUGGY[mistake]
    said = message(load(text))
    assert said is not None and hint in said, said
    assert not any(other in said for other in HINTS - {hint}), said
    assert message(load(text), hidden=True) is not None


def test_the_catalogue_lists_the_issues_mistakes():
    hints = [h for h, _ in rope_check.mistakes(np.ones((3, 4)), np.array([1, 2, 3]), 100.0)]
    assert {
        rope_check.HALF_SPLIT,
        rope_check.THETA_FROM_I,
        rope_check.CLOCKWISE,
        rope_check.POSITIONS_IGNORED,
        rope_check.BASE_IGNORED,
    } <= set(hints)


CORRECT = {
    "float32_in_float32_out": source().replace(
        "    return ", "    y0, y1 = y0.astype(X.dtype), y1.astype(X.dtype)\n    return "
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


@pytest.mark.parametrize("variant", sorted(CORRECT))
def test_correct_variants_pass_visible_and_hidden(variant, capsys):
    fn = load(CORRECT[variant])
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


def test_float32_inputs_may_give_float32_results():
    fn = load(CORRECT["float32_in_float32_out"])
    X = np.random.default_rng(0).normal(size=(2, 5, 8)).astype(np.float32)
    assert fn(X).dtype == np.float32  # the variant really stays in single precision
    checks.check(NAME, fn)


def test_a_version_that_modifies_x_in_place_fails():
    fn = load(
        source().replace(
            "    return " + RIGHT["JOIN"], "    X[...] = " + RIGHT["JOIN"] + "\n    return X"
        )
    )
    assert "modified an input in place" in message(fn)


def test_a_version_with_a_runtime_warning_fails():
    # np.where computes both branches: k / k is 0 / 0 for the first pair
    k = "np.arange(0, d, 2)"
    fn = load(source(BASE=f"np.where({k} > 0, base * {k} / {k}, base)"))
    X = np.random.default_rng(0).normal(size=(3, 4))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(fn(X), load(source())(X))  # right values, with a warning
    said = message(fn)
    assert said is not None and "RuntimeWarning" in said, said


def test_a_version_without_the_value_error_fails():
    text = CORRECT["explicit_loops"].replace("    if d % 2:\n", "    if False:\n")
    said = message(load(text))
    assert said is not None and "should raise ValueError for an odd d" in said, said


def test_a_value_error_without_a_message_fails():
    text = source().replace('f"d must be even, but got d={d}."', "")
    said = message(load(text))
    assert said is not None and "without a message" in said, said


def test_a_list_or_a_wrong_shape_is_refused():
    said = message(lambda X, positions=None, base=10000.0: [X])
    assert said is not None and "one ndarray" in said
    said = message(load(source(JOIN="np.stack([y0, y1], axis=-1)")))
    assert said is not None and "should have the shape of X" in said, said


def test_a_scaled_result_is_told_that_lengths_change():
    fn = load(source(JOIN="1.5 * " + RIGHT["JOIN"]))
    said = message(fn)
    assert said is not None and "lengths changed" in said, said


def test_the_relative_position_property_is_checked():
    """Right values on every call but one: the pair call, where only the shift is off."""
    right = load(source())

    def almost(X, positions=None, base=10000.0):
        out = right(X, positions, base)
        if X.shape == (5, 2, 8):  # the property's call: tokens q, k at (m + s, n + s)
            out = out.copy()
            out[-1, 1] *= 1 + 5e-8  # within the values' tolerance, not within 1e-9 relative
        return out

    said = message(almost)
    assert said is not None and "depend on m − n only" in said, said


@pytest.mark.slow
def test_in_the_notebook_a_clockwise_rotation_loses_the_marks(tmp_path):
    """The student notebook, its answer cell replaced, run by a real kernel to the test cell."""
    text, hint = BUGGY["clockwise"]
    nb = nc.student_notebook("11_rope", {NAME: text})
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    (error,) = [o for o in graded[0].outputs if o.output_type == "error"]
    assert hint in error.traceback[0]
    others = [c for c in nb.cells if c.cell_type == "code" and c not in graded]
    assert not any(o.output_type == "error" for c in others for o in c.get("outputs", []))
