"""The GPU command's CPU-side logic (bench/gpu/run_all.py), without a GPU: its arguments, the plan
of child runs, running them within the budget, merging their JSON, the machine record, the
refusal without CUDA; and the device-tier script's plumbing with a fake of torch.cuda. The fake
children write made-up figures (gpu_run_fakes.py): nothing here is a measurement, and no timing is
asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest
import torch

import gpu_run_fakes as fakes
from bench.gpu import device_tier, run_all

REPO = Path(__file__).resolve().parents[2]


def fake_comfyui(tmp_path: Path) -> Path:
    """A folder that passes for a ComfyUI checkout (the children that would use it are fakes)."""
    root = tmp_path / "ComfyUI"
    (root / "comfy").mkdir(parents=True, exist_ok=True)
    for name, text in (("comfy/__init__.py", ""), ("comfy/model_management.py", ""), ("cuda_malloc.py", ""),
                       ("comfy/cli_args.py", "import types\nargs = types.SimpleNamespace()\n"),
                       ("comfyui_version.py", '__version__ = "0.0.fake"\n')):
        (root / name).write_text(text)
    return root


def options(tmp_path, *extra):
    return run_all.parse_args(["--work-dir", str(tmp_path / "work"), *extra])


# --------------------------------------------------------------------------- arguments and plan


def test_arguments_default_to_the_full_run_within_eight_minutes(tmp_path, monkeypatch):
    monkeypatch.delenv("COMFYUI_PATH", raising=False)
    opts = options(tmp_path)
    assert opts.mode == "full" and opts.budget_s == 480 and opts.comfyui is None
    assert opts.out == REPO / "bench" / "results" / "gpu.json"
    assert options(tmp_path, "--quick").mode == "quick"
    for bad in (["--budget-s", "5"], ["--comfyui", str(tmp_path)], ["--only", "nonsense"]):
        with pytest.raises(SystemExit):
            options(tmp_path, *bad)


def test_the_plan_runs_every_gpu_row_in_order_each_allocator_setting_alone(tmp_path):
    comfy = fake_comfyui(tmp_path)
    children = run_all.plan(options(tmp_path, "--comfyui", str(comfy)), python="py")
    assert [c.name for c in children] == list(run_all.ORDER)
    assert not any(c.skip for c in children)
    by_name = {c.name: c for c in children}
    base = {"PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.5", "PATH": "/bin"}  # the user's: not passed on
    env = {name: by_name[name].environment(base) for name in by_name}
    assert "PYTORCH_ALLOC_CONF" not in env["residency_classic_cudaMallocAsync"]
    assert "PYTORCH_ALLOC_CONF" not in env["residency_classic_native"]
    assert env["residency_classic_native_expandable"]["PYTORCH_ALLOC_CONF"] == "expandable_segments:True"
    assert env["residency_classic_native_expandable"]["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert env["overhead_default"]["COMFYUI_PATH"] == str(comfy) and env["device_tier"]["PATH"] == "/bin"
    argv = by_name["residency_classic_cudaMallocAsync"].argv
    assert argv[argv.index("--allocator") + 1] == "cudaMallocAsync" and argv[argv.index("--modes") + 1] == "classic"
    assert argv[argv.index("--shots") + 1] == "10" and argv[argv.index("--model-gb") + 1] == "6.0"
    dynamic = by_name["residency_dynamic"].argv
    assert dynamic[dynamic.index("--modes") + 1] == "dynamic"
    assert [c.argv[c.argv.index("--flags") + 1] for c in children if c.name.startswith("overhead")] == \
        ["gpu-only", "default"]
    quick = {c.name: c for c in run_all.plan(options(tmp_path, "--comfyui", str(comfy), "--quick"))}
    shots = quick["residency_dynamic"].argv
    assert shots[shots.index("--shots") + 1] == "3"


def test_the_plan_measures_p3_right_after_the_device_tier_bounded_at_p1s_canvas(tmp_path):
    """P3 (the gray padding's encode on the GPU): a short run second, so the budget never cuts it;
    P1's canvas (832x480, 81 frames; 17 with --quick), ComfyUI choosing the allocator."""
    comfy = fake_comfyui(tmp_path)
    for extra, frames, cap in (((), "81", 120), (("--quick",), "17", 60)):
        children = run_all.plan(options(tmp_path, "--comfyui", str(comfy), *extra), python="py")
        assert [c.name for c in children][:2] == ["device_tier", "padding_gpu"]
        padding = children[1]
        assert padding.argv[1].endswith("bench/gpu/padding_gpu.py") and padding.cap_s == cap
        assert padding.argv[padding.argv.index("--length") + 1] == frames
        assert padding.argv[padding.argv.index("--comfyui") + 1] == str(comfy)
        assert padding.result is not None and padding.result.name == "padding_gpu.json"
        env = padding.environment({"PYTORCH_CUDA_ALLOC_CONF": "mine", "PATH": "/bin"})
        assert "PYTORCH_CUDA_ALLOC_CONF" not in env and env["COMFYUI_PATH"] == str(comfy)
    assert sum(run_all.MODES["full"]["caps"][k] for k in ("device_tier", "padding")) < 480


def test_without_comfyui_only_the_device_tier_runs_and_the_others_say_why(tmp_path, monkeypatch):
    monkeypatch.delenv("COMFYUI_PATH", raising=False)
    children = run_all.plan(options(tmp_path))
    assert [c.name for c in children if not c.skip] == ["device_tier"]
    assert all("COMFYUI_PATH" in c.skip for c in children if c.skip)


def test_only_plans_what_was_asked_and_the_model_the_residency_runs_need(tmp_path):
    comfy = fake_comfyui(tmp_path)
    names = [c.name for c in run_all.plan(options(tmp_path, "--comfyui", str(comfy), "--only",
                                                  "residency_dynamic", "overhead_default"))]
    assert names == ["residency_prepare", "residency_dynamic", "overhead_default"]


def test_plan_prints_without_a_gpu_and_measures_nothing(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "gpu" / "run_all.py"), "--plan",
                           "--work-dir", str(tmp_path / "w"), "--out", str(tmp_path / "gpu.json")],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "COMFYUI_PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert "device_tier" in proc.stdout and "residency_classic_native_expandable" in proc.stdout
    assert not (tmp_path / "gpu.json").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal cannot be shown")
