"""Time the kernel's part of a data-state change of the explorer (compute and words).

A change of example, heads, mask or padding length is the only one the kernel
answers (step, query and view are drawn in the page: benchmarks/bench_browser.py);
this is the kernel's share of it, without the browser (transport and drawing come
on top). Also the size of what is sent. Run: python benchmarks/bench_widgets.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from mhsa_helpers.examples import EXAMPLES, get_example
from mhsa_helpers.widgets.explorer import Explorer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20)
    a = p.parse_args()
    print(
        f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; {a.repeats} changes each"
    )
    print(f"{'change':<28} {'median ms':>10} {'max ms':>8} {'CPU ms':>8} {'sent kB':>8}")
    ex = Explorer()
    for name in EXAMPLES:
        e = get_example(name)
        masks = ("none", "causal", "padding")  # each change differs from the one before
        changes = [{"heads": h, "mask": m} for h in e.head_choices for m in masks]
        ex.change_state(example=name)
        wall, cpu = [], []
        for k in range(a.repeats):
            change = changes[(k + 1) % len(changes)]
            t0, c0 = time.perf_counter(), time.process_time()
            ex.change_state(**change)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        sent = len(json.dumps({"data": ex.data, "texts": ex.texts})) / 1e3
        print(
            f"{name + ': heads or mask':<28} {statistics.median(wall) * 1e3:>10.1f} "
            f"{max(wall) * 1e3:>8.1f} {statistics.median(cpu) * 1e3:>8.1f} {sent:>8.1f}"
        )


if __name__ == "__main__":
    main()
