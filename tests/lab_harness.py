"""Start an isolated JupyterLab on loopback and drive it with Debian's Chromium.

Used by the browser test and by benchmarks/bench_browser.py. No browser is
downloaded: Playwright drives /usr/bin/chromium.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


@contextmanager
def jupyterlab(tmp: Path, notebooks: Path):
    """Run JupyterLab on a copy of ``notebooks``; yield its base URL; stop everything after."""
    home = tmp / "home"
    root = tmp / "root"
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # No news pop-up, no update check.
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    home.mkdir()
    shutil.copytree(notebooks, root)
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
    )
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp / "jupyterlab.log", "w")
    proc = subprocess.Popen(
        cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited: {(tmp / 'jupyterlab.log').read_text()}")
            try:
                _get(f"{base}/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not answer on /api/status in 90 s") from None
                time.sleep(0.3)
        yield base
    finally:
        try:  # stop the kernels, then the server
            for k in _get(f"{base}/api/kernels"):
                req = urllib.request.Request(f"{base}/api/kernels/{k['id']}", method="DELETE")
                urllib.request.urlopen(req, timeout=10).close()
        except OSError:
            pass
        stop(proc)
        log.close()


def stop(proc: subprocess.Popen) -> None:
    """End a process started with ``start_new_session=True`` and all its children."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextmanager
def chromium_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            yield page
        finally:
            browser.close()


def open_and_run_all(page, base: str, notebook: str, timeout_ms: int = 180_000) -> None:
    """Open a notebook in JupyterLab, wait for its kernel, run all cells, wait until idle."""
    page.goto(f"{base}/lab/tree/{notebook}")
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
        "&& window.jupyterapp.shell.currentWidget.sessionContext "
        "&& window.jupyterapp.shell.currentWidget.sessionContext.session "
        "&& window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
        timeout=timeout_ms,
    )
    page.evaluate("""async () => {
        const w = window.jupyterapp.shell.currentWidget;
        await w.sessionContext.ready;
        await window.jupyterapp.commands.execute('notebook:run-all-cells');
    }""")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext"
        ".session.kernel.status === 'idle'",
        timeout=timeout_ms,
    )


def click_and_time(page, button, image) -> float:
    """Click ``button``; milliseconds until ``image`` shows a new, decoded picture."""
    return page.evaluate(
        """([btn, img]) => new Promise((resolve) => {
            const before = img.src;
            const t0 = performance.now();
            const obs = new MutationObserver(async () => {
                if (img.src !== before) {
                    obs.disconnect();
                    await img.decode();
                    resolve(performance.now() - t0);
                }
            });
            obs.observe(img, {attributes: true, attributeFilter: ['src']});
            btn.click();
        })""",
        [button.element_handle(), image.element_handle()],
    )


def explorer_parts(page):
    """Locators of the explorer in the page: its image, status and a control's button."""
    status = page.locator(".mhsa-status").first
    box = page.locator(".widget-vbox", has=page.locator(".mhsa-status")).last
    image = box.locator("img").first

    def button(control: str, label: str):
        group = box.locator(".widget-toggle-buttons", has=page.locator("label", has_text=control))
        return group.get_by_role("button", name=label, exact=True)

    return image, status, button
