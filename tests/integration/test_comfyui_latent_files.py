"""Spill files are ComfyUI .latent files: ComfyUI's own LoadLatent reads ours
bit-identically, and the engine and `zc` read what ComfyUI's SaveLatent wrote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import torch

from zc_pack.zc_engine import LatentStore, digest_tensor

REPO = Path(__file__).resolve().parents[2]
ZC = REPO / "build" / "zc"


def spill_one(spill_dir: Path, latent: torch.Tensor) -> Path:
    with LatentStore(spill_dir=spill_dir) as store:
        store.put("shot", {"latent_tensor": latent}, {"family": "wan21"}, spill=True)
        store.flush()
    return spill_dir / "shot@00000000000000000001.latent"


def test_loadlatent_node_reads_our_spill_file_bit_identically(comfyui, tmp_path):
    latent = torch.randn(1, 16, 5, 12, 20)
    path = spill_one(tmp_path / "spill", latent)
    (comfyui.input_dir / "ours.latent").write_bytes(path.read_bytes())
    (samples,) = comfyui.nodes.LoadLatent().load("ours.latent")
    assert torch.equal(samples["samples"], latent)  # multiplier 1.0: the version marker is there
    assert digest_tensor(samples["samples"]) == digest_tensor(latent)


def test_real_graph_load_then_save_is_identical_and_zc_reads_comfyui_files(comfyui, tmp_path):
    latent = torch.randn(1, 16, 3, 8, 8)
    path = spill_one(tmp_path / "spill", latent)
    (comfyui.input_dir / "graph_in.latent").write_bytes(path.read_bytes())
    prompt = {
        "1": {"class_type": "LoadLatent", "inputs": {"latent": "graph_in.latent"}},
        "2": {"class_type": "SaveLatent", "inputs": {"samples": ["1", 0],
                                                     "filename_prefix": "latents/zc_roundtrip"}},
    }
    comfyui.run(prompt)
    saved = sorted((comfyui.output_dir / "latents").glob("zc_roundtrip_*.latent"))
    assert saved, "SaveLatent wrote no file"
    comfy_file = saved[-1]
    diff = subprocess.run([str(ZC), "diff", str(path), str(comfy_file)], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    assert "identical" in diff.stdout
    verify = subprocess.run([str(ZC), "verify", str(comfy_file)], capture_output=True, text=True)
    assert verify.returncode == 1 and "no digest" in (verify.stdout + verify.stderr).lower()
    allowed = subprocess.run([str(ZC), "verify", "--allow-missing", str(comfy_file)],
                             capture_output=True, text=True)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
