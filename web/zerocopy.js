// ComfyUI-ZeroCopy-Continuity frontend extension.
//
// - A live badge and a tail-frame thumbnail on every ZeroCopyLatentStore and
//   ZeroCopyLatentHandoff node; the residency state on ZeroCopyVRAMPin nodes.
// - A "ZeroCopy" sidebar tab listing every buffer, with inspect and clear, and the farm tier's
//   state (GET /zerocopy/farm): its worker, its Redis, and the farm's shots this worker lacks.
// - A storyboard per tag (the row's "Film" button; GET /zerocopy/film/{tag}?verify=true): the
//   shots of the chosen line in order with thumbnails, take count, trim, digest and hop status;
//   alternative and stale takes below; click a shot to inspect it, choose one of its takes
//   (POST /zerocopy/film/{tag}/choose) or copy its "continue from here" settings; "Render to a
//   video file" adds (or selects) a ZeroCopyFilmRender node for the film, its VAE linked.
//   A seam badge per hop, and, when the film document has a drift field, a small plot of each
//   shot's colour and contrast drift from the first shot (web/zerocopy_drift.js).
// - A setting, ZeroCopy > Farm > Redis URL, sent to POST /zerocopy/farm (empty: the server's
//   ZEROCOPY_REDIS_URL, or no farm). The server never sends the password back.
//
// - When the C engine is missing or wrong (GET /zerocopy/engine, read once at start): a toast
//   and a line at the top of the sidebar naming the missing nodes, the platform and the command
//   that fixes it; ZeroCopyVRAMPin works without it.
//
// Nothing polls. The view changes on ComfyUI's websocket events: the pack's own
// zerocopy.store / zerocopy.handoff / zerocopy.residency / zerocopy.buffers
// messages (zerocopy.buffers with reason "farm" when another worker of the farm stored a
// shot), and execution_success / execution_error / execution_interrupted / reconnected, after
// which the buffer list is fetched once (GET /zerocopy/buffers, and GET /zerocopy/farm).
// Data comes only from the pack's JSON API; every value shown is set as text.
// Every element of the pack carries a data-testid (zerocopy-badge, zerocopy-row, ...): the browser
// tests select by those, never by a frontend's class names.

import { app } from "../../scripts/app.js";
import { api } from "../../scripts/api.js";
import { driftPlotModel, driftSVG } from "./zerocopy_drift.js";

const STORE = "ZeroCopyLatentStore";
const HANDOFF = "ZeroCopyLatentHandoff";
const PIN = "ZeroCopyVRAMPin";
const RENDER = "ZeroCopyFilmRender";
const BADGED = new Set([STORE, HANDOFF, PIN]);
const SIDEBAR_ID = "zerocopy-buffers";
const FARM_URL_SETTING = "ZeroCopy.Farm.RedisURL";
const THUMB_SIZE = 128;
const DOM_WIDGET_MARGIN = 10; // the frontend's default margin around a DOM widget (BaseDOMWidget)
// The badge's own minimum height in CSS pixels at zoom 1: Store/Handoff a 96 px thumbnail beside up
// to 6 lines, the pin up to 5 lines.
const BADGE_MIN_HEIGHT = { [STORE]: 130, [PIN]: 72 };
const META_CHARS = 96; // longer metadata values are cut in the panel (the full value is the tooltip)

const state = {
  buffers: new Map(), // tag -> buffer document from GET /zerocopy/buffers
  listedAt: 0, // Date.now() of the last listing
  nodeEvents: new Map(), // execution node id -> last zerocopy.store / zerocopy.handoff payload
  residency: null, // last residency report or zerocopy.residency payload
  residencyEvents: new Map(), // node id -> last zerocopy.residency payload
  films: new Map(), // tag -> GET /zerocopy/film/{tag}?verify=true document, or error text
  filmSelected: new Map(), // tag -> generation of the storyboard shot being inspected
  choosing: null, // tag whose take this tab is choosing now
  farm: null, // GET /zerocopy/farm: enabled, worker, url (password hidden), connected, tags, ...
  farmError: null, // why the farm setting or status could not be applied or read
  error: null, // last API error text, shown in the panel
  refreshes: 0, // completed listings (read by the browser test)
  received: [], // names of pack events received (read by the browser test)
  spillFailed: new Map(), // "tag@generation" -> zerocopy.spill_failed payload (memory-only shots)
  renderOffer: null, // {tag, text}: what the storyboard's "Render to a video file" did last
  toasts: [], // every toast this tab showed: {severity, summary, detail} (read by the browser test)
  engine: null, // GET /zerocopy/engine: {ok, engine, missing_nodes, platform, command, message}
};
window.__zerocopy = state;

// ---------------------------------------------------------------- helpers

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "testid") node.dataset.testid = value; // the tests select by data-testid only
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

// A toast through the frontend's toast service (frontend 1.3+), else an alert-free fallback: the
// message still lands in state.toasts and the console, and the badge and sidebar show it too.
function toast(severity, summary, detail) {
  state.toasts.push({ severity, summary, detail });
  const service = app.extensionManager?.toast;
  try {
    if (service?.add) {
      service.add({ severity, summary, detail, life: severity === "error" ? 0 : 10000 });
      return;
    }
  } catch (error) {
    // fall through to the console
  }
  (severity === "error" ? console.error : console.warn)(`[ZeroCopy] ${summary}: ${detail}`);
}

// The disk state of one stored generation: the listing's slot says it, a spill_failed event
// says it sooner.
function diskState(tag, generation, slot) {
  if (state.spillFailed.has(`${tag}@${generation}`) && slot?.spill !== "written") return "failed";
  return slot?.spill ?? null;
}

const DISK_TEXT = {
  written: ["on disk", "zc-yes"],
  pending: ["queued for disk", ""],
  failed: ["NOT ON DISK (memory only)", "zc-no"],
  off: ["memory only (no disk tier)", ""],
};

function shapeText(shape) {
  return Array.isArray(shape) ? `[${shape.join(",")}]` : "—";
}

function shortDigest(digest) {
  if (!digest) return "no digest";
  const [algo, hex] = digest.split(":");
  return hex ? `${algo}:${hex.slice(0, 8)}` : digest.slice(0, 16);
}

