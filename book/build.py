"""Build the course as a static website: ``python book/build.py`` (from the repository root).

Every notebook of the course becomes a page of ``build/site/`` (``index.html``
at the top), in course order, with the contents sidebar, offline search and
page-to-page links (Sphinx with myst-nb and the Furo theme, configured in
``book/conf.py``). :mod:`book.pages` runs each notebook on the course's
reference and shows the learner's stubs; each widget is drawn in the page by the
notebook's own module from its traits computed at build time (:mod:`book.embed`); each
page links its student notebook, which the site serves for download, and a Binder launch.

The notebooks are first rebuilt from their sources (``course/build.py``: ``course/*.py``
to ``solutions/mhsa/`` and ``notebooks/mhsa/``; a notebook that changes is written into
the repository and named), so the site always shows ``course/`` as it is. ``--only STEM
...`` builds a partial site, by default into ``build/site-partial/``: the full site
``build/site/`` is never touched by it. The scratch (the pages Sphinx reads, its cache,
the notebooks' runs) lives in a private temporary folder (mode 0700) removed at the end,
even on failure: ``build/`` holds only the sites. Two builds of one commit are byte for
byte the same (tests/test_book.py builds twice and compares).

Offline: the notebooks run on this machine, the math is typeset at build time by
MathJax run with Node.js (:mod:`book.typeset`) and its fonts are copied from the
``sphinx-mathjax-offline`` package into the site, the widgets' modules from
``mhsa_helpers/widgets/front/``, and no page loads anything from elsewhere. The widgets'
modules go into one plain script (:func:`classic`: each module with what it imports, as
the notebook's widget gets it), so a page opened from disk draws them too (a browser
loads no ES module from a file). Needs the packages of ``requirements-site.txt`` (the
README's site command installs them in ``.site-venv``); without them it says so, with
that command.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if __name__ == "__main__":  # run as the build: this checkout's package, here and in every
    # process it starts (kernels, nbgrader); another's stops them in one sentence
    os.environ["MHSA_CHECKOUT"] = str(ROOT)  # (mhsa_helpers/checkout.py)
#: The full site, and where ``--only`` writes a partial one unless told otherwise.
SITE = ROOT / "build" / "site"
PARTIAL = ROOT / "build" / "site-partial"
#: The packages the build needs (its own and, through ``-r``, the runtime's).
REQUIREMENTS = ROOT / "requirements-site.txt"
#: What builds before the scratch moved out of ``build/`` left there: the pages Sphinx read,
#: and myst-nb's copies of them.
LEFT_BEHIND = (ROOT / "build" / "book", ROOT / "build" / "jupyter_execute")
SPHINX = [sys.executable, "-m", "sphinx", "-b", "html", "-q"]


def site_command(readme: Path = ROOT / "README.md") -> str:
    """The README's site command: the first line of the fenced block after
    ``<!-- site-command -->``."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    at = lines.index("<!-- site-command -->")
    return lines[at + 2].strip()


def missing_packages(requirements: Path = REQUIREMENTS) -> list[str]:
    """The pins of ``requirements`` (then of the files it includes with ``-r``) that this
    Python does not have: ``"sphinx==9.0.4"`` not installed, or ``"sphinx==9.0.4 (9.0.3
    installed)"``. Editable installs (``-e``) are not pins and are left out."""
    missing, included = [], []
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r"):
            included += missing_packages(requirements.parent / line[2:].strip())
            continue
        if not line or line.startswith("-"):
            continue
        name, _, want = line.partition("==")
        name = re.sub(r"\[.*\]", "", name).strip()
        try:
            have = distribution(name).version
        except PackageNotFoundError:
            missing.append(line)
            continue
        if want and have != want.strip():
            missing.append(f"{line} ({have} installed)")
    return missing + included  # the file's own first: the site's, then the runtime's


def require_site_environment() -> None:
    """Stop, with the README's site command, where this Python lacks a package of
    ``requirements-site.txt`` (or has another version of it)."""
    missing = missing_packages()
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise SystemExit(
            f"book/build.py runs in the site environment, and this Python ({sys.executable}) "
            f"lacks {len(missing)} of requirements-site.txt's packages: {shown}. Make the "
            f"environment and build with the README's site command:\n\n    {site_command()}\n"
        )


if __name__ == "__main__":  # before the imports below, which need the site environment
    require_site_environment()

