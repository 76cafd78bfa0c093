"""Time from a control of the explorer to its new picture, painted, in Chromium.

Starts an isolated JupyterLab, runs the capstone in Debian's Chromium
(Playwright, headless, pixel ratio 2), then tours the explorer: every
example, every number of heads it allows, every step (Next/Prev and the
slider), every mask (and the padding length), query tokens and both views,
first visits included. Each update is timed in the page from the
input event (the click, key or choice) to the second animation frame after
the new SVG arrives; also printed, from before Playwright's action (which
first waits for the control to stand still for two frames).
In a laptop's browser window (1400 x 900: a 1400 x 790 page, side panel open).
Goal: p95 <= 150 ms, max <= 300 ms.

Run: python benchmarks/bench_browser.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mhsa_helpers.examples import EXAMPLES, get_example
from tests.support import lab_harness as lab


def tour(page) -> list[tuple[str, float, float]]:
    """Drive every control; ``(what, ms from the input event, ms from before Playwright's
    action)`` for each update (the second adds Playwright's wait for a still control)."""
    figure, _, button = lab.explorer_parts(page, 0)
    box = lab.explorer_box(page, 0)
    figure.wait_for(state="visible", timeout=60_000)
    example = lab.dropdown(box, "example")
    query = lab.dropdown(box, "query")
    prev = box.get_by_role("button", name="\u25c0 Prev")
    nxt = box.get_by_role("button", name="Next \u25b6")
    step = box.locator(".widget-slider", has=page.locator("label", has_text="step"))
    length = box.locator(".widget-slider", has=page.locator("label", has_text="length"))
    times = []

    def do(what, act):
        times.append((what, *lab.time_update(page, figure, act, with_driver=True)))

    current = {"step": 7, "heads": 2}
    for name in [*EXAMPLES[1:], EXAMPLES[0]]:
        e = get_example(name)
        do(f"example {name}", lambda e=e: example.select_option(label=e.title))
        if current["heads"] not in e.head_choices:  # as the explorer does
            current["heads"] = e.head_choices[min(1, len(e.head_choices) - 1)]
        for h in e.head_choices:
            if h != current["heads"]:
                do(f"{name}: heads {h}", button("heads", str(h)).click)
                current["heads"] = h
            while current["step"] > 1:  # back to step 1, then forward to 9
                do(f"{name}, h={h}: prev", prev.click)
                current["step"] -= 1
            while current["step"] < 9:
                do(f"{name}, h={h}: next", nxt.click)
                current["step"] += 1
        for mask in ("causal", "padding", "none"):
            do(f"{name}: mask {mask}", button("mask", mask).click)
        for q in dict.fromkeys(e.tokens[1:4]):
            do(f"{name}: query {q}", lambda q=q: query.select_option(label=q))
        do(f"{name}: view query", button("view", "query").click)
        do(f"{name}: view matrices", button("view", "matrices").click)
    do("mask padding", button("mask", "padding").click)
    handle = length.locator(".noUi-handle")
    do("length slider", lambda: (handle.focus(), page.keyboard.press("ArrowLeft")))
    handle = step.locator(".noUi-handle")
    do("step slider", lambda: (handle.focus(), page.keyboard.press("ArrowLeft")))
    return times


TOUR = str(lab.ROOT / "tests" / "test_browser_extensions.py")


def extensions() -> list[tuple[str, float]]:
    """The six extension widgets' tour: ``tests/test_browser_extensions.py`` drives every control
    of each (in the same laptop window) and writes each change's time; ``(widget, ms)``.
    """
    import subprocess

    out = lab.ROOT / "test-output" / "browser" / "latency_extensions.json"
    out.unlink(missing_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slow", TOUR],
        cwd=lab.ROOT,
        check=True,
    )
    return [tuple(t) for t in json.loads(out.read_text())]


def summary(what: str, times) -> None:
    """Print the median, p95 and max of ``times`` (``(what, ms)`` pairs) and the slowest five."""
    ms = sorted(t for _, t in times)
    p95 = ms[round(0.95 * (len(ms) - 1))]
    print(f"{what} in Chromium (pixel ratio 2): {len(ms)} updates")
    print(f"median {statistics.median(ms):.0f} ms, p95 {p95:.0f} ms, max {ms[-1]:.0f} ms")
    slowest = sorted(times, key=lambda x: -x[1])[:5]
    print("slowest:", ", ".join(f"{w} {t:.0f} ms" for w, t in slowest))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="write every (what, ms) to this JSON file")
    p.add_argument("--extensions", action="store_true", help="also tour the six extension widgets")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with (
            lab.jupyterlab(Path(tmp), lab.ROOT / "solutions" / "mhsa") as base,
            lab.chromium_page(pixel_ratio=2, viewport=lab.LAPTOP) as page,
        ):
            lab.open_and_run_all(page, base, "10_capstone.ipynb")
            lab.open_side_panel(page)
            times = tour(page)
    if a.out:
        a.out.write_text(json.dumps(times, indent=1))
    summary("explorer", [(w, t) for w, t, _ in times])
    summary("explorer, timed from before Playwright's action", [(w, t) for w, _, t in times])
    if a.extensions:
        summary("extension widgets", extensions())


if __name__ == "__main__":
    main()
