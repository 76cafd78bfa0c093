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

ROOT = Path(__file__).resolve().parents[2]
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
def _jupyter(python, app, root: Path, env, log_path: Path, timeout: float, extra=(), cwd=...):
    """``python -m jupyter APP`` serving ``root`` on a free loopback port, no token; its base URL.

    It runs in ``cwd`` (default: ``root``; None: this process's folder).

    Waits until the server answers (``/api/status``); raises with the server's
    log if it exits first or does not answer in ``timeout`` seconds; stops
    its kernels, then the server, after.
    """
    port = free_port()
    cmd = [
        str(python),
        "-m",
        "jupyter",
        app,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={root}",
        *extra,
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=root if cwd is ... else cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"jupyter {app} exited: {log_path.read_text()}")
                try:
                    _get(f"{base}/api/status")
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"jupyter {app} did not answer in {timeout:.0f} s: "
                            + log_path.read_text()
                        ) from None
                    time.sleep(0.2)
            yield base
        finally:
            try:  # stop the kernels, then the server
                for k in _get(f"{base}/api/kernels"):
                    req = urllib.request.Request(f"{base}/api/kernels/{k['id']}", method="DELETE")
                    urllib.request.urlopen(req, timeout=10).close()
            except OSError:
                pass
            stop(proc)


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
    extra = ["--LabApp.expose_app_in_browser=True"]
    log_path = tmp / "jupyterlab.log"
    with _jupyter(sys.executable, "lab", root, env, log_path, 90, extra, cwd=None) as base:
        yield base


def stop(proc: subprocess.Popen) -> None:
    """End a process started with ``start_new_session=True`` and all its children."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


#: The window the course is made for: a laptop's 1400 x 900 browser window, whose page
#: (the viewport, below the browser's tabs and address bar) is about 1400 x 790 CSS px;
#: JupyterLab's side panel open.
LAPTOP = (1400, 790)


@contextmanager
def chromium_page(pixel_ratio: float = 1, viewport: tuple[int, int] = (1600, 1000)):
    """A headless Chromium page; ``pixel_ratio`` 2 is a hi-dpi screen."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(
                viewport={"width": viewport[0], "height": viewport[1]},
                device_scale_factor=pixel_ratio,
            )
            yield page
        finally:
            browser.close()


