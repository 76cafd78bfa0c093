"""Node's own unit tests of the page's pure functions run in the quick loop.

``node --test tests/js/`` runs every ``*.test.mjs`` there once: ``picture.test.mjs``
(number format, colour scale, layout, a tooltip's place, link keys, decoding) and
``forward.test.mjs`` (the forward passes, hand-checked). Their expectations are worked
out by hand; ``tests/test_front_forward.py`` compares ``forward.js`` with numpy.
"""

import subprocess
from pathlib import Path

from tests.support.node import node

JS_TESTS = Path(__file__).resolve().parent / "js"


def test_node_unit_tests_pass():
    files = sorted(JS_TESTS.glob("*.test.mjs"))
    assert {f.name for f in files} >= {"picture.test.mjs", "forward.test.mjs"}
    run = subprocess.run(
        [node(), "--test", f"{JS_TESTS}/"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=JS_TESTS.parent.parent,
    )
    assert run.returncode == 0, f"node --test tests/js/ failed:\n{run.stdout}{run.stderr}"
    written = sum(f.read_text(encoding="utf-8").count("\ntest(") for f in files)
    ran = [line for line in run.stdout.splitlines() if line.startswith("# tests ")]
    assert ran == [f"# tests {written}"], run.stdout  # every file's every test ran, once
