"""Hidden tests stay hidden: inputs from the course directory's key, feedback without them.

The red team rebuilt every hidden input from the seeds in the learner's
package and passed two exercises with a lookup table. Now the seeds come
from a key that ``init-course`` writes into the course directory; nothing a
student has can compute them, and what a failed hidden test says names the
property, never the inputs, shapes or values.
"""

import stat

import numpy as np
import pytest

from autograders import secret
from mhsa_helpers import checks
from mhsa_helpers.checks import CHECKS, CheckFailed, hidden_seed, job, judge
from mhsa_helpers.checks.core import call_in_notebook
from mhsa_helpers.checks.failures import RAISED_HIDDEN
from mhsa_helpers.execution.in_child import run_in_child
from mhsa_helpers.exercises import EXERCISES, names
from tests.support.answers import load
from tests.support.leaks import leaked
from tests.support.mistakes import MISTAKES


def _arrays(calls) -> list:
    out = []
    for call in calls:
        for a in (*call.args, *call.kwargs.values()):
            if isinstance(a, np.ndarray):
                out.append(a)
            elif isinstance(a, tuple):
                out += [x for x in a if isinstance(x, np.ndarray)]
            elif isinstance(a, np.random.Generator):
                out.append(a.random(4))
            elif isinstance(a, int | float):
                out.append(np.asarray(float(a)))
    return out


def test_the_learner_package_holds_no_seed():
    assert not any(hasattr(e, "hidden_seed") for e in EXERCISES)


@pytest.mark.parametrize("name", names())
def test_two_course_directories_draw_different_hidden_inputs(tmp_path, name):
    """The same released course, graded in two course directories: other hidden inputs."""
    keys = [
        secret.read_key(secret.make_key(tmp_path / d).parent)
        for d in ("a", "b")
        if (tmp_path / d).mkdir() is None
    ]
    assert keys[0] != keys[1] and len(keys[0]) == 32
    first, second = (_arrays(CHECKS[name].calls(hidden_seed(k, name))) for k in keys)
    assert first and second
    same = len(first) == len(second) and all(
        a.shape == b.shape and np.array_equal(a, b) for a, b in zip(first, second, strict=True)
    )
    assert not same, f"{name}: two keys drew the same hidden inputs"


def test_the_key_is_the_owners_only_and_never_replaced(tmp_path):
    path = secret.make_key(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):
        secret.make_key(tmp_path)
    assert secret.find_key(tmp_path / "autograded" / "s1") == secret.read_key(tmp_path)


def test_a_course_directory_without_a_key_says_what_to_do(tmp_path):
    with pytest.raises(secret.MissingKey, match="new-key"):
        secret.read_key(tmp_path)


def test_check_hidden_without_a_key_draws_new_inputs_each_run(monkeypatch):
    """Without the grading kernel's key (an instructor running a solution), fresh inputs."""
    monkeypatch.delenv(checks.KEY_VARIABLE, raising=False)
    seen = []
    original = type(CHECKS["softmax"]).calls

    def calls(self, seed=None):
        seen.append(seed)
        return original(self, seed)

    monkeypatch.setattr(type(CHECKS["softmax"]), "calls", calls)
    for _ in range(2):
        with pytest.raises(checks.CheckFailed):
            checks.check_hidden("softmax", lambda Z, axis=-1: Z)
    assert len(set(seen)) == 2 and None not in seen


#: Ways an answer could try to carry a hidden input into its feedback.
EXFILTRATE = {
    "message": "    raise ValueError('LEAK' + repr(np.asarray(args[0]).ravel()[:3].tolist()))\n",
    "string": "    return 'LEAK' + repr(np.asarray(args[0]).shape)\n",
    "type name": (
        "    name = 'LEAK' + 'x'.join(str(n) for n in np.shape(args[0]))\n"
        "    return type(name, (), {})()\n"
    ),
    "records": (
        "    name = 'LEAK' + 'x'.join(str(n) for n in np.shape(args[0]))\n"
        "    return np.zeros(3, dtype=[(name, 'f8')])\n"
    ),
    "shape": "    return np.zeros(np.shape(args[0])[::-1] + (7,))\n",
    "values": "    return np.asarray(args[0], dtype=float) * 1.5 + 0.123456\n",
}


def _sources(name: str) -> dict:
    """Answers for ``name`` that try to leak (:data:`EXFILTRATE`) and the listed wrong ones."""
    sources = {kind: f"def {name}(*args, **kwargs):\n{body}" for kind, body in EXFILTRATE.items()}
    sources.update({k: v[2] for k, v in MISTAKES.items() if v[1] == name})
    return sources


def hidden_sentences(name: str, seed: int) -> dict:
    """What the hidden test of ``name`` says of each of :func:`_sources`, run here.

    The kernel's way (:func:`call_in_notebook`, the call contract the child
    process runs too, and the same :func:`~mhsa_helpers.execution.outcomes.outcomes_of`),
    judged as the grader judges (:func:`judge`).
    """
    said = {}
    for kind, source in _sources(name).items():
        calls = CHECKS[name].calls(seed)
        with np.errstate(all="ignore"):
            outcomes = call_in_notebook(name, load(source, name), calls, hidden=True)
        said[kind] = judge(name, seed, outcomes, hidden=True)
    return said


