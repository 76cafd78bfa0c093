"""How long the static edition takes to build, and how large it is.

Runs the README's site command's build step (``.site-venv/bin/python
book/build.py``; make ``.site-venv`` with the README's site command first),
timed, then weighs the site: the whole ``build/site`` folder, each page
with every file of the site it loads (images, scripts, style sheets, fonts
named by its style sheets are counted once per page), and the widgets' data each
page embeds (book/embed.py), gzip-compressed. Issue 35's limits: a build in at
most 10 minutes on 2 cores, the whole site at most 80 MB; issue 46's: the explorer's
data for one page at most 150 kB compressed; issue 48's: every page under 1.5 MB with
what it loads, the front page under 0.5 MB (every page's weight is printed, and the
front page's).

The build's timing: wall time, CPU time (the build's and every process it waited
for: the course's notebook build, the kernels, Sphinx), and the machine's cores and
load average before and after (the build's own load included in the latter).

Run: python benchmarks/bench_site.py [--no-build]
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "site"
#: The explorer's data for one page, compressed, at most (issue 46).
EXPLORER_BUDGET = 150_000
_EMBEDDED = re.compile(
    r'<div class="mhsa-book-widget" data-entry="([^"]+)"><script type="application/json">(.*?)'
    r"</script>",
    re.S,
)
sys.path.insert(0, str(ROOT))

from tests.support.site_check import (  # noqa: E402  (what test_site weighs, its limits)
    FRONT_LIMIT,
    PAGE_LIMIT,
    page_files,
)


def machine() -> str:
    """The machine's cores and load (1, 5 and 15-minute averages of runnable processes):
    a build's wall time means little without them."""
    loads = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores, load average {loads}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-build", action="store_true", help="weigh build/site as it is")
    args = parser.parse_args()
    if not args.no_build:
        python = ROOT / ".site-venv" / "bin" / "python"
        if not python.exists():
            sys.exit("no .site-venv: run the README's site command once first")
        print(f"before: {machine()}", flush=True)
        cpu, start = os.times(), time.perf_counter()
        subprocess.run([python, "book/build.py"], cwd=ROOT, check=True)
        wall, done = time.perf_counter() - start, os.times()
        used = sum(getattr(done, k) - getattr(cpu, k) for k in ("children_user", "children_system"))
        print(
            f"build: {wall:.0f} s wall, {used:.0f} s CPU (the build, its kernels, Sphinx: "
            f"{used / wall:.1f} cores busy on average); after: {machine()}"
        )
    total = sum(p.stat().st_size for p in SITE.rglob("*") if p.is_file())
    print(f"site: {total / 1e6:.1f} MB in {sum(1 for _ in SITE.rglob('*'))} files")
    weights = {
        page.relative_to(SITE): sum(page_files(SITE, page).values())  # the page included
        for page in sorted(SITE.rglob("*.html"))
    }
    print(f"each page with what it loads (limit {PAGE_LIMIT / 1e6:.1f} MB), heaviest first:")
    heavy = []
    for name, size in sorted(weights.items(), key=lambda kv: -kv[1]):
        limit = FRONT_LIMIT if str(name) == "index.html" else PAGE_LIMIT
        heavy += [name] if size >= limit else []
        print(f"  {name!s:<32} {size / 1e6:5.2f} MB{'  OVER' if size >= limit else ''}")
    front = weights.get(Path("index.html"), 0)
    print(f"front page: {front / 1e6:.2f} MB with what it loads (limit {FRONT_LIMIT / 1e6:.1f} MB)")
    print("widgets' data embedded in each page, gzip -9 (the explorer's at most 150 kB):")
    over = []
    for page in sorted(SITE.rglob("*.html")):
        found: dict[str, int] = {}
        for entry, data in _EMBEDDED.findall(page.read_text(encoding="utf-8")):
            found[entry] = found.get(entry, 0) + len(gzip.compress(data.encode(), 9))
        if found:
            said = ", ".join(f"{e} {n / 1e3:.1f} kB" for e, n in sorted(found.items()))
            print(f"  {page.relative_to(SITE)!s:<32} {said}")
        if found.get("explorer.js", 0) > EXPLORER_BUDGET:
            over.append(page.relative_to(SITE))
    if over:
        print(f"over the explorer's budget: {', '.join(map(str, over))}")
    if heavy:
        print(f"over the page weight limit: {', '.join(map(str, heavy))}")
    return 1 if over or heavy else 0


if __name__ == "__main__":
    sys.exit(main())
