"""Every catalogued mistake is named by its own hint, and by no other.

On some visible input each mistake's wrong result differs from the
reference and from every other mistake's, so its hint names it alone
(where an input cannot tell two apart, the check waits for one that can,
or names them all). Then, end to end: a function that makes exactly one
catalogued mistake on every input fails the visible check with that
mistake's hint and no other, and the hidden check never names another.
"""

import builtins

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from mhsa_helpers.checks import CHECKS
from mhsa_helpers.checks.comparison import close
from mhsa_helpers.exercises import EXERCISES, NOTEBOOKS, of_notebook
from tests.support import nbgrader_course as nc
from tests.support.leaks import leaked
from tests.support.oracles import (
    CATALOGUED,
    all_calls,
    failure,
    hidden,
    keys,
    mistake,
    oracle,
    verdict,
    visible_catalogues,
)


def flat(result) -> list:
    """A result as a list of arrays (a tuple result is compared part by part)."""
    parts = result if isinstance(result, tuple | list) else (result,)
    return [np.asarray(p) for p in parts]


def same(a, b) -> bool:
    a, b = flat(a), flat(b)
    return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))


def test_the_catalogued_checks():
    """The checks that judge by a catalogue are the exercises the registry says do."""
    assert set(CATALOGUED) == {e.name for e in EXERCISES if e.catalogue}


@pytest.mark.parametrize("name", CATALOGUED)
def test_every_hint_is_told_apart_on_some_visible_input(name):
    hints, told_apart = set(), set()
    for call, (expected, known) in zip(CHECKS[name].calls(), visible_catalogues(name), strict=True):
        if call.raises is not None:
            continue
        known = [(mistake(h), w) for h, w in known if w is not None]
        for hint, wrong in known:
            hints.add(hint)
            if hint in told_apart or same(wrong, expected):  # told apart on an earlier input
                continue  # on this input the mistake changes nothing
            if not any(same(wrong, w) for h, w in known if h != hint):
                told_apart.add(hint)
    assert hints and hints == told_apart, sorted(hints - told_apart)


def names_only(message: str, key: str, name: str) -> bool:
    """Whether ``message`` names the mistake ``key`` and no other mistake of ``name``."""
    said = mistake(message)
    return key in said and not any(k in said for k in keys(name) if k != key and k not in key)


CASES = [(name, key) for name in CATALOGUED for key in keys(name)]


@pytest.mark.parametrize(("name", "key"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_a_function_with_one_mistake_is_told_that_mistake(name, key):
    message = verdict(name, oracle(name, key))
    assert message is not None and names_only(message, key, name), message
    on_hidden = failure(name, oracle(name, key), hidden(name))
    if on_hidden is not None:  # the hidden inputs may not show every mistake; never a wrong one
        said = mistake(str(on_hidden))
        others = [k for k in keys(name) if k != key and k not in key and k in said]
        assert not others or key in said, str(on_hidden)
        # and what the grader shows of it names the mistake, never the hidden inputs
        assert not leaked(name, {key: on_hidden.public}), on_hidden.public


def test_the_oracles_answer_every_call():
    for name in CATALOGUED:
        for call in all_calls(name):
            if call.raises is not None:
                with pytest.raises(getattr(builtins, call.raises)):
                    oracle(name, "no such mistake")(*call.args, **call.kwargs)
                continue
            assert same(
                oracle(name, "no such mistake")(*call.args, **call.kwargs),
                CHECKS[name].catalogue(call)[0],
            )


# ---------------------------------------------------------------------------
# the same, in the notebooks: real kernels, the learner's view of the failure
# ---------------------------------------------------------------------------
BY_NOTEBOOK = {
    nb.stem: [e.name for e in of_notebook(nb.stem) if e.name in CATALOGUED] for nb in NOTEBOOKS
}


@pytest.mark.slow
@pytest.mark.parametrize("stem", [s for s, names in BY_NOTEBOOK.items() if names])
def test_in_the_notebook_each_mistake_gets_its_own_sentence(stem, tmp_path):
    """A student notebook run to the end, then one check per catalogued mistake."""
    for p in nc.STUDENT.glob("*.ipynb"):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    nb = nbformat.read(str(nc.STUDENT / f"{stem}.ipynb"), as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            f"import sys; sys.path.insert(0, {str(nc.ROOT)!r})\n"
            "from tests.support.oracles import oracle"
        )
    )
    cases = [(name, key) for name in BY_NOTEBOOK[stem] for key in keys(name)]
    start = len(nb.cells)
    for name, key in cases:
        nb.cells.append(
            nbformat.v4.new_code_cell(
                f"checks.check({name!r}, oracle({name!r}, {key!r}))",
                metadata={"tags": ["raises-exception"]},
            )
        )
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    for (name, key), cell in zip(cases, nb.cells[start:], strict=True):
        (error,) = [o for o in cell.outputs if o.output_type == "error"]
        (line,) = error.traceback  # one line: no traceback through the checks
        assert line.startswith("\u2717 ") and names_only(line, key, name), line
