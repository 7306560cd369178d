"""Tests of the zc command-line tool (engine/cli/).

Inputs are written with the reference `safetensors` package and torch, the
way ComfyUI and the store write them; expected values (digests, MSE, PSNR,
decoded elements) are computed independently in Python.  The binary is
ZC_BIN, default <repo>/build/zc (built by `make build/zc`).
"""
import json
import math
import os
import re
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
xxhash = pytest.importorskip("xxhash")
st_torch = pytest.importorskip("safetensors.torch")
np = pytest.importorskip("numpy")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ZC = Path(os.environ.get("ZC_BIN", REPO / "build" / "zc"))

pytestmark = pytest.mark.skipif(
    not (ZC.is_file() and os.access(ZC, os.X_OK)),
    reason=f"zc binary not found at {ZC}: run 'make build/zc' or set ZC_BIN",
)

FORMAT = "zerocopy-continuity/1"
MARKER = "latent_format_version_0"
COMMANDS = ["ls", "inspect", "verify", "diff", "dump", "film"]

DTYPES = {
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F64": torch.float64,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
    "I8": torch.int8,
    "I16": torch.int16,
    "I32": torch.int32,
    "I64": torch.int64,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
FLOAT_NAMES = ["F32", "F16", "BF16", "F64", "F8_E4M3", "F8_E5M2"]

DIFF_RE = re.compile(
    r"^tensor (?P<name>\S+): differs mse=(?P<mse>\S+) max_abs=(?P<max_abs>\S+) "
    r"psnr=(?P<psnr>\S+) dB peak=(?P<peak>\S+) elements=(?P<elements>\d+) "
    r"differing=(?P<differing>\d+) nan=(?P<nan>\d+)$"
)


# ---------------------------------------------------------------- helpers


def run(*args, expect=None):
    """Run zc; never accept a crash (a signal) whatever the exit status."""
    proc = subprocess.run(
        [str(ZC), *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode >= 0, f"zc died of signal {-proc.returncode}: {proc.stderr}"
    assert "AddressSanitizer" not in proc.stderr and "runtime error" not in proc.stderr
    if expect is not None:
        assert proc.returncode == expect, (
            f"zc {' '.join(map(str, args))} exited {proc.returncode}, expected {expect}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def canonical_bytes(t):
    return t.contiguous().flatten().view(torch.uint8).numpy().tobytes()


def digest(t):
    return "xxh3:" + xxhash.xxh3_64(canonical_bytes(t), seed=0).hexdigest()


def legacy_digest(t):
    """The digest engine 0.2 recorded: XXH64."""
    return "xxh64:" + xxhash.xxh64(canonical_bytes(t), seed=0).hexdigest()


def save_zc(path, tensors, tag="shot_a", generation=1, extra=None, skip_digest=(),
            digest_of=digest):
    """A file the way the store wrote it before record digests: our digests and zc.* metadata,
    no zc.record ("record not covered"; with digest_of=legacy_digest, the way engine 0.2 wrote
    it). tests/python/test_record_digest.py has files with a record digest."""
    meta = {"zc.format": FORMAT, "zc.tag": tag, "zc.generation": str(generation)}
    for name, t in tensors.items():
        if name not in skip_digest and name != MARKER:
            meta["zc.digest." + name] = digest_of(t)
    meta.update(extra or {})
    st_torch.save_file(tensors, str(path), metadata=meta)
    return path


def save_comfy_latent(path, latent, prompt='{"3": {"class_type": "KSampler"}}', workflow="{}"):
    """Exactly what ComfyUI's SaveLatent writes."""
    st_torch.save_file(
        {"latent_tensor": latent, MARKER: torch.tensor([])},
        str(path),
        metadata={"prompt": prompt, "workflow": workflow},
    )
    return path


def header_of(path):
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    return n, json.loads(data[8 : 8 + n])


def tensor_span(path, name):
    """(absolute begin, absolute end) of a tensor's bytes in the file."""
    n, header = header_of(path)
    begin, end = header[name]["data_offsets"]
    return 8 + n + begin, 8 + n + end


def flip_byte(path, offset, mask=0x01):
    data = bytearray(Path(path).read_bytes())
    data[offset] ^= mask
    Path(path).write_bytes(bytes(data))


def make_tensor(dtype_name, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    dtype = DTYPES[dtype_name]
    if dtype_name == "BOOL":
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype_name == "U8":
        return torch.randint(0, 256, shape, generator=g).to(dtype)
    if dtype_name in ("I8", "I16", "I32", "I64"):
        return torch.randint(-100, 100, shape, generator=g).to(dtype)
    return (torch.randn(shape, generator=g) * 3).to(dtype)


def perturb(t, dtype_name, seed=1):
    g = torch.Generator().manual_seed(seed)
    flat = t.clone().flatten()
    if dtype_name == "BOOL":
        flat[0] = ~flat[0]
    elif dtype_name in FLOAT_NAMES:
        noise = torch.randn(flat.shape, generator=g).to(torch.float64) * 0.25
        flat = (flat.to(torch.float64) + noise).to(t.dtype)
        if torch.equal(flat.view(-1), t.flatten()):  # rounding swallowed the noise
            flat[0] = (flat[0].to(torch.float64) + 1).to(t.dtype)
    else:
        flat[0] = flat[0] + 1
        flat[-1] = flat[-1] - 3
    return flat.reshape(t.shape)


def expected_stats(a, b):
    """MSE, max-abs, peak and PSNR with the rules of 'zc help diff'."""
    ab = a.contiguous().flatten().view(torch.uint8).reshape(a.numel(), -1)
    bb = b.contiguous().flatten().view(torch.uint8).reshape(b.numel(), -1)
    same_bits = (ab == bb).all(dim=1)
    ad, bd = a.flatten().to(torch.float64), b.flatten().to(torch.float64)
    nan = (~same_bits) & (ad.isnan() | bd.isnan())
    keep = ~nan
    err = torch.where(same_bits | (ad == bd), torch.zeros_like(ad), (ad - bd).abs())[keep]
    mse = float((err * err).mean()) if err.numel() else float("nan")
    max_abs = float(err.max()) if err.numel() else 0.0
    finite = ad[ad.isfinite()]
    peak = float(finite.abs().max()) if finite.numel() else 0.0
    if mse == 0:
        psnr = math.inf
    elif peak == 0 or math.isinf(mse):
        psnr = -math.inf
    else:
        psnr = 10 * math.log10(peak * peak / mse)
    return {
        "mse": mse,
        "max_abs": max_abs,
        "peak": peak,
        "psnr": psnr,
        "differing": int((~same_bits).sum()),
        "nan": int(nan.sum()),
    }


def parse_diff_lines(stdout):
    return {m["name"]: m for m in map(DIFF_RE.match, stdout.splitlines()) if m}


def assert_close(got, want, rel=1e-6, abs_=1e-12):
    got = float(got)
    if math.isnan(want):
        assert math.isnan(got)
    elif math.isinf(want):
        assert got == want
    else:
        assert got == pytest.approx(want, rel=rel, abs=abs_)


@pytest.fixture
def latent():
    return torch.randn(1, 4, 16, 16, generator=torch.Generator().manual_seed(7))


@pytest.fixture
def good(tmp_path, latent):
    return save_zc(
        tmp_path / "shot_a-000003.latent",
        {"latent_tensor": latent, "noise": latent * 0.5},
        tag="shot_a",
        generation=3,
    )


# ---------------------------------------------------------------- help


def test_help_lists_every_command_and_exit_status():
    out = run("--help", expect=0).stdout
    for cmd in COMMANDS:
        assert re.search(rf"^\s+{cmd}\b", out, re.M), cmd
    assert "exit status" in out and "--version" in out
    assert run("-h", expect=0).stdout == out
    assert run("help", expect=0).stdout == out


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help_of_each_command(cmd):
    text = run("help", cmd, expect=0).stdout
    assert text.startswith(f"usage: zc {cmd}")
    assert "exit status" in text and "-h, --help" in text
    assert run(cmd, "--help", expect=0).stdout == text
    assert run(cmd, "-h", expect=0).stdout == text


def test_help_documents_options():
    assert "--json" in run("help", "inspect").stdout
    assert "--full" in run("help", "inspect").stdout
    assert "--allow-missing" in run("help", "verify").stdout
    diff = run("help", "diff").stdout
    assert "PSNR" in diff.upper() and "NaN" in diff and "peak" in diff


def test_version():
    out = run("--version", expect=0).stdout
    assert re.fullmatch(r"zc \d+\.\d+\.\d+\S*\n", out)


@pytest.mark.parametrize(
    "args",
    [[], ["frobnicate"], ["--frobnicate"], ["help", "frobnicate"], ["verify"],
     ["verify", "--bogus", "x"], ["diff", "a"], ["diff", "a", "b", "c"], ["inspect"],
     ["ls"], ["ls", "a", "b"], ["dump", "a"], ["film"], ["film", "a"], ["film", "--bogus", "a", "b"]],
)
def test_usage_errors_exit_2(args):
    proc = run(*args, expect=2)
    assert proc.stderr.startswith("zc") and proc.stdout == ""


# ---------------------------------------------------------------- ls


def test_ls_lists_files_with_tag_generation_and_digest_status(tmp_path, latent):
    save_zc(tmp_path / "shot_a-000003.latent", {"latent_tensor": latent}, "shot_a", 3)
    save_comfy_latent(tmp_path / "ComfyUI_00001_.latent", latent)
    st_torch.save_file({"w": torch.ones(3, 3)}, str(tmp_path / "model.safetensors"))
    save_zc(tmp_path / "old-000001.latent.rejected", {"x": latent}, "old", 1)
    save_zc(tmp_path / "partial.safetensors", {"a": latent, "b": latent.clone()},
            skip_digest=("b",))
    (tmp_path / "broken.latent").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{")
    (tmp_path / "notes.txt").write_text("not listed")
    (tmp_path / "sub").mkdir()
    save_zc(tmp_path / "sub" / "deep.latent", {"x": latent})

    proc = run("ls", tmp_path, expect=0)
    lines = proc.stdout.splitlines()
    names = [line.split("  ")[0] for line in lines]
    assert names == sorted(names) == [
        "ComfyUI_00001_.latent",
        "broken.latent",
        "model.safetensors",
        "old-000001.latent.rejected",
        "partial.safetensors",
        "shot_a-000003.latent",
    ]
    by_name = dict(zip(names, lines))
    ours = by_name["shot_a-000003.latent"]
    size = (tmp_path / "shot_a-000003.latent").stat().st_size
    assert ours == (
        f"shot_a-000003.latent  latent  tag=shot_a  generation=3  tensors=1  "
        f"bytes={latent.numel() * 4}  size={size}  digests recorded (xxh3)"
    )
    comfy = by_name["ComfyUI_00001_.latent"]
    assert "  latent  tag=-  generation=-  tensors=2  " in comfy
    assert comfy.endswith("no digests")
    assert "  safetensors  " in by_name["model.safetensors"]
    assert by_name["model.safetensors"].endswith("no digests")
    assert "  rejected  tag=old  generation=1  " in by_name["old-000001.latent.rejected"]
    assert by_name["partial.safetensors"].endswith("digests partial (1 of 2, xxh3)")
    assert re.match(r"broken\.latent  latent  error: .*\S", by_name["broken.latent"])


def test_ls_empty_and_missing_directory(tmp_path):
    assert run("ls", tmp_path, expect=0).stdout == ""
    proc = run("ls", tmp_path / "nope", expect=2)
    assert proc.stderr.startswith("zc: ") and "nope" in proc.stderr


# ---------------------------------------------------------------- inspect


def test_inspect_text(good, latent):
    proc = run("inspect", good, expect=0)
    lines = proc.stdout.splitlines()
    assert lines[0] == f"file: {good} ({good.stat().st_size} bytes)"
    for name, t in {"latent_tensor": latent, "noise": latent * 0.5}.items():
        begin, end = tensor_span(good, name)
        d = digest(t)
        assert (
            f"tensor {name} dtype=F32 shape=[1,4,16,16] bytes={end - begin} offset={begin} "
            f"recorded={d} computed={d} match"
        ) in lines
    assert "meta zc.tag = shot_a" in lines
    assert "meta zc.generation = 3" in lines
    assert f"meta zc.format = {FORMAT}" in lines
    assert "metadata: 5" in lines
    assert lines[-1] == "summary: 2 match, 0 MISMATCH, 0 none recorded, 0 unreadable"


def test_inspect_json_matches_file(good, latent):
    doc = json.loads(run("inspect", "--json", good, expect=0).stdout)
    assert doc["file"] == str(good) and doc["ok"] is True
    assert doc["file_bytes"] == good.stat().st_size
    tensors = {t["name"]: t for t in doc["tensors"]}
    assert set(tensors) == {"latent_tensor", "noise"}
    for name, t in {"latent_tensor": latent, "noise": latent * 0.5}.items():
        begin, end = tensor_span(good, name)
        assert tensors[name] == {
            "name": name,
            "dtype": "F32",
            "shape": [1, 4, 16, 16],
            "bytes": end - begin,
            "offset": begin,
            "recorded_digest": digest(t),
            "computed_digest": digest(t),
            "status": "match",
        }
    assert doc["metadata"]["zc.tag"] == "shot_a"
    assert doc["metadata"]["zc.digest.noise"] == digest(latent * 0.5)


def test_inspect_comfy_latent_has_no_digest_and_full_metadata(tmp_path, latent):
    prompt = json.dumps({"3": {"inputs": {"text": 'a "cat"\n\\ ' * 40}}})
    workflow = json.dumps({"nodes": list(range(200))})
    path = save_comfy_latent(tmp_path / "ComfyUI_00001_.latent", latent, prompt, workflow)
    doc = json.loads(run("inspect", "--json", path, expect=0).stdout)
    assert doc["metadata"] == {"prompt": prompt, "workflow": workflow}
    by_name = {t["name"]: t for t in doc["tensors"]}
    assert by_name[MARKER]["shape"] == [0] and by_name[MARKER]["bytes"] == 0
    assert by_name["latent_tensor"]["status"] == "none recorded"
    assert by_name["latent_tensor"]["recorded_digest"] is None
    assert by_name["latent_tensor"]["computed_digest"] == digest(latent)

    text = run("inspect", path, expect=0).stdout
    assert f"({len(prompt.encode())} bytes, see --full)" in text
    assert "none recorded" in text
    full = run("inspect", "--full", path, expect=0).stdout
    assert "see --full" not in full
    escaped = prompt.replace("\\", "\\\\").replace("\n", "\\x0a")
    assert f"meta prompt = {escaped}" in full.splitlines()


def test_inspect_json_escapes_hostile_strings(tmp_path):
    meta = {
        "quote\"key": 'value with "quotes" and \\ backslash',
        "ctl": "tab\tnewline\nbell\x07nul-free\x1f del\x7f",
        "unicode": "été — 猫 🐈",
    }
    path = tmp_path / "weird.safetensors"
    name = 'we"ird\\name\t'
    st_torch.save_file({name: torch.arange(3, dtype=torch.int32)}, str(path), metadata=meta)
    out = run("inspect", "--json", path, expect=0).stdout
    doc = json.loads(out)
    assert doc["metadata"] == meta
    assert doc["tensors"][0]["name"] == name
    text = run("inspect", path, expect=0).stdout
    assert "\t" not in text and "\x07" not in text and "\x7f" not in text
    assert "tensor we\"ird\\\\name\\x09 dtype=I32" in text


def test_inspect_tampered_reports_mismatch(good, latent):
    begin, end = tensor_span(good, "noise")
    flip_byte(good, begin + 5)
    tampered = bytearray(canonical_bytes(latent * 0.5))
    tampered[5] ^= 1
    computed = "xxh3:" + xxhash.xxh3_64(bytes(tampered)).hexdigest()

    proc = run("inspect", good, expect=1)
    assert re.search(
        rf"^tensor noise .* recorded={digest(latent * 0.5)} computed={computed} MISMATCH$",
        proc.stdout, re.M,
    )
    assert re.search(r"^tensor latent_tensor .* match$", proc.stdout, re.M)
    assert "summary: 1 match, 1 MISMATCH" in proc.stdout

    doc = json.loads(run("inspect", "--json", good, expect=1).stdout)
    noise = next(t for t in doc["tensors"] if t["name"] == "noise")
    assert noise["status"] == "MISMATCH" and noise["computed_digest"] == computed
    assert doc["ok"] is False


def test_inspect_unopenable(tmp_path):
    proc = run("inspect", tmp_path / "missing.latent", expect=1)
    assert proc.stderr.startswith("zc: ") and "missing.latent" in proc.stderr
    doc = json.loads(run("inspect", "--json", tmp_path / "missing.latent", expect=1).stdout)
    assert doc["ok"] is False and "missing.latent" in doc["error"]


@pytest.mark.parametrize("name", list(DTYPES))
def test_inspect_every_dtype(tmp_path, name):
    t = make_tensor(name, (3, 5))
    scalar = make_tensor(name, ())
    path = save_zc(tmp_path / f"{name}.latent", {"t": t, "s": scalar})
    doc = json.loads(run("inspect", "--json", path, expect=0).stdout)
    by_name = {x["name"]: x for x in doc["tensors"]}
    assert by_name["t"]["dtype"] == name and by_name["t"]["shape"] == [3, 5]
    assert by_name["t"]["bytes"] == t.numel() * t.element_size()
    assert by_name["t"]["computed_digest"] == digest(t)
    assert by_name["s"]["shape"] == [] and by_name["s"]["computed_digest"] == digest(scalar)
    assert all(x["status"] == "match" for x in doc["tensors"])


# ---------------------------------------------------------------- verify


def test_verify_good_files(tmp_path, good, latent):
    other = save_zc(tmp_path / "shot_b-000001.latent", {"latent_tensor": latent}, "shot_b", 1)
    proc = run("verify", good, other, expect=0)
    assert proc.stdout.splitlines() == [
        f"OK {good} (2 tensors, all digests match; record not covered)",
        f"OK {other} (1 tensor, all digests match; record not covered)",
    ]


def test_verify_store_file_with_marker(tmp_path, latent):
    # The store writes ComfyUI's empty marker beside latent_tensor, without digest.
    path = save_zc(tmp_path / "s.latent", {"latent_tensor": latent, MARKER: torch.tensor([])})
    assert run("verify", path, expect=0).stdout == f"OK {path} (1 tensor, all digests match; record not covered)\n"


def test_verify_tampered_names_the_tensor(good, latent):
    begin, end = tensor_span(good, "latent_tensor")
    flip_byte(good, begin + (end - begin) // 2, 0x80)
    proc = run("verify", good, expect=1)
    line = proc.stdout.strip()
    assert line.startswith(f"FAIL {good}: tensor latent_tensor digest mismatch (recorded ")
    assert digest(latent) in line and "noise" not in line
    # --allow-missing never excuses a mismatch
    run("verify", "--allow-missing", good, expect=1)


def test_verify_comfy_latent_has_no_digest(tmp_path, latent):
    path = save_comfy_latent(tmp_path / "ComfyUI_00001_.latent", latent)
    proc = run("verify", path, expect=1)
    assert proc.stdout.startswith(f"NO-DIGEST {path}: no digest recorded for tensor latent_tensor")
    proc = run("verify", "--allow-missing", path, expect=0)
    assert proc.stdout.startswith(f"OK {path} (1 tensor: 0 digests match, 1 without digest")
    # option position does not matter
    run("verify", path, "--allow-missing", expect=0)


def test_verify_partial_digests(tmp_path, latent):
    path = save_zc(tmp_path / "p.latent", {"a": latent, "b": latent + 1}, skip_digest=("b",))
    proc = run("verify", path, expect=1)
    assert proc.stdout == f"NO-DIGEST {path}: no digest recorded for tensor b " \
                          "(use --allow-missing to accept files without digests)\n"
    proc = run("verify", "--allow-missing", path, expect=0)
    assert "1 digest match, 1 without digest allowed" in proc.stdout


def test_verify_mixed_batch_reports_every_file(tmp_path, good, latent):
    comfy = save_comfy_latent(tmp_path / "c.latent", latent)
    missing = tmp_path / "missing.latent"
    proc = run("verify", good, comfy, missing, expect=1)
    lines = proc.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"OK {good}")
    assert lines[1].startswith(f"NO-DIGEST {comfy}")
    assert lines[2].startswith(f"FAIL {missing}: cannot open: ")
    assert proc.stderr.startswith("zc: ") and "missing.latent" in proc.stderr


def test_legacy_xxh64_files_are_shown_and_checked_like_new_ones(tmp_path, latent):
    old = save_zc(tmp_path / "old-000001.latent", {"latent_tensor": latent, "noise": latent * 0.5},
                  "old", 1, digest_of=legacy_digest)
    new = save_zc(tmp_path / "new-000002.latent", {"latent_tensor": latent, "noise": latent * 0.5},
                  "new", 2)
    mixed = tmp_path / "mixed-000003.latent"  # one digest of each kind
    st_torch.save_file({"a": latent, "b": latent + 1}, str(mixed),
                       metadata={"zc.format": FORMAT, "zc.digest.a": digest(latent),
                                 "zc.digest.b": legacy_digest(latent + 1)})
    assert run("verify", old, new, mixed, expect=0).stdout.splitlines() == [
        f"OK {old} (2 tensors, all digests match; record not covered)",
        f"OK {new} (2 tensors, all digests match; record not covered)",
        f"OK {mixed} (2 tensors, all digests match; record not covered)",
    ]
    lines = dict(line.split("  ", 1) for line in run("ls", tmp_path, expect=0).stdout.splitlines())
    assert lines["old-000001.latent"].endswith("digests recorded (xxh64)")
    assert lines["new-000002.latent"].endswith("digests recorded (xxh3)")
    assert lines["mixed-000003.latent"].endswith("digests recorded (xxh3+xxh64)")
    text = run("inspect", old, expect=0).stdout
    d = legacy_digest(latent)
    assert f"recorded={d} computed={d} match" in text
    doc = json.loads(run("inspect", "--json", old, expect=0).stdout)
    noise = {t["name"]: t for t in doc["tensors"]}["noise"]
    assert noise["recorded_digest"] == noise["computed_digest"] == legacy_digest(latent * 0.5)
    # the same tensors under either algorithm are the same bytes
    run("diff", old, new, expect=0)
    # a flipped bit in an old file is found with XXH64
    begin, end = tensor_span(old, "noise")
    flip_byte(old, begin + 3)
    tampered = bytearray(canonical_bytes(latent * 0.5))
    tampered[3] ^= 1
    line = run("verify", old, expect=1).stdout.strip()
    assert line == (f"FAIL {old}: tensor noise digest mismatch (recorded {legacy_digest(latent * 0.5)}, "
                    f"computed xxh64:{xxhash.xxh64(bytes(tampered)).hexdigest()})")


def test_verify_dash_dash_and_dash_names(tmp_path, latent, monkeypatch):
    save_zc(tmp_path / "-odd.latent", {"x": latent})
    monkeypatch.chdir(tmp_path)
    run("verify", "--", "-odd.latent", expect=0)
    run("verify", "-odd.latent", expect=2)  # looks like an option


# ---------------------------------------------------------------- truncated and corrupt


def truncation_points(size, data_begin):
    return sorted({0, 1, 7, 8, 9, 20, data_begin - 1, data_begin, data_begin + 1, size - 1})


def test_truncated_files_are_clear_errors(tmp_path, good):
    data = good.read_bytes()
    n, _ = header_of(good)
    for cut in truncation_points(len(data), 8 + n):
        path = tmp_path / f"cut{cut}.latent"
        path.write_bytes(data[:cut])
        proc = run("verify", path, expect=1)
        assert proc.stdout.startswith(f"FAIL {path}: cannot open: "), proc.stdout
        assert len(proc.stdout.split("cannot open: ", 1)[1].strip()) > 10
        proc = run("inspect", path, expect=1)
        assert proc.stderr.startswith("zc: ")
        run("inspect", "--json", path, expect=1)
        run("diff", good, path, expect=2)
        run("dump", path, "latent_tensor", expect=1)
    proc = run("ls", tmp_path, expect=0)
    assert proc.stdout.count("error: ") == len(truncation_points(len(data), 8 + n))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_corruption_never_crashes(data):
    latent = torch.randn(2, 3, 4)
    with tempfile.TemporaryDirectory() as d:
        path = save_zc(Path(d) / "f.latent", {"latent_tensor": latent, "b": latent.half()})
        raw = bytearray(path.read_bytes())
        for _ in range(data.draw(st.integers(1, 4))):
            at = data.draw(st.integers(0, len(raw) - 1))
            raw[at] = data.draw(st.integers(0, 255))
        if data.draw(st.booleans()):
            raw = raw[: data.draw(st.integers(0, len(raw)))]
        path.write_bytes(bytes(raw))
        for args in (["verify", path], ["inspect", path], ["inspect", "--json", path],
                     ["ls", d], ["dump", path, "b"]):
            proc = run(*args)
            assert proc.returncode in (0, 1), (args, proc.stderr)
        proc = run("inspect", "--json", path)
        json.loads(proc.stdout)  # always valid JSON
        assert run("diff", path, path).returncode in (0, 2)


def test_any_data_byte_flip_fails_verify(tmp_path, good):
    begin = min(tensor_span(good, "latent_tensor")[0], tensor_span(good, "noise")[0])
    end = max(tensor_span(good, "latent_tensor")[1], tensor_span(good, "noise")[1])
    original = good.read_bytes()
    for offset in range(begin, end, 97):
        good.write_bytes(original)
        flip_byte(good, offset)
        assert run("verify", good, expect=1).stdout.startswith(f"FAIL {good}: tensor ")


# ---------------------------------------------------------------- diff


def test_diff_identical_files(tmp_path, good, latent):
    copy = tmp_path / "copy.latent"
    copy.write_bytes(good.read_bytes())
    proc = run("diff", good, copy, expect=0)
    assert proc.stdout.splitlines() == [
        "tensor latent_tensor: identical (bit-for-bit)",
        "tensor noise: identical (bit-for-bit)",
        "summary: 2 tensors, 2 identical, 0 different, 0 unreadable",
    ]
    # same tensors, different metadata and tensor order: still identical
    other = save_zc(tmp_path / "o.latent", {"noise": latent * 0.5, "latent_tensor": latent},
                    tag="elsewhere", generation=9)
    run("diff", good, other, expect=0)


def test_diff_comfy_marker_ignored_only_when_both_hold_it(tmp_path, latent):
    a = save_comfy_latent(tmp_path / "a.latent", latent)
    b = save_comfy_latent(tmp_path / "b.latent", latent, prompt="other")
    proc = run("diff", a, b, expect=0)
    assert MARKER not in proc.stdout
    assert "tensor latent_tensor: identical (bit-for-bit)" in proc.stdout
    plain = tmp_path / "plain.safetensors"
    st_torch.save_file({"latent_tensor": latent}, str(plain))
    proc = run("diff", a, plain, expect=1)
    assert f"tensor {MARKER}: only in A" in proc.stdout
    proc = run("diff", plain, a, expect=1)
    assert f"tensor {MARKER}: only in B" in proc.stdout


def test_diff_perturbed_reports_mse_and_psnr(tmp_path, latent):
    noisy = latent + 0.01 * torch.randn(latent.shape, generator=torch.Generator().manual_seed(3))
    a = save_zc(tmp_path / "a.latent", {"latent_tensor": latent})
    b = save_zc(tmp_path / "b.latent", {"latent_tensor": noisy})
    proc = run("diff", a, b, expect=1)
    m = parse_diff_lines(proc.stdout)["latent_tensor"]
    want = expected_stats(latent, noisy)
    ad, bd = latent.double(), noisy.double()
    mse = float(((ad - bd) ** 2).mean())
    peak = float(ad.abs().max())
    assert_close(m["mse"], mse)
    assert_close(m["max_abs"], float((ad - bd).abs().max()))
    assert_close(m["peak"], peak)
    assert float(m["psnr"]) == pytest.approx(10 * math.log10(peak**2 / mse), abs=1e-3)
    assert int(m["elements"]) == latent.numel() and int(m["differing"]) == want["differing"]
    assert "summary: 1 tensor, 0 identical, 1 different, 0 unreadable" in proc.stdout


def test_diff_layout_mismatches_and_missing_names(tmp_path):
    a = tmp_path / "a.safetensors"
    b = tmp_path / "b.safetensors"
    st_torch.save_file({"x": torch.zeros(2, 3), "y": torch.zeros(4), "only_a": torch.ones(1)},
                       str(a))
    st_torch.save_file({"x": torch.zeros(3, 2), "y": torch.zeros(4, dtype=torch.float16),
                        "only_b": torch.ones(1)}, str(b))
    proc = run("diff", a, b, expect=1)
    lines = set(proc.stdout.splitlines())
    assert "tensor x: shape mismatch (A [2,3], B [3,2])" in lines
    assert "tensor y: dtype mismatch (A F32, B F16)" in lines
    assert "tensor only_a: only in A" in lines
    assert "tensor only_b: only in B" in lines
    assert "summary: 4 tensors, 0 identical, 4 different, 0 unreadable" in lines


def test_diff_nan_rules(tmp_path):
    nan_a = torch.tensor([float("nan"), 1.0, 2.0, float("nan"), -0.0, float("inf")])
    same = nan_a.clone()
    a = tmp_path / "a.safetensors"
    b = tmp_path / "b.safetensors"
    st_torch.save_file({"t": nan_a}, str(a))
    st_torch.save_file({"t": same}, str(b))
    assert "identical (bit-for-bit)" in run("diff", a, b, expect=0).stdout  # NaN == NaN bitwise

    other = torch.tensor([5.0, 1.0, 2.5, float("nan"), 0.0, float("inf")])
    # different NaN payload at index 3 (still NaN vs NaN, bits differ): counted
    other_bits = other.view(torch.int32).clone()
    other_bits[3] = 0x7FC00123
    other = other_bits.view(torch.float32)
    st_torch.save_file({"t": other}, str(b))
    m = parse_diff_lines(run("diff", a, b, expect=1).stdout)["t"]
    want = expected_stats(nan_a, other)
    assert int(m["nan"]) == want["nan"] == 2
    assert int(m["differing"]) == want["differing"] == 4  # 0, 2, 3 and -0.0 vs +0.0
    assert_close(m["mse"], 0.25 / 4)  # only index 2 errs (0.5); 4 elements not NaN-counted
    assert_close(m["max_abs"], 0.5)
    assert_close(m["peak"], 2.0)  # inf is not finite, NaN is skipped


def test_diff_zero_error_but_different_bits(tmp_path):
    a = tmp_path / "a.safetensors"
    b = tmp_path / "b.safetensors"
    st_torch.save_file({"t": torch.tensor([0.0, 1.0])}, str(a))
    st_torch.save_file({"t": torch.tensor([-0.0, 1.0])}, str(b))
    m = parse_diff_lines(run("diff", a, b, expect=1).stdout)["t"]
    assert float(m["mse"]) == 0 and m["psnr"] == "inf" and m["differing"] == "1"


def test_diff_zero_peak(tmp_path):
    a = tmp_path / "a.safetensors"
    b = tmp_path / "b.safetensors"
    st_torch.save_file({"t": torch.zeros(4)}, str(a))
    st_torch.save_file({"t": torch.tensor([0.0, 0.0, 1.0, 0.0])}, str(b))
    m = parse_diff_lines(run("diff", a, b, expect=1).stdout)["t"]
    assert m["psnr"] == "-inf" and float(m["peak"]) == 0 and float(m["mse"]) == 0.25


@pytest.mark.parametrize("name", list(DTYPES))
def test_diff_every_dtype(tmp_path, name):
    t = make_tensor(name, (4, 33), seed=11)
    u = perturb(t, name, seed=12)
    a = tmp_path / "a.safetensors"
    b = tmp_path / "b.safetensors"
    st_torch.save_file({"t": t}, str(a))
    st_torch.save_file({"t": u}, str(b))
    m = parse_diff_lines(run("diff", a, b, expect=1).stdout)["t"]
    want = expected_stats(t, u)
    for key in ("mse", "max_abs", "peak", "psnr"):
        assert_close(m[key], want[key], rel=1e-6 if key != "psnr" else 1e-5)
    assert int(m["differing"]) == want["differing"] and int(m["nan"]) == want["nan"]
    st_torch.save_file({"t": t.clone()}, str(b))
    run("diff", a, b, expect=0)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, width=32), min_size=1, max_size=64),
    st.lists(st.floats(-10, 10, width=32), min_size=64, max_size=64),
    st.sampled_from(["F32", "F16", "BF16", "F64"]),
)
def test_diff_matches_torch_property(values, noise, name):
    dtype = DTYPES[name]
    a = torch.tensor(values, dtype=torch.float64).to(dtype)
    b = (a.to(torch.float64) + torch.tensor(noise[: len(values)], dtype=torch.float64)).to(dtype)
    with tempfile.TemporaryDirectory() as d:
        pa, pb = Path(d) / "a.safetensors", Path(d) / "b.safetensors"
        st_torch.save_file({"t": a}, str(pa))
        st_torch.save_file({"t": b}, str(pb))
        proc = run("diff", pa, pb)
        if canonical_bytes(a) == canonical_bytes(b):
            assert proc.returncode == 0 and "identical (bit-for-bit)" in proc.stdout
            return
        assert proc.returncode == 1
        m = parse_diff_lines(proc.stdout)["t"]
        want = expected_stats(a, b)
        for key in ("mse", "max_abs", "peak"):
            assert_close(m[key], want[key], rel=1e-6, abs_=1e-30)
        if math.isfinite(want["psnr"]):
            assert float(m["psnr"]) == pytest.approx(want["psnr"], abs=1e-3)
        else:
            assert float(m["psnr"]) == want["psnr"]


def test_diff_tampered_file_is_compared_with_warning(tmp_path, good):
    copy = tmp_path / "copy.latent"
    copy.write_bytes(good.read_bytes())
    begin, _ = tensor_span(copy, "noise")
    flip_byte(copy, begin + 3, 0x40)
    proc = run("diff", good, copy, expect=1)
    assert "warning" in proc.stderr and "noise" in proc.stderr
    assert "tensor latent_tensor: identical (bit-for-bit)" in proc.stdout
    assert parse_diff_lines(proc.stdout)["noise"]["differing"] == "1"


def test_diff_unopenable_is_error(tmp_path, good):
    proc = run("diff", good, tmp_path / "missing.latent", expect=2)
    assert proc.stderr.startswith("zc: ")


# ---------------------------------------------------------------- element decoding (dump)


def dump_values(path, name):
    out = run("dump", path, name, expect=0).stdout
    return [float(x) for x in out.split()]


def assert_same_values(got, want):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if math.isnan(w):
            assert math.isnan(g), i
        else:
            assert g == w and math.copysign(1, g) == math.copysign(1, w), (i, g, w)


@pytest.mark.parametrize(
    "name,bits",
    [("F16", 16), ("BF16", 16), ("F8_E4M3", 8), ("F8_E5M2", 8)],
)
def test_every_bit_pattern_decodes_like_torch(tmp_path, name, bits):
    if bits == 16:
        raw = torch.from_numpy(np.arange(1 << 16, dtype=np.uint16).view(np.int16))
    else:
        raw = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    t = raw.view(DTYPES[name])
    path = tmp_path / "all.safetensors"
    st_torch.save_file({"t": t}, str(path))
    assert_same_values(dump_values(path, "t"), t.to(torch.float64).tolist())


@pytest.mark.parametrize("name", ["F32", "F64", "I8", "I16", "I32", "I64", "U8", "BOOL"])
def test_dump_other_dtypes(tmp_path, name):
    t = make_tensor(name, (7, 3), seed=5)
    if name in ("I64", "I32"):
        info = torch.iinfo(DTYPES[name])
        t.view(-1)[0] = info.min
        t.view(-1)[1] = info.max
    path = tmp_path / "x.safetensors"
    st_torch.save_file({"t": t}, str(path))
    out = run("dump", path, "t", expect=0).stdout.split()
    if name in ("F32", "F64"):
        assert_same_values([float(x) for x in out], t.to(torch.float64).flatten().tolist())
    else:
        assert [int(x) for x in out] == [int(v) for v in t.to(torch.int64).flatten().tolist()]


def test_dump_unknown_tensor(tmp_path, good):
    proc = run("dump", good, "nope", expect=1)
    assert proc.stderr.startswith("zc: ") and "nope" in proc.stderr


# ---------------------------------------------------------------- film


def film_shot(folder, gen, parent=None, latent=None, tail=None, tag="film"):
    """A spill file of tag@gen; with parent, a lineage continuing parent's last frame."""
    latent = latent if latent is not None else torch.arange(24, dtype=torch.float32).reshape(1, 2, 3, 2, 2) + gen
    extra = {}
    if parent is not None:
        parent_latent = torch.arange(24, dtype=torch.float32).reshape(1, 2, 3, 2, 2) + parent
        tail = tail or digest(parent_latent[:, :, -1:])
        extra["lineage"] = json.dumps({"version": 1, "parent_tag": tag, "parent_generation": parent,
                                       "tail_frames": 1, "tail_digest": tail, "used_digest": tail,
                                       "adapter": "first_frame", "trim": 4, "prompt": "p"})
    return save_zc(folder / f"{tag}@{gen:020d}.latent", {"latent_tensor": latent}, tag, gen, extra)


def test_film_verified_line_exits_0(tmp_path):
    film_shot(tmp_path, 1)
    film_shot(tmp_path, 2, 1)
    film_shot(tmp_path, 3, 1)
    film_shot(tmp_path, 4, 3)
    out = run("film", tmp_path, "film", expect=0).stdout
    lines = out.splitlines()
    assert lines[0].startswith("gen 1  shot 1  take 1/1  line  root")
    assert lines[1].startswith("gen 3  shot 2  take 2/2  line  parent 1  trim 4  adapter first_frame")
    assert "file ok  hop ok" in lines[1]
    assert any(line.startswith("  gen 2  shot 2  take 1/2  alternative") for line in lines)
    assert lines[-1] == "film film: 3 shots on the line, all hops verified"
    data = json.loads(run("film", "--json", tmp_path, "film", expect=0).stdout)
    assert data["line"] == [1, 3, 4] and data["ok"] and data["verified"]
    assert run("film", "--no-verify", tmp_path, "film", expect=0).stdout.splitlines()[-1].endswith(
        "not verified (--no-verify)")


def test_film_bad_hop_exits_1_naming_it(tmp_path):
    film_shot(tmp_path, 1)
    film_shot(tmp_path, 2, 1, tail="xxh3:0123456789abcdef")
    proc = run("film", tmp_path, "film", expect=1)
    last = proc.stdout.splitlines()[-1]
    assert last.startswith("film film: 2 shots on the line, verification FAILED: shot 2 (generation 2): the hop "
                           "from generation 1: tail digest "
                           "xxh3:0123456789abcdef does not match the parent's last 1 frame xxh3:")
    assert json.loads(run("film", "--json", tmp_path, "film", expect=1).stdout)["ok"] is False
    run("film", "--no-verify", tmp_path, "film", expect=0)


def test_film_broken_lineage_exits_1_and_io_errors_exit_2(tmp_path):
    film_shot(tmp_path, 2, 1)  # generation 1 has no file
    out = run("film", "--no-verify", tmp_path, "film", expect=1).stdout
    # generation 2 has no place on the line; its lost parent was the film's first shot
    assert ("BROKEN: generation 2 (not on the line): it continues generation 1 of tag \"film\", which has no "
            "spill file (pruned or deleted), and no older shot of the film is left: start the film again: store "
            "a new first shot") in out.splitlines()[-1]
    proc = run("film", tmp_path, "nosuch", expect=2)
    assert proc.stderr.startswith("zc: ") and "nosuch" in proc.stderr and proc.stdout == ""
    run("film", tmp_path / "missing", "film", expect=2)
    run("film", tmp_path, "bad/tag", expect=2)
