"""ZeroCopyFilmRender's node code without ComfyUI: the pack mounted as a package with a stand-in for
comfy_api (the real ComfyUI runs it in tests/integration/test_film_render.py), a real store with a
real film (lineage, takes, a choice), and a stand-in VAE decode (one frame per latent frame, the
frame's value its latent mean: every film frame can be traced to its shot). Checks what the node
adds to zc_film: the film's line and takes followed, trims from the lineage, a corrupt shot refused
as the Assemble node refuses it (assemble_incomplete honoured), its info and its refusals."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch

import comfy_api_standin

av = pytest.importorskip("av")

REPO = Path(__file__).resolve().parents[2]
TAG = "node_film"
PACK = "zc_render_pack"


@pytest.fixture
def node(monkeypatch, tmp_path):
    """(the node module, the pack's modules by short name, the store, the output folder)."""
    for name, module in comfy_api_standin.modules(PACK, with_ui=True).items():
        monkeypatch.setitem(sys.modules, name, module)
    module = importlib.import_module(f"{PACK}.zc_nodes.film_render_node")
    mods = {name: sys.modules[f"{PACK}.{name}"] for name in ("zc_nodes.comfy_calls", "zc_nodes.runtime",
                                                              "zc_nodes.farm_link", "zc_engine")}
    calls = mods["zc_nodes.comfy_calls"]
    decoded = []

    def decode(vae, latent):
        decoded.append(latent.shape[2])
        means = latent.float().mean(dim=(1, 3, 4))[0]  # one value per latent frame
        return means.reshape(-1, 1, 1, 1).expand(-1, 4, 6, 3).sigmoid().contiguous()

    out = tmp_path / "output"
    monkeypatch.setattr(calls, "vae_decode", decode)
    monkeypatch.setattr(calls, "progress_bar", lambda total: mock.MagicMock())
    monkeypatch.setattr(calls, "vae_identity", lambda vae: "stand-in decode")
    monkeypatch.setattr(calls, "output_directory", lambda: str(out))
    monkeypatch.setattr(calls, "video_from_file", lambda path: ("VideoFromFile", path))
    monkeypatch.setattr(calls, "preview_video", lambda name, folder: ("PreviewVideo", name, folder))
    monkeypatch.setattr(mods["zc_nodes.farm_link"], "complete_film", lambda tag: None)
    monkeypatch.setenv("ZEROCOPY_RENDER_CACHE", str(tmp_path / "render_cache"))
    store = mods["zc_engine"].LatentStore(spill_dir=str(tmp_path / "spill"))
    monkeypatch.setattr(mods["zc_nodes.runtime"], "store", lambda: store)
    yield module, mods, store, out, decoded
    store.close()
    comfy_api_standin.forget(PACK)


def put_shot(store, mods, seed: int, parent: int | None, trim: int = 1) -> int:
    lineage = sys.modules[f"{PACK}.zc_continuity.lineage"] if f"{PACK}.zc_continuity.lineage" in sys.modules \
        else importlib.import_module(f"{PACK}.zc_continuity.lineage")
    latent = torch.randn(1, 4, 5, 2, 3, generator=torch.Generator().manual_seed(seed))
    meta = {}
    if parent is not None:
        tail = store.get(TAG, parent).tensors["latent_tensor"][:, :, -1:]
        digest = mods["zc_engine"].digest_tensor(tail)
        meta["lineage"] = lineage.record(lineage.marker(
            parent_tag=TAG, parent_generation=parent, tail_frames=1, tail_digest=digest, used_digest=digest,
            adapter="temporal_inpaint", trim=trim))
    return store.put(TAG, {"latent_tensor": latent}, meta, spill=True)


def render(module, **settings):
    inputs = {"buffer_tag": TAG, "vae": object(), "format": "ffv1-mkv", "frame_rate": 16.0, "folder": "films",
              **settings}
    (video, info), ui = module.ZeroCopyFilmRender.execute(**inputs)
    return video, info, ui


def film_frames(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24")[0, 0, 0] for f in container.decode(video=0)])


def test_the_node_renders_the_chosen_line_with_its_trims_and_follows_a_new_take(node, monkeypatch, tmp_path):
    module, mods, store, out, decoded = node
    g1 = put_shot(store, mods, 1, None)
    g2 = put_shot(store, mods, 2, g1, trim=2)
    g3 = put_shot(store, mods, 3, g2)
    video, info, ui = render(module)
    path = out / "films" / f"{TAG}.mkv"
    assert video == ("VideoFromFile", str(path)) and ui == ("PreviewVideo", f"{TAG}.mkv", "films")
    assert decoded == [5, 5, 5]
    # each film frame is its shot's latent frame mean: the trims of the lineage dropped (2, then 1)
    means = [store.get(TAG, g).tensors["latent_tensor"].float().mean(dim=(1, 3, 4))[0] for g in (g1, g2, g3)]
    expected = torch.cat([means[0], means[1][2:], means[2][1:]]).sigmoid()
    assert np.array_equal(film_frames(path), (expected * 255).round().to(torch.uint8).numpy())
    assert info.splitlines()[0].startswith(f"ZeroCopy film {TAG!r}: 3 shots, 12 frames (0.75 s at 16 fps), 6x4")
    assert "shot 2: generation 2, take 1/1, 5 frames, trim 2, 3 kept, film frames 5-7, decoded" in info, info
    # a second take of shot 3, chosen in the storyboard: the render decodes it alone
    g4 = put_shot(store, mods, 4, g2)
    mods_film = sys.modules[f"{PACK}.zc_nodes.film_view"]
    mods_film.choose(TAG, g4)
    _, info, _ = render(module)
    assert decoded == [5, 5, 5, 5] and "1 shot(s) decoded, 2 reused" in info, info
    assert "shot 3: generation 4, take 2/2" in info
    clips = sorted(p.name for p in (out / "films" / f"{TAG}_clips").iterdir())
    assert len(clips) == 3 and clips[2].startswith("shot_0003_gen_000004_"), clips
    assert (out / "films" / f"{TAG}.otio").is_file() or "no editor timeline" in info
    # a cache entry damaged on disk: made again, and the user told in a toast, not only in info
    toasts = []
    monkeypatch.setattr(sys.modules[f"{PACK}.zc_nodes.ui_events"], "warn",
                        lambda title, message, **kw: toasts.append((title, message)))
    body = next(p for p in (tmp_path / "render_cache" / TAG).glob("*/body.mkv")
                if '"generation": 4' in (p.parent / "entry.json").read_text())
    body.write_bytes(body.read_bytes()[:-1] + bytes([body.read_bytes()[-1] ^ 0xFF]))
    _, info, _ = render(module)
    assert "1 shot(s) decoded, 2 reused" in info and "changed since it was written" in info, info
    assert toasts and toasts[0][0] == f"ZeroCopy film {TAG!r} rendered, with notes", toasts
    assert "changed since it was written" in toasts[0][1]
    # linked from a Store's continuity (or End Loop carrying it): its tag is the film rendered
    _, info, _ = render(module, buffer_tag="some_other_tag", continuity={"tag": TAG, "generation": g4})
    assert info.startswith(f"ZeroCopy film {TAG!r}: 3 shots") and "0 shot(s) decoded, 3 reused" in info, info


def test_a_corrupt_shot_is_refused_as_the_assembly_refuses_it_unless_incomplete_is_asked(node):
    module, mods, store, out, decoded = node
    g1 = put_shot(store, mods, 11, None)
    put_shot(store, mods, 12, g1)
    store.flush()
    spill = Path(store.spill_dir)
    store.close()  # a restart: the spill files are all there is
    next(spill.glob(f"{TAG}@*1.latent")).unlink()  # the film's first shot is gone from disk
    store = mods["zc_engine"].LatentStore(spill_dir=str(spill))
    sys.modules[f"{PACK}.zc_nodes.runtime"].store = lambda: store
    with pytest.raises(Exception) as caught:
        render(module)
    assert type(caught.value).__name__ == "ContinuityError"
    message = str(caught.value)
    assert "is not whole: generation 2 (not on the line): it continues generation 1" in message, message
    # the first shot is gone: the way out is a new first shot; no farm is set: no farm or Redis advice
    assert "no older shot of the film is left: start the film again: store a new first shot" in message, message
    assert "ZEROCOPY_REDIS_KEEP" not in message and "farm" not in message and "worker" not in message, message
    assert "assemble_incomplete" in message
    assert decoded == []  # refused before any decode
    _, info, _ = render(module, assemble_incomplete=True)
    assert "INCOMPLETE" in info and "LEFT OUT (assemble_incomplete is on)" in info, info
    assert decoded == [5]
    store.close()


def test_the_node_refuses_bad_folders_tags_and_formats(node):
    module, mods, store, out, decoded = node
    assert "folder" in module.ZeroCopyFilmRender.validate_inputs(buffer_tag=TAG, folder="../up")
    assert "folder" in module.ZeroCopyFilmRender.validate_inputs(buffer_tag=TAG, folder="/abs")
    assert module.ZeroCopyFilmRender.validate_inputs(buffer_tag=TAG, folder="films/a b") is True
    with pytest.raises(ValueError, match="^tag \"no/slash\" has '/' at character 3; "):  # said once, from 1
        render(module, buffer_tag="no/slash")
    put_shot(store, mods, 21, None)
    with pytest.raises(Exception, match=r"unknown film format 'gif'; this PyAV build writes: h264-mp4"):
        render(module, format="gif")