def open_and_run_all(
    page, base: str, notebook: str, timeout_ms: int = 180_000, reset: bool = False
) -> None:
    """Open a notebook in JupyterLab, wait for its kernel, run all cells, wait until idle.

    ``reset``: JupyterLab's workspace reset first (no notebook of before reopened, one area).
    """
    page.goto(f"{base}/lab/tree/{notebook}" + ("?reset" if reset else ""))
    page.wait_for_function(  # this notebook in front (a restored workspace may open others)
        "(name) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " return w && w.context && w.context.path.endsWith(name) && w.sessionContext"
        " && w.sessionContext.session && w.sessionContext.session.kernel; }",
        arg=notebook,
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


def time_update(page, figure, act, with_driver: bool = False):
    """Do ``act()``; milliseconds from the learner's input until ``figure`` is repainted.

    ``figure`` holds the explorer's SVG, which every update replaces. The
    clock starts at the first input event ``act`` makes (pointer down, key
    down, a dropdown's input or change), as the learner's click would: not
    before it, where Playwright waits for the control to stand still for two
    frames (about 35 ms the learner never waits). It stops at the second
    animation frame after the replacement (the first frame that shows it).
    With ``with_driver``: ``(from input, from before act)``. Fails after 60 s.
    """
    page.evaluate(
        """(fig) => {
            const armed = performance.now();
            let start = null;
            const kinds = ['pointerdown', 'mousedown', 'keydown', 'input', 'change'];
            const first = (e) => {
                const t = Math.min(e.timeStamp, performance.now());
                if (start === null) start = Math.max(armed, t);
            };
            kinds.forEach((k) => window.addEventListener(k, first, {capture: true}));
            window.__mhsaUpdate = new Promise((resolve, reject) => {
                const timer = setTimeout(() => reject(new Error('no new picture in 60 s')), 60000);
                const obs = new MutationObserver(() => {
                    obs.disconnect();
                    clearTimeout(timer);
                    requestAnimationFrame(() => requestAnimationFrame(() => {
                        kinds.forEach((k) => window.removeEventListener(k, first, {capture: true}));
                        const now = performance.now();
                        resolve([now - (start === null ? armed : start), now - armed]);
                    }));
                });
                obs.observe(fig, {childList: true, subtree: true, characterData: true});
            });
        }""",
        figure.element_handle(),
    )
    act()
    from_input, from_act = page.evaluate("() => window.__mhsaUpdate")
    return (from_input, from_act) if with_driver else from_input


def click_and_time(page, control, figure) -> float:
    """Click ``control``; milliseconds until ``figure`` shows the new picture."""
    return time_update(page, figure, control.click)


#: The notebook in the front tab (others stay in the page, hidden).
CURRENT = ".jp-NotebookPanel:not(.lm-mod-hidden)"


class Explorer:
    """An explorer drawn in the page (``.mhsa-w``): its parts and controls, as a learner has
    them. ``panel``: a CSS selector of the notebook panel it is in (default: the front one)."""

    def __init__(self, page, index: int = 0, panel: str = CURRENT):
        page.wait_for_function(  # JupyterLab renders the cells in view only
            "([i, panel]) => { const all = document.querySelectorAll(panel + ' .mhsa-w');"
            " const w = all[i < 0 ? all.length + i : i];"
            " if (!w || !w.querySelector('.mhsa-box svg')) return false;"
            " w.closest('.jp-Cell').scrollIntoView(); return true; }",
            arg=[index, panel],
            timeout=120_000,
        )
        self.page = page
        self.w = page.locator(f"{panel} .mhsa-w").nth(index)
        self.figure = self.w.locator(".mhsa-box")  # the picture's box: its SVG is replaced
        self.svg = self.figure.locator("svg")
        self.status = self.w.locator(".mhsa-status")
        self.notes = self.w.locator(".mhsa-notes")
        self.prev = self.w.get_by_role("button", name="\u25c0 Prev")
        self.next = self.w.get_by_role("button", name="Next \u25b6")

    def button(self, control: str, label: str):
        """The button ``label`` of the toggle ``control`` (heads, mask, view)."""
        return self.w.locator(f".mhsa-{control}").get_by_role("button", name=label, exact=True)

    def select(self, control: str):
        """The ``<select>`` of ``control`` (example, query)."""
        return self.w.locator(f".mhsa-{control} select")

    def slider(self, control: str):
        """The range input of ``control`` (step, length)."""
        return self.w.locator(f".mhsa-{control} input[type=range]")

    def press(self, control: str, key: str) -> None:
        """Press ``key`` on the slider ``control``, as a learner with the keyboard does."""
        self.slider(control).focus()
        self.page.keyboard.press(key)

    def step_to(self, k: int) -> None:
        """Move the step slider to step ``k`` (one key press per step)."""
        now = int(self.w.locator(".mhsa-step output").inner_text())
        for _ in range(abs(k - now)):
            self.press("step", "ArrowRight" if k > now else "ArrowLeft")

    def top(self) -> None:
        """Scroll the notebook so that the explorer's top is at the top of its view."""
        self.page.evaluate("(el) => el.scrollIntoView({block: 'start'})", self.w.element_handle())

    def read(self) -> dict:
        """What it shows (tests/support/pictures.py ``READ``)."""
        from tests.support.pictures import READ

        return self.page.evaluate(READ, self.w.element_handle())

    def shows(self, example, heads: int, mask: str) -> None:
        """Wait until the page draws the data state the kernel computed for ``example``
        (:class:`mhsa_helpers.examples` object; of a model of several layers, its layer),
        ``heads`` and ``mask``, and the kernel is idle (every update it sent has arrived)."""
        words = [f"h = {heads} head", mask]
        if example.n_layers > 1:
            words.append(f"layer {example.layer} of {example.n_layers}")
        self.page.wait_for_function(
            "([w, tokens, words]) => { const t = w.querySelector('.mhsa-title').textContent;"
            " const q = [...w.querySelectorAll('.mhsa-query option')].map((o) => o.text);"
            " return words.every((x) => t.includes(x)) && q.length === tokens.length"
            " && q[0] === tokens[0]; }",
            arg=[self.w.element_handle(), list(example.tokens), words],
            timeout=60_000,
        )
        self.page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.sessionContext"
            ".session.kernel.status === 'idle'",
            timeout=60_000,
        )
        self.page.evaluate("() => new Promise((r) => requestAnimationFrame(() => r()))")


def open_side_panel(page) -> None:
    """Open JupyterLab's left side panel (the file browser), as a learner has it."""
    page.evaluate("() => window.jupyterapp.shell.expandLeft()")
    page.wait_for_function(
        "() => { const s = document.querySelector('#jp-left-stack');"
        " return s && s.getBoundingClientRect().width > 100; }",
        timeout=30_000,
    )


