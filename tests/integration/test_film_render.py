"""ZeroCopyFilmRender on real ComfyUI (CPU): a film made by real samplers with a real (tiny) Wan VAE
rendered to a lossless file, its frames equal to what ZeroCopyFilmAssemble gives; its VIDEO output
taken by core's GetVideoComponents; another take chosen and rendered again (that shot decoded
alone); the editor's timeline read back with OpenTimelineIO; an audio-video film (fake decoding
VAEs, named as fakes: no tiny LTX-2 VAE exists) muxed in sync; the refusals a user meets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from test_families_support import pack, pack_module, shared_store  # noqa: F401
from test_film import assemble, shot_graph, store_av_film, vae_links

from conftest import ComfyRunError, Graph

av = pytest.importorskip("av")


def render(comfyui, tag, *, vae_name=None, audio=False, components=False, **settings):
    """ZeroCopyFilmRender on the film (``audio`` as test_film.vae_links takes it); (video, info, the
    run, the node), and with ``components`` core's GetVideoComponents of its VIDEO (images, audio, fps)."""
    g = Graph()
    vae, extra = vae_links(g, vae_name, audio)
    inputs = {"format": "ffv1-mkv", "frame_rate": 16.0, "quality": 19, "folder": "zerocopy",
              "crossfade_frames": 0, "first_shot": 1, "last_shot": 0, "seam_trim": -1, "timeline": True,
              **settings}
    node = g.add("ZeroCopyFilmRender", buffer_tag=tag, vae=vae, **extra, **inputs)
    targets = [node]
    parts = None
    if components:
        parts = g.add("GetVideoComponents", video=g.out(node, 0))
        targets.append(parts)
    run = comfyui.run(g.prompt, targets=targets)
    out = [comfyui.output(run, node, 0), comfyui.output(run, node, 1), run, node]
    if components:
        out.append(tuple(comfyui.output(run, parts, i) for i in range(3)))
    return out


def picture_and_sound(path: Path) -> tuple[int, int, int]:
    """(video frames, audio samples, sample rate) of a film file, as PyAV decodes it."""
    with av.open(str(path)) as container:
        frames = sum(1 for _ in container.decode(video=0))
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        return frames, sum(f.samples for f in container.decode(stream)), stream.codec_context.sample_rate