function bytesText(n) {
  if (n == null) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function ageText(ageSeconds) {
  if (ageSeconds == null) return "—";
  const s = ageSeconds + (Date.now() - state.listedAt) / 1000;
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

function previewURL(tag, generation, size = THUMB_SIZE) {
  const query = new URLSearchParams({ generation: String(generation ?? 0), frame: "-1", size: String(size) });
  return api.apiURL(`/zerocopy/buffers/${encodeURIComponent(tag)}/preview.png?${query}`);
}

async function apiJSON(path, options) {
  const response = await api.fetchApi(path, options);
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const message = body?.message ?? `${response.status} ${response.statusText}`;
    throw new Error(message);
  }
  return body;
}

// Every graph node, including nodes inside subgraphs, with its execution id ("12" or "5:12").
function* graphNodes(graph = app.graph, prefix = "") {
  for (const node of graph?._nodes ?? []) {
    const id = `${prefix}${node.id}`;
    yield [id, node];
    if (node.subgraph) yield* graphNodes(node.subgraph, `${id}:`);
  }
}

function nodeClass(node) {
  return node.comfyClass ?? node.type;
}

function widgetValue(node, name) {
  return node.widgets?.find((w) => w.name === name)?.value;
}

// ---------------------------------------------------------------- node badges

function badgeFor(node) {
  return node.__zerocopyBadge;
}

function addBadge(node) {
  if (node.__zerocopyBadge) return;
  const kind = nodeClass(node);
  const lines = el("div", { class: "zc-badge-lines" });
  const thumb = kind === PIN ? null : el("img", { class: "zc-thumb", testid: "zerocopy-thumb", alt: "tail frame", draggable: "false" });
  if (thumb) thumb.style.display = "none"; // shown once there is a stored frame
  const root = el("div", { class: "zc-badge", testid: "zerocopy-badge", dataset: { kind, state: "empty", nodeId: String(node.id) } }, lines, thumb);
  // Nodes 2.0 lays DOM widgets out in the node's flow and ignores getMinHeight: the badge keeps
  // its own minimum (the classic canvas gives it at least this much too: getMinHeight less margins).
  const minHeight = BADGE_MIN_HEIGHT[kind === PIN ? PIN : STORE];
  root.style.minHeight = `${minHeight}px`;
  root.dataset.minHeight = String(minHeight);
  const widget = node.addDOMWidget("zerocopy_status", "zerocopy-status", root, {
    serialize: false,
    hideOnZoom: false,
    getValue: () => "",
    setValue: () => {},
    getMinHeight: () => minHeight + 2 * DOM_WIDGET_MARGIN, // pin: up to 5 lines (the reload cause is one)
  });
  widget.serialize = false; // never in widgets_values: saved workflows stay what the schema says
  node.__zerocopyBadge = { root, lines, thumb, widget, key: null };
  const tagWidget = node.widgets?.find((w) => w.name === "buffer_tag");
  if (tagWidget) {
    const callback = tagWidget.callback;
    tagWidget.callback = function (...args) {
      const result = callback?.apply(this, args);
      updateNode(node);
      return result;
    };
  }
  updateNode(node);
}

function setLines(badge, rows) {
  badge.lines.replaceChildren(
    ...rows.map(([label, value, cls]) =>
      el("div", { class: `zc-line ${cls ?? ""}` }, el("span", { class: "zc-label", text: label }), el("span", { text: value }))
    )
  );
}

function setThumb(badge, tag, generation, digest) {
  if (!badge.thumb) return;
  const key = tag == null ? null : `${tag}|${generation}|${digest}`;
  if (key === badge.key) return;
  badge.key = key;
  if (key == null) {
    badge.thumb.removeAttribute("src");
    badge.thumb.dataset.generation = "";
    badge.thumb.style.display = "none";
    return;
  }
  badge.thumb.style.display = "";
  badge.thumb.dataset.tag = tag;
  badge.thumb.dataset.generation = String(generation);
  badge.thumb.title = `tail frame of ${tag} generation ${generation} (latent preview, no VAE)`;
  badge.thumb.removeAttribute("src"); // the same URL again (a re-stored generation) must reload
  badge.thumb.src = previewURL(tag, generation);
}

// What a Store or Handoff node shows: its own last event when it has one, else the
// newest shot of the tag in its buffer_tag widget.
function describeNode(id, node) {
  const kind = nodeClass(node);
  const event = state.nodeEvents.get(id);
  const tag = event?.tag ?? widgetValue(node, "buffer_tag");
  const buffer = tag != null ? state.buffers.get(tag) : undefined;
  if (event && (buffer || !state.listedAt)) {
    const slot = buffer?.slots?.find((s) => s.generation === event.generation);
    return {
      kind,
      tag,
      generation: event.generation,
      shape: event.shape ?? slot?.tensors?.[0]?.shape ?? buffer?.shape,
      tier: event.tier ?? slot?.tensors?.[0]?.tier ?? buffer?.tier,
      digest: event.digest ?? slot?.tensors?.[0]?.digest ?? buffer?.digest,
      bitIdentical: kind === HANDOFF ? event.bit_identical : event.digest ? true : undefined,
      firstShot: event.first_shot,
      latentShape: event.latent_shape,
      disk: diskState(tag, event.generation, slot),
      fromEvent: true,
    };
  }
  if (!buffer) return { kind, tag, missing: true };
  return {
    kind,
    tag,
    generation: buffer.newest_generation,
    shape: buffer.shape,
    tier: buffer.tier,
    digest: buffer.digest,
    bitIdentical: kind === STORE && buffer.digest ? true : undefined,
    disk: diskState(tag, buffer.newest_generation, buffer.slots?.find((s) => s.generation === buffer.newest_generation)),
    fromEvent: false,
  };
}

function yesNo(value) {
  if (value === true) return ["yes", "zc-yes"];
  if (value === false) return ["no", "zc-no"];
  return ["—", ""];
}

function updateNode(node, id = null) {
  const badge = badgeFor(node);
  if (!badge) return;
  const kind = nodeClass(node);
  if (kind === PIN) {
    updatePin(node, id ?? String(node.id), badge);
    return;
  }
  if (id == null) id = [...graphNodes()].find(([, n]) => n === node)?.[0] ?? String(node.id);
  const info = describeNode(id, node);
  const data = badge.root.dataset;
  data.nodeId = id;
  data.tag = info.tag ?? "";
  if (info.missing) {
    data.state = "empty";
    data.generation = "";
    data.bitIdentical = "";
    data.digest = "";
    setLines(badge, [["tag", info.tag ?? "—"], ["buffer", state.listedAt ? "empty (nothing stored yet)" : "…"]]);
    setThumb(badge, null);
    return;
  }
  const [identical, identicalClass] = yesNo(info.bitIdentical);
  data.state = "ready";
  data.generation = String(info.generation ?? "");
  data.bitIdentical = identical;
  data.digest = info.digest ?? "";
  const rows = [
    // short enough for the node's default width; a longer tag wraps instead of hiding the generation
    ["tag", `${info.tag} · g${info.generation}`, "zc-wrap"],
    ["shape", `${shapeText(info.shape)}  ·  ${info.tier ?? "—"}`],
    ["digest", shortDigest(info.digest)],
    [kind === HANDOFF ? "bit-identical" : "stored bit-exact", identical, identicalClass],
  ];
  if (kind === HANDOFF && info.firstShot) rows.push(["source", "first shot (fallback image)"]);
  data.disk = info.disk ?? "";
  if (kind === STORE && info.disk) {
    const [text, cls] = DISK_TEXT[info.disk] ?? [info.disk, ""];
    rows.push(["disk", text, cls]);
    const failure = state.spillFailed.get(`${info.tag}@${info.generation}`);
    badge.root.title = info.disk === "failed" ? failure?.message ?? state.spillProblem ?? "" : "";
  }
  setLines(badge, rows);
  setThumb(badge, info.tag, info.generation, info.digest);
}

function residencyLines(report) {
  if (!report) return [["residency", "— (runs with the workflow)"]];
  if (report.available === false) return [["residency", "report unavailable"], ["why", report.reason ?? ""]];
  const [resident, residentClass] = yesNo(report.resident ?? undefined);
  let reload = "none since start";
  const at = report.last_reload_unix;
  if (typeof at === "number" && at > 0) reload = new Date(at * 1000).toLocaleTimeString();
  if (typeof report.last_reload_s === "number") reload += ` (${report.last_reload_s.toFixed(2)} s)`;
  const rows = [
    ["residency", `${report.state ?? "—"}${report.model ? `  ·  ${report.model}` : ""}`],
    ["resident", resident, residentClass],
    ["last reload", reload],
  ];
  // Why the last load moved bytes, in a few words (the report and the log have the sentence).
  if (report.last_reload_reason) rows.push(["cause", report.last_reload_reason]);
  if (report.reason) rows.push(["why", report.reason]);
  return rows;
}

function updatePin(node, id, badge) {
  const report = state.residencyEvents.get(id) ?? state.residency;
  badge.root.dataset.nodeId = id;
  badge.root.dataset.state = report ? "ready" : "empty";
  badge.root.dataset.residency = report?.state ?? "";
  badge.root.title = report?.reason || report?.last_reload_detail || "";
  setLines(badge, residencyLines(report));
}

function updateAllNodes() {
  for (const [id, node] of graphNodes()) if (badgeFor(node)) updateNode(node, id);
  app.graph?.setDirtyCanvas?.(true, true);
}

// ---------------------------------------------------------------- refresh on events

let refreshing = null;
let again = false;

// One listing per burst of events: events during a fetch queue exactly one more.
function refresh() {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      again = false;
      try {
        const doc = await apiJSON("/zerocopy/buffers");
        state.buffers = new Map(doc.buffers.map((b) => [b.tag, b]));
        state.spillProblem = doc.spill_problem ?? null;
        for (const key of [...state.spillFailed.keys()]) { // written since: no longer memory only
          const [tag, generation] = [key.slice(0, key.lastIndexOf("@")), Number(key.slice(key.lastIndexOf("@") + 1))];
          const slot = state.buffers.get(tag)?.slots?.find((s) => s.generation === generation);
          if (!slot || slot.spill === "written") state.spillFailed.delete(key);
        }
        state.listedAt = Date.now();
        state.error = null;
        try {
          state.farm = await apiJSON("/zerocopy/farm");
        } catch (error) {
          state.farm = null; // a server without the farm route: no farm line
        }
        if ([...graphNodes()].some(([, n]) => nodeClass(n) === PIN)) {
          state.residency = await apiJSON("/zerocopy/residency");
        }
      } catch (error) {
        state.error = String(error?.message ?? error);
      }
      // an open storyboard is read again (verified: every file) only when its tag has a new shot
      await Promise.all([...panel.films].filter((tag) => state.buffers.has(tag) && filmIsOld(tag))
        .map((tag) => loadFilm(tag)));
      state.refreshes += 1;
      updateAllNodes();
      panel.render();
    } while (again);
    refreshing = null;
  })();
  return refreshing;
}