import nbformat  # noqa: E402

from book.pages import ARCHIVE, DOWNLOADS, STUDENT, archive, run_all, title  # noqa: E402
from book.search import write as write_search  # noqa: E402
from mhsa_helpers.exercises import NOTEBOOKS  # noqa: E402
from mhsa_helpers.widgets.base import FRONT, esm  # noqa: E402


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
    """The front page: what the course is, the notebooks in order by their titles (plain
    text, :func:`book.pages.title`), the archive of every student notebook, the contents."""
    rows = "\n".join(f"1. [{title(stem)}](pages/{stem}.ipynb)" for stem in stems)
    toc = "\n".join(f"pages/{stem}" for stem in stems)
    return (
        "# The course, to read\n\n"
        "The nine steps of multi-head self-attention, one notebook each, then a capstone, "
        "six extensions, the backward pass and a tiny trained model. Here you can read the "
        "whole course, see every figure and step the attention explorer through the nine "
        "steps without installing anything: your browser draws the pictures with the "
        "notebooks' own code, from numbers computed with the course's reference, and the "
        "explorer computes every example, number of heads and mask in the page.\n\n"
        "To write the functions yourself, each page links its notebook, to download, to "
        "open on Binder or in Colab; the checks then answer your own code at once.\n\n"
        f"{rows}\n\n"
        f"All {len(NOTEBOOKS)} notebooks in one file: "
        f'<a href="{DOWNLOADS}/{ARCHIVE}" download>{ARCHIVE}</a> (unzip it into a folder '
        "of its own: the capstone reads the notebooks beside it).\n\n"
        f"```{{toctree}}\n:maxdepth: 1\n:caption: The course\n:hidden:\n\n{toc}\n```\n"
    )


def fresh_notebooks(scratch: Path) -> list[str]:
    """The course's notebooks rebuilt from ``course/``: ``course/build.py`` into ``scratch``,
    then each notebook of ``solutions/mhsa/`` and ``notebooks/mhsa/`` that differs from the
    one built (:func:`same_notebook`) is replaced by it (the others are left alone, their
    times too).

    Returns
    -------
    list of str
        The notebooks written, from the repository's root (none when ``course/`` and its
        notebooks agree, as in every commit: tests/test_course.py).
    """
    built = subprocess.run(
        [sys.executable, str(ROOT / "course" / "build.py"), "--root", str(scratch)],
        cwd=ROOT,  # nbgrader reads the course's configuration from here
        env=dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"),
        capture_output=True,
        text=True,
    )
    if built.returncode:
        raise SystemExit(
            f"course/build.py could not build the notebooks from course/ "
            f"(exit {built.returncode}):\n{built.stdout}{built.stderr}"
        )
    written = []
    for kind in ("solutions", "notebooks"):
        for new in sorted((scratch / kind / "mhsa").glob("*.ipynb")):
            old = ROOT / kind / "mhsa" / new.name
            if not old.is_file() or not same_notebook(old, new):
                shutil.copyfile(new, old)
                written.append(old.relative_to(ROOT).as_posix())
    return written


def same_notebook(a: Path, b: Path) -> bool:
    """Whether notebooks ``a`` and ``b`` are the same but perhaps for their
    ``language_info``, which ``course/build.py`` takes from the Python that runs it
    (another patch release, as a CI's, is no edit of the course)."""
    if a.read_bytes() == b.read_bytes():
        return True
    na, nb = (json.loads(p.read_text(encoding="utf-8")) for p in (a, b))
    for n in (na, nb):
        n.get("metadata", {}).pop("language_info", None)
    return na == nb


def is_site(folder: Path) -> bool:
    """Whether ``folder`` may be replaced by a new site: absent, empty, or a site this
    command wrote (its ``index.html`` and ``_static/``)."""
    if not folder.exists():
        return True
    return folder.is_dir() and (
        not any(folder.iterdir())
        or ((folder / "index.html").is_file() and (folder / "_static").is_dir())
    )


