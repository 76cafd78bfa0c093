"""The check of sliding_window_mask (extension 16): real learner code, right and wrong.

Masks are compared exactly (``np.array_equal``), as the contract says; each
buggy version makes one catalogued mistake and must be told that mistake, and
no other; correct versions written differently must pass.
"""

import numpy as np
import pytest
from nbclient import NotebookClient

from mhsa_helpers import checks
from mhsa_helpers.checks import step16_sliding_window as sw
from mhsa_helpers.execution.saved import answer_namespace
from tests import nbgrader_course as nc

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


def load(text):
    namespace = answer_namespace()
    exec(text, namespace)
    return namespace[NAME]


def message(fn, hidden=False) -> str | None:
    try:
        (checks.check_hidden if hidden else checks.check)(NAME, fn)
    except AssertionError as exc:
        return str(exc)
    return None


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


def test_an_unknown_mistake_is_located():
    text = source(RESULT="np.where(keep | ((i == 5) & (j == 0)), 0.0, -np.inf)")
    said = message(load(text))
    assert said is not None and "first at query 5, key 0: got 0, expected -inf" in said, said


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


@pytest.mark.parametrize("variant", sorted(CORRECT))
def test_correct_variants_pass_visible_and_hidden(variant, capsys):
    fn = load(CORRECT[variant])
    checks.check(NAME, fn)
    checks.check_hidden(NAME, fn)
    assert capsys.readouterr().out.count("\u2713") == 2


def test_window_at_least_seq_len_is_the_causal_mask():
    fn = load(CORRECT["tril_triu"])
    for T in (1, 4, 9):
        for w in (T, T + 3):
            assert np.array_equal(fn(T, w), np.where(np.triu(np.ones((T, T)), 1) > 0, -np.inf, 0))


def test_a_version_with_a_runtime_warning_fails():
    fn = load(source(RESULT="np.log(keep.astype(float))"))  # log(0) = -inf, with a warning
    with np.errstate(all="ignore"):
        assert np.array_equal(fn(6, 3), load(source())(6, 3))  # the right mask
    said = message(fn)
    assert said is not None and "RuntimeWarning" in said, said


def test_a_version_without_the_value_error_fails():
    said = message(load(source().replace("if window < 1:", "if False:")))
    assert said is not None and "should raise ValueError for window = 0" in said, said


def test_a_negative_window_must_be_refused_too():
    said = message(load(source().replace("if window < 1:", "if window == 0:")))
    assert said is not None and "a negative window" in said, said


def test_a_pair_or_a_wrong_shape_is_refused():
    said = message(lambda T, w: (np.zeros((T, T)), w))
    assert said is not None and "one ndarray" in said
    said = message(lambda T, w: np.zeros((T, T + 1)))
    assert said is not None and "should have shape" in said, said
    said = message(load(source(RESULT="np.where(keep, 0, -1)")))  # integers
    assert said is not None and "float array" in said, said


@pytest.mark.slow
def test_in_the_notebook_an_off_by_one_window_loses_the_marks(tmp_path):
    text, hint = BUGGY["window_plus_one"]
    nb = nc.student_notebook("16_sliding_window", {NAME: text})
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    (error,) = [o for o in graded[0].outputs if o.output_type == "error"]
    assert hint in error.traceback[0]
    others = [c for c in nb.cells if c.cell_type == "code" and c not in graded]
    assert not any(o.output_type == "error" for c in others for o in c.get("outputs", []))
