"""Notebooks run by fresh ``python3`` kernels, several at a time (nbclient's async API)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute_notebooks(jobs: list[tuple], at_once: int = 2) -> dict:
    """Run every notebook of ``jobs``, ``at_once`` kernels at a time.

    Parameters
    ----------
    jobs : list of (key, notebook path, folder)
        Each notebook runs beside copies of the notebooks of ``folder`` (the
        start-here and capstone notebooks read the other notebooks of theirs),
        in a temporary folder of its own.
    at_once : int, default=2
        Kernels running at the same time (the machine's cores).

    Returns
    -------
    dict
        ``{key: (executed notebook, exception or None)}``: a notebook that
        fails is returned with the error its run raised, for its own test to
        report.
    """
    return asyncio.run(_execute_all(jobs, at_once))


async def _execute_all(jobs: list[tuple], at_once: int) -> dict:
    """Run each notebook of ``jobs`` (key, notebook, folder) in a fresh kernel, ``at_once`` at
    a time, beside copies of its folder's notebooks: {key: (executed notebook, error or None)}."""
    gate = asyncio.Semaphore(at_once)

    async def one(key, path, folder, tmp):
        for p in folder.glob("*.ipynb"):
            (tmp / p.name).write_bytes(p.read_bytes())
        nb = nbformat.read(str(path), as_version=4)
        client = NotebookClient(
            nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp)}}
        )
        async with gate:
            try:
                await client.async_execute()
            except Exception as exc:  # told by the notebook's own test, not here
                return key, (nb, exc)
        return key, (nb, None)

    with tempfile.TemporaryDirectory() as base:
        runs = []
        for i, (key, path, folder) in enumerate(jobs):
            tmp = Path(base) / str(i)
            tmp.mkdir()
            runs.append(one(key, path, folder, tmp))
        return dict(await asyncio.gather(*runs))
