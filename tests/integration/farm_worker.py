"""One farm worker for test_farm_workers.py: ComfyUI imported in-process (CPU) in its own base
folder (input, output, user, models, spill folder), this pack and the ZCTest* nodes loaded, the
farm configured by the environment (ZEROCOPY_REDIS_URL, ZEROCOPY_WORKER_ID, ZEROCOPY_SPILL_DIR).
Driven shot by shot: one JSON command per stdin line, one JSON answer per command on stdout
after the marker ANSWER (ComfyUI writes its own lines there too).

    python farm_worker.py BASE UNET_FILE VAE_FILE
    {"op": "first", "seed": 3}   a first shot: KSampler -> Store
    {"op": "next", "seed": 11}   Handoff (the tag's newest, wherever it was stored) -> KSampler -> Store
    {"op": "load"}               a Load graph, the same one every time
    {"op": "farm", "url": U}     the farm link's status and listing (after configure(U) when given)
    {"op": "quit"}

Each shot's answer comes once the worker has published it (the next worker may rely on it).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
STANDINS = REPO / "tools" / "standins"
sys.path.insert(0, str(STANDINS))  # tiny_models

from conftest import Comfy, Graph  # noqa: E402
from test_families_support import ksampler  # noqa: E402

ANSWER = "ZC-FARM-ANSWER "
TAG = "farm_film"
WAN = dict(width=64, height=64, length=9)  # [1, 16, 3, 8, 8]


def encode(tensor) -> str:
    return base64.b64encode(tensor.contiguous().numpy().tobytes()).decode()


class Worker:
    def __init__(self, base: Path, unet: Path, vae: Path):
        import tiny_models

        for name in ("input", "output", "user", "temp"):
            (base / name).mkdir(parents=True, exist_ok=True)
        self.comfy = Comfy(Path(os.environ["COMFYUI_PATH"]), base / "input", base / "output")
        self.comfy.folder_paths.set_user_directory(str(base / "user"))
        self.comfy.folder_paths.set_temp_directory(str(base / "temp"))
        for kind, source in (("diffusion_models", unet), ("vae", vae)):
            folder = base / "models" / kind
            tiny_models.register_model_folder(kind, folder)
            shutil.copy(source, folder / source.name)
        self.unet, self.vae = unet.name, vae.name
        self.nodes = self.comfy.load_custom_node(STANDINS / "zc_test_nodes")
        pack = self.comfy.load_custom_node(REPO)
        self.farm_link = sys.modules[f"{pack.__name__}.zc_nodes.farm_link"]
        self.runtime = sys.modules[f"{pack.__name__}.zc_nodes.runtime"]
        self.load_graph = Graph()
        load = self.load_graph.add("ZeroCopyLatentLoad", buffer_tag=TAG, shot="newest", generation=0,
                                   frames=1, frames_from="end")
        self.load_graph.add("ZCTestCaptureLatent", samples=self.load_graph.out(load), label="load")
        self.load_node = load

    def shot(self, seed: int, first: bool) -> dict:
        g = Graph()
        model = g.add("UNETLoader", unet_name=self.unet, weight_dtype="default")
        hand = None
        if first:
            pos = g.add("ZCTestConditioning", seed=1, tokens=8)
            neg = g.add("ZCTestConditioning", seed=2, tokens=8)
            empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **WAN)
            sampled = ksampler(g, model, g.out(empty), g.out(pos), g.out(neg), seed=seed)
        else:  # the same Handoff every time: only its fingerprint can make it run again
            clip = g.add("ZCTestClip", tokens=8)
            vae = g.add("VAELoader", vae_name=self.vae)
            hand = g.add("ZeroCopyLatentHandoff", clip=g.out(clip), vae=g.out(vae), prompt="the next shot",
                         buffer_tag=TAG, continuity_mode="zero_copy_latent_only", blend_ratio=0.0, **WAN)
            g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label=f"handoff{seed}")
            sampled = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=seed)
        store = g.add("ZeroCopyLatentStore", samples=g.out(sampled), buffer_tag=TAG, model=g.out(model))
        run = self.comfy.run(g.prompt)
        stored = self.comfy.output(run, store, 1)  # the continuity token: tag, generation, digest
        kept = self.runtime.store().get(TAG, stored["generation"], verify=True)
        answer = {"generation": stored["generation"], "digest": stored["digest"],
                  "stored_tail": encode(kept.tensors["latent_tensor"][:, :, -1:]),
                  "published": self.farm_link.wait_published(60)}
        if hand is not None:
            handed = self.nodes.CAPTURED[f"handoff{seed}"]["samples"]
            answer.update(handoff_head=encode(handed[:, :, :1]), info=self.comfy.output(run, hand, 3),
                          handoff_ran=hand in run.executed)
        return answer

    def load(self) -> dict:
        run = self.comfy.run(self.load_graph.prompt)
        return {"ran": self.load_node in run.executed, "info": self.comfy.output(run, self.load_node, 1),
                "tail": encode(self.nodes.CAPTURED["load"]["samples"])}


def main() -> None:
    base, unet, vae = (Path(a) for a in sys.argv[1:4])
    worker = Worker(base, unet, vae)
    print(ANSWER + json.dumps({"ready": True, "worker": os.environ["ZEROCOPY_WORKER_ID"]}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if command["op"] == "quit":
                worker.farm_link.close()
                print(ANSWER + json.dumps({"bye": True}), flush=True)
                return
            if command["op"] == "farm":
                link = worker.farm_link
                answer = link.configure(command["url"]) if "url" in command else link.status()
                answer["tags"] = link.listing()
            elif command["op"] == "load":
                answer = worker.load()
            else:
                answer = worker.shot(command["seed"], command["op"] == "first")
        except Exception as exc:  # noqa: BLE001 - the test shows it
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(ANSWER + json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
