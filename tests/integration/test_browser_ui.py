"""The pack's web UI in a real browser against a real ComfyUI server, on every frontend users
have: each version pinned in requirements-frontends.txt (installed side by side under
build/frontends/<version>, served with --front-end-root), with the classic renderer and with
Nodes 2.0 (the user setting Comfy.VueNodes.Enabled).

Starts ``main.py --cpu`` on 127.0.0.1 (a free port) from a temporary base directory
whose custom_nodes/ links this pack and the test-only nodes and whose models/ links
the tiny random-weight models. Headless
Debian Chromium (Selenium + chromedriver) loads the tiny profile of the Wan 2.1 I2V
example, queues it, and checks that the node badges, the tail thumbnails and the
sidebar panel update from the websocket events; it saves a screenshot to
build/browser/. The browser may reach 127.0.0.1 only (every other host is mapped to
nothing). Also checks the REST API through the real server (its /api mirror,
middlewares and all).

The tests select the pack's elements by their data-testid only (web/zerocopy.js), the frontend's
sidebar button by either of its spellings (1.58 gives it a data-testid, older versions a class), and
scroll the canvas to each node before reading its badge: newer frontends drop the DOM of nodes
outside the view. The screenshots are build/browser/*_<version>_<renderer>.png.

Runs whenever COMFYUI_PATH is set; skipped with the reason when Chromium, chromedriver, Selenium
or a frontend version is missing (the reason names the command that installs it).
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from browser import MATRIX, SCREENSHOT_DIR, SIDEBAR_BUTTON, chromium, comfy_base, frontend_root, need_frontend
from browser import requirements, wait_for
from comfy_server import Server
from comfy_server import get as _get

REPO = Path(__file__).resolve().parents[2]
TAG = "zc_browser_film"
RUN_TIMEOUT_S = 120
sys.path.insert(0, str(REPO / "tools"))
# the badge's minimum height at zoom 1 (web/zerocopy.js BADGE_MIN_HEIGHT), less a pixel of rounding
BADGE_MIN_HEIGHT = {"ZeroCopyLatentStore": 129, "ZeroCopyLatentHandoff": 129, "ZeroCopyVRAMPin": 71}


def _tid(name: str, extra: str = "") -> str:
    """The CSS selector of the pack's element with this data-testid."""
    return f'[data-testid="{name}"]{extra}'


@pytest.fixture(scope="module", params=MATRIX, ids=[f"{v}-{r}" for v, r in MATRIX])
def frontend(request):
    """(version, renderer) of this run; skipped when that frontend is not installed."""
    version, renderer = request.param
    need_frontend(version)
    return version, renderer


def _shot(frontend, name: str) -> Path:
    version, renderer = frontend
    return SCREENSHOT_DIR / f"{name}_{version}_{renderer}.png"


@pytest.fixture(scope="module")
def server(frontend, comfyui, zc_test_nodes, tiny_wan21_i2v, wan21_vae, tmp_path_factory):
    requirements()  # and comfy_base: the built engine
    version, renderer = frontend
    base = comfy_base(tmp_path_factory, "comfy_base", renderer, test_nodes=True)
    for kind, model in (("diffusion_models", tiny_wan21_i2v), ("vae", wan21_vae)):
        (base / "models" / kind).mkdir(parents=True)
        os.symlink(model.path, base / "models" / kind / model.name)
    srv = Server(base, SCREENSHOT_DIR / f"comfyui_server_{version}_{renderer}.log",
                 args=("--front-end-root", frontend_root(version)))
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as driver:
        yield driver


# The page's state in a time-out's message: the extension's counters, the badges, the graph.
_STATE = (
    "return JSON.stringify({zc: window.__zerocopy && {received: "
    "window.__zerocopy.received, refreshes: window.__zerocopy.refreshes, "
    "error: window.__zerocopy.error, buffers: [...window.__zerocopy.buffers."
    "keys()]}, badges_in_dom: [...document.querySelectorAll('[data-testid=zerocopy-badge]')].map(b => "
    "({...b.dataset, text: b.textContent})), nodes: (window.comfyAPI?.app?.app?.graph?._nodes "
    "|| []).map(n => n.type)})"
)


def _wait(driver, script: str, timeout: float, what: str):
    return wait_for(driver, script, timeout, what, _STATE)


def _click(browser, css: str, what: str = ""):
    """Click the element the selector names, found and clicked in one step in the page: the
    panel re-renders on every websocket event, which can replace an element between a lookup
    from here and a click (a stale reference)."""
    _wait(browser, f"const e = document.querySelector({json.dumps(css)}); if (e) e.click(); return !!e;", 20,
          what or f"an element {css} to click")


def _open_page(browser, server, frontend):
    """Load the frontend; check it is the version under test and the renderer asked for."""
    version, renderer = frontend
    browser.get(server.url + "/")
    _wait(browser, "return !!(window.__zerocopy && window.comfyAPI?.app?.app?.graph)", 60,
          "the frontend and the ZeroCopy extension")
    # the node types registered (the frontend's own Note types come from an extension too): a
    # workflow loaded before that keeps a typeless "Read me" that the server refuses (seen once on
    # a loaded machine)
    _wait(browser, "const t = window.LiteGraph?.registered_node_types || {};"
                   "return ['MarkdownNote', 'KSampler', 'ZeroCopyLatentStore'].every(n => t[n]);", 60,
          "the frontend to register the node types")
    served = browser.execute_script("return window.__COMFYUI_FRONTEND_VERSION__ || null")
    assert served == version, f"the server serves frontend {served}, not {version} (see --front-end-root)"
    vue = browser.execute_script(
        "return window.comfyAPI.app.app.extensionManager?.setting?.get?.('Comfy.VueNodes.Enabled') ?? null")
    assert bool(vue) == (renderer == "vue"), f"Comfy.VueNodes.Enabled is {vue} under the {renderer} renderer"


def _load_workflow(browser, workflow: dict, attempts: int = 10, stores: int = 3):
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
        if browser.execute_script(count) == stores:
            return
    nodes = browser.execute_script("return (window.comfyAPI.app.app.graph._nodes || []).map(n => n.type)")
    raise AssertionError(f"the frontend kept replacing the workflow ({attempts} loads); graph now: {nodes}")


