"""The static edition's pages: notebooks run on the reference, shown as the learner meets them.

For each notebook of the course (:data:`mhsa_helpers.exercises.NOTEBOOKS`):

1. the instructor version (``solutions/mhsa/NN.ipynb``) is run by a fresh
   ``python3`` kernel beside copies of its folder's notebooks, as test_course
   runs it, so that every output is what the course's reference answers give;
   a last cell, not kept, takes every widget the notebook made, drawn with
   the course's functions (:func:`book.embed.embed_all`);
2. cell by cell (the two versions share their cell ids), the source and the
   metadata come from the student version (``notebooks/mhsa/NN.ipynb``): the
   answer cells show the learner's stub, the test cells the visible check
   only; the outputs stay the reference's;
3. every widget output is replaced by its traits in the page, drawn there by
   the notebook's own module (:func:`book.embed.html`), and a note under the
   title links the student notebook (downloadable from the site) and a
   Binder launch of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from book import titles
from book.embed import html
from mhsa_helpers.exercises import of_notebook

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "mhsa"
STUDENT = ROOT / "notebooks" / "mhsa"
#: The repository on GitHub, as the README's Binder badge names it.
REPOSITORY = "mhsa-course/mhsa-course"
REPOSITORY_URL = f"https://github.com/{REPOSITORY}#readme"
BINDER = f"https://mybinder.org/v2/gh/{REPOSITORY}/HEAD?urlpath=lab/tree/notebooks/mhsa/"
#: Colab opens a notebook of the repository; its first cell installs the course's package.
COLAB = f"https://colab.research.google.com/github/{REPOSITORY}/blob/main/notebooks/mhsa/"
#: Where the site keeps the student notebooks (``html_extra_path``), from the site's root.
DOWNLOADS = "notebooks"
#: Every student notebook in one file, in ``DOWNLOADS`` (:func:`archive`).
ARCHIVE = "mhsa-notebooks.zip"
#: The time every entry of the archive carries (zip's earliest), so that it is the same file
#: whenever it is built.
ARCHIVE_TIME = (1980, 1, 1, 0, 0, 0)
WIDGET = "application/vnd.jupyter.widget-view+json"
#: The tag (a CSS class ``tag_…`` on the page) of a cell whose output speaks of "your" code.
REFERENCE_TAG = "mhsa-reference-output"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"  # kept by nbclient in the metadata
#: The hidden last cell: every widget of the notebook, embedded (book/embed.py).
EMBED = "import book.embed\nbook.embed.embed_all({path!r})"

#: Clock readings a run prints: the seconds it took (``(3.6 s)``, the training's summary)
#: and tqdm's elapsed time, time left and rate (``[00:03<00:00, 219.71step/s, ``). They
#: differ from run to run and machine to machine and say nothing of the course: the page
#: leaves them out, so that two builds of one commit give the same page. (tqdm's widget
#: spaces its numbers with figure spaces, U+2007: any space is taken.)
SECONDS = re.compile(r"\s\(\d+(?:\.\d+)?\ss\)")
TQDM_CLOCK = re.compile(
    r"\[(?:\d+:)?\d\d:\d\d(?:<|&lt;)(?:\?|(?:\d+:)?\d\d:\d\d)(?:,\s[^,\]]*)?(?:,\s)?"
)


class PageFailed(RuntimeError):
    """A notebook that did not run to its end on the course's reference."""


def run_all(stems: list[str], at_once: int = 2, base: Path | None = None, progress=None) -> dict:
    """Every notebook of ``stems`` run and made into its page, ``at_once`` kernels at a time.

    Parameters
    ----------
    stems : list of str
        The notebooks, e.g. ``["07_softmax"]``.
    at_once : int
        How many kernels run at a time.
    base : Path, optional
        A new folder for the runs (each notebook beside copies of its folder's, the
        kernels' connection files and sockets: :func:`socket_folder`); by default a
        temporary one, removed.
    progress : callable, optional
        Called as ``progress(stem, seconds)`` as each notebook finishes running.

    Returns
    -------
    dict
        ``{stem: notebook}``: the page as :func:`page` makes it.

    Raises
    ------
    PageFailed
        A notebook raised outside a cell tagged ``raises-exception``, named
        with the cell's error.
    """
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )  # the kernels import book.embed
    with contextlib.ExitStack() as stack:
        if base is None:
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mhsa-book-")))
        else:
            base.mkdir(mode=0o700)
        sockets = socket_folder(base, stack)
        return asyncio.run(_run_all(stems, at_once, base, sockets, progress))


