"""Time the induction notebook's training (19_induction): wall, CPU, and the machine's load.

Trains the two-layer model with the fixed seed (the reference's forward and
backward) ``--runs`` times and prints, per run, the steps to the goal, the
final held-out accuracy, the wall-clock and CPU seconds of the whole run, and
the 1-minute load average before and after with the number of cores: a wall
time means little without the load it was measured under. The goal the issue
sets is at most 60 s on 2 cores. Tests never depend on these times.

Run: python benchmarks/bench_induction.py [--runs 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", help="also write the rows here")
    args = p.parse_args(argv)
    from mhsa_helpers.training.induction import STEPS, train

    rows = []
    for run in range(args.runs):
        load_before = os.getloadavg()[0]
        r = train(STEPS)
        row = dict(
            run=run,
            steps=STEPS,
            steps_to_goal=r.steps_to_goal,
            accuracy=round(r.accuracy, 4),
            wall_s=round(r.seconds, 2),
            cpu_s=round(r.cpu_seconds, 2),
            load_1min_before=round(load_before, 2),
            load_1min_after=round(os.getloadavg()[0], 2),
            cores=os.cpu_count(),
        )
        rows.append(row)
        print(json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
