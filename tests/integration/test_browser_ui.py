"""The pack's web UI in a real browser against a real ComfyUI server.

Starts ``main.py --cpu`` on 127.0.0.1 (a free port) from a temporary base directory
whose custom_nodes/ links this pack and the test-only nodes and whose models/ links
the tiny random-weight models; serves the PyPI comfyui-frontend-package. Headless
Debian Chromium (Selenium + chromedriver) loads the tiny profile of the Wan 2.1 I2V
example, queues it, and checks that the node badges, the tail thumbnails and the
sidebar panel update from the websocket events; it saves a screenshot to
build/browser/. The browser may reach 127.0.0.1 only (every other host is mapped to
nothing). Also checks the REST API through the real server (its /api mirror,
middlewares and all).

Runs whenever COMFYUI_PATH is set; skipped with the reason when Chromium,
chromedriver, Selenium or the frontend package is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from comfy_server import Server, get as _get
from conftest import COMFYUI_PATH

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SCREENSHOT_DIR = REPO / "build" / "browser"
TAG = "zc_browser_film"
STARTUP_TIMEOUT_S = 60
RUN_TIMEOUT_S = 60
sys.path.insert(0, str(REPO / "tools"))


def _which(*names):
    return next((shutil.which(n) for n in names if shutil.which(n)), None)


def _requirements():
    chromium = _which("chromium", "chromium-browser")
    driver = _which("chromedriver")
    if not chromium or not driver:
        pytest.skip(
            "skipped: Chromium or chromedriver not installed (apt-get install chromium chromium-driver)"
        )
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("skipped: selenium not installed (pip install -r requirements-comfyui.txt)")
    try:
        import comfyui_frontend_package  # noqa: F401
    except ImportError:
        pytest.skip(
            "skipped: comfyui-frontend-package not installed (pip install -r requirements-comfyui.txt)"
        )
    if not (REPO / "build" / "libzc.so").is_file():
        pytest.skip("skipped: the C engine is not built (make)")
    return chromium, driver


@pytest.fixture(scope="module")
def server(comfy, zc_test_nodes, tiny_wan21_i2v, wan21_vae, tmp_path_factory):
    _requirements()
    base = tmp_path_factory.mktemp("comfy_base")
    (base / "custom_nodes").mkdir()
    os.symlink(REPO, base / "custom_nodes" / "ComfyUI-ZeroCopy-Continuity")
    os.symlink(HERE / "zc_test_nodes", base / "custom_nodes" / "zc_test_nodes")
    for kind, model in (("diffusion_models", tiny_wan21_i2v), ("vae", wan21_vae)):
        (base / "models" / kind).mkdir(parents=True)
        os.symlink(model.path, base / "models" / kind / model.name)
    settings = base / "user" / "default"
    settings.mkdir(parents=True)
    # A returning user: no first-run template dialog, no release-notes popups.
    (settings / "comfy.settings.json").write_text(
        json.dumps(
            {
                "Comfy.TutorialCompleted": True,
                "Comfy.Release.Version": "99.0.0",
                "Comfy.Release.Status": "skipped",
                "Comfy.Release.Timestamp": int(time.time() * 1000),
                "Comfy.Workflow.ShowMissingModelsWarning": False,
                "Comfy.Workflow.ShowMissingNodesWarning": False,
            }
        )
    )
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    srv = Server(base, SCREENSHOT_DIR / "comfyui_server.log")
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser(server):
    chromium, driver_path = _requirements()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1680,1050",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-features=Translate,OptimizationHints,MediaRouter",
        # only 127.0.0.1 resolves: the test sends no traffic anywhere else
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--proxy-server=direct://",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver, script: str, timeout: float, what: str):
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: d.execute_script(script))
    except TimeoutException:
        state = driver.execute_script(
            "return JSON.stringify({zc: window.__zerocopy && {received: "
            "window.__zerocopy.received, refreshes: window.__zerocopy.refreshes, "
            "error: window.__zerocopy.error, buffers: [...window.__zerocopy.buffers."
            "keys()]}, badges: [...document.querySelectorAll('.zc-badge')].map(b => "
            "({...b.dataset, text: b.textContent})), nodes: (window.comfyAPI?.app?.app?.graph?._nodes "
            "|| []).map(n => n.type)})"
        )
        raise AssertionError(f"timed out after {timeout} s waiting for {what}; state: {state}") from None


def _click(browser, css: str, what: str = ""):
    """Click the element the selector names, found and clicked in one step in the page: the
    panel re-renders on every websocket event, which can replace an element between a lookup
    from here and a click (a stale reference)."""
    _wait(browser, f"const e = document.querySelector({json.dumps(css)}); if (e) e.click(); return !!e;", 10,
          what or f"an element {css} to click")


def _load_workflow(browser, workflow: dict, attempts: int = 10):
    """Load the workflow into the frontend and make sure it stays: the frontend loads its own
    start-up graph asynchronously and, on a slow start, that can replace a graph loaded before
    it finished. Re-load (bounded) until our Store nodes are still there a second later."""
    count = "return (window.comfyAPI.app.app.graph._nodes || []).filter(n => n.type === 'ZeroCopyLatentStore').length"
    for _ in range(attempts):
        loaded = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.comfyAPI.app.app.loadGraphData(arguments[0]).then(() => done(true), e => done(String(e)));",
            workflow,
        )
        assert loaded is True, f"the frontend could not load the workflow: {loaded}"
        time.sleep(1.0)
        if browser.execute_script(count) == 3:
            return
    nodes = browser.execute_script("return (window.comfyAPI.app.app.graph._nodes || []).map(n => n.type)")
    raise AssertionError(f"the frontend kept replacing the workflow ({attempts} loads); graph now: {nodes}")


def test_rest_api_through_the_real_server(server):
    status, headers, body = _get(server.url + "/api/zerocopy/buffers")
    assert status == 200 and json.loads(body)["version"] == 1
    status, _, body = _get(server.url + "/zerocopy/buffers")  # the route without the /api mirror
    assert status == 200
    for path, expected in (
        ("/api/zerocopy/buffers/..%2F..%2Fetc%2Fpasswd", (400, 404)),
        ("/api/zerocopy/buffers/.secret", (400,)),
        ("/api/zerocopy/buffers/nope/preview.png?frame=-99999999999", (400, 404)),
        ("/api/zerocopy/buffers/nope", (404,)),
        ("/api/zerocopy/nothing", (404,)),
    ):
        status, headers, body = _get(server.url + path)
        assert status in expected, (path, status, body[:200])
        doc = json.loads(body)
        assert doc["error"] and "Traceback" not in body.decode()
    status, _, body = _get(server.url + "/api/zerocopy/residency")
    assert status == 200 and "available" in json.loads(body)
    status, _, body = _get(server.url + "/extensions")
    assert any(p.endswith("/web/zerocopy.js") or p.endswith("/zerocopy.js") for p in json.loads(body))


def test_badges_thumbnails_and_sidebar_update_after_a_queued_run(
    server, browser, schemas_for_browser, tiny_wan21_i2v, wan21_vae
):
    import build_examples

    started = time.monotonic()
    workflow = build_examples.wan21_i2v_chain(
        schemas_for_browser, build_examples.tiny_profile(tiny_wan21_i2v.name, wan21_vae.name, TAG)
    ).to_json()
    browser.get(server.url + "/")
    _wait(
        browser,
        "return !!(window.__zerocopy && window.comfyAPI?.app?.app?.graph)",
        40,
        "the frontend and the ZeroCopy extension",
    )
    _load_workflow(browser, workflow)
    # the DOM widgets are mounted by the frontend after the graph is configured
    _wait(browser, "return document.querySelectorAll('.zc-badge').length === 6", 30, "six badges")
    badges = browser.execute_script(
        "return [...document.querySelectorAll('.zc-badge')].map(b => b.dataset.kind)"
    )
    assert badges.count("ZeroCopyLatentStore") == 3 and badges.count("ZeroCopyLatentHandoff") == 2, badges
    # nothing is stored yet: every Store/Handoff badge says so
    _wait(
        browser,
        "return [...document.querySelectorAll('.zc-badge:not([data-kind=ZeroCopyVRAMPin])')]"
        ".every(b => b.dataset.state === 'empty')"
        " && window.__zerocopy.refreshes > 0",
        10,
        "empty badges before the run",
    )
    # the API prompt the frontend queues equals ours: the widget order of the examples is the frontend's
    queued = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.comfyAPI.app.app.graphToPrompt().then(p => done(p.output), e => done(String(e)));"
    )
    from comfy_workflows import to_api_prompt

    ours = to_api_prompt(workflow, schemas_for_browser)
    assert {k: v["inputs"] for k, v in queued.items()} == {k: v["inputs"] for k, v in ours.items()}
    _queue_and_wait(browser)
    # each Store badge shows the shot its node stored (zerocopy.store events)
    stores_ready = (
        "const b = [...document.querySelectorAll('.zc-badge[data-kind=ZeroCopyLatentStore]')];"
        "return b.length === 3 && b.every(x => x.dataset.state === 'ready') && "
        "b.map(x => x.dataset.generation).sort().join() === '1,2,3';"
    )
    _wait(browser, stores_ready, RUN_TIMEOUT_S, "the three Store badges after the run")
    _wait(
        browser,
        "return [...document.querySelectorAll('img.zc-thumb')].filter(i => i.style.display !== "
        "'none').every(i => i.complete && i.naturalWidth > 0) && "
        "document.querySelectorAll('img.zc-thumb').length === 5",
        20,
        "the five tail thumbnails",
    )
    stores = browser.execute_script(
        "return [...document.querySelectorAll('.zc-badge[data-kind=ZeroCopyLatentStore]')]"
        ".map(b => ({...b.dataset, text: b.textContent}))"
    )
    assert all(
        s["tag"] == TAG and s["bitIdentical"] == "yes" and "[1,16,3,8,8]" in s["text"] and "host" in s["text"]
        for s in stores
    ), stores
    handoffs = browser.execute_script(
        "return [...document.querySelectorAll('.zc-badge[data-kind=ZeroCopyLatentHandoff]')]"
        ".map(b => ({...b.dataset, text: b.textContent}))"
    )
    received = browser.execute_script("return window.__zerocopy.received")
    assert all(h["tag"] == TAG and h["state"] == "ready" for h in handoffs), handoffs
    assert all(h["digest"].startswith("xxh3:") for h in handoffs), handoffs
    # the nodes send their events: each badge shows its own node's shot and the handoff's verdict
    assert {"zerocopy.store", "zerocopy.handoff"} <= set(received), received
    assert sorted(h["generation"] for h in handoffs) == ["1", "2"], handoffs
    assert all(h["bitIdentical"] == "yes" for h in handoffs), handoffs
    pin = browser.execute_script(
        "const b = document.querySelector('.zc-badge[data-kind=ZeroCopyVRAMPin]');"
        "return b && {...b.dataset, text: b.textContent}"
    )
    assert pin and pin["state"] == "ready" and pin["residency"], pin
    assert "residency" in pin["text"] and "last reload" in pin["text"], pin
    # the thumbnails are ComfyUI's own Wan 2.1 latent_rgb_factors applied to the tail frame
    status, headers, png = _get(server.url + f"/api/zerocopy/buffers/{TAG}/preview.png?generation=1&size=64")
    assert status == 200 and png.startswith(b"\x89PNG")
    assert headers["X-ZeroCopy-Preview-Method"] == "latent_rgb_factors:Wan21", dict(headers)
    thumb = browser.execute_script(
        "const i = document.querySelector('img.zc-thumb');return [i.naturalWidth, i.naturalHeight, i.src]"
    )
    assert thumb[0] >= 64 and "preview.png" in thumb[2]

    # the sidebar panel lists the buffer, and inspect shows its slots
    _click(browser, ".zerocopy-buffers-tab-button")
    _wait(
        browser,
        f"const r = document.querySelector('.zc-row[data-tag={TAG}]');"
        "return r && r.dataset.generation === '3' && r.querySelector('img.zc-row-thumb')?.complete;",
        10,
        "the sidebar row of the buffer",
    )
    _click(browser, f".zc-row[data-tag={TAG}] .zc-inspect")
    _wait(
        browser,
        f"const d = document.querySelector('.zc-row[data-tag={TAG}] .zc-detail');"
        "return d && d.textContent.includes('generation 3') && d.textContent.includes('xxh3:');",
        10,
        "the inspect view",
    )
    # frame shot 1's Store and shot 2's Handoff, Sampler and Store beside the open panel
    browser.execute_script(
        "const ds = window.comfyAPI.app.app.canvas.ds; ds.scale = 0.9;"
        "ds.offset = [380 / 0.9 - 830, 70 / 0.9 + 30];"
        "window.comfyAPI.app.app.graph.setDirtyCanvas(true, true);"
    )
    time.sleep(0.5)  # one frame for the canvas and DOM widgets to settle before the picture
    path = SCREENSHOT_DIR / "zerocopy_ui.png"
    browser.save_screenshot(str(path))
    assert path.stat().st_size > 10_000
    # and the loaders with the VRAM pin's residency badge
    browser.execute_script(
        "const ds = window.comfyAPI.app.app.canvas.ds; ds.scale = 1.0;"
        "ds.offset = [380 + 20, 80];"
        "window.comfyAPI.app.app.graph.setDirtyCanvas(true, true);"
    )
    time.sleep(0.5)
    browser.save_screenshot(str(SCREENSHOT_DIR / "zerocopy_pin.png"))
    # the event path itself: a zerocopy.handoff message for one Handoff node updates only its badge
    verdict = browser.execute_script(
        "const app = window.comfyAPI.app.app, api = window.comfyAPI.api.api;"
        "const node = app.graph._nodes.find(n => n.comfyClass === 'ZeroCopyLatentHandoff');"
        "api.dispatchCustomEvent('zerocopy.handoff', {node: String(node.id), tag: arguments[0],"
        " generation: 2,"
        " bit_identical: false, shape: [1,16,3,8,8], tier: 'host', digest: 'xxh3:0123456789abcdef'});"
        "window.__zcProbe = node; return String(node.id);",
        TAG,
    )
    verdict = _wait(
        browser,
        "const d = window.__zcProbe.__zerocopyBadge.root.dataset;"
        "return d.bitIdentical === 'no' && d.generation === '2' && {...d};",
        5,
        f"the badge of Handoff node {verdict} to show a pushed certificate",
    )
    # Clear (two clicks) drops the tag through DELETE on the real server; the badges follow
    for _ in range(2):
        _click(browser, f".zc-row[data-tag={TAG}] .zc-clear")
        time.sleep(0.2)
    _wait(browser, f"return !document.querySelector('.zc-row[data-tag={TAG}]') && "
                   "[...document.querySelectorAll('.zc-badge[data-kind=ZeroCopyLatentStore]')]"
                   ".every(b => b.dataset.state === 'empty')",
          10, "the cleared buffer to leave the panel and the badges")
    assert json.loads(_get(server.url + "/api/zerocopy/buffers")[2])["count"] == 0
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "zerocopy" in e["message"]]
    assert not errors, errors
    assert time.monotonic() - started < 90


def _queue_and_wait(browser):
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.__zcRun = 'queued';"
        "for (const e of ['execution_success', 'execution_error']) window.comfyAPI.api.api.addEventListener("
        "  e, () => { window.__zcRun = e; });"
        "window.comfyAPI.app.app.queuePrompt(0, 1).then(() => done(true), e => done(String(e)));"
    )
    _wait(browser, "return window.__zcRun !== 'queued' && window.__zcRun", RUN_TIMEOUT_S, "the run to finish")
    assert browser.execute_script("return window.__zcRun") == "execution_success"


STORYBOARD_TAG = "zc_browser_storyboard"


def test_storyboard_shows_the_film_its_takes_and_stale_shots(
    server, browser, schemas_for_browser, tiny_wan21_i2v, wan21_vae
):
    """The 3-shot chain queued twice (a new seed for shot 1 the second time): shot 1 has two takes,
    the line follows the newest; the storyboard strip shows it, and choosing the first take in the
    browser turns the second run's shots 2-3 stale."""
    import build_examples

    workflow = build_examples.wan21_i2v_chain(
        schemas_for_browser, build_examples.tiny_profile(tiny_wan21_i2v.name, wan21_vae.name, STORYBOARD_TAG)
    ).to_json()
    browser.get(server.url + "/")
    _wait(browser, "return !!(window.__zerocopy && window.comfyAPI?.app?.app?.graph)", 40, "the frontend")
    _load_workflow(browser, workflow)
    _queue_and_wait(browser)  # generations 1, 2, 3
    browser.execute_script(  # a second take of shot 1: another seed on its sampler
        "const n = window.comfyAPI.app.app.graph._nodes.filter(n => n.type === 'KSampler')"
        ".sort((a, b) => a.pos[0] - b.pos[0])[0];"
        "const w = n.widgets.find(w => w.name === 'seed'); w.value = w.value + 1;"
    )
    _queue_and_wait(browser)  # generations 4 (take 2 of shot 1), 5, 6
    doc = json.loads(_get(server.url + f"/api/zerocopy/film/{STORYBOARD_TAG}?verify=true")[2])
    assert doc["line"] == [4, 5, 6] and doc["ok"] is True, doc
    _click(browser, ".zerocopy-buffers-tab-button")
    row = f".zc-row[data-tag={STORYBOARD_TAG}]"
    _wait(browser, f"return !!document.querySelector('{row}')", 10, "the sidebar row")
    _click(browser, f"{row} .zc-film-button")
    cards = (f"return [...document.querySelectorAll('{row} .zc-strip-line .zc-card')]"
             ".map(c => c.dataset.generation).join()")
    _wait(browser, cards + " === '4,5,6'", 15, "the storyboard's line 4,5,6")
    _wait(browser, f"return [...document.querySelectorAll('{row} .zc-card img')].every(i => i.complete && "
                   "i.naturalWidth > 0)", 15, "the storyboard thumbnails")
    info = browser.execute_script(
        f"return [...document.querySelectorAll('{row} .zc-card')].map(c => ({{...c.dataset, text: c.textContent}}))")
    by_generation = {c["generation"]: c for c in info}
    assert by_generation["4"]["take"] == "2" and by_generation["4"]["takes"] == "2", info
    assert all("verified" in c["text"] for c in info), info
    assert (by_generation["2"]["state"], by_generation["3"]["state"]) == ("stale", "stale"), info
    assert "stale" in by_generation["2"]["text"] and by_generation["1"]["state"] == "alternative", info
    browser.execute_script("document.querySelector('.comfyui-body-right, .side-bar-panel')?.scrollTo?.(0, 0)")
    time.sleep(0.3)
    browser.save_screenshot(str(SCREENSHOT_DIR / "zerocopy_storyboard.png"))
    # inspect shot 1's first take and choose it: the line follows it, the second run's shots go stale
    _click(browser, f"{row} .zc-strip-off .zc-card[data-generation='1']")
    _wait(browser, f"return !!document.querySelector('{row} .zc-film-detail[data-generation=\"1\"]')", 5,
          "the detail of generation 1")
    continue_text = browser.execute_script(f"return document.querySelector('{row} .zc-continue').value")
    assert continue_text == f"buffer_tag={STORYBOARD_TAG} generation=1"
    _click(browser, f"{row} .zc-take[data-generation='1']")
    _wait(browser, cards + " === '1,2,3'", 15, "the line to follow the chosen take")
    states = browser.execute_script(
        f"return Object.fromEntries([...document.querySelectorAll('{row} .zc-card')]"
        ".map(c => [c.dataset.generation, c.dataset.state]))")
    assert states == {"1": "line", "2": "line", "3": "line", "4": "alternative", "5": "stale", "6": "stale"}, states
    doc = json.loads(_get(server.url + f"/api/zerocopy/film/{STORYBOARD_TAG}")[2])
    assert doc["pins"] == [1] and doc["line"] == [1, 2, 3]
    assert "zerocopy.film" in browser.execute_script("return window.__zerocopy.received")
    time.sleep(0.3)  # the detail of generation 1 stays open: the picture shows it and the new line
    browser.save_screenshot(str(SCREENSHOT_DIR / "zerocopy_storyboard_chosen.png"))
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "zerocopy" in e["message"]]
    assert not errors, errors


@pytest.fixture(scope="module")
def schemas_for_browser(comfy, zc_test_nodes):
    """Node schemas of the in-process ComfyUI with this pack loaded (for building the workflow)."""
    if sys.modules.get(str(REPO).replace(".", "_x_")) is None:
        os.environ.setdefault("ZEROCOPY_SPILL_DIR", str(SCREENSHOT_DIR / "inprocess_spill"))
        comfy.load_custom_node(REPO)
    import nodes
    from comfy_workflows import Schemas

    if "SaveAnimatedWEBP" not in nodes.NODE_CLASS_MAPPINGS:
        pytest.skip("this ComfyUI (or its environment) lacks the core node SaveAnimatedWEBP that "
                    "the example workflow uses")
    return Schemas()