#: The longest path of a Unix socket (``sun_path``: 108 bytes on Linux, 104 on macOS),
#: with room to spare.
SOCKET_PATH = 100


def socket_folder(base: Path, stack: contextlib.ExitStack) -> Path | None:
    """A private folder (0700) for the kernels' Unix sockets: in ``base`` where a socket's
    path fits (``<folder>/NN/kernel-ipc-NN``), else a new temporary folder of ``/tmp``
    (removed when ``stack`` closes); None where there are no Unix sockets (Windows: the
    kernels use TCP)."""
    if os.name != "posix":
        return None
    folder = base / "k"
    if len(os.fsencode(folder / "00" / "kernel-ipc-00")) > SOCKET_PATH:
        return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mhsa-k-", dir="/tmp")))
    folder.mkdir(mode=0o700)
    return folder


def kernel_manager(folder: Path | None) -> AsyncKernelManager:
    """A ``python3`` kernel talking over Unix sockets in ``folder`` (jupyter_client's IPC
    transport), not TCP (only where ``folder`` is None).

    Over TCP, ipykernel warns at every start that its messages go unencrypted
    (``IPKernelApp.init_sockets``: "Kernel is running over TCP without encryption", unless
    the manager provisions CurveZMQ keys): on loopback, for a build, that is only noise,
    but a Unix socket in a folder of this user's (0700) is also private, so the cause is
    gone rather than the warning filtered.
    """
    if folder is None:
        return AsyncKernelManager(kernel_name="python3")
    folder.mkdir(mode=0o700)
    return AsyncKernelManager(
        kernel_name="python3", transport="ipc", connection_file=str(folder / "kernel.json")
    )


async def _run_all(
    stems: list[str], at_once: int, base: Path, sockets: Path | None, progress
) -> dict:
    gate = asyncio.Semaphore(at_once)

    async def one(stem: str, tmp: Path):
        for p in SOLUTIONS.glob("*.ipynb"):
            shutil.copy(p, tmp / p.name)
        nb = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
        embedded = tmp / "embedded.json"
        nb.cells.append(nbformat.v4.new_code_cell(EMBED.format(path=str(embedded))))
        client = NotebookClient(
            nb,
            km=kernel_manager(sockets and sockets / stem.split("_")[0]),
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(tmp)}},
        )
        async with gate:
            started = time.monotonic()
            try:
                await client.async_execute(cleanup_kc=True)  # the kernel is ours to stop
            except CellExecutionError as exc:
                raise PageFailed(f"{stem}.ipynb did not run on the reference: {exc}") from None
            if progress is not None:
                progress(stem, time.monotonic() - started)
        nb.cells.pop()
        return stem, page(stem, nb, json.loads(embedded.read_text()))

    runs = []
    for stem in stems:
        (base / stem).mkdir()
        runs.append(one(stem, base / stem))
    return dict(await asyncio.gather(*runs))


