"""One film's spill trouble as the user sees it in the browser: a real ComfyUI server
(``main.py --cpu``), each frontend of requirements-frontends.txt (served with --front-end-root)
under the classic renderer and Nodes 2.0, headless Chromium. Every prompt is queued from the page
(``app.queuePrompt``, what the Run button calls) on a graph built there: the test's seeded latent
into a ZeroCopy Latent Store.

- Film B (``ux_seams``, two shots) is stored and on disk. The spill folder the user set (a space in
  its name) is then made really read-only (a read-only bind mount of it as root, else chmod 0555)
  and tag A (``ux_ro_film``) is stored. A's toast, on screen, names the folder as the user set it,
  the cause, that a restart of ComfyUI loses the shot and the fix for a read-only folder (not the
  full disk's "free space"), without the engine's temporary file names (``.zc-tmp-``). B's
  storyboard still opens with its two shots and no word of A.
- The folder writable again, the spill file of B's newest shot (still in memory) is deleted by
  hand: opening B's storyboard again writes it again, and a toast says so (zc_nodes/film_view.py
  ``flush_own``), naming the generation and the folder.

Screenshots: build/browser/spill_trouble_<version>_<renderer>.png (A's toast beside B's storyboard)
and build/browser/spill_rewritten_<version>_<renderer>.png.

Runs whenever COMFYUI_PATH is set; skipped with the reason when Chromium, chromedriver, Selenium
or a frontend version is missing, or when the folder cannot be made read-only here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from browser import MATRIX, SCREENSHOT_DIR, SIDEBAR_BUTTON, chromium, comfy_base, need_frontend, open_ready
from browser import requirements, wait_for
from comfy_server import Server, get

REPO = Path(__file__).resolve().parents[2]
FILM, BROKEN = "ux_seams", "ux_ro_film"
ROW = f'[data-testid="zerocopy-row"][data-tag={FILM}]'
STATE = ("return JSON.stringify({run: window.__zcRun, toasts: window.__zerocopy && window.__zerocopy.toasts, "
         "received: window.__zerocopy && window.__zerocopy.received, alerts: [...document.querySelectorAll("
         "'[role=alert]')].map(e => e.textContent)})")


def _make_read_only(folder: Path, undo: list) -> None:
    """The folder really read-only for the server (root ignores modes: a read-only bind mount)."""
    if os.geteuid() == 0 and shutil.which("mount"):
        for args in (["--bind", str(folder), str(folder)], ["-o", "remount,bind,ro", str(folder)]):
            proc = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)
                pytest.skip(f"skipped: cannot make a read-only bind mount here ({proc.stderr.strip()})")
        undo.append(lambda: subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False))
    else:
        folder.chmod(0o555)
        undo.append(lambda: folder.chmod(0o755))
    try:
        (folder / ".probe").touch()
    except OSError:
        return
    (folder / ".probe").unlink()
    pytest.skip("skipped: the spill folder stays writable for this process")


@pytest.fixture(scope="module", params=MATRIX, ids=[f"{v}-{r}" for v, r in MATRIX])
def server(request, comfyui, zc_test_nodes, tmp_path_factory):
    requirements()
    version, renderer = request.param
    root = need_frontend(version)
    base = comfy_base(tmp_path_factory, "comfy_base_spill", renderer, test_nodes=True)
    spill = base / "my films"  # the folder the user set (ZEROCOPY_SPILL_DIR), a space in its name
    undo: list = []
    srv = Server(base, SCREENSHOT_DIR / f"spill_trouble_server_{version}_{renderer}.log", spill=spill,
                 args=("--front-end-root", root))
    srv.frontend, srv.renderer, srv.spill, srv.undo = version, renderer, spill, undo
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()
        for step in reversed(undo):
            step()


# The graph a user would build: the test's seeded latent into a Store. Built once; each queue sets the
# seed and the tag on the nodes' widgets first.
BUILD = """
const app = window.comfyAPI.app.app, LG = window.LiteGraph;
for (const n of [...app.graph._nodes]) app.graph.remove(n);  // the workflow (its id) stays: errors map to it
const latent = LG.createNode('ZCTestSeededLatent'); latent.pos = [80, 120]; app.graph.add(latent);
const store = LG.createNode('ZeroCopyLatentStore'); store.pos = [520, 120]; app.graph.add(store);
latent.connect(0, store, 0);
for (const [name, value] of [['channels', 16], ['frames', 3], ['height', 16], ['width', 16]])
  latent.widgets.find(w => w.name === name).value = value;
