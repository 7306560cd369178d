"""What a user sees in the browser when the C engine cannot load: a real
ComfyUI server (``main.py --cpu``) whose ZC_LIBRARY names a missing file, the pack in the folder
the Comfy Registry gives it, the PyPI frontend in headless Chromium. The page must show, without
the user opening anything, an error toast carrying the exact line of install.py's engine_report
(the five missing nodes, the platform, the command that fixes it); the ZeroCopy sidebar must
show the same line and the command in a field to copy; the pin node must still be in the node
library. On each frontend of requirements-frontends.txt (served with --front-end-root, as the
main browser test does). Screenshots go to build/browser/engine_missing*_<version>.png.

Runs whenever COMFYUI_PATH is set; skipped with the reason when Chromium, chromedriver,
Selenium or a frontend version is missing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from browser import FRONTEND_VERSIONS, SCREENSHOT_DIR, SIDEBAR_BUTTON, chromium, need_frontend, requirements, wait_for
from comfy_server import STARTUP_TIMEOUT_S, Server, get

REPO = Path(__file__).resolve().parents[2]
SUMMARY = "ZeroCopy: the C engine is not loaded"
STATE = ("return JSON.stringify({engine: window.__zerocopy && window.__zerocopy.engine, toasts: window.__zerocopy "
         "&& window.__zerocopy.toasts, alerts: [...document.querySelectorAll('[role=alert]')].map(e => e.textContent)})")


@pytest.fixture(scope="module", params=FRONTEND_VERSIONS)
def server(request, tmp_path_factory):
    requirements()
    version = request.param
    root = need_frontend(version)
    base = tmp_path_factory.mktemp("comfy_base_no_engine")
    (base / "custom_nodes").mkdir()
    os.symlink(REPO, base / "custom_nodes" / "zerocopy-continuity")
    settings = base / "user" / "default"
    settings.mkdir(parents=True)
    (settings / "comfy.settings.json").write_text(json.dumps({  # a returning user: no first-run dialogs
        "Comfy.TutorialCompleted": True, "Comfy.Release.Version": "99.0.0", "Comfy.Release.Status": "skipped",
        "Comfy.Workflow.ShowMissingModelsWarning": False, "Comfy.Workflow.ShowMissingNodesWarning": False,
        "Comfy.VersionCompatibility.DisableWarnings": True}))
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    missing = base / "no-engine" / "libzc.so"
    srv = Server(base, SCREENSHOT_DIR / f"engine_missing_server_{version}.log", env={"ZC_LIBRARY": str(missing)},
                 args=("--front-end-root", root))
    srv.frontend = version
    try:
        srv.wait_ready("/api/zerocopy/engine", STARTUP_TIMEOUT_S)
        yield srv
    finally:
        srv.stop()


def test_the_page_shows_the_exact_fix_in_a_toast_and_the_sidebar_and_the_pin_still_works(server):
    status, _, body = get(server.url + "/api/zerocopy/engine")
    doc = json.loads(body)
    assert status == 200 and doc["ok"] is False and doc["command"], doc
    message = doc["message"]
    assert "5 of 6 nodes are not loaded" in message and doc["command"] in message, message

    with chromium() as page:
        page.get(server.url + "/")
        wait_for(page, "return !!(window.__zerocopy && window.comfyAPI?.app?.app?.graph)", 60,
                 "the frontend and the ZeroCopy extension", STATE)
        # the toast, on screen at load: the frontend's own toast element, with the summary and the exact line
        wait_for(page, "return [...document.querySelectorAll('[role=alert]')].some(e => "
                       f"e.textContent.includes({json.dumps(SUMMARY)}) && e.textContent.includes(arguments[0]))"
                       .replace("arguments[0]", json.dumps(message)), 30, "the engine toast on screen", STATE)
        toasts = page.execute_script("return window.__zerocopy.toasts")
        assert [t for t in toasts if t["summary"] == SUMMARY] == [
            {"severity": "error", "summary": SUMMARY, "detail": message}], toasts  # once, as an error
        page.save_screenshot(str(SCREENSHOT_DIR / f"engine_missing_{server.frontend}.png"))

        # the sidebar: the same line, and the command in a field the user can copy
        wait_for(page, f"const b = document.querySelector({json.dumps(SIDEBAR_BUTTON)}); if (b) b.click(); return !!b;",
                 20, "the ZeroCopy sidebar button", STATE)
        shown = wait_for(page, "const e = document.querySelector('[data-testid=zerocopy-engine-missing]');"
                               "return e && {text: e.firstChild.textContent, "
                               "command: e.querySelector('[data-testid=zerocopy-engine-command]')?.value};",
                         20, "the engine line in the sidebar", STATE)
        assert shown == {"text": message, "command": doc["command"]}, shown
        # said once: the farm line (which runs on the store) does not repeat it, and nothing waits forever
        panel = page.execute_script("return document.querySelector('[data-testid=zerocopy-engine-missing]').parentElement.innerText")
        assert panel.count("5 of 6 nodes are not loaded") == 1 and "Farm setting" not in panel, panel
        assert "Loading" not in panel and "the store needs the C engine" in panel, panel
        page.save_screenshot(str(SCREENSHOT_DIR / f"engine_missing_sidebar_{server.frontend}.png"))

        # the pin node needs no engine: it is in the frontend's node library, the four others are not
        defs = page.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch('/api/object_info').then(r => r.json()).then(d => done(Object.keys(d).filter(k => "
            "k.startsWith('ZeroCopy'))), e => done(String(e)));")
        assert defs == ["ZeroCopyVRAMPin"], defs