function onNodeEvent(kind) {
  return (event) => {
    const detail = event.detail ?? {};
    state.received.push(kind);
    if (detail.node != null) {
      const id = String(detail.node);
      state.nodeEvents.set(id, { ...detail, kind });
      const found = [...graphNodes()].find(([nodeId]) => nodeId === id);
      if (found) updateNode(found[1], id); // at once; the listing that follows fills in the rest
    }
    refresh();
  };
}

// ---------------------------------------------------------------- the engine's state

// Once per page: a server whose engine did not load says which nodes are missing and the fix.
// An older server without the route answers 404: nothing to show.
async function checkEngine() {
  try {
    state.engine = await apiJSON("/zerocopy/engine");
  } catch (error) {
    state.engine = null;
    return;
  }
  if (state.engine?.ok === false) {
    toast("error", "ZeroCopy: the C engine is not loaded", state.engine.message ?? "");
  }
  panel.render();
}

// ---------------------------------------------------------------- farm tier

// The Redis URL from ComfyUI's settings panel; "" hands the choice back to the server's
// ZEROCOPY_REDIS_URL. Called by the settings store at start and on every change.
async function applyFarmURL(value) {
  try {
    state.farm = { ...(await apiJSON("/zerocopy/farm", {
      method: "POST",
      body: JSON.stringify({ url: String(value ?? "").trim() }),
      headers: { "Content-Type": "application/json" },
    })) };
    state.farmError = null;
  } catch (error) {
    state.farmError = String(error?.message ?? error);
  }
  panel.render();
}

function farmLines() {
  const farm = state.farm;
  if (!farm) return [];
  if (!farm.enabled) {
    // never configured (no URL from the setting or the server): no farm, nothing to say
    if (!farm.url) return [];
    return [el("div", { class: "zc-farm", testid: "zerocopy-farm", text: `Farm: off (${farm.reason ?? "no Redis URL"})` })];
  }
  const link = farm.connected === false ? `unreachable: ${farm.last_error ?? ""}` : "connected";
  const lines = [
    el("div", { class: "zc-farm", title: farm.url ?? "", text: `Farm: worker ${farm.worker} · ${farm.url} · ${link}${farm.pending ? ` · ${farm.pending} to publish` : ""}` }),
  ];
  // Redis may evict the farm's keys (or its policy cannot be read): said under the farm line
  const eviction = farm.eviction;
  if (eviction && eviction.message && (eviction.may_evict || eviction.checked === false)) {
    lines.push(el("div", { class: "zc-panel-error", text: eviction.message.replace(/^farm: /, "Farm: ") }));
  }
  for (const shot of farm.tags ?? []) {
    const local = state.buffers.get(shot.tag);
    if (local && (local.newest_generation ?? 0) >= shot.generation) continue; // this worker has it
    lines.push(el("div", { class: "zc-farm-tag", dataset: { tag: shot.tag }, text: `${shot.tag}: gen ${shot.generation} on the farm from ${shot.worker} (${shapeText(shot.shape)} · ${bytesText(shot.bytes)}); a Handoff here fetches it` }));
  }
  return lines;
}

// ---------------------------------------------------------------- storyboard (the film of a tag)

function filmIsOld(tag) {
  const doc = state.films.get(tag);
  return typeof doc !== "object" || doc === null || doc.newest !== state.buffers.get(tag)?.newest_generation;
}

async function loadFilm(tag) {
  try {
    state.films.set(tag, await apiJSON(`/zerocopy/film/${encodeURIComponent(tag)}?verify=true`));
  } catch (error) {
    state.films.set(tag, String(error?.message ?? error));
  }
}

async function chooseTake(tag, generation) {
  state.choosing = tag; // its own zerocopy.film event needs no second read
  try {
    const doc = await apiJSON(`/zerocopy/film/${encodeURIComponent(tag)}/choose`, {
      method: "POST",
      body: JSON.stringify({ generation }),
      headers: { "Content-Type": "application/json" },
    });
    // The line passes through the chosen take, unless a choice made at the same time came after it.
    if (doc?.choice?.on_line === false && doc.choice.note) state.error = doc.choice.note;
  } catch (error) {
    state.error = String(error?.message ?? error);
  }
  await loadFilm(tag);
  state.choosing = null;
  panel.render();
}

// What a Handoff (generation input) or a Load (shot "generation") needs to continue from a shot.
function continueText(tag, shot) {
  return `buffer_tag=${tag} generation=${shot.generation}`;
}

function shotStatus(shot) {
  if (shot.state === "broken") return ["broken", "zc-bad"];
  if (shot.file === "bad") return ["file corrupt", "zc-bad"];
  if (shot.hop === "bad") return ["hop mismatch", "zc-bad"];
  if (shot.file === "ok" && ["ok", "root", "not_checked_external"].includes(shot.hop)) return ["verified", "zc-good"];
  return ["not verified", ""];
}