# Centre the canvas on one node at zoom 1 (newer frontends keep the DOM of visible nodes only), then
# read its badge from the DOM once it is there: its data, text, size and thumbnail.
VISIT_BADGE = """
const id = String(arguments[0]), done = arguments[arguments.length - 1];
const app = window.comfyAPI.app.app, canvas = app.canvas, ds = canvas.ds;
const node = app.graph._nodes.find(n => String(n.id) === id);
if (!node) { done({error: `no node ${id} in the graph`}); return; }
ds.scale = 1;
const view = canvas.canvas.getBoundingClientRect();
ds.offset[0] = view.width / 2 - node.pos[0] - node.size[0] / 2;
ds.offset[1] = view.height / 2 - node.pos[1] - node.size[1] / 2;
canvas.setDirty(true, true);
const started = performance.now();
let settled = 0;
(function poll() {
  const badge = document.querySelector(`[data-testid=zerocopy-badge][data-node-id="${id}"]`);
  const rect = badge?.getBoundingClientRect();
  const shown = badge && badge.isConnected && rect.width > 0 && rect.height > 0 &&
    rect.top < window.innerHeight && rect.bottom > 0 && rect.left < window.innerWidth && rect.right > 0;
  if (shown && ++settled > 3) {  // a few frames: the frontend positions DOM widgets on draw
    const thumb = badge.querySelector('[data-testid=zerocopy-thumb]');
    const cut = [...badge.querySelectorAll('.zc-line')].filter(l => l.scrollWidth > l.clientWidth + 1)
      .map(l => l.textContent);
    done({...badge.dataset, text: badge.textContent, cut, height: rect.height / ds.scale,
          width: rect.width / ds.scale, thumb: thumb && {shown: thumb.style.display !== 'none',
          complete: thumb.complete, naturalWidth: thumb.naturalWidth, src: thumb.src}});
    return;
  }
  if (performance.now() - started > 15000) {
    done({error: `the badge of node ${id} (${node.type}) is not in the page after its node was centred`,
          inDom: !!badge, rect: rect && [rect.left, rect.top, rect.width, rect.height]});
    return;
  }
  requestAnimationFrame(poll);
})();
"""


def _badge_nodes(browser, kind: str | None = None) -> list[str]:
    return browser.execute_script(
        "return window.comfyAPI.app.app.graph._nodes.filter(n => ['ZeroCopyLatentStore',"
        "'ZeroCopyLatentHandoff', 'ZeroCopyVRAMPin'].includes(n.comfyClass ?? n.type)"
        " && (!arguments[0] || (n.comfyClass ?? n.type) === arguments[0])).map(n => String(n.id))", kind)


def _badges(browser, kind: str | None = None) -> list[dict]:
    """The badge of every badged node (of ``kind``), each read from the page with its node in view."""
    found = []
    for node_id in _badge_nodes(browser, kind):
        badge = browser.execute_async_script(VISIT_BADGE, node_id)
        assert "error" not in badge, badge
        found.append(badge)
    return found


def _wait_badges(browser, check, timeout: float, what: str, kind: str | None = None) -> list[dict]:
    """Visit the badges (bounded, 0.5 s apart) until ``check(badges)`` holds."""
    deadline = time.monotonic() + timeout
    while True:
        badges = _badges(browser, kind)
        if check(badges):
            return badges
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; badges: {badges}")
        time.sleep(0.5)


def _frame(browser, scale: float, x: float, y: float):
    """Show the graph at ``scale`` with graph point (x, y) at the canvas's top left."""
    browser.execute_script(
        "const c = window.comfyAPI.app.app.canvas, ds = c.ds; ds.scale = arguments[0];"
        "ds.offset[0] = -arguments[1]; ds.offset[1] = -arguments[2]; c.setDirty(true, true);",
        scale, x, y)
    time.sleep(0.8)  # a few frames for the canvas and the DOM widgets to settle before a picture


def _severe_errors(browser):
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "zerocopy" in e["message"]]


def test_rest_api_through_the_real_server(server):
    status, _, body = _get(server.url + "/api/zerocopy/buffers")
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
        status, _, body = _get(server.url + path)
        assert status in expected, (path, status, body[:200])
        doc = json.loads(body)
        assert doc["error"] and "Traceback" not in body.decode()
    status, _, body = _get(server.url + "/api/zerocopy/residency")
    assert status == 200 and "available" in json.loads(body)
    status, _, body = _get(server.url + "/extensions")
    assert any(p.endswith(("/web/zerocopy.js", "/zerocopy.js")) for p in json.loads(body))


