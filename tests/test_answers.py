"""Answers that call earlier steps through ``mh`` work in the capstone and the explorer."""

import nbformat

from mhsa_helpers.capstone import compare_layer
from mhsa_helpers.execution.saved import learner_functions, run_answers_here
from mhsa_helpers.widgets.explorer import Explorer
from tests.support import nbgrader_course as nc

MH_LAYER = """
def multi_head_self_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    Qh, Kh, Vh = (mh.split_heads(M, n_heads) for M in mh.project_qkv(X, W_q, W_k, W_v))
    heads, A = mh.attention_head(Qh, Kh, Vh, mask)
    return mh.merge_heads(heads) @ W_o, A
"""
MH_HEAD = """
def attention_head(Q, K, V, mask=None):
    Z = mh.attention_scores(Q, K)
    A = mh.softmax(Z if mask is None else Z + mask)
    return A @ V, A
"""


def save(directory, stem, answers):
    nbformat.write(nc.student_notebook(stem, answers), str(directory / f"{stem}.ipynb"))


def test_the_capstone_compares_an_mh_using_layer(tmp_path):
    save(tmp_path, "09_multi_head", {"multi_head_self_attention": MH_LAYER})
    mine = run_answers_here(tmp_path / "09_multi_head.ipynb")["multi_head_self_attention"]
    rows = compare_layer(mine)
    assert rows and max(diff for *_, diff in rows) < 1e-12


def test_the_explorer_runs_an_mh_using_answer(tmp_path):
    save(tmp_path, "08_head_output", {"attention_head": MH_HEAD})
    functions = learner_functions(tmp_path)
    assert set(functions) == {"attention_head"}
    ex = Explorer(functions=functions, step=8)
    assert "Drawn with <b>your</b> <code>attention_head</code>" in ex.texts[7]["status"]


def test_unwritten_answers_are_left_to_the_reference(tmp_path):
    save(tmp_path, "07_softmax", None)  # the untouched student version
    functions = learner_functions(tmp_path)
    ex = Explorer(functions=functions, step=7, saved=True)
    words = ex.texts[6]
    assert "the course's functions" in words["status"]
    (unwritten,) = [n for n in words["notes"] if "not written yet" in n]
    assert (
        "<code>softmax</code>: yours is not written yet in notebook 07 as saved (a stub there"
        in (unwritten)
    )
    assert "save it, then run this cell again" in unwritten
    (missing,) = [n for n in words["notes"] if "not in your saved" in n]
    assert (
        "<code>project_qkv</code>" in missing and "Save them, then run this cell again" in missing
    )