// The seam of the hop that made a shot (docs/film.md): latent statistics the Store measured, its
// score against the engine's thresholds (green under 2, amber under 4, red from 4).
function seamNumber(v) {
  return v == null ? "—" : String(Number(Number(v).toPrecision(3)));
}

function seamBadge(shot) {
  if (shot.kind === "start_image" || !shot.adapter) return null; // a root: no hop, no seam
  const seam = shot.seam;
  if (!seam) {
    return el("div", { class: "zc-card-line zc-seam zc-seam-none", testid: "zerocopy-seam", dataset: { seam: "none" }, text: "seam —",
      title: "no seam recorded (the film's first shot, or a shot stored before seams were measured)" });
  }
  return el("div", {
    class: `zc-card-line zc-seam zc-seam-${seam.verdict}`,
    testid: "zerocopy-seam",
    dataset: { seam: seam.verdict },
    text: `seam ${seamNumber(seam.score)} ${seam.verdict}`,
    title: `the cut from its parent steps ${seamNumber(seam.score)}× the shots' own frame-to-frame steps `
      + "(latent statistics, not a perceptual score); click for the numbers",
  });
}

function seamLines(shot, doc) {
  const seam = shot.seam;
  if (!seam) return [];
  const t = doc.seam_thresholds ?? { green_below: 2, red_from: 4 };
  const lines = [
    `seam ${seamNumber(seam.score)} (${seam.verdict}; green < ${t.green_below}, red ≥ ${t.red_from}): `
      + `mean step ${seamNumber(seam.mean_step)} · std step ${seamNumber(seam.std_step)} · `
      + `RMS step ${seamNumber(seam.rms_step)} · correlation ${seamNumber(seam.correlation)} `
      + `(within ${seamNumber(seam.within_correlation)})`,
  ];
  if (seam.audio) {
    lines.push(`audio seam: level ${seam.audio.level_db == null ? "—" : `${seam.audio.level_db > 0 ? "+" : ""}`
      + `${seamNumber(seam.audio.level_db)} dB`} · RMS step ${seamNumber(seam.audio.rms_step)} · `
      + `correlation ${seamNumber(seam.audio.correlation)} (within ${seamNumber(seam.audio.within_correlation)})`);
  }
  lines.push("seams are latent statistics, not perceptual scores (docs/film.md)");
  return lines;
}

function storyboardCard(tag, shot, selected) {
  const [status, statusClass] = shotStatus(shot);
  // a shot the film cannot place (shot null, no take) is named by its generation alone
  const placed = shot.shot != null && shot.takes > 0;
  const label = shot.kind === "start_image" ? "start image · " : placed ? `shot ${shot.shot} · ` : "";
  // the border says the seam into this shot (the hop from its parent): green, amber or red
  const seam = shot.seam?.verdict ?? "none";
  return el(
    "div",
    {
      class: `zc-card zc-${shot.state} zc-border-${seam} ${selected ? "zc-selected" : ""}`,
      testid: "zerocopy-card",
      dataset: { generation: String(shot.generation), state: shot.state, take: String(shot.take), takes: String(shot.takes), seam },
      title: shot.problem ?? shot.prompt ?? "",
      onclick: () => {
        state.filmSelected.set(tag, selected ? null : shot.generation);
        panel.render();
        panel.root?.querySelector(".zc-film-detail")?.scrollIntoView?.({ block: "nearest" });
      },
    },
    el("img", { class: "zc-card-thumb", alt: "", loading: "lazy", src: previewURL(tag, shot.generation, 96) }),
    el("div", { class: "zc-card-title", text: `${label}gen ${shot.generation}` }),
    el("div", { class: "zc-card-line", text: `${placed ? `take ${shot.take}/${shot.takes}` : "not on the line"}${shot.pinned ? " · chosen" : ""}` }),
    el("div", { class: "zc-card-line", text: `trim ${shot.trim ?? 0} · ${shot.frames ?? "?"} lat.`, title: `drops ${shot.trim ?? 0} pixel frames at its start when joined; ${shot.frames ?? "?"} latent frames` }),
    el("div", { class: `zc-card-line ${statusClass}`, text: status }),
    seamBadge(shot),
    shot.state === "stale" ? el("div", { class: "zc-card-line zc-stale-mark", text: "stale" }) : null
  );
}

function storyboardDetail(tag, doc, shot) {
  const siblings = doc.shots.filter((s) => s.parent === shot.parent && s.continues === shot.continues);
  const text = continueText(tag, shot);
  // a read-only box that wraps its text (a long tag never hides the generation behind the edge)
  const copyBox = el("textarea", { class: "zc-continue zc-continue-box", testid: "zerocopy-continue", readonly: "readonly", rows: "1", spellcheck: "false" });
  copyBox.value = text;
  const lines = [
    `generation ${shot.generation} · ${shot.state}${shot.continues ? ` · continues ${shot.continues}` : ""}`,
    `parent ${shot.parent || "none (a root)"} · adapter ${shot.adapter || "—"} · trim ${shot.trim ?? 0} · tail ${shot.tail_frames ?? 0}`,
    `prompt: ${shot.prompt || "—"}${shot.seed != null ? ` · seed ${shot.seed}` : ""}`,
    `shape ${shapeText(shot.shape)} · file ${shot.file} · hop ${shot.hop}`
      + (shot.record ? ` · record ${shot.record.replace("_", " ")}` : ""),
    [`digest ${shot.digest ?? "—"}`, "zc-digest"],
    shot.tail_digest ? [`tail used ${shot.tail_digest}`, "zc-digest"] : null,
    ...seamLines(shot, doc),
    shot.problem ? `problem: ${shot.problem}` : null,
  ].filter(Boolean);
  return el(
    "div",
    { class: "zc-film-detail", testid: "zerocopy-film-detail", dataset: { generation: String(shot.generation) } },
    ...lines.map((line) => (Array.isArray(line)
      ? el("div", { class: `zc-slot-line ${line[1]}`, text: line[0] })
      : el("div", { class: "zc-slot-line", text: line }))),
    el(
      "div",
      { class: "zc-takes" },
      el("span", { class: "zc-label", text: "takes" }),
      ...siblings.map((s) =>
        el("button", {
          // each take's seam beside it, so the choice can use it (seam — when none was measured)
          testid: "zerocopy-take",
          class: `zc-button zc-take ${s.state === "line" ? "zc-on-line" : ""} zc-seam-${s.seam?.verdict ?? "none"}`,
          dataset: { generation: String(s.generation), seam: s.seam?.verdict ?? "none" },
          text: `take ${s.take} (gen ${s.generation}) · seam ${s.seam ? `${seamNumber(s.seam.score)} ${s.seam.verdict}` : "—"}`
            + `${s.state === "line" ? " ✓" : ""}`,
          title: `${s.state === "line" ? "on the chosen line" : "choose this take: the film follows it"}`
            + (s.seam ? `; its seam: ${seamLines(s, doc)[0]}` : "; no seam recorded"),
          onclick: (event) => {
            event.stopPropagation();
            chooseTake(tag, s.generation);
          },
        })
      )
    ),
    el(
      "div",
      { class: "zc-continue-row" },
      el("span", { class: "zc-label", text: "continue from here" }),
      copyBox,
      el("button", {
        class: "zc-button zc-copy",
        text: "Copy",
        title: "Copy the tag and generation: set them on a Handoff (generation) or a Load (shot 'generation')",
        onclick: async (event) => {
          event.stopPropagation();
          copyBox.select();
          try {
            await navigator.clipboard.writeText(text);
            event.target.textContent = "Copied";
          } catch {
            event.target.textContent = "Select and copy";
          }
        },
      })
    )
  );
}

