// The storyboard's drift view: how far each shot's tail has drifted from the film's first shot,
// per channel, as a small inline SVG (no library). Pure: no ComfyUI import, so the tests run the
// model part (driftPlotModel) in Node against a fixture of the API's contract.
//
// The data is the `drift` field of GET /zerocopy/film/{tag} (docs/web-api.md):
//   null, or {stream, channels: C, reference_generation, shots: [{index, generation,
//   mean_delta: [C], std_ratio: [C]}, ...]}
// index 0 is the first shot of the chosen line (mean_delta all 0, std_ratio all 1); mean_delta is
// (tail mean - first shot's tail mean) / first shot's tail std, std_ratio tail std / first
// shot's tail std, per channel.
//
// Plotted per shot: the colour drift max_c |mean_delta| and the contrast drift max_c |ln std_ratio|
// (bold), and every channel's |mean_delta| (light), against the shot index.

// top: the title and the legend's two rows above the plot
export const DRIFT_SIZE = { width: 300, height: 160, left: 34, right: 8, top: 50, bottom: 20 };

const COLOURS = { mean: "#8ab4f8", spread: "#ffb454", channel: "#8ab4f8", fine: "#3fb950" };

// The "fine" band, a reading guide and not a verdict: both lines under 0.3, i.e. every channel's
// mean within 0.3 first-shot σ of the first shot's and its contrast within a factor e^0.3 (0.74 to
// 1.35) of it; docs/film.md's "mean_delta within a few tenths and std_ratio near 1". A line that
// leaves the band shot after shot is the drift the colour anchor is meant to stop.
export const DRIFT_FINE = 0.3;

// The contract checked: a readable error names the first thing that does not match.
export function driftProblem(drift) {
  if (drift == null) return null;
  if (typeof drift !== "object" || !Array.isArray(drift.shots)) return "drift.shots is not a list";
  const channels = drift.channels;
  if (!Number.isInteger(channels) || channels < 1) return `drift.channels is ${channels}, not a positive integer`;
  for (const [i, shot] of drift.shots.entries()) {
    if (shot?.index !== i) return `drift.shots[${i}].index is ${shot?.index}, expected ${i}`;
    for (const key of ["mean_delta", "std_ratio"]) {
      const values = shot[key];
      if (!Array.isArray(values) || values.length !== channels) {
        return `drift.shots[${i}].${key} has ${Array.isArray(values) ? values.length : "no"} values, expected ${channels}`;
      }
      if (!values.every((v) => typeof v === "number" && Number.isFinite(v))) return `drift.shots[${i}].${key} holds a non-finite value`;
      if (key === "std_ratio" && !values.every((v) => v > 0)) return `drift.shots[${i}].std_ratio holds a value <= 0`;
    }
  }
  return null;
}

// Per shot: {index, generation, mean: max |mean_delta|, spread: max |ln std_ratio|, channels: [|mean_delta|]}.
export function driftSeries(drift) {
  return drift.shots.map((shot) => {
    const channels = shot.mean_delta.map((v) => Math.abs(v));
    return {
      index: shot.index,
      generation: shot.generation,
      mean: Math.max(...channels),
      spread: Math.max(...shot.std_ratio.map((v) => Math.abs(Math.log(v)))),
      channels,
    };
  });
}

function niceCeiling(value) {
  if (!(value > 0)) return 1;
  const step = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 2.5, 5, 10]) if (value <= m * step) return m * step;
  return 10 * step;
}

function round(v) {
  return Math.round(v * 10) / 10;
}

// Everything the picture needs, in plot pixels: null without data, {problem} when the data does
// not match the contract.
export function driftPlotModel(drift, size = DRIFT_SIZE) {
  if (drift == null) return null;
  const problem = driftProblem(drift);
  if (problem) return { problem };
  const series = driftSeries(drift);
  const { width, height, left, right, top, bottom } = size;
  const yMax = niceCeiling(Math.max(...series.flatMap((s) => [s.mean, s.spread, ...s.channels])));
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const x = (i) => round(left + (series.length > 1 ? (i * plotW) / (series.length - 1) : plotW / 2));
  const y = (v) => round(top + plotH - (v / yMax) * plotH);
  const points = (values) => values.map((v, i) => [x(i), y(v)]);
  const worst = series.reduce((a, b) => (b.mean > a.mean ? b : a), series[0]);
  const fineTop = Math.min(DRIFT_FINE, yMax);
  return {
    width,
    height,
    title: `drift from shot 1 (gen ${drift.reference_generation}) · ${drift.stream ?? "video"} · ${drift.channels} ch`,
    yMax,
    axis: { x0: left, x1: width - right, y0: top + plotH, y1: top },
    xLabels: series.map((s, i) => ({ x: x(i), text: String(i + 1), generation: s.generation })),
    lines: [
      // in words: the largest channel's move of its mean, and of its contrast (max |Δmean| / σ₁ and
      // max |ln σ/σ₁|; the notation is in the lines' tooltips)
      { key: "mean", label: "mean drift (in first-shot σ)", notation: "max over channels of |Δmean| / σ₁",
        colour: COLOURS.mean, points: points(series.map((s) => s.mean)) },
      { key: "spread", label: "contrast drift (log of σ ÷ first-shot σ)", notation: "max over channels of |ln σ/σ₁|",
        colour: COLOURS.spread, points: points(series.map((s) => s.spread)) },
    ],
    // the band from 0 up to DRIFT_FINE (cut at the axis' top when every value is smaller)
    fine: { below: DRIFT_FINE, y0: y(0), y1: y(fineTop), label: `fine: under ${DRIFT_FINE}`,
            notation: "both lines under 0.3: means within 0.3 first-shot σ, contrast within ×0.74–×1.35" },
    channelLines: Array.from({ length: drift.channels }, (_, c) => points(series.map((s) => s.channels[c]))),
    worst: { index: worst.index, generation: worst.generation, mean: worst.mean },
    series,
  };
}