@pytest.mark.parametrize("tool", ["run_all.py", "device_tier.py", "overhead_gpu.py", "residency_check.py",
                                  "padding_gpu.py"])
def test_without_cuda_each_gpu_tool_refuses_in_one_line(tmp_path, tool):
    args = {"run_all.py": ["--out", str(tmp_path / "gpu.json"), "--work-dir", str(tmp_path / "w")],
            "device_tier.py": ["--json", str(tmp_path / "gpu.json")],
            "overhead_gpu.py": ["--comfyui", str(fake_comfyui(tmp_path)), "--flags", "default",
                                "--json", str(tmp_path / "gpu.json"), "--work-dir", str(tmp_path / "w")],
            "residency_check.py": ["--comfyui", str(fake_comfyui(tmp_path)), "--work-dir", str(tmp_path / "w")],
            "padding_gpu.py": ["--comfyui", str(fake_comfyui(tmp_path)), "--json", str(tmp_path / "gpu.json"),
                               "--work-dir", str(tmp_path / "w")]}[tool]
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "gpu" / tool), *args], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if "needs a CUDA GPU" in line]
    assert len(lines) == 1 and "Nothing was measured" in lines[0], proc.stderr
    assert not (tmp_path / "gpu.json").exists()


# --------------------------------------------------------------------------- running and merging


FAKE_CHILD = """
import json, os, sys
args = sys.argv[1:]
opt = lambda name: args[args.index(name) + 1] if name in args else None
if "--prepare-only" in args:
    sys.exit(0)
results = json.loads({payload!r})
conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or ""
key = ("dynamic" if opt("--modes") == "dynamic" else "padding" if opt("--length") else
       "native_expandable" if "expandable" in conf else opt("--allocator") or opt("--flags") or "device")
doc = results[key]
doc["env_seen"] = {{n: os.environ.get(n) for n in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "COMFYUI_PATH")}}
json.dump(doc, open(opt("--json"), "w"))
"""


def fake_scripts(tmp_path: Path, payload: dict | None = None) -> dict:
    script = tmp_path / "fake_child.py"
    script.write_text(FAKE_CHILD.format(payload=json.dumps(payload or fakes.fake_results())))
    return {"device_tier": script, "residency": script, "overhead": script, "padding": script}


def test_children_run_in_turn_and_their_json_is_merged_into_one_document(tmp_path):
    comfy = fake_comfyui(tmp_path)
    opts = options(tmp_path, "--comfyui", str(comfy))
    children = run_all.plan(opts, scripts=fake_scripts(tmp_path))
    runs = run_all.run_children(children, time.monotonic() + 300, tmp_path / "logs", say=lambda _: None)
    assert {name: r["status"] for name, r in runs.items()} == {name: "measured" for name in run_all.ORDER}
    seen = {name: r["result"]["env_seen"] for name, r in runs.items() if "result" in r}
    assert seen["residency_classic_native"]["PYTORCH_CUDA_ALLOC_CONF"] is None
    assert seen["residency_classic_native_expandable"]["PYTORCH_ALLOC_CONF"] == "expandable_segments:True"
    assert seen["overhead_gpu_only"]["COMFYUI_PATH"] == str(comfy)
    assert runs["residency_classic_native_expandable"]["result"]["runs"][1]["shots"][0]["allocator"][
        "expandable_segments"] == 3
    assert runs["padding_gpu"]["result"]["encodes"]["float32"]["dtype"] == "float32"
    assert seen["padding_gpu"]["COMFYUI_PATH"] == str(comfy)
    machine = run_all.machine_record(fakes.FakeTorch(), comfy)
    doc = run_all.document(machine, opts, runs, 12.0)
    assert doc["format"] == run_all.FORMAT and doc["mode"] == "full" and doc["budget_s"] == 480
    assert doc["machine"]["gpus"][0]["name"] == fakes.FAKE_GPU and doc["machine"]["torch"] == "0.0-fake"
    assert doc["machine"]["comfyui"]["version"] == "0.0.fake"
    assert "not a git checkout" in doc["machine"]["comfyui"]["commit"]
    json.dumps(doc)