def test_badges_thumbnails_and_sidebar_update_after_a_queued_run(
    server, browser, frontend, schemas_for_browser, tiny_wan21_i2v, wan21_vae
):
    import build_examples

    started = time.monotonic()
    workflow = build_examples.wan21_i2v_chain(
        schemas_for_browser, build_examples.tiny_profile(tiny_wan21_i2v.name, wan21_vae.name, TAG)
    ).to_json()
    _open_page(browser, server, frontend)
    _load_workflow(browser, workflow)
    # every badged node has its badge in the page once it is in view (the frontend mounts DOM
    # widgets after the graph is configured); nothing is stored yet: every Store/Handoff badge says so
    _wait(browser, "return window.__zerocopy.refreshes > 0", 20, "the first buffer listing")
    badges = _wait_badges(browser, lambda bs: all(b["state"] == "empty" for b in bs if b["kind"] != "ZeroCopyVRAMPin"),
                          20, "six badges, the Store/Handoff ones empty, before the run")
    kinds = [b["kind"] for b in badges]
    assert kinds.count("ZeroCopyLatentStore") == 3 and kinds.count("ZeroCopyLatentHandoff") == 2, badges
    assert kinds.count("ZeroCopyVRAMPin") == 1, badges
    # the badge keeps its minimum height under both renderers (Nodes 2.0 ignores getMinHeight)
    low = [(b["kind"], b["nodeId"], round(b["height"])) for b in badges if b["height"] < BADGE_MIN_HEIGHT[b["kind"]]]
    assert not low, f"badges lower than their minimum height {BADGE_MIN_HEIGHT}: {low}"
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
    stores = _wait_badges(
        browser, lambda bs: all(b["state"] == "ready" for b in bs)
        and sorted(b["generation"] for b in bs) == ["1", "2", "3"],
        RUN_TIMEOUT_S, "the three Store badges after the run", "ZeroCopyLatentStore")
    assert all(
        s["tag"] == TAG and s["bitIdentical"] == "yes" and "[1,16,3,8,8]" in s["text"] and "host" in s["text"]
        for s in stores
    ), stores
    # the tag line fits the node's default width: tag and generation whole, no line cut
    assert all(f"{TAG} · g{s['generation']}" in s["text"] and not s["cut"] for s in stores), stores
    # the five tail thumbnails (three Stores, two Handoffs), each loaded once its node is in view
    with_thumbs = _wait_badges(
        browser, lambda bs: all(b["thumb"]["shown"] and b["thumb"]["complete"] and b["thumb"]["naturalWidth"] > 0
                                for b in bs if b["kind"] != "ZeroCopyVRAMPin"),
        30, "the five tail thumbnails")
    thumbs = [b["thumb"] for b in with_thumbs if b["kind"] != "ZeroCopyVRAMPin"]
    assert len(thumbs) == 5 and all("preview.png" in t["src"] and t["naturalWidth"] >= 64 for t in thumbs), thumbs
    handoffs = _badges(browser, "ZeroCopyLatentHandoff")
    received = browser.execute_script("return window.__zerocopy.received")
    assert all(h["tag"] == TAG and h["state"] == "ready" for h in handoffs), handoffs
    assert all(h["digest"].startswith("xxh3:") for h in handoffs), handoffs
    # the nodes send their events: each badge shows its own node's shot and the handoff's verdict
    assert {"zerocopy.store", "zerocopy.handoff"} <= set(received), received
    assert sorted(h["generation"] for h in handoffs) == ["1", "2"], handoffs
    assert all(h["bitIdentical"] == "yes" for h in handoffs), handoffs
    (pin,) = _badges(browser, "ZeroCopyVRAMPin")
    assert pin["state"] == "ready" and pin["residency"], pin
    assert "residency" in pin["text"] and "last reload" in pin["text"], pin
    # the thumbnails are ComfyUI's own Wan 2.1 latent_rgb_factors applied to the tail frame
    status, headers, png = _get(server.url + f"/api/zerocopy/buffers/{TAG}/preview.png?generation=1&size=64")
    assert status == 200 and png.startswith(b"\x89PNG")
    assert headers["X-ZeroCopy-Preview-Method"] == "latent_rgb_factors:Wan21", dict(headers)

    # the sidebar panel lists the buffer, and inspect shows its slots
    row = _tid("zerocopy-row", f"[data-tag={TAG}]")
    _click(browser, SIDEBAR_BUTTON, "the ZeroCopy sidebar button")
    _wait(
        browser,
        f"const r = document.querySelector('{row}');"
        "return r && r.dataset.generation === '3' && r.querySelector('[data-testid=zerocopy-row-thumb]')?.complete;",
        20,
        "the sidebar row of the buffer",
    )
    _click(browser, f"{row} {_tid('zerocopy-inspect')}")
    _wait(
        browser,
        f"const d = document.querySelector('{row} [data-testid=zerocopy-detail]');"
        "return d && d.textContent.includes('generation 3') && d.textContent.includes('xxh3:');",
        20,
        "the inspect view",
    )
    # frame shot 1's Store and shot 2's Handoff, Sampler and Store beside the open panel
    _frame(browser, 0.9, 830 - 380 / 0.9, -(70 / 0.9 + 30))
    path = _shot(frontend, "zerocopy_ui")
    browser.save_screenshot(str(path))
    assert path.stat().st_size > 10_000
    # and the loaders with the VRAM pin's residency badge
    _frame(browser, 1.0, -400, -80)
    browser.save_screenshot(str(_shot(frontend, "zerocopy_pin")))
    # the event path itself: a zerocopy.handoff message for one Handoff node updates only its badge
    node_id = browser.execute_script(
        "const app = window.comfyAPI.app.app, api = window.comfyAPI.api.api;"
        "const node = app.graph._nodes.find(n => n.comfyClass === 'ZeroCopyLatentHandoff');"
        "api.dispatchCustomEvent('zerocopy.handoff', {node: String(node.id), tag: arguments[0],"
        " generation: 2,"
        " bit_identical: false, shape: [1,16,3,8,8], tier: 'host', digest: 'xxh3:0123456789abcdef'});"
        "return String(node.id);",
        TAG,
    )
    deadline = time.monotonic() + 10
    while True:
        pushed = browser.execute_async_script(VISIT_BADGE, node_id)
        if pushed.get("bitIdentical") == "no" or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert pushed.get("bitIdentical") == "no" and pushed["generation"] == "2", pushed
    others = [h for h in _badges(browser, "ZeroCopyLatentHandoff") if h["nodeId"] != node_id]
    assert others and all(h["bitIdentical"] == "yes" for h in others), others
    # Clear (two clicks) drops the tag through DELETE on the real server; the badges follow
    for _ in range(2):
        _click(browser, f"{row} {_tid('zerocopy-clear')}")
        time.sleep(0.2)
    _wait(browser, f"return !document.querySelector('{row}')", 20, "the cleared buffer to leave the panel")
    _wait_badges(browser, lambda bs: all(b["state"] == "empty" for b in bs), 20,
                 "the Store badges to follow the clear", "ZeroCopyLatentStore")
    assert json.loads(_get(server.url + "/api/zerocopy/buffers")[2])["count"] == 0
    assert not _severe_errors(browser)
    assert time.monotonic() - started < 240


def _queue_and_wait(browser):
    queued = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.__zcRun = 'queued';"
        "for (const e of ['execution_success', 'execution_error']) window.comfyAPI.api.api.addEventListener("
        "  e, () => { window.__zcRun = e; });"
        "window.comfyAPI.app.app.queuePrompt(0, 1).then(r => done(r === false ? 'refused' : true),"
        " e => done(String(e)));"
    )
    assert queued is True, f"the frontend could not queue the workflow: {queued} (see the server log)"
    _wait(browser, "return window.__zcRun !== 'queued' && window.__zcRun", RUN_TIMEOUT_S, "the run to finish")
    assert browser.execute_script("return window.__zcRun") == "execution_success"