def scroll_to_top(page, element) -> None:
    """Scroll the notebook so that ``element``'s top is at the top of the notebook's view."""
    page.evaluate("(el) => el.scrollIntoView({block: 'start'})", element.element_handle())


def placement(page, element) -> dict:
    """``element``'s box and the notebook's visible area, in CSS px (top, bottom, left, right)."""
    return page.evaluate(
        """(el) => {
        const r = el.getBoundingClientRect();
        const panel = el.closest('.jp-WindowedPanel-outer') || el.closest('.jp-Notebook');
        const v = panel.getBoundingClientRect();
        const clip = (a, b) => Math.min(a, b);
        return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height,
                view: {top: v.top, bottom: clip(v.bottom, window.innerHeight),
                       left: v.left, right: clip(v.right, window.innerWidth)}};
    }""",
        element.element_handle(),
    )


def fits(where: dict) -> bool:
    """Whether a :func:`placement` lies wholly inside the notebook's visible area."""
    v = where["view"]
    return (
        where["top"] >= v["top"] - 0.5
        and where["bottom"] <= v["bottom"] + 0.5
        and where["left"] >= v["left"] - 0.5
        and where["right"] <= v["right"] + 0.5
    )


# --------------------------------------------------------------------------
# A learner's JupyterLab: started from an environment as the README or Binder
# starts it, and what a learner sees and clicks in it.
# --------------------------------------------------------------------------
@contextmanager
def lab_in_environment(python: Path, cwd: Path, env: dict, tmp: Path, timeout: float = 120):
    """Run ``python -m jupyter lab`` in ``cwd`` (its root too); yield its base URL.

    As a learner starts it from the repository (Validate reads nbgrader's
    configuration there), with the user's own Jupyter directories empty and
    apart, so what JupyterLab shows comes from the environment alone (no
    user settings: the news pop-up is the environment's business too).
    """
    tmp.mkdir(parents=True, exist_ok=True)
    env = dict(env)
    env.update(
        HOME=str(tmp / "home"),
        JUPYTER_CONFIG_DIR=str(tmp / "home" / ".jupyter"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp / "user-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
    )
    (tmp / "home").mkdir(exist_ok=True)
    extra = ["--LabApp.expose_app_in_browser=True"]
    with _jupyter(python, "lab", cwd, env, tmp / "jupyterlab.log", timeout, extra) as base:
        yield base


@contextmanager
def formgrader_server(course: Path, tmp: Path, timeout: float = 60):
    """Run ``jupyter server`` in ``course`` with nbgrader's formgrader on; yield its base URL.

    As an instructor starts it from the course directory (the formgrader reads
    nbgrader_config.py there), this interpreter's environment, the formgrader
    turned on in a user configuration of its own (``instructor-ui`` turns it on
    for the environment), no token.
    """
    config = tmp / "jupyter-config"
    config.mkdir(parents=True, exist_ok=True)
    extension = {"nbgrader.server_extensions.formgrader": True}
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": extension}})
    )
    env = dict(os.environ)
    env.update(
        HOME=str(tmp),
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
    )
    log_path = tmp / "jupyter-server.log"
    with _jupyter(sys.executable, "server", course, env, log_path, timeout) as base:
        yield base


@contextmanager
def chromium_browser():
    """Debian's Chromium through Playwright; pages come from ``browser.new_page()``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_lab(page, url: str, timeout_ms: int = 120_000) -> None:
    """Go to ``url`` (a /lab page) and wait until JupyterLab has restored its layout."""
    page.goto(url)
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=timeout_ms)
    page.evaluate("() => window.jupyterapp.restored")


def open_notebook(page, base: str, path: str, timeout_ms: int = 120_000):
    """Open a notebook in JupyterLab, wait for its kernel; return the notebook panel's locator."""
    open_lab(page, f"{base}/lab/tree/{path}", timeout_ms)
    page.wait_for_function(
        "(path) => { const w = window.jupyterapp.shell.currentWidget;"
        " return w && w.context && w.context.path === path && w.sessionContext.session"
        " && w.sessionContext.session.kernel; }",
        arg=path,
        timeout=timeout_ms,
    )
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.ready")
    panel_id = page.evaluate("() => window.jupyterapp.shell.currentWidget.id")
    return page.locator(f"[id='{panel_id}']")


