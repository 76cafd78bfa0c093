"""Time executing every notebook of the course against the floor.

The floor, measured in the same run, is what any notebook costs: starting a
kernel and running ``import numpy, matplotlib.pyplot`` in it, once per
notebook. Run: python benchmarks/bench_course.py [--which solutions|notebooks]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]


def run(nb, cwd) -> float:
    t0 = time.perf_counter()
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    ).execute()
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--which", default="solutions", choices=["solutions", "notebooks"])
    a = p.parse_args()
    src = ROOT / a.which / "mhsa"
    paths = sorted(src.glob("*.ipynb"))
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            shutil.copy(path, tmp)
        floor_nb = new_notebook(cells=[new_code_cell("import numpy, matplotlib.pyplot")])
        print(f"{'notebook':<22} {'run (s)':>8} {'floor (s)':>10}")
        total = floor_total = 0.0
        for path in paths:
            nb = nbformat.read(str(path), as_version=4)
            t = run(nb, tmp)
            f = run(nbformat.from_dict(floor_nb), tmp)
            total += t
            floor_total += f
            print(f"{path.stem:<22} {t:>8.2f} {f:>10.2f}")
    print(
        f"{'all ' + str(len(paths)):<22} {total:>8.2f} {floor_total:>10.2f}   "
        f"ratio {total / floor_total:.2f}"
    )


if __name__ == "__main__":
    main()
