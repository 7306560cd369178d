"""The storyboard's drift view against the contract of the film document's ``drift`` field
(fixtures/film_drift.json): web/zerocopy_drift.js run in Node, its plot model compared
with the maxima computed here from the fixture, and malformed fields refused with a message that
names what is wrong. The SVG itself is drawn in a real browser by
tests/integration/test_browser_ui.py. Skipped when Node.js is not installed."""

from __future__ import annotations

import copy
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "web" / "zerocopy_drift.js"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "film_drift.json"
RUNNER = """
import { readFileSync } from "node:fs";
const drift = await import(process.argv[1]);
const cases = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(cases.map((c) => drift.driftPlotModel(c))));
"""


def plot_models(*fields):
    """driftPlotModel(field) for each field, computed by the shipped module in Node."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("skipped: Node.js not installed (apt-get install nodejs); the module is plain ES2020")
    done = subprocess.run([node, "--input-type=module", "-e", RUNNER, MODULE.as_uri()], input=json.dumps(fields),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def fixture():
    return json.loads(FIXTURE.read_text())["drift"]


def test_the_fixture_is_the_contract():
    drift = fixture()
    first = drift["shots"][0]
    assert first["index"] == 0 and first["generation"] == drift["reference_generation"]
    assert first["mean_delta"] == [0.0] * drift["channels"] and first["std_ratio"] == [1.0] * drift["channels"]
    assert [s["index"] for s in drift["shots"]] == list(range(len(drift["shots"])))


def test_the_plot_shows_each_shots_worst_channel():
    drift = fixture()
    (model,) = plot_models(drift)
    series = model["series"]
    assert [s["generation"] for s in series] == [s["generation"] for s in drift["shots"]]
    for shot, point in zip(drift["shots"], series, strict=True):
        assert point["mean"] == pytest.approx(max(abs(v) for v in shot["mean_delta"]))
        assert point["spread"] == pytest.approx(max(abs(math.log(v)) for v in shot["std_ratio"]))
    assert series[0]["mean"] == 0 and series[0]["spread"] == 0
    # the worst colour drift is shot 3 (generation 3: channel 2 by 1.5 first-shot std)
    assert model["worst"] == {"index": 2, "generation": 3, "mean": 1.5}
    # the axis holds every value plotted, bold and light
    highest = max(max(abs(v) for v in s["mean_delta"]) for s in drift["shots"])
    assert highest <= model["yMax"] < 2 * highest
    assert len(model["channelLines"]) == drift["channels"]
    assert [line["key"] for line in model["lines"]] == ["mean", "spread"]
    assert all(line["label"] for line in model["lines"]) and "gen 1" in model["title"]


def test_points_rise_with_drift_and_stay_in_the_plot():
    (model,) = plot_models(fixture())
    axis = model["axis"]
    means = model["lines"][0]["points"]
    assert means[0][1] == axis["y0"]  # shot 1 sits on the zero line
    xs = [x for x, _ in means]
    assert xs == sorted(xs) and xs[0] == axis["x0"] and xs[-1] == axis["x1"]
    assert all(axis["y1"] <= y <= axis["y0"] for line in model["lines"] for _, y in line["points"])
    # higher drift is drawn higher (smaller y): shot 3's colour drift above shot 2's
    assert means[2][1] < means[1][1] < means[0][1]


def test_the_fine_band_runs_from_zero_to_its_bound_on_the_plots_scale():
    drift = fixture()
    calm = copy.deepcopy(drift)  # every value under the band's bound: the band is cut at the axis' top
    for shot in calm["shots"]:
        shot["mean_delta"] = [v / 100 for v in shot["mean_delta"]]
        shot["std_ratio"] = [1.0 for _ in shot["std_ratio"]]
    model, quiet = plot_models(drift, calm)
    band, axis = model["fine"], model["axis"]
    assert band["below"] == 0.3 and band["label"] == "fine: under 0.3"
    assert band["y0"] == axis["y0"]  # from the zero line
    height = axis["y0"] - axis["y1"]
    assert band["y1"] == pytest.approx(axis["y0"] - 0.3 / model["yMax"] * height, abs=0.1)
    # a point inside the band is drawn inside it, one outside above it (shot 3's 1.5 σ)
    means = model["lines"][0]["points"]
    assert means[0][1] >= band["y1"] and means[2][1] < band["y1"]
    assert quiet["yMax"] < 0.3 and quiet["fine"]["y1"] == axis["y1"]


def test_no_drift_draws_nothing_and_a_malformed_field_says_what_is_wrong():
    drift = fixture()
    short = copy.deepcopy(drift)
    short["shots"][2]["mean_delta"].pop()
    bad_index = copy.deepcopy(drift)
    bad_index["shots"][1]["index"] = 5
    negative = copy.deepcopy(drift)
    negative["shots"][3]["std_ratio"][0] = 0
    models = plot_models(None, short, bad_index, negative, {"channels": 4})
    assert models[0] is None
    assert models[1] == {"problem": "drift.shots[2].mean_delta has 3 values, expected 4"}
    assert models[2] == {"problem": "drift.shots[1].index is 5, expected 1"}
    assert models[3] == {"problem": "drift.shots[3].std_ratio holds a value <= 0"}
    assert models[4] == {"problem": "drift.shots is not a list"}