def build(out: Path, stems: list[str], at_once: int) -> None:
    """Rebuild the notebooks from ``course/``, run them, write the pages and render the
    site into ``out`` (replaced only once the new one is complete). All scratch goes to a
    private temporary folder, removed at the end whatever happens."""
    with tempfile.TemporaryDirectory(prefix="mhsa-book-") as tmp:  # mode 0700
        scratch = Path(tmp)
        started = time.monotonic()
        written = fresh_notebooks(scratch / "course")
        said = f": rebuilt {', '.join(written)} (commit them with course/)" if written else ""
        print(
            f"notebooks built from course/ in {time.monotonic() - started:.0f} s{said}", flush=True
        )

        source, extra = scratch / "source", scratch / "extra"
        (source / "pages").mkdir(parents=True)
        (extra / DOWNLOADS).mkdir(parents=True)
        files = static(scratch / "static")

        started = time.monotonic()
        pages = run_all(stems, at_once, scratch / "runs", progress=_progress)
        signal.signal(signal.SIGTERM, _stop)  # nbclient's own handler left SIGTERM's default
        ran = f"{len(pages)} notebook{'s' * (len(pages) != 1)}"
        print(f"ran {ran} in {time.monotonic() - started:.0f} s", flush=True)
        for stem, nb in pages.items():
            nbformat.write(nb, source / "pages" / f"{stem}.ipynb")
            shutil.copy2(STUDENT / f"{stem}.ipynb", extra / DOWNLOADS / f"{stem}.ipynb")
        archive([STUDENT / f"{nb.stem}.ipynb" for nb in NOTEBOOKS], extra / DOWNLOADS / ARCHIVE)
        (source / "index.md").write_text(index(stems))

        # Sphinx writes into the scratch too: myst-nb puts its copies of the pages
        # (jupyter_execute/) beside the output folder.
        html = scratch / "html"
        env = dict(os.environ, MHSA_BOOK_STATIC=str(files), MHSA_BOOK_EXTRA=str(extra))
        started = time.monotonic()
        subprocess.run(
            [
                *SPHINX,
                "-c",
                str(ROOT / "book"),
                "-d",
                str(scratch / "doctrees"),
                str(source),
                str(html),
            ],
            check=True,
            env=env,
        )
        (html / ".buildinfo").unlink(missing_ok=True)  # Sphinx's hashes of its configuration
        for debug in html.glob("_static/**/*.map"):  # the theme's source maps: for its developers
            debug.unlink()
        print(write_search(html), flush=True)  # _static/mhsa-search-data.js: book/search.py
        rendered = time.monotonic() - started
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(html, out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"rendered {_shown(out)} in {rendered:.0f} s: {size / 1e6:.1f} MB", flush=True)


def _progress(stem: str, seconds: float) -> None:
    print(f"  {stem:<18} {seconds:5.1f} s", flush=True)


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def _stop(signum, frame):
    """SIGTERM (a CI's cancel, ``kill``) ends the build as Ctrl-C does: the scratch is
    removed on the way out."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """The command line: ``python book/build.py [--only STEM ...] [--out DIR] [--kernels N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="STEM",
        help=f"these notebooks only: a partial site, into {_shown(PARTIAL)}/ unless --out says "
        f"where ({_shown(SITE)}/, the full site, is left alone)",
    )
    parser.add_argument(
        "--out", type=Path, help=f"where to write the site (default {_shown(SITE)}/)"
    )
    parser.add_argument("--kernels", type=int, default=2, help="notebooks run at once")
    args = parser.parse_args(argv)
    stems = [nb.stem for nb in NOTEBOOKS]
    if args.only:
        unknown = sorted(set(args.only) - set(stems))
        if unknown:
            parser.error(f"no such notebook: {', '.join(unknown)}; expected some of {stems}")
        stems = [s for s in stems if s in args.only]
    out = (args.out or (PARTIAL if args.only else SITE)).resolve()
    if args.only and out == SITE:
        parser.error(
            f"--only builds a partial site; {_shown(SITE)}/ is the full one: write it elsewhere "
            f"(the default, {_shown(PARTIAL)}/, or --out DIR)"
        )
    if not is_site(out) or out in (ROOT, *ROOT.parents):
        parser.error(f"--out {out} holds files that are not a site: give a new or empty folder")
    for old in LEFT_BEHIND:
        if old.is_dir():
            shutil.rmtree(old)
            print(f"removed {_shown(old)}/, scratch an earlier build left", flush=True)
    signal.signal(signal.SIGTERM, _stop)
    what = f"a partial site ({len(stems)} of {len(NOTEBOOKS)} pages)" if args.only else "the site"
    print(f"building {what} into {_shown(out)}/", flush=True)
    build(out, stems, args.kernels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
