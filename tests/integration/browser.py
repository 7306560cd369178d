"""Headless Debian Chromium driven by Selenium for the browser tests: what each needs installed
(skips naming the fix when something is missing), the frontends they run on (pinned in
requirements-frontends.txt, installed side by side under build/frontends/), a driver that may
reach 127.0.0.1 only, and a bounded wait on a script that reports the page's state when it
times out."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRONTENDS_FILE = REPO / "requirements-frontends.txt"
FRONTEND_VERSIONS = re.findall(r"^comfyui-frontend-package==(\S+)$", FRONTENDS_FILE.read_text(), re.MULTILINE)
SCREENSHOT_DIR = REPO / "build" / "browser"
RENDERERS = ("classic", "vue")  # vue: Nodes 2.0 (Comfy.VueNodes.Enabled)
MATRIX = [(version, renderer) for version in FRONTEND_VERSIONS for renderer in RENDERERS]
SIDEBAR_BUTTON = '[data-testid="zerocopy-buffers-tab-button"], .zerocopy-buffers-tab-button'


def frontend_root(version: str) -> Path:
    """Where a frontend version is installed for the tests (ComfyUI's --front-end-root)."""
    return REPO / "build" / "frontends" / version / "comfyui_frontend_package" / "static"


def need_frontend(version: str) -> Path:
    """That version's root, or a skip naming the command that installs it."""
    root = frontend_root(version)
    if not (root / "index.html").is_file():
        pytest.skip(f"skipped: frontend {version} not installed (pip install --no-deps --target "
                    f"build/frontends/{version} comfyui-frontend-package=={version})")
    return root


def _which(*names):
    return next((shutil.which(n) for n in names if shutil.which(n)), None)


def requirements() -> tuple[str, str]:
    """(chromium, chromedriver), or a skip that names the command that installs what is missing."""
    chromium = _which("chromium", "chromium-browser")
    driver = _which("chromedriver")
    if not chromium or not driver:
        pytest.skip("skipped: Chromium or chromedriver not installed (apt-get install chromium chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("skipped: selenium not installed (pip install -r requirements-comfyui.txt)")
    return chromium, driver


@contextlib.contextmanager
def chromium(window: str = "1680,1050"):
    """A headless Chromium that resolves 127.0.0.1 only: the tests send no traffic anywhere else."""
    binary, driver_path = requirements()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        f"--window-size={window}", "--no-first-run", "--no-default-browser-check",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--disable-features=Translate,OptimizationHints,MediaRouter",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--proxy-server=direct://",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver, script: str, timeout: float, what: str, state_script: str = "return document.title"):
    """The script's first truthy value within ``timeout`` s (polled every 0.2 s); on time-out an
    AssertionError naming ``what`` and the page's state (``state_script``'s value)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: d.execute_script(script))
    except TimeoutException:
        state = driver.execute_script(state_script)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}; state: {state}") from None


def open_ready(driver, url: str, node_types: list[str], state_script: str = "return document.title") -> None:
    """Open ComfyUI's page at ``url`` and wait until the frontend, the ZeroCopy extension and the
    node classes ``node_types`` are there and the extension's first listing is done (its listeners
    are then on the page's socket: a prompt queued earlier may end before the extension hears it)."""
    driver.get(url + "/")
    wait_for(driver, "return !!(window.__zerocopy && window.comfyAPI?.app?.app?.graph)", 60,
             "the frontend and the ZeroCopy extension", state_script)
    wait_for(driver, "const t = window.LiteGraph?.registered_node_types || {};"
                     f"return {json.dumps(node_types)}.every(n => t[n]);", 60,
             "the frontend to register the node types", state_script)
    wait_for(driver, "return window.__zerocopy.refreshes > 0", 30, "the extension's first listing", state_script)


def returning_user(base: Path, renderer: str) -> None:
    """ComfyUI's settings under ``base`` for a returning user (no first-run, release or missing-model
    dialogs), with the node renderer ``renderer`` ("classic" or "vue")."""
    import time

    settings = base / "user" / "default"
    settings.mkdir(parents=True)
    (settings / "comfy.settings.json").write_text(json.dumps({
        "Comfy.TutorialCompleted": True, "Comfy.Release.Version": "99.0.0", "Comfy.Release.Status": "skipped",
        "Comfy.Release.Timestamp": int(time.time() * 1000),
        "Comfy.Workflow.ShowMissingModelsWarning": False, "Comfy.Workflow.ShowMissingNodesWarning": False,
        "Comfy.VueNodes.Enabled": renderer == "vue", "Comfy.VersionCompatibility.DisableWarnings": True}))


def comfy_base(tmp_path_factory, name: str, renderer: str, *, test_nodes: bool = False) -> Path:
    """A fresh ComfyUI base folder for one browser run: this pack (and with ``test_nodes`` the
    stand-in zc_test_nodes) in its custom_nodes, a returning user's settings with ``renderer``, and
    the screenshot folder made; skipped, naming the fix, when the C engine is not built."""
    if not (REPO / "build" / "libzc.so").is_file():
        pytest.skip("skipped: the C engine is not built (make)")
    base = tmp_path_factory.mktemp(name)
    (base / "custom_nodes").mkdir()
    (base / "custom_nodes" / "ComfyUI-ZeroCopy-Continuity").symlink_to(REPO)
    if test_nodes:
        (base / "custom_nodes" / "zc_test_nodes").symlink_to(REPO / "tools" / "standins" / "zc_test_nodes")
    returning_user(base, renderer)
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return base
