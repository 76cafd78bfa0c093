"""Time from a click on an explorer control to the new picture in the browser.

Starts an isolated JupyterLab, runs the capstone in Debian's Chromium
(Playwright, headless), then clicks the heads and mask controls in turn and
measures, in the page, the time until the image shows the new, decoded PNG.
Goal: <= 300 ms. Run: python benchmarks/bench_browser.py [--clicks N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests import lab_harness as lab


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clicks", type=int, default=12)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with (
            lab.jupyterlab(Path(tmp), lab.ROOT / "solutions" / "mhsa") as base,
            lab.chromium_page() as page,
        ):
            lab.open_and_run_all(page, base, "10_capstone.ipynb")
            image, _, button = lab.explorer_parts(page)
            image.wait_for(state="attached", timeout=60_000)
            image.scroll_into_view_if_needed()
            series = {
                "heads (1/2/4)": [button("heads", v) for v in ("1", "4", "2")],
                "mask (none/causal/padding)": [
                    button("mask", v) for v in ("causal", "padding", "none")
                ],
                "query token": [button("query", v) for v in ("new", "song", "List")],
            }
            print(f"click to new decoded image in Chromium, {a.clicks} clicks each (ms)")
            print(f"{'control':<28} {'median':>7} {'max':>7}")
            for name, buttons in series.items():
                times = [
                    lab.click_and_time(page, buttons[k % len(buttons)], image)
                    for k in range(a.clicks)
                ]
                print(f"{name:<28} {statistics.median(times):>7.0f} {max(times):>7.0f}")


if __name__ == "__main__":
    main()