def page(stem: str, executed, embedded: dict):
    """The page of notebook ``stem``: the learner's sources, the reference's outputs.

    Parameters
    ----------
    stem : str
        The notebook, e.g. ``"07_softmax"``.
    executed : nbformat.NotebookNode
        The instructor version, run.
    embedded : dict of str to dict
        ``{widget model id: {entry, traits}}`` (:func:`book.embed.embed_all`).

    Returns
    -------
    nbformat.NotebookNode
        The student version's cells with the run's outputs, each widget
        output replaced by its embedding, and the links under the title.

    Raises
    ------
    PageFailed
        The two versions' cells do not match one to one, or a widget
        output is neither embedded nor a progress bar.
    """
    student = nbformat.read(STUDENT / f"{stem}.ipynb", as_version=4)
    states = executed.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    ran = {c.id: c for c in executed.cells}
    if [c.id for c in student.cells] != [c.id for c in executed.cells]:
        raise PageFailed(f"{stem}: the student and instructor versions' cells differ")
    for cell in student.cells:
        if cell.cell_type == "markdown":
            cell.source = rows_for_sphinx(cell.source)
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in merged_streams(ran[cell.id].outputs):
            data = out.get("data", {})
            if WIDGET in data:
                model = data[WIDGET]["model_id"]
                shown = html(embedded[model]) if model in embedded else progress_bar(model, states)
                if shown is None:
                    raise PageFailed(f"{stem}: a widget ({model}) was neither embedded nor a bar")
                out = nbformat.v4.new_output("display_data", data={"text/html": shown})
            outputs.append(out)
        cell.outputs = outputs
        cell.execution_count = ran[cell.id].execution_count
        if speaks_to_the_learner(outputs):
            tags = cell.metadata.setdefault("tags", [])
            tags.append(REFERENCE_TAG)
    student.metadata.pop("widgets", None)
    student.cells.insert(1, links(stem))
    return student


#: A display equation, as the course's notebooks write them (``$$ … \tag{5.1}$$``).
DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)


def rows_for_sphinx(markdown: str) -> str:
    r"""A markdown cell's text with each display equation's row breaks ``\\`` written ``\cr``.

    Sphinx puts a display equation holding ``\\`` (a row of ``cases`` or ``pmatrix``)
    into a ``split`` environment, where MathJax refuses the equation's ``\tag``;
    ``\cr`` is the same row break to MathJax, and Sphinx leaves it alone.
    """
    return DISPLAY.sub(lambda m: "$$" + m.group(1).replace("\\\\", "\\cr ") + "$$", markdown)


def merged_streams(outputs) -> list:
    """``outputs`` with each run of consecutive stream outputs of one name (stdout, stderr)
    made one, as JupyterLab shows them, and no clock reading in them (:func:`unclocked`).

    How a cell's printing is cut into messages depends on timing (the kernel sends what
    it has every so often): kept as they came, two runs of one notebook would give pages
    that differ.
    """
    merged = []
    for out in outputs:
        last = merged[-1] if merged else None
        if (
            out.output_type == "stream"
            and last is not None
            and last.output_type == "stream"
            and last.name == out.name
        ):
            merged[-1] = nbformat.v4.new_output("stream", name=out.name, text=last.text + out.text)
        else:
            merged.append(out)
    for k, out in enumerate(merged):
        if out.output_type == "stream":
            merged[k] = nbformat.v4.new_output("stream", name=out.name, text=unclocked(out.text))
    return merged


def unclocked(text: str) -> str:
    """``text`` without the clock readings of a run (:data:`SECONDS`, :data:`TQDM_CLOCK`)."""
    return re.sub(r"\s?\[\]", "", TQDM_CLOCK.sub("[", SECONDS.sub("", text)))


def speaks_to_the_learner(outputs) -> bool:
    """Whether an output addresses the reader's own code: a check's verdict, "your", "yours".

    Under a stub, such an output would read as if the reader's function had
    run; the page labels it as what the course's reference answers give.
    """
    shown = []
    for o in outputs:
        data = o.get("data", {})
        if "mhsa-book-widget" in str(data.get("text/html", "")):
            continue  # a widget says itself what drew it
        shown += [str(o.get("text", "")), str(data.get("text/plain", ""))]
        shown.append(re.sub(r"<[^>]+>", "", str(data.get("text/html", ""))))
    text = " ".join(shown)
    return "\u2713" in text or "\u2717" in text or re.search(r"\b[Yy]ours?\b", text) is not None