def click_validate(page, panel, timeout_ms: int = 300_000) -> tuple[str, float]:
    """Click the notebook toolbar's Validate; return the result dialog's text and the seconds.

    The seconds run from the click until the dialog shows; the dialog is closed after.
    """
    button = panel.locator(".jp-Toolbar-item .jp-ToolbarButtonComponent", has_text="Validate")
    button.wait_for(state="visible", timeout=timeout_ms)
    dialog = page.locator(".jp-Dialog")
    t0 = time.monotonic()
    button.click()
    dialog.wait_for(state="visible", timeout=timeout_ms)
    seconds = time.monotonic() - t0
    text = dialog.inner_text()
    return text, seconds


def close_dialog(page) -> None:
    """Dismiss the open dialog with its accept button; wait until it is gone."""
    page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept").click()
    page.locator(".jp-Dialog").wait_for(state="detached", timeout=30_000)


def menu_items(page, menu: str, screenshot: Path | None = None) -> list[str]:
    """The labels of a main menu's items, read by opening the menu; the menu is closed after.

    With ``screenshot``, the page is photographed there with the menu open.
    """
    page.locator(".lm-MenuBar-itemLabel", has_text=menu).click()
    page.locator(".lm-Menu").first.wait_for(state="visible", timeout=30_000)
    labels = page.locator(".lm-Menu .lm-Menu-item:not(.lm-mod-hidden) .lm-Menu-itemLabel")
    items = [t.strip() for t in labels.all_inner_texts() if t.strip()]
    if screenshot is not None:
        page.screenshot(path=str(screenshot))
    close_menu(page)
    return items


def close_menu(page, tries: int = 10) -> None:
    """Close the open menu with Escape, given to the menu itself; wait until it is gone.

    Escape closes a Lumino menu only once the menu holds the keyboard focus, which
    a loaded machine may give it late (seen: an Escape pressed before that left the
    menu open for good), so the menu is focused first and Escape is pressed again
    while it stays.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    menu = page.locator(".lm-Menu").first
    for _ in range(tries):
        if not menu.count():
            return
        try:
            menu.focus(timeout=10_000)
        except PlaywrightTimeout:
            continue  # gone meanwhile, or not yet focusable: look again
        page.keyboard.press("Escape")
        try:
            menu.wait_for(state="detached", timeout=10_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"the menu stayed open after {tries} presses of Escape")


def plugin_manager_rows(page, query: str, timeout_ms: int = 60_000) -> dict:
    """JupyterLab's Plugin Manager filtered by ``query``, its disclaimer ticked.

    Returns {plugin: {"enabled": checkbox ticked, "toggleable": checkbox usable,
    "locked": the lock sign shown}} for the plugins whose names contain ``query``
    (the rows the filter shows). The panel stays open.
    """
    panel_id = page.evaluate(
        """async (query) => {
            await window.jupyterapp.commands.execute('pluginmanager:open', {query});
            return window.jupyterapp.shell.currentWidget.id;
        }""",
        query,
    )
    pm = page.locator(f"[id='{panel_id}'] .jp-pluginmanager")
    rows = pm.locator(f"tr.jp-sortable-table-tr[data-key*='{query}']")
    rows.first.wait_for(state="visible", timeout=timeout_ms)
    disclaimer = pm.locator("input.jp-pluginmanager-Disclaimer-checkbox")
    if not disclaimer.is_checked():
        disclaimer.check()
    # with the disclaimer acknowledged, only locked plugins keep a disabled checkbox
    page.wait_for_function(
        "(id) => Array.from(document.getElementById(id).querySelectorAll('tr input'))"
        ".every(i => !i.disabled || i.title.includes('locked'))",
        arg=panel_id,
        timeout=timeout_ms,
    )
    out = {}
    for row in rows.all():
        name = row.get_attribute("data-key")
        box = row.locator("input[type=checkbox]")
        out[name] = {
            "enabled": box.is_checked(),
            "toggleable": box.is_enabled(),
            "locked": row.locator("[data-icon='ui-components:lock']").count() > 0,
        }
    return out


def toasts(page) -> list[str]:
    """The texts of the notifications JupyterLab shows now (its toasts)."""
    return page.locator(".Toastify__toast").all_inner_texts()


def notification_count(page) -> int:
    """The number in the status bar's notification indicator."""
    return int(page.locator(".jp-Notification-Status").inner_text().strip() or 0)


def lab_fetch(page, path: str, method: str = "GET", body=None) -> tuple[int, str]:
    """(status, text) of a request to the server from the page, with its XSRF token."""
    return tuple(
        page.evaluate(
            """async ([path, method, body]) => {
                const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
                const r = await fetch(path, {method, headers: {'X-XSRFToken': xsrf,
                    'Content-Type': 'application/json'},
                    body: body === null ? undefined : JSON.stringify(body)});
                return [r.status, await r.text()];
            }""",
            [path, method, body],
        )
    )
