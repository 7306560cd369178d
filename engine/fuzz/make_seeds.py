#!/usr/bin/env python3
"""Write the fuzzer's seed corpus: small, valid safetensors files.

Run from the repository root with the project's test venv (it has torch and safetensors):
    .venv/bin/python engine/fuzz/make_seeds.py
The outputs are committed (engine/fuzz/corpus/); rerunning reproduces them
byte for byte.  Every seed is made by the safetensors package itself (or
follows its layout exactly), so the reader is fuzzed from real files.
"""
import json
import os
import struct

import torch
import xxhash
from safetensors.torch import save, save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def ramp(shape, dtype):
    n = 1
    for d in shape:
        n *= d
    t = torch.arange(n, dtype=torch.float64).reshape(shape) / 7.0 - 3.0
    if dtype == torch.bool:
        return (t.to(torch.int64) % 2).to(torch.bool)
    return t.to(dtype)


def digest(t, algo="xxh64"):
    """The text form of a digest: XXH3-64 as the engine writes now, XXH64 as engine 0.2 did."""
    raw = t.contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b""
    if algo == "xxh3":
        return "xxh3:%016x" % xxhash.xxh3_64(raw, seed=0).intdigest()
    return "xxh64:%016x" % xxhash.xxh64(raw, seed=0).intdigest()


def canonical(data):
    """The same file with its metadata keys sorted.  The safetensors package
    keeps metadata in a hash map whose order changes from run to run; sorting
    makes the seeds reproducible byte for byte and changes nothing else."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    if "__metadata__" in header:
        out["__metadata__"] = dict(sorted(header.pop("__metadata__").items()))
    out.update(header)
    text = json.dumps(out, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data[8 + n:]


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def comfy_latent():
    # What ComfyUI's SaveLatent writes: the latent plus the empty F32 marker.
    tensors = {
        "latent_tensor": ramp((1, 4, 8, 8), torch.float32),
        "latent_format_version_0": torch.tensor([]),
    }
    meta = {"prompt": json.dumps({"3": {"class_type": "KSampler", "inputs": {"seed": 5}}})}
    write("comfy_latent.latent", canonical(save(tensors, metadata=meta)))


def engine_spill(algo="xxh64", name="engine_spill.latent"):
    # The layout the engine writes: zc.* keys and one digest per tensor.  The
    # first seed is an engine-0.2 file (XXH64), the second one of now (XXH3).
    tensors = {
        "latent_tensor": ramp((1, 16, 4, 6, 6), torch.bfloat16),
        "latent_format_version_0": torch.tensor([]),
        "noise_mask": ramp((1, 1, 6, 6), torch.float16),
        "batch_index": torch.tensor([0, 1], dtype=torch.int64),
    }
    meta = {"family": "wan21", "zc.format": "zerocopy-continuity/1", "zc.tag": "shot_a",
            "zc.generation": "7"}
    for k, t in tensors.items():
        if k != "latent_format_version_0":
            meta["zc.digest." + k] = digest(t, algo)
    write(name, canonical(save(tensors, metadata=meta)))


def all_dtypes():
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64,
              torch.float8_e4m3fn, torch.float8_e5m2, torch.int8, torch.int16,
              torch.int32, torch.int64, torch.uint8, torch.bool]
    tensors = {}
    for i, dt in enumerate(dtypes):
        tensors["t_%s" % str(dt).split(".")[1]] = ramp((2, i % 3 + 1, 3), dt)
    write("all_dtypes.safetensors", save(tensors))


def ranks():
    tensors = {"rank%d" % r: ramp((2,) * r, torch.float32) for r in range(9)}
    tensors["scalar_i64"] = torch.tensor(42, dtype=torch.int64)
    tensors["zero_size"] = torch.zeros((3, 0, 2), dtype=torch.float16)
    tensors["empty_1d"] = torch.zeros((0,), dtype=torch.uint8)
    write("ranks_and_zero_size.safetensors", save(tensors))


def empty():
    write("empty.safetensors", save({}))
    write("metadata_only.safetensors", canonical(save({}, metadata={"note": "no tensors"})))


def escapes():
    # Escapes the Rust writer never produces: \uXXXX, surrogate pairs, \/ and
    # friends.  Built by hand in the exact safetensors layout.
    t = ramp((2, 3), torch.float32)
    raw = t.numpy().tobytes()
    header = {
        "__metadata__": {
            "quote\"back\\slash": "tab\tnewline\ncr\rbs\bff\f/slash",
            "unicode": "caf\u00e9 \u65e5\u672c \U0001F600 \u0001\u001f",
        },
        "t\u00e9ns\U0001F600r": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, len(raw)]},
    }
    text = json.dumps(header, ensure_ascii=True).replace("/", "\\/").encode()
    text += b" " * (-len(text) % 8)
    write("escapes.safetensors", struct.pack("<Q", len(text)) + text + raw)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    comfy_latent()
    engine_spill()
    engine_spill("xxh3", "engine_spill_xxh3.latent")
    all_dtypes()
    ranks()
    empty()
    escapes()


if __name__ == "__main__":
    main()