app.canvas.setDirty(true, true);
const api = window.comfyAPI.api.api;
api.addEventListener('execution_error', (e) => { window.__zcRun = 'execution_error'; window.__zcError = e.detail; });
api.addEventListener('execution_success', () => { window.__zcRun = 'execution_success'; });
return [String(latent.id), String(store.id)];
"""
QUEUE = """
const [latentId, storeId, seed, tag, done] = arguments;
const app = window.comfyAPI.app.app, graph = app.graph;
const widget = (id, name) => graph.getNodeById(Number(id)).widgets.find(w => w.name === name);
widget(latentId, 'seed').value = seed;
widget(storeId, 'buffer_tag').value = tag;
window.__zcRun = 'queued';
app.queuePrompt(0, 1).then(r => done(r === false ? 'refused' : true), e => done('failed: ' + e));
"""


def _queue(page, nodes, seed: int, tag: str) -> None:
    """Queue the graph from the page with this seed and tag; wait (bounded) for its end."""
    queued = page.execute_async_script(QUEUE, *nodes, seed, tag)
    assert queued is True, f"the frontend could not queue the graph: {queued}"
    wait_for(page, "return window.__zcRun !== 'queued' && window.__zcRun", 60, f"the run storing {tag}", STATE)
    run = page.execute_script("return [window.__zcRun, window.__zcError || null]")
    assert run[0] == "execution_success", run


def _open_film(page) -> str:
    """B's storyboard open in the sidebar (opened again when it was open); returns the row's text."""
    if not page.execute_script("return !!document.querySelector('[data-testid=zerocopy-panel]')"):
        wait_for(page, f"const b = document.querySelector({json.dumps(SIDEBAR_BUTTON)}); if (b) b.click(); return !!b;",
                 20, "the ZeroCopy sidebar button", STATE)
    wait_for(page, f"return !!document.querySelector('{ROW}')", 20, f"the sidebar row of {FILM}", STATE)
    if page.execute_script(f"return !!document.querySelector('{ROW} [data-testid=zerocopy-card]')"):
        page.execute_script(f"document.querySelector('{ROW} [data-testid=zerocopy-film-button]').click()")
        wait_for(page, f"return !document.querySelector('{ROW} [data-testid=zerocopy-card]')", 20,
                 "the storyboard to close", STATE)
    wait_for(page, f"const e = document.querySelector('{ROW} [data-testid=zerocopy-film-button]');"
                   "if (e) e.click(); return !!e;", 20, "the film button", STATE)
    # two Stores with no Handoff between them: two takes of one shot, both cards in the storyboard
    wait_for(page, f"return document.querySelectorAll('{ROW} [data-testid=zerocopy-card]').length === 2", 30,
             f"the storyboard of {FILM} with its 2 shots", STATE)
    return page.execute_script(f"return document.querySelector('{ROW}').textContent")


def _toast(page, words: str) -> dict:
    """The pack's toast whose summary has these words, once the page showed it on screen."""
    wait_for(page, f"return (window.__zerocopy.toasts || []).some(t => t.summary.includes({json.dumps(words)}))",
             30, f"the toast {words!r}", STATE)
    toast = next(t for t in page.execute_script("return window.__zerocopy.toasts") if words in t["summary"])
    wait_for(page, "return [...document.querySelectorAll('[role=alert]')].some(e => "
                   f"e.textContent.includes({json.dumps(toast['detail'][:60])}))", 30,
             f"the toast {words!r} on screen", STATE)
    return toast


def test_a_read_only_folder_fails_only_its_tag_and_a_vanished_file_is_written_again(server):
    name = f"{server.frontend}_{server.renderer}"
    with chromium() as page:
        open_ready(page, server.url, ["ZCTestSeededLatent", "ZeroCopyLatentStore"], STATE)
        nodes = page.execute_script(BUILD)
        _queue(page, nodes, 1, FILM)
        _queue(page, nodes, 2, FILM)
        assert "zerocopy.store" in page.execute_script("return window.__zerocopy.received")
        files = sorted(server.spill.glob(f"{FILM}@*.latent"))
        assert len(files) == 2, files  # the prompt's end wrote both

        _make_read_only(server.spill, server.undo)
        _queue(page, nodes, 3, BROKEN)  # the prompt itself succeeds: the shot is kept in memory
        toast = _toast(page, "NOT saved to disk")
        text = toast["detail"]
        assert toast["severity"] == "error", toast
        assert f"spill folder {server.spill}:" in text and f"tag {BROKEN!r} generation 1" in text, text
        assert ("Read-only file system" in text and "read-only drive or mount" in text) or \
               ("Permission denied" in text and "write permission" in text), text
        assert "a restart of ComfyUI loses them" in text, text
        assert ".zc-tmp-" not in text and "free space" not in text and FILM not in text, text

        row_text = _open_film(page)
        assert BROKEN not in row_text and "NOT saved" not in row_text and "failed" not in row_text, row_text
        # the sidebar's own line about the shots held only in memory: the engine's cause, without its
        # temporary file name and without the server's folders (the panel shows the REST answer)
        wait_for(page, "return !!document.querySelector('.zc-memory-only')", 30, "the sidebar's memory-only line",
                 STATE)
        panel_line = page.execute_script("return document.querySelector('.zc-memory-only').textContent")
        assert BROKEN in panel_line and ".zc-tmp-" not in panel_line and str(server.spill) not in panel_line, \
            panel_line
        # the folder's name has a space: still recognised whole as the spill folder, not a server path
        assert f"<spill folder>/{BROKEN}@" in panel_line and "<server path>" not in panel_line, panel_line
        time.sleep(0.5)
        page.save_screenshot(str(SCREENSHOT_DIR / f"spill_trouble_{name}.png"))
        status, _, body = get(server.url + f"/api/zerocopy/film/{FILM}")
        assert status == 200 and BROKEN not in body.decode() and len(json.loads(body)["shots"]) == 2, body[:400]

        # the folder writable again; the file of B's newest shot (still in memory) deleted by hand
        for step in reversed(server.undo):
            step()
        server.undo.clear()
        newest = max(files)
        newest.unlink()
        generation = int(newest.stem.split("@")[1])
        row_text = _open_film(page)
        toast = _toast(page, "a spill file was written again")
        text = toast["detail"]
        assert f"the spill file of tag {FILM!r} generation {generation} vanished from the spill folder " \
               f"{server.spill}" in text, text
        assert "still in memory and was written again" in text, text
        assert newest.is_file()
        assert BROKEN not in row_text, row_text
        time.sleep(0.5)
        page.save_screenshot(str(SCREENSHOT_DIR / f"spill_rewritten_{name}.png"))