const SVG = "http://www.w3.org/2000/svg";

function node(doc, tag, attributes = {}, text = null) {
  const element = doc.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (text != null) element.textContent = text;
  return element;
}

const path = (pts) => pts.map(([px, py]) => `${px},${py}`).join(" ");

// The SVG element of a model (every value set as an attribute or as text); doc is the document.
export function driftSVG(doc, model) {
  const { width, height, axis } = model;
  const svg = node(doc, "svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": model.title,
    "data-testid": "zerocopy-drift", class: "zc-drift", "data-y-max": model.yMax, "data-shots": model.series.length,
    "data-worst-generation": model.worst.generation });
  svg.append(node(doc, "title", {}, `${model.title}. Latent statistics relative to the first shot's tail, not a perceptual score.`));
  svg.append(node(doc, "text", { x: axis.x0, y: 11, class: "zc-drift-title", "data-testid": "zerocopy-drift-title" }, model.title));
  svg.append(node(doc, "line", { x1: axis.x0, y1: axis.y0, x2: axis.x1, y2: axis.y0, class: "zc-drift-axis" }));
  svg.append(node(doc, "line", { x1: axis.x0, y1: axis.y0, x2: axis.x0, y2: axis.y1, class: "zc-drift-axis" }));
  svg.append(node(doc, "text", { x: axis.x0 - 3, y: axis.y1 + 4, "text-anchor": "end", class: "zc-drift-tick" }, String(model.yMax)));
  svg.append(node(doc, "text", { x: axis.x0 - 3, y: axis.y0, "text-anchor": "end", class: "zc-drift-tick" }, "0"));
  for (const label of model.xLabels) {
    svg.append(node(doc, "text", { x: label.x, y: axis.y0 + 12, "text-anchor": "middle", class: "zc-drift-tick" }, label.text));
  }
  const fine = node(doc, "g", { "data-testid": "zerocopy-drift-fine", "data-below": model.fine.below });
  fine.append(node(doc, "title", {}, model.fine.notation));
  fine.append(node(doc, "rect", { x: axis.x0, y: model.fine.y1, width: axis.x1 - axis.x0, height: model.fine.y0 - model.fine.y1,
    fill: COLOURS.fine, "fill-opacity": 0.14 }));
  fine.append(node(doc, "text", { x: axis.x1 - 2, y: model.fine.y1 - 2, "text-anchor": "end", class: "zc-drift-legend zc-drift-fine",
    "data-testid": "zerocopy-drift-fine-label" }, model.fine.label));
  svg.append(fine);
  const channels = node(doc, "g", { "data-testid": "zerocopy-drift-channels", stroke: COLOURS.channel, "stroke-opacity": 0.18, fill: "none" });
  for (const pts of model.channelLines) channels.append(node(doc, "polyline", { points: path(pts), "stroke-width": 1 }));
  svg.append(channels);
  model.lines.forEach((line, i) => {
    const group = node(doc, "g", { "data-testid": `zerocopy-drift-${line.key}`, "data-values": model.series.map((s) => s[line.key].toPrecision(3)).join(",") });
    group.append(node(doc, "polyline", { points: path(line.points), stroke: line.colour, "stroke-width": 2, fill: "none" }));
    for (const [px, py] of line.points) group.append(node(doc, "circle", { cx: px, cy: py, r: 2.5, fill: line.colour }));
    svg.append(group);
    // one legend row per line, at the plot's left, in words
    const ly = 24 + i * 14;
    const legend = node(doc, "g", {});
    legend.append(node(doc, "title", {}, line.notation));
    legend.append(node(doc, "rect", { x: axis.x0, y: ly - 5, width: 12, height: 4, fill: line.colour }));
    legend.append(node(doc, "text", { x: axis.x0 + 16, y: ly, class: "zc-drift-legend", "data-testid": "zerocopy-drift-legend" }, line.label));
    svg.append(legend);
  });
  return svg;
}
