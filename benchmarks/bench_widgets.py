"""Time one explorer update (recompute + redraw to SVG) after each kind of control change.

Runs in the kernel process, no browser: the browser adds transport and
decoding on top (measured by the browser test). Goal: median <= 50 ms for
the default example. Run: python benchmarks/bench_widgets.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from mhsa_helpers.widgets.explorer import Explorer


def timed(ex, widget, values, repeats):
    times = []
    for k in range(repeats):
        value = values[k % len(values)]
        if widget.value == value:
            value = values[(k + 1) % len(values)]
        t0 = time.perf_counter()
        widget.value = value  # the observer recomputes and redraws synchronously
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, max(times) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--example", default="song")
    a = p.parse_args()
    print(
        f"explorer update after a control change, example={a.example!r}, "
        f"{a.repeats} changes each (ms)"
    )
    print(f"{'control':<22} {'step':>4} {'median':>8} {'max':>8}")
    for step in (4, 7, 9):
        ex = Explorer(example=a.example, step=step)
        rows = [
            ("heads", ex.heads_w, list(ex.heads_w.options)),
            ("mask", ex.mask_w, ["none", "causal", "padding"]),
            ("query token", ex.query_w, [v for _, v in ex.query_w.options]),
        ]
        for name, widget, values in rows:
            med, worst = timed(ex, widget, values, a.repeats)
            print(f"{name:<22} {step:>4} {med:>8.1f} {worst:>8.1f}")
        ex.mask_w.value = "padding"
        med, worst = timed(ex, ex.length_w, list(range(1, ex.example.T + 1)), a.repeats)
        print(f"{'padding length':<22} {step:>4} {med:>8.1f} {worst:>8.1f}")
    ex = Explorer(example=a.example)
    med, worst = timed(ex, ex.step_w, list(range(1, 10)), a.repeats)
    print(f"{'step (Prev/Next)':<22} {'1-9':>4} {med:>8.1f} {worst:>8.1f}")
    med, worst = timed(ex, ex.example_w, ["song", "students", "simple", "question"], a.repeats)
    print(f"{'example':<22} {'':>4} {med:>8.1f} {worst:>8.1f}")


if __name__ == "__main__":
    main()