const SEAM_ORDER = ["red", "amber", "green"]; // worst first

// Scroll the storyboard card of a generation into view and flash it (the headline's seam counts).
function showCard(tag, generation) {
  const row = [...(panel.root?.querySelectorAll(".zc-row") ?? [])].find((r) => r.dataset.tag === tag);
  const card = row?.querySelector(`.zc-strip-line .zc-card[data-generation="${generation}"]`);
  if (!card) return;
  card.scrollIntoView?.({ block: "nearest", inline: "nearest" });
  card.classList.remove("zc-flash");
  void card.offsetWidth; // restart the animation
  card.classList.add("zc-flash");
}

// The film's headline: its shots, its seams counted by verdict in the verdict's colour (each count
// a button that shows the worst such seam), and whether every hop's digest checked out (in green
// only when no seam is amber or red). The headline's own colour is its worst seam's.
function filmHeadline(tag, doc, line) {
  const shots = line.filter((s) => s.kind !== "start_image");
  const seams = new Map(SEAM_ORDER.map((v) => [v, []]));
  for (const shot of line) if (seams.has(shot.seam?.verdict)) seams.get(shot.seam.verdict).push(shot);
  const worst = SEAM_ORDER.find((v) => seams.get(v).length) ?? null;
  const parts = [el("span", { class: "zc-headline-shots", text: `${shots.length} shot${shots.length === 1 ? "" : "s"} on the line` })];
  for (const verdict of ["red", "amber"]) {
    const found = seams.get(verdict);
    if (!found.length) continue;
    // the worst of these seams first: the one the button shows
    const first = found.reduce((a, b) => ((b.seam.score ?? 0) > (a.seam.score ?? 0) ? b : a));
    parts.push(el("button", {
      class: `zc-headline-seams zc-seam-${verdict}`,
      testid: "zerocopy-headline-seams",
      dataset: { seam: verdict, count: String(found.length), generation: String(first.generation) },
      text: `${found.length} ${verdict} seam${found.length === 1 ? "" : "s"}`,
      title: `show the worst ${verdict} seam: shot ${first.shot} (gen ${first.generation}), `
        + `seam ${seamNumber(first.seam.score)}; ${verdict} seams: ${found.map((s) => seamNumber(s.seam.score)).join(", ")}`,
      onclick: (event) => {
        event.stopPropagation();
        showCard(tag, first.generation);
      },
    }));
  }
  if (!worst || worst === "green") {
    const green = seams.get("green").length;
    if (green) parts.push(el("span", { class: "zc-seam-green", text: `${green} green seam${green === 1 ? "" : "s"}` }));
  }
  const calm = worst !== "red" && worst !== "amber";
  if (doc.ok) {
    parts.push(el("span", { class: calm ? "zc-good" : "zc-headline-fact", text: "every hop verified (digests)" }));
  } else {
    parts.push(el("span", { class: "zc-bad", text: `${doc.problems.length} problem${doc.problems.length === 1 ? "" : "s"}: ${doc.problems.join(" · ")}` }));
  }
  const withDots = parts.flatMap((part, i) => (i ? [el("span", { class: "zc-headline-dot", text: " · " }), part] : [part]));
  return el("div", {
    class: `zc-film-verdict zc-headline-${doc.ok ? worst ?? "none" : "bad"}`,
    testid: "zerocopy-film-headline",
    dataset: { worst: worst ?? "none", ok: String(doc.ok) },
  }, ...withDots);
}

function storyboard(tag) {
  const doc = state.films.get(tag);
  if (doc == null) return el("div", { class: "zc-film", text: "Loading the film…" });
  if (typeof doc === "string") return el("div", { class: "zc-film zc-panel-error", text: doc });
  const byGeneration = new Map(doc.shots.map((s) => [s.generation, s]));
  const line = doc.line.map((g) => byGeneration.get(g)).filter(Boolean);
  const off = doc.shots.filter((s) => s.state !== "line");
  const selectedGeneration = state.filmSelected.get(tag);
  const selected = byGeneration.get(selectedGeneration);
  return el(
    "div",
    { class: "zc-film", testid: "zerocopy-film", dataset: { tag, ok: String(doc.ok), end: String(doc.end ?? "") } },
    filmHeadline(tag, doc, line),
    el("div", { class: "zc-strip zc-strip-line", testid: "zerocopy-strip-line" }, ...line.map((s) => storyboardCard(tag, s, s.generation === selectedGeneration))),
    off.length ? el("div", { class: "zc-label", text: "other takes and stale shots" }) : null,
    off.length ? el("div", { class: "zc-strip zc-strip-off", testid: "zerocopy-strip-off" }, ...off.map((s) => storyboardCard(tag, s, s.generation === selectedGeneration))) : null,
    doc.pins.length
      ? el("button", { class: "zc-button zc-clear-choices", text: "Clear chosen takes", title: "Follow the newest shot again", onclick: () => chooseTake(tag, 0) })
      : null,
    el("button", {
      class: "zc-button zc-render-film",
      testid: "zerocopy-render-film",
      text: "Render to a video file",
      title: "Adds (or shows) a ZeroCopy Film Render node for this film: one shot in memory at a time, the file, its clips and an editor's timeline in the output folder",
      onclick: () => offerRender(tag),
    }),
    state.renderOffer?.tag === tag ? el("div", { class: "zc-label", testid: "zerocopy-render-offer", text: state.renderOffer.text }) : null,
    driftView(doc.drift),
    selected ? storyboardDetail(tag, doc, selected) : null
  );
}

// The storyboard's offer to render the film: the ZeroCopy Film Render node of this tag on the canvas,
// selected, or a new one with the tag set and its VAE linked from the graph's VAE loader (when the
// graph has exactly one VAE output to take). The line under the button says what was done and
// what is left to do (queue the prompt).
function offerRender(tag) {
  const existing = [...graphNodes()].find(([, n]) => nodeClass(n) === RENDER && widgetValue(n, "buffer_tag") === tag);
  let node = existing?.[1];
  let text;
  if (node) {
    text = `The ZeroCopy Film Render node of "${tag}" is selected: queue the prompt to render the film.`;
  } else {
    const LiteGraph = globalThis.LiteGraph ?? globalThis.comfyAPI?.litegraph?.LiteGraph;
    node = LiteGraph?.createNode?.(RENDER);
    if (!node || !app.graph) {
      state.renderOffer = { tag, text: "This ComfyUI has no ZeroCopy Film Render node (see the engine line above)." };
      panel.render();
      return;
    }
    // right of every node of the graph, at the top: it overlaps none of them
    const placed = (app.graph._nodes ?? []).filter((n) => Array.isArray(n.pos) || n.pos?.length);
    const right = placed.length ? Math.max(...placed.map((n) => n.pos[0] + (n.size?.[0] ?? 0))) : 0;
    const top = placed.length ? Math.min(...placed.map((n) => n.pos[1])) : 0;
    node.pos = [right + 80, top];
    app.graph.add(node);
    const tagWidget = node.widgets?.find((w) => w.name === "buffer_tag");
    if (tagWidget) tagWidget.value = tag;
    const vaeOutputs = [...graphNodes()]
      .filter(([, n]) => n !== node && !n.subgraph)
      .flatMap(([, n]) => (n.outputs ?? []).map((o, slot) => ({ n, slot, type: o.type })))
      .filter((o) => o.type === "VAE");
    const vaeInput = node.findInputSlot?.("vae") ?? -1;
    if (vaeOutputs.length === 1 && vaeInput >= 0) {
      vaeOutputs[0].n.connect(vaeOutputs[0].slot, node, vaeInput);
      text = `Added a ZeroCopy Film Render node for "${tag}", its VAE linked: queue the prompt to render the film.`;
    } else {
      text = `Added a ZeroCopy Film Render node for "${tag}": link the VAE the film was made with, then queue the prompt.`;
    }
  }
  app.canvas?.selectNode?.(node);
  app.canvas?.centerOnNode?.(node);
  app.graph?.setDirtyCanvas?.(true, true);
  state.renderOffer = { tag, text };
  panel.render();
}