#: The course directory's key the leak tests draw the hidden inputs from.
LEAK_KEY = b"a key of some course directory"


@pytest.mark.parametrize("name", names())
def test_hidden_feedback_names_the_property_never_the_inputs(name):
    """Wrong answers and deliberate leaks: the hidden test's sentence carries no input.

    (The catalogue's mistakes on hidden inputs: ``tests/test_catalogue.py``.)
    """
    said = hidden_sentences(name, hidden_seed(LEAK_KEY, name))
    assert not leaked(name, said), leaked(name, said)
    assert said["message"] == f"{name} {RAISED_HIDDEN}"


def test_a_check_whose_public_sentence_quotes_a_hidden_shape_is_caught(monkeypatch):
    """The test above fails on a planted leak: a verdict whose ``public`` says the shape."""
    name = "softmax"
    check = type(CHECKS[name])

    def verdict(self, calls, outcomes):
        shape = np.shape(calls[0].args[0])
        raise CheckFailed(f"{name} is wrong on Z of shape {shape}.", public=f"{name}: {shape}")

    monkeypatch.setattr(check, "verdict", verdict)
    said = hidden_sentences(name, hidden_seed(LEAK_KEY, name))
    assert set(leaked(name, said)) == set(said), said


@pytest.mark.slow  # a real child process
def test_the_grader_s_child_says_what_the_kernel_says_on_a_hidden_input():
    """The leak test above runs here; the grader runs answers in a child process: the same
    sentences (the child's values come back through the same decoding)."""
    name = "attention_scores"
    seed = hidden_seed(LEAK_KEY, name)
    sources = _sources(name)
    kinds = list(sources)  # one child for them all, each answer in a notebook process of its own
    jobs = [job(f"nb{i}", [sources[k]], [(name, seed)]) for i, k in enumerate(kinds)]
    results = run_in_child(jobs)
    said = {}
    for i, kind in enumerate(kinds):
        result = results[f"nb{i}"]
        assert result.error is None, (kind, result.error)
        said[kind] = judge(name, seed, result.outcomes[(name, seed)], hidden=True)
    assert said == hidden_sentences(name, seed)


@pytest.mark.slow  # a real child process
def test_a_lookup_table_of_everything_the_package_can_compute_fails_the_hidden_test():
    """The red team's +7: reference outputs for every input a student can rebuild, no code."""
    import pickle

    from mhsa_helpers import reference

    name = "softmax"
    guessed = [None] + [hidden_seed(k, name) for k in (b"", b"mhsa", bytes(32))]
    table = {}
    for seed in guessed:
        for call in CHECKS[name].calls(seed):
            Z = call.args[0]
            table[np.asarray(Z).tobytes()] = reference.softmax(*call.args, **call.kwargs)
    source = (
        f"import pickle\nTABLE = pickle.loads({pickle.dumps(table)!r})\n"
        "def softmax(Z, axis=-1):\n    return TABLE[np.asarray(Z).tobytes()]\n"
    )
    seed = hidden_seed(secret.secrets.token_bytes(32), name)  # the course's own key
    result = run_in_child([job("07_softmax", [source], [(name, None), (name, seed)])])
    outcomes = result["07_softmax"].outcomes
    assert judge(name, None, outcomes[(name, None)]) is None  # the visible inputs are public
    assert judge(name, seed, outcomes[(name, seed)], hidden=True) == f"{name} {RAISED_HIDDEN}"


#: Seeds whose hidden inputs once made the judge itself fail on a right answer: a per-batch
#: mask whose batch axis matched the heads but not the scores' other batch axis (a CI run).
ONCE_UNJUDGEABLE = {"grouped_query_attention": (132, 192)}


@pytest.mark.slow
@pytest.mark.parametrize("name", names())
def test_a_right_answer_passes_the_hidden_inputs_of_any_key(name):
    """Every course directory draws other hidden inputs: on 40 keys' inputs (and on those that
    once broke the judge), the instructor's answer passes, never "could not be graded"."""
    from tests.support.answers import solution

    fn = solution(name)
    for seed in [*range(40), *ONCE_UNJUDGEABLE.get(name, ())]:
        outcomes = call_in_notebook(name, fn, CHECKS[name].calls(seed))
        assert judge(name, seed, outcomes, hidden=True) is None, (name, seed)


def test_redact_takes_out_quoted_names_and_keeps_apostrophes():
    """An apostrophe is no quote: "each row's own maximum" stays whole in a public sentence."""
    from mhsa_helpers.checks.failures import redact

    said = redact("subtract each row's own maximum, the rows' sums; 'BTNH' and 'mask's' \"x\" = 4")
    assert said == "subtract each row's own maximum, the rows' sums; … and …"
