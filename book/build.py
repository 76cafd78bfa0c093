"""Build the course as a static website: ``python book/build.py`` (from the repository root).

Every notebook of the course becomes a page of ``build/site/`` (``index.html``
at the top), in course order, with the contents sidebar, offline search and
page-to-page links (Sphinx with myst-nb and the book theme, configured in
``book/conf.py``). :mod:`book.pages` runs each notebook on the course's
reference and shows the learner's stubs; each widget is drawn in the page by the
notebook's own module from its traits computed at build time (:mod:`book.embed`); each
page links its student notebook, which the site serves for download, and a Binder launch.

Offline: the notebooks run on this machine, the math is typeset at build time by
MathJax run with Node.js (:mod:`book.typeset`) and its fonts are copied from the
``sphinx-mathjax-offline`` package into the site, the widgets' modules from
``mhsa_helpers/widgets/front/``, and no page loads anything from elsewhere. The widgets'
modules go into one plain script (:func:`classic`: each module with what it imports, as
the notebook's widget gets it), so a page opened from disk draws them too (a browser
loads no ES module from a file). Needs the packages of
``requirements-site.txt`` (the README's site command installs them in ``.site-venv``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from book.pages import DOWNLOADS, STUDENT, run_all  # noqa: E402
from book.search import write as write_search  # noqa: E402
from mhsa_helpers.exercises import NOTEBOOKS  # noqa: E402
from mhsa_helpers.widgets.base import FRONT, esm  # noqa: E402

#: The scratch folder: the pages Sphinx reads, MathJax, the files to download, Sphinx's cache.
WORK = ROOT / "build" / "book"
SPHINX = [sys.executable, "-m", "sphinx", "-b", "html", "-q"]


def static(dest: Path) -> Path:
    """The site's own files for ``_static``: MathJax 3's web fonts (the math is typeset at
    build time, :mod:`book.typeset`), from ``sphinx-mathjax-offline``, and the widgets'
    modules, in ``mhsa/``.

    Only the woff-v2 fonts are copied (0.4 MB; the package holds 24 MB). Returns the
    folder to serve as ``_static``.
    """
    try:
        dist = distribution("sphinx-mathjax-offline")
    except PackageNotFoundError:
        raise SystemExit(
            "sphinx-mathjax-offline is not installed: run the README's site command "
            "(it installs requirements-site.txt in .site-venv)."
        ) from None
    source = Path(dist.locate_file("sphinx-mathjax-offline/static/mathjax"))
    target = dest / "mathjax"
    (target / "output" / "chtml" / "fonts").mkdir(parents=True)
    shutil.copytree(
        source / "output" / "chtml" / "fonts" / "woff-v2",
        target / "output" / "chtml" / "fonts" / "woff-v2",
    )
    scripts = ",\n".join(f"{p.name!r}: {classic(p.name)}" for p in sorted(FRONT.glob("*.js")))
    (dest / "mhsa-widgets.js").write_text(f"window.mhsaModules = {{\n{scripts}\n}};\n")
    return dest


def classic(entry: str) -> str:
    """Module ``entry`` of ``front/`` as an expression a plain script can hold: the module
    with its imports inlined (:func:`mhsa_helpers.widgets.base.esm`, what a notebook's widget
    runs), called at once, giving its exports by name (``default`` included)."""
    code = esm(entry)
    names = re.findall(r"^export (?:async )?(?:function\*?|const|let|class) (\w+)", code, re.M)
    code, default = re.subn(r"^export default ", "const __default = ", code, flags=re.M)
    code = re.sub(r"^export ", "", code, flags=re.M)
    exports = ", ".join([*names, *(["default: __default"] if default else [])])
    return f"(() => {{\n{code}\nreturn {{ {exports} }};\n}})()"


def index(stems: list[str]) -> str:
    """The front page: what the course is, the notebooks in order, the table of contents."""
    steps = {nb.stem: nb.step for nb in NOTEBOOKS}
    rows = "\n".join(f"| [{stem}](pages/{stem}.ipynb) | {steps[stem]} |" for stem in stems)
    toc = "\n".join(f"pages/{stem}" for stem in stems)
    return (
        "# The course, to read\n\n"
        "The nine steps of multi-head self-attention, one notebook each, then a capstone, "
        "six extensions, the backward pass and a tiny trained model. Here you can read the "
        "whole course, see every figure and step the attention explorer through the nine "
        "steps without installing anything: your browser draws the pictures with the "
        "notebooks' own code, from numbers computed with the course's reference, and the "
        "explorer computes every example, number of heads and mask in the page.\n\n"
        "To write the functions yourself, each page links its notebook, to download or to "
        "open on Binder; the checks then answer your own code at once.\n\n"
        "| notebook | step |\n|---|---|\n"
        f"{rows}\n\n"
        f"```{{toctree}}\n:maxdepth: 1\n:caption: The course\n:hidden:\n\n{toc}\n```\n"
    )


def build(out: Path, stems: list[str], at_once: int) -> None:
    """Run the notebooks, write the pages and render the site into ``out``."""
    if WORK.exists():
        shutil.rmtree(WORK)
    source, extra = WORK / "source", WORK / "extra"
    (source / "pages").mkdir(parents=True)
    (extra / DOWNLOADS).mkdir(parents=True)
    files = static(WORK / "static")

    started = time.monotonic()
    pages = run_all(stems, at_once)
    print(f"ran {len(pages)} notebooks in {time.monotonic() - started:.0f} s", flush=True)
    for stem, nb in pages.items():
        nbformat.write(nb, source / "pages" / f"{stem}.ipynb")
        shutil.copy2(STUDENT / f"{stem}.ipynb", extra / DOWNLOADS / f"{stem}.ipynb")
    (source / "index.md").write_text(index(stems))

    if out.exists():
        shutil.rmtree(out)
    env = dict(os.environ, MHSA_BOOK_STATIC=str(files), MHSA_BOOK_EXTRA=str(extra))
    started = time.monotonic()
    subprocess.run(
        [*SPHINX, "-c", str(ROOT / "book"), "-d", str(WORK / "doctrees"), str(source), str(out)],
        check=True,
        env=env,
    )
    (out / ".buildinfo").unlink(missing_ok=True)
    for debug in out.glob("_static/**/*.map"):  # the theme's source maps: for its developers
        debug.unlink()
    print(write_search(out), flush=True)  # _static/mhsa-search-data.js: book/search.py
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"rendered {out} in {time.monotonic() - started:.0f} s: {size / 1e6:.1f} MB", flush=True)


def main(argv: list[str] | None = None) -> int:
    """The command line: ``python book/build.py [--out DIR] [--only STEM ...] [--kernels N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    parser.add_argument(
        "--only", nargs="+", metavar="STEM", help="these notebooks only (a partial site)"
    )
    parser.add_argument("--kernels", type=int, default=2, help="notebooks run at once")
    args = parser.parse_args(argv)
    stems = [nb.stem for nb in NOTEBOOKS]
    if args.only:
        unknown = sorted(set(args.only) - set(stems))
        if unknown:
            parser.error(f"no such notebook: {', '.join(unknown)}; expected some of {stems}")
        stems = [s for s in stems if s in args.only]
    build(args.out.resolve(), stems, args.kernels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