// The drift of each shot's tail from the first shot's (the film document's drift field, when the
// server reports one): a small plot, or one line saying why the data cannot be drawn.
function driftView(drift) {
  const model = driftPlotModel(drift);
  if (model == null) return null;
  if (model.problem) return el("div", { class: "zc-panel-error", testid: "zerocopy-drift-problem", text: `drift: ${model.problem}` });
  return el("div", { class: "zc-drift-view" }, driftSVG(document, model));
}

// ---------------------------------------------------------------- sidebar panel

const panel = {
  root: null,
  open: new Set(), // tags whose inspect view is open
  films: new Set(), // tags whose storyboard is open
  details: new Map(), // tag -> inspect document or error text
  confirm: null, // tag (or "*") waiting for a second click on clear

  mount(root) {
    this.root = root;
    root.classList.add("zc-panel");
    root.dataset.testid = "zerocopy-panel";
    this.render();
    refresh();
  },

  unmount() {
    this.root = null;
  },

  async inspect(tag) {
    if (this.open.has(tag)) {
      this.open.delete(tag);
      this.render();
      return;
    }
    this.open.add(tag);
    try {
      this.details.set(tag, await apiJSON(`/zerocopy/buffers/${encodeURIComponent(tag)}`));
    } catch (error) {
      this.details.set(tag, String(error?.message ?? error));
    }
    this.render();
  },

  async film(tag) {
    if (this.films.has(tag)) {
      this.films.delete(tag);
      this.render();
      return;
    }
    this.films.add(tag);
    this.render();
    await loadFilm(tag);
    this.render();
  },

  async clear(tag) {
    if (this.confirm !== tag) {
      this.confirm = tag;
      this.render();
      setTimeout(() => {
        if (this.confirm === tag) {
          this.confirm = null;
          this.render();
        }
      }, 4000);
      return;
    }
    this.confirm = null;
    try {
      if (tag === "*") {
        const answer = await apiJSON("/zerocopy/drop", { method: "POST", body: JSON.stringify({ all: true, disk: true }), headers: { "Content-Type": "application/json" } });
        // every tag is dropped or named: those that could not be are said, with the reason
        if (answer?.not_dropped?.length) state.error = `not cleared: ${answer.not_dropped.map((n) => `${n.tag} (${n.reason})`).join("; ")}`;
      } else {
        await apiJSON(`/zerocopy/buffers/${encodeURIComponent(tag)}?disk=true`, { method: "DELETE" });
      }
      this.open.delete(tag);
      // a cleared tag's storyboard closes: nothing is left to read again on each refresh
      for (const known of [...this.films]) {
        if (tag === "*" || known === tag) {
          this.films.delete(known);
          state.films.delete(known);
          state.filmSelected.delete(known);
        }
      }
      for (const [id, event] of state.nodeEvents) if (tag === "*" || event.tag === tag) state.nodeEvents.delete(id);
    } catch (error) {
      state.error = String(error?.message ?? error);
    }
    refresh();
  },

  render() {
    const root = this.root;
    if (!root) return;
    const buffers = [...state.buffers.values()];
    const total = buffers.reduce((sum, b) => sum + (b.bytes ?? 0), 0);
    const header = el(
      "div",
      { class: "zc-panel-header" },
      el("div", { class: "zc-panel-title", text: "ZeroCopy buffers" }),
      el("div", { class: "zc-panel-summary", text: `${buffers.length} tag${buffers.length === 1 ? "" : "s"} · ${bytesText(total)} in memory` }),
      el(
        "div",
        { class: "zc-panel-actions" },
        el("button", { class: "zc-button zc-refresh", testid: "zerocopy-refresh", text: "Refresh", title: "List the buffers again", onclick: () => refresh() }),
        buffers.length
          ? el("button", {
              class: `zc-button zc-clear-all ${this.confirm === "*" ? "zc-confirm" : ""}`,
              text: this.confirm === "*" ? "Confirm: clear all" : "Clear all",
              title: "Forget every buffer and delete its spill files",
              onclick: () => this.clear("*"),
            })
          : null
      )
    );
    const rows = buffers.map((b) => this.row(b));
    const engineDown = state.engine?.ok === false;
    // Without the engine there is no listing to wait for: say why instead of "Loading…" forever.
    const emptyText = engineDown ? "No buffers: the store needs the C engine (the fix is above)."
      : state.listedAt ? "No buffers yet. Queue a workflow with a ZeroCopy Latent Store." : "Loading…";
    const empty = buffers.length ? null : el("div", { class: "zc-panel-empty", testid: "zerocopy-panel-empty", text: emptyText });
    const engine = engineDown
      ? el("div", { class: "zc-panel-error zc-engine-missing", testid: "zerocopy-engine-missing", text: state.engine.message ?? "" },
          state.engine.command ? el("input", { class: "zc-continue zc-engine-command", testid: "zerocopy-engine-command", readonly: "readonly", value: state.engine.command, title: "the command to run, then restart ComfyUI" }) : null)
      : null;
    // Without the engine the listing's own error says the same thing: the engine line says it once.
    const error = state.error && !engineDown ? el("div", { class: "zc-panel-error", text: state.error }) : null;
    // The farm runs on the store: without the engine its error is the engine's, said once above.
    const farmError = state.farmError && !engineDown ? el("div", { class: "zc-panel-error", text: `Farm setting: ${state.farmError}` }) : null;
    const farm = el("div", { class: "zc-farm-lines" }, ...farmLines());
    const memoryOnly = buffers.flatMap((b) => (b.memory_only ?? []).map((g) => `${b.tag} gen ${g}`));
    const spill = memoryOnly.length
      ? el("div", { class: "zc-panel-error zc-memory-only", text: `NOT ON DISK (memory only, retried after each prompt): ${memoryOnly.join(", ")}. ${state.spillProblem ?? ""}` })
      : null;
    // The startup self-check (GET /zerocopy/engine's self_check): one line per part turned off.
    const offParts = (state.engine?.self_check?.parts ?? []).filter((p) => p.state === "off");
    const selfCheck = offParts.length
      ? el("div", { class: "zc-panel-error zc-self-check", "data-testid": "zerocopy-self-check" },
          ...offParts.map((p) => el("div", { text: `OFF: ${p.label}: ${p.detail}` })))
      : null;
    root.replaceChildren(...[header, engine, selfCheck, error, farmError, spill, farm, empty, el("div", { class: "zc-rows" }, ...rows)].filter(Boolean));
  },

  row(b) {
    const inspecting = this.open.has(b.tag);
    const thumb = b.in_memory || b.disk_generations?.length
      ? el("img", { class: "zc-row-thumb", testid: "zerocopy-row-thumb", alt: "", src: previewURL(b.tag, b.newest_generation, 64), loading: "lazy" })
      : null;
    const detail = inspecting ? this.detail(b.tag) : null;
    const film = this.films.has(b.tag) ? storyboard(b.tag) : null;
    return el(
      "div",
      { class: "zc-row", testid: "zerocopy-row", dataset: { tag: b.tag, generation: String(b.newest_generation ?? "") } },
      el(
        "div",
        { class: "zc-row-main" },
        thumb,
        el(
          "div",
          { class: "zc-row-text" },
          el("div", { class: "zc-row-tag", text: b.tag }),
          ...this.rowInfo(b)
        )
      ),
      el(
        "div",
        { class: "zc-row-actions" },
        el("button", { class: "zc-button zc-inspect", testid: "zerocopy-inspect", text: inspecting ? "Close" : "Inspect", onclick: () => this.inspect(b.tag) }),
        el("button", { class: "zc-button zc-film-button", testid: "zerocopy-film-button", text: this.films.has(b.tag) ? "Close film" : "Film", title: "The film under this tag: shots in order, takes, stale shots", onclick: () => this.film(b.tag) }),
        el("button", {
          class: `zc-button zc-clear ${this.confirm === b.tag ? "zc-confirm" : ""}`,
          testid: "zerocopy-clear",
          text: this.confirm === b.tag ? "Confirm clear" : "Clear",
          title: "Forget this tag and delete its spill files",
          onclick: () => this.clear(b.tag),
        })
      ),
      film,
      detail
    );
  },

  // What the listing knows of a tag. A tag held only on disk (after a restart) has no shape, size,
  // digest or age in the listing: it says where it is, how many shots and the newest generation.
  rowInfo(b) {
    const disk = b.disk_generations ?? [];
    if (!b.in_memory) {
      const n = disk.length;
      return [el("div", { class: "zc-row-info", testid: "zerocopy-row-info",
        text: `on disk · ${n} shot${n === 1 ? "" : "s"} · newest gen ${b.newest_generation ?? "—"} · not in memory` })];
    }
    return [
      el("div", { class: "zc-row-info", testid: "zerocopy-row-info", text: `gen ${b.newest_generation} (${b.generations.length} in memory${disk.length ? `, ${disk.length} on disk` : ""})` }),
      b.memory_only?.length ? el("div", { class: "zc-row-info zc-panel-error", text: `memory only, not on disk: gen ${b.memory_only.join(", ")}` }) : null,
      el("div", { class: "zc-row-info", testid: "zerocopy-row-info", text: `${shapeText(b.shape)} ${b.dtype ?? ""} · ${b.tier ?? "—"} · ${bytesText(b.bytes)}` }),
      el("div", { class: "zc-row-info", testid: "zerocopy-row-info",
        text: [shortDigest(b.digest), b.family, b.age_s == null ? null : `${ageText(b.age_s)} ago`].filter(Boolean).join(" · ") }),
    ];
  },

  detail(tag) {
    const doc = this.details.get(tag);
    if (doc == null) return el("div", { class: "zc-detail", text: "Loading…" });
    if (typeof doc === "string") return el("div", { class: "zc-detail zc-panel-error", text: doc });
    const slots = doc.slots.map((slot) =>
      el(
        "div",
        { class: "zc-slot" },
        el("div", { class: `zc-slot-head ${slot.spill === "failed" ? "zc-panel-error" : ""}`, text: `generation ${slot.generation} · ${bytesText(slot.bytes)} · ${slot.restored_from_disk ? "restored from disk" : "in memory"} · ${(DISK_TEXT[slot.spill] ?? [slot.spill ?? "—"])[0]}` }),
        ...slot.tensors.map((t) => el("div", { class: "zc-slot-line zc-digest", text: `${t.name}: ${t.dtype} ${shapeText(t.shape)} ${t.tier} ${t.digest ?? "no digest"}` })),
        ...Object.entries(slot.meta ?? {}).map(([k, v]) =>
          el("div", { class: "zc-slot-line zc-meta", title: v.length > META_CHARS ? v : "", text: `${k}: ${v.length > META_CHARS ? `${v.slice(0, META_CHARS)}…` : v}` })
        )
      )
    );
    const disk = doc.disk_generations.length ? el("div", { class: "zc-slot-line", text: `on disk: generations ${doc.disk_generations.join(", ")}` }) : null;
    return el("div", { class: "zc-detail", testid: "zerocopy-detail" }, ...slots, disk);
  },
};