STORYBOARD_TAG = "zc_browser_storyboard"


def _open_film(browser, tag: str):
    """The sidebar open, the row of ``tag`` there, its storyboard open; returns the row's selector."""
    row = _tid("zerocopy-row", f"[data-tag={tag}]")
    if not browser.execute_script(f"return !!document.querySelector('{_tid('zerocopy-panel')}')"):
        _click(browser, SIDEBAR_BUTTON, "the ZeroCopy sidebar button")
    _wait(browser, f"return !!document.querySelector('{row}')", 20, f"the sidebar row of {tag}")
    _click(browser, f"{row} {_tid('zerocopy-film-button')}")
    _wait(browser, f"return !!document.querySelector('{row} {_tid('zerocopy-card')}')", 30, f"the storyboard of {tag}")
    return row


def test_storyboard_shows_the_film_its_takes_and_stale_shots(
    server, browser, frontend, schemas_for_browser, tiny_wan21_i2v, wan21_vae
):
    """The 3-shot chain queued twice (a new seed for shot 1 the second time): shot 1 has two takes,
    the line follows the newest; the storyboard strip shows it, and choosing the first take in the
    browser turns the second run's shots 2-3 stale."""
    import build_examples

    workflow = build_examples.wan21_i2v_chain(
        schemas_for_browser, build_examples.tiny_profile(tiny_wan21_i2v.name, wan21_vae.name, STORYBOARD_TAG)
    ).to_json()
    _open_page(browser, server, frontend)
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
    row = _open_film(browser, STORYBOARD_TAG)
    card = _tid("zerocopy-card")
    cards = (f"return [...document.querySelectorAll('{row} {_tid('zerocopy-strip-line')} {card}')]"
             ".map(c => c.dataset.generation).join()")
    _wait(browser, cards + " === '4,5,6'", 30, "the storyboard's line 4,5,6")
    # the cards wrap into rows and their thumbnails load lazily: each one not loaded yet is scrolled
    # into view in turn, as a user scrolling the storyboard would
    _wait(browser, f"const next = [...document.querySelectorAll('{row} {card} img')].find(i => !(i.complete && "
                   "i.naturalWidth > 0)); if (next) next.scrollIntoView({block: 'nearest'}); return !next;",
          30, "the storyboard thumbnails")
    info = browser.execute_script(
        f"return [...document.querySelectorAll('{row} {card}')].map(c => ({{...c.dataset, text: c.textContent}}))")
    by_generation = {c["generation"]: c for c in info}
    assert by_generation["4"]["take"] == "2" and by_generation["4"]["takes"] == "2", info
    assert all("verified" in c["text"] for c in info), info
    assert (by_generation["2"]["state"], by_generation["3"]["state"]) == ("stale", "stale"), info
    assert "stale" in by_generation["2"]["text"] and by_generation["1"]["state"] == "alternative", info
    browser.execute_script(f"document.querySelector('{_tid('zerocopy-panel')}')?.scrollTo?.(0, 0)")
    time.sleep(0.3)
    browser.save_screenshot(str(_shot(frontend, "zerocopy_storyboard")))
    # inspect shot 1's first take and choose it: the line follows it, the second run's shots go stale
    _click(browser, f"{row} {_tid('zerocopy-strip-off')} {card}[data-generation='1']")
    _wait(browser, f"return !!document.querySelector('{row} {_tid('zerocopy-film-detail')}[data-generation=\"1\"]')",
          10, "the detail of generation 1")
    continue_text = browser.execute_script(f"return document.querySelector('{row} {_tid('zerocopy-continue')}').value")
    assert continue_text == f"buffer_tag={STORYBOARD_TAG} generation=1"
    _click(browser, f"{row} {_tid('zerocopy-take')}[data-generation='1']")
    _wait(browser, cards + " === '1,2,3'", 30, "the line to follow the chosen take")
    states = browser.execute_script(
        f"return Object.fromEntries([...document.querySelectorAll('{row} {card}')]"
        ".map(c => [c.dataset.generation, c.dataset.state]))")
    assert states == {"1": "line", "2": "line", "3": "line", "4": "alternative", "5": "stale", "6": "stale"}, states
    doc = json.loads(_get(server.url + f"/api/zerocopy/film/{STORYBOARD_TAG}")[2])
    assert doc["pins"] == [1] and doc["line"] == [1, 2, 3]
    assert "zerocopy.film" in browser.execute_script("return window.__zerocopy.received")
    time.sleep(0.3)  # the detail of generation 1 stays open: the picture shows it and the new line
    browser.save_screenshot(str(_shot(frontend, "zerocopy_storyboard_chosen")))
    assert not _severe_errors(browser)


def test_the_storyboard_offers_the_render_and_adds_its_node_once(
    server, browser, frontend, schemas_for_browser, tiny_wan21_i2v, wan21_vae
):
    """The storyboard of the film above: "Render to a video file" adds a ZeroCopy Film Render node
    for the film, its tag set and its VAE linked from the workflow's VAE loader; a second click
    selects that node instead of adding another."""
    import build_examples

    workflow = build_examples.wan21_i2v_chain(
        schemas_for_browser, build_examples.tiny_profile(tiny_wan21_i2v.name, wan21_vae.name, STORYBOARD_TAG)
    ).to_json()
    _open_page(browser, server, frontend)
    _load_workflow(browser, workflow)
    row = _open_film(browser, STORYBOARD_TAG)
    offer = f"return document.querySelector('{row} {_tid('zerocopy-render-offer')}')?.textContent"
    render_nodes = (
        "return window.comfyAPI.app.app.graph._nodes.filter(n => n.type === 'ZeroCopyFilmRender')"
        ".map(n => ({tag: n.widgets.find(w => w.name === 'buffer_tag').value,"
        " vae: n.inputs.find(i => i.name === 'vae').link != null}))")
    assert browser.execute_script(render_nodes) == []
    _click(browser, f"{row} {_tid('zerocopy-render-film')}")
    text = _wait(browser, offer, 10, "the render offer's line")
    assert f'Added a ZeroCopy Film Render node for "{STORYBOARD_TAG}", its VAE linked' in text, text
    assert browser.execute_script(render_nodes) == [{"tag": STORYBOARD_TAG, "vae": True}]
    overlaps = browser.execute_script(
        "const g = window.comfyAPI.app.app.graph; const r = g._nodes.find(n => n.type === 'ZeroCopyFilmRender');"
        "const box = n => [n.pos[0], n.pos[1], n.pos[0] + n.size[0], n.pos[1] + n.size[1]];"
        "const a = box(r); return g._nodes.filter(n => n !== r).map(box)"
        ".filter(b => a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]).length")
    assert overlaps == 0  # placed beside the workflow, over none of its nodes
    time.sleep(0.3)
    browser.save_screenshot(str(_shot(frontend, "zerocopy_storyboard_render_offer")))
    _click(browser, f"{row} {_tid('zerocopy-render-film')}")
    _wait(browser, offer + " && " + offer[len("return "):] + ".includes('is selected')", 10, "the node selected")
    assert len(browser.execute_script(render_nodes)) == 1
    assert not _severe_errors(browser)


