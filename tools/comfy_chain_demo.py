"""The main job through real ComfyUI: a tiny 3-shot film, one queue run per shot.

Runs ComfyUI (COMFYUI_PATH) in-process on the CPU with this pack loaded, a tiny
random-weight Wan 2.1 T2V DiT built on the spot (no download), and stand-ins for
the text encoder and conditioning (UMT5-XXL cannot be built tiny; they come from
the test-only node package tools/standins/zc_test_nodes). Shot 1 is sampled
from an empty latent and stored; shots 2 and 3 each start from the previous
shot's tail through ZeroCopyLatentHandoff, with a VAE that raises if it is ever
called. Prints every certificate and checks, outside the graph, that each
handed-off tail equals the stored one bit for bit.

    COMFYUI_PATH=/path/to/ComfyUI .venv/bin/python tools/comfy_chain_demo.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.comfy_inprocess import ComfyInProcess  # noqa: E402

CANVAS = dict(width=64, height=64, length=9)


def same_bits(a, b) -> bool:
    """Bit-for-bit equality of two float32 tensors (compares the raw 32-bit words)."""
    import torch
    return a.shape == b.shape and torch.equal(a.contiguous().view(torch.int32),
                                              b.contiguous().view(torch.int32))


def shot_graph(unet: str, tag: str, shot: int) -> tuple[dict, str | None, str]:
    """Nodes: model, sampler, store (and, after shot 1, the handoff in front)."""
    p: dict = {}

    def add(class_type, **inputs):
        node = str(len(p) + 1)
        p[node] = {"class_type": class_type, "inputs": inputs}
        return node

    model = add("UNETLoader", unet_name=unet, weight_dtype="default")
    negative = add("ZCTestConditioning", seed=2, tokens=8)
    handoff = None
    if shot == 1:
        positive = add("ZCTestConditioning", seed=1, tokens=8)
        latent = [add("EmptyHunyuanLatentVideo", batch_size=1, **CANVAS), 0]
        positive_link = [positive, 0]
    else:
        clip = add("ZCTestClip", tokens=8)
        vae = add("ZCTestRaisingVAE")
        handoff = add("ZeroCopyLatentHandoff", clip=[clip, 0], vae=[vae, 0],
                      prompt=f"shot {shot}: the camera keeps moving", **CANVAS, buffer_tag=tag,
                      continuity_mode="zero_copy_latent_only", blend_ratio=0.0, model=[model, 0])
        latent, positive_link = [handoff, 1], [handoff, 0]
    sampled = add("KSampler", model=[model, 0], seed=100 + shot, steps=3, cfg=1.0,
                  sampler_name="euler", scheduler="simple", positive=positive_link,
                  negative=[negative, 0], latent_image=latent, denoise=1.0)
    store = add("ZeroCopyLatentStore", samples=[sampled, 0], buffer_tag=tag, model=[model, 0])
    return p, handoff, store


def main() -> int:
    root = os.environ.get("COMFYUI_PATH")
    if not root:
        print("demo: skipped: COMFYUI_PATH not set (point it at a ComfyUI checkout)")
        return 0
    work = Path(tempfile.mkdtemp(prefix="zc-comfy-demo-"))
    os.environ["ZEROCOPY_SPILL_DIR"] = str(work / "spill")
    t0 = time.perf_counter()
    comfy = ComfyInProcess(Path(root), work)
    import tiny_models
    models = work / "diffusion_models"
    tiny_models.register_model_folder("diffusion_models", models)
    unet = tiny_models.build_tiny_wan21_dit(models, "t2v", seed=0).name
    print(f"demo: ComfyUI started and tiny Wan 2.1 T2V DiT built in {time.perf_counter() - t0:.1f} s")

    runtime = comfy.module("zc_nodes.runtime")
    tag, ok = "demo_film", True
    for shot in (1, 2, 3):
        prompt, handoff, store = shot_graph(unet, tag, shot)
        before = runtime.store().get(tag).tensors["latent_tensor"].clone() if shot > 1 else None
        start = time.perf_counter()
        outputs = comfy.run(prompt, [store])
        took = time.perf_counter() - start
        print(f"\n--- shot {shot}: one queue run, {took:.2f} s")
        if handoff is not None:
            info = outputs[handoff].outputs[3][0]
            handed = outputs[handoff].outputs[1][0]["samples"]
            same = same_bits(handed[:, :, :1], before[:, :, -1:])
            ok &= same and "bit-identical: yes" in info
            print(info)
            print(f"checked outside the graph: handed-off tail == stored tail, bit for bit: "
                  f"{'yes' if same else 'NO'}")
        stored = runtime.store().get(tag)
        print(f"stored {tag!r} generation {stored.generation}: "
              f"{list(stored.tensors['latent_tensor'].shape)} {stored.info['latent_tensor'].digest}")
    runtime.store().flush()
    print(f"\nresult: {'3-shot chain continued in latent space, every handoff bit-identical: yes' if ok else 'MISMATCH: see above'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