def frames_of(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def test_a_real_film_renders_to_a_file_equal_to_the_assembly_and_a_new_take_decodes_one_shot(
        comfyui, captures, pack, tiny_wan21_t2v, wan21_vae):
    tag = "film_render"
    unet, vae = tiny_wan21_t2v.name, wan21_vae.name
    comfyui.run(shot_graph(unet, vae, tag, 71, fallback=True)[0].prompt)  # gen 1 start image, gen 2 shot 1
    comfyui.run(shot_graph(unet, vae, tag, 72)[0].prompt)  # gen 3: shot 2
    comfyui.run(shot_graph(unet, vae, tag, 73)[0].prompt)  # gen 4: shot 3
    images, _, _ = assemble(comfyui, tag, vae_name=vae)
    video, info, run, node, (parts, sound, fps) = render(comfyui, tag, vae_name=vae, components=True)
    path = Path(comfyui.output_dir) / "zerocopy" / f"{tag}.mkv"
    assert path.is_file() and Path(video.get_stream_source()) == path, info
    film = frames_of(path)
    expected = (images.float().clamp(0, 1) * 255).round().to(torch.uint8).numpy()
    assert film.shape == expected.shape and np.array_equal(film, expected), (film.shape, expected.shape)
    # core's own VIDEO node reads it: the same frames, at the film's rate, no sound
    assert tuple(parts.shape) == tuple(images.shape) and float(fps) == 16.0 and sound is None
    assert torch.allclose(parts.float(), torch.from_numpy(expected).float() / 255, atol=1.5 / 255)
    assert info.splitlines()[0].startswith(f"ZeroCopy film {tag!r}: 3 shots, {len(film)} frames"), info
    assert "3 shot(s) decoded, 0 reused" in info and "timeline: film_render.otio with 3 clips" in info, info
    preview = run.ui[node]["images"][0]  # the node shows the film, as core's Save Video does
    assert (preview["filename"], preview["subfolder"], preview["type"]) == (f"{tag}.mkv", "zerocopy", "output")
    # the timeline opens in OpenTimelineIO: three clips over the per-shot clip files, the film's length
    otio = pytest.importorskip("opentimelineio")
    timeline = otio.adapters.read_from_file(str(path.with_suffix(".otio")))
    clips = list(timeline.tracks[0].find_clips())
    assert len(clips) == 3 and timeline.tracks[0].duration().to_frames() == len(film)
    for clip in clips:
        assert (path.parent / clip.media_reference.target_url).is_file()
    # core's tiled decode (spatial and temporal tiles), for shots too large to decode whole: its own
    # cache entries (the decode settings are part of the key), the same frames within tiling's blend
    _, tiled_info, *_ = render(comfyui, tag, vae_name=vae, folder="zerocopy_tiled", decode="tiled", tile_size=64,
                               tile_overlap=16, temporal_size=8, temporal_overlap=4)
    assert "3 shot(s) decoded, 0 reused" in tiled_info, tiled_info
    tiled = frames_of(Path(comfyui.output_dir) / "zerocopy_tiled" / f"{tag}.mkv")
    assert tiled.shape == film.shape
    # the first shot's frames are exactly what core's VAEDecodeTiled gives with those sizes
    store = shared_store(pack)
    with torch.inference_mode():  # as ComfyUI runs nodes
        loaded = comfyui.nodes.VAELoader().load_vae(vae)[0]
        (core_tiled,) = comfyui.nodes.VAEDecodeTiled().decode(
            loaded, {"samples": store.get(tag, 2).tensors["latent_tensor"]}, 64, 16, 8, 4)
    core_tiled = (core_tiled.float().clamp(0, 1) * 255).round().to(torch.uint8).numpy()
    assert np.array_equal(tiled[:len(core_tiled)], core_tiled)
    # another take of shot 3, chosen: the render decodes that shot alone
    comfyui.run(shot_graph(unet, vae, tag, 74, generation=3)[0].prompt)  # gen 5: shot 3, take 2
    film_view = pack_module(pack, "zc_nodes.film_view")
    film_view.choose(tag, 5)
    _, info, *_ = render(comfyui, tag, vae_name=vae)
    assert "1 shot(s) decoded, 2 reused" in info and "shot 3: generation 5, take 2/2" in info, info
    images, _, _ = assemble(comfyui, tag, vae_name=vae)
    assert np.array_equal(frames_of(path), (images.float().clamp(0, 1) * 255).round().to(torch.uint8).numpy())
    clips = list(otio.adapters.read_from_file(str(path.with_suffix(".otio"))).tracks[0].find_clips())
    assert "1 other take" in clips[2].markers[0].name and "gen 4" in clips[2].markers[0].name
    assert len(list((path.parent / f"{tag}_clips").iterdir())) == 3  # the replaced take's clip is gone


def test_an_audio_video_film_is_muxed_in_sync(comfyui, captures, pack):
    """The LTX-2-shaped film of test_film (three shots, trim 8) rendered with its sound: H.264 and
    AAC in MP4, the sound as long as the picture within one frame, the picture's frame count the
    assembly's."""
    tag = "film_av_render"
    store_av_film(shared_store(pack), tag, (1, 128, 3, 2, 2), (1, 8, 17, 16), "ltxav", "ltx_latent_guide")
    _, info, *_ = render(comfyui, tag, audio=True, format="h264-mp4", frame_rate=25.0)
    path = Path(comfyui.output_dir) / "zerocopy" / f"{tag}.mp4"
    frames, samples, rate = picture_and_sound(path)
    assert frames == 3 * 17 - 2 * 8, info
    assert abs(samples / rate - frames / 25.0) <= 1 / 25.0 + 1024 / rate, (samples, rate, frames)
    assert f"audio: {frames * 640} samples at 16000 Hz" in info, info


def test_a_minimax_h3_shaped_film_is_muxed_in_sync_through_core_audio_decode(comfyui, captures, pack):
    """Three MiniMax H3-shaped shots (video [1, 24, T, H, W], audio [1, 32, 2, T_a] at 40 latents a
    second, 24 fps: 5/3 audio latents per frame) rendered with a fake H3 audio VAE (named as a fake:
    H3's audio decoder is too large to run here) decoded as core's VAE Decode Audio decodes it."""
    try:
        from comfy_extras.nodes_audio import vae_decode_audio  # noqa: F401
    except ImportError:
        pytest.skip("skipped: this ComfyUI has no comfy_extras.nodes_audio.vae_decode_audio (VAE Decode Audio "
                    "for VAEs with an audio decoder; v0.3.75 predates MiniMax H3)")
    tag = "film_h3_render"
    # 3 latent frames -> 17 pixel frames through the fake video VAE (8x temporal), 0.708 s at 24 fps
    store_av_film(shared_store(pack), tag, (1, 24, 3, 2, 2), (1, 32, 2, 30), "minimax_h3", "minimax_h3_keyframe")
    _, info, *_ = render(comfyui, tag, audio="ZCTestDecodingH3AudioVAE", frame_rate=24.0, crossfade_frames=2,
                         timeline=False)
    path = Path(comfyui.output_dir) / "zerocopy" / f"{tag}.mkv"
    frames, samples, rate = picture_and_sound(path)
    assert frames == 3 * 17 - 2 * 8 - 2 * 2, info
    assert rate == 32000 and abs(samples / rate - frames / 24.0) <= 1 / 24.0, (samples, rate, frames)
    assert f"audio: {round(frames * 32000 / 24)} samples at 32000 Hz" in info, info


def test_the_render_refuses_what_it_cannot_do_with_the_fix(comfyui, captures, pack):
    with pytest.raises(ComfyRunError, match="film_never_rendered.*ZeroCopyLatentStore"):
        render(comfyui, "film_never_rendered")
    with pytest.raises(ComfyRunError, match="not on the film's line of 3 shots"):
        render(comfyui, "film_av_render", first_shot=5, audio=True)
    with pytest.raises(ComfyRunError, match="folder"):
        render(comfyui, "film_av_render", folder="../outside")