def test_a_child_without_a_result_is_failed_and_one_past_the_budget_is_not_measured(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import sys; print('it broke here'); sys.exit(3)\n")
    comfy = fake_comfyui(tmp_path)
    children = run_all.plan(options(tmp_path, "--comfyui", str(comfy), "--only", "device_tier", "overhead_default"),
                            scripts={"device_tier": broken, "residency": broken, "overhead": broken,
                                     "padding": broken})
    clock = iter([0.0, 1.0, 10_000.0, 10_001.0]).__next__  # the second child finds the budget spent
    runs = run_all.run_children(children, 100.0, tmp_path / "logs", clock=clock, say=lambda _: None)
    assert runs["device_tier"]["status"] == "failed" and "exited 3" in runs["device_tier"]["reason"]
    assert "it broke here" in runs["device_tier"]["reason"]
    assert runs["overhead_default"]["status"] == "not_measured"
    assert "budget was spent" in runs["overhead_default"]["reason"]


def test_a_child_past_its_cap_is_ended_with_everything_it_started(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    slow = tmp_path / "slow.py"
    slow.write_text(textwrap.dedent(f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(60)
    """))
    child = run_all.ChildRun("device_tier", "slow", [sys.executable, str(slow)], tmp_path / "never.json", cap_s=3)
    started = time.monotonic()
    runs = run_all.run_children([child], time.monotonic() + 300, tmp_path / "logs", say=lambda _: None)
    assert time.monotonic() - started < 30
    assert runs["device_tier"]["status"] == "not_measured" and "no result within 3 s" in runs["device_tier"]["reason"]
    pid = int(pid_file.read_text())
    for _ in range(50):  # the grandchild was killed with its group (it may linger briefly as a zombie)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        stat = Path(f"/proc/{pid}/stat")
        if stat.is_file() and stat.read_text().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail("the child's own child outlived the timeout")


def test_the_driver_and_comfyui_commit_are_recorded_or_said_unknown(tmp_path):
    def fake_run(cmd, **kwargs):  # a FAKE nvidia-smi and git
        if cmd[0] == "nvidia-smi":
            return types.SimpleNamespace(stdout="999.1\n999.1\n", returncode=0)
        return types.SimpleNamespace(stdout="abc123\n", returncode=0)
    assert run_all.nvidia_driver(fake_run) == "999.1"
    assert run_all.comfyui_record(fake_comfyui(tmp_path), fake_run)["commit"] == "abc123"

    def missing(cmd, **kwargs):
        raise FileNotFoundError(cmd[0])
    assert run_all.nvidia_driver(missing).startswith("unknown")
    assert run_all.comfyui_record(None) is None


# --------------------------------------------------------------------------- the device-tier script


class FakeCuda:
    """A FAKE of the torch.cuda calls bench/gpu/device_tier.py makes, so that its plumbing runs on the
    CPU. Streams and events do nothing: the figures it yields mean nothing and are not looked at."""

    class Stream:
        def wait_stream(self, other):
            pass

    class Event:
        def record(self, stream=None):
            pass

        def synchronize(self):
            pass

    class _Nothing:
        def __init__(self, *args):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    stream = device = _Nothing

    def __init__(self, count=1):
        self.count = count

    def synchronize(self, device=None):
        pass

    def current_stream(self):
        return self.Stream()

    def device_count(self):
        return self.count

    def get_device_name(self, index=0):
        return "Fake GPU"

    def get_allocator_backend(self):
        return "fake"

    def _sleep(self, cycles):
        pass


class FakeTorchOnCpu:
    """torch, with torch.cuda replaced by FakeCuda and pin_memory dropped (there is no CUDA here)."""

    def __init__(self):
        self.cuda = FakeCuda()

    def __getattr__(self, name):
        return getattr(torch, name)

    def empty(self, *args, pin_memory=False, **kwargs):
        return torch.empty(*args, **kwargs)


def test_the_device_tier_script_runs_every_measurement_with_a_fake_cuda(monkeypatch):
    monkeypatch.setattr(device_tier, "GET_CALLS", 20)
    monkeypatch.setattr(device_tier, "STREAM_TRIALS", 2)
    out = device_tier.measure(FakeTorchOnCpu(), reps=2, device=torch.device("cpu"))
    failed = {k: v for k, v in out.items() if isinstance(v, dict) and "error" in v}
    assert not failed, failed
    assert len(out["put_reference"]["put_s"]) == 2 and len(out["async_copy"]["done_s"]) == 2
    assert out["streams"]["trials"] == 2 and "no second device" in out["two_devices"]["not_measured"]
    assert set(out["in_place_write"]) == {"node_path", "defensive_clone", "no_host_copy"}
    assert out["interface"]["get_stream"] in (True, False)
    json.dumps(out)