def progress_bar(model: str, states: dict) -> str | None:
    """A tqdm progress bar (an HBox: label, bar, counts) as it ended, in HTML; else None.

    The widgets' last states are the run's (nbclient keeps them in the notebook's
    metadata); the training loop's bar is shown as it was when training ended, without
    its clock (:func:`unclocked`).
    """
    box = states.get(model, {})
    if box.get("model_name") != "HBoxModel":
        return None
    parts = [states.get(ref.removeprefix("IPY_MODEL_"), {}) for ref in box["state"]["children"]]
    names = [p.get("model_name") for p in parts]
    if names != ["HTMLModel", "FloatProgressModel", "HTMLModel"]:
        return None
    left, bar, right = (p["state"] for p in parts)
    return (
        f'<div class="mhsa-book-progress">{left.get("value", "")} '
        f'<progress value="{bar.get("value", 0)}" max="{bar.get("max", 1)}"></progress> '
        f"{unclocked(right.get('value', ''))}</div>"
    )


def links(stem: str):
    """The note under a page's title: the notebook to download, Binder, Colab, whose outputs
    these are."""
    exercises = of_notebook(stem)
    work = (
        "the exercises: " + ", ".join(f"<code>{e.name}</code>" for e in exercises)
        if exercises
        else "this notebook"
    )
    text = (
        '<div class="mhsa-book-links">\n'
        f"<p>To work {work}, open this page as a notebook: "
        f'<a href="../{DOWNLOADS}/{stem}.ipynb" download="{stem}.ipynb">download '
        f"<code>{stem}.ipynb</code></a>, "
        f'<a href="{BINDER}{stem}.ipynb">launch it on Binder</a> or '
        f'<a href="{COLAB}{stem}.ipynb">open it in Colab</a>. Where the course\'s package '
        "is missing, as on Colab, the notebook's first cell installs it; the "
        f'<a href="{REPOSITORY_URL}">README</a>'
        "'s two commands install the course's own JupyterLab.</p>\n"
        "<p>Here, the code cells show what you start from (your stubs, the visible "
        "checks); every output was computed with the course's reference answers, so it "
        "is what a correct function gives. Where an output speaks of <em>your</em> "
        "function or shows a check's \u2713, it is marked: that is what you will see once "
        "yours is right.</p>\n"
        "</div>"
    )
    cell = nbformat.v4.new_markdown_cell(text)
    cell.id = f"book-links-{stem.split('_')[0]}"
    return cell


def archive(notebooks: list[Path], dest: Path) -> Path:
    """Write the notebooks into the zip file ``dest``, in folder ``mhsa/``, the same bytes
    whenever they are the same: entries sorted by name, each dated :data:`ARCHIVE_TIME`,
    compressed at one fixed level, with the permissions of an ordinary file.

    Parameters
    ----------
    notebooks : list of Path
        The files to put in, e.g. every student notebook.
    dest : Path
        The archive to write (replaced if it exists).

    Returns
    -------
    Path
        ``dest``.
    """
    with zipfile.ZipFile(dest, "w") as z:
        for path in sorted(notebooks, key=lambda p: p.name):
            entry = zipfile.ZipInfo(f"mhsa/{path.name}", date_time=ARCHIVE_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o100644 << 16  # a regular file, rw-r--r--
            z.writestr(entry, path.read_bytes(), compresslevel=9)
    return dest


def plain(markdown: str) -> str:
    """A heading's text as plain text: emphasis and code marks taken out, its math as the
    sidebar and the tab show it (:func:`book.titles.plain`).

    ``"Step 5 — The score matrix $Z$"`` gives ``"Step 5 — The score matrix Z"``.
    """
    return " ".join(re.sub(r"\*|`", "", titles.plain(markdown)).split())


def title(stem: str) -> str:
    """The student notebook's title, its first heading, as plain text (:func:`plain`).

    Raises
    ------
    PageFailed
        The notebook's first cell holds no heading.
    """
    first = nbformat.read(STUDENT / f"{stem}.ipynb", as_version=4).cells[0]
    heading = re.search(r"^#+\s+(.+)$", first.source if first.cell_type == "markdown" else "", re.M)
    if heading is None:
        raise PageFailed(f"{stem}: its first cell has no heading to be its title")
    return plain(heading.group(1))
