"""A real node error of the pack on a real ComfyUI server (``main.py --cpu``), as the user sees it in
the browser, on each frontend of requirements-frontends.txt (served with --front-end-root) under
the classic renderer and Nodes 2.0.

The page builds a ZeroCopy Latent Load on a tag with nothing stored, linked to a Store (the output
node the prompt needs), and queues it as the Run button does (``app.queuePrompt``). The nodes are
added to the open workflow (its own nodes removed, the workflow kept): these frontends show a run's
error only for a job they can map to an open workflow.

What the frontends show (seen on 1.48.7 and 1.58.1): a toast "ZeroCopy Latent Load failed" with
ComfyUI's generic "This node threw an error during execution. Check its inputs or try a different
configuration." (the frontend's own words for every node error: the pack's sentence is not on it)
and a "View details" button. That button opens the side panel's Errors tab (Issues on 1.58.1):
"Execution failed", "Node threw an error during execution." and the ERROR LOG, ComfyUI's error report, whose details
say "ZeroCopy.ContinuityError: no latent is stored under tag ..." with no server path and no module
path. The report's "## Stack Trace" below the details is ComfyUI's own traceback of the server
(execution.py and the pack's file, with the install paths): the frontend prints what the server
sends, and the test checks only that it comes after the details.

Screenshots: build/browser/node_error_<version>_<renderer>.png (the toast) and
build/browser/node_error_details_<version>_<renderer>.png (the Errors panel).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from browser import MATRIX, SCREENSHOT_DIR, chromium, comfy_base, need_frontend, open_ready, requirements, wait_for
from comfy_server import Server

REPO = Path(__file__).resolve().parents[2]
TAG = "errors_never_stored"
STATE = ("return JSON.stringify({run: window.__zcRun, error: window.__zcError, alerts: [...document.querySelectorAll("
         "'[role=alert]')].map(e => e.textContent), dialogs: [...document.querySelectorAll('[role=dialog]')]"
         ".map(e => e.textContent.slice(0, 400))})")


@pytest.fixture(scope="module", params=MATRIX, ids=[f"{v}-{r}" for v, r in MATRIX])
def server(request, comfyui, tmp_path_factory):
    requirements()
    version, renderer = request.param
    root = need_frontend(version)
    base = comfy_base(tmp_path_factory, "comfy_base_node_errors", renderer)
    srv = Server(base, SCREENSHOT_DIR / f"node_errors_server_{version}_{renderer}.log",
                 args=("--front-end-root", root))
    srv.frontend, srv.renderer, srv.base = version, renderer, base
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


BUILD_AND_QUEUE = """
const tag = arguments[0], done = arguments[arguments.length - 1];
const app = window.comfyAPI.app.app, api = window.comfyAPI.api.api, LG = window.LiteGraph;
for (const n of [...app.graph._nodes]) app.graph.remove(n);  // the workflow (its id) stays: errors map to it
const load = LG.createNode('ZeroCopyLatentLoad'); load.pos = [80, 120]; app.graph.add(load);
const store = LG.createNode('ZeroCopyLatentStore'); store.pos = [520, 120]; app.graph.add(store);
load.connect(0, store, 0);
load.widgets.find(w => w.name === 'buffer_tag').value = tag;
store.widgets.find(w => w.name === 'buffer_tag').value = tag + '_copy';
app.canvas.setDirty(true, true);
window.__zcRun = 'queued';
api.addEventListener('execution_error', (e) => { window.__zcRun = 'execution_error'; window.__zcError = e.detail; });
api.addEventListener('execution_success', () => { window.__zcRun = 'execution_success'; });
app.queuePrompt(0, 1).then(r => done(r === false ? 'refused' : String(load.id)), e => done('failed: ' + e));
"""


def test_a_load_of_an_empty_tag_shows_the_packs_sentence_without_a_server_path(server):
    name = f"{server.frontend}_{server.renderer}"
    with chromium() as page:
        open_ready(page, server.url, ["ZeroCopyLatentLoad", "ZeroCopyLatentStore"], STATE)
        node_id = page.execute_async_script(BUILD_AND_QUEUE, TAG)
        assert node_id.isdigit(), node_id
        wait_for(page, "return window.__zcRun !== 'queued' && window.__zcRun", 60, "the run to end", STATE)
        error = page.execute_script("return window.__zcError")
        assert error and error["exception_type"] == "ZeroCopy.ContinuityError", error

        # the toast: the frontend's generic words and a button to the details
        # (1.58.1's toast has no role=alert: the page's text is read, and the button found by its words)
        wait_for(page, "const t = document.body.innerText; return t.includes('ZeroCopy Latent Load failed') && "
                       "t.includes('This node threw an error during execution');", 30, "the error toast", STATE)
        assert "no latent is stored" not in page.execute_script("return document.body.innerText")  # details only
        time.sleep(0.5)
        page.save_screenshot(str(SCREENSHOT_DIR / f"node_error_{name}.png"))
        wait_for(page, "const b = [...document.querySelectorAll('button')].find(b => "
                       "b.textContent.trim() === 'View details'); if (b) b.click(); return !!b;", 20,
                 "the toast's View details button", STATE)

        # the Errors panel: the report's details carry the pack's type and sentence, and no path
        report = wait_for(page, "const t = document.body.innerText, at = t.indexOf('# ComfyUI Error Report');"
                                "return at >= 0 && t.includes('Execution failed') && t.slice(at);", 30,
                          "the Errors panel with the error report", STATE)
        panel = page.execute_script("return document.body.innerText")
        assert "Node threw an error during execution." in panel, panel[-3000:]
        details, _, trace = report.partition("## Stack Trace")
        assert trace, report  # ComfyUI's traceback follows the details (see the docstring)
        said = f'ZeroCopy.ContinuityError: no latent is stored under tag "{TAG}"; '
        assert said in details and "ZeroCopyLatentLoad" in details, details
        for leak in ("/custom_nodes/", "ComfyUI-ZeroCopy-Continuity", str(server.base), str(REPO),
                     "zc_nodes", "zc_continuity", "zc_engine", ".errors.", "Traceback", "File \""):
            assert leak not in details, (leak, details)
        assert details.count("ContinuityError") == 2, details  # the type line and the message's own prefix
        time.sleep(0.5)
        page.save_screenshot(str(SCREENSHOT_DIR / f"node_error_details_{name}.png"))