// ---------------------------------------------------------------- styles

const STYLE = `
.zc-badge { display: flex; gap: 6px; align-items: flex-start; font: 11px/1.35 ui-monospace, Menlo, Consolas, monospace;
  color: var(--input-text, #ddd); background: rgba(0,0,0,.28); border-radius: 6px; padding: 4px 6px; box-sizing: border-box;
  width: 100%; height: 100%; overflow: hidden; pointer-events: none; }
.zc-badge-lines { flex: 1 1 auto; min-width: 0; }
.zc-line { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.zc-line.zc-wrap { white-space: normal; overflow-wrap: anywhere; }
.zc-label { opacity: .65; margin-right: 6px; }
.zc-yes span:last-child { color: #6fdc8c; font-weight: 600; }
.zc-no span:last-child { color: #ffb454; font-weight: 600; }
.zc-thumb { flex: 0 0 auto; width: 96px; height: 96px; object-fit: contain; image-rendering: pixelated;
  border-radius: 4px; background: #111; }
.zc-panel { display: flex; flex-direction: column; gap: 8px; padding: 10px; height: 100%; overflow: auto; box-sizing: border-box;
  font: 12px/1.4 system-ui, sans-serif; color: var(--fg-color, #ddd); }
.zc-panel-title { font-weight: 700; font-size: 14px; }
.zc-panel-summary { opacity: .75; }
.zc-panel-actions { display: flex; gap: 6px; margin-top: 4px; }
.zc-button { font: inherit; padding: 2px 8px; border-radius: 4px; border: 1px solid var(--border-color, #555);
  background: var(--comfy-input-bg, #222); color: inherit; cursor: pointer; }
.zc-button.zc-confirm { border-color: #e5534b; color: #ff8b84; }
.zc-rows { display: flex; flex-direction: column; gap: 8px; }
.zc-row { border: 1px solid var(--border-color, #444); border-radius: 6px; padding: 6px; }
.zc-row-main { display: flex; gap: 8px; }
.zc-row-thumb { width: 64px; height: 64px; object-fit: contain; image-rendering: pixelated; background: #111; border-radius: 4px; }
.zc-row-tag { font-weight: 600; word-break: break-all; }
.zc-row-info { opacity: .85; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 11px; }
.zc-row-actions { display: flex; gap: 6px; margin-top: 6px; }
.zc-detail { margin-top: 6px; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 11px; }
.zc-slot { margin-top: 4px; padding-top: 4px; border-top: 1px dashed var(--border-color, #444); }
.zc-slot-head { font-weight: 600; }
.zc-slot-line { overflow-wrap: break-word; }
.zc-digest { overflow-wrap: anywhere; }
.zc-meta { opacity: .75; }
.zc-panel-error { color: #ff8b84; }
.zc-engine-missing { display: flex; flex-direction: column; gap: 4px; word-break: break-word; }
.zc-panel-empty { opacity: .7; }
.zc-film { margin-top: 6px; display: flex; flex-direction: column; gap: 6px; }
.zc-film-verdict { font-size: 12px; line-height: 1.5; }
.zc-film-verdict.zc-headline-red { color: #ff8b84; }
.zc-film-verdict.zc-headline-amber { color: #ffb454; }
.zc-headline-fact { opacity: .8; }
.zc-headline-dot { opacity: .6; }
.zc-headline-seams { font: inherit; font-weight: 700; padding: 0 4px; border-radius: 4px; cursor: pointer;
  background: transparent; border: 1px solid currentColor; text-decoration: underline; }
.zc-good { color: #6fdc8c; }
.zc-bad { color: #ff8b84; font-weight: 600; }
.zc-strip { display: flex; flex-wrap: wrap; gap: 6px; padding-bottom: 4px; }
.zc-card { flex: 0 0 auto; width: 104px; padding: 4px; border: 1px solid var(--border-color, #444); border-radius: 5px;
  cursor: pointer; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 10px; background: rgba(0,0,0,.18); }
.zc-card.zc-selected { outline: 2px solid #8ab4f8; }
.zc-card.zc-border-green { border-color: #6fdc8c; }
.zc-card.zc-border-amber { border-color: #ffb454; border-width: 2px; padding: 3px; }
.zc-card.zc-border-red { border-color: #e5534b; border-width: 2px; padding: 3px; }
.zc-card.zc-flash { animation: zc-flash 1.2s ease-out 2; }
@keyframes zc-flash { 0% { box-shadow: 0 0 0 4px #8ab4f8; } 100% { box-shadow: 0 0 0 0 transparent; } }
.zc-card.zc-stale { opacity: .6; border-style: dashed; }
.zc-card.zc-broken { border-color: #e5534b; }
.zc-card-thumb { width: 96px; height: 96px; object-fit: contain; image-rendering: pixelated; background: #111; border-radius: 3px; }
.zc-card-title { font-weight: 700; }
.zc-card-title, .zc-card-line { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.zc-stale-mark { color: #ffb454; font-weight: 700; text-transform: uppercase; }
.zc-seam { font-weight: 700; }
.zc-seam-green { color: #6fdc8c; }
.zc-seam-amber { color: #ffb454; }
.zc-seam-red { color: #ff8b84; }
.zc-seam-none { opacity: .6; font-weight: 400; }
.zc-film-detail { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 11px; border-top: 1px dashed var(--border-color, #444); padding-top: 4px; overflow-wrap: break-word; }
.zc-takes, .zc-continue-row { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; margin-top: 4px; }
.zc-take.zc-on-line { border-color: #6fdc8c; }
.zc-continue { flex: 1 1 120px; font: inherit; background: #111; color: inherit; border: 1px solid var(--border-color, #555); border-radius: 3px; }
.zc-continue-box { flex: 1 1 100%; min-width: 0; box-sizing: border-box; resize: none; overflow: hidden; field-sizing: content;
  white-space: pre-wrap; overflow-wrap: anywhere; padding: 2px 4px; }
.zc-drift-view { margin-top: 2px; }
.zc-drift { display: block; width: 100%; max-width: 300px; height: auto; font: 10px ui-monospace, Menlo, Consolas, monospace; fill: currentColor; }
.zc-drift-title { font-size: 10px; font-weight: 700; }
.zc-drift-legend { font: 11px system-ui, sans-serif; }
.zc-drift-tick, .zc-drift-legend { opacity: .8; }
.zc-drift-axis { stroke: currentColor; stroke-opacity: .5; }
.zc-farm { opacity: .85; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 11px; word-break: break-all; }
.zc-farm-tag { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 11px; color: #8ab4f8; word-break: break-all; }
`;

