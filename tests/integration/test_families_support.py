"""Shared fixtures and graph helpers for the test_families_* modules (no tests here).

The other modules import what they use from this one (``from test_families_support import
...``); pytest then sees the fixtures in their namespace. Every tiny model is built once per
session, only when a test asks for it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pack(comfyui, zc_test_nodes, tmp_path_factory):
    """This pack inside ComfyUI (reusing it if another test module loaded it already).

    After each module the pack's shared store is closed (spills flushed), so the next user
    opens it again in whatever spill directory it sets: test_continuity_nodes.py's restart
    test reads the spill directory it chose, whichever module ran first."""
    module = sys.modules.get(str(REPO).replace(".", "_x_"))
    if module is None:
        os.environ.setdefault("ZEROCOPY_SPILL_DIR", str(tmp_path_factory.mktemp("zc_spill_families")))
        module = comfyui.load_custom_node(REPO)
    yield module
    pack_module(module, "zc_nodes.runtime").reset()


def pack_module(pack, name: str):
    """A submodule of the loaded pack, e.g. pack_module(pack, "zc_nodes.runtime")."""
    return sys.modules[f"{pack.__name__}.{name}"]


def shared_store(pack):
    return pack_module(pack, "zc_nodes.runtime").store()


def _model_fixture(builder_name: str):
    @pytest.fixture(scope="session")
    def fixture(model_dirs):
        import tiny_models

        import comfy.sd

        try:  # an older ComfyUI (e.g. v0.3.75) may lack the family or detect it differently
            built = getattr(tiny_models, builder_name)(model_dirs["diffusion_models"])
            comfy.sd.load_diffusion_model(str(built.path))
        except (ImportError, TypeError, ValueError, RuntimeError) as exc:
            pytest.skip(f"skipped: this ComfyUI cannot build or load the tiny DiT ({exc})")
        return built
    return fixture


def require_nodes(*names: str) -> None:
    """Skip (with the reason) on a ComfyUI that lacks one of these core nodes."""
    import nodes

    missing = [n for n in names if n not in nodes.NODE_CLASS_MAPPINGS]
    if missing:
        pytest.skip(f"skipped: this ComfyUI has no {', '.join(missing)}")


tiny_wan22_5b = _model_fixture("build_tiny_wan22_5b_dit")
tiny_wan22_a14b_i2v = _model_fixture("build_tiny_wan22_a14b_i2v_dit")
tiny_hunyuan_video = _model_fixture("build_tiny_hunyuan_video_dit")
tiny_hunyuan_video15 = _model_fixture("build_tiny_hunyuan_video15_dit")
tiny_hunyuan_video_i2v_concat = _model_fixture("build_tiny_hunyuan_video_i2v_concat_dit")
tiny_ltxv = _model_fixture("build_tiny_ltxv_dit")
tiny_ltxav = _model_fixture("build_tiny_ltxav_dit")
tiny_minimax_h3 = _model_fixture("build_tiny_minimax_h3_dit")
tiny_flux = _model_fixture("build_tiny_flux_dit")


def unet(g, built) -> str:
    return g.add("UNETLoader", unet_name=built.name, weight_dtype="default")


def ksampler(g, model, latent, positive, negative, seed=7, steps=2, cfg=1.0):
    """A KSampler node; ``latent``/``positive``/``negative`` are links ([node, index])."""
    return g.add("KSampler", model=g.out(model), seed=seed, steps=steps, cfg=cfg,
                 sampler_name="euler", scheduler="simple", positive=positive, negative=negative,
                 latent_image=latent, denoise=1.0)


def conditioning_pair(g, node: str, **fields):
    """A positive and a negative stand-in conditioning node (``node``, seeds 1 and 2, ``fields``)."""
    return g.add(node, seed=1, **fields), g.add(node, seed=2, **fields)


def store_sampled(g, model, tag, empty, pos, neg, *, seed=7, label=None):
    """A first shot: ``empty`` (a latent node) sampled with ``pos``/``neg`` and stored under
    ``tag`` with the model connected; with ``label``, the stored latent is captured under it.
    Returns the Store node."""
    shot = ksampler(g, model, g.out(empty), g.out(pos), g.out(neg), seed=seed)
    store = g.add("ZeroCopyLatentStore", samples=g.out(shot), buffer_tag=tag, model=g.out(model))
    if label is not None:
        g.add("ZCTestCaptureLatent", samples=g.out(store), label=label)
    return store


def handoff(g, clip, vae, tag, *, width, height, length, model=None, continuity=None, **extra):
    """A ZeroCopyLatentHandoff node in zero-copy mode (the VAE must never be called)."""
    inputs = dict(clip=g.out(clip), vae=g.out(vae), prompt="the next shot", width=width,
                  height=height, length=length, buffer_tag=tag,
                  continuity_mode="zero_copy_latent_only", blend_ratio=0.0)
    inputs.update(extra)
    if model is not None:
        inputs["model"] = g.out(model)
    if continuity is not None:
        inputs["continuity"] = g.out(continuity, 1)
    return g.add("ZeroCopyLatentHandoff", **inputs)


def streams(samples) -> list[torch.Tensor]:
    """The streams of a LATENT's samples (a NestedTensor's, or the one tensor)."""
    return list(samples.unbind()) if getattr(samples, "is_nested", False) else [samples]


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(bits(a), bits(b))