SEAM_TAG = "zc_browser_seams"


def _post_prompt(server, prompt: dict, timeout: float = RUN_TIMEOUT_S):
    """Queue an API prompt on the real server (POST /prompt) and wait (bounded) for its history."""
    body = json.dumps({"prompt": prompt, "client_id": f"zc-browser-{uuid.uuid4()}"}).encode()
    request = urllib.request.Request(server.url + "/prompt", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        prompt_id = json.loads(response.read())["prompt_id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entry = json.loads(_get(server.url + f"/history/{prompt_id}")[2]).get(prompt_id)
        if entry and entry.get("status", {}).get("completed") is not None:
            assert entry["status"]["status_str"] == "success", entry["status"]
            return entry
        time.sleep(0.5)
    raise AssertionError(f"prompt {prompt_id} did not finish within {timeout} s:\n{server.tail()}")


@pytest.fixture(scope="module")
def seam_film(server, wan21_vae):
    """test_film_seams.py's film on the real server: shot 1 a root, shot 2 with its parent's
    statistics (a smooth hop), shot 3 with every channel shifted (a drifted hop)."""
    from test_film_seams import first_shot, next_shot

    _post_prompt(server, first_shot(SEAM_TAG, 1)[0].prompt)
    _post_prompt(server, next_shot(wan21_vae.name, SEAM_TAG, 2, 0.0)[0].prompt)
    _post_prompt(server, next_shot(wan21_vae.name, SEAM_TAG, 3, 0.5)[0].prompt)
    doc = json.loads(_get(server.url + f"/api/zerocopy/film/{SEAM_TAG}?verify=true")[2])
    assert doc["line"] == [1, 2, 3], doc
    return doc


def test_storyboard_seam_badges_are_green_for_a_smooth_hop_and_red_for_a_drift(
    server, browser, frontend, seam_film
):
    shots = {s["generation"]: s for s in seam_film["shots"]}
    assert shots[2]["seam"]["verdict"] == "green" and shots[3]["seam"]["verdict"] == "red", seam_film
    _open_page(browser, server, frontend)
    row = _open_film(browser, SEAM_TAG)
    seams = _wait(
        browser,
        f"const s = Object.fromEntries([...document.querySelectorAll('{row} {_tid('zerocopy-card')}')].map(c => "
        f"[c.dataset.generation, c.querySelector('{_tid('zerocopy-seam')}')]));"
        "return s['3'] && s['2'] && Object.fromEntries(Object.entries(s).map(([g, e]) => [g, e && "
        "{verdict: e.dataset.seam, text: e.textContent, colour: getComputedStyle(e).color, "
        "shown: e.getBoundingClientRect().height > 0}]));",
        30, "the seam badges of the film")
    assert seams["1"] is None, seams  # the root has no hop, no badge
    assert seams["2"]["verdict"] == "green" and seams["3"]["verdict"] == "red", seams
    assert seams["2"]["shown"] and seams["3"]["shown"], seams
    assert f"{shots[3]['seam']['score']:.3g}" in seams["3"]["text"] and "red" in seams["3"]["text"], seams
    assert seams["2"]["colour"] != seams["3"]["colour"], seams  # green and red are drawn differently
    # the detail of the drifted shot shows its numbers
    _click(browser, f"{row} {_tid('zerocopy-card')}[data-generation='3']")
    detail = _wait(browser, f"return document.querySelector('{row} {_tid('zerocopy-film-detail')}"
                            "[data-generation=\"3\"]')?.textContent", 10, "the detail of the drifted shot")
    assert "mean step" in detail and "not perceptual scores" in detail, detail
    time.sleep(0.3)
    browser.save_screenshot(str(_shot(frontend, "zerocopy_seams")))
    assert not _severe_errors(browser)


RED = "rgb(255, 139, 132)"  # web/zerocopy.js: a red seam's text
RED_BORDER = "rgb(229, 83, 75)"
GREEN = "rgb(111, 220, 140)"


def test_the_storyboard_headline_counts_the_red_seam_in_red_and_its_card_is_in_view(
    server, browser, frontend, seam_film
):
    """At the sidebar's default width: the headline says "1 red seam" in red (the digests' "every
    hop verified" not in green), the drifted shot's card has a red border, the smooth one's a green
    one, and every card of the line is in view without scrolling (the strip wraps into rows)."""
    _open_page(browser, server, frontend)
    row = _open_film(browser, SEAM_TAG)
    seen = _wait(
        browser,
        f"const row = document.querySelector('{row}'); const h = row?.querySelector('{_tid('zerocopy-film-headline')}');"
        f"const cards = [...row.querySelectorAll('{_tid('zerocopy-strip-line')} {_tid('zerocopy-card')}')];"
        "if (!h || cards.length < 3) return null;"
        f"const panel = document.querySelector('{_tid('zerocopy-panel')}').getBoundingClientRect();"
        "const spans = [...h.children].map(e => ({text: e.textContent, colour: getComputedStyle(e).color,"
        " seam: e.dataset.seam || null}));"
        "return {text: h.textContent, worst: h.dataset.worst, spans, panel: [panel.left, panel.top, panel.right, panel.bottom],"
        " cards: cards.map(c => { const r = c.getBoundingClientRect(), s = getComputedStyle(c);"
        "  return {generation: c.dataset.generation, seam: c.dataset.seam, border: s.borderTopColor,"
        "   rect: [r.left, r.top, r.right, r.bottom]}; })};",
        30, "the storyboard's headline and cards")
    red = [s for s in seen["spans"] if s["seam"] == "red"]
    assert len(red) == 1 and red[0]["text"] == "1 red seam" and red[0]["colour"] == RED, seen
    assert seen["worst"] == "red" and "3 shots on the line" in seen["text"], seen
    verified = [s for s in seen["spans"] if "every hop verified" in s["text"]]
    assert verified and verified[0]["colour"] != GREEN, seen  # a digest fact, not a green light
    cards = {c["generation"]: c for c in seen["cards"]}
    assert cards["3"]["seam"] == "red" and cards["3"]["border"] == RED_BORDER, cards
    assert cards["2"]["seam"] == "green" and cards["2"]["border"] == GREEN, cards
    left, top, right, bottom = seen["panel"]
    hidden = [g for g, c in cards.items() if not (c["rect"][0] >= left - 1 and c["rect"][2] <= right + 1
                                                  and c["rect"][1] >= top - 1 and c["rect"][3] <= bottom + 1)]
    assert not hidden, f"cards {hidden} are outside the panel {seen['panel']} without scrolling: {cards}"
    # the red count is a button: it shows the worst red seam's card and marks it
    _click(browser, f"{row} {_tid('zerocopy-headline-seams')}[data-seam=red]")
    flashed = _wait(browser, f"return [...document.querySelectorAll('{row} .zc-flash')].map(c => c.dataset.generation).join()",
                    10, "the red seam's card marked")
    assert flashed == "3", flashed
    browser.execute_script(f"document.querySelector('{row}').scrollIntoView()")
    time.sleep(0.3)
    browser.save_screenshot(str(_shot(frontend, "zerocopy_storyboard_headline")))
    assert not _severe_errors(browser)


# Every word of the element's text (split at white space) that the browser draws over more than one
# line: a word broken mid-word. Digest lines (.zc-digest) may break anywhere and are left out.
BROKEN_WORDS = """
const root = arguments[0], broken = [];
const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  if (n.parentElement.closest('.zc-digest, button, textarea, input')) continue;
  const re = /\\S+/g; let m;
  while ((m = re.exec(n.data))) {
    const range = document.createRange();
    range.setStart(n, m.index); range.setEnd(n, m.index + m[0].length);
    const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
    if (tops.size > 1) broken.push(m[0]);
  }
}
return broken;
"""


def test_the_storyboard_detail_breaks_no_word_and_shows_the_whole_continue_field(
    server, browser, frontend, seam_film
):
    _open_page(browser, server, frontend)
    row = _open_film(browser, SEAM_TAG)
    _click(browser, f"{row} {_tid('zerocopy-card')}[data-generation='3']")
    detail = f"{row} {_tid('zerocopy-film-detail')}[data-generation=\"3\"]"
    _wait(browser, f"return !!document.querySelector('{detail}')", 10, "the detail of the drifted shot")
    text = browser.execute_script(f"return document.querySelector('{detail}').textContent")
    assert "trim" in text and "RMS step" in text and "perceptual" in text, text
    broken = browser.execute_script(BROKEN_WORDS, browser.find_element("css selector", detail))
    assert not broken, f"words broken over two lines in the detail view: {broken}"
    field = browser.execute_script(
        f"const f = document.querySelector('{row} {_tid('zerocopy-continue')}');"
        "return {value: f.value, sw: f.scrollWidth, cw: f.clientWidth, sh: f.scrollHeight, ch: f.clientHeight};")
    assert field["value"] == f"buffer_tag={SEAM_TAG} generation=3", field
    assert field["sw"] <= field["cw"] and field["sh"] <= field["ch"] + 1, f"the continue field is cut: {field}"
    browser.execute_script(f"document.querySelector('{detail}').scrollIntoView()")
    time.sleep(0.3)
    browser.save_screenshot(str(_shot(frontend, "zerocopy_storyboard_detail")))
    assert not _severe_errors(browser)


DISK_TAG = "zc_browser_disk_only"


def test_a_tag_held_only_on_disk_reads_what_is_known_and_no_farm_line_shows(server, browser, frontend):
    """After a restart a tag is on disk only: the listing (zc_nodes.api.buffers.buffer_doc of such a
    tag, added to the real server's listing on its way to the page) has no shape, size, digest or
    age; the row says where it is and what is known. No farm was configured: no farm line."""
    from zc_pack.zc_nodes.api.buffers import buffer_doc

    disk_only = buffer_doc({"tag": DISK_TAG, "depth": 8, "slots": [], "disk_generations": [1, 2, 3]})
    _open_page(browser, server, frontend)
    browser.execute_script(
        "const extra = arguments[0], api = window.comfyAPI.api.api;"
        "window.__zcRealFetchApi = window.__zcRealFetchApi || api.fetchApi;"
        "api.fetchApi = async (route, options) => { const r = await window.__zcRealFetchApi.call(api, route, options);"
        " if (String(route) !== '/zerocopy/buffers') return r;"
        " const doc = await r.json(); doc.buffers.push(extra);"
        " return new Response(JSON.stringify(doc), {status: r.status, headers: r.headers}); };", disk_only)
    try:
        if not browser.execute_script(f"return !!document.querySelector('{_tid('zerocopy-panel')}')"):
            _click(browser, SIDEBAR_BUTTON, "the ZeroCopy sidebar button")
        row = _tid("zerocopy-row", f"[data-tag={DISK_TAG}]")
        _click(browser, _tid("zerocopy-refresh"), "the Refresh button")
        text = _wait(browser, f"return document.querySelector('{row}')?.textContent", 20, "the disk-only row")
        panel = browser.execute_script(f"return document.querySelector('{_tid('zerocopy-panel')}').textContent")
        farm = browser.execute_script("return window.__zerocopy.farm")
    finally:
        browser.execute_script("if (window.__zcRealFetchApi) { window.comfyAPI.api.api.fetchApi = window.__zcRealFetchApi; }")
    assert "on disk · 3 shots · newest gen 3" in text, text
    for unknown in ("0 B", "no digest", "unknown", "— ago"):
        assert unknown not in text, (unknown, text)
    assert farm and farm["enabled"] is False and not farm.get("url"), farm  # never configured here
    assert "Farm" not in panel, panel
    time.sleep(0.3)
    browser.save_screenshot(str(_shot(frontend, "zerocopy_disk_only_row")))
    # the listed tag is not in this server's store: its thumbnail's 404 is the test's own doing
    assert not [e for e in _severe_errors(browser) if DISK_TAG not in e["message"]]


PACK_MODULE = "ComfyUI-ZeroCopy-Continuity"  # the folder name the server fixture links the pack as


def test_every_template_has_a_thumbnail_the_frontend_can_load(server):
    """ComfyUI lists the pack's example_workflows as templates; the frontends (1.48.7, 1.49.6,
    1.58.1) ask for /api/workflow_templates/<pack>/<name>.jpg as each card's picture."""
    status, _, body = _get(server.url + "/api/workflow_templates")
    assert status == 200
    names = json.loads(body)[PACK_MODULE]
    assert sorted(names) == sorted(p.stem for p in (REPO / "example_workflows").glob("*.json")), names
    for name in names:
        status, headers, jpg = _get(server.url + f"/api/workflow_templates/{PACK_MODULE}/{name}.jpg")
        assert status == 200 and headers["Content-Type"] == "image/jpeg", (name, status, dict(headers))
        assert jpg.startswith(b"\xff\xd8\xff") and len(jpg) > 2000, name


DRIFT_FIXTURE = REPO / "tests" / "python" / "fixtures" / "film_drift.json"


def _drift_plot(browser, row):
    return _wait(
        browser,
        f"const p = document.querySelector('{row} {_tid('zerocopy-drift')}');"
        "return p && {...p.dataset, title: p.querySelector('[data-testid=zerocopy-drift-title]')?.textContent,"
        " legend: [...p.querySelectorAll('[data-testid=zerocopy-drift-legend]')].map(e => e.textContent),"
        " legendPx: Math.min(...[...p.querySelectorAll('[data-testid=zerocopy-drift-legend]')].map(e =>"
        "   parseFloat(getComputedStyle(e).fontSize) * p.getBoundingClientRect().width / p.viewBox.baseVal.width)),"
        " fine: p.querySelector('[data-testid=zerocopy-drift-fine-label]')?.textContent,"
        " fineBelow: p.querySelector('[data-testid=zerocopy-drift-fine]')?.dataset.below,"
        " mean: p.querySelector('[data-testid=zerocopy-drift-mean]')?.dataset.values,"
        " spread: p.querySelector('[data-testid=zerocopy-drift-spread]')?.dataset.values,"
        " dots: p.querySelectorAll('circle').length, channels: p.querySelectorAll("
        "'[data-testid=zerocopy-drift-channels] polyline').length,"
        " width: p.getBoundingClientRect().width, height: p.getBoundingClientRect().height};",
        20, "the drift plot")


def test_the_drift_view_draws_the_contract_on_the_storyboard(server, browser, frontend, seam_film):
    """The plot drawn in the browser from the contract's fixture (the drift field of GET
    /zerocopy/film/{tag}), put into the server's film document of the seam film on its
    way to the page, so that the numbers drawn can be checked against known ones."""
    drift = json.loads(DRIFT_FIXTURE.read_text())["drift"]
    _open_page(browser, server, frontend)
    # The server's own film document (which has a drift field of its own since this version) reaches
    # the page with the fixture's drift in it, through the frontend's api.fetchApi, which the
    # extension calls for every route: the storyboard, opened next, reads the film through it.
    browser.execute_script(
        "const tag = arguments[0], drift = arguments[1], api = window.comfyAPI.api.api;"
        "window.__zcRealFetchApi = window.__zcRealFetchApi || api.fetchApi;"
        "api.fetchApi = async (route, options) => { const r = await window.__zcRealFetchApi.call(api, route, options);"
        " if (!String(route).startsWith('/zerocopy/film/' + encodeURIComponent(tag) + '?')) return r;"
        " const doc = await r.json(); doc.drift = drift;"
        " return new Response(JSON.stringify(doc), {status: r.status, headers: r.headers}); };",
        SEAM_TAG, drift)
    try:
        row = _open_film(browser, SEAM_TAG)
        _wait(browser, "const f = window.__zerocopy.films.get(arguments[0]);"
                       "return !!(f && f.drift && f.drift.shots.length === arguments[1]);"
              .replace("arguments[0]", json.dumps(SEAM_TAG)).replace("arguments[1]", str(len(drift["shots"]))),
              20, "the film document with the fixture's drift")
        _wait(browser, f"return document.querySelector('{row} {_tid('zerocopy-drift')}')?.dataset.shots === "
                       f"'{len(drift['shots'])}'", 20, "the drift plot of the fixture")
        plot = _drift_plot(browser, row)
    finally:
        browser.execute_script("if (window.__zcRealFetchApi) { window.comfyAPI.api.api.fetchApi = window.__zcRealFetchApi; }")
    n = len(drift["shots"])
    assert plot["shots"] == str(n) and plot["dots"] == 2 * n and plot["channels"] == drift["channels"], plot
    assert plot["worstGeneration"] == "3" and "gen 1" in plot["title"], plot
    # the legend in words, at a readable size on the screen (the notation is only in its tooltip)
    assert plot["legend"] == ["mean drift (in first-shot σ)", "contrast drift (log of σ ÷ first-shot σ)"], plot
    assert plot["legendPx"] >= 10, plot
    # the band that says what is fine, labelled in words
    assert plot["fine"] == "fine: under 0.3" and plot["fineBelow"] == "0.3", plot
    means = [float(v) for v in plot["mean"].split(",")]
    assert means == pytest.approx([max(abs(v) for v in s["mean_delta"]) for s in drift["shots"]], rel=1e-3)
    assert 100 <= plot["width"] <= 400 and 60 <= plot["height"] <= 200, plot  # small, inside the panel
    browser.execute_script(f"document.querySelector('{row} {_tid('zerocopy-drift')}').scrollIntoView()")
    time.sleep(0.3)
    browser.save_screenshot(str(_shot(frontend, "zerocopy_drift")))
    assert not _severe_errors(browser)


def test_the_drift_view_shows_the_servers_drift(server, browser, frontend, seam_film):
    if "drift" not in seam_film:
        pytest.skip("skipped: this server's GET /zerocopy/film/{tag} has no drift field yet (an older pack); "
                    "the plot is checked against the contract's fixture above")
    drift = seam_film["drift"]
    _open_page(browser, server, frontend)
    row = _open_film(browser, SEAM_TAG)
    plot = _drift_plot(browser, row)
    assert plot["shots"] == str(len(drift["shots"])) == str(len(seam_film["line"])), plot
    spread = [float(v) for v in plot["spread"].split(",")]
    assert spread[0] == 0, plot  # the first shot is the reference
    means = [float(v) for v in plot["mean"].split(",")]
    assert means[2] > means[1], plot  # the drifted shot 3 lies further from shot 1 than shot 2


# Every node's box in graph units, title bar included, as the page draws it: under Nodes 2.0 each
# node's own DOM element measured with its node centred at zoom 1 (nodes outside the view have no
# element), under the classic canvas the node's bounds.
NODE_BOXES = """
const done = arguments[arguments.length - 1];
const app = window.comfyAPI.app.app, canvas = app.canvas, ds = canvas.ds;
const title = window.LiteGraph?.NODE_TITLE_HEIGHT ?? 30;
const vue = arguments[0];
const frames = (n) => new Promise((r) => { const step = () => (n-- > 0 ? requestAnimationFrame(step) : r()); step(); });
(async () => {
  const boxes = [];
  const view = canvas.canvas.getBoundingClientRect();
  for (const node of app.graph._nodes) {
    const box = {id: String(node.id), type: node.type, title: node.title,
                 graph: [node.pos[0], node.pos[1] - title, node.size[0], node.size[1] + title]};
    ds.scale = 1;
    ds.offset[0] = view.width / 2 - node.pos[0] - node.size[0] / 2;
    ds.offset[1] = view.height / 2 - node.pos[1] - node.size[1] / 2;
    canvas.setDirty(true, true);
    await frames(3);
    let element = null;
    for (let tries = 0; tries < 150 && !element && vue; tries++) {  // Nodes 2.0 mounts it soon after
      await frames(1);
      element = document.querySelector(`[data-node-id="${node.id}"]`);
    }
    if (element) {
      const r = element.getBoundingClientRect();
      box.dom = [(r.left - view.left) / ds.scale - ds.offset[0], (r.top - view.top) / ds.scale - ds.offset[1],
                 r.width / ds.scale, r.height / ds.scale];
    }
    boxes.push(box);
  }
  done(boxes);
})().catch((e) => done(String(e)));
"""


def _overlaps(boxes: list[dict], key: str) -> list[str]:
    found = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            (ax, ay, aw, ah), (bx, by, bw, bh) = a[key], b[key]
            dx, dy = min(ax + aw, bx + bw) - max(ax, bx), min(ay + ah, by + bh) - max(ay, by)
            if dx > 0.5 and dy > 0.5:
                found.append(f"{a['title'] or a['type']!r} and {b['title'] or b['type']!r} overlap by "
                             f"{dx:.0f} x {dy:.0f} px")
    return found


# Node types the frontend provides itself (no server schema).
FRONTEND_ONLY_NODES = {"MarkdownNote", "Note", "Reroute", "PrimitiveNode"}


@pytest.mark.parametrize("example", sorted(p.stem for p in (REPO / "example_workflows").glob("*.json")))
def test_no_two_nodes_of_an_example_overlap_as_drawn(server, browser, frontend, example):
    """The shipped example as this frontend and renderer draw it (node sizes grow to fit their
    widgets, and more under Nodes 2.0): no node covers another."""
    workflow = json.loads((REPO / "example_workflows" / f"{example}.json").read_text())
    # A node type this server lacks is drawn as the frontend's placeholder, not at its own size
    # (v0.3.75 has no LTX-2 nodes; no tree here has the loop nodes): those nodes are left out of
    # the check, every other node is judged as drawn.
    status, _, body = _get(server.url + "/object_info", 60)
    assert status == 200
    known = set(json.loads(body)) | FRONTEND_ONLY_NODES
    placeholders = {str(n["id"]) for n in workflow["nodes"] if n["type"] not in known}
    if browser.execute_script("return !window.__zerocopy || !window.comfyAPI?.app?.app?.graph"):
        _open_page(browser, server, frontend)
    stores = sum(n["type"] == "ZeroCopyLatentStore" for n in workflow["nodes"])
    _load_workflow(browser, workflow, stores=stores)
    vue = frontend[1] == "vue"
    boxes = browser.execute_async_script(NODE_BOXES, vue)
    assert isinstance(boxes, list), boxes
    assert len(boxes) == len(workflow["nodes"]), boxes
    if vue:
        missing = [b["title"] or b["type"] for b in boxes if "dom" not in b and str(b["id"]) not in placeholders]
        assert not missing, f"no DOM element for {missing} under Nodes 2.0 with the node in view"
    problems = _overlaps([b for b in boxes if str(b["id"]) not in placeholders], "dom" if vue else "graph")
    if example == "wan21_i2v_3shot_chain":
        _frame(browser, 0.75, -560, -60)  # the loaders column beside the open sidebar
        browser.save_screenshot(str(_shot(frontend, "example_wan21_loaders")))
    assert not problems, "\n".join(problems) + f"\n(boxes: {boxes})"


@pytest.fixture(scope="module")
def schemas_for_browser(comfyui, zc_test_nodes):
    """Node schemas of the in-process ComfyUI with this pack loaded (for building the workflow)."""
    if sys.modules.get(str(REPO).replace(".", "_x_")) is None:
        os.environ.setdefault("ZEROCOPY_SPILL_DIR", str(SCREENSHOT_DIR / "inprocess_spill"))
        comfyui.load_custom_node(REPO)
    import nodes
    from comfy_workflows import Schemas

    if "SaveAnimatedWEBP" not in nodes.NODE_CLASS_MAPPINGS:
        pytest.skip("this ComfyUI (or its environment) lacks the core node SaveAnimatedWEBP that "
                    "the example workflow uses")
    return Schemas()