// ---------------------------------------------------------------- registration

app.registerExtension({
  name: "ZeroCopy.Continuity",

  settings: [
    {
      id: FARM_URL_SETTING,
      category: ["ZeroCopy", "Farm", "Redis URL"],
      name: "Farm: Redis URL",
      tooltip:
        "redis://host:6379/0 (rediss:// for TLS) shared by every ComfyUI worker of the farm; empty: the server's " +
        "ZEROCOPY_REDIS_URL, or no farm. Kept in plain text in your ComfyUI settings: prefer a URL without the " +
        "password and ZEROCOPY_REDIS_PASSWORD on the server.",
      type: "text",
      defaultValue: "",
      onChange: (value) => applyFarmURL(value),
    },
  ],

  async setup() {
    document.head.append(el("style", { id: "zerocopy-style", text: STYLE }));
    api.addEventListener("zerocopy.store", onNodeEvent("zerocopy.store"));
    api.addEventListener("zerocopy.handoff", onNodeEvent("zerocopy.handoff"));
    api.addEventListener("zerocopy.residency", (event) => {
      const detail = event.detail ?? {};
      state.received.push("zerocopy.residency");
      if (detail.node != null) state.residencyEvents.set(String(detail.node), detail);
      state.residency = { available: true, ...detail };
      updateAllNodes();
    });
    api.addEventListener("zerocopy.film", async (event) => {
      state.received.push("zerocopy.film");
      const tag = event.detail?.tag;
      if (panel.films.has(tag) && state.choosing !== tag) { // another tab chose: this one follows
        await loadFilm(tag);
        panel.render();
      }
    });
    api.addEventListener("zerocopy.spill_failed", (event) => {
      const detail = event.detail ?? {};
      state.received.push("zerocopy.spill_failed");
      state.spillFailed.set(`${detail.tag}@${detail.generation}`, detail);
      updateAllNodes();
      refresh();
    });
    api.addEventListener("zerocopy.warning", (event) => {
      const detail = event.detail ?? {};
      state.received.push("zerocopy.warning");
      toast(detail.severity === "error" ? "error" : "warn", detail.title ?? "ZeroCopy", detail.message ?? "");
    });
    api.addEventListener("zerocopy.buffers", () => {
      state.received.push("zerocopy.buffers");
      refresh();
    });
    for (const name of ["execution_success", "execution_error", "execution_interrupted", "reconnected"]) {
      api.addEventListener(name, () => refresh());
    }
    const sidebar = app.extensionManager?.registerSidebarTab;
    if (typeof sidebar === "function") {
      app.extensionManager.registerSidebarTab({
        id: SIDEBAR_ID,
        icon: "pi pi-database",
        title: "ZeroCopy",
        tooltip: "ZeroCopy buffers: stored latents, thumbnails, inspect and clear",
        type: "custom",
        render: (root) => panel.mount(root),
        destroy: () => panel.unmount(),
      });
    }
    checkEngine();
    refresh();
  },

  async nodeCreated(node) {
    if (BADGED.has(nodeClass(node))) addBadge(node);
  },

  async afterConfigureGraph() {
    updateAllNodes();
    refresh();
  },
});
