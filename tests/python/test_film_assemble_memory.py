"""ZeroCopyFilmAssemble holds the film once: its IMAGE batch is allocated at the size projected
from the first shot and each shot's frames are written into it as the shot decodes, so the peak
is the film plus one decoded shot, not the film twice. A film that cannot fit in the
memory there is is refused after its first shot, naming what it needs and ZeroCopyFilmRender.

The node runs against a real LatentStore holding a film of several shots (each continuing the
one before, with its trim in the lineage), with a stand-in comfy_api and a stand-in VAE decode
that gives (T - 1) x 4 + 1 frames for T latent frames, as Wan's causal VAE does."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest
import torch

from zc_pack.zc_continuity import lineage
from zc_pack.zc_continuity.film_join import join_frames
from zc_pack.zc_engine import LatentStore, digest_tensor

TAG = "longfilm"
PACK = "zc_assemble_memory_pack"  # the package name conftest.assemble_node loads the pack under


def wan_decode(vae, latent: torch.Tensor) -> torch.Tensor:
    """Pixels [(T - 1) x 4 + 1, h, w, 3] of a latent [1, C, T, h, w]: pixel frame i shows latent
    frame ceil(i / 4) (channels 0..2), so every frame differs and a crossfade blends real values."""
    frames = latent.shape[2]
    index = torch.tensor([(i + 3) // 4 for i in range((frames - 1) * 4 + 1)])
    return latent[0, :3].index_select(1, index).permute(1, 2, 3, 0).contiguous().float()


class Decoder:
    """The stand-in vae_decode: counts its calls and keeps a weak reference to every clip it gave,
    checking when called that the clips it gave before are freed (the node keeps none)."""

    def __init__(self, decode=wan_decode):
        self.decode, self.calls, self.given, self.alive_at_call = decode, 0, [], []

    def __call__(self, vae, latent):
        gc.collect()
        self.alive_at_call.append(sum(ref() is not None for ref in self.given))
        self.calls += 1
        clip = self.decode(vae, latent)
        self.given.append(weakref.ref(clip))
        return clip


@pytest.fixture
def store(tmp_path):
    store = LatentStore(spill_dir=tmp_path / "spill")
    yield store
    store.close()


def film_of(store, lengths: list[int], trim: int = 1) -> list[torch.Tensor]:
    """A film of one shot per latent length, each continuing the one before (``trim`` pixel
    frames of its start repeat the shot before). The latents, in film order."""
    made, parent = [], None
    for index, frames in enumerate(lengths):
        latent = torch.randn(1, 16, frames, 4, 6, generator=torch.Generator().manual_seed(index + 1))
        meta = {}
        if parent is not None:
            tail = digest_tensor(parent[1][:, :, -1:])
            meta[lineage.LINEAGE_KEY] = lineage.record(lineage.marker(
                parent_tag=TAG, parent_generation=parent[0], tail_frames=1, tail_digest=tail, used_digest=tail,
                adapter="temporal_inpaint", trim=trim))
        generation = store.put(TAG, {"latent_tensor": latent}, meta, spill=True)
        made.append(latent)
        parent = (generation, latent)
    store.flush()
    return made


def mount(node_parts, monkeypatch, store, decoder):
    node, runtime, calls = node_parts
    monkeypatch.setattr(runtime, "store", lambda: store)
    monkeypatch.setattr(calls, "vae_decode", decoder)
    return node


@pytest.mark.parametrize("lengths, crossfade, seam_trim", [
    ([3, 3, 3, 3], 0, -1),  # cuts, the lineage's trims
    ([3, 5, 2, 4], 2, -1),  # shots of other lengths (projected from the first), crossfades
    ([4, 4, 4], 3, 2),  # seam_trim at every seam instead
])
def test_the_film_is_what_the_old_concatenation_gave(assemble_node, monkeypatch, store, lengths, crossfade,
                                                      seam_trim):
    latents = film_of(store, lengths)
    decoder = Decoder()
    node = mount(assemble_node, monkeypatch, store, decoder)
    images, audio, info = node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object(),
                                                            crossfade_frames=crossfade, seam_trim=seam_trim)
    trims = [0] + [1 if seam_trim < 0 else seam_trim] * (len(lengths) - 1)
    expected = join_frames([wan_decode(None, latent) for latent in latents], trims, crossfade)
    assert torch.equal(images, expected) and images.shape[0] == expected.shape[0]
    assert images.untyped_storage().nbytes() == expected.numel() * 4  # the projection held: no spare frames
    assert audio is None and decoder.calls == len(lengths)
    assert info.splitlines()[0].startswith(f"ZeroCopy film {TAG!r}: {len(lengths)} shots, {expected.shape[0]} "
                                           f"frames = {sum((t - 1) * 4 + 1 for t in lengths)} decoded")
    assert "projected" not in info


def test_a_film_that_cannot_fit_is_refused_after_its_first_shot(assemble_node, monkeypatch, store):
    film_of(store, [3, 3, 3, 3])  # 9 + 3 x 8 = 33 frames of 6x4x3 float32 (288 bytes): 9,504; a shot 2,592
    decoder = Decoder()
    node = mount(assemble_node, monkeypatch, store, decoder)
    monkeypatch.setattr(node, "memory_available", lambda device=None: 5000)
    with pytest.raises(Exception) as caught:
        node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())
    message = str(caught.value)
    assert type(caught.value).__name__ == "ContinuityError"
    needs = f"film {TAG!r} needs 9.5 kB as an IMAGE batch (33 frames of 6x4; one shot 2.6 kB more while decoding)"
    for words in (needs, "this machine has 7.6 kB free", "at most 90% of it", "ZeroCopyFilmRender",
                  "first_shot/last_shot"):
        assert words in message, message
    assert decoder.calls == 1  # refused before decoding a second shot
    # the margin: 12,096 bytes needed of 10,000 free + the first shot's 2,592 held fit, but not in 90 %
    monkeypatch.setattr(node, "memory_available", lambda device=None: 10000)
    with pytest.raises(Exception, match="this machine has 12.6 kB free"):
        node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())
    assert decoder.calls == 2
    # with room (the margin included) the same film assembles; unknown free memory skips the check
    monkeypatch.setattr(node, "memory_available", lambda device=None: 20000)
    assert node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())[0].shape[0] == 33
    monkeypatch.setattr(node, "memory_available", lambda device=None: None)
    assert node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())[0].shape[0] == 33


def test_memory_available_reads_psutil_and_skips_without_it(assemble_node, monkeypatch):
    node = assemble_node[0]
    psutil = pytest.importorskip("psutil")
    assert node.memory_available() == pytest.approx(psutil.virtual_memory().available, rel=0.5)
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil now fails
    assert node.memory_available() is None


def test_no_decoded_clip_is_kept_while_the_next_shot_decodes(assemble_node, monkeypatch, store):
    film_of(store, [3, 4, 3, 5, 3, 3])
    decoder = Decoder()
    node = mount(assemble_node, monkeypatch, store, decoder)
    images, _, _ = node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object(), crossfade_frames=2)
    assert decoder.alive_at_call == [0] * 6  # each clip was freed before the next shot decoded
    gc.collect()
    assert all(ref() is None for ref in decoder.given)  # the film is not made of the clips either
    assert images.shape[0] == 9 + 12 + 8 + 16 + 8 + 8 - 5 * 2


def test_a_shot_that_decodes_to_other_frames_than_projected_still_gives_the_right_film(
        assemble_node, monkeypatch, store):
    """From a first shot of one latent frame (1 pixel frame) the projection is a frame per latent
    frame, wrong for a causal VAE: the second shot corrects it (the line through both lengths),
    the batch is reallocated once, and the film is still exactly the concatenation's."""
    latents = film_of(store, [1, 3, 3, 2], trim=0)
    decoder = Decoder()
    node = mount(assemble_node, monkeypatch, store, decoder)
    images, _, info = node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object(), crossfade_frames=1)
    expected = join_frames([wan_decode(None, latent) for latent in latents], [0, 0, 0, 0], 1)
    assert torch.equal(images, expected)
    assert "shot 2 decoded to 9 frames where 3 were projected from its 3 latent frames" in info
    assert "reallocated 1 time(s)" in info and "shot 3 decoded" not in info
    assert decoder.alive_at_call == [0] * 4
